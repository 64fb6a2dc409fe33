/* perfdata.core._core: the compiled per-sample core of `perfdata script`.
 *
 * A SampleText turns one frame-pointer (-g) sample into the text perf script
 * prints for it: the header line (comm, pid/tid, cpu, time, period, event)
 * and one line per frame of its callchain.  It owns no knowledge of
 * binaries or symbols: the text of a frame is made once by the Python path
 * (perfdata.resolve.frames FrameResolver and views.script ScriptFormatter) and kept
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
enum { NEED_PLAN = 1, NEED_BINARY = 3, NEED_FRAME = 4, NEED_NAME = 5 };

/* a map's binary: not asked yet, or one the Python path must handle */
#define BINARY_UNKNOWN (-1)
#define BINARY_CAREFUL (-2)
#define SPACE_KERNEL 0
#define SPACE_NO_MAP 1
#define FIRST_BINARY_SPACE 2  /* binaries' spaces from here */

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
#define H_PLAIN_FRAMES 256    /* frame lines "addr sym+0xoff (dso)": tables apply */
/* folded stacks (perfdata collapse) instead of perf script's text: the
 * frames' texts are their folded names, root first; the root is the comm
 * (with -pid or -pid/tid), the count the period or 1 */
#define H_FOLDED 512
#define H_ROOT_PID 1024
#define H_ROOT_TID 2048
#define H_WEIGHT_PERIOD 4096
/* perf report's histogram (perfdata/core/report.py): with H_FOLDED, the
 * walk stops at the leaf (the first frame with a text) and the sample adds
 * its period to counts[event, cpumode, leaf (, tid, cpu, comm)]: count_report */
#define H_REPORT 8192
/* the flame graph's tree (perfdata/core/flamegraph.py): with H_FOLDED, the
 * folded stack and its root add to counts[stack \0 root] = [weight,
 * samples, first sample's ordinal, its attr]: count_tree */
#define H_TREE 16384
/* a sample without a callchain (report's leaf, with H_REPORT): its ip, at
 * the plan's callchain offset, is the one address walked (ip_leaf_fits) */
#define H_IP_LEAF 32768

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
    if (n == 0)
        return 0;       /* (memcpy to a buffer not yet allocated: UB, UBSan says) */
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

static int add_uint(Buffer *b, const char *fmt, unsigned long long v);
static int add_hex16(Buffer *b, uint64_t v);

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

/* frames kept at most (slots: twice as many); the table starts small and
 * grows, so that the slots a run uses stay in the processor's caches */
#define FRAMES_KEPT (1 << 16)

static int frames_grow(FrameTable *t) {
    size_t nslots = (t->mask + 1) * 2;
    Frame *old = t->slots;
    size_t old_slots = t->mask + 1;
    if (frames_init(t, nslots) < 0) {
        t->slots = old;
        return -1;
    }
    for (size_t i = 0; i < old_slots; i++) {
        if (old[i].space < 0)
            continue;
        size_t j = (size_t)mix((uint64_t)old[i].space, old[i].addr, old[i].is_ret) & t->mask;
        while (t->slots[j].space >= 0)
            j = (j + 1) & t->mask;
        t->slots[j] = old[i];
        t->used++;
    }
    PyMem_Free(old);
    return 0;
}

static int frames_put(FrameTable *t, int64_t space, uint64_t addr, uint32_t is_ret,
                      uint32_t flags, const char *text, Py_ssize_t len) {
    if (frames_find(t, space, addr, is_ret) != NULL)
        return 0;
    if (t->used >= t->limit) {
        if (t->limit >= FRAMES_KEPT)
            frames_clear(t);
        else if (frames_grow(t) < 0)
            return -1;
    }
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
/* bytes of text kept before consume() hands them out */
#define OUT_KEPT (256 << 10)
/* events with a plan (more: their samples go back to the Python path) */
#define PLANS 256

/* What the samples of one event print and where their fields are: the
 * offsets come from the sample's construct schema (perfdata/core/layout.py),
 * -1 where the field is absent. */
typedef struct {
    long header;              /* H_* bits */
    PyObject *event_text;     /* bytes */
    PyObject *no_map_before;  /* bytes, or NULL: no-map frames are asked for */
    PyObject *no_map_after;
    Py_ssize_t pid, tid, time, cpu, period, callchain;
    Py_ssize_t after;         /* fixed bytes the schema has after the callchain */
    Py_ssize_t format;        /* the frame lines' field set: part of a frame's key */
    unsigned long long default_period;
} Plan;

/* A binary's symbols as symbolize's SymbolTable keeps them (its starts and
 * sizes, sorted by start: SymbolTable.bounds), the load segments that map
 * its file offsets to addresses (Binary.file_offset_to_svma), and the names
 * of the symbols asked so far (the symbolizer's, demangled).  Only where
 * the symbol table is the whole answer (no DWARF inline frames or lines):
 * the driver sets one after the Python path named a first address of the
 * binary, and checks the core's text of that frame against its own. */
typedef struct {
    uint64_t offset, filesz, memsz, vaddr, page;
} Segment;

typedef struct {
    int set;
    int kernel;               /* the kernel's (kallsyms: KernelSymbols.lookup, no nesting) */
    Py_buffer starts, sizes;
    Py_ssize_t n;
    Segment *segments;
    Py_ssize_t nsegments;
    PyObject *dso;            /* bytes: the dso as the lines print it */
    PyObject *names;          /* {index: (name bytes, flags) or None} */
} Table;

typedef struct {
    Py_ssize_t ordinal;       /* the SAMPLE ordinal of the chunk's last sample */
    size_t end;               /* where its text ends in out */
} Chunk;

typedef struct {
    PyObject_HEAD
    FrameTable frames;
    Space spaces[SPACES];
    Py_ssize_t nspaces;
    int space_slots[2 * SPACES];  /* space_of's table: an index in spaces, -1 */
    Plan plans[PLANS];
    Py_ssize_t nplans;
    PyObject *plan_index;     /* {attr: index in plans, or None: hand back} */
    PyObject *thread_of;      /* Machine.thread */
    PyObject *threads;        /* Machine.threads ({tid: Thread}), or NULL */
    PyObject *answer;         /* answer(kind, ...): the driver's, see consume */
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
    Py_ssize_t block;         /* samples per block of a sharded run, 0: one */
    Buffer out;               /* the texts made since the last take() */
    Chunk *chunks;
    Py_ssize_t nchunks, chunks_cap;
    Buffer line;              /* the sample being made */
    Py_ssize_t made, handed_back;
    Table *tables;            /* by space (a binary's), ntables of them */
    Py_ssize_t ntables;
    PyObject *counts;         /* folded stacks: {folded stack: count} */
    int as_bytes;             /* take() gives UTF-8 bytes, not str */
    size_t *entries;          /* (start, length) in line of each entry's text */
    Py_ssize_t nentries, entries_cap;
    Buffer folded;
    PyObject *bound;          /* {Map: the space of its binary} (bind) */
    PyObject *by_path;        /* {(path, build-id): space} where that decides (bind) */
} SampleText;

/* Map objects whose binary is kept (cleared when full: a Map is never
 * changed once in a group, and forked processes share them) */
#define BOUND_KEPT (1 << 16)

static PyObject *s_generation, *s_process, *s_maps, *s_comm, *s_attr, *s_misc, *s_body,
    *s_start, *s_end, *s_pgoff, *s_type, *s_time, *s_in_order, *s_path, *s_build_id, *s_pid;

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
    for (size_t i = 0; i < 2 * SPACES; i++)
        self->space_slots[i] = -1;
}

/* the space of a MapGroup: by a table of the spaces' slots hashed by the
 * group's address (2 * SPACES slots; a group is kept, so its address is
 * not another's while it is in the table) */
static size_t space_hash(PyObject *group) {
    return (size_t)(mix((uint64_t)(uintptr_t)group, 0, 0) & (2 * SPACES - 1));
}

static Space *space_of(SampleText *self, PyObject *group) {
    size_t i = space_hash(group);
    for (;;) {
        int at = self->space_slots[i];
        if (at < 0)
            return NULL;
        if (self->spaces[at].group == group)
            return &self->spaces[at];
        i = (i + 1) & (2 * SPACES - 1);
    }
}

