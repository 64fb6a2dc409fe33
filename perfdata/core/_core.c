/* perfdata.core._core: the compiled per-sample core of `perfdata script`.
 *
 * A SampleText turns one frame-pointer (-g) sample into the text perf script
 * prints for it: the header line (comm, pid/tid, cpu, time, period, event)
 * and one line per frame of its callchain.  It owns no knowledge of
 * binaries or symbols: the text of a frame is made once by the Python path
 * (perfdata.frames FrameResolver and views.script ScriptFormatter) and kept
 * here by (space, address, is a return address), where space is the binary
 * behind a user map (the frame's key is then its file offset), 0 for an
 * address of a kernel context and 1 for a user address in no map.  The walk
 * over the callchain (contexts, --max-stack, interrupt entries, stack
 * bottoms) is FrameResolver._frames_for_callchain's, step for step.
 *
 * Whatever the core does not know it asks for, by returning a tuple (the
 * Python side answers and calls again): the plan of an event, the maps of
 * an address space at its current generation, the binary behind a map, the
 * text of a frame.  Whatever it does not handle exactly it hands back
 * (None): the Python path symbolizes and formats that sample.
 *
 * Everything read comes from Python objects the reader built (the
 * callchain's list of ints); no count is trusted beyond the list's length,
 * and every buffer grows by checked sizes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------ answers */
/* the first item of the tuple a SampleText returns when it needs something */
enum { NEED_PLAN = 1, NEED_MAPS = 2, NEED_BINARY = 3, NEED_FRAME = 4 };

/* a map's binary: not asked yet, or one the Python path must handle */
#define BINARY_UNKNOWN (-1)
#define BINARY_CAREFUL (-2)
#define SPACE_KERNEL 0
#define SPACE_NO_MAP 1

/* a frame's flags (what _frames_for_callchain reads of its last symbol) */
#define FRAME_INTERRUPT 1     /* a kernel interrupt entry: the next is an ip */
#define FRAME_BOTTOM 2        /* an outermost frame (_start, clone) */
#define FRAME_CAREFUL 4       /* text UTF-8 cannot carry: the Python path's */

/* an event plan's header fields (ScriptFormatter._header_for) */
#define H_COMM 1
#define H_PID 2
#define H_TID 4
#define H_CPU 8
#define H_TIME 16
#define H_PERIOD 32
#define H_EVENT 64
#define H_NANOSECS 128

/* ------------------------------------------------------ a growing buffer */
typedef struct {
    char *data;
    size_t len, cap;
} Buffer;

static int buf_reserve(Buffer *b, size_t more) {
    if (more > ((size_t)PY_SSIZE_T_MAX) - b->len)
        return -1;
    size_t need = b->len + more;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > ((size_t)PY_SSIZE_T_MAX) / 2)
            return -1;
        cap *= 2;
    }
    char *data = PyMem_Realloc(b->data, cap);
    if (data == NULL)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static int buf_add(Buffer *b, const char *s, size_t n) {
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

/* ------------------------------------------------------ the frame table */
typedef struct {
    uint64_t addr;        /* the file offset (a binary's) or the address */
    int64_t space;        /* -1: an empty slot */
    uint32_t is_ret;
    uint32_t flags;
    char *text;
    Py_ssize_t len;
} Frame;

typedef struct {
    Frame *slots;
    size_t mask;          /* slots - 1, a power of two minus one */
    size_t used;
    size_t limit;         /* cleared when used reaches it */
} FrameTable;

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    h ^= c * 0x165667B19E3779F9ULL;
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ULL;
    return h ^ (h >> 32);
}

static void frames_clear(FrameTable *t) {
    for (size_t i = 0; i <= t->mask; i++) {
        if (t->slots[i].space >= 0)
            PyMem_Free(t->slots[i].text);
        t->slots[i].space = -1;
        t->slots[i].text = NULL;
    }
    t->used = 0;
}

static int frames_init(FrameTable *t, size_t nslots) {
    t->slots = PyMem_Calloc(nslots, sizeof(Frame));
    if (t->slots == NULL)
        return -1;
    t->mask = nslots - 1;
    t->used = 0;
    t->limit = nslots / 2;
    for (size_t i = 0; i < nslots; i++)
        t->slots[i].space = -1;
    return 0;
}

