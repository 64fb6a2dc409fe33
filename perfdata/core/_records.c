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
 * named by PARAM_NAMES and STATE_NAMES below (the glue builds them by name).
 *
 * Every read is bounds-checked against the block: a hostile size, count or
 * offset makes the walk stop, never read outside it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The slots of `params` (int64 each). */
enum {
    P_LITTLE,           /* 1: the file is little-endian */
    P_TYPE_OFF,         /* perf_event_header: offset of type (u32) */
    P_MISC_OFF,         /* ... of misc (u16) */
    P_SIZE_OFF,         /* ... of size (u16) */
    P_HEADER_SIZE,      /* ... its size */
    P_ALIGN_MASK,       /* the walker's alignment rule for the next header (7 or 0) */
    P_DATA_END,         /* file offset of the end of the data section */
    P_TRAILER,          /* sample_id trailer bytes of the first event (0: none) */
    P_SAMPLE_ID_POS,    /* u64 word of the event id in a SAMPLE body, or -1 */
    P_TRAILER_ID_POS,   /* u64 word from the end of a trailer, or -1 */
    P_SAMPLE_ID_ALL,    /* the first event has sample_id_all */
    P_SINGLE,           /* index of the one event every record belongs to, or -1 */
    P_NATTRS,           /* number of events */
    P_LOST_OFF,         /* offset of `lost` (u64) in a LOST_SAMPLES body */
    P_BIG_AFTER,        /* a SAMPLE is suspect past 2 * largest + 64 after this many */
    P_SAMPLE,           /* record type numbers: SAMPLE */
    P_LOST_SAMPLES,
    P_AUXTRACE_INFO,
    P_FINISHED_ROUND,
    P_FINISHED_INIT,
    P_USER_TYPE_START,
    P_COUNT
};

static const char *const PARAM_NAMES[P_COUNT] = {
    "little", "type_off", "misc_off", "size_off", "header_size", "align_mask",
    "data_end", "trailer", "sample_id_pos", "trailer_id_pos", "sample_id_all",
    "single", "nattrs", "lost_off", "big_after", "SAMPLE", "LOST_SAMPLES",
    "AUXTRACE_INFO", "FINISHED_ROUND", "FINISHED_INIT", "USER_TYPE_START",
};

/* `tables`: four int64 tables of NTYPES slots, by record type. */
#define NTYPES 256
enum {
    T_TAKE = 0,             /* least size of a record of this type taken here; 0: never */
    T_NEXT = NTYPES,        /* least size of a header trusted after a record; 0: none */
    T_STRING = 2 * NTYPES,  /* offset of the name in the body (MMAP, MMAP2, COMM); -1: none */
    T_APPLY = 3 * NTYPES,   /* 1: once taken, handed to Python to apply (ID_INDEX) */
    T_COUNT = 4 * NTYPES
};

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

typedef struct {
    const uint8_t *p;
    size_t n;
    int swap;
} Block;

/* Reads of a field wholly inside the block (callers check with `fits`). */
static inline int fits(const Block *b, size_t off, size_t width)
{
    return off <= b->n && width <= b->n - off;
}

static inline uint16_t rd16(const Block *b, size_t off)
{
    uint16_t v;
    memcpy(&v, b->p + off, 2);
    return b->swap ? (uint16_t)((v >> 8) | (v << 8)) : v;
}

static inline uint32_t rd32(const Block *b, size_t off)
{
    uint32_t v;
    memcpy(&v, b->p + off, 4);
    return b->swap ? __builtin_bswap32(v) : v;
}

static inline uint64_t rd64(const Block *b, size_t off)
{
    uint64_t v;
    memcpy(&v, b->p + off, 8);
    return b->swap ? __builtin_bswap64(v) : v;
}

