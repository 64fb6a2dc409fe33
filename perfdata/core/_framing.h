/* The framing of perf.data records in C, shared by perfdata.core._records
 * (the record walk of `perfdata stats`) and perfdata.core._core (the record
 * walk of `perfdata script`): which record at a position of a block of the
 * data section the compiled walk takes as it is, by the rules of the Python
 * walker's fast lane in recovery mode (perfdata/format/walker.py), and
 * which it leaves to that walker (a size or type out of the ordinary, a
 * record the walk applies or expands, the end of the data).
 *
 * Nothing here knows a layout: every size, offset, record type number and
 * table comes from Python (perfdata/core/layout.py and records.py derive
 * them from the construct schemas) in the `params` and `tables` arrays,
 * whose slots are named by FRAME_PARAM_NAMES below (the glue builds them by
 * name).  Every read is bounds-checked against the block.  Included after
 * Python.h, it also gives what both modules tell Python of those slots
 * (add_framing_names).
 */
#ifndef PERFDATA_FRAMING_H
#define PERFDATA_FRAMING_H

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

static const char *const FRAME_PARAM_NAMES[P_COUNT] = {
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

/* The walk state the rules read and move (walker.WalkState's). */
typedef struct {
    uint64_t prev;          /* file offset + 1 of the last record taken (0: none) */
    uint64_t nsamples;      /* the walker's SAMPLE size rule: samples seen ... */
    uint64_t max_sample;    /* ... and the largest */
} FrameState;

/* The rules, checked once (frame_rules_check) for the params and tables. */
typedef struct {
    const int64_t *prm;
    const int64_t *tab;
    size_t hsize, type_off, misc_off, size_off, trailer;
    uint64_t align_mask, data_end, big_after;
    int64_t sample, round, init;
} FrameRules;

/* 0, or -1 where the params or tables are out of range (a message in *why) */
static int frame_rules_check(FrameRules *r, const int64_t *prm, const int64_t *tab,
                             const char **why)
{
    const int64_t hsize = prm[P_HEADER_SIZE];
    const int64_t type_off = prm[P_TYPE_OFF], size_off = prm[P_SIZE_OFF];
    const int64_t misc_off = prm[P_MISC_OFF];
    if (hsize < 8 || hsize > 64 || type_off < 0 || type_off + 4 > hsize ||
        size_off < 0 || size_off + 2 > hsize || misc_off < 0 || misc_off + 2 > hsize ||
        prm[P_TRAILER] < 0 || prm[P_TRAILER] > 4096 || prm[P_LOST_OFF] < 0 ||
        prm[P_LOST_OFF] > 4096 || prm[P_NATTRS] < 0 || prm[P_NATTRS] > (1 << 24) ||
        prm[P_SINGLE] >= prm[P_NATTRS] || prm[P_SAMPLE_ID_POS] > 4096 ||
        prm[P_TRAILER_ID_POS] > 4096 || prm[P_DATA_END] < 0) {
        *why = "params out of range";
        return -1;
    }
    for (int t = 0; t < NTYPES; t++) {
        if (tab[T_TAKE + t] < 0 || tab[T_NEXT + t] < 0 || tab[T_STRING + t] > 4096 ||
            (tab[T_APPLY + t] && !tab[T_TAKE + t])) {
            *why = "tables out of range";
            return -1;
        }
    }
    r->prm = prm;
    r->tab = tab;
    r->hsize = (size_t)hsize;
    r->type_off = (size_t)type_off;
    r->misc_off = (size_t)misc_off;
    r->size_off = (size_t)size_off;
    r->trailer = (size_t)prm[P_TRAILER];
    r->align_mask = (uint64_t)prm[P_ALIGN_MASK];
    r->data_end = (uint64_t)prm[P_DATA_END];
    r->big_after = (uint64_t)prm[P_BIG_AFTER];
    r->sample = prm[P_SAMPLE];
    r->round = prm[P_FINISHED_ROUND];
    r->init = prm[P_FINISHED_INIT];
    return 0;
}

/* What frame_take found at a position. */
enum { FRAME_TAKEN, FRAME_MORE, FRAME_HANDBACK };

/* The record at b[pos] (file offset block_offset + pos): FRAME_TAKEN (its
 * type and size in *rtype, *size, the state moved past it), FRAME_MORE (the
 * record and the header after it are not wholly in the block: the caller's
 * next block), FRAME_HANDBACK (a record the Python walker is to take). */
static inline int frame_take(const FrameRules *r, const Block *b, size_t pos,
                             uint64_t block_offset, FrameState *st, uint32_t *rtype_out,
                             size_t *size_out)
{
    const int64_t *tab = r->tab;
    const size_t hsize = r->hsize;
    /* The record and the next header wholly in the block (the Python
     * lane's `head + size > len(buf) - 8`), else the caller's next block. */
    if (!fits(b, pos, hsize))
        return FRAME_MORE;
    const uint32_t rtype = rd32(b, pos + r->type_off);
    const size_t size = rd16(b, pos + r->size_off);
    const uint64_t offset = block_offset + pos;
    if (size >= hsize && !fits(b, pos, size + hsize))
        return FRAME_MORE;
    if (size < hsize || rtype >= NTYPES || tab[T_TAKE + rtype] == 0 ||
        size < (size_t)tab[T_TAKE + rtype] || size & 7)
        return FRAME_HANDBACK;
    if (rtype == r->sample) {
        if (st->nsamples >= r->big_after && size > 2 * st->max_sample + 64)
            return FRAME_HANDBACK;
    } else if (rtype == r->round || rtype == r->init) {
        if (size != 8)
            return FRAME_HANDBACK;
    } else if (tab[T_STRING + rtype] >= 0) {
        /* MMAP, MMAP2, COMM: a size past their name (padded to 8) and
         * trailer may hide the next records (walker.named_size). */
        const size_t at = hsize + (size_t)tab[T_STRING + rtype];
        size_t hi = at + 4104 < size ? at + 4104 : size;
        const uint8_t *nul = at < hi ? memchr(b->p + pos + at, 0, hi - at) : NULL;
        if (nul == NULL)
            return FRAME_HANDBACK;
        const size_t named = at + ((size_t)(nul - (b->p + pos)) - at + 8) / 8 * 8 + r->trailer;
        if (size > named + 8)
            return FRAME_HANDBACK;
    }
    /* The header after it as plausible as the walker wants it. */
    const uint32_t t2 = rd32(b, pos + size + r->type_off);
    const size_t s2 = rd16(b, pos + size + r->size_off);
    if (t2 >= NTYPES || tab[T_NEXT + t2] == 0 || s2 < (size_t)tab[T_NEXT + t2] ||
        (s2 & r->align_mask) || offset + size + s2 > r->data_end ||
        (s2 != 8 && (t2 == r->round || t2 == r->init)))
        return FRAME_HANDBACK;
    /* Taken. */
    st->prev = offset + 1;
    if (rtype == r->sample) {
        st->nsamples++;
        if (size > st->max_sample)
            st->max_sample = size;
    }
    *rtype_out = rtype;
    *size_out = size;
    return FRAME_TAKEN;
}

/* The event of an id: its index in the attrs, or `dflt` where unknown. */
static inline int64_t attr_of_id(const uint64_t *ids, const int64_t *idx, size_t nids,
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

/* The event a record of the block belongs to (DecodeContext.attr_for): its
 * index in the attrs, -1 where there is none. */
static inline int64_t frame_attr(const FrameRules *r, const Block *b, size_t body, size_t blen,
                                 uint32_t rtype, const uint64_t *ids, const int64_t *idx,
                                 size_t nids)
{
    const int64_t *prm = r->prm;
    if (prm[P_SINGLE] >= 0 || prm[P_NATTRS] == 0)
        return prm[P_NATTRS] == 0 ? -1 : prm[P_SINGLE];
    if (rtype == r->sample) {
        const int64_t pos = prm[P_SAMPLE_ID_POS];
        if (pos >= 0 && (size_t)(8 * pos + 8) <= blen)
            return attr_of_id(ids, idx, nids, rd64(b, body + 8 * (size_t)pos), 0);
        return 0;
    }
    const int64_t pos = prm[P_SAMPLE_ID_ALL] ? prm[P_TRAILER_ID_POS] : -1;
    if (pos >= 0 && (size_t)(8 * pos) <= blen)
        return attr_of_id(ids, idx, nids, rd64(b, body + blen - 8 * (size_t)pos), 0);
    return 0;
}

#ifdef Py_PYTHON_H
/* A tuple of C strings (the slots' names a module tells Python). */
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

/* What a module that frames records tells Python of `params` and
 * `tables`: PARAM_NAMES (the slots' names, by which the glue builds
 * `params`) and NTYPES; -1 with an exception set on failure. */
static int add_framing_names(PyObject *m)
{
    if (PyModule_AddObject(m, "PARAM_NAMES", names_tuple(FRAME_PARAM_NAMES, P_COUNT)) < 0 ||
        PyModule_AddIntConstant(m, "NTYPES", NTYPES) < 0)
        return -1;
    return 0;
}
#endif

#endif