static Frame *frames_find(FrameTable *t, int64_t space, uint64_t addr, uint32_t is_ret) {
    size_t i = (size_t)mix((uint64_t)space, addr, is_ret) & t->mask;
    for (;;) {
        Frame *f = &t->slots[i];
        if (f->space < 0)
            return NULL;
        if (f->space == space && f->addr == addr && f->is_ret == is_ret)
            return f;
        i = (i + 1) & t->mask;
    }
}

static int frames_put(FrameTable *t, int64_t space, uint64_t addr, uint32_t is_ret,
                      uint32_t flags, const char *text, Py_ssize_t len) {
    if (frames_find(t, space, addr, is_ret) != NULL)
        return 0;
    if (t->used >= t->limit)
        frames_clear(t);
    char *copy = PyMem_Malloc(len > 0 ? (size_t)len : 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, text, (size_t)len);
    size_t i = (size_t)mix((uint64_t)space, addr, is_ret) & t->mask;
    while (t->slots[i].space >= 0)
        i = (i + 1) & t->mask;
    Frame *f = &t->slots[i];
    f->space = space;
    f->addr = addr;
    f->is_ret = is_ret;
    f->flags = flags;
    f->text = copy;
    f->len = len;
    t->used++;
    return 0;
}

/* --------------------------------------------- the maps of address spaces */
typedef struct {
    uint64_t start, end, pgoff;
    int64_t binary;       /* a space >= 2, or BINARY_UNKNOWN / BINARY_CAREFUL */
} MapEntry;

typedef struct {
    PyObject *group;      /* the MapGroup (a strong reference), NULL: empty */
    long long generation;
    MapEntry *maps;
    Py_ssize_t n;
    PyObject *objects;    /* the Map objects, in the same order (a list) */
} Space;

/* address spaces kept (cleared when full: a recording of many short
 * processes meets each once) */
#define SPACES 4096

typedef struct {
    PyObject_HEAD
    FrameTable frames;
    Space spaces[SPACES];
    Py_ssize_t nspaces;
    Space *current;           /* the space of the sample being made */
    PyObject *plans;          /* {event: (header flags, event text) or None} */
    PyObject *kernel_maps;    /* the session's kernel MapGroup */
    PyObject *ksymbols;       /* the session's KSYMBOL list */
    long long kernel_generation;
    Py_ssize_t ksymbols_seen;
    uint64_t contexts[8];     /* the callchain's context markers */
    int ncontexts;
    uint64_t kernel_contexts[8];
    int nkernel_contexts;
    uint64_t context_max;     /* at and above: a marker, or a walk's garbage */
    long max_stack;
    Buffer out;
    Buffer line;
} SampleText;

static PyObject *s_event, *s_fields, *s_thread, *s_comm, *s_pid, *s_tid, *s_cpu, *s_time,
    *s_period, *s_cpumode, *s_process, *s_maps, *s_generation, *s_callchain, *s_ips;

static void space_free(Space *s) {
    Py_CLEAR(s->group);
    Py_CLEAR(s->objects);
    PyMem_Free(s->maps);
    s->maps = NULL;
    s->n = 0;
}

static void spaces_clear(SampleText *self) {
    for (Py_ssize_t i = 0; i < self->nspaces; i++)
        space_free(&self->spaces[i]);
    self->nspaces = 0;
    self->current = NULL;
}

static Space *space_of(SampleText *self, PyObject *group) {
    for (Py_ssize_t i = self->nspaces - 1; i >= 0; i--)
        if (self->spaces[i].group == group)
            return &self->spaces[i];
    return NULL;
}

static long long int_attr(PyObject *obj, PyObject *name, int *ok) {
    if (!*ok)
        return 0;       /* (an error is set already) */
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) {
        *ok = 0;
        return 0;
    }
    long long x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred())
        *ok = 0;
    return x;
}

