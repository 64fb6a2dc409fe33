/* perfdata.core._unwind: the DWARF unwinder's walk over a sample's stack in C.
 *
 * walk() is symbolize's Unwinder.walk (symbolize/unwind/unwinder.py) with a
 * fast lane for the step every compiler's CFI makes nearly everywhere: a
 * row whose CFA is a register plus an offset and whose every rule is "saved
 * at CFA + N", all of the slots inside the stack copy.  Such a step is done
 * here; any other (no row, an expression, a signal frame, a slot outside
 * the copy, a stop) is Unwinder.step itself, called with the same
 * registers, so the frames, CFAs and stop are the Python walk's.
 *
 * The rows come from Python as `compact` rows (resolve/unwinding.py,
 * compact_row): int64 slots, R_HEAD of them, then a (column, offset from the
 * CFA) pair per rule, looked up by the lookup address in one address
 * space's dict (`rows`), or made on first use by fill(lookup), which keeps
 * them there; None means "take the Python step".  A row whose return
 * address is undefined (and whose other rules can raise nothing) ends the
 * walk here as Unwinder.step ends it: an UnwindStop("outermost") with the
 * frame's CFA.  Every read of the stack
 * copy is bounds-checked against it; a compact row of any other shape makes
 * the step a Python one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The slots of a compact row (int64 each), then n (column, offset) pairs. */
enum { R_CFA_REG, R_CFA_OFF, R_FIRST, R_SIZE, R_FLAGS, R_N, R_HEAD };
/* R_FLAGS: sp has a rule; the return address is undefined (the outermost
 * frame: the step stops there, with the CFA, whatever the other rules) */
enum { F_SP_RULE = 1, F_OUTERMOST = 2 };

/* Registers by DWARF column: the columns a fast step can hold. */
#define NCOLS 64

/* How a frame's address was found (symbolize's INNERMOST, ...). */
enum { K_INNERMOST, K_RETURN_ADDRESS, K_FRAME_POINTER, K_INTERRUPTED, K_OTHER };

typedef struct {
    int sp_col, ra_col, ra_is_ip;
    uint64_t ra_mask, cs_mask, css_sp_mask;
    PyObject *kinds[4];     /* INNERMOST, RETURN_ADDRESS, FRAME_POINTER, INTERRUPTED */
    PyObject *unwind_stop;  /* the UnwindStop class */
} Consts;

typedef struct {
    uint64_t val[NCOLS];
    uint64_t present;       /* bit c: column c has a value */
} Regs;

static int kind_code(const Consts *c, PyObject *kind)
{
    for (int k = 0; k < 4; k++)
        if (kind == c->kinds[k])
            return k;
    return K_OTHER;
}

static uint64_t read_u64le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

/* regs (a dict column -> int) into r; 0 where a column or value does not
 * fit (the walk then stays on Python steps), -1 on an error. */
static int regs_from_dict(PyObject *dict, Regs *r)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (!PyDict_Check(dict))
        return 0;
    r->present = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!PyLong_CheckExact(key) || !PyLong_CheckExact(value))
            return 0;
        int overflow = 0;
        long long col = PyLong_AsLongLongAndOverflow(key, &overflow);
        if (overflow || col < 0 || col >= NCOLS) {
            if (PyErr_Occurred())
                return -1;
            return 0;
        }
        uint64_t v = PyLong_AsUnsignedLongLong(value);
        if (v == (uint64_t)-1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            return 0;
        }
        r->val[col] = v;
        r->present |= (uint64_t)1 << col;
    }
    return 1;
}

