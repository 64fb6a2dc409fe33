/* perfdata.core._switches: the waits of a scheduler recording without
 * stacks, in C (perfdata/core/switches.py drives it).
 *
 * sum_switches() walks the records of a data section, takes the samples of
 * the sched_switch and sched_wakeup events (by event id), sorts them by time
 * (ties in file order, as perf's ordered events) and adds up each thread's
 * waits and runs exactly as perfdata/session/switches.py's SwitchTracker
 * does (the reference; tests/views/test_offcpu.py compares the two): a wait from
 * a thread's switch out to its next switch in, a switch in that was not
 * recorded taken at the cpu's previous switch, the waits shorter than
 * min_wait apart, each wait named by its state's value and its waker's comm.
 *
 * Nothing here knows a layout: every offset comes from Python (the tracing
 * data's field offsets, the sample's fixed fields).  Every read is bounds
 * checked against the record; a record that does not fit, a sample too
 * short for its fields, a cpu past MAX_CPUS or a time of 2**62 ns or more
 * (146 years: past it a thread's sums could pass an int64, where Python's
 * ints do not) makes it return None (the caller's Python path reads it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define COMM_LEN 16
#define WAKER_LEN 24
#define MAX_CPUS 65536
#define SAMPLE 9
#define LOST 2
#define LOST_SAMPLES 13

/* A switch or a wakeup, as read from its sample. */
typedef struct {
    int64_t time, seq;
    int64_t state;
    int32_t kind;               /* 0 switch, 1 wakeup */
    int32_t pid, tid, cpu;      /* the sample's */
    int32_t prev, next;         /* switch: prev_pid, next_pid; wakeup: woken pid in prev */
    char prev_comm[COMM_LEN], next_comm[COMM_LEN];
} Event;

/* The waits of a thread with one state, shortness and waker. */
typedef struct {
    int64_t state, ns, count;
    int32_t is_short;
    char waker[WAKER_LEN];
} Entry;

typedef struct {
    int32_t tid, pid;
    char comm[COMM_LEN];
    int64_t first, last, run, out_at, in_at, out_state;
    int32_t has_out, has_in, switches_out;
    char woken_by[WAKER_LEN];   /* "" while no waker is known */
    Entry *entries;
    Py_ssize_t nentries, capentries;
} Thread;

typedef struct {
    Thread *threads;
    Py_ssize_t n, cap;
    Py_ssize_t *slots;          /* open addressing on tid: index + 1, 0 empty */
    Py_ssize_t nslots;
    int64_t cpu_last[MAX_CPUS];
    uint8_t cpu_seen[MAX_CPUS];
    int64_t switches, switch_ins, inferred_ins, min_wait;
} Tracker;

static int64_t rd64(const uint8_t *p) { int64_t v; memcpy(&v, p, 8); return v; }
static int32_t rd32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }
static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

static size_t hash_tid(int32_t tid, size_t mask)
{
    return ((uint32_t)tid * 2654435761u) & mask;
}

