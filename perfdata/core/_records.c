/* perfdata.core._records: the record walk of `perfdata stats` in C.
 *
 * walk_block() walks the records of one block of a perf.data data section
 * and counts them, taking only records the Python walker
 * (perfdata/format/walker.py, its fast lane in recovery mode) would take as
 * they are; at the first record it would not take as they are (a suspect
 * size, an unknown type, a record it has to apply or expand, the end of the
 * data) it stops and hands the rest back to the Python walker, with the walk
 * state that walker would have at that record.
 *
 * Nothing here knows a layout: every size, offset, record type number and
 * table comes from Python (perfdata/core/layout.py derives them from the
 * construct schemas) in the `params` and `tables` arrays, whose slots are
 * named by PARAM_NAMES (_framing.h) and STATE_NAMES below (the glue builds
 * them by name); the framing rules are _framing.h's, which the record walk
 * of `perfdata script` (_core.c) shares.
 *
 * Every read is bounds-checked against the block: a hostile size, count or
 * offset makes the walk stop, never read outside it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_framing.h"

/* The slots of `state` (uint64 each), then by_type[NTYPES], then the
 * samples of each event [nattrs], then its lost samples (a u32) [nattrs]. */
enum {
    S_TOTAL,            /* records counted */
    S_PREV,             /* file offset + 1 of the last record taken (0: none) */
    S_NSAMPLES,         /* the walker's SAMPLE size rule: samples seen ... */
    S_MAX_SAMPLE,       /* ... and the largest */
    S_HAS_AUX,          /* an AUXTRACE_INFO record was counted */
    S_FIXED
};

static const char *const STATE_NAMES[S_FIXED] = {
    "total", "prev", "nsamples", "max_sample", "has_aux",
};

/* Why walk_block stopped. */
enum { WHY_MORE, WHY_HANDBACK, WHY_APPLY };