/* The event of an id: its index in the attrs, or `dflt` where unknown. */
static int64_t attr_of_id(const uint64_t *ids, const int64_t *idx, size_t nids,
                          uint64_t ident, int64_t dflt)
{
    size_t lo = 0, hi = nids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < ident)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nids && ids[lo] == ident ? idx[lo] : dflt;
}

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
    const int64_t hsize = prm[P_HEADER_SIZE];
    const int64_t type_off = prm[P_TYPE_OFF], size_off = prm[P_SIZE_OFF];
    if (hsize < 8 || hsize > 64 || type_off < 0 || type_off + 4 > hsize ||
        size_off < 0 || size_off + 2 > hsize || prm[P_TRAILER] < 0 ||
        prm[P_TRAILER] > 4096 || prm[P_LOST_OFF] < 0 || prm[P_LOST_OFF] > 4096 ||
        prm[P_SINGLE] >= nattrs || prm[P_SAMPLE_ID_POS] > 4096 ||
        prm[P_TRAILER_ID_POS] > 4096 || block_offset < 0 || prm[P_DATA_END] < 0) {
        PyErr_SetString(PyExc_ValueError, "params out of range");
        goto out;
    }
    for (int t = 0; t < NTYPES; t++) {
        if (tab[T_TAKE + t] < 0 || tab[T_NEXT + t] < 0 || tab[T_STRING + t] > 4096 ||
            (tab[T_APPLY + t] && !tab[T_TAKE + t])) {
            PyErr_SetString(PyExc_ValueError, "tables out of range");
            goto out;
        }
    }

    Block b = {vb.buf, (size_t)vb.len, (prm[P_LITTLE] != 0) != PY_LITTLE_ENDIAN};
    const uint64_t align_mask = (uint64_t)prm[P_ALIGN_MASK];
    const uint64_t data_end = (uint64_t)prm[P_DATA_END];
    const size_t trailer = (size_t)prm[P_TRAILER];
    const int64_t sample_id_pos = prm[P_SAMPLE_ID_POS];
    const int64_t trailer_id_pos = prm[P_SAMPLE_ID_ALL] ? prm[P_TRAILER_ID_POS] : -1;
    const int64_t single = prm[P_SINGLE];
    const size_t lost_off = (size_t)prm[P_LOST_OFF];
    const uint64_t big_after = (uint64_t)prm[P_BIG_AFTER];
    const int64_t T_SAMPLE = prm[P_SAMPLE], T_LOST = prm[P_LOST_SAMPLES];
    const int64_t T_AUXINFO = prm[P_AUXTRACE_INFO];
    const int64_t T_ROUND = prm[P_FINISHED_ROUND], T_INIT = prm[P_FINISHED_INIT];
    uint64_t *by_type = st + S_FIXED;
    uint64_t *samples = by_type + NTYPES;
    uint64_t *lost = samples + nattrs;
    uint64_t total = st[S_TOTAL], prev = st[S_PREV];
    uint64_t nsamples = st[S_NSAMPLES], max_sample = st[S_MAX_SAMPLE];
    int why = WHY_MORE;
    size_t pos = 0;

    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        /* The record and the next header wholly in the block (the Python
         * lane's `head + size > len(buf) - 8`), else the caller's next block. */
        if (!fits(&b, pos, (size_t)hsize))
            break;
        const uint32_t rtype = rd32(&b, pos + (size_t)type_off);
        const size_t size = rd16(&b, pos + (size_t)size_off);
        const uint64_t offset = (uint64_t)block_offset + pos;
        if (size >= (size_t)hsize && !fits(&b, pos, size + (size_t)hsize))
            break;
        if (size < (size_t)hsize || rtype >= NTYPES || tab[T_TAKE + rtype] == 0 ||
            size < (size_t)tab[T_TAKE + rtype] || size & 7) {
            why = WHY_HANDBACK;
            break;
        }
        if (rtype == T_SAMPLE) {
            if (nsamples >= big_after && size > 2 * max_sample + 64) {
                why = WHY_HANDBACK;
                break;
            }
        } else if (rtype == T_ROUND || rtype == T_INIT) {
            if (size != 8) {
                why = WHY_HANDBACK;
                break;
            }
        } else if (tab[T_STRING + rtype] >= 0) {
            /* MMAP, MMAP2, COMM: a size past their name (padded to 8) and
             * trailer may hide the next records (walker.named_size). */
            const size_t at = (size_t)hsize + (size_t)tab[T_STRING + rtype];
            size_t hi = at + 4104 < size ? at + 4104 : size;
            const uint8_t *nul = at < hi ? memchr(b.p + pos + at, 0, hi - at) : NULL;
            if (nul == NULL) {
                why = WHY_HANDBACK;
                break;
            }
            const size_t named = at + ((size_t)(nul - (b.p + pos)) - at + 8) / 8 * 8 + trailer;
            if (size > named + 8) {
                why = WHY_HANDBACK;
                break;
            }
        }
        /* The header after it as plausible as the walker wants it. */
        const uint32_t t2 = rd32(&b, pos + size + (size_t)type_off);
        const size_t s2 = rd16(&b, pos + size + (size_t)size_off);
        if (t2 >= NTYPES || tab[T_NEXT + t2] == 0 || s2 < (size_t)tab[T_NEXT + t2] ||
            (s2 & align_mask) || offset + size + s2 > data_end ||
            (s2 != 8 && (t2 == T_ROUND || t2 == T_INIT))) {
            why = WHY_HANDBACK;
            break;
        }
        /* Taken: count it. */
        const size_t body = pos + (size_t)hsize, blen = size - (size_t)hsize;
        prev = offset + 1;
        total++;
        by_type[rtype]++;
        if (rtype == T_SAMPLE) {
            nsamples++;
            if (size > max_sample)
                max_sample = size;
            int64_t ea = single;
            if (ea < 0 && nattrs > 0) {
                ea = 0;
                if (sample_id_pos >= 0 && (size_t)(8 * sample_id_pos + 8) <= blen)
                    ea = attr_of_id(ids, idx, nids, rd64(&b, body + 8 * (size_t)sample_id_pos), 0);
            }
            if (ea >= 0)
                samples[ea]++;
        } else if (rtype == T_LOST) {
            int64_t ea = single;
            if (ea < 0 && nattrs > 0) {
                ea = 0;
                if (trailer_id_pos >= 0 && (size_t)(8 * trailer_id_pos) <= blen)
                    ea = attr_of_id(ids, idx, nids,
                                    rd64(&b, body + blen - 8 * (size_t)trailer_id_pos), 0);
            }
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
    st[S_PREV] = prev;
    st[S_NSAMPLES] = nsamples;
    st[S_MAX_SAMPLE] = max_sample;
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

static PyObject *names_tuple(const char *const *names, int n)
{
    PyObject *t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (int k = 0; k < n; k++) {
        PyObject *s = PyUnicode_FromString(names[k]);
        if (s == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, s);
    }
    return t;
}

PyMODINIT_FUNC PyInit__records(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObject(m, "PARAM_NAMES", names_tuple(PARAM_NAMES, P_COUNT)) < 0 ||
        PyModule_AddObject(m, "STATE_NAMES", names_tuple(STATE_NAMES, S_FIXED)) < 0 ||
        PyModule_AddIntConstant(m, "NTYPES", NTYPES) < 0 ||
        PyModule_AddIntConstant(m, "MORE", WHY_MORE) < 0 ||
        PyModule_AddIntConstant(m, "HANDBACK", WHY_HANDBACK) < 0 ||
        PyModule_AddIntConstant(m, "APPLY", WHY_APPLY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