static PyObject *regs_to_dict(const Regs *r)
{
    PyObject *dict = PyDict_New();
    if (dict == NULL)
        return NULL;
    for (int col = 0; col < NCOLS; col++) {
        if (!(r->present >> col & 1))
            continue;
        PyObject *k = PyLong_FromLong(col);
        PyObject *v = k ? PyLong_FromUnsignedLongLong(r->val[col]) : NULL;
        if (v == NULL || PyDict_SetItem(dict, k, v) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(dict);
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return dict;
}

/* The compact row for `lookup`, as a new reference (None: no fast step). */
static PyObject *compact_row(PyObject *rows, PyObject *fill, uint64_t lookup)
{
    PyObject *key = PyLong_FromUnsignedLongLong(lookup);
    if (key == NULL)
        return NULL;
    PyObject *row = PyDict_GetItemWithError(rows, key);
    if (row != NULL) {
        Py_INCREF(row);
    } else if (!PyErr_Occurred()) {
        row = PyObject_CallOneArg(fill, key);
    }
    Py_DECREF(key);
    return row;
}

/* Where the `width` bytes at address cfa + off (exact, not wrapped) lie in
 * the snapshot of `len` bytes at `base`: their offset there (cfa + off -
 * base), or -1 where any falls outside.  Worked out in uint64s, each step
 * within its range (C99 has no wider integer to hold cfa + off). */
static Py_ssize_t snapshot_at(uint64_t cfa, int64_t off, int64_t width, uint64_t base,
                              Py_ssize_t len)
{
    if (width < 0 || len < 0)
        return -1;
    uint64_t rel;
    if (cfa >= base) {
        uint64_t ahead = cfa - base;
        if (off >= 0) {
            if (ahead > (uint64_t)len || (uint64_t)off > (uint64_t)len - ahead)
                return -1;
            rel = ahead + (uint64_t)off;
        } else {
            uint64_t back = (uint64_t)0 - (uint64_t)off;
            if (ahead < back)
                return -1;
            rel = ahead - back;
        }
    } else {
        uint64_t behind = base - cfa;
        if (off < 0 || (uint64_t)off < behind)
            return -1;
        rel = (uint64_t)off - behind;
    }
    if (rel > (uint64_t)len || (uint64_t)width > (uint64_t)len - rel)
        return -1;
    return (Py_ssize_t)rel;
}

/* One fast step: 1 done (out, *ra, *cfa set), 2 the walk stops there
 * (*cfa set: the outermost frame), 0 where the step is Python's, -1 on an
 * error.  As Unwinder.step and _apply_row do with a row whose saved_slots
 * are all inside the snapshot, or whose return address is undefined. */
static int fast_step(const Consts *c, uint64_t ip, int kind, const Regs *in,
                     const unsigned char *data, Py_ssize_t len, uint64_t base,
                     PyObject *rows, PyObject *fill, Regs *out, uint64_t *ra_out,
                     uint64_t *cfa_out)
{
    int is_return = kind == K_RETURN_ADDRESS || kind == K_FRAME_POINTER;
    if (kind == K_OTHER || (is_return && ip == 0))
        return 0;
    uint64_t lookup = is_return ? ip - 1 : ip;
    PyObject *row = compact_row(rows, fill, lookup);
    if (row == NULL)
        return -1;
    int done = 0;
    if (!PyBytes_Check(row))
        goto out;
    Py_ssize_t size = PyBytes_GET_SIZE(row);
    if (size < (Py_ssize_t)(R_HEAD * 8) || (size - R_HEAD * 8) % 16)
        goto out;
    int64_t head[R_HEAD];
    memcpy(head, PyBytes_AS_STRING(row), sizeof head);
    int64_t n = head[R_N];
    if (n < 0 || n != (size - (Py_ssize_t)sizeof head) / 16)
        goto out;
    const char *pairs = PyBytes_AS_STRING(row) + sizeof head;
    int sp_col = c->sp_col, ra_col = c->ra_col;
    if (!(in->present >> sp_col & 1))
        goto out;
    uint64_t sp = in->val[sp_col];
    int64_t cfa_reg = head[R_CFA_REG];
    if (cfa_reg < 0 || cfa_reg >= NCOLS || !(in->present >> cfa_reg & 1))
        goto out;
    uint64_t cfa = in->val[cfa_reg] + (uint64_t)head[R_CFA_OFF];
    if (head[R_FLAGS] & F_OUTERMOST) {
        *cfa_out = cfa;
        done = 2;
        goto out;
    }
    /* the callee-saved registers carry over (the whole dict where it holds
     * no other) */
    *out = *in;
    if (in->present & ~c->css_sp_mask)
        out->present = in->present & c->cs_mask;
    /* every slot inside the snapshot: [cfa + first, + size) */
    if (snapshot_at(cfa, head[R_FIRST], head[R_SIZE], base, len) < 0)
        goto out;
    for (int64_t k = 0; k < n; k++) {
        int64_t pair[2];
        memcpy(pair, pairs + 16 * k, sizeof pair);
        Py_ssize_t slot = snapshot_at(cfa, pair[1], 8, base, len);
        if (pair[0] < 0 || pair[0] >= NCOLS || slot < 0)
            goto out;
        out->val[pair[0]] = read_u64le(data + slot);
        out->present |= (uint64_t)1 << pair[0];
    }
    uint64_t ra;
    if (!(out->present >> ra_col & 1))
        goto out;
    ra = out->val[ra_col];
    if (c->ra_is_ip)
        out->present &= ~((uint64_t)1 << ra_col);
    ra &= c->ra_mask;
    if (!(head[R_FLAGS] & F_SP_RULE)) {
        out->val[sp_col] = cfa;
        out->present |= (uint64_t)1 << sp_col;
    }
    if (!(out->present >> sp_col & 1))
        goto out;
    uint64_t new_sp = out->val[sp_col];
    if (new_sp < sp || (new_sp == sp && (kind != K_INNERMOST || c->ra_is_ip)) || ra == 0)
        goto out;
    *ra_out = ra;
    *cfa_out = cfa;
    done = 1;
out:
    Py_DECREF(row);
    return done;
}

static int append_u64(PyObject *list, uint64_t v)
{
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    if (o == NULL)
        return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

static int append_index(PyObject *list, Py_ssize_t v)
{
    PyObject *o = PyLong_FromSsize_t(v);
    if (o == NULL)
        return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

static int parse_consts(PyObject *t, Consts *c)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 11) {
        PyErr_SetString(PyExc_TypeError, "consts: an 11-tuple");
        return -1;
    }
    long long v[6];
    for (int k = 0; k < 3; k++) {
        v[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, k));
        if (v[k] == -1 && PyErr_Occurred())
            return -1;
    }
    for (int k = 3; k < 6; k++) {
        v[k] = (long long)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t, k));
        if (PyErr_Occurred())
            return -1;
    }
    if (v[0] < 0 || v[0] >= NCOLS || v[1] < 0 || v[1] >= NCOLS) {
        PyErr_SetString(PyExc_ValueError, "consts: a column out of range");
        return -1;
    }
    c->sp_col = (int)v[0];
    c->ra_col = (int)v[1];
    c->ra_is_ip = v[2] != 0;
    c->ra_mask = (uint64_t)v[3];
    c->cs_mask = (uint64_t)v[4];
    c->css_sp_mask = (uint64_t)v[5];
    for (int k = 0; k < 4; k++)
        c->kinds[k] = PyTuple_GET_ITEM(t, 6 + k);
    c->unwind_stop = PyTuple_GET_ITEM(t, 10);
    return 0;
}