/* ------------------------------------------------------------ the object */
static int SampleText_init(SampleText *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"kernel_maps", "ksymbols", "contexts", "kernel_contexts",
                             "context_max", "max_stack", NULL};
    PyObject *kernel_maps, *ksymbols, *contexts, *kernel_contexts;
    unsigned long long context_max;
    long max_stack;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!O!Kl", kwlist, &kernel_maps,
                                     &PyList_Type, &ksymbols, &PyTuple_Type, &contexts,
                                     &PyTuple_Type, &kernel_contexts, &context_max, &max_stack))
        return -1;
    if (PyTuple_GET_SIZE(contexts) > 8 || PyTuple_GET_SIZE(kernel_contexts) > 8) {
        PyErr_SetString(PyExc_ValueError, "at most 8 contexts");
        return -1;
    }
    self->ncontexts = (int)PyTuple_GET_SIZE(contexts);
    for (int i = 0; i < self->ncontexts; i++) {
        self->contexts[i] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(contexts, i));
        if (PyErr_Occurred())
            return -1;
    }
    self->nkernel_contexts = (int)PyTuple_GET_SIZE(kernel_contexts);
    for (int i = 0; i < self->nkernel_contexts; i++) {
        self->kernel_contexts[i] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(kernel_contexts, i));
        if (PyErr_Occurred())
            return -1;
    }
    self->context_max = context_max;
    self->max_stack = max_stack;
    Py_INCREF(kernel_maps);
    Py_XSETREF(self->kernel_maps, kernel_maps);
    Py_INCREF(ksymbols);
    Py_XSETREF(self->ksymbols, ksymbols);
    int ok = 1;
    self->kernel_generation = int_attr(kernel_maps, s_generation, &ok);
    if (!ok)
        return -1;
    self->ksymbols_seen = PyList_GET_SIZE(ksymbols);
    if (self->plans == NULL && (self->plans = PyDict_New()) == NULL)
        return -1;
    if (self->frames.slots == NULL && frames_init(&self->frames, 1 << 17) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void SampleText_dealloc(SampleText *self) {
    spaces_clear(self);
    if (self->frames.slots != NULL) {
        frames_clear(&self->frames);
        PyMem_Free(self->frames.slots);
    }
    PyMem_Free(self->out.data);
    PyMem_Free(self->line.data);
    Py_CLEAR(self->plans);
    Py_CLEAR(self->kernel_maps);
    Py_CLEAR(self->ksymbols);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* set_plan(event, plan): plan = (header flags, event text as bytes), or
 * None for an event whose samples go back to the Python path */
static PyObject *SampleText_set_plan(SampleText *self, PyObject *args) {
    PyObject *event, *plan;
    if (!PyArg_ParseTuple(args, "OO", &event, &plan))
        return NULL;
    if (plan != Py_None && !(PyTuple_Check(plan) && PyTuple_GET_SIZE(plan) == 2 &&
                             PyLong_Check(PyTuple_GET_ITEM(plan, 0)) &&
                             PyBytes_Check(PyTuple_GET_ITEM(plan, 1)))) {
        PyErr_SetString(PyExc_TypeError, "a plan is (int, bytes) or None");
        return NULL;
    }
    if (PyDict_SetItem(self->plans, event, plan) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* set_maps(group, generation, bounds, objects, binaries): the maps of an
 * address space at a generation: bounds a bytes of (start, end, pgoff)
 * u64 triples, objects the Map objects, binaries a list of ints (the space
 * of each map's binary, or BINARY_UNKNOWN / BINARY_CAREFUL) */
static PyObject *SampleText_set_maps(SampleText *self, PyObject *args) {
    PyObject *group, *objects, *binaries;
    long long generation;
    Py_buffer bounds;
    if (!PyArg_ParseTuple(args, "OLy*O!O!", &group, &generation, &bounds, &PyList_Type,
                          &objects, &PyList_Type, &binaries))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(objects);
    if (PyList_GET_SIZE(binaries) != n || bounds.len != n * 24) {
        PyBuffer_Release(&bounds);
        PyErr_SetString(PyExc_ValueError, "set_maps: lengths disagree");
        return NULL;
    }
    MapEntry *maps = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(MapEntry));
    if (maps == NULL) {
        PyBuffer_Release(&bounds);
        return PyErr_NoMemory();
    }
    const unsigned char *p = bounds.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t v[3];
        memcpy(v, p + 24 * i, 24);
        maps[i].start = v[0];
        maps[i].end = v[1];
        maps[i].pgoff = v[2];
        maps[i].binary = PyLong_AsLongLong(PyList_GET_ITEM(binaries, i));
        if (i > 0 && maps[i].start < maps[i - 1].start) {
            PyErr_SetString(PyExc_ValueError, "set_maps: not sorted");
        }
    }
    PyBuffer_Release(&bounds);
    if (PyErr_Occurred()) {
        PyMem_Free(maps);
        return NULL;
    }
    Space *s = space_of(self, group);
    if (s == NULL) {
        if (self->nspaces == SPACES)
            spaces_clear(self);
        s = &self->spaces[self->nspaces++];
        Py_INCREF(group);
        s->group = group;
    } else {
        PyMem_Free(s->maps);
        Py_CLEAR(s->objects);
    }
    s->generation = generation;
    s->maps = maps;
    s->n = n;
    Py_INCREF(objects);
    s->objects = objects;
    Py_RETURN_NONE;
}

/* bind(group, index, binary): the binary of the group's map at index */
static PyObject *SampleText_bind(SampleText *self, PyObject *args) {
    PyObject *group;
    Py_ssize_t index;
    long long binary;
    if (!PyArg_ParseTuple(args, "OnL", &group, &index, &binary))
        return NULL;
    Space *s = space_of(self, group);
    if (s == NULL || index < 0 || index >= s->n) {
        PyErr_SetString(PyExc_IndexError, "bind: no such map");
        return NULL;
    }
    s->maps[index].binary = binary;
    Py_RETURN_NONE;
}

/* add_frame(space, addr, is_ret, flags, text): a frame's lines (UTF-8) */
static PyObject *SampleText_add_frame(SampleText *self, PyObject *args) {
    long long space;
    unsigned long long addr;
    int is_ret;
    unsigned int flags;
    const char *text;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "LKpIy#", &space, &addr, &is_ret, &flags, &text, &len))
        return NULL;
    if (space < 0) {
        PyErr_SetString(PyExc_ValueError, "add_frame: a negative space");
        return NULL;
    }
    if (frames_put(&self->frames, space, addr, (uint32_t)is_ret, flags, text, len) < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------- the sample's text */
static int is_in(uint64_t v, const uint64_t *set, int n) {
    for (int i = 0; i < n; i++)
        if (set[i] == v)
            return 1;
    return 0;
}

static const MapEntry *find_map(const Space *s, uint64_t avma, Py_ssize_t *index) {
    Py_ssize_t lo = 0, hi = s->n;      /* the first map starting after avma */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].start <= avma)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const MapEntry *m = &s->maps[lo - 1];
    if (avma < m->end) {
        *index = lo - 1;
        return m;
    }
    return NULL;
}

/* the kernel's state moved (a module's map, a KSYMBOL): the frames of
 * kernel addresses, and of user addresses in no map that fall back to the
 * kernel's maps, may read otherwise */
static int check_kernel(SampleText *self) {
    int ok = 1;
    long long generation = int_attr(self->kernel_maps, s_generation, &ok);
    if (!ok)
        return -1;
    Py_ssize_t nks = PyList_GET_SIZE(self->ksymbols);
    if (generation != self->kernel_generation || nks != self->ksymbols_seen) {
        frames_clear(&self->frames);
        self->kernel_generation = generation;
        self->ksymbols_seen = nks;
    }
    return 0;
}

static int add_int(Buffer *b, const char *fmt, long long v) {
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, fmt, v);
    if (n < 0 || n >= (int)sizeof tmp)
        return -1;
    return buf_add(b, tmp, (size_t)n);
}