static int grow_slots(Tracker *t)
{
    Py_ssize_t n = t->nslots ? t->nslots * 2 : 1024;
    Py_ssize_t *slots = calloc((size_t)n, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        size_t h = hash_tid(t->threads[i].tid, (size_t)n - 1);
        while (slots[h])
            h = (h + 1) & ((size_t)n - 1);
        slots[h] = i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

static Thread *find(Tracker *t, int32_t tid)
{
    if (!t->nslots)
        return NULL;
    size_t mask = (size_t)t->nslots - 1, h = hash_tid(tid, mask);
    while (t->slots[h]) {
        Thread *th = &t->threads[t->slots[h] - 1];
        if (th->tid == tid)
            return th;
        h = (h + 1) & mask;
    }
    return NULL;
}

/* A new thread, first seen at `time` (NULL: out of memory). */
static Thread *create(Tracker *t, int32_t tid, int64_t time)
{
    if ((t->n + 1) * 2 > t->nslots && grow_slots(t) < 0)
        return NULL;
    if (t->n == t->cap) {
        Py_ssize_t cap = t->cap ? t->cap * 2 : 256;
        Thread *threads = realloc(t->threads, (size_t)cap * sizeof *threads);
        if (threads == NULL)
            return NULL;
        t->threads = threads;
        t->cap = cap;
    }
    Thread *th = &t->threads[t->n];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->pid = -1;
    snprintf(th->comm, COMM_LEN, ":%d", (int)tid);
    th->first = th->last = time;
    size_t mask = (size_t)t->nslots - 1, h = hash_tid(tid, mask);
    while (t->slots[h])
        h = (h + 1) & mask;
    t->slots[h] = ++t->n;
    return th;
}

static int add_entry(Thread *th, int64_t state, int is_short, int64_t ns)
{
    for (Py_ssize_t i = 0; i < th->nentries; i++) {
        Entry *e = &th->entries[i];
        if (e->state == state && e->is_short == is_short &&
                strncmp(e->waker, th->woken_by, WAKER_LEN) == 0) {
            e->ns += ns;
            e->count++;
            return 0;
        }
    }
    if (th->nentries == th->capentries) {
        Py_ssize_t cap = th->capentries ? th->capentries * 2 : 4;
        Entry *entries = realloc(th->entries, (size_t)cap * sizeof *entries);
        if (entries == NULL)
            return -1;
        th->entries = entries;
        th->capentries = cap;
    }
    Entry *e = &th->entries[th->nentries++];
    memset(e, 0, sizeof *e);
    e->state = state;
    e->is_short = is_short;
    memcpy(e->waker, th->woken_by, WAKER_LEN);
    e->ns = ns;
    e->count = 1;
    return 0;
}

/* SwitchTracker._switched_in: the end of th's wait, running from `time`. */
static int switched_in(Tracker *t, Thread *th, int64_t time)
{
    int64_t start = th->out_at;
    th->last = th->in_at = time;
    th->has_in = 1;
    th->has_out = 0;
    t->switch_ins++;
    return add_entry(th, th->out_state, time - start < t->min_wait, time - start);
}

/* SwitchTracker.switch for one sched_switch sample. */
static int on_switch(Tracker *t, const Event *ev)
{
    Thread *th;
    if (ev->prev) {
        t->switches++;
        th = find(t, ev->prev);
        if (th == NULL && (th = create(t, ev->prev, ev->time)) == NULL)
            return -1;
        if (ev->tid == ev->prev && ev->pid >= 0)
            th->pid = ev->pid;
        memcpy(th->comm, ev->prev_comm, COMM_LEN);
        th->switches_out++;
        if (th->has_out) {
            int64_t at = t->cpu_seen[ev->cpu] ? t->cpu_last[ev->cpu] : th->out_at;
            t->inferred_ins++;
            if (switched_in(t, th, at > th->out_at ? at : th->out_at) < 0)
                return -1;
        }
        t->cpu_last[ev->cpu] = ev->time;
        t->cpu_seen[ev->cpu] = 1;
        th->last = ev->time;
        if (th->has_in) {
            th->run += ev->time - th->in_at;
            th->has_in = 0;
        }
        th->out_at = ev->time;
        th->has_out = 1;
        th->out_state = ev->state;
        th->woken_by[0] = 0;
    }
    if (ev->next) {
        th = find(t, ev->next);
        if (th == NULL) {
            if ((th = create(t, ev->next, ev->time)) == NULL)
                return -1;
            memcpy(th->comm, ev->next_comm, COMM_LEN);
        }
        if (th->has_out) {
            if (switched_in(t, th, ev->time) < 0)
                return -1;
        } else if (!th->has_in) {
            th->in_at = th->last = ev->time;
            th->has_in = 1;
        }
    }
    return 0;
}

/* SwitchTracker.wakeup: the first waker of a wait, by its comm. */
static void on_wakeup(Tracker *t, const Event *ev)
{
    Thread *th = find(t, ev->prev);
    if (th == NULL || !th->has_out || th->woken_by[0])
        return;
    Thread *waker = find(t, ev->tid);
    memset(th->woken_by, 0, WAKER_LEN);
    if (waker != NULL)
        memcpy(th->woken_by, waker->comm, COMM_LEN);
    else
        snprintf(th->woken_by, WAKER_LEN, ":%d", (int)ev->tid);
}

static int by_time(const void *a, const void *b)
{
    const Event *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The event kind of an id: 0 switch, 1 wakeup, -1 neither. */
static int kind_of(int64_t id, const int64_t *ids, Py_ssize_t nids, const int32_t *kinds)
{
    for (Py_ssize_t i = 0; i < nids; i++)
        if (ids[i] == id)
            return kinds[i];
    return -1;
}

enum { L_MIN, L_TID, L_TIME, L_CPU, L_PREV_COMM, L_PREV_PID, L_PREV_STATE, L_STATE_SIZE,
       L_NEXT_COMM, L_NEXT_PID, L_WOKEN, L_COUNT };

static int read_layout(PyObject *seq, Py_ssize_t *out)
{
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != L_COUNT) {
        PyErr_SetString(PyExc_ValueError, "a layout is a tuple of L_COUNT offsets");
        return -1;
    }
    for (Py_ssize_t i = 0; i < L_COUNT; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* Read one wanted sample; 0 ok, 1 does not fit (None to the caller). */
static int read_event(const uint8_t *rec, Py_ssize_t size, const Py_ssize_t *l, int kind,
                      Event *ev)
{
    if (size < l[L_MIN])
        return 1;
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    ev->time = rd64(rec + l[L_TIME]);
    if (ev->time < 0 || ev->time >= (INT64_C(1) << 62))
        return 1;   /* (the sums of such times would pass int64: the Python path's) */
    ev->pid = rd32(rec + l[L_TID]);
    ev->tid = rd32(rec + l[L_TID] + 4);
    ev->cpu = rd32(rec + l[L_CPU]);
    if (ev->cpu < 0 || ev->cpu >= MAX_CPUS)
        return 1;
    if (kind == 1) {
        ev->prev = rd32(rec + l[L_WOKEN]);
        return 0;
    }
    ev->prev = rd32(rec + l[L_PREV_PID]);
    ev->next = rd32(rec + l[L_NEXT_PID]);
    ev->state = l[L_STATE_SIZE] == 8 ? rd64(rec + l[L_PREV_STATE]) : rd32(rec + l[L_PREV_STATE]);
    memcpy(ev->prev_comm, rec + l[L_PREV_COMM], COMM_LEN);
    memcpy(ev->next_comm, rec + l[L_NEXT_COMM], COMM_LEN);
    return 0;
}

static PyObject *result(Tracker *t, int64_t lost)
{
    PyObject *threads = PyList_New(t->n);
    if (threads == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Thread *th = &t->threads[i];
        PyObject *entries = PyList_New(th->nentries);
        if (entries == NULL)
            goto fail;
        for (Py_ssize_t k = 0; k < th->nentries; k++) {
            Entry *e = &th->entries[k];
            PyObject *item = Py_BuildValue("(Liy#LL)", (long long)e->state, (int)e->is_short,
                                           e->waker, (Py_ssize_t)strnlen(e->waker, WAKER_LEN),
                                           (long long)e->ns, (long long)e->count);
            if (item == NULL) {
                Py_DECREF(entries);
                goto fail;
            }
            PyList_SET_ITEM(entries, k, item);
        }
        PyObject *row = Py_BuildValue("(iiy#LLLiN)", (int)th->tid, (int)th->pid, th->comm,
                                      (Py_ssize_t)COMM_LEN, (long long)th->first,
                                      (long long)th->last, (long long)th->run,
                                      (int)th->switches_out, entries);
        if (row == NULL)
            goto fail;
        PyList_SET_ITEM(threads, i, row);
    }
    return Py_BuildValue("(NLLLL)", threads, (long long)t->switches, (long long)t->switch_ins,
                         (long long)t->inferred_ins, (long long)lost);
fail:
    Py_DECREF(threads);
    return NULL;
}

static void release(Tracker *t)
{
    for (Py_ssize_t i = 0; i < t->n; i++)
        free(t->threads[i].entries);
    free(t->threads);
    free(t->slots);
    free(t);
}

/* The wanted samples of the data, in file order (NULL and *bad = 1: a record
 * that does not fit; NULL and *bad = 0: out of memory). */
static Event *collect(const uint8_t *buf, Py_ssize_t off, Py_ssize_t end, Py_ssize_t id_at,
                      const int64_t *ids, const int32_t *kinds, Py_ssize_t nids,
                      const Py_ssize_t layouts[2][L_COUNT], Py_ssize_t *count, int64_t *lost,
                      int *bad)
{
    Py_ssize_t n = 0, cap = 4096;
    Event *evs = malloc((size_t)cap * sizeof *evs);
    if (evs == NULL)
        return NULL;
    while (off + 8 <= end) {
        const uint8_t *rec = buf + off;
        uint32_t type;
        memcpy(&type, rec, 4);
        Py_ssize_t size = rd16(rec + 6);
        if (size < 8 || off + size > end)
            goto bad;
        if (type == SAMPLE) {
            int kind = 0;
            if (id_at >= 0) {
                if (id_at + 8 > size)
                    goto bad;
                kind = kind_of(rd64(rec + id_at), ids, nids, kinds);
            }
            if (kind >= 0) {
                if (n == cap) {
                    Event *more = realloc(evs, (size_t)(cap *= 2) * sizeof *evs);
                    if (more == NULL) {
                        free(evs);
                        return NULL;
                    }
                    evs = more;
                }
                if (read_event(rec, size, layouts[kind], kind, &evs[n]))
                    goto bad;
                evs[n].seq = n;
                n++;
            }
        } else if ((type == LOST && size >= 24) || (type == LOST_SAMPLES && size >= 16)) {
            *lost += rd64(rec + (type == LOST ? 16 : 8));
        }
        off += size;
    }
    *count = n;
    return evs;
bad:
    free(evs);
    *bad = 1;
    return NULL;
}

PyDoc_STRVAR(sum_switches_doc,
"sum_switches(data, start, end, id_at, ids, kinds, switch_layout, wakeup_layout, min_wait)\n"
"-> (threads, switches, switch_ins, inferred_ins, lost) or None\n\n"
"threads: (tid, pid, comm, first, last, run, switches_out, [(state, short, waker, ns, n)]).");

static PyObject *sum_switches(PyObject *self, PyObject *args)
{
    PyObject *o_data, *o_ids, *o_kinds, *o_sl, *o_wl;
    Py_ssize_t start, end, id_at;
    long long min_wait;
    if (!PyArg_ParseTuple(args, "OnnnOOOOL:sum_switches", &o_data, &start, &end, &id_at,
                          &o_ids, &o_kinds, &o_sl, &o_wl, &min_wait))
        return NULL;
    Py_ssize_t layouts[2][L_COUNT];
    if (read_layout(o_sl, layouts[0]) < 0 || read_layout(o_wl, layouts[1]) < 0)
        return NULL;
    if (!PyTuple_Check(o_ids) || !PyTuple_Check(o_kinds) ||
            PyTuple_GET_SIZE(o_ids) != PyTuple_GET_SIZE(o_kinds)) {
        PyErr_SetString(PyExc_ValueError, "ids and kinds: tuples of one length");
        return NULL;
    }
    Py_ssize_t nids = PyTuple_GET_SIZE(o_ids);
    int64_t *ids = PyMem_Calloc((size_t)nids + 1, sizeof *ids);
    int32_t *kinds = PyMem_Calloc((size_t)nids + 1, sizeof *kinds);
    if (ids == NULL || kinds == NULL) {
        PyMem_Free(ids);
        PyMem_Free(kinds);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < nids; i++) {
        ids[i] = (int64_t)PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(o_ids, i));
        kinds[i] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(o_kinds, i));
    }
    Py_buffer view;
    if (PyObject_GetBuffer(o_data, &view, PyBUF_SIMPLE) < 0) {
        PyMem_Free(ids);
        PyMem_Free(kinds);
        return NULL;
    }
    if (end > view.len)
        end = view.len;
    Py_ssize_t count = 0;
    int64_t lost = 0;
    int bad = 0;
    Event *evs = NULL;
    Py_BEGIN_ALLOW_THREADS
    evs = collect(view.buf, start, end, id_at, ids, kinds, nids, (const Py_ssize_t (*)[L_COUNT])layouts,
                  &count, &lost, &bad);
    if (evs != NULL)
        qsort(evs, (size_t)count, sizeof *evs, by_time);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyMem_Free(ids);
    PyMem_Free(kinds);
    if (evs == NULL) {
        if (bad)
            Py_RETURN_NONE;
        return PyErr_NoMemory();
    }
    Tracker *t = calloc(1, sizeof *t);
    if (t == NULL) {
        free(evs);
        return PyErr_NoMemory();
    }
    t->min_wait = min_wait;
    int failed = 0;
    for (Py_ssize_t i = 0; i < count && !failed; i++) {
        if (evs[i].kind == 0)
            failed = on_switch(t, &evs[i]) < 0;
        else
            on_wakeup(t, &evs[i]);
    }
    free(evs);
    PyObject *out = failed ? PyErr_NoMemory() : result(t, lost);
    release(t);
    return out;
}

static PyMethodDef methods[] = {
    {"sum_switches", sum_switches, METH_VARARGS, sum_switches_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_switches",
    "The waits of a scheduler recording without stacks, in C "
    "(see perfdata/core/switches.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__switches(void)
{
    return PyModule_Create(&module);
}