static int get_buffer(PyObject *obj, Py_buffer *view, int writable, size_t itemsize,
                      const char *what)
{
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    if (itemsize > 1 && (view->len % (Py_ssize_t)itemsize ||
                         (view->len && ((uintptr_t)view->buf) % itemsize))) {
        PyErr_Format(PyExc_ValueError, "%s: not an aligned array of %zu-byte items",
                     what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(walk_block_doc,
"walk_block(block, block_offset, params, tables, ids, id_attrs, state) -> (used, why)\n\n"
"Count the records of `block` (bytes of the data section starting at file\n"
"offset `block_offset`, at a record boundary) into `state`.  Returns how many\n"
"bytes of the block it walked, and why it stopped: MORE (the end of what the\n"
"block holds: walk on from block_offset + used with the next block), HANDBACK\n"
"(at a record it leaves to the Python walker), APPLY (it took and counted the\n"
"record that ends at `used`, which Python applies before it walks on).\n"
"params, tables, id_attrs: int64 arrays; ids (sorted) and state: uint64 arrays.");

static PyObject *walk_block(PyObject *self, PyObject *args)
{
    PyObject *o_block, *o_params, *o_tables, *o_ids, *o_idx, *o_state;
    long long block_offset;
    Py_buffer vb = {0}, vp = {0}, vt = {0}, vi = {0}, vx = {0}, vs = {0};
    PyObject *result = NULL;
    (void)self;

    if (!PyArg_ParseTuple(args, "OLOOOOO:walk_block", &o_block, &block_offset, &o_params,
                          &o_tables, &o_ids, &o_idx, &o_state))
        return NULL;
    if (get_buffer(o_block, &vb, 0, 1, "block") < 0)
        goto out;
    if (get_buffer(o_params, &vp, 0, 8, "params") < 0)
        goto out;
    if (get_buffer(o_tables, &vt, 0, 8, "tables") < 0)
        goto out;
    if (get_buffer(o_ids, &vi, 0, 8, "ids") < 0)
        goto out;
    if (get_buffer(o_idx, &vx, 0, 8, "id_attrs") < 0)
        goto out;
    if (get_buffer(o_state, &vs, 1, 8, "state") < 0)
        goto out;

    const int64_t *prm = vp.buf;
    const int64_t *tab = vt.buf;
    const uint64_t *ids = vi.buf;
    const int64_t *idx = vx.buf;
    uint64_t *st = vs.buf;
    if (vp.len != (Py_ssize_t)(P_COUNT * 8) || vt.len != (Py_ssize_t)(T_COUNT * 8)) {
        PyErr_SetString(PyExc_ValueError, "params or tables of the wrong length");
        goto out;
    }
    const int64_t nattrs = prm[P_NATTRS];
    const size_t nids = (size_t)vi.len / 8;
    if (nattrs < 0 || nattrs > (1 << 24) || vx.len != vi.len ||
        vs.len != (Py_ssize_t)((S_FIXED + NTYPES + 2 * nattrs) * 8)) {
        PyErr_SetString(PyExc_ValueError, "ids, id_attrs or state do not fit the events");
        goto out;
    }
    for (size_t k = 0; k < nids; k++) {
        if (idx[k] < 0 || idx[k] >= nattrs || (k && ids[k - 1] >= ids[k])) {
            PyErr_SetString(PyExc_ValueError, "ids not sorted, or an id of no event");
            goto out;
        }
    }
    FrameRules rules;
    const char *bad = NULL;
    if (frame_rules_check(&rules, prm, tab, &bad) < 0 || block_offset < 0) {
        PyErr_SetString(PyExc_ValueError, bad ? bad : "params out of range");
        goto out;
    }

    Block b = {vb.buf, (size_t)vb.len, (prm[P_LITTLE] != 0) != PY_LITTLE_ENDIAN};
    const size_t hsize = rules.hsize;
    const size_t trailer = rules.trailer;
    const size_t lost_off = (size_t)prm[P_LOST_OFF];
    const int64_t T_SAMPLE = prm[P_SAMPLE], T_LOST = prm[P_LOST_SAMPLES];
    const int64_t T_AUXINFO = prm[P_AUXTRACE_INFO];
    uint64_t *by_type = st + S_FIXED;
    uint64_t *samples = by_type + NTYPES;
    uint64_t *lost = samples + nattrs;
    uint64_t total = st[S_TOTAL];
    FrameState fs = {st[S_PREV], st[S_NSAMPLES], st[S_MAX_SAMPLE]};
    int why = WHY_MORE;
    size_t pos = 0;

    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        uint32_t rtype;
        size_t size;
        const int got = frame_take(&rules, &b, pos, (uint64_t)block_offset, &fs, &rtype, &size);
        if (got == FRAME_MORE)
            break;
        if (got == FRAME_HANDBACK) {
            why = WHY_HANDBACK;
            break;
        }
        /* Taken: count it. */
        const size_t body = pos + hsize, blen = size - hsize;
        total++;
        by_type[rtype]++;
        if (rtype == T_SAMPLE) {
            const int64_t ea = frame_attr(&rules, &b, body, blen, rtype, ids, idx, nids);
            if (ea >= 0)
                samples[ea]++;
        } else if (rtype == T_LOST) {
            const int64_t ea = frame_attr(&rules, &b, body, blen, rtype, ids, idx, nids);
            /* (every event's trailer is the first's: the glue checks) */
            if (ea >= 0 && lost_off + 8 + trailer <= blen)
                lost[ea] = (uint32_t)(lost[ea] + (uint32_t)rd64(&b, body + lost_off));
        } else if (rtype == T_AUXINFO) {
            st[S_HAS_AUX] = 1;
        }
        pos += size;
        if (tab[T_APPLY + rtype]) {
            why = WHY_APPLY;
            break;
        }
    }
    Py_END_ALLOW_THREADS

    st[S_TOTAL] = total;
    st[S_PREV] = fs.prev;
    st[S_NSAMPLES] = fs.nsamples;
    st[S_MAX_SAMPLE] = fs.max_sample;
    result = Py_BuildValue("(ni)", (Py_ssize_t)pos, why);
out:
    if (vb.obj) PyBuffer_Release(&vb);
    if (vp.obj) PyBuffer_Release(&vp);
    if (vt.obj) PyBuffer_Release(&vt);
    if (vi.obj) PyBuffer_Release(&vi);
    if (vx.obj) PyBuffer_Release(&vx);
    if (vs.obj) PyBuffer_Release(&vs);
    return result;
}

static PyMethodDef methods[] = {
    {"walk_block", walk_block, METH_VARARGS, walk_block_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_records",
    "The record walk of `perfdata stats` in C (see perfdata/core/records.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__records(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (add_framing_names(m) < 0 ||
        PyModule_AddObject(m, "STATE_NAMES", names_tuple(STATE_NAMES, S_FIXED)) < 0 ||
        PyModule_AddIntConstant(m, "MORE", WHY_MORE) < 0 ||
        PyModule_AddIntConstant(m, "HANDBACK", WHY_HANDBACK) < 0 ||
        PyModule_AddIntConstant(m, "APPLY", WHY_APPLY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