static int add_uint(Buffer *b, const char *fmt, unsigned long long v) {
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, fmt, v);
    if (n < 0 || n >= (int)sizeof tmp)
        return -1;
    return buf_add(b, tmp, (size_t)n);
}

/* the header of ScriptFormatter._header_for, for a sample with a stack;
 * 1 made, 0 hand back, -1 error */
static int add_header(Buffer *b, PyObject *sample, long flags, PyObject *event_text) {
    if (flags & H_COMM) {
        PyObject *comm = PyObject_GetAttr(sample, s_comm);
        if (comm == NULL)
            return -1;
        Py_ssize_t n;
        const char *c = PyUnicode_Check(comm) ? PyUnicode_AsUTF8AndSize(comm, &n) : NULL;
        if (c == NULL) {
            Py_DECREF(comm);
            PyErr_Clear();
            return 0;           /* (not a str, or one UTF-8 cannot carry) */
        }
        int r = buf_add(b, c, (size_t)n) < 0 || buf_add(b, " ", 1) < 0;
        Py_DECREF(comm);
        if (r)
            return -1;
    }
    int ok = 1;
    if (flags & (H_PID | H_TID)) {
        long long pid = 0, tid = 0;
        if (flags & H_PID)
            pid = int_attr(sample, s_pid, &ok);
        if (flags & H_TID)
            tid = int_attr(sample, s_tid, &ok);
        if (!ok) {
            PyErr_Clear();
            return 0;
        }
        if ((flags & H_PID) && (flags & H_TID)) {
            if (add_int(b, "%5lld/", pid) < 0 || add_int(b, "%-5lld ", tid) < 0)
                return -1;
        } else if (add_int(b, "%5lld ", (flags & H_PID) ? pid : tid) < 0)
            return -1;
    }
    if (flags & H_CPU) {
        PyObject *cpu = PyObject_GetAttr(sample, s_cpu);
        if (cpu == NULL)
            return -1;
        if (cpu != Py_None) {
            long long v = PyLong_AsLongLong(cpu);
            Py_DECREF(cpu);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            if (add_int(b, "[%03lld] ", v) < 0)
                return -1;
        } else
            Py_DECREF(cpu);
    }
    if (flags & H_TIME) {
        PyObject *t = PyObject_GetAttr(sample, s_time);
        if (t == NULL)
            return -1;
        unsigned long long v = PyLong_AsUnsignedLongLong(t);
        Py_DECREF(t);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (add_uint(b, "%5llu.", v / 1000000000ULL) < 0)
            return -1;
        if (flags & H_NANOSECS) {
            if (add_uint(b, "%09llu: ", v % 1000000000ULL) < 0)
                return -1;
        } else if (add_uint(b, "%06llu: ", (v % 1000000000ULL) / 1000) < 0)
            return -1;
    }
    if (flags & H_PERIOD) {
        PyObject *p = PyObject_GetAttr(sample, s_period);
        if (p == NULL)
            return -1;
        unsigned long long v = PyLong_Check(p) ? PyLong_AsUnsignedLongLong(p) : (unsigned long long)-1;
        int bad = (v == (unsigned long long)-1) && (PyErr_Occurred() || !PyLong_Check(p));
        Py_DECREF(p);
        if (bad) {
            PyErr_Clear();
            return 0;
        }
        if (add_uint(b, "%10llu ", v) < 0)
            return -1;
    }
    if (flags & H_EVENT) {
        if (buf_add(b, PyBytes_AS_STRING(event_text), (size_t)PyBytes_GET_SIZE(event_text)) < 0)
            return -1;
    }
    return 1;
}