/* walk(step, read_stack, find_module, rows, fill, ip, regs, data, base,
 *      max_depth, frames, cfas, exact, fp, consts)
 * -> the UnwindStop that ended the walk, or None at max_depth.  frames,
 * cfas, exact and fp are the UnwindResult's lists, appended to as
 * Unwinder.walk does. */
static PyObject *walk(PyObject *self, PyObject *args)
{
    PyObject *step, *read_stack, *find_module, *rows, *fill, *ip_obj, *regs_obj, *data_obj;
    PyObject *frames, *cfas, *exact, *fp, *consts;
    unsigned long long base;
    Py_ssize_t max_depth;
    if (!PyArg_ParseTuple(args, "OOOO!OOO!OKnO!O!O!O!O", &step, &read_stack, &find_module,
                          &PyDict_Type, &rows, &fill, &ip_obj, &PyDict_Type, &regs_obj,
                          &data_obj, &base, &max_depth, &PyList_Type, &frames,
                          &PyList_Type, &cfas, &PyList_Type, &exact, &PyList_Type, &fp,
                          &consts))
        return NULL;
    Consts c;
    if (parse_consts(consts, &c) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data_obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    Py_INCREF(ip_obj);
    Py_INCREF(regs_obj);
    PyObject *kind_obj = c.kinds[K_INNERMOST];
    Py_INCREF(kind_obj);
    /* the registers as an array (`arr`) when they fit one, else only the
     * dict; `dict_ok`: regs_obj holds the current registers */
    Regs arr, next;
    int have_arr = regs_from_dict(regs_obj, &arr);
    int dict_ok = 1;
    if (have_arr < 0)
        goto done;
    for (;;) {
        if (PyList_Append(frames, ip_obj) < 0)
            goto done;
        if (PyList_GET_SIZE(frames) >= max_depth) {
            Py_INCREF(Py_None);
            result = Py_None;
            goto done;
        }
        int kind = kind_code(&c, kind_obj);
        uint64_t ip = 0, ra = 0, cfa = 0;
        int fast = 0;
        if (have_arr > 0 && PyLong_CheckExact(ip_obj)) {
            ip = PyLong_AsUnsignedLongLong(ip_obj);
            if (ip == (uint64_t)-1 && PyErr_Occurred()) {
                if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                    goto done;
                PyErr_Clear();
            } else {
                fast = fast_step(&c, ip, kind, &arr, view.buf, view.len, base, rows, fill,
                                 &next, &ra, &cfa);
                if (fast < 0)
                    goto done;
                if (fast == 2) {
                    /* UnwindStop("outermost", cfa=cfa) */
                    result = PyObject_CallFunction(c.unwind_stop, "sOsK", "outermost",
                                                   Py_None, "", (unsigned long long)cfa);
                    goto done;
                }
            }
        }
        if (fast) {
            arr = next;
            dict_ok = 0;
            Py_SETREF(ip_obj, PyLong_FromUnsignedLongLong(ra));
            if (ip_obj == NULL)
                goto done;
            Py_INCREF(c.kinds[K_RETURN_ADDRESS]);
            Py_SETREF(kind_obj, c.kinds[K_RETURN_ADDRESS]);
            if (append_u64(cfas, cfa) < 0)
                goto done;
            continue;
        }
        /* Unwinder.step, with the registers as a dict */
        if (!dict_ok) {
            Py_SETREF(regs_obj, regs_to_dict(&arr));
            if (regs_obj == NULL)
                goto done;
            dict_ok = 1;
        }
        PyObject *got = PyObject_CallFunctionObjArgs(step, ip_obj, regs_obj, kind_obj,
                                                     read_stack, find_module, NULL);
        if (got == NULL) {
            if (PyErr_ExceptionMatches(c.unwind_stop)) {
                PyObject *type, *value, *tb;
                PyErr_Fetch(&type, &value, &tb);
                PyErr_NormalizeException(&type, &value, &tb);
                Py_XDECREF(type);
                Py_XDECREF(tb);
                /* what it says is its reason, address, detail and cfa: its
                 * traceback and context (frames holding the sample's stack
                 * copy, in a cycle the pure walk's `except ... as` breaks)
                 * are let go here */
                if (value != NULL) {
                    PyException_SetTraceback(value, Py_None);
                    PyException_SetContext(value, NULL);
                    PyException_SetCause(value, NULL);
                }
                result = value;
            }
            goto done;
        }
        if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 4) {
            Py_DECREF(got);
            PyErr_SetString(PyExc_TypeError, "step: not a 4-tuple");
            goto done;
        }
        PyObject *cfa_obj = PyTuple_GET_ITEM(got, 3);
        Py_INCREF(PyTuple_GET_ITEM(got, 0));
        Py_SETREF(ip_obj, PyTuple_GET_ITEM(got, 0));
        Py_INCREF(PyTuple_GET_ITEM(got, 1));
        Py_SETREF(regs_obj, PyTuple_GET_ITEM(got, 1));
        Py_INCREF(PyTuple_GET_ITEM(got, 2));
        Py_SETREF(kind_obj, PyTuple_GET_ITEM(got, 2));
        int rc = PyList_Append(cfas, cfa_obj);
        Py_DECREF(got);
        if (rc < 0)
            goto done;
        have_arr = regs_from_dict(regs_obj, &arr);
        if (have_arr < 0)
            goto done;
        if (kind_obj != c.kinds[K_RETURN_ADDRESS]) {
            PyObject *list = kind_obj == c.kinds[K_INTERRUPTED] ? exact : fp;
            if (append_index(list, PyList_GET_SIZE(frames)) < 0)
                goto done;
        }
    }
done:
    Py_XDECREF(ip_obj);
    Py_XDECREF(regs_obj);
    Py_XDECREF(kind_obj);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(step, read_stack, find_module, rows, fill, ip, regs, data, base, max_depth, "
     "frames, cfas, exact, fp, consts): Unwinder.walk with the common step in C; the "
     "UnwindStop that ended it, or None at max_depth."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_unwind",
    "The DWARF unwinder's walk in C (see perfdata/resolve/unwinding.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__unwind(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "R_HEAD", R_HEAD) < 0 ||
            PyModule_AddIntConstant(m, "NCOLS", NCOLS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