static void space_index(SampleText *self, Py_ssize_t at) {
    size_t i = space_hash(self->spaces[at].group);
    while (self->space_slots[i] >= 0)
        i = (i + 1) & (2 * SPACES - 1);
    self->space_slots[i] = (int)at;
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

static void table_free(Table *t) {
    if (t->set) {
        PyBuffer_Release(&t->starts);
        PyBuffer_Release(&t->sizes);
    }
    PyMem_Free(t->segments);
    Py_CLEAR(t->dso);
    Py_CLEAR(t->names);
    memset(t, 0, sizeof *t);
}

static void plans_clear(SampleText *self) {
    for (Py_ssize_t i = 0; i < self->nplans; i++) {
        Py_CLEAR(self->plans[i].event_text);
        Py_CLEAR(self->plans[i].no_map_before);
        Py_CLEAR(self->plans[i].no_map_after);
    }
    self->nplans = 0;
}

/* ------------------------------------------------------------ the object */
static int SampleText_init(SampleText *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"thread_of", "answer", "kernel_maps", "ksymbols", "contexts",
                             "kernel_contexts", "context_max", "max_stack", "block", "counts",
                             "as_bytes", "threads", NULL};
    PyObject *thread_of, *answer, *kernel_maps, *ksymbols, *contexts, *kernel_contexts;
    PyObject *counts = NULL, *threads = NULL;
    int as_bytes = 0;
    unsigned long long context_max;
    long max_stack;
    Py_ssize_t block;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO!O!O!Kln|OpO", kwlist, &thread_of,
                                     &answer, &kernel_maps, &PyList_Type, &ksymbols,
                                     &PyTuple_Type, &contexts, &PyTuple_Type, &kernel_contexts,
                                     &context_max, &max_stack, &block, &counts, &as_bytes,
                                     &threads))
        return -1;
    if (threads == Py_None)
        threads = NULL;
    if (threads != NULL && !PyDict_Check(threads)) {
        PyErr_SetString(PyExc_TypeError, "threads: a dict or None");
        return -1;
    }
    Py_XINCREF(threads);
    Py_XSETREF(self->threads, threads);
    if (counts == Py_None)
        counts = NULL;
    if (counts != NULL && !PyDict_Check(counts)) {
        PyErr_SetString(PyExc_TypeError, "counts: a dict or None");
        return -1;
    }
    self->as_bytes = as_bytes;
    Py_XINCREF(counts);
    Py_XSETREF(self->counts, counts);
    if (PyTuple_GET_SIZE(contexts) > 8 || PyTuple_GET_SIZE(kernel_contexts) > 8 || block < 0) {
        PyErr_SetString(PyExc_ValueError, "at most 8 contexts, a block >= 0");
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
    self->block = block;
    spaces_clear(self);
    Py_INCREF(thread_of);
    Py_XSETREF(self->thread_of, thread_of);
    Py_INCREF(answer);
    Py_XSETREF(self->answer, answer);
    Py_INCREF(kernel_maps);
    Py_XSETREF(self->kernel_maps, kernel_maps);
    Py_INCREF(ksymbols);
    Py_XSETREF(self->ksymbols, ksymbols);
    int ok = 1;
    self->kernel_generation = int_attr(kernel_maps, s_generation, &ok);
    if (!ok)
        return -1;
    self->ksymbols_seen = PyList_GET_SIZE(ksymbols);
    if (self->plan_index == NULL && (self->plan_index = PyDict_New()) == NULL)
        return -1;
    if (self->bound == NULL && (self->bound = PyDict_New()) == NULL)
        return -1;
    if (self->by_path == NULL && (self->by_path = PyDict_New()) == NULL)
        return -1;
    if (self->frames.slots == NULL && frames_init(&self->frames, 1 << 10) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void SampleText_dealloc(SampleText *self) {
    spaces_clear(self);
    plans_clear(self);
    if (self->frames.slots != NULL) {
        frames_clear(&self->frames);
        PyMem_Free(self->frames.slots);
    }
    PyMem_Free(self->out.data);
    PyMem_Free(self->line.data);
    PyMem_Free(self->chunks);
    PyMem_Free(self->entries);
    PyMem_Free(self->folded.data);
    Py_CLEAR(self->counts);
    for (Py_ssize_t i = 0; i < self->ntables; i++)
        table_free(&self->tables[i]);
    PyMem_Free(self->tables);
    Py_CLEAR(self->plan_index);
    Py_CLEAR(self->bound);
    Py_CLEAR(self->by_path);
    Py_CLEAR(self->thread_of);
    Py_CLEAR(self->threads);
    Py_CLEAR(self->answer);
    Py_CLEAR(self->kernel_maps);
    Py_CLEAR(self->ksymbols);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* set_plan(attr, plan): plan is None (the event's samples go back to the
 * Python path) or (header bits, event text, no-map text before, after,
 * pid, tid, time, cpu, period, callchain, after, default period): the texts
 * bytes (before and after both None where no-map frames are asked for: a
 * user frame below the kernel's half in no map is before + "%16x" of its
 * address + after once the driver saw the Python path make them so), the
 * offsets in the sample's body (-1: absent), after the fixed bytes the
 * schema has after the callchain. */
static PyObject *SampleText_set_plan(SampleText *self, PyObject *args) {
    PyObject *attr, *plan;
    if (!PyArg_ParseTuple(args, "OO", &attr, &plan))
        return NULL;
    if (plan == Py_None)
        return PyDict_SetItem(self->plan_index, attr, Py_None) < 0 ? NULL : Py_NewRef(Py_None);
    Plan p;
    memset(&p, 0, sizeof p);
    PyObject *text, *before, *after;
    if (!PyArg_ParseTuple(plan, "lSOOnnnnnnnKn", &p.header, &text, &before, &after, &p.pid,
                          &p.tid, &p.time, &p.cpu, &p.period, &p.callchain, &p.after,
                          &p.default_period, &p.format))
        return NULL;
    if ((before == Py_None) != (after == Py_None) ||
        (before != Py_None && !(PyBytes_Check(before) && PyBytes_Check(after)))) {
        PyErr_SetString(PyExc_TypeError, "no-map texts: two bytes or two None");
        return NULL;
    }
    /* (offsets the walk reads at: u32 pid and tid, u64 the others) */
    if (p.pid < 0 || p.tid < 0 || p.callchain < 0 || p.after < 0 || p.format < 0 ||
        p.format > 255 ||
        p.time < -1 || p.cpu < -1 || p.period < -1) {
        PyErr_SetString(PyExc_ValueError, "a plan needs pid, tid and the callchain");
        return NULL;
    }
    PyObject *known = PyDict_GetItemWithError(self->plan_index, attr);
    Py_ssize_t index;
    if (known != NULL && known != Py_None) {
        index = PyLong_AsSsize_t(known);
        Plan *old = &self->plans[index];
        Py_CLEAR(old->event_text);
        Py_CLEAR(old->no_map_before);
        Py_CLEAR(old->no_map_after);
    } else {
        if (PyErr_Occurred())
            return NULL;
        if (self->nplans == PLANS)
            return PyDict_SetItem(self->plan_index, attr, Py_None) < 0 ? NULL : Py_NewRef(Py_None);
        index = self->nplans;
        PyObject *at = PyLong_FromSsize_t(index);
        if (at == NULL || PyDict_SetItem(self->plan_index, attr, at) < 0) {
            Py_XDECREF(at);
            return NULL;
        }
        Py_DECREF(at);
        self->nplans++;
    }
    p.event_text = Py_NewRef(text);
    if (before != Py_None) {
        p.no_map_before = Py_NewRef(before);
        p.no_map_after = Py_NewRef(after);
    }
    self->plans[index] = p;
    Py_RETURN_NONE;
}

/* The binary the driver bound a map to (bind): by the Map, or (a process's
 * map) by its path and build-id where the driver said they decide;
 * BINARY_UNKNOWN else (asked for at its first frame), or BINARY_ERROR with
 * an error set. */
#define BINARY_ERROR (-3)
static long long bound_binary(SampleText *self, PyObject *m, int kernel) {
    PyObject *got = PyDict_GetItemWithError(self->bound, m);
    if (got == NULL && !kernel && !PyErr_Occurred() && PyDict_GET_SIZE(self->by_path) > 0) {
        PyObject *path = PyObject_GetAttr(m, s_path);
        PyObject *bid = path == NULL ? NULL : PyObject_GetAttr(m, s_build_id);
        PyObject *key = bid == NULL ? NULL : PyTuple_Pack(2, path, bid);
        Py_XDECREF(path);
        Py_XDECREF(bid);
        if (key == NULL)
            return BINARY_ERROR;
        got = PyDict_GetItemWithError(self->by_path, key);    /* (borrowed: the dict's) */
        Py_DECREF(key);
    }
    if (got == NULL)
        return PyErr_Occurred() ? BINARY_ERROR : BINARY_UNKNOWN;
    long long binary = PyLong_AsLongLong(got);
    return binary == -1 && PyErr_Occurred() ? BINARY_ERROR : binary;
}

/* The core's maps of an address space (a MapGroup) at a generation, read
 * from the group (MapGroup.in_order: its Map objects by start), each with
 * the binary it was bound to: the space, or NULL with an error */
static Space *load_space(SampleText *self, PyObject *group, long long generation) {
    PyObject *objects = PyObject_CallMethodNoArgs(group, s_in_order);
    if (objects == NULL)
        return NULL;
    if (!PyList_Check(objects)) {
        Py_DECREF(objects);
        PyErr_SetString(PyExc_TypeError, "MapGroup.in_order: not a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(objects);
    MapEntry *maps = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(MapEntry));
    if (maps == NULL) {
        Py_DECREF(objects);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n && !PyErr_Occurred(); i++) {
        PyObject *m = PyList_GET_ITEM(objects, i);
        PyObject *names[3] = {s_start, s_end, s_pgoff};
        uint64_t v[3];
        for (int k = 0; k < 3; k++) {
            PyObject *x = PyObject_GetAttr(m, names[k]);
            v[k] = x == NULL ? 0 : PyLong_AsUnsignedLongLong(x);
            Py_XDECREF(x);
            if (PyErr_Occurred())
                break;
        }
        if (PyErr_Occurred())
            break;
        maps[i].start = v[0];
        maps[i].end = v[1];
        maps[i].pgoff = v[2];
        maps[i].binary = bound_binary(self, m, group == self->kernel_maps);
        if (!PyErr_Occurred() && i > 0 && maps[i].start < maps[i - 1].end)
            PyErr_SetString(PyExc_ValueError, "a MapGroup's maps: not sorted, or overlapping");
    }
    if (PyErr_Occurred()) {
        PyMem_Free(maps);
        Py_DECREF(objects);
        return NULL;
    }
    Space *s = space_of(self, group);
    if (s == NULL) {
        if (self->nspaces == SPACES)
            spaces_clear(self);
        s = &self->spaces[self->nspaces++];
        s->group = Py_NewRef(group);
        space_index(self, self->nspaces - 1);
    } else {
        PyMem_Free(s->maps);
        Py_CLEAR(s->objects);
    }
    s->generation = generation;
    s->maps = maps;
    s->n = n;
    s->objects = objects;
    return s;
}

/* bind(group, index, binary[, by_path]): the binary of the group's map at
 * index; by_path: of every map of its path and build-id too */
static PyObject *SampleText_bind(SampleText *self, PyObject *args) {
    PyObject *group;
    Py_ssize_t index;
    long long binary;
    int by_path = 0;
    if (!PyArg_ParseTuple(args, "OnL|p", &group, &index, &binary, &by_path))
        return NULL;
    Space *s = space_of(self, group);
    if (s == NULL || index < 0 || index >= s->n || index >= PyList_GET_SIZE(s->objects)) {
        PyErr_SetString(PyExc_IndexError, "bind: no such map");
        return NULL;
    }
    s->maps[index].binary = binary;
    PyObject *m = PyList_GET_ITEM(s->objects, index);
    if (PyDict_GET_SIZE(self->bound) >= BOUND_KEPT)
        PyDict_Clear(self->bound);
    PyObject *value = PyLong_FromLongLong(binary);
    PyObject *key = NULL;
    int r = value == NULL ? -1 : PyDict_SetItem(self->bound, m, value);
    if (r == 0 && by_path) {
        PyObject *path = PyObject_GetAttr(m, s_path);
        PyObject *bid = path == NULL ? NULL : PyObject_GetAttr(m, s_build_id);
        key = bid == NULL ? NULL : PyTuple_Pack(2, path, bid);
        Py_XDECREF(path);
        Py_XDECREF(bid);
        if (key != NULL && PyDict_GET_SIZE(self->by_path) >= BOUND_KEPT)
            PyDict_Clear(self->by_path);
        r = key == NULL ? -1 : PyDict_SetItem(self->by_path, key, value);
    }
    Py_XDECREF(key);
    Py_XDECREF(value);
    if (r < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* add_frame(space, key, is_ret, flags, text): a frame's lines (UTF-8) */
static PyObject *SampleText_add_frame(SampleText *self, PyObject *args) {
    long long space;
    unsigned long long key;
    int is_ret;
    unsigned int flags;
    const char *text;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "LKpIy#", &space, &key, &is_ret, &flags, &text, &len))
        return NULL;
    if (space < 0) {
        PyErr_SetString(PyExc_ValueError, "add_frame: a negative space");
        return NULL;
    }
    if (frames_put(&self->frames, space, key, (uint32_t)is_ret, flags, text, len) < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* set_table(space, starts, sizes, segments, dso[, kernel]): a binary's
 * table (see Table): starts and sizes u64 buffers of one length, segments a
 * bytes of (offset, filesz, memsz, vaddr, page) u64 quintuples, dso bytes;
 * kernel: the kernel's symbols (looked up as KernelSymbols.lookup does: no
 * symbol nested in another), for the frames of a kernel map, keyed by
 * their address (one segment mapping every address to itself) */
static PyObject *SampleText_set_table(SampleText *self, PyObject *args) {
    Py_ssize_t space;
    PyObject *starts_obj, *sizes_obj, *dso;
    Py_buffer segs;
    int kernel = 0;
    if (!PyArg_ParseTuple(args, "nOOy*S|p", &space, &starts_obj, &sizes_obj, &segs, &dso,
                          &kernel))
        return NULL;
    Table t;
    memset(&t, 0, sizeof t);
    if (space < 2 || space > (1 << 24) || segs.len % 40 != 0) {
        PyBuffer_Release(&segs);
        PyErr_SetString(PyExc_ValueError, "set_table: a binary's space, whole segments");
        return NULL;
    }
    if (PyObject_GetBuffer(starts_obj, &t.starts, PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&segs);
        return NULL;
    }
    if (PyObject_GetBuffer(sizes_obj, &t.sizes, PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&t.starts);
        PyBuffer_Release(&segs);
        return NULL;
    }
    t.set = 1;
    t.kernel = kernel;
    if (t.starts.itemsize != 8 || t.sizes.itemsize != 8 || t.starts.len != t.sizes.len ||
        t.starts.format == NULL || t.sizes.format == NULL ||
        (strcmp(t.starts.format, "Q") != 0 && strcmp(t.starts.format, "L") != 0) ||
        strcmp(t.starts.format, t.sizes.format) != 0) {
        PyBuffer_Release(&segs);
        table_free(&t);
        PyErr_SetString(PyExc_ValueError, "set_table: starts and sizes are u64 arrays of a length");
        return NULL;
    }
    t.n = t.starts.len / 8;
    t.nsegments = segs.len / 40;
    t.segments = PyMem_Malloc((size_t)(t.nsegments ? t.nsegments : 1) * sizeof(Segment));
    if (t.segments == NULL) {
        PyBuffer_Release(&segs);
        table_free(&t);
        return PyErr_NoMemory();
    }
    memcpy(t.segments, segs.buf, (size_t)segs.len);
    PyBuffer_Release(&segs);
    t.dso = Py_NewRef(dso);
    if ((t.names = PyDict_New()) == NULL) {
        table_free(&t);
        return NULL;
    }
    if (space >= self->ntables) {
        Py_ssize_t n = space + 64;
        Table *tables = PyMem_Realloc(self->tables, (size_t)n * sizeof(Table));
        if (tables == NULL) {
            table_free(&t);
            return PyErr_NoMemory();
        }
        memset(tables + self->ntables, 0, (size_t)(n - self->ntables) * sizeof(Table));
        self->tables = tables;
        self->ntables = n;
    }
    table_free(&self->tables[space]);
    self->tables[space] = t;
    Py_RETURN_NONE;
}

/* drop_table(space): the binary's frames are the Python path's again */
static PyObject *SampleText_drop_table(SampleText *self, PyObject *arg) {
    Py_ssize_t space = PyLong_AsSsize_t(arg);
    if (space == -1 && PyErr_Occurred())
        return NULL;
    if (space >= 0 && space < self->ntables && self->tables[space].set) {
        table_free(&self->tables[space]);
        frames_clear(&self->frames);    /* (the frames the table made: the Python path's now) */
    }
    Py_RETURN_NONE;
}

/* set_name(space, index, name, flags): the symbol's name (bytes), or None
 * where its frames are the Python path's */
static PyObject *SampleText_set_name(SampleText *self, PyObject *args) {
    Py_ssize_t space, index;
    PyObject *name;
    unsigned int flags;
    if (!PyArg_ParseTuple(args, "nnOI", &space, &index, &name, &flags))
        return NULL;
    if (space < 0 || space >= self->ntables || !self->tables[space].set ||
        index < 0 || index >= self->tables[space].n || (name != Py_None && !PyBytes_Check(name))) {
        PyErr_SetString(PyExc_ValueError, "set_name: no such symbol");
        return NULL;
    }
    PyObject *key = PyLong_FromSsize_t(index);
    PyObject *value = name == Py_None ? Py_NewRef(Py_None) : Py_BuildValue("(OI)", name, flags);
    int r = key == NULL || value == NULL ? -1 :
        PyDict_SetItem(self->tables[space].names, key, value);
    Py_XDECREF(key);
    Py_XDECREF(value);
    if (r < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Binary.file_offset_to_svma (_segment_for_offset): 1 found, 0 none */
static int table_svma(const Table *t, uint64_t offset, uint64_t *svma, int *below) {
    const Segment *found = NULL;
    for (Py_ssize_t i = 0; i < t->nsegments && found == NULL; i++) {
        const Segment *s = &t->segments[i];
        if (s->offset <= offset && offset - s->offset < s->filesz)
            found = s;
    }
    for (Py_ssize_t i = 0; i < t->nsegments && found == NULL; i++) {
        const Segment *s = &t->segments[i];
        uint64_t size = s->memsz > s->filesz ? s->memsz : s->filesz;
        if ((s->offset & ~(s->page - 1)) <= offset && offset < s->offset + size &&
            s->offset + size >= s->offset)
            found = s;
    }
    if (found == NULL)
        return 0;
    *below = offset < found->offset && found->offset - offset > found->vaddr;
    *svma = found->vaddr + offset - found->offset;
    return 1;
}

/* SymbolTable.lookup: the index of the symbol covering svma, or -1 */
static Py_ssize_t table_lookup(const Table *t, uint64_t svma) {
    const uint64_t *starts = t->starts.buf, *sizes = t->sizes.buf;
    Py_ssize_t lo = 0, hi = t->n;        /* bisect_right */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (svma < starts[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    Py_ssize_t i = lo - 1;
    if (i < 0)
        return -1;
    if (svma - starts[i] < sizes[i])
        return i;
    if (t->kernel)
        return -1;
    /* a symbol nested in a larger one: the enclosing one covers the rest */
    for (Py_ssize_t j = i - 1; j > i - 4 && j >= 0; j--)
        if (starts[j] <= svma && svma - starts[j] < sizes[j])
            return j;
    return -1;
}

/* The lines of a frame at a file offset of a tabled binary (AddressNamer.
 * frames_anew without DWARF): 1 made (flags set), 0 the Python path's (a
 * return address at a symbol's edge: whether a call precedes it decides,
 * which the core does not read), -1 error, -2 the name of *index is needed
 * (*at: the address it was found at). */
static int table_frame(const Table *t, uint64_t offset, int is_ret, int folded, Buffer *line,
                       unsigned int *flags, Py_ssize_t *index, uint64_t *at) {
    uint64_t svma;
    int below = 0;
    if (!table_svma(t, offset, &svma, &below) || below)
        return 0;
    Py_ssize_t found = table_lookup(t, svma);
    if (is_ret && svma > 0 && table_lookup(t, svma - 1) != found)
        return 0;
    *flags = 0;
    const char *name = NULL;
    Py_ssize_t name_len = 0;
    if (found >= 0) {
        PyObject *key = PyLong_FromSsize_t(found);
        if (key == NULL)
            return -1;
        PyObject *known = PyDict_GetItemWithError(t->names, key);
        Py_DECREF(key);
        if (known == NULL) {
            if (PyErr_Occurred())
                return -1;
            *index = found;
            *at = svma;
            return -2;
        }
        if (known == Py_None)
            return 0;
        PyObject *bytes = PyTuple_GET_ITEM(known, 0);
        name = PyBytes_AS_STRING(bytes);
        name_len = PyBytes_GET_SIZE(bytes);
        *flags = (unsigned int)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(known, 1));
    }
    if (folded) {
        /* the symbol's folded name; the dso's where there is no symbol (for
         * report's leaf, folded 2: the address names the entry: the dso's
         * text and the file offset, in hex) */
        if (found >= 0)
            return buf_add(line, name, (size_t)name_len) < 0 ? -1 : 1;
        if (folded == 2)    /* (the binary's text, then the file offset) */
            return buf_add(line, PyBytes_AS_STRING(t->dso), (size_t)PyBytes_GET_SIZE(t->dso))
                < 0 || add_uint(line, "%llx", (unsigned long long)offset) < 0 ? -1 : 1;
        return buf_add(line, PyBytes_AS_STRING(t->dso), (size_t)PyBytes_GET_SIZE(t->dso)) < 0
            ? -1 : 1;
    }
    if (buf_add(line, "\t", 1) < 0 || add_hex16(line, offset) < 0)
        return -1;
    if (found >= 0) {
        const uint64_t *starts = t->starts.buf;
        if (buf_add(line, " ", 1) < 0 || buf_add(line, name, (size_t)name_len) < 0 ||
            add_uint(line, "+0x%llx", (unsigned long long)(svma - starts[found])) < 0)
            return -1;
    } else if (buf_add(line, " [unknown]", 10) < 0)
        return -1;
    if (buf_add(line, " (", 2) < 0 ||
        buf_add(line, PyBytes_AS_STRING(t->dso), (size_t)PyBytes_GET_SIZE(t->dso)) < 0 ||
        buf_add(line, ")\n", 2) < 0)
        return -1;
    return 1;
}

/* table_text(space, key, is_ret[, report]): the core's lines of a frame of
 * a tabled binary, as bytes; an int: the index of a symbol whose name is
 * needed (set_name); None: the Python path's (for the driver's check);
 * report: as report's leaf (H_REPORT) */
static PyObject *SampleText_table_text(SampleText *self, PyObject *args) {
    Py_ssize_t space;
    unsigned long long key;
    int is_ret, report = 0;
    if (!PyArg_ParseTuple(args, "nKp|p", &space, &key, &is_ret, &report))
        return NULL;
    if (space < 0 || space >= self->ntables || !self->tables[space].set)
        Py_RETURN_NONE;
    Buffer b = {NULL, 0, 0};
    unsigned int flags;
    Py_ssize_t index;
    uint64_t at;
    int r = table_frame(&self->tables[space], key, is_ret,
                        report ? 2 : self->counts != NULL, &b, &flags, &index, &at);
    PyObject *out = r == 1 ? PyBytes_FromStringAndSize(b.data ? b.data : "", (Py_ssize_t)b.len)
        : r == -2 ? Py_BuildValue("(nK)", index, (unsigned long long)at)
        : r == 0 ? Py_NewRef(Py_None) : NULL;
    if (r == -1 && !PyErr_Occurred())
        PyErr_NoMemory();
    PyMem_Free(b.data);
    return out;
}

/* take(): the texts made since the last take, as [(ordinal of the last
 * sample, text)], one item a block of a sharded run */
static PyObject *SampleText_take(SampleText *self, PyObject *unused) {
    PyObject *out = PyList_New(self->nchunks);
    if (out == NULL)
        return NULL;
    size_t start = 0;
    for (Py_ssize_t i = 0; i < self->nchunks; i++) {
        Chunk *c = &self->chunks[i];
        PyObject *text = self->as_bytes
            ? PyBytes_FromStringAndSize(self->out.data + start, (Py_ssize_t)(c->end - start))
            : PyUnicode_DecodeUTF8(self->out.data + start, (Py_ssize_t)(c->end - start),
                                   "strict");
        PyObject *item = text == NULL ? NULL : Py_BuildValue("(nN)", c->ordinal, text);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
        start = c->end;
    }
    self->nchunks = 0;
    self->out.len = 0;
    return out;
}

static PyObject *SampleText_counts(SampleText *self, PyObject *unused) {
    return Py_BuildValue("{snsnsn}", "made", self->made, "handed_back", self->handed_back,
                         "frames", (Py_ssize_t)self->frames.used);
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

/* "%16llx" of v: printf's own text, without printf (a run prints a few
 * million of these) */
static int add_hex16(Buffer *b, uint64_t v) {
    char tmp[16];
    int n = 0;
    do {
        tmp[15 - n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    if (buf_reserve(b, 16) < 0)
        return -1;
    memset(b->data + b->len, ' ', (size_t)(16 - n));
    memcpy(b->data + b->len + (16 - n), tmp + 16 - n, (size_t)n);
    b->len += 16;
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

static uint64_t u64_at(const unsigned char *p, Py_ssize_t off) {
    uint64_t v;
    memcpy(&v, p + off, 8);
    return v;
}

static uint32_t u32_at(const unsigned char *p, Py_ssize_t off) {
    uint32_t v;
    memcpy(&v, p + off, 4);
    return v;
}

/* a sample's u32 pid or tid read as a pid_t (perfdata.session.stream.pid_t) */
static long long pid_t_of(uint32_t v) {
    return v > 0x7FFFFFFFu ? (long long)v - 0x100000000LL : (long long)v;
}

/* the thread's comm (*comm, a new reference the caller drops) and its
 * UTF-8 (*c, *n: alive as long as *comm); 1 got, 0 hand back (not a str,
 * or one UTF-8 cannot carry: the Python path's), -1 error */
static int thread_comm(PyObject *thread, PyObject **comm, const char **c, Py_ssize_t *n) {
    *comm = PyObject_GetAttr(thread, s_comm);
    if (*comm == NULL)
        return -1;
    *c = PyUnicode_Check(*comm) ? PyUnicode_AsUTF8AndSize(*comm, n) : NULL;
    if (*c == NULL) {
        Py_CLEAR(*comm);
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* the thread's comm in UTF-8 added to b; 1 added, 0 hand back (as
 * thread_comm), -1 error */
static int add_comm(Buffer *b, PyObject *thread) {
    PyObject *comm;
    const char *c;
    Py_ssize_t n;
    int got = thread_comm(thread, &comm, &c, &n);
    if (got <= 0)
        return got;
    got = buf_add(b, c, (size_t)n) < 0 ? -1 : 1;
    Py_DECREF(comm);
    return got;
}

/* ScriptFormatter._header_for of a sample with a stack; 1 made, 0 hand
 * back, -1 error */
static int add_header(Buffer *b, const Plan *plan, PyObject *thread, const unsigned char *body,
                      long long pid, long long tid) {
    long flags = plan->header;
    if (flags & H_COMM) {
        int got = add_comm(b, thread);
        if (got <= 0)
            return got;
        if (buf_add(b, " ", 1) < 0)
            return -1;
    }
    if ((flags & H_PID) && (flags & H_TID)) {
        if (add_int(b, "%5lld/", pid) < 0 || add_int(b, "%-5lld ", tid) < 0)
            return -1;
    } else if (flags & (H_PID | H_TID)) {
        if (add_int(b, "%5lld ", (flags & H_PID) ? pid : tid) < 0)
            return -1;
    }
    if ((flags & H_CPU) && plan->cpu >= 0) {
        if (add_uint(b, "[%03llu] ", (unsigned long long)u32_at(body, plan->cpu)) < 0)
            return -1;
    }
    if (flags & H_TIME) {
        unsigned long long v = plan->time >= 0 ? u64_at(body, plan->time) : 0;
        if (add_uint(b, "%5llu.", v / 1000000000ULL) < 0)
            return -1;
        if (flags & H_NANOSECS) {
            if (add_uint(b, "%09llu: ", v % 1000000000ULL) < 0)
                return -1;
        } else if (add_uint(b, "%06llu: ", (v % 1000000000ULL) / 1000) < 0)
            return -1;
    }
    if (flags & H_PERIOD) {
        unsigned long long v = plan->period >= 0 ? u64_at(body, plan->period)
                                                 : plan->default_period;
        if (add_uint(b, "%10llu ", v) < 0)
            return -1;
    }
    if (flags & H_EVENT) {
        if (buf_add(b, PyBytes_AS_STRING(plan->event_text),
                    (size_t)PyBytes_GET_SIZE(plan->event_text)) < 0)
            return -1;
    }
    return 1;
}

/* answer(...): the driver's answer to what the core lacks; 0 or -1 */
static int ask(SampleText *self, PyObject *args) {
    if (args == NULL)
        return -1;
    PyObject *r = PyObject_CallObject(self->answer, args);
    Py_DECREF(args);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static int add_chunk(SampleText *self, Py_ssize_t ordinal) {
    if (self->nchunks > 0) {
        Chunk *last = &self->chunks[self->nchunks - 1];
        if (self->block == 0 || (last->ordinal - 1) / self->block == (ordinal - 1) / self->block) {
            last->ordinal = ordinal;
            last->end = self->out.len;
            return 0;
        }
    }
    if (self->nchunks == self->chunks_cap) {
        Py_ssize_t cap = self->chunks_cap ? self->chunks_cap * 2 : 16;
        Chunk *chunks = PyMem_Realloc(self->chunks, (size_t)cap * sizeof(Chunk));
        if (chunks == NULL)
            return -1;
        self->chunks = chunks;
        self->chunks_cap = cap;
    }
    self->chunks[self->nchunks].ordinal = ordinal;
    self->chunks[self->nchunks].end = self->out.len;
    self->nchunks++;
    return 0;
}

/* an entry of the callchain made its text in line from start on */
static int mark_entry(SampleText *self, size_t start) {
    if (self->nentries == self->entries_cap) {
        Py_ssize_t cap = self->entries_cap ? self->entries_cap * 2 : 64;
        size_t *entries = PyMem_Realloc(self->entries, (size_t)cap * 2 * sizeof(size_t));
        if (entries == NULL)
            return -1;
        self->entries = entries;
        self->entries_cap = cap;
    }
    self->entries[2 * self->nentries] = start;
    self->entries[2 * self->nentries + 1] = self->line.len - start;
    self->nentries++;
    return 0;
}

/* collapse_samples' root_name: the comm (spaces as _), -pid or -pid/tid;
 * 1 made, 0 hand back (a java root: its frames are named otherwise), -1 */
static int add_root(Buffer *b, const Plan *plan, PyObject *thread, long long pid,
                    long long tid) {
    size_t start = b->len;
    int got = add_comm(b, thread);
    if (got <= 0)
        return got;
    for (size_t i = start; i < b->len; i++)
        if (b->data[i] == ' ')
            b->data[i] = '_';
    if (plan->header & H_ROOT_TID) {
        if (add_int(b, "-%lld", pid) < 0 || add_int(b, "/%lld", tid) < 0)
            return -1;
    } else if (plan->header & H_ROOT_PID) {
        if (add_int(b, "-%lld", pid) < 0)
            return -1;
    }
    if (b->len - start >= 4 && memcmp(b->data + start, "java", 4) == 0)
        return 0;
    return 1;
}

/* the folded stack of the entries made: counts[root;...;leaf] += weight */
static int count_folded(SampleText *self, const Plan *plan, PyObject *thread,
                        const unsigned char *body, long long pid, long long tid) {
    Buffer *f = &self->folded;
    f->len = 0;
    int r = add_root(f, plan, thread, pid, tid);
    if (r <= 0)
        return r;
    for (Py_ssize_t i = self->nentries - 1; i >= 0; i--) {
        size_t start = self->entries[2 * i], len = self->entries[2 * i + 1];
        if (len == 0)
            continue;
        if (buf_add(f, ";", 1) < 0 || buf_add(f, self->line.data + start, len) < 0)
            return -1;
    }
    unsigned long long weight = 1;
    if (plan->header & H_WEIGHT_PERIOD) {
        weight = plan->period >= 0 ? u64_at(body, plan->period) : plan->default_period;
        if (weight == 0)
            weight = 1;     /* (sample.period or 1) */
    }
    PyObject *key = PyUnicode_DecodeUTF8(f->data, (Py_ssize_t)f->len, "strict");
    if (key == NULL)
        return -1;
    PyObject *add = PyLong_FromUnsignedLongLong(weight);
    PyObject *old = add == NULL ? NULL : PyDict_GetItemWithError(self->counts, key);
    PyObject *sum = NULL;
    if (add != NULL && !PyErr_Occurred())
        sum = old == NULL ? Py_NewRef(add) : PyNumber_Add(old, add);
    int bad = sum == NULL || PyDict_SetItem(self->counts, key, sum) < 0;
    Py_XDECREF(sum);
    Py_XDECREF(add);
    Py_DECREF(key);
    return bad ? -1 : 1;
}

/* a count of report's or the flame graph's (a list: its weight, its
 * samples, then what the first sample made of it) under key: weight and one
 * sample added to it.  1 added, 0 no such count (no error set), -1 error
 * (what: the message when the value is not such a list). */
static int add_to_count(PyObject *counts, PyObject *key, unsigned long long weight,
                        const char *what) {
    PyObject *value = PyDict_GetItemWithError(counts, key);
    if (value == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyList_Check(value) || PyList_GET_SIZE(value) < 2) {
        PyErr_SetString(PyExc_RuntimeError, what);
        return -1;
    }
    PyObject *add = PyLong_FromUnsignedLongLong(weight);
    PyObject *sum = add == NULL ? NULL : PyNumber_Add(PyList_GET_ITEM(value, 0), add);
    Py_XDECREF(add);
    if (sum == NULL)
        return -1;
    PyList_SetItem(value, 0, sum);      /* (steals sum) */
    PyObject *unit = PyLong_FromLong(1);
    PyObject *one = unit == NULL ? NULL : PyNumber_Add(PyList_GET_ITEM(value, 1), unit);
    Py_XDECREF(unit);
    if (one == NULL)
        return -1;
    PyList_SetItem(value, 1, one);
    return 1;
}

/* the first sample's count under key: value (stolen; NULL when making it
 * failed, the error set).  1 counted, -1 error. */
static int new_count(PyObject *counts, PyObject *key, PyObject *value) {
    if (value == NULL)
        return -1;
    int bad = PyDict_SetItem(counts, key, value) < 0;
    Py_DECREF(value);
    return bad ? -1 : 1;
}

/* perf report's count of a sample (H_REPORT): the leaf's text (the first
 * entry with one: the driver's number of the leaf entry's frame) with the
 * event's plan index, the cpumode and, where the sort keys read them
 * (H_TID, H_CPU, H_COMM), the tid, cpu and the thread's comm make the key
 * of counts; its value is [period sum, samples, the first sample's
 * ordinal, its thread, comm (or None), tid, cpu, cpumode, attr, leaf text],
 * made at the first sample of the key.  1 counted, 0 hand back, -1 error. */
static int count_report(SampleText *self, const Plan *plan, Py_ssize_t plan_at,
                        PyObject *attr, PyObject *thread, const unsigned char *body,
                        long long tid, long cpumode, Py_ssize_t ordinal) {
    size_t start = 0, len = 0;
    Py_ssize_t i;
    for (i = 0; i < self->nentries; i++) {
        start = self->entries[2 * i];
        len = self->entries[2 * i + 1];
        if (len > 0)
            break;
    }
    if (i == self->nentries || tid < 0)
        return 0;       /* (no leaf: the sample's own ip; a pid_t below 0) */
    long header = plan->header;
    long long cpu = plan->cpu >= 0 ? (long long)u32_at(body, plan->cpu) : -1;
    unsigned long long period = plan->period >= 0 ? u64_at(body, plan->period)
                                                  : plan->default_period;
    PyObject *comm = Py_NewRef(Py_None);
    const char *c = "";
    Py_ssize_t n = 0;
    if (header & H_COMM) {
        Py_DECREF(comm);
        int got = thread_comm(thread, &comm, &c, &n);
        if (got <= 0)
            return got;
    }
    Buffer *k = &self->folded;
    k->len = 0;
    if (add_int(k, "%lld ", (long long)plan_at) < 0 ||
        add_int(k, "%lld ", (long long)cpumode) < 0 ||
        add_int(k, "%lld ", (header & H_TID) ? tid : 0) < 0 ||
        add_int(k, "%lld ", (header & H_CPU) ? cpu : 0) < 0 ||
        buf_add(k, self->line.data + start, len) < 0 || buf_add(k, "\0", 1) < 0 ||
        buf_add(k, c, (size_t)n) < 0) {
        Py_DECREF(comm);
        PyErr_NoMemory();
        return -1;
    }
    PyObject *key = PyBytes_FromStringAndSize(k->data, (Py_ssize_t)k->len);
    if (key == NULL) {
        Py_DECREF(comm);
        return -1;
    }
    int r = add_to_count(self->counts, key, period, "a report count is not the core's");
    if (r == 0)
        r = new_count(self->counts, key,
                      Py_BuildValue("[KinOOLLlOy#]", period, 1, ordinal, thread, comm, tid, cpu,
                                    cpumode, attr, self->line.data + start, (Py_ssize_t)len));
    Py_DECREF(key);
    Py_DECREF(comm);
    return r;
}

/* the flame graph's count of a sample (H_TREE): the entries' texts root
 * first, joined by ';', a NUL and the root (add_root) are the key; its
 * value [weight, samples, the first sample's ordinal, its attr] (the
 * first sample of a stack makes its nodes; the graph's event is the first
 * sample's).  1 counted, 0 hand back, -1 error. */
static int count_tree(SampleText *self, const Plan *plan, PyObject *attr, PyObject *thread,
                      const unsigned char *body, long long pid, long long tid,
                      Py_ssize_t ordinal) {
    Buffer *f = &self->folded;
    f->len = 0;
    int sep = 0;
    for (Py_ssize_t i = self->nentries - 1; i >= 0; i--) {
        size_t start = self->entries[2 * i], len = self->entries[2 * i + 1];
        if (len == 0)
            continue;
        if ((sep && buf_add(f, ";", 1) < 0) || buf_add(f, self->line.data + start, len) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        sep = 1;
    }
    if (buf_add(f, "\0", 1) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    int r = add_root(f, plan, thread, pid, tid);
    if (r <= 0)
        return r;
    unsigned long long weight = 1;
    if (plan->header & H_WEIGHT_PERIOD) {
        weight = plan->period >= 0 ? u64_at(body, plan->period) : plan->default_period;
        if (weight == 0)
            weight = 1;     /* (sample.period or 1) */
    }
    PyObject *key = PyBytes_FromStringAndSize(f->data, (Py_ssize_t)f->len);
    if (key == NULL)
        return -1;
    r = add_to_count(self->counts, key, weight, "a tree count is not the core's");
    if (r == 0)
        r = new_count(self->counts, key, Py_BuildValue("[KinO]", weight, 1, ordinal, attr));
    Py_DECREF(key);
    return r;
}

/* H_IP_LEAF: a body of exactly the schema's fixed size (plan->after, every
 * field of fixed size), its ip and the fields read within it */
static int ip_leaf_fits(const Plan *plan, Py_ssize_t len) {
    return len == plan->after && plan->callchain >= 0 && plan->callchain <= len - 8 &&
        plan->pid >= 0 && plan->pid <= len - 4 && plan->tid >= 0 && plan->tid <= len - 4 &&
        (plan->time < 0 || plan->time <= len - 8) && (plan->cpu < 0 || plan->cpu <= len - 4) &&
        (plan->period < 0 || plan->period <= len - 8);
}

/* The record of a sample the core reads: the Record object where the
 * stream made one, else made (by `make`) at the first need of one: an
 * answer(NEED_FRAME) reads it, and a sample handed back goes out as it. */
typedef struct SampleRef {
    PyObject *record;                           /* owned, or NULL */
    PyObject *(*make)(struct SampleRef *);      /* a new Record, or NULL (error) */
    void *walk;                                 /* what make reads */
    const void *entry;
} SampleRef;

/* the record (borrowed: the ref keeps it), or NULL with an error */
static PyObject *sample_record(SampleRef *ref) {
    if (ref->record == NULL && ref->make != NULL)
        ref->record = ref->make(ref);
    if (ref->record == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "a sample without its record");
    return ref->record;
}

static PyObject *SampleText_take(SampleText *self, PyObject *unused);

/* The core's walk of one SAMPLE: 1 where it made the sample's text (kept
 * until take()) or its count, 0 where the Python path is to decode,
 * symbolize and format it, -1 on an error.  attr is the sample's event
 * (None: hand back), body[0:len] its body, misc its header's.  What the
 * core lacks it asks the driver's answer() for, then goes on:
 *   answer(NEED_PLAN, attr)
 *   answer(NEED_BINARY, group, index of the map, the Map)
 *   answer(NEED_FRAME, record, thread, address, kernel context,
 *          is a return address, space, key)
 * The body is read within its length only: the callchain's nr is taken
 * only where nr entries and the fields after them fit. */
/* A Record's misc and body (its buffer held in *body, for the caller to
 * release): 0, or -1 on an error (nothing held).  The SAMPLE consumers'
 * one reading of a Record. */
static int record_misc_body(PyObject *record, long *misc, Py_buffer *body) {
    PyObject *misc_obj = PyObject_GetAttr(record, s_misc);
    if (misc_obj == NULL)
        return -1;
    long m = PyLong_AsLong(misc_obj);
    Py_DECREF(misc_obj);
    if (m == -1 && PyErr_Occurred())
        return -1;
    PyObject *body_obj = PyObject_GetAttr(record, s_body);
    if (body_obj == NULL)
        return -1;
    int rc = PyObject_GetBuffer(body_obj, body, PyBUF_SIMPLE);   /* (holds body_obj) */
    Py_DECREF(body_obj);
    if (rc < 0)
        return -1;
    *misc = m;
    return 0;
}

static int consume_record(SampleText *core, PyObject *record, Py_ssize_t ordinal);

/* the core's maps of group (a MapGroup) at the group's generation, read
 * again where it changed; NULL with an error */
static Space *current_space(SampleText *self, PyObject *group) {
    int ok = 1;
    long long generation = int_attr(group, s_generation, &ok);
    if (!ok)
        return NULL;
    Space *space = space_of(self, group);
    if (space != NULL && space->generation == generation)
        return space;
    return load_space(self, group, generation);
}

/* Machine.thread(pid, tid) (a new reference, or NULL): its first answer,
 * the known thread of the tid where its pid is the sample's, read from the
 * machine's threads here (83,000 calls of it on a recording of 20,000
 * processes), else the call */
static PyObject *sample_thread(SampleText *self, long long pid, long long tid) {
    if (self->threads != NULL) {
        PyObject *key = PyLong_FromLongLong(tid);
        if (key == NULL)
            return NULL;
        PyObject *th = PyDict_GetItemWithError(self->threads, key);
        Py_DECREF(key);
        if (th == NULL && PyErr_Occurred())
            return NULL;
        if (th != NULL) {
            PyObject *known = PyObject_GetAttr(th, s_pid);
            if (known == NULL)
                return NULL;
            int same = PyLong_CheckExact(known) && PyLong_AsLongLong(known) == pid;
            Py_DECREF(known);
            if (PyErr_Occurred())
                PyErr_Clear();      /* (a pid past long long: not the sample's) */
            else if (same)
                return Py_NewRef(th);
        }
    }
    return PyObject_CallFunction(self->thread_of, "LL", pid, tid);
}

static int consume_sample(SampleText *self, PyObject *attr, const unsigned char *p,
                          Py_ssize_t len, long misc, Py_ssize_t ordinal, SampleRef *ref) {
    int result = -1;
    PyObject *thread = NULL, *process = NULL, *group = NULL;
    int have_plan = 0;
    Plan plan;
    Buffer *line = &self->line;
    line->len = 0;

    if (attr == Py_None)
        goto hand_back;
    PyObject *at = PyDict_GetItemWithError(self->plan_index, attr);
    if (at == NULL) {
        if (PyErr_Occurred() || ask(self, Py_BuildValue("(iO)", NEED_PLAN, attr)) < 0)
            goto done;
        at = PyDict_GetItemWithError(self->plan_index, attr);
        if (at == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "answer(NEED_PLAN) set no plan");
            goto done;
        }
    }
    if (at == Py_None)
        goto hand_back;
    Py_ssize_t plan_at = PyLong_AsSsize_t(at);
    if (plan_at < 0 || plan_at >= self->nplans) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "a plan index out of range");
        goto done;
    }

    /* (a plan is copied, its texts held: an answer may replace it) */
    plan = self->plans[plan_at];
    Py_INCREF(plan.event_text);
    Py_XINCREF(plan.no_map_before);
    Py_XINCREF(plan.no_map_after);
    have_plan = 1;
    uint64_t nr;
    const unsigned char *ips;
    if (plan.header & H_IP_LEAF) {
        if (!ip_leaf_fits(&plan, len))
            goto hand_back;
        nr = 1;
        ips = p + plan.callchain;
    } else {
    /* every fixed field lies before the callchain; then nr, nr entries and
     * the schema's fixed fields after them must fit, as the decoder asks */
    if (plan.callchain > len - 8)
        goto hand_back;
    nr = u64_at(p, plan.callchain);
    Py_ssize_t room = len - plan.callchain - 8 - plan.after;
    if (room < 0 || nr > (uint64_t)room / 8)
        goto hand_back;
    if (plan.pid + 4 > plan.callchain || plan.tid + 4 > plan.callchain ||
        (plan.time >= 0 && plan.time + 8 > plan.callchain) ||
        (plan.cpu >= 0 && plan.cpu + 4 > plan.callchain) ||
        (plan.period >= 0 && plan.period + 8 > plan.callchain))
        goto hand_back;
    ips = p + plan.callchain + 8;
    }
    if (nr == 0)
        goto hand_back;           /* (no stack: the sample's own ip) */

    long cpumode = misc & 7;      /* MISC_CPUMODE_MASK */

    long long pid = pid_t_of(u32_at(p, plan.pid)), tid = pid_t_of(u32_at(p, plan.tid));
    thread = sample_thread(self, pid, tid);
    if (thread == NULL)
        goto done;
    process = PyObject_GetAttr(thread, s_process);
    if (process == NULL)
        goto done;
    group = PyObject_GetAttr(process, s_maps);
    if (group == NULL)
        goto done;
    if (check_kernel(self) < 0)
        goto done;

    int folded = (plan.header & H_FOLDED) != 0;
    if (folded && self->counts == NULL)
        goto hand_back;
    self->nentries = 0;
    if (!folded) {
        int h = add_header(line, &plan, thread, p, pid, tid);
        if (h < 0)
            goto no_memory;
        if (h == 0)
            goto hand_back;
        if (buf_add(line, "\n", 1) < 0)
            goto no_memory;
    }

    /* FrameResolver._frames_for_callchain */
    int kernel = cpumode == 1 || cpumode == 3 || cpumode == 4;   /* KERNEL_MODES */
    int first = 1;
    long depth = 0;
    /* the thread's address space at its generation (looked up again after
     * any answer: an answer may set maps) */
    Space *space = NULL, *kspace = NULL;   /* (kspace: the kernel's maps) */
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t ip = u64_at(ips, (Py_ssize_t)(8 * i));
        if (ip >= self->context_max && (plan.header & H_IP_LEAF))
            goto hand_back;     /* (a sample's own ip is no context marker) */
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
        size_t entry_start = line->len;
        int64_t key_space;
        uint64_t key;
        int asked = 0;
    again:
        if (kernel) {
            /* a kernel map's frames are its binary's (ScriptCore._bind: the
             * kernel's symbols, printed with the map's name), keyed by the
             * address; an address in no kernel map is asked for as it is */
            key_space = SPACE_KERNEL;
            key = ip;
            if (kspace == NULL) {
                space = NULL;       /* (a space read may clear the others) */
                if ((kspace = current_space(self, self->kernel_maps)) == NULL)
                    goto done;
            }
            Py_ssize_t index = 0;
            const MapEntry *m = find_map(kspace, ip, &index);
            if (m != NULL && m->binary == BINARY_UNKNOWN) {
                if (asked++ > 2) {
                    PyErr_SetString(PyExc_RuntimeError, "answer(NEED_BINARY) bound nothing");
                    goto done;
                }
                int r = ask(self, Py_BuildValue("(iOnO)", NEED_BINARY, self->kernel_maps, index,
                                                PyList_GET_ITEM(kspace->objects, index)));
                space = kspace = NULL;
                if (r < 0)
                    goto done;
                goto again;
            }
            if (m != NULL && m->binary >= FIRST_BINARY_SPACE)
                key_space = m->binary;
        } else {
            if (space == NULL) {
                kspace = NULL;      /* (a space read may clear the others) */
                if ((space = current_space(self, group)) == NULL)
                    goto done;
            }
            Py_ssize_t index = 0;
            const MapEntry *m = find_map(space, ip, &index);
            if (m == NULL && plan.no_map_before != NULL && ip < ((uint64_t)1 << 63)) {
                /* FrameResolver.frames_for_address's frame of an address in
                 * no map (one it does not look up in the kernel's maps) */
                if (buf_add(line, PyBytes_AS_STRING(plan.no_map_before),
                            (size_t)PyBytes_GET_SIZE(plan.no_map_before)) < 0 ||
                    (!folded && add_hex16(line, ip) < 0) ||
                    buf_add(line, PyBytes_AS_STRING(plan.no_map_after),
                            (size_t)PyBytes_GET_SIZE(plan.no_map_after)) < 0 ||
                    mark_entry(self, entry_start) < 0)
                    goto no_memory;
                first = 0;
                depth++;
                continue;
            }
            if (m == NULL) {
                key_space = SPACE_NO_MAP;
                key = ip;
            } else if (m->binary == BINARY_UNKNOWN) {
                if (asked++ > 2) {
                    PyErr_SetString(PyExc_RuntimeError, "answer(NEED_BINARY) bound nothing");
                    goto done;
                }
                int r = ask(self, Py_BuildValue("(iOnO)", NEED_BINARY, group, index,
                                                PyList_GET_ITEM(space->objects, index)));
                space = kspace = NULL;
                if (r < 0)
                    goto done;
                goto again;
            } else if (m->binary < 0) {
                goto hand_back;                 /* a JIT's map, or one to ask again */
            } else {
                key_space = m->binary;
                key = ip - m->start + m->pgoff;   /* Map.file_offset */
            }
        }
        uint32_t is_ret = !first;
        /* (the frames' lines are kept by field set too: an event's -F) */
        int64_t kept_as = key_space + ((int64_t)plan.format << 32);
        Frame *f = frames_find(&self->frames, kept_as, key, is_ret);
        if (f == NULL && key_space >= 2 && (plan.header & H_PLAIN_FRAMES) &&
            key_space < self->ntables && self->tables[key_space].set) {
            unsigned int tflags;
            Py_ssize_t index;
            uint64_t at;
            size_t mark = line->len;
            int r = table_frame(&self->tables[key_space], key, (int)is_ret,
                                (plan.header & H_REPORT) ? 2 : (plan.header & H_FOLDED) != 0,
                                line, &tflags, &index, &at);
            if (r == -1)
                goto no_memory;
            if (r == -2) {
                line->len = mark;
                if (asked++ > 4) {
                    PyErr_SetString(PyExc_RuntimeError, "answer(NEED_NAME) named nothing");
                    goto done;
                }
                int asked_ok = ask(self, Py_BuildValue("(innK)", NEED_NAME,
                                                       (Py_ssize_t)key_space, index,
                                                       (unsigned long long)at));
                space = kspace = NULL;
                if (asked_ok < 0)
                    goto done;
                goto again;
            }
            if (r == 1) {
                /* (kept as a frame: the next sample's is a look-up, not two
                 * searches of the table and a printf) */
                if (frames_put(&self->frames, kept_as, key, is_ret, tflags, line->data + mark,
                               (Py_ssize_t)(line->len - mark)) < 0 ||
                    mark_entry(self, entry_start) < 0)
                    goto no_memory;
                if ((plan.header & H_REPORT) && line->len > entry_start)
                    break;          /* (report's leaf) */
                int at_ip = first;
                first = 0;
                depth++;
                if (kernel) {
                    if (tflags & FRAME_INTERRUPT)
                        first = 1;
                } else if (!at_ip && (tflags & FRAME_BOTTOM))
                    break;
                continue;
            }
            line->len = mark;
        }
        if (f == NULL) {
            PyObject *record = sample_record(ref);
            if (record == NULL)
                goto done;
            int asked_ok = ask(self, Py_BuildValue("(iOOKiiLK)", NEED_FRAME, record, thread,
                                                   (unsigned long long)ip, kernel, (int)is_ret,
                                                   (long long)key_space,
                                                   (unsigned long long)key));
            space = kspace = NULL;
            if (asked_ok < 0)
                goto done;
            f = frames_find(&self->frames, kept_as, key, is_ret);
            if (f == NULL)
                goto hand_back;
        }
        if (f->flags & FRAME_CAREFUL)
            goto hand_back;
        if (buf_add(line, f->text, (size_t)f->len) < 0 || mark_entry(self, entry_start) < 0)
            goto no_memory;
        if ((plan.header & H_REPORT) && f->len > 0)
            break;                  /* (report's leaf: the walk need go no further) */
        int at_ip = first;
        first = 0;
        depth++;
        if (kernel) {
            if (f->flags & FRAME_INTERRUPT)
                first = 1;
        } else if (!at_ip && (f->flags & FRAME_BOTTOM))
            break;
    }
    if (folded) {
        int c = (plan.header & H_REPORT)
            ? count_report(self, &plan, plan_at, attr, thread, p, tid, cpumode, ordinal)
            : (plan.header & H_TREE)
            ? count_tree(self, &plan, attr, thread, p, pid, tid, ordinal)
            : count_folded(self, &plan, thread, p, pid, tid);
        if (c < 0)
            goto done;
        if (c == 0)
            goto hand_back;
        self->made++;
        result = 1;
        goto done;
    }
    if (buf_add(line, "\n", 1) < 0 || buf_add(&self->out, line->data, line->len) < 0 ||
        add_chunk(self, ordinal) < 0)
        goto no_memory;
    self->made++;
    result = 1;
    goto done;

no_memory:
    PyErr_NoMemory();
    goto done;
hand_back:
    self->handed_back++;
    result = 0;
done:
    if (have_plan) {
        Py_DECREF(plan.event_text);
        Py_XDECREF(plan.no_map_before);
        Py_XDECREF(plan.no_map_after);
    }
    Py_XDECREF(thread);
    Py_XDECREF(process);
    Py_XDECREF(group);
    return result;
}

/* consume(record, ordinal): True where the core made the text of the
 * SAMPLE record (kept until take()), False where the Python path is to
 * decode, symbolize and format it (consume_sample); the texts made so far
 * (take()) where they fill the core's buffer: they go out as they come, a
 * run's whole text is not kept. */
static PyObject *SampleText_consume(SampleText *self, PyObject *args) {
    PyObject *record;
    Py_ssize_t ordinal;
    if (!PyArg_ParseTuple(args, "On", &record, &ordinal))
        return NULL;
    int made = consume_record(self, record, ordinal);
    if (made < 0)
        return NULL;
    if (!made)
        return Py_NewRef(Py_False);
    return self->out.len >= OUT_KEPT ? SampleText_take(self, NULL) : Py_NewRef(Py_True);
}

static PyMethodDef SampleText_methods[] = {
    {"consume", (PyCFunction)SampleText_consume, METH_VARARGS,
     "consume(record, ordinal): True where the core made the sample's text"},
    {"take", (PyCFunction)SampleText_take, METH_NOARGS, "the texts made: [(ordinal, text)]"},
    {"set_table", (PyCFunction)SampleText_set_table, METH_VARARGS, "a binary's symbols"},
    {"drop_table", (PyCFunction)SampleText_drop_table, METH_O, "forget a binary's symbols"},
    {"set_name", (PyCFunction)SampleText_set_name, METH_VARARGS, "a symbol's name"},
    {"table_text", (PyCFunction)SampleText_table_text, METH_VARARGS, "a tabled frame's lines"},
    {"set_plan", (PyCFunction)SampleText_set_plan, METH_VARARGS, "an event's plan"},
    {"bind", (PyCFunction)SampleText_bind, METH_VARARGS, "the binary of a map"},
    {"add_frame", (PyCFunction)SampleText_add_frame, METH_VARARGS, "a frame's text"},
    {"counts", (PyCFunction)SampleText_counts, METH_NOARGS, "samples made, handed back"},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject SampleTextType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "perfdata.core._core.SampleText",
    .tp_basicsize = sizeof(SampleText),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "the perf script text of frame-pointer samples",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SampleText_init,
    .tp_dealloc = (destructor)SampleText_dealloc,
    .tp_methods = SampleText_methods,
};

/* ============================================ the leaf counter of annotate
 *
 * A LeafCounter counts the samples of `perfdata annotate` (perfdata/core/
 * annotate.py drives it) by their own ip alone, as perf annotate counts
 * them: per (event, binary, address) the samples and their period, with no
 * Python object made a sample.  It knows no map and no symbol: the driver
 * tells it, when the Python path first names an address of a process, the
 * extent of the map it fell in and a number for that map's binary
 * (add_range: a process's map of a binary file, or the kernel's), and
 * takes them back where a record changes the process's maps (forget) or
 * the kernel's (forget_all).  A sample whose event has no layout, whose
 * body is short, whose pid is past pid_t or whose ip is in no range told
 * is handed back: the Python path names and counts it.  The counts go out
 * at the end (entries), sorted by event, binary and address, for the
 * driver to name each binary's addresses once.
 *
 * The offsets it reads the ip, pid, tid and period at come from the
 * sample's construct schema (set_layout; perfdata/core/layout.py), and
 * every read is checked against the body's length. */

/* events with a layout (more: their samples go back to the Python path) */
#define LEAF_LAYOUTS 64

typedef struct {
    PyObject *attr;             /* the event (held), compared by identity */
    Py_ssize_t ip, pid, tid, period;    /* offsets in the body; period -1: none */
    Py_ssize_t callchain, size;         /* the body's shape (core/annotate.py LeafLayout) */
    unsigned long long default_period;  /* the attr's sample_period (no PERIOD) */
    int wanted;                 /* 0: the run annotates another event: dropped */
    unsigned long long samples, total;  /* counted here */
} LeafLayout;

typedef struct {
    uint64_t start, end;
    uint32_t binary;
} LeafRange;

typedef struct {
    long long pid;              /* -1: an empty slot */
    LeafRange *ranges;          /* sorted by start, not overlapping */
    Py_ssize_t n, cap;
} LeafRanges;

typedef struct {
    uint64_t space;             /* layout << 32 | binary; LEAF_EMPTY: an empty slot */
    uint64_t ip, hits, period;
} LeafCount;

#define LEAF_EMPTY UINT64_MAX

typedef struct {
    PyObject_HEAD
    LeafLayout layouts[LEAF_LAYOUTS];
    int nlayouts;
    unsigned long kernel_modes; /* bit (1 << cpumode) of each kernel cpumode */
    LeafRanges kernel;
    LeafRanges *pids;           /* by pid, open addressing; mask + 1 slots */
    size_t pid_mask, pid_used;
    LeafRanges *last;           /* the slot of the last sample's pid, or NULL */
    LeafCount *counts;
    size_t count_mask, count_used;
    Py_ssize_t made, handed_back;
} LeafCounter;

static int leaf_pids_init(LeafCounter *self, size_t nslots) {
    LeafRanges *slots = PyMem_Calloc(nslots, sizeof(LeafRanges));
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < nslots; i++)
        slots[i].pid = -1;
    self->pids = slots;
    self->pid_mask = nslots - 1;
    self->pid_used = 0;
    self->last = NULL;
    return 0;
}

static int leaf_counts_init(LeafCounter *self, size_t nslots) {
    LeafCount *slots = PyMem_Malloc(nslots * sizeof(LeafCount));
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < nslots; i++)
        slots[i].space = LEAF_EMPTY;
    self->counts = slots;
    self->count_mask = nslots - 1;
    self->count_used = 0;
    return 0;
}

static void leaf_free_tables(LeafCounter *self) {
    if (self->pids != NULL) {
        for (size_t i = 0; i <= self->pid_mask; i++)
            PyMem_Free(self->pids[i].ranges);
        PyMem_Free(self->pids);
        self->pids = NULL;
    }
    PyMem_Free(self->kernel.ranges);
    self->kernel.ranges = NULL;
    self->kernel.n = self->kernel.cap = 0;
    PyMem_Free(self->counts);
    self->counts = NULL;
    self->last = NULL;
    for (int i = 0; i < self->nlayouts; i++)
        Py_CLEAR(self->layouts[i].attr);
    self->nlayouts = 0;
}

/* LeafCounter(kernel_modes): kernel_modes the cpumodes whose ip is the
 * kernel's (resolve.frames.KERNEL_MODES), as bits 1 << cpumode */
static int LeafCounter_init(LeafCounter *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"kernel_modes", NULL};
    unsigned long kernel_modes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "k", kwlist, &kernel_modes))
        return -1;
    leaf_free_tables(self);
    self->kernel_modes = kernel_modes;
    self->kernel.pid = -1;
    self->made = self->handed_back = 0;
    if (leaf_pids_init(self, 256) < 0 || leaf_counts_init(self, 1 << 12) < 0) {
        leaf_free_tables(self);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void LeafCounter_dealloc(LeafCounter *self) {
    leaf_free_tables(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static size_t leaf_pid_hash(long long pid) {
    return (size_t)mix((uint64_t)pid, 1, 0);
}

/* the slot of pid (made where add is set: NULL only on no memory), or
 * NULL where it has none */
static LeafRanges *leaf_pid(LeafCounter *self, long long pid, int add) {
    size_t i = leaf_pid_hash(pid) & self->pid_mask;
    for (;;) {
        LeafRanges *r = &self->pids[i];
        if (r->pid == pid)
            return r;
        if (r->pid < 0)
            break;
        i = (i + 1) & self->pid_mask;
    }
    if (!add)
        return NULL;
    if (2 * (self->pid_used + 1) > self->pid_mask + 1) {
        LeafRanges *old = self->pids;
        size_t old_slots = self->pid_mask + 1;
        if (old_slots > ((size_t)PY_SSIZE_T_MAX) / (4 * sizeof(LeafRanges)) ||
            leaf_pids_init(self, old_slots * 2) < 0) {
            self->pids = old;
            return NULL;
        }
        for (size_t k = 0; k < old_slots; k++) {
            if (old[k].pid < 0)
                continue;
            size_t j = leaf_pid_hash(old[k].pid) & self->pid_mask;
            while (self->pids[j].pid >= 0)
                j = (j + 1) & self->pid_mask;
            self->pids[j] = old[k];
            self->pid_used++;
        }
        PyMem_Free(old);
    }
    i = leaf_pid_hash(pid) & self->pid_mask;
    while (self->pids[i].pid >= 0)
        i = (i + 1) & self->pid_mask;
    self->pids[i].pid = pid;
    self->pid_used++;
    return &self->pids[i];
}

/* the binary of the range holding ip, or -1 */
static long long leaf_find(const LeafRanges *r, uint64_t ip) {
    Py_ssize_t lo = 0, hi = r->n;      /* the first range starting after ip */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (r->ranges[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && ip < r->ranges[lo - 1].end)
        return r->ranges[lo - 1].binary;
    return -1;
}

/* period added to the count of (space, ip): 0, -1 no memory, 1 a sum
 * past u64 (nothing added: the Python path counts that sample) */
static int leaf_add(LeafCounter *self, uint64_t space, uint64_t ip, uint64_t period) {
    size_t i = (size_t)mix(space, ip, 2) & self->count_mask;
    for (;;) {
        LeafCount *c = &self->counts[i];
        if (c->space == space && c->ip == ip) {
            if (c->period + period < period)
                return 1;
            c->hits++;
            c->period += period;
            return 0;
        }
        if (c->space == LEAF_EMPTY)
            break;
        i = (i + 1) & self->count_mask;
    }
    if (2 * (self->count_used + 1) > self->count_mask + 1) {
        LeafCount *old = self->counts;
        size_t old_slots = self->count_mask + 1;
        if (old_slots > ((size_t)PY_SSIZE_T_MAX) / (4 * sizeof(LeafCount)) ||
            leaf_counts_init(self, old_slots * 2) < 0) {
            self->counts = old;
            return -1;
        }
        for (size_t k = 0; k < old_slots; k++) {
            if (old[k].space == LEAF_EMPTY)
                continue;
            size_t j = (size_t)mix(old[k].space, old[k].ip, 2) & self->count_mask;
            while (self->counts[j].space != LEAF_EMPTY)
                j = (j + 1) & self->count_mask;
            self->counts[j] = old[k];
            self->count_used++;
        }
        PyMem_Free(old);
        i = (size_t)mix(space, ip, 2) & self->count_mask;
        while (self->counts[i].space != LEAF_EMPTY)
            i = (i + 1) & self->count_mask;
    }
    LeafCount *c = &self->counts[i];
    c->space = space;
    c->ip = ip;
    c->hits = 1;
    c->period = period;
    self->count_used++;
    return 0;
}

/* Whether body[0:len] has the layout's shape (core/annotate.py body_fits):
 * the size of its fields but the callchain's entries, plus 8 bytes an entry
 * where it has a callchain; a body the decoder would refuse goes back */
static int leaf_fits(const LeafLayout *l, const unsigned char *p, Py_ssize_t len) {
    if (l->callchain < 0)
        return len == l->size;
    if (l->callchain > len - 8 || len < l->size)
        return 0;
    uint64_t nr = u64_at(p, l->callchain);
    return nr <= (uint64_t)(len - l->size) / 8 && (Py_ssize_t)(nr * 8) == len - l->size;
}

/* One SAMPLE: 1 counted (or of an event not annotated: dropped), 0 the
 * Python path's, -1 error.  body[0:len] is read within its length only. */
static int leaf_consume(LeafCounter *self, PyObject *attr, const unsigned char *p,
                        Py_ssize_t len, long misc) {
    int at = 0;
    while (at < self->nlayouts && self->layouts[at].attr != attr)
        at++;
    if (at == self->nlayouts)
        goto hand_back;
    LeafLayout *l = &self->layouts[at];
    if (!l->wanted)
        return 1;
    if (len < 8 || l->ip > len - 8 || l->pid > len - 4 || l->tid > len - 4 ||
        (l->period >= 0 && l->period > len - 8) || !leaf_fits(l, p, len))
        goto hand_back;
    uint64_t ip = u64_at(p, l->ip);
    uint32_t pid = u32_at(p, l->pid);
    if (pid > 0x7FFFFFFFu)
        goto hand_back;
    const LeafRanges *ranges;
    if ((self->kernel_modes >> (misc & 7)) & 1) {
        ranges = &self->kernel;
    } else {
        if (self->last == NULL || self->last->pid != (long long)pid)
            self->last = leaf_pid(self, pid, 0);
        ranges = self->last;
        if (ranges == NULL)
            goto hand_back;
    }
    long long binary = leaf_find(ranges, ip);
    if (binary < 0)
        goto hand_back;
    uint64_t period = l->period >= 0 ? u64_at(p, l->period) : l->default_period;
    if (period == 0)
        period = 1;             /* (sample.period or 1) */
    if (l->total + period < period)
        goto hand_back;
    int r = leaf_add(self, ((uint64_t)at << 32) | (uint64_t)binary, ip, period);
    if (r < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (r > 0)
        goto hand_back;
    l->samples++;
    l->total += period;
    self->made++;
    return 1;
hand_back:
    self->handed_back++;
    return 0;
}

/* set_layout(attr, ip, pid, tid, period, callchain, size, default_period,
 * wanted): where the event's sample body holds the ip (u64), pid and tid
 * (u32) and period (u64; -1: none, default_period counts), and its shape
 * (callchain: the offset of its nr, -1: none; size: every field's but the
 * callchain's entries), from the sample's schema; wanted false: the run
 * annotates another event (its samples are dropped) */
static PyObject *LeafCounter_set_layout(LeafCounter *self, PyObject *args) {
    PyObject *attr;
    Py_ssize_t ip, pid, tid, period, callchain, size;
    unsigned long long default_period;
    int wanted;
    if (!PyArg_ParseTuple(args, "OnnnnnnKp", &attr, &ip, &pid, &tid, &period, &callchain,
                          &size, &default_period, &wanted))
        return NULL;
    if (ip < 0 || pid < 0 || tid < 0 || period < -1 || callchain < -1 || size < 0 ||
        ip > 65536 || pid > 65536 || tid > 65536 || period > 65536 || callchain > 65536 ||
        size > 65536) {
        PyErr_SetString(PyExc_ValueError, "set_layout: offsets out of range");
        return NULL;
    }
    int at = 0;
    while (at < self->nlayouts && self->layouts[at].attr != attr)
        at++;
    if (at == LEAF_LAYOUTS)
        Py_RETURN_NONE;         /* (its samples go back to the Python path) */
    LeafLayout *l = &self->layouts[at];
    if (at == self->nlayouts) {
        memset(l, 0, sizeof *l);
        l->attr = Py_NewRef(attr);
        self->nlayouts++;
    }
    l->ip = ip;
    l->pid = pid;
    l->tid = tid;
    l->period = period;
    l->callchain = callchain;
    l->size = size;
    l->default_period = default_period;
    l->wanted = wanted;
    Py_RETURN_NONE;
}

/* add_range(pid, start, end, binary): the addresses [start, end) of the
 * process (pid -1: of the kernel) are in the binary numbered `binary`
 * (< 2**32), the address its count is kept by; a range overlapping one
 * told before is refused (ValueError) */
static PyObject *LeafCounter_add_range(LeafCounter *self, PyObject *args) {
    long long pid;
    unsigned long long start, end, binary;
    if (!PyArg_ParseTuple(args, "LKKK", &pid, &start, &end, &binary))
        return NULL;
    if (pid < -1 || pid > 0x7FFFFFFF || start >= end || binary >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "add_range: a pid, a range and a binary number");
        return NULL;
    }
    LeafRanges *r = pid < 0 ? &self->kernel : leaf_pid(self, pid, 1);
    if (r == NULL)
        return PyErr_NoMemory();
    Py_ssize_t lo = 0, hi = r->n;      /* the first range starting after start */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (r->ranges[mid].start <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    if ((lo > 0 && r->ranges[lo - 1].end > start) || (lo < r->n && r->ranges[lo].start < end)) {
        PyErr_SetString(PyExc_ValueError, "add_range: overlaps a range told before");
        return NULL;
    }
    if (r->n == r->cap) {
        Py_ssize_t cap = r->cap ? 2 * r->cap : 8;
        if ((size_t)cap > ((size_t)PY_SSIZE_T_MAX) / sizeof(LeafRange))
            return PyErr_NoMemory();
        LeafRange *ranges = PyMem_Realloc(r->ranges, (size_t)cap * sizeof(LeafRange));
        if (ranges == NULL)
            return PyErr_NoMemory();
        r->ranges = ranges;
        r->cap = cap;
    }
    memmove(r->ranges + lo + 1, r->ranges + lo, (size_t)(r->n - lo) * sizeof(LeafRange));
    r->ranges[lo].start = start;
    r->ranges[lo].end = end;
    r->ranges[lo].binary = (uint32_t)binary;
    r->n++;
    Py_RETURN_NONE;
}

/* forget(pid): the process's maps changed: its ranges are taken back */
static PyObject *LeafCounter_forget(LeafCounter *self, PyObject *arg) {
    long long pid = PyLong_AsLongLong(arg);
    if (pid == -1 && PyErr_Occurred())
        return NULL;
    LeafRanges *r = pid >= 0 ? leaf_pid(self, pid, 0) : NULL;
    if (r != NULL)
        r->n = 0;
    Py_RETURN_NONE;
}

/* forget_all(): the kernel's maps changed, or a record of no one process:
 * every range is taken back */
static PyObject *LeafCounter_forget_all(LeafCounter *self, PyObject *unused) {
    for (size_t i = 0; i <= self->pid_mask; i++)
        self->pids[i].n = 0;
    self->kernel.n = 0;
    Py_RETURN_NONE;
}

/* a Record's SAMPLE: 1 counted, 0 the Python path's, -1 error */
static int leaf_consume_record(LeafCounter *self, PyObject *record) {
    PyObject *attr = PyObject_GetAttr(record, s_attr);
    if (attr == NULL)
        return -1;
    int made = -1;
    Py_buffer body;
    long misc;
    if (record_misc_body(record, &misc, &body) == 0) {
        made = leaf_consume(self, attr, body.buf, body.len, misc);
        PyBuffer_Release(&body);
    }
    Py_DECREF(attr);
    return made;
}

/* consume(record): True where the SAMPLE record is counted here (or
 * dropped: another event's), False where the Python path is to name it */
static PyObject *LeafCounter_consume(LeafCounter *self, PyObject *record) {
    int made = leaf_consume_record(self, record);
    if (made < 0)
        return NULL;
    return PyBool_FromLong(made);
}

static int leaf_order(const void *a, const void *b) {
    const LeafCount *x = a, *y = b;
    if (x->space != y->space)
        return x->space < y->space ? -1 : 1;
    return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* entries(): the counts as bytes of u64 quadruples (layout << 32 | binary,
 * address, samples, period), sorted */
static PyObject *LeafCounter_entries(LeafCounter *self, PyObject *unused) {
    size_t n = self->count_used;
    LeafCount *out = PyMem_Malloc((n ? n : 1) * sizeof(LeafCount));
    if (out == NULL)
        return PyErr_NoMemory();
    size_t k = 0;
    for (size_t i = 0; i <= self->count_mask && k < n; i++)
        if (self->counts[i].space != LEAF_EMPTY)
            out[k++] = self->counts[i];
    qsort(out, k, sizeof(LeafCount), leaf_order);
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)out,
                                                (Py_ssize_t)(k * sizeof(LeafCount)));
    PyMem_Free(out);
    return bytes;
}

/* totals(): [(attr, samples, period)] counted here, by layout index */
static PyObject *LeafCounter_totals(LeafCounter *self, PyObject *unused) {
    PyObject *out = PyList_New(self->nlayouts);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < self->nlayouts; i++) {
        LeafLayout *l = &self->layouts[i];
        PyObject *item = Py_BuildValue("(OKK)", l->attr, l->samples, l->total);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *LeafCounter_counts(LeafCounter *self, PyObject *unused) {
    return Py_BuildValue("{snsnsn}", "made", self->made, "handed_back", self->handed_back,
                         "addresses", (Py_ssize_t)self->count_used);
}

static PyMethodDef LeafCounter_methods[] = {
    {"set_layout", (PyCFunction)LeafCounter_set_layout, METH_VARARGS,
     "where an event's samples hold ip, pid, tid, period"},
    {"add_range", (PyCFunction)LeafCounter_add_range, METH_VARARGS,
     "a process's (or the kernel's) addresses of one binary"},
    {"forget", (PyCFunction)LeafCounter_forget, METH_O, "a process's ranges taken back"},
    {"forget_all", (PyCFunction)LeafCounter_forget_all, METH_NOARGS, "every range taken back"},
    {"consume", (PyCFunction)LeafCounter_consume, METH_O,
     "consume(record): True where the sample is counted here"},
    {"entries", (PyCFunction)LeafCounter_entries, METH_NOARGS,
     "the counts: (layout << 32 | binary, address, samples, period) u64s"},
    {"totals", (PyCFunction)LeafCounter_totals, METH_NOARGS,
     "[(attr, samples, period)] counted"},
    {"counts", (PyCFunction)LeafCounter_counts, METH_NOARGS, "samples made, handed back"},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject LeafCounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "perfdata.core._core.LeafCounter",
    .tp_basicsize = sizeof(LeafCounter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "the samples of perfdata annotate, counted by their own ip",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)LeafCounter_init,
    .tp_dealloc = (destructor)LeafCounter_dealloc,
    .tp_methods = LeafCounter_methods,
};

/* ================================================ the record walk of script
 *
 * A RecordWalk walks the data section of a perf.data file for the session
 * stream (perfdata/core/walk.py drives it): it frames the records of the
 * file's bytes itself (_framing.h: the Python walker's fast-lane rules),
 * puts them in perf's delivery order (perfdata.format.ordering.OrderedQueue,
 * step for step: records of a round queued and released at each
 * FINISHED_ROUND up to the previous round's highest time, records without a
 * time and perf's own records on arrival), hands each SAMPLE to the
 * SampleText it serves (consume_sample) without making a Python object of
 * it, and hands everything else the stream does something with (side
 * records, samples the core leaves, records it cannot frame) back to Python
 * in that order, as Record objects.  At a record its rules leave to the
 * Python walker it stops (next() returns HANDBACK); the driver walks on in
 * Python and gives it the records that walker makes (push), which it orders
 * and delivers the same way, then lets it frame again (set_rules).
 *
 * The bytes of a record framed here are copied, while it waits for its
 * turn, into an arena that holds the records of a round (as the Python
 * queue holds one round of Record objects): nothing is allocated by a count
 * read from the file, and no read goes outside the block read from it. */
#include <unistd.h>
#include "_framing.h"

/* bytes read from the file at once (a record is at most 64 KiB) */
#define WALK_BLOCK (1 << 20)
/* next() at a record the Python walker is to take */
#define WALK_HANDBACK 1

typedef struct {
    uint64_t time, seq;       /* its time; its place in arrival order */
    uint64_t offset;          /* its file offset */
    size_t at;                /* where its bytes (header first) are in the arena */
    PyObject *record;         /* the Record the Python walker made (owned), or NULL */
    uint32_t rtype;
    int32_t attr;             /* its event's index in attrs, -1: none */
    int keep;                 /* 0: queued for the order only (no one reads it) */
    int has_time;
} Entry;

typedef struct {
    Entry *items;
    size_t n, cap;
} Entries;

/* The fields Machine.apply reads of a side record (set_apply): where each
 * is in the body (the construct schema's offsets, perfdata/core/walk.py),
 * and the record's forms the C leaves to the Python decoder. */
#define SIDE_FIELDS 16
typedef struct {
    int n;
    PyObject *names[SIDE_FIELDS];   /* the schema's field names (interned str) */
    int64_t offset[SIDE_FIELDS];
    int width[SIDE_FIELDS];         /* 4, 8, or 0: a NUL-terminated UTF-8 name */
    long misc_mask;                 /* header misc bits of another form (MMAP2's build-id) */
    int64_t guard_at;               /* a byte where '/' or '[' means another form, or -1 */
    PyObject *call;                 /* call(misc, time, *fields), or NULL: apply(dict) */
} SideLayout;

static void side_free(SideLayout *l) {
    if (l == NULL)
        return;
    for (int i = 0; i < l->n; i++)
        Py_XDECREF(l->names[i]);
    Py_XDECREF(l->call);
    PyMem_Free(l);
}

typedef struct {
    PyObject_HEAD
    SampleText *core;         /* the samples' text or counts, or NULL: */
    LeafCounter *leaves;      /* ... their leaves counted (annotate), or NULL */
    PyObject *make;           /* make(rtype, misc, size, offset, body, attr, time): a Record */
    PyObject *attrs;          /* the events (a tuple), by index */
    int64_t params[P_COUNT];
    int64_t tables[T_COUNT];
    FrameRules rules;
    uint64_t *ids;            /* the events' ids, sorted, and each one's event */
    int64_t *id_attrs;
    size_t nids;
    int64_t *time_at;         /* by event: offset of time in a SAMPLE body, -1: none */
    int64_t *time_back;       /* by event: time's distance from a side record's end, -1 */
    uint8_t deliver[NTYPES];  /* the types the stream reads (besides SAMPLE) */
    int fd;
    uint64_t at;              /* file offset of the next record to frame */
    uint8_t *block;           /* the file's bytes [block_off, block_off + block_len) */
    size_t block_len;
    size_t block_cap;         /* (allocated to the size of the read: a sanitizer sees past it) */
    uint64_t block_off;
    FrameState fs;
    Buffer arena;
    size_t arena_kept;        /* the arena's length after it was last compacted */
    Entries queue;            /* the round's timed records, in arrival order until sorted */
    int sorted;
    uint64_t last_time;
    uint64_t next_flush, max_timestamp, last_flush, out_of_order;
    Entries ready;            /* records in delivery order, from ready_head on */
    size_t ready_head;
    uint64_t seq;
    Py_ssize_t ordinal;       /* SAMPLE records delivered */
    Py_ssize_t seen;          /* ... before the item next() returned last */
    int framing;              /* the C frames at `at` (set_rules); 0: the Python walker's turn */
    int finished;             /* the data's end: every record released */
    PyObject *apply;          /* Machine.apply, for the side records it applies here, or NULL */
    SideLayout *sides[NTYPES];  /* by type: the fields apply reads, or NULL */
    /* A worker's part of a sharded run (set_shard): the SAMPLEs of the
     * blocks of shard_block samples that taken(k) says are its; the others
     * are counted and dropped here.  shard_block 0: every sample. */
    Py_ssize_t shard_block;
    PyObject *shard_taken;
    Py_ssize_t shard_current; /* the block last asked about (-1: none) */
    int shard_is_taken;       /* ... and the answer */
} RecordWalk;

static int entries_add(Entries *q, const Entry *e) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 256;
        if (cap > ((size_t)PY_SSIZE_T_MAX) / sizeof(Entry))
            return -1;
        Entry *items = PyMem_Realloc(q->items, cap * sizeof(Entry));
        if (items == NULL)
            return -1;
        q->items = items;
        q->cap = cap;
    }
    q->items[q->n++] = *e;
    return 0;
}

static void entries_clear(Entries *q, size_t from) {
    for (size_t i = from; i < q->n; i++)
        Py_CLEAR(q->items[i].record);
    q->n = 0;
}

static int entry_order(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* OrderedQueue._release: the queued records up to limit (all where
 * has_limit is 0), in time order (equal times in arrival order), to ready */
static int walk_release(RecordWalk *w, int has_limit, uint64_t limit) {
    Entries *q = &w->queue;
    if (!w->sorted) {
        qsort(q->items, q->n, sizeof(Entry), entry_order);
        w->sorted = 1;
        w->last_time = q->items[q->n - 1].time;
    }
    size_t cut = q->n;
    if (has_limit) {
        size_t lo = 0, hi = q->n;     /* bisect_right */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (limit < q->items[mid].time)
                hi = mid;
            else
                lo = mid + 1;
        }
        cut = lo;
    }
    if (cut == 0)
        return 0;
    w->last_flush = q->items[cut - 1].time;
    for (size_t i = 0; i < cut; i++) {
        if (q->items[i].keep) {
            if (entries_add(&w->ready, &q->items[i]) < 0) {
                /* (the rest stay the queue's, to be freed with it) */
                memmove(q->items, q->items + i, (q->n - i) * sizeof(Entry));
                q->n -= i;
                return -1;
            }
        } else {
            Py_CLEAR(q->items[i].record);
        }
    }
    memmove(q->items, q->items + cut, (q->n - cut) * sizeof(Entry));
    q->n -= cut;
    return 0;
}

/* A record arrives (PerfFile.records' time order): perf's own records and
 * untimed ones go out now, FINISHED_ROUND releasing a round; the others
 * queue (OrderedQueue.push).  The entry's record is the walk's after. */
static int walk_place(RecordWalk *w, Entry *e) {
    const int64_t *prm = w->params;
    if ((int64_t)e->rtype >= prm[P_USER_TYPE_START] || !e->has_time || e->time == 0 ||
        e->time == UINT64_MAX) {
        if (e->keep) {
            if (entries_add(&w->ready, e) < 0) {
                Py_CLEAR(e->record);
                return -1;
            }
        } else {
            Py_CLEAR(e->record);
        }
        if ((int64_t)e->rtype == prm[P_FINISHED_ROUND]) {
            if (walk_release(w, 1, w->next_flush) < 0)
                return -1;
            w->next_flush = w->max_timestamp;
        }
        return 0;
    }
    Entries *q = &w->queue;
    if (e->time < w->last_flush)
        w->out_of_order++;
    if (e->time >= w->max_timestamp || q->n == 0)
        w->max_timestamp = e->time;
    if (q->n && e->time < w->last_time)
        w->sorted = 0;
    w->last_time = e->time;
    if (entries_add(q, e) < 0) {
        Py_CLEAR(e->record);
        return -1;
    }
    return 0;
}

/* The Record of a record framed here (as ctx.make_record makes it) */
static PyObject *walk_record(RecordWalk *w, const Entry *e) {
    const size_t hsize = w->rules.hsize;
    const uint8_t *p = (const uint8_t *)w->arena.data + e->at;
    Block b = {p, hsize, (w->params[P_LITTLE] != 0) != PY_LITTLE_ENDIAN};
    const size_t size = rd16(&b, w->rules.size_off);
    const unsigned misc = rd16(&b, w->rules.misc_off);
    PyObject *attr = e->attr >= 0 ? PyTuple_GET_ITEM(w->attrs, e->attr) : Py_None;
    PyObject *time = e->has_time ? PyLong_FromUnsignedLongLong(e->time) : Py_NewRef(Py_None);
    if (time == NULL)
        return NULL;
    PyObject *rec = PyObject_CallFunction(w->make, "IIKKy#ON", (unsigned)e->rtype, misc,
                                          (unsigned long long)size,
                                          (unsigned long long)e->offset,
                                          (const char *)p + hsize, (Py_ssize_t)(size - hsize),
                                          attr, time);
    return rec;
}

static PyObject *walk_make_ref(SampleRef *ref) {
    return walk_record((RecordWalk *)ref->walk, (const Entry *)ref->entry);
}

/* a Record's SAMPLE consumed (the stream's records that the Python walker
 * made): 1 made, 0 handed back, -1 error */
static int consume_record(SampleText *core, PyObject *record, Py_ssize_t ordinal) {
    PyObject *attr = PyObject_GetAttr(record, s_attr);
    if (attr == NULL)
        return -1;
    if (attr == Py_None) {
        Py_DECREF(attr);
        core->handed_back++;
        return 0;
    }
    int made = -1;
    Py_buffer body;
    long misc;
    if (record_misc_body(record, &misc, &body) == 0) {
        SampleRef ref = {Py_NewRef(record), NULL, NULL, NULL};
        made = consume_sample(core, attr, body.buf, body.len, misc, ordinal, &ref);
        Py_DECREF(ref.record);
        PyBuffer_Release(&body);
    }
    Py_DECREF(attr);
    return made;
}

/* A side record the stream would only apply to the machine (its type not
 * shown, nothing told of it), applied here as the stream does
 * (machine.apply(type, fields, misc, time or 0)) with the fields apply
 * reads, decoded as the schema's decoder does: 1 applied, 0 a form or bytes
 * the Python decoder is to take (the stream gets the Record), -1 error. */
static int walk_apply(RecordWalk *w, const Entry *e) {
    const SideLayout *l = w->sides[e->rtype];
    const size_t hsize = w->rules.hsize;
    const uint8_t *p = (const uint8_t *)w->arena.data + e->at;
    Block head = {p, hsize, (w->params[P_LITTLE] != 0) != PY_LITTLE_ENDIAN};
    const size_t size = rd16(&head, w->rules.size_off);
    const long misc = rd16(&head, w->rules.misc_off);
    if (misc & l->misc_mask || size < hsize || size - hsize < w->rules.trailer)
        return 0;
    /* (the body without its sample_id trailer, as the decoder reads it) */
    Block b = {p + hsize, size - hsize - w->rules.trailer, head.swap};
    if (l->guard_at >= 0 && fits(&b, (size_t)l->guard_at, 1) &&
        (b.p[l->guard_at] == '/' || b.p[l->guard_at] == '['))
        return 0;
    /* args: misc, the time, the fields in the schema's order */
    PyObject *args[2 + SIDE_FIELDS];
    int nargs = 0, result = -1;
    if ((args[nargs++] = PyLong_FromLong(misc)) == NULL)
        goto done;
    if ((args[nargs++] = PyLong_FromUnsignedLongLong(e->has_time ? e->time : 0)) == NULL)
        goto done;
    for (int i = 0; i < l->n; i++) {
        const size_t off = (size_t)l->offset[i];
        PyObject *v;
        if (l->width[i] == 0) {
            const uint8_t *nul = off < b.n ? memchr(b.p + off, 0, b.n - off) : NULL;
            if (nul == NULL) {
                result = 0;
                goto done;
            }
            v = PyUnicode_DecodeUTF8((const char *)b.p + off, nul - (b.p + off), "strict");
            if (v == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                result = 0;
                goto done;
            }
        } else if (!fits(&b, off, (size_t)l->width[i])) {
            result = 0;
            goto done;
        } else {
            v = l->width[i] == 4 ? PyLong_FromUnsignedLong(rd32(&b, off))
                                 : PyLong_FromUnsignedLongLong(rd64(&b, off));
        }
        if (v == NULL)
            goto done;
        args[nargs++] = v;
    }
    PyObject *r;
    if (l->call != NULL) {
        r = PyObject_Vectorcall(l->call, args, (size_t)nargs, NULL);
    } else {
        PyObject *fields = PyDict_New();
        if (fields == NULL)
            goto done;
        for (int i = 0; i < l->n; i++)
            if (PyDict_SetItem(fields, l->names[i], args[2 + i]) < 0) {
                Py_DECREF(fields);
                goto done;
            }
        r = PyObject_CallFunction(w->apply, "INOO", (unsigned)e->rtype, fields, args[0],
                                  args[1]);
    }
    if (r == NULL)
        goto done;
    Py_DECREF(r);
    result = 1;
done:
    for (int i = 0; i < nargs; i++)
        Py_DECREF(args[i]);
    return result;
}

/* Whether block k of a sharded run is this worker's (set_shard): taken(k)
 * asked once a block, in order; 1, 0, or -1 with an error set */
static int walk_shard_takes(RecordWalk *w, Py_ssize_t k) {
    if (k != w->shard_current) {
        PyObject *got = PyObject_CallFunction(w->shard_taken, "n", k);
        if (got == NULL)
            return -1;
        int taken = PyObject_IsTrue(got);
        Py_DECREF(got);
        if (taken < 0)
            return -1;
        w->shard_current = k;
        w->shard_is_taken = taken;
    }
    return w->shard_is_taken;
}

/* The next record of ready the stream is to have (a new reference), the
 * texts made so far where they fill the core's buffer, or NULL: ready is
 * empty (no error set) or an error. */
static PyObject *walk_deliver(RecordWalk *w) {
    Entries *r = &w->ready;
    while (w->ready_head < r->n) {
        Entry e = r->items[w->ready_head];
        r->items[w->ready_head++].record = NULL;     /* (e's now) */
        if ((int64_t)e.rtype != w->params[P_SAMPLE]) {
            w->seen = w->ordinal;
            if (e.record == NULL && e.rtype < NTYPES && w->sides[e.rtype] != NULL) {
                int applied = walk_apply(w, &e);
                if (applied < 0)
                    return NULL;
                if (applied)
                    continue;
            }
            return e.record != NULL ? e.record : walk_record(w, &e);
        }
        Py_ssize_t ordinal = ++w->ordinal;
        int made;
        PyObject *out = e.record;
        if (w->shard_block > 0) {
            int taken = walk_shard_takes(w, (ordinal - 1) / w->shard_block);
            if (taken <= 0) {
                Py_XDECREF(out);
                if (taken < 0)
                    return NULL;
                continue;       /* (another worker's) */
            }
        }
        if (w->core == NULL && w->leaves == NULL) {
            /* (no core: the stream has every sample) */
            w->seen = ordinal - 1;
            return out != NULL ? out : walk_record(w, &e);
        }
        if (w->leaves != NULL && e.record != NULL) {
            made = leaf_consume_record(w->leaves, e.record);
        } else if (w->leaves != NULL) {
            const size_t hsize = w->rules.hsize;
            const uint8_t *p = (const uint8_t *)w->arena.data + e.at;
            Block b = {p, hsize, (w->params[P_LITTLE] != 0) != PY_LITTLE_ENDIAN};
            const size_t size = rd16(&b, w->rules.size_off);
            const long misc = rd16(&b, w->rules.misc_off);
            PyObject *attr = e.attr >= 0 ? PyTuple_GET_ITEM(w->attrs, e.attr) : Py_None;
            made = leaf_consume(w->leaves, attr, p + hsize, (Py_ssize_t)(size - hsize), misc);
            if (made == 0)
                out = walk_record(w, &e);
        } else if (e.record != NULL) {
            made = consume_record(w->core, e.record, ordinal);
        } else {
            const size_t hsize = w->rules.hsize;
            const uint8_t *p = (const uint8_t *)w->arena.data + e.at;
            Block b = {p, hsize, (w->params[P_LITTLE] != 0) != PY_LITTLE_ENDIAN};
            const size_t size = rd16(&b, w->rules.size_off);
            const long misc = rd16(&b, w->rules.misc_off);
            PyObject *attr = e.attr >= 0 ? PyTuple_GET_ITEM(w->attrs, e.attr) : Py_None;
            SampleRef ref = {NULL, walk_make_ref, w, &e};
            made = consume_sample(w->core, attr, p + hsize, (Py_ssize_t)(size - hsize), misc,
                                  ordinal, &ref);
            out = ref.record;
            if (made == 0 && out == NULL)
                out = walk_record(w, &e);
        }
        if (made < 0) {
            Py_XDECREF(out);
            return NULL;
        }
        if (made == 0) {
            w->seen = ordinal - 1;
            return out;     /* (NULL with an error where it could not be made) */
        }
        Py_XDECREF(out);
        if (w->core != NULL && w->core->out.len >= OUT_KEPT) {
            w->seen = ordinal;
            return SampleText_take(w->core, NULL);
        }
    }
    r->n = 0;
    w->ready_head = 0;
    return NULL;
}

/* The arena once ready is delivered: only the queue's records are kept,
 * moved to its start when the arena has grown well past them. */
static int walk_compact(RecordWalk *w) {
    Entries *q = &w->queue;
    if (q->n == 0) {
        w->arena.len = 0;
        w->arena_kept = 0;
        return 0;
    }
    if (w->arena.len < 2 * w->arena_kept + WALK_BLOCK)
        return 0;
    Buffer kept = {NULL, 0, 0};
    for (size_t i = 0; i < q->n; i++) {
        Entry *e = &q->items[i];
        if (!e->keep || e->record != NULL)
            continue;
        const uint8_t *p = (const uint8_t *)w->arena.data + e->at;
        Block b = {p, w->rules.hsize, (w->params[P_LITTLE] != 0) != PY_LITTLE_ENDIAN};
        size_t size = rd16(&b, w->rules.size_off);
        size_t at = kept.len;
        if (buf_add(&kept, (const char *)p, size) < 0) {
            PyMem_Free(kept.data);
            return -1;
        }
        e->at = at;
    }
    PyMem_Free(w->arena.data);
    w->arena = kept;
    w->arena_kept = kept.len;
    return 0;
}

/* Reads the block at file offset w->at: 0, or -1 (errno's error set) */
static int walk_read(RecordWalk *w) {
    uint64_t want = w->rules.data_end > w->at ? w->rules.data_end - w->at : 0;
    if (want > WALK_BLOCK)
        want = WALK_BLOCK;
    if (want != w->block_cap || w->block == NULL) {
        uint8_t *block = PyMem_Realloc(w->block, want ? (size_t)want : 1);
        if (block == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->block = block;
        w->block_cap = (size_t)want;
    }
    size_t got = 0;
    ssize_t n = 0;
    Py_BEGIN_ALLOW_THREADS
    while (got < want) {
        n = pread(w->fd, w->block + got, (size_t)want - got, (off_t)(w->at + got));
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    Py_END_ALLOW_THREADS
    if (n < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    w->block_off = w->at;
    w->block_len = got;
    return 0;
}

/* Frames records from w->at until some are ready to go out: 0; 1 at a
 * record the Python walker is to take (framing stops); -1 error. */
static int walk_frame(RecordWalk *w) {
    const FrameRules *rules = &w->rules;
    const int swap = (w->params[P_LITTLE] != 0) != PY_LITTLE_ENDIAN;
    const int64_t sample = w->params[P_SAMPLE];
    if (walk_compact(w) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    while (w->ready_head == w->ready.n) {
        if (w->block_len == 0 || w->at < w->block_off ||
            w->at - w->block_off >= w->block_len) {
            if (walk_read(w) < 0)
                return -1;
        }
        Block b = {w->block, w->block_len, swap};
        const size_t pos = (size_t)(w->at - w->block_off);
        uint32_t rtype;
        size_t size;
        int got = frame_take(rules, &b, pos, w->block_off, &w->fs, &rtype, &size);
        if (got == FRAME_MORE && pos > 0) {
            if (walk_read(w) < 0)
                return -1;
            continue;
        }
        if (got != FRAME_TAKEN) {
            w->framing = 0;     /* (the end of the data, or a record out of the ordinary) */
            return 1;
        }
        const size_t body = pos + rules->hsize, blen = size - rules->hsize;
        Entry e = {0, w->seq++, w->block_off + pos, 0, NULL, rtype, -1, 0, 0};
        if ((int64_t)rtype < w->params[P_USER_TYPE_START]) {
            int64_t ea = frame_attr(rules, &b, body, blen, rtype, w->ids, w->id_attrs, w->nids);
            e.attr = (int32_t)ea;
            if (ea >= 0) {
                int64_t off = (int64_t)rtype == sample ? w->time_at[ea] : w->time_back[ea];
                if (off >= 0 && (int64_t)rtype == sample && (size_t)off + 8 <= blen) {
                    e.has_time = 1;
                    e.time = rd64(&b, body + (size_t)off);
                } else if (off >= 0 && (int64_t)rtype != sample && (size_t)off <= blen &&
                           off >= 8) {
                    e.has_time = 1;
                    e.time = rd64(&b, body + blen - (size_t)off);
                }
            }
        }
        e.keep = (int64_t)rtype == sample || w->deliver[rtype];
        if (e.keep) {
            e.at = w->arena.len;
            if (buf_add(&w->arena, (const char *)w->block + pos, size) < 0) {
                PyErr_NoMemory();
                return -1;
            }
        }
        w->at += size;
        if (walk_place(w, &e) < 0) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

static void walk_free_rules(RecordWalk *w) {
    PyMem_Free(w->ids);
    PyMem_Free(w->id_attrs);
    PyMem_Free(w->time_at);
    PyMem_Free(w->time_back);
    w->ids = NULL;
    w->id_attrs = w->time_at = w->time_back = NULL;
    w->nids = 0;
}

/* RecordWalk(core, make, fd, deliver): core the SampleText its samples go
 * to, or the LeafCounter that counts them (annotate), or None (every sample
 * delivered as a Record); make(rtype, misc, size, offset, body, attr, time) a Record; fd the
 * file's descriptor (read with pread: the walk keeps its own offset);
 * deliver a bytes of NTYPES flags, the record types the stream reads */
static int RecordWalk_init(RecordWalk *w, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"core", "make", "fd", "deliver", NULL};
    PyObject *core, *make;
    int fd;
    const char *deliver;
    Py_ssize_t ndeliver;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOiy#", kwlist, &core,
                                     &make, &fd, &deliver, &ndeliver))
        return -1;
    if (ndeliver != NTYPES || fd < 0) {
        PyErr_SetString(PyExc_ValueError, "deliver: NTYPES flags; fd: a descriptor");
        return -1;
    }
    if (core != Py_None && !PyObject_TypeCheck(core, &SampleTextType) &&
        !PyObject_TypeCheck(core, &LeafCounterType)) {
        PyErr_SetString(PyExc_TypeError, "core: a SampleText, a LeafCounter or None");
        return -1;
    }
    Py_CLEAR(w->core);
    Py_CLEAR(w->leaves);
    Py_CLEAR(w->shard_taken);
    w->shard_block = 0;
    w->shard_current = -1;
    if (core == Py_None)
        ;
    else if (PyObject_TypeCheck(core, &LeafCounterType))
        w->leaves = (LeafCounter *)Py_NewRef(core);
    else
        w->core = (SampleText *)Py_NewRef(core);
    Py_XSETREF(w->make, Py_NewRef(make));
    memcpy(w->deliver, deliver, NTYPES);
    w->fd = fd;
    w->block_len = 0;
    w->block_off = 0;
    w->framing = 0;
    w->sorted = 1;
    return 0;
}

static void RecordWalk_dealloc(RecordWalk *w) {
    entries_clear(&w->queue, 0);
    entries_clear(&w->ready, w->ready_head);
    PyMem_Free(w->queue.items);
    PyMem_Free(w->ready.items);
    PyMem_Free(w->arena.data);
    PyMem_Free(w->block);
    walk_free_rules(w);
    Py_XDECREF(w->core);
    Py_XDECREF(w->leaves);
    Py_XDECREF(w->make);
    Py_XDECREF(w->attrs);
    Py_XDECREF(w->apply);
    Py_XDECREF(w->shard_taken);
    for (int t = 0; t < NTYPES; t++)
        side_free(w->sides[t]);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static int int64_array(PyObject *obj, Py_buffer *v, Py_ssize_t n, const char *what) {
    if (PyObject_GetBuffer(obj, v, PyBUF_SIMPLE) < 0)
        return -1;
    if ((n >= 0 && v->len != n * 8) || v->len % 8) {
        PyErr_Format(PyExc_ValueError, "%s: %zd int64 items expected", what, n);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* set_rules(at, params, tables, ids, id_attrs, attrs, time_at, time_back,
 * prev, nsamples, max_sample): frame from file offset `at` on with these
 * rules (records.walk_params: params and tables as the stats walk's, the
 * events' ids sorted and the index of each one's event in attrs, by event
 * the offset of a SAMPLE's time and the distance of a side record's from
 * its end (-1: none)), and the walk state the Python walker left there */
static PyObject *RecordWalk_set_rules(RecordWalk *w, PyObject *args) {
    unsigned long long at, prev, nsamples, max_sample;
    PyObject *o_params, *o_tables, *o_ids, *o_idx, *attrs, *o_tat, *o_tback;
    if (!PyArg_ParseTuple(args, "KOOOOO!OOKKK", &at, &o_params, &o_tables, &o_ids, &o_idx,
                          &PyTuple_Type, &attrs, &o_tat, &o_tback, &prev, &nsamples,
                          &max_sample))
        return NULL;
    Py_buffer vp, vt, vi, vx, va, vb;
    Py_ssize_t nattrs = PyTuple_GET_SIZE(attrs);
    if (int64_array(o_params, &vp, P_COUNT, "params") < 0)
        return NULL;
    PyObject *result = NULL;
    int held = 1;
    if (int64_array(o_tables, &vt, T_COUNT, "tables") < 0)
        goto out1;
    held++;
    if (int64_array(o_ids, &vi, -1, "ids") < 0)
        goto out2;
    held++;
    if (int64_array(o_idx, &vx, vi.len / 8, "id_attrs") < 0)
        goto out3;
    held++;
    if (int64_array(o_tat, &va, nattrs, "time_at") < 0)
        goto out4;
    held++;
    if (int64_array(o_tback, &vb, nattrs, "time_back") < 0)
        goto out5;
    held++;
    memcpy(w->params, vp.buf, sizeof w->params);
    memcpy(w->tables, vt.buf, sizeof w->tables);
    const char *bad = NULL;
    const size_t nids = (size_t)vi.len / 8;
    const uint64_t *ids = vi.buf;
    const int64_t *idx = vx.buf, *tat = va.buf, *tback = vb.buf;
    if (frame_rules_check(&w->rules, w->params, w->tables, &bad) < 0)
        goto bad;
    bad = "params do not fit the events";
    if (w->params[P_NATTRS] != nattrs || w->params[P_SAMPLE] < 0 ||
        w->params[P_SAMPLE] >= NTYPES || w->params[P_USER_TYPE_START] < 0 ||
        nattrs > (1 << 20))
        goto bad;
    bad = "ids not sorted, or an id of no event";
    for (size_t k = 0; k < nids; k++)
        if (idx[k] < 0 || idx[k] >= nattrs || (k && ids[k - 1] >= ids[k]))
            goto bad;
    bad = "time offsets out of range";
    for (Py_ssize_t k = 0; k < nattrs; k++)
        if (tat[k] < -1 || tat[k] > 65536 || tback[k] < -1 || tback[k] > 65536)
            goto bad;
    walk_free_rules(w);
    size_t n = nattrs > 0 ? (size_t)nattrs : 1;
    w->ids = PyMem_Malloc(nids ? nids * 8 : 8);
    w->id_attrs = PyMem_Malloc(nids ? nids * 8 : 8);
    w->time_at = PyMem_Malloc(n * 8);
    w->time_back = PyMem_Malloc(n * 8);
    if (!w->ids || !w->id_attrs || !w->time_at || !w->time_back) {
        walk_free_rules(w);
        PyErr_NoMemory();
        goto out;
    }
    if (nids) {
        memcpy(w->ids, ids, nids * 8);
        memcpy(w->id_attrs, idx, nids * 8);
    }
    if (nattrs) {
        memcpy(w->time_at, tat, (size_t)nattrs * 8);
        memcpy(w->time_back, tback, (size_t)nattrs * 8);
    }
    w->nids = nids;
    Py_XSETREF(w->attrs, Py_NewRef(attrs));
    w->at = at;
    w->fs.prev = prev;
    w->fs.nsamples = nsamples;
    w->fs.max_sample = max_sample;
    w->block_len = 0;       /* (read afresh at `at`) */
    w->framing = !w->finished;
    result = Py_NewRef(Py_None);
    goto out;
bad:
    PyErr_SetString(PyExc_ValueError, bad);
out:
    PyBuffer_Release(&vb);
out5:
    PyBuffer_Release(&va);
out4:
    PyBuffer_Release(&vx);
out3:
    PyBuffer_Release(&vi);
out2:
    PyBuffer_Release(&vt);
out1:
    PyBuffer_Release(&vp);
    (void)held;
    return result;
}

/* state(): (at, prev, nsamples, max_sample): where the C stopped framing
 * and the walk state there, for the Python walker (walker.WalkState) */
static PyObject *RecordWalk_state(RecordWalk *w, PyObject *unused) {
    return Py_BuildValue("(KKKK)", (unsigned long long)w->at, (unsigned long long)w->fs.prev,
                         (unsigned long long)w->fs.nsamples,
                         (unsigned long long)w->fs.max_sample);
}

/* push(record): a record the Python walker made, placed in the order
 * (COMPRESSED records are the driver's to leave out) */
static PyObject *RecordWalk_push(RecordWalk *w, PyObject *record) {
    PyObject *t = PyObject_GetAttr(record, s_type);
    if (t == NULL)
        return NULL;
    unsigned long rtype = PyLong_AsUnsignedLong(t);
    Py_DECREF(t);
    if (rtype == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    PyObject *time = PyObject_GetAttr(record, s_time);
    if (time == NULL)
        return NULL;
    Entry e = {0, w->seq++, 0, 0, NULL, (uint32_t)rtype, -1, 0, 0};
    if (time != Py_None) {
        e.time = PyLong_AsUnsignedLongLong(time);
        e.has_time = 1;
    }
    Py_DECREF(time);
    if (PyErr_Occurred())
        return NULL;
    if (rtype > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "push: a record type past u32");
        return NULL;
    }
    e.keep = rtype >= NTYPES || (int64_t)rtype == w->params[P_SAMPLE] || w->deliver[rtype];
    e.record = Py_NewRef(record);
    if (walk_place(w, &e) < 0)
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* set_apply(apply, layouts): side records applied here (walk_apply):
 * apply is Machine.apply; layouts {record type: (fields, misc_mask,
 * guard_at[, call])}, fields ((name, offset, width), ...) with width 4 or 8
 * (a u32 or u64) or 0 (a NUL-terminated UTF-8 name); call, where given (not
 * None), is called as call(misc, time, *the fields' values) in place of
 * apply(type, {name: value}, misc, time) */
static PyObject *RecordWalk_set_apply(RecordWalk *w, PyObject *args) {
    PyObject *apply, *layouts;
    if (!PyArg_ParseTuple(args, "OO!", &apply, &PyDict_Type, &layouts))
        return NULL;
    for (int t = 0; t < NTYPES; t++) {
        side_free(w->sides[t]);
        w->sides[t] = NULL;
    }
    Py_XSETREF(w->apply, Py_NewRef(apply));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(layouts, &pos, &key, &value)) {
        long t = PyLong_AsLong(key);
        PyObject *fields, *call = Py_None;
        long mask;
        long long guard;
        if ((t == -1 && PyErr_Occurred()) ||
            !PyArg_ParseTuple(value, "O!lL|O", &PyTuple_Type, &fields, &mask, &guard, &call))
            return NULL;
        Py_ssize_t n = PyTuple_GET_SIZE(fields);
        if (t < 0 || t >= NTYPES || t == w->params[P_SAMPLE] || n > SIDE_FIELDS ||
            guard < -1 || guard > 4096) {
            PyErr_SetString(PyExc_ValueError, "set_apply: a layout out of range");
            return NULL;
        }
        SideLayout *l = PyMem_Calloc(1, sizeof *l);
        if (l == NULL)
            return PyErr_NoMemory();
        l->misc_mask = mask;
        l->guard_at = guard;
        l->call = call == Py_None ? NULL : Py_NewRef(call);
        w->sides[t] = l;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *name;
            long long off;
            int width;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, i), "ULi", &name, &off, &width))
                return NULL;
            if (off < 0 || off > 4096 || (width != 0 && width != 4 && width != 8)) {
                PyErr_SetString(PyExc_ValueError, "set_apply: a field out of range");
                return NULL;
            }
            Py_INCREF(name);
            PyUnicode_InternInPlace(&name);
            l->names[l->n] = name;
            l->offset[l->n] = off;
            l->width[l->n] = width;
            l->n++;
        }
    }
    Py_RETURN_NONE;
}

/* set_shard(block, taken): one worker's part of a sharded run: of the
 * SAMPLE records in delivery order, in blocks of `block`, only those of
 * the blocks for which taken(k) is true go on (to the core, or out); the
 * others are counted (ordinal) and dropped.  taken is asked once a block,
 * in order of k, at the block's first sample. */
static PyObject *RecordWalk_set_shard(RecordWalk *w, PyObject *args) {
    Py_ssize_t block;
    PyObject *taken;
    if (!PyArg_ParseTuple(args, "nO", &block, &taken))
        return NULL;
    if (block < 1 || !PyCallable_Check(taken)) {
        PyErr_SetString(PyExc_ValueError, "set_shard: a block of 1 or more, a callable");
        return NULL;
    }
    Py_XSETREF(w->shard_taken, Py_NewRef(taken));
    w->shard_block = block;
    w->shard_current = -1;
    Py_RETURN_NONE;
}

/* finish(): the end of the data: every queued record released */
static PyObject *RecordWalk_finish(RecordWalk *w, PyObject *unused) {
    w->framing = 0;
    w->finished = 1;
    if (w->queue.n && walk_release(w, 0, 0) < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* deliver(): the next record of those ready for the stream, the texts made
 * so far where they fill the core's buffer, or None */
static PyObject *RecordWalk_deliver(RecordWalk *w, PyObject *unused) {
    PyObject *got = walk_deliver(w);
    if (got != NULL || PyErr_Occurred())
        return got;
    Py_RETURN_NONE;
}

/* next(): what deliver() gives, framing more records from the file where
 * none is ready: HANDBACK at a record the Python walker is to take, None
 * at the end (after finish()) */
static PyObject *RecordWalk_next(RecordWalk *w, PyObject *unused) {
    for (;;) {
        PyObject *got = walk_deliver(w);
        if (got != NULL || PyErr_Occurred())
            return got;
        if (w->finished)
            Py_RETURN_NONE;
        if (!w->framing)
            return PyLong_FromLong(WALK_HANDBACK);
        int r = walk_frame(w);
        if (r < 0)
            return NULL;
        if (r == 1 && w->ready_head == w->ready.n)
            return PyLong_FromLong(WALK_HANDBACK);
    }
}

static PyObject *RecordWalk_seen(RecordWalk *w, void *unused) {
    return PyLong_FromSsize_t(w->seen);
}

static PyObject *RecordWalk_ordinal(RecordWalk *w, void *unused) {
    return PyLong_FromSsize_t(w->ordinal);
}

static PyObject *RecordWalk_out_of_order(RecordWalk *w, void *unused) {
    return PyLong_FromUnsignedLongLong(w->out_of_order);
}

static PyGetSetDef RecordWalk_getset[] = {
    {"seen", (getter)RecordWalk_seen, NULL,
     "SAMPLE records delivered before the item next() or deliver() gave last", NULL},
    {"ordinal", (getter)RecordWalk_ordinal, NULL, "SAMPLE records delivered", NULL},
    {"out_of_order", (getter)RecordWalk_out_of_order, NULL,
     "records timed before ones a round already delivered", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyMethodDef RecordWalk_methods[] = {
    {"set_rules", (PyCFunction)RecordWalk_set_rules, METH_VARARGS, "frame from an offset on"},
    {"state", (PyCFunction)RecordWalk_state, METH_NOARGS, "where the framing stopped"},
    {"push", (PyCFunction)RecordWalk_push, METH_O, "a record the Python walker made"},
    {"finish", (PyCFunction)RecordWalk_finish, METH_NOARGS, "the end of the data"},
    {"set_apply", (PyCFunction)RecordWalk_set_apply, METH_VARARGS, "side records applied here"},
    {"set_shard", (PyCFunction)RecordWalk_set_shard, METH_VARARGS, "a worker's blocks only"},
    {"deliver", (PyCFunction)RecordWalk_deliver, METH_NOARGS, "the next ready item, or None"},
    {"next", (PyCFunction)RecordWalk_next, METH_NOARGS, "the next item, HANDBACK, or None"},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject RecordWalkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "perfdata.core._core.RecordWalk",
    .tp_basicsize = sizeof(RecordWalk),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "the record walk of perfdata script, in perf's delivery order",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RecordWalk_init,
    .tp_dealloc = (destructor)RecordWalk_dealloc,
    .tp_methods = RecordWalk_methods,
    .tp_getset = RecordWalk_getset,
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core", "perfdata's compiled per-sample core", -1, NULL,
};

PyMODINIT_FUNC PyInit__core(void) {
    struct { PyObject **name; const char *text; } names[] = {
        {&s_generation, "generation"}, {&s_process, "process"}, {&s_maps, "maps"},
        {&s_start, "start"}, {&s_end, "end"}, {&s_pgoff, "pgoff"},
        {&s_comm, "comm"}, {&s_attr, "attr"}, {&s_misc, "misc"}, {&s_body, "body"},
        {&s_type, "type"}, {&s_time, "time"}, {&s_in_order, "in_order"}, {&s_path, "path"},
        {&s_build_id, "build_id"}, {&s_pid, "pid"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    if (PyType_Ready(&SampleTextType) < 0 || PyType_Ready(&RecordWalkType) < 0 ||
        PyType_Ready(&LeafCounterType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SampleTextType);
    Py_INCREF(&RecordWalkType);
    Py_INCREF(&LeafCounterType);
    if (PyModule_AddObject(m, "SampleText", (PyObject *)&SampleTextType) < 0 ||
        PyModule_AddObject(m, "RecordWalk", (PyObject *)&RecordWalkType) < 0 ||
        PyModule_AddObject(m, "LeafCounter", (PyObject *)&LeafCounterType) < 0 ||
        add_framing_names(m) < 0 ||
        PyModule_AddIntConstant(m, "HANDBACK", WALK_HANDBACK) < 0 ||
        PyModule_AddIntConstant(m, "NEED_PLAN", NEED_PLAN) < 0 ||
        PyModule_AddIntConstant(m, "NEED_BINARY", NEED_BINARY) < 0 ||
        PyModule_AddIntConstant(m, "NEED_FRAME", NEED_FRAME) < 0 ||
        PyModule_AddIntConstant(m, "NEED_NAME", NEED_NAME) < 0 ||
        PyModule_AddIntConstant(m, "H_PLAIN_FRAMES", H_PLAIN_FRAMES) < 0 ||
        PyModule_AddIntConstant(m, "H_FOLDED", H_FOLDED) < 0 ||
        PyModule_AddIntConstant(m, "H_ROOT_PID", H_ROOT_PID) < 0 ||
        PyModule_AddIntConstant(m, "H_ROOT_TID", H_ROOT_TID) < 0 ||
        PyModule_AddIntConstant(m, "H_WEIGHT_PERIOD", H_WEIGHT_PERIOD) < 0 ||
        PyModule_AddIntConstant(m, "H_REPORT", H_REPORT) < 0 ||
        PyModule_AddIntConstant(m, "H_TREE", H_TREE) < 0 ||
        PyModule_AddIntConstant(m, "H_IP_LEAF", H_IP_LEAF) < 0 ||
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