static PyObject *need(int kind, PyObject *what) {
    return Py_BuildValue("(iO)", kind, what);
}

/* text(sample): the sample's text (str), None (the Python path makes it),
 * or a tuple naming what the core needs first:
 *   (NEED_PLAN, event), (NEED_MAPS, group),
 *   (NEED_BINARY, group, index of the map, its Map),
 *   (NEED_FRAME, address, kernel context, is a return address, space, key) */
static PyObject *SampleText_text(SampleText *self, PyObject *sample) {
    PyObject *result = NULL, *event = NULL, *fields = NULL, *thread = NULL, *process = NULL,
             *group = NULL, *ips = NULL;
    Buffer *line = &self->line;
    line->len = 0;

    event = PyObject_GetAttr(sample, s_event);
    if (event == NULL)
        goto done;
    PyObject *plan = PyDict_GetItemWithError(self->plans, event);   /* borrowed */
    if (plan == NULL) {
        result = PyErr_Occurred() ? NULL : need(NEED_PLAN, event);
        goto done;
    }
    if (plan == Py_None)
        goto hand_back;
    long hflags = PyLong_AsLong(PyTuple_GET_ITEM(plan, 0));
    PyObject *event_text = PyTuple_GET_ITEM(plan, 1);

    fields = PyObject_GetAttr(sample, s_fields);
    if (fields == NULL)
        goto done;
    if (!PyDict_Check(fields))
        goto hand_back;
    PyObject *chain = PyDict_GetItemWithError(fields, s_callchain);      /* borrowed */
    if (chain == NULL || !PyDict_Check(chain)) {
        if (PyErr_Occurred())
            goto done;
        goto hand_back;
    }
    ips = PyDict_GetItemWithError(chain, s_ips);
    if (ips == NULL || !PyList_Check(ips) || PyList_GET_SIZE(ips) == 0) {
        if (PyErr_Occurred())
            goto done;
        ips = NULL;
        goto hand_back;
    }
    Py_INCREF(ips);

    thread = PyObject_GetAttr(sample, s_thread);
    if (thread == NULL)
        goto done;
    if (thread == Py_None)
        goto hand_back;
    process = PyObject_GetAttr(thread, s_process);
    if (process == NULL)
        goto done;
    group = PyObject_GetAttr(process, s_maps);
    if (group == NULL)
        goto done;
    int ok = 1;
    long long generation = int_attr(group, s_generation, &ok);
    long long cpumode = int_attr(sample, s_cpumode, &ok);
    if (!ok)
        goto done;
    if (check_kernel(self) < 0)
        goto done;
    Space *space = space_of(self, group);
    if (space == NULL || space->generation != generation) {
        result = need(NEED_MAPS, group);
        goto done;
    }

    int h = add_header(line, sample, hflags, event_text);
    if (h < 0)
        goto no_memory;
    if (h == 0)
        goto hand_back;
    if (buf_add(line, "\n", 1) < 0)
        goto no_memory;

    /* FrameResolver._frames_for_callchain */
    int kernel = cpumode == 1 || cpumode == 3 || cpumode == 4;   /* KERNEL_MODES */
    int first = 1;
    long depth = 0;
    Py_ssize_t n = PyList_GET_SIZE(ips);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t ip = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(ips, i));
        if (ip == (uint64_t)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto hand_back;
        }
        if (ip >= self->context_max) {
            if (!is_in(ip, self->contexts, self->ncontexts))
                break;      /* a walk's garbage: the stack ends here */
            kernel = is_in(ip, self->kernel_contexts, self->nkernel_contexts);
            if (!kernel)
                first = 1;
            continue;
        }
        if (depth >= self->max_stack)
            break;
        int64_t key_space;
        uint64_t key;
        if (kernel) {
            key_space = SPACE_KERNEL;
            key = ip;
        } else {
            Py_ssize_t index = 0;
            const MapEntry *m = find_map(space, ip, &index);
            if (m == NULL) {
                key_space = SPACE_NO_MAP;
                key = ip;
            } else if (m->binary == BINARY_UNKNOWN) {
                result = Py_BuildValue("(iOnO)", NEED_BINARY, group, index,
                                       PyList_GET_ITEM(space->objects, index));
                goto done;
            } else if (m->binary < 0) {
                goto hand_back;                 /* a JIT's map, or one to ask again */
            } else {
                key_space = m->binary;
                key = ip - m->start + m->pgoff;   /* Map.file_offset */
            }
        }
        uint32_t is_ret = !first;
        Frame *f = frames_find(&self->frames, key_space, key, is_ret);
        if (f == NULL) {
            result = Py_BuildValue("(iKiiLK)", NEED_FRAME, (unsigned long long)ip, kernel,
                                   (int)is_ret, (long long)key_space, (unsigned long long)key);
            goto done;
        }
        if (f->flags & FRAME_CAREFUL)
            goto hand_back;
        if (buf_add(line, f->text, (size_t)f->len) < 0)
            goto no_memory;
        int at_ip = first;
        first = 0;
        depth++;
        if (kernel) {
            if (f->flags & FRAME_INTERRUPT)
                first = 1;
        } else if (!at_ip && (f->flags & FRAME_BOTTOM))
            break;
    }
    if (buf_add(line, "\n", 1) < 0)
        goto no_memory;
    result = PyUnicode_DecodeUTF8(line->data, (Py_ssize_t)line->len, "strict");
    goto done;

no_memory:
    PyErr_NoMemory();
    goto done;
hand_back:
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(event);
    Py_XDECREF(fields);
    Py_XDECREF(ips);
    Py_XDECREF(thread);
    Py_XDECREF(process);
    Py_XDECREF(group);
    return result;
}

/* frames_kept(): how many frames the table holds (for tests) */
static PyObject *SampleText_frames_kept(SampleText *self, PyObject *unused) {
    return PyLong_FromSize_t(self->frames.used);
}

static PyMethodDef SampleText_methods[] = {
    {"text", (PyCFunction)SampleText_text, METH_O, "a sample's text, None, or what is needed"},
    {"set_plan", (PyCFunction)SampleText_set_plan, METH_VARARGS, "an event's header plan"},
    {"set_maps", (PyCFunction)SampleText_set_maps, METH_VARARGS, "an address space's maps"},
    {"bind", (PyCFunction)SampleText_bind, METH_VARARGS, "the binary of a map"},
    {"add_frame", (PyCFunction)SampleText_add_frame, METH_VARARGS, "a frame's text"},
    {"frames_kept", (PyCFunction)SampleText_frames_kept, METH_NOARGS, "frames held"},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject SampleTextType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "perfdata.core._core.SampleText",
    .tp_basicsize = sizeof(SampleText),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "the per-sample text of frame-pointer samples",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SampleText_init,
    .tp_dealloc = (destructor)SampleText_dealloc,
    .tp_methods = SampleText_methods,
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core", "perfdata's compiled per-sample core", -1, NULL,
};

PyMODINIT_FUNC PyInit__core(void) {
    struct { PyObject **name; const char *text; } names[] = {
        {&s_event, "event"}, {&s_fields, "fields"}, {&s_thread, "thread"}, {&s_comm, "comm"},
        {&s_pid, "pid"}, {&s_tid, "tid"}, {&s_cpu, "cpu"}, {&s_time, "time"},
        {&s_period, "period"}, {&s_cpumode, "cpumode"}, {&s_process, "process"},
        {&s_maps, "maps"}, {&s_generation, "generation"}, {&s_callchain, "callchain"},
        {&s_ips, "ips"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    if (PyType_Ready(&SampleTextType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SampleTextType);
    if (PyModule_AddObject(m, "SampleText", (PyObject *)&SampleTextType) < 0 ||
        PyModule_AddIntConstant(m, "NEED_PLAN", NEED_PLAN) < 0 ||
        PyModule_AddIntConstant(m, "NEED_MAPS", NEED_MAPS) < 0 ||
        PyModule_AddIntConstant(m, "NEED_BINARY", NEED_BINARY) < 0 ||
        PyModule_AddIntConstant(m, "NEED_FRAME", NEED_FRAME) < 0 ||
        PyModule_AddIntConstant(m, "BINARY_UNKNOWN", BINARY_UNKNOWN) < 0 ||
        PyModule_AddIntConstant(m, "BINARY_CAREFUL", BINARY_CAREFUL) < 0 ||
        PyModule_AddIntConstant(m, "SPACE_KERNEL", SPACE_KERNEL) < 0 ||
        PyModule_AddIntConstant(m, "SPACE_NO_MAP", SPACE_NO_MAP) < 0 ||
        PyModule_AddIntConstant(m, "FRAME_INTERRUPT", FRAME_INTERRUPT) < 0 ||
        PyModule_AddIntConstant(m, "FRAME_BOTTOM", FRAME_BOTTOM) < 0 ||
        PyModule_AddIntConstant(m, "FRAME_CAREFUL", FRAME_CAREFUL) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
