/* symbolize.symbols._symtab: the first run's symbol tables, in C
 * (symbolize/symbols/symtab.py and kallsyms.py drive it; their pure-Python
 * code is the reference, tests/symbolize/test_symbolize_compiled.py compares the two).
 *
 * fixup() is perf 6.1's symbols__fixup_end then symbols__fixup_duplicate
 * (symtab.fixup_columns) over a table's starts, sizes and bindings: the
 * stable order by start, each size, and which of the symbols sharing an
 * address stays (choose_best_symbol); where that choice comes down to the
 * names (symtab.choose_by_names) it asks a Python callable, which compares
 * the names the caller keeps (demangled, as perf compares an ELF table's).
 *
 * read_symbols() reads an ELF symbol section's entries (Elf32_Sym or
 * Elf64_Sym) and keeps those perf keeps (elfsymbols._read_elf_symbols).  It
 * knows no layout: each field's offset and width come from Python, which
 * takes them from pyelftools' struct (Binary.struct_layout).
 *
 * parse_kallsyms() parses a kallsyms text (kallsyms._columns) and fixes its
 * table up (KernelSymbols.parse), names compared here.  It takes printable
 * ASCII lines only, with hexadecimal addresses of at most 16 digits: on any
 * other byte or address it returns None and the caller parses the text in
 * Python (a real kallsyms is all ASCII; the rest is odd or hostile input,
 * for which the reference's own rules are the simplest to keep).
 *
 * The data are hostile input: every read is bounds checked against its
 * buffer; nothing is allocated beyond a few words per entry of the input.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STB_LOCAL 0
#define STB_GLOBAL 1
#define STB_WEAK 2
#define STT_NOTYPE 0
#define STT_OBJECT 1
#define STT_FUNC 2
#define STT_GNU_IFUNC 10
#define STV_INTERNAL 1
#define STV_HIDDEN 2
#define SHN_UNDEF 0
#define SHN_LORESERVE 0xFF00
#define KSYM_NAME_LEN 512
/* The entry points' version (compiled.py's SYMTAB_VERSION): 3, fixup's
 * names, demangler, relocs, plt_slots, parse_kallsyms' layout over the text
 * (into a buffer handed over, too) and kallsyms_room. */
#define SYMTAB_VERSION 3
#define PAGE 4096

/* ------------------------------------------------------------- fixup */

/* Which of two symbols at one address stays when the sizes and bindings
 * do not decide: 1 the first, 0 the second, -1 an error (set). */
typedef int (*name_choice)(void *ctx, Py_ssize_t a, Py_ssize_t b);

/* perf 6.1's choose_best_symbol (symtab.choose_best): 1 if a wins over b. */
static int
choose_best(uint64_t la, uint64_t lb, int ba, int bb, name_choice names, void *ctx,
            Py_ssize_t a, Py_ssize_t b)
{
    int wa = ba == STB_WEAK, wb = bb == STB_WEAK;
    int ga = ba == STB_GLOBAL, gb = bb == STB_GLOBAL;
    if (lb == 0 && la > 0)
        return 1;
    if (la == 0 && lb > 0)
        return 0;
    if (wb && !wa)
        return 1;
    if (wa && !wb)
        return 0;
    if (ga && !gb)
        return 1;
    if (gb && !ga)
        return 0;
    return names(ctx, a, b);
}

/* The room perf gives a symbol of no size with no next symbol to run to:
 * from its start to the end of the page after its own. */
static uint64_t
page_room(uint64_t start)
{
    uint64_t r = start % PAGE;
    return r ? 2 * PAGE - r : PAGE;
}

/* Stable merge sort of idx[0:n] by keys[idx], tmp of n entries. */
static void
sort_by_key(Py_ssize_t *idx, Py_ssize_t *tmp, Py_ssize_t n, const uint64_t *keys)
{
    Py_ssize_t width, lo;
    for (width = 1; width < n; width *= 2) {
        for (lo = 0; lo < n; lo += 2 * width) {
            Py_ssize_t mid = lo + width < n ? lo + width : n;
            Py_ssize_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            Py_ssize_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = keys[idx[j]] < keys[idx[i]] ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof(Py_ssize_t));
    }
}

/* symtab.fixup_columns over n symbols: order[] gets the indices of the
 * symbols kept, by start, and out_sizes[] their sizes; in_module (kallsyms
 * only, else NULL) says which symbols' names hold a "[" (bit 0).  sizes
 * NULL: every size 0.  order NULL: the symbols are in order already (the
 * caller sorted them), and keep[] (n bytes, the caller's) says which are
 * kept, out_sizes[] theirs first.  Returns how many are kept, or -1 with an
 * exception set. */
static Py_ssize_t
fixup(Py_ssize_t n, const uint64_t *starts, const uint64_t *sizes, const uint8_t *bindings,
      const uint8_t *in_module, name_choice names, void *ctx, Py_ssize_t *order,
      uint64_t *out_sizes, uint8_t *keep)
{
    Py_ssize_t i, kept, winner = -1;
    uint8_t *own_keep = NULL;
    int sorted = 1;
#define AT(i) (order != NULL ? order[i] : (i))
    if (order != NULL) {
        for (i = 0; i < n; i++)
            order[i] = i;
        for (i = 1; i < n && sorted; i++)
            sorted = starts[i - 1] <= starts[i];
    }
    if (!sorted) {
        Py_ssize_t *tmp = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
        if (tmp == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        sort_by_key(order, tmp, n, starts);
        PyMem_Free(tmp);
    }
    /* symbols__fixup_end: a symbol of no size runs to the next one's start
     * (ends - starts: never above 2**64, as each start is below the next) */
    for (i = 0; i < n; i++) {
        uint64_t start = starts[AT(i)], size = sizes != NULL ? sizes[AT(i)] : 0;
        if (size)
            out_sizes[i] = size;
        else if (i + 1 < n)
            out_sizes[i] = starts[AT(i + 1)] - start;
        else
            out_sizes[i] = page_room(start);
        if (in_module != NULL && i + 1 < n && !size &&
                (in_module[AT(i)] & 1) != (in_module[AT(i + 1)] & 1))
            out_sizes[i] = page_room(start);
    }
    if (keep == NULL) {
        keep = own_keep = PyMem_Malloc(n ? (size_t)n : 1);
        if (keep == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    memset(keep, 1, (size_t)n);
    /* symbols__fixup_duplicate */
    for (i = 0; i + 1 < n; i++) {
        Py_ssize_t next = i + 1;
        int first;
        if (starts[AT(i)] != starts[AT(next)])
            continue;
        if (winner < 0 || starts[AT(winner)] != starts[AT(i)])
            winner = i;
        first = choose_best(out_sizes[winner], out_sizes[next], bindings[AT(winner)],
                            bindings[AT(next)], names, ctx, AT(winner), AT(next));
        if (first < 0) {
            PyMem_Free(own_keep);
            return -1;
        }
        if (first)
            keep[next] = 0;
        else {
            keep[winner] = 0;
            winner = next;
        }
    }
#undef AT
    kept = 0;
    for (i = 0; i < n; i++) {
        if (keep[i]) {
            if (order != NULL)
                order[kept] = order[i];
            out_sizes[kept] = out_sizes[i];
            kept++;
        }
    }
    PyMem_Free(own_keep);
    return kept;
}

/* A name_choice asking a Python callable: choice(a, b) true if a wins. */
static int
ask_python(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    PyObject *r = PyObject_CallFunction((PyObject *)ctx, "nn", a, b);
    int first;
    if (r == NULL)
        return -1;
    first = PyObject_IsTrue(r);
    Py_DECREF(r);
    return first;
}

/* ------------------------------------------------- names compared */

/* libiberty's cplus_demangle_v3, from the library demangle.py loads
 * (demangler()); NULL: none loaded, mangled names are Python's to compare. */
typedef char *(*demangle_fn)(const char *mangled, int options);
static demangle_fn cplus_demangle_v3;

/* What choose_by_names looks at of a name: its leading underscores, its
 * length, whether it starts with "SyS" or "compat_SyS"; known 0 where C
 * cannot tell what Python compares (not ASCII, a suffix, a Rust name...). */
typedef struct {
    int known, sys;
    Py_ssize_t underscores, length;
} NameKey;

static NameKey
key_of(const char *s, Py_ssize_t len)
{
    NameKey k;
    k.known = 1;
    k.underscores = 0;
    while (k.underscores < len && s[k.underscores] == '_')
        k.underscores++;
    k.length = len;
    k.sys = (len >= 3 && memcmp(s, "SyS", 3) == 0) ||
            (len >= 10 && memcmp(s, "compat_SyS", 10) == 0);
    return k;
}

static int
has_prefix(const char *s, Py_ssize_t len, const char *prefix)
{
    Py_ssize_t p = (Py_ssize_t)strlen(prefix);
    return len >= p && memcmp(s, prefix, (size_t)p) == 0;
}

/* Whether s[0:len] holds `what` (of 3 bytes). */
static int
holds3(const char *s, Py_ssize_t len, const char *what)
{
    Py_ssize_t i;
    for (i = 0; i + 3 <= len; i++)
        if (s[i] == what[0] && s[i + 1] == what[1] && s[i + 2] == what[2])
            return 1;
    return 0;
}

/* The key of what demangle.demangle(name, params=flags != 0) gives, for an
 * ASCII name (s NUL-terminated): unknown for a name whose demangling is
 * Python's (a "@" suffix, a Rust name: "_R", or "_ZN" holding the "17h"
 * of a legacy hash) or where no demangler is loaded. */
static NameKey
demangled_key(const char *s, Py_ssize_t len, int flags)
{
    NameKey k = {0, 0, 0, 0};
    char *out;
    Py_ssize_t n;
    if (len == 0)
        return key_of(s, len);
    if (memchr(s, '@', (size_t)len) != NULL || memchr(s, 0, (size_t)len) != NULL ||
            has_prefix(s, len, "_R") || has_prefix(s, len, "__R"))
        return k;
    if (has_prefix(s, len, "_ZN") || has_prefix(s, len, "__ZN")) {
        if (holds3(s, len, "17h"))
            return k;
    }
    else if (!has_prefix(s, len, "_Z") && !has_prefix(s, len, "___Z"))
        return key_of(s, len);          /* not mangled: compared as it is */
    if (cplus_demangle_v3 == NULL)
        return k;
    out = cplus_demangle_v3(s, flags);
    if (out == NULL || out[0] == 0) {   /* (not demangled: the name itself) */
        free(out);
        return key_of(s, len);
    }
    n = (Py_ssize_t)strlen(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((unsigned char)out[i] >= 0x80) {    /* (Python decodes, then counts) */
            free(out);
            return k;
        }
    }
    k = key_of(out, n);
    free(out);
    return k;
}

/* The names compared where sizes and bindings do not decide: the symbols'
 * names (a list of str), compared as they are (flags -1) or demangled with
 * those options; a pair C cannot tell apart goes to `choose`. */
typedef struct {
    PyObject *choose, *names;
    int flags;
    Py_ssize_t at[2];           /* the last two keys made, by index */
    NameKey key[2];
    int next;
} NamesCompared;

static NameKey
name_key(NamesCompared *c, Py_ssize_t i)
{
    NameKey k = {0, 0, 0, 0};
    PyObject *name;
    const char *s;
    Py_ssize_t len;
    int j;
    for (j = 0; j < 2; j++)
        if (c->at[j] == i)
            return c->key[j];
    if (i < 0 || i >= PyList_GET_SIZE(c->names))
        return k;
    name = PyList_GET_ITEM(c->names, i);
    if (PyUnicode_Check(name) && PyUnicode_IS_ASCII(name)) {
        s = (const char *)PyUnicode_DATA(name);      /* (NUL-terminated) */
        len = PyUnicode_GET_LENGTH(name);
        k = c->flags < 0 ? key_of(s, len) : demangled_key(s, len, c->flags);
    }
    c->at[c->next] = i;
    c->key[c->next] = k;
    c->next ^= 1;
    return k;
}

/* A name_choice: symtab.choose_by_names on the two names' keys, or the
 * Python callable where C cannot make a key. */
static int
names_choice(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    NamesCompared *c = ctx;
    NameKey ka = name_key(c, a), kb = name_key(c, b);
    if (!ka.known || !kb.known)
        return ask_python(c->choose, a, b);
    if (kb.underscores > ka.underscores)
        return 1;
    if (ka.underscores > kb.underscores)
        return 0;
    if (ka.length != kb.length)
        return ka.length > kb.length;
    return !ka.sys;
}

PyDoc_STRVAR(demangler_doc,
"demangler(paths) -> int\n\n"
"Load the first of paths (shared libraries, as demangle.py's ctypes would:\n"
"dlopen RTLD_NOW, then its cplus_demangle_v3) that loads and has it, for\n"
"fixup() to demangle the names it compares; its index, -1 for none.");

static PyObject *
py_demangler(PyObject *self, PyObject *paths)
{
    Py_ssize_t i, n;
    if (!PyTuple_Check(paths)) {
        PyErr_SetString(PyExc_TypeError, "paths: a tuple of str");
        return NULL;
    }
    n = PyTuple_GET_SIZE(paths);
    for (i = 0; i < n; i++) {
        PyObject *bytes;
        void *lib, *fn;
        if (!PyUnicode_Check(PyTuple_GET_ITEM(paths, i))) {
            PyErr_SetString(PyExc_TypeError, "paths: a tuple of str");
            return NULL;
        }
        if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(paths, i), &bytes))
            return NULL;
        lib = dlopen(PyBytes_AS_STRING(bytes), RTLD_NOW | RTLD_LOCAL);
        Py_DECREF(bytes);
        if (lib == NULL)
            continue;
        fn = dlsym(lib, "cplus_demangle_v3");
        if (fn == NULL)
            continue;
        cplus_demangle_v3 = (demangle_fn)fn;
        return PyLong_FromSsize_t(i);
    }
    return PyLong_FromLong(-1);
}

/* A column of n unsigned 64-bit values handed over as a buffer. */
static int
u64_column(Py_buffer *view, Py_ssize_t n, const char *what)
{
    if (view->len != n * 8) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes for %zd values", what, view->len, n);
        return -1;
    }
    return 0;
}

/* What fixup() kept: (their indices, sizes and starts as bytes of native
 * unsigned 64-bit values, their bindings a byte each). */
static PyObject *
columns_out(const Py_ssize_t *order, const uint64_t *sizes, Py_ssize_t kept,
            const uint64_t *starts, const uint8_t *bindings)
{
    PyObject *o = PyBytes_FromStringAndSize(NULL, kept * 8);
    PyObject *s = PyBytes_FromStringAndSize((const char *)sizes, kept * 8);
    PyObject *st = PyBytes_FromStringAndSize(NULL, kept * 8);
    PyObject *b = PyBytes_FromStringAndSize(NULL, kept);
    Py_ssize_t i;
    if (o == NULL || s == NULL || st == NULL || b == NULL) {
        Py_XDECREF(o);
        Py_XDECREF(s);
        Py_XDECREF(st);
        Py_XDECREF(b);
        return NULL;
    }
    for (i = 0; i < kept; i++) {
        uint64_t v = (uint64_t)order[i];
        memcpy(PyBytes_AS_STRING(o) + i * 8, &v, 8);
        memcpy(PyBytes_AS_STRING(st) + i * 8, &starts[order[i]], 8);
        PyBytes_AS_STRING(b)[i] = (char)bindings[order[i]];
    }
    return Py_BuildValue("NNNN", o, s, st, b);
}

PyDoc_STRVAR(fixup_doc,
"fixup(starts, sizes, bindings, choose[, names, flags])\n"
"    -> (order, sizes, starts, bindings)\n\n"
"perf 6.1's symbol fixups (symtab.fixup_columns) over n symbols: starts and\n"
"sizes buffers of n native unsigned 64-bit values, bindings n bytes (STB_*);\n"
"choose(a, b) answers, for symbols a and b (indices) at one address that\n"
"their sizes and bindings do not tell apart, whether a stays (their names\n"
"decide).  With names (a list of str, the symbols' names) C compares the\n"
"names itself where it can, as they are (flags -1) or demangled with those\n"
"cplus_demangle_v3 options (by the demangler() loaded), and asks choose\n"
"for the rest.  Returns the indices of the symbols kept, by start, their sizes\n"
"and their starts, as bytes of native unsigned 64-bit values, and their\n"
"bindings, a byte each.");

static PyObject *
py_fixup(PyObject *self, PyObject *args)
{
    Py_buffer starts, sizes, bindings;
    PyObject *choose, *names = Py_None, *out = NULL;
    Py_ssize_t n, kept, *order = NULL;
    uint64_t *in_starts = NULL, *in_sizes = NULL, *out_sizes = NULL;
    NamesCompared compared = {NULL, NULL, -1, {-1, -1}, {{0, 0, 0, 0}, {0, 0, 0, 0}}, 0};
    if (!PyArg_ParseTuple(args, "y*y*y*O|Oi:fixup", &starts, &sizes, &bindings, &choose,
                          &names, &compared.flags))
        return NULL;
    compared.choose = choose;
    n = bindings.len;
    if (names != Py_None && !PyList_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "names: a list");
        goto done;
    }
    compared.names = names != Py_None ? names : NULL;
    if (u64_column(&starts, n, "starts") < 0 || u64_column(&sizes, n, "sizes") < 0)
        goto done;
    order = PyMem_Malloc(n ? (size_t)n * sizeof(Py_ssize_t) : 1);
    out_sizes = PyMem_Malloc(n ? (size_t)n * 8 : 1);
    /* (copies: a buffer handed over need not be aligned for 64-bit reads) */
    in_starts = PyMem_Malloc(n ? (size_t)n * 8 : 1);
    in_sizes = PyMem_Malloc(n ? (size_t)n * 8 : 1);
    if (order == NULL || out_sizes == NULL || in_starts == NULL || in_sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(in_starts, starts.buf, (size_t)n * 8);
    memcpy(in_sizes, sizes.buf, (size_t)n * 8);
    /* (choose may change the names list: name_key checks its size at each
     * read, and makes a key without calling back into Python) */
    if (compared.names != NULL)
        kept = fixup(n, in_starts, in_sizes, (const uint8_t *)bindings.buf, NULL, names_choice,
                     &compared, order, out_sizes, NULL);
    else
        kept = fixup(n, in_starts, in_sizes, (const uint8_t *)bindings.buf, NULL, ask_python,
                     choose, order, out_sizes, NULL);
    if (kept >= 0)
        out = columns_out(order, out_sizes, kept, in_starts, (const uint8_t *)bindings.buf);
done:
    PyMem_Free(order);
    PyMem_Free(out_sizes);
    PyMem_Free(in_starts);
    PyMem_Free(in_sizes);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&sizes);
    PyBuffer_Release(&bindings);
    return out;
}

/* ------------------------------------------------------ ELF symbols */

/* One field of an entry: its offset and width (1, 2, 4 or 8 bytes). */
typedef struct {
    Py_ssize_t offset, width;
} Field;

enum { F_NAME, F_VALUE, F_SIZE, F_INFO, F_OTHER, F_SHNDX, NFIELDS };

static uint64_t
field_of(const unsigned char *entry, const Field *f, int little)
{
    uint64_t v = 0;
    Py_ssize_t i;
    for (i = 0; i < f->width; i++) {
        Py_ssize_t at = little ? f->width - 1 - i : i;
        v = (v << 8) | entry[f->offset + at];
    }
    return v;
}

/* An ARM mapping symbol ($a, $d, $t, $x, or one of them then "."), which
 * marks a run of code or data, not a function: perf rejects them.  (On the
 * bytes: a name's first bytes are ASCII or its decoded text differs there
 * too.) */
static int
is_mapping_symbol(const char *name, Py_ssize_t len)
{
    return len >= 2 && name[0] == '$' && strchr("adtx", name[1]) != NULL && name[1] != 0 &&
           (len == 2 || name[2] == '.');
}

/* Growable output of read_symbols. */
typedef struct {
    uint64_t *starts, *sizes;
    uint8_t *bindings, *types;
    Py_ssize_t n, cap;
} SymbolColumns;

static int
columns_add(SymbolColumns *c, uint64_t start, uint64_t size, int binding, int type)
{
    if (c->n == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 256;
        uint64_t *st = PyMem_Realloc(c->starts, (size_t)cap * 8);
        uint64_t *sz;
        uint8_t *b, *t;
        if (st == NULL)
            return -1;
        c->starts = st;
        sz = PyMem_Realloc(c->sizes, (size_t)cap * 8);
        if (sz == NULL)
            return -1;
        c->sizes = sz;
        b = PyMem_Realloc(c->bindings, (size_t)cap);
        if (b == NULL)
            return -1;
        c->bindings = b;
        t = PyMem_Realloc(c->types, (size_t)cap);
        if (t == NULL)
            return -1;
        c->types = t;
        c->cap = cap;
    }
    c->starts[c->n] = start;
    c->sizes[c->n] = size;
    c->bindings[c->n] = (uint8_t)binding;
    c->types[c->n] = (uint8_t)type;
    c->n++;
    return 0;
}

static void
columns_free(SymbolColumns *c)
{
    PyMem_Free(c->starts);
    PyMem_Free(c->sizes);
    PyMem_Free(c->bindings);
    PyMem_Free(c->types);
}

PyDoc_STRVAR(read_symbols_doc,
"read_symbols(data, strtab, fields, entry_size, little, sections, arm, objects)\n"
"    -> (starts, sizes, bindings, types, names)\n\n"
"The symbols perf keeps of a symbol section's entries (data) naming strtab:\n"
"fields the (offset, width) of st_name, st_value, st_size, st_info,\n"
"st_other, st_shndx in an entry of entry_size bytes (little: byte order);\n"
"sections a byte per section index (1: SHF_ALLOC, 2: a name holding\n"
"\"text\"); arm: an ARM or AArch64 file (its mapping symbols left out);\n"
"objects: STT_OBJECT kept too.  Returns the starts and sizes as bytes of\n"
"native unsigned 64-bit values, the bindings and types a byte each, the\n"
"names a list of str (UTF-8, undecodable bytes replaced).");

static int
parse_fields(PyObject *fields, Py_ssize_t entry_size, Field *out)
{
    Py_ssize_t i;
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) != NFIELDS) {
        PyErr_SetString(PyExc_ValueError, "fields: a tuple of 6 (offset, width) pairs");
        return -1;
    }
    for (i = 0; i < NFIELDS; i++) {
        PyObject *f = PyTuple_GET_ITEM(fields, i);
        if (!PyArg_ParseTuple(f, "nn", &out[i].offset, &out[i].width))
            return -1;
        if (out[i].offset < 0 || (out[i].width != 1 && out[i].width != 2 &&
                                  out[i].width != 4 && out[i].width != 8) ||
                out[i].offset > entry_size - out[i].width) {
            PyErr_SetString(PyExc_ValueError, "fields: a field outside the entry");
            return -1;
        }
    }
    return 0;
}

/* Whether an entry is kept (elfsymbols._read_elf_symbols' filters); *name_at
 * and *name_len then say where its name is in the string table. */
static int
kept_entry(const unsigned char *e, const Field *f, int little, const Py_buffer *strtab,
           const Py_buffer *sections, int arm, int objects, Py_ssize_t *name_at,
           Py_ssize_t *name_len)
{
    uint64_t st_name = field_of(e, &f[F_NAME], little);
    uint64_t shndx = field_of(e, &f[F_SHNDX], little);
    int type = (int)(field_of(e, &f[F_INFO], little) & 0xF);
    int label, kind;
    const char *names = (const char *)strtab->buf, *end;
    if (st_name == 0 || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
        return 0;
    if (type == STT_NOTYPE) {
        int vis = (int)(field_of(e, &f[F_OTHER], little) & 3);
        if (vis == STV_HIDDEN || vis == STV_INTERNAL)
            return 0;
        label = 1;
    }
    else if (type == STT_FUNC || type == STT_GNU_IFUNC || (objects && type == STT_OBJECT))
        label = 0;
    else
        return 0;
    kind = (Py_ssize_t)shndx < sections->len ? ((const uint8_t *)sections->buf)[shndx] : 0;
    if (!(kind & 1) || (label && !(kind & 2)))
        return 0;
    if (st_name >= (uint64_t)strtab->len)
        return 0;
    end = memchr(names + st_name, 0, (size_t)(strtab->len - (Py_ssize_t)st_name));
    *name_at = (Py_ssize_t)st_name;
    *name_len = (end != NULL ? end - names : strtab->len) - (Py_ssize_t)st_name;
    return !(arm && is_mapping_symbol(names + st_name, *name_len));
}

static PyObject *
py_read_symbols(PyObject *self, PyObject *args)
{
    Py_buffer data, strtab, sections;
    PyObject *fields, *names = NULL, *out = NULL;
    Py_ssize_t entry_size, n, k;
    int little, arm, objects;
    Field f[NFIELDS];
    SymbolColumns c = {NULL, NULL, NULL, NULL, 0, 0};
    if (!PyArg_ParseTuple(args, "y*y*Onpy*pp:read_symbols", &data, &strtab, &fields,
                          &entry_size, &little, &sections, &arm, &objects))
        return NULL;
    if (entry_size <= 0) {
        PyErr_SetString(PyExc_ValueError, "entry_size must be positive");
        goto done;
    }
    if (parse_fields(fields, entry_size, f) < 0)
        goto done;
    names = PyList_New(0);
    if (names == NULL)
        goto done;
    n = data.len / entry_size;
    for (k = 0; k < n; k++) {
        const unsigned char *e = (const unsigned char *)data.buf + k * entry_size;
        Py_ssize_t at = 0, len = 0;
        PyObject *name;
        int r;
        if (!kept_entry(e, f, little, &strtab, &sections, arm, objects, &at, &len))
            continue;
        name = PyUnicode_DecodeUTF8((const char *)strtab.buf + at, len, "replace");
        if (name == NULL)
            goto done;
        r = PyList_Append(names, name);
        Py_DECREF(name);
        if (r < 0)
            goto done;
        if (columns_add(&c, field_of(e, &f[F_VALUE], little), field_of(e, &f[F_SIZE], little),
                        (int)(field_of(e, &f[F_INFO], little) >> 4),
                        (int)(field_of(e, &f[F_INFO], little) & 0xF)) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    /* (no symbol kept: empty bytes, where "y#" would make None of NULL) */
    out = Py_BuildValue("y#y#y#y#O", c.n ? (const char *)c.starts : "", c.n * 8,
                        c.n ? (const char *)c.sizes : "", c.n * 8,
                        c.n ? (const char *)c.bindings : "", c.n,
                        c.n ? (const char *)c.types : "", c.n, names);
done:
    Py_XDECREF(names);
    columns_free(&c);
    PyBuffer_Release(&data);
    PyBuffer_Release(&strtab);
    PyBuffer_Release(&sections);
    return out;
}

/* ------------------------------------------------------- PLT stubs */

/* An unsigned value of up to 16 bytes at p (width 1, 2, 4 or 8; little
 * or big endian). */
static uint64_t
uint_at(const unsigned char *p, Py_ssize_t width, int little)
{
    uint64_t v = 0;
    Py_ssize_t i;
    for (i = 0; i < width; i++)
        v = (v << 8) | p[little ? width - 1 - i : i];
    return v;
}

/* The name of entry `index` of a symbol section (plt._SymbolNames.name):
 * "" for entry 0, one past the end, or a name outside the string table. */
static PyObject *
symbol_name(const Py_buffer *syms, Py_ssize_t entry_size, const Field *name_field, int little,
            const Py_buffer *strtab, uint64_t index)
{
    Py_ssize_t count = entry_size > 0 ? syms->len / entry_size : 0;
    const char *names = (const char *)strtab->buf, *end;
    uint64_t st_name;
    if (index == 0 || index >= (uint64_t)count)
        return PyUnicode_FromStringAndSize("", 0);
    st_name = field_of((const unsigned char *)syms->buf + (Py_ssize_t)index * entry_size,
                       name_field, little);
    if (st_name >= (uint64_t)strtab->len)
        return PyUnicode_FromStringAndSize("", 0);
    end = memchr(names + st_name, 0, (size_t)(strtab->len - (Py_ssize_t)st_name));
    return PyUnicode_DecodeUTF8(names + st_name,
                                (end != NULL ? end - names : strtab->len) - (Py_ssize_t)st_name,
                                "replace");
}

PyDoc_STRVAR(relocs_doc,
"relocs(data, word, rela, little, wanted, syms, sym_entry_size, name_field, strtab)\n"
"    -> list of (offset, type, name, addend)\n\n"
"The relocations of a REL (rela false) or RELA section's entries (data)\n"
"whose type is in wanted (a tuple of ints), as plt._read_relocs reads them:\n"
"word 8 (ELF64: r_info's symbol index above bit 32) or 4 (ELF32: above bit\n"
"8), in the file's byte order (little); each named after its symbol, entry\n"
"r_info >> shift of syms (entries of sym_entry_size bytes, st_name at\n"
"name_field's (offset, width, little)) in strtab (\"\" where there is none).");

static PyObject *
py_relocs(PyObject *self, PyObject *args)
{
    Py_buffer data, syms, strtab;
    Py_ssize_t word, sym_entry_size, size, n, k, nwanted, i;
    int rela, little;
    PyObject *wanted, *name_field, *out = NULL;
    Field nf;
    long want[8];
    int name_little;
    if (!PyArg_ParseTuple(args, "y*nppOy*nOy*:relocs", &data, &word, &rela, &little, &wanted,
                          &syms, &sym_entry_size, &name_field, &strtab))
        return NULL;
    if ((word != 4 && word != 8) || sym_entry_size <= 0) {
        PyErr_SetString(PyExc_ValueError, "word: 4 or 8; sym_entry_size: positive");
        goto done;
    }
    if (!PyArg_ParseTuple(name_field, "nnp", &nf.offset, &nf.width, &name_little))
        goto done;
    if (nf.offset < 0 || (nf.width != 1 && nf.width != 2 && nf.width != 4 && nf.width != 8) ||
            nf.offset > sym_entry_size - nf.width) {
        PyErr_SetString(PyExc_ValueError, "name_field: a field outside the entry");
        goto done;
    }
    if (!PyTuple_Check(wanted) || PyTuple_GET_SIZE(wanted) > 8) {
        PyErr_SetString(PyExc_ValueError, "wanted: a tuple of at most 8 types");
        goto done;
    }
    nwanted = PyTuple_GET_SIZE(wanted);
    for (i = 0; i < nwanted; i++) {
        want[i] = PyLong_AsLong(PyTuple_GET_ITEM(wanted, i));
        if (want[i] == -1 && PyErr_Occurred())
            goto done;
    }
    size = word * (rela ? 3 : 2);
    n = data.len / size;
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    for (k = 0; k < n; k++) {
        const unsigned char *e = (const unsigned char *)data.buf + k * size;
        uint64_t r_offset = uint_at(e, word, little), r_info = uint_at(e + word, word, little);
        uint64_t type = word == 8 ? r_info & 0xFFFFFFFFu : r_info & 0xFF;
        uint64_t sym = word == 8 ? r_info >> 32 : r_info >> 8;
        int64_t addend = 0;
        PyObject *name, *row;
        for (i = 0; i < nwanted && (uint64_t)want[i] != type; i++)
            ;
        if (i == nwanted)
            continue;
        if (rela) {
            uint64_t a = uint_at(e + 2 * word, word, little);
            /* (signed: r_addend is Elf64_Sxword / Elf32_Sword) */
            addend = word == 8 ? (int64_t)a : (int64_t)(int32_t)(uint32_t)a;
        }
        name = symbol_name(&syms, sym_entry_size, &nf, name_little, &strtab, sym);
        if (name == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        row = Py_BuildValue("(KKNL)", (unsigned long long)r_offset, (unsigned long long)type,
                            name, (long long)addend);
        if (row == NULL || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(row);
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&syms);
    PyBuffer_Release(&strtab);
    return out;
}

/* An address of more than 64 bits while it is computed: what Python's
 * integers give for a stub's GOT slot, exactly (a section's address near
 * 2**64 plus a negative displacement comes back into range). */
typedef struct {
    int64_t hi;                 /* how many times 2**64 */
    uint64_t lo;
} Wide;

static Wide
wide_add(Wide w, int64_t d)
{
    uint64_t lo = w.lo + (uint64_t)d;
    if (d >= 0)
        w.hi += lo < w.lo;
    else
        w.hi -= lo > w.lo;
    w.lo = lo;
    return w;
}

static Wide
wide_of(uint64_t base, uint64_t off)
{
    Wide w = {0, base + off};
    w.hi = w.lo < base;
    return w;
}

enum { PLT_X86_64, PLT_AARCH64, PLT_I386 };

/* plt._x86_64_got_slot, _aarch64_got_slot, _i386_got_slot on code[0:len]
 * of the stub at `at`: 1 with *got set, 0 where the jump is not decoded. */
static int
got_slot(const unsigned char *code, Py_ssize_t len, Wide at, int kind, uint64_t got_base,
         Wide *got)
{
    static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    static const unsigned char endbr32[4] = {0xf3, 0x0f, 0x1e, 0xfb};
    Py_ssize_t i = 0;
    if (kind == PLT_X86_64) {
        if (len >= 4 && memcmp(code, endbr64, 4) == 0)
            i = 4;
        while (i < len - 5) {
            if (code[i] == 0xF2) {
                i++;
                continue;
            }
            if (code[i] == 0xFF && code[i + 1] == 0x25) {
                *got = wide_add(wide_add(at, i + 6), (int32_t)uint_at(code + i + 2, 4, 1));
                return 1;
            }
            return 0;
        }
        return 0;
    }
    if (kind == PLT_I386) {
        if (len >= 4 && memcmp(code, endbr32, 4) == 0)
            i = 4;
        if (i < len && code[i] == 0xF2)
            i++;
        if (len < i + 6 || code[i] != 0xFF)
            return 0;
        if (code[i + 1] == 0x25) {
            Wide w = {0, uint_at(code + i + 2, 4, 1)};
            *got = w;
            return 1;
        }
        if (code[i + 1] == 0xA3) {
            *got = wide_add(wide_of(got_base, 0), (int32_t)uint_at(code + i + 2, 4, 1));
            return 1;
        }
        return 0;
    }
    /* AArch64: adrp x16, page; ldr x17, [x16, #off] (after a `bti c`) */
    {
        uint64_t adrp, ldr;
        int64_t imm;
        if (len >= 4 && uint_at(code, 4, 1) == 0xD503245Fu) {
            code += 4;
            len -= 4;
            at = wide_add(at, 4);
        }
        if (len < 8)
            return 0;
        adrp = uint_at(code, 4, 1);
        ldr = uint_at(code + 4, 4, 1);
        if ((adrp & 0x9F00001Fu) != 0x90000010u || (ldr & 0xFFC003FFu) != 0xF9400211u)
            return 0;
        imm = (int64_t)((((adrp >> 5) & 0x7FFFF) << 2) | ((adrp >> 29) & 3));
        if (imm & (1 << 20))
            imm -= (int64_t)1 << 21;
        at.lo &= ~(uint64_t)0xFFF;
        *got = wide_add(wide_add(at, imm * 4096), (int64_t)((ldr >> 10) & 0xFFF) * 8);
        return 1;
    }
}

PyDoc_STRVAR(plt_slots_doc,
"plt_slots(data, base, first, slot, kind, got_base) -> list\n\n"
"The GOT slot each stub of a PLT section jumps through (plt.py's\n"
"_*_got_slot): the stubs of `slot` bytes from offset `first` of the\n"
"section's data, at address base + offset; kind 0 x86-64, 1 AArch64, 2\n"
"i386 (got_base: .got.plt's address, for its PIC stubs).  Per stub: the\n"
"slot's address, -1 for one outside 0 to 2**64 (no slot there), None\n"
"where the jump is not decoded.");

static PyObject *
py_plt_slots(PyObject *self, PyObject *args)
{
    Py_buffer data;
    unsigned long long base, got_base;
    Py_ssize_t first, slot, off;
    int kind;
    PyObject *out = NULL;
    if (!PyArg_ParseTuple(args, "y*KnniK:plt_slots", &data, &base, &first, &slot, &kind,
                          &got_base))
        return NULL;
    if (first < 0 || slot <= 0 || kind < PLT_X86_64 || kind > PLT_I386) {
        PyErr_SetString(PyExc_ValueError, "first: 0 or more; slot: positive; kind: 0, 1 or 2");
        goto done;
    }
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    /* (the stubs that fit whole: off + slot <= the data's length) */
    for (off = first; off <= data.len - slot; off += slot) {
        Wide got;
        PyObject *v;
        int r;
        if (!got_slot((const unsigned char *)data.buf + off, slot, wide_of(base, (uint64_t)off),
                      kind, got_base, &got)) {
            Py_INCREF(Py_None);
            v = Py_None;
        }
        else if (got.hi != 0)
            v = PyLong_FromLong(-1);
        else
            v = PyLong_FromUnsignedLongLong(got.lo);
        if (v == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        r = PyList_Append(out, v);
        Py_DECREF(v);
        if (r < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    PyBuffer_Release(&data);
    return out;
}

/* ---------------------------------------------------------- kallsyms */

/* A kallsyms text's kept lines, in text order, laid out as columns of the
 * cache file's image while it is parsed (cap entries each: the text's lines
 * that can hold a symbol, so nothing grows or is copied), and a byte per
 * line of what its module is (module[]).  A name's length and module are
 * not kept: read again from the text where two names are compared. */
#define IN_MODULE 1         /* its name holds a "[" or its line a module */
#define NAMES_MODULE 2      /* its line names a module of one byte or more */

typedef struct {
    const char *text;
    Py_ssize_t len;
    uint64_t *starts, *sizes;
    uint32_t *name_at;
    uint8_t *bindings, *module;
    Py_ssize_t n, cap, bad;
} KallsymsColumns;

static Py_ssize_t
underscores(const char *s, Py_ssize_t len)
{
    Py_ssize_t i = 0;
    while (i < len && s[i] == '_')
        i++;
    return i;
}

static int
starts_with(const char *s, Py_ssize_t len, const char *prefix)
{
    size_t p = strlen(prefix);
    return (size_t)len >= p && memcmp(s, prefix, p) == 0;
}

/* kallsyms.py's _BINDINGS: the kept types and their binding, -1 others. */
static int
kallsyms_binding(char type)
{
    switch (type) {
    case 'T': case 'D': case 'B':
        return STB_GLOBAL;
    case 'W': case 'w':
        return STB_WEAK;
    case 't': case 'd': case 'b':
        return STB_LOCAL;
    default:
        return -1;
    }
}

static int
is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static uint64_t bytes_equal(uint64_t w, unsigned char c);

/* The value of each hexadecimal digit, -1 for any other byte. */
static signed char hex_digit[256];

static void
hex_digits_init(void)
{
    int c;
    for (c = 0; c < 256; c++)
        hex_digit[c] = (signed char)hex_value((char)c);
}

/* Where the first blank (space or tab) of text[p:end] is, or end: eight
 * bytes at a time (a name is ~25), each compared exactly. */
static Py_ssize_t
blank_at(const char *text, Py_ssize_t p, Py_ssize_t end)
{
    for (; p + 8 <= end; p += 8) {
        uint64_t w;
        memcpy(&w, text + p, 8);
        if (bytes_equal(w, ' ') | bytes_equal(w, '\t'))
            break;
    }
    while (p < end && !is_space(text[p]))
        p++;
    return p;
}

/* The length of the module text[p:end] names (what follows a line's name,
 * stripped, where it is "[module]"), -1 for none. */
static Py_ssize_t
module_len(const char *text, Py_ssize_t p, Py_ssize_t end)
{
    while (p < end && is_space(text[p]))
        p++;
    while (end > p && is_space(text[end - 1]))
        end--;
    if (end - p >= 2 && text[p] == '[' && text[end - 1] == ']')
        return end - p - 2;
    return -1;
}

/* The name of kept line i (at name_at[i], up to the next blank) and the
 * length of its module's (-1: none), read again from its line. */
static const char *
kallsyms_name(const KallsymsColumns *c, Py_ssize_t i, Py_ssize_t *len, Py_ssize_t *module)
{
    Py_ssize_t at = c->name_at[i], end;
    const char *nl = memchr(c->text + at, '\n', (size_t)(c->len - at));
    end = nl != NULL ? nl - c->text : c->len;
    *len = blank_at(c->text, at, end) - at;
    *module = module_len(c->text, at + *len, end);
    return c->text + at;
}

/* symtab.choose_by_names over two kallsyms names, each perf's in-band
 * "name\t[module]" where it has a module (its length counts): the one with
 * fewer leading underscores, else the longer, else the first unless it is
 * a "SyS" syscall alias.  (The marker follows a tab, so the underscores and
 * the prefixes are the name's own.) */
static int
kallsyms_choice(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t na, nb, ma, mb, ua, ub, la, lb;
    const char *sa = kallsyms_name(ctx, a, &na, &ma), *sb = kallsyms_name(ctx, b, &nb, &mb);
    ua = underscores(sa, na);
    ub = underscores(sb, nb);
    la = na + (ma >= 0 ? ma + 3 : 0);
    lb = nb + (mb >= 0 ? mb + 3 : 0);
    if (ub > ua)
        return 1;
    if (ua > ub)
        return 0;
    if (la != lb)
        return la > lb;
    return !(starts_with(sa, na, "SyS") || starts_with(sa, na, "compat_SyS"));
}

/* One line, text[at:end] (no newline): kallsyms._columns' rules.  Returns
 * 0 (kept, skipped or counted bad), 1 where the Python parse must decide
 * (an address that is not 1-16 hexadecimal digits). */
static int
parse_line(const char *text, Py_ssize_t at, Py_ssize_t end, KallsymsColumns *c)
{
    Py_ssize_t tok[3][2], i, p = at, module;
    uint64_t addr = 0;
    int binding, ntok = 0;
    /* A line as the kernel writes it, "%016lx %c %s...": its tokens where
     * the loop below would find them, without looking for them. */
    if (end - at >= 20 && text[at + 16] == ' ' && !is_space(text[at + 17]) &&
            text[at + 18] == ' ' && !is_space(text[at + 19])) {
        int bad = 0;
        for (i = at; i < at + 16; i++) {
            int v = hex_digit[(unsigned char)text[i]];
            bad |= v;                   /* (-1 sets every bit) */
            addr = (addr << 4) | (uint64_t)(v & 15);
        }
        if (bad < 0)
            return 1;
        tok[0][0] = at;
        tok[0][1] = at + 16;
        tok[1][0] = at + 17;
        tok[1][1] = at + 18;
        tok[2][0] = at + 19;
        tok[2][1] = p = blank_at(text, at + 19, end);
        goto tokens;
    }
    for (; ntok < 3; ntok++) {
        while (p < end && is_space(text[p]))
            p++;
        if (p == end)
            break;
        tok[ntok][0] = p;
        while (p < end && !is_space(text[p]))
            p++;
        tok[ntok][1] = p;
    }
    if (ntok < 3 || tok[1][1] - tok[1][0] != 1) {
        if (ntok > 0)           /* a line of more than blanks */
            c->bad++;
        return 0;
    }
    if (tok[0][1] - tok[0][0] > 16)
        return 1;
    for (i = tok[0][0]; i < tok[0][1]; i++) {
        int v = hex_value(text[i]);
        if (v < 0)
            return 1;
        addr = (addr << 4) | (uint64_t)v;
    }
tokens:
    binding = kallsyms_binding(text[tok[1][0]]);
    if (binding < 0)
        return 0;               /* perf keeps types T, W, D and B only */
    if (tok[2][1] - tok[2][0] >= KSYM_NAME_LEN) {
        c->bad++;
        return 0;
    }
    /* (a kept line has five bytes or more: count_lines gave it room) */
    if (c->n >= c->cap)
        return 1;
    c->starts[c->n] = addr;
    c->bindings[c->n] = (uint8_t)binding;
    c->name_at[c->n] = (uint32_t)tok[2][0];
    module = module_len(text, p, end);
    c->module[c->n] = module >= 0 ? IN_MODULE | (module > 0 ? NAMES_MODULE : 0) :
        memchr(text + tok[2][0], '[', (size_t)(tok[2][1] - tok[2][0])) != NULL;
    c->n++;
    return 0;
}

static int
is_printable(unsigned char c)
{
    return (c >= 0x20 && c <= 0x7E) || c == '\t' || c == '\n';
}

/* The high bit of each byte of w that equals c (exactly: adding 0x7F to a
 * byte's low seven bits carries into its high bit, never into the next
 * byte's). */
static uint64_t
bytes_equal(uint64_t w, unsigned char c)
{
    const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7F7F7F7F7F7F7F7FULL;
    uint64_t x = w ^ (ones * c);
    return ~(((x & low7) + low7) | x) & ~low7;
}

/* Whether text[0:len] is printable ASCII, tabs and newlines: eight bytes
 * at a time, tabs and newlines made spaces, then each byte's high bit set
 * where it is below 0x20 or 0x7F and above (exactly, as bytes_equal). */
static int
all_printable(const char *text, Py_ssize_t len)
{
    const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7F7F7F7F7F7F7F7FULL;
    Py_ssize_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w, blank, low;
        memcpy(&w, text + i, 8);
        blank = bytes_equal(w, '\t') | bytes_equal(w, '\n');
        w += (blank >> 7) * 0x17;       /* (0x09, 0x0A -> 0x20, 0x21) */
        /* (below 0x20: high bit clear, low seven bits + 0x60 do not carry;
         * 0x7F and above: high bit set, or low seven bits + 1 carry) */
        low = ~(((w & low7) + ones * 0x60) | w) & ~low7;
        if ((low | w | ((w & low7) + ones)) & ~low7)
            return 0;
    }
    for (; i < len; i++)
        if (!is_printable((unsigned char)text[i]))
            return 0;
    return 1;
}

/* How many of the text's lines could hold a symbol: five bytes or more
 * ("0 T x"). */
static Py_ssize_t
count_lines(const char *text, Py_ssize_t len)
{
    Py_ssize_t at = 0, n = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', (size_t)(len - at));
        Py_ssize_t end = nl != NULL ? nl - text : len;
        n += end - at >= 5;
        at = end + 1;
    }
    return n;
}

/* The text's lines parsed into c: 0, 1 where the Python parse must take
 * the text. */
static int
parse_lines(KallsymsColumns *c)
{
    Py_ssize_t at = 0;
    while (at < c->len) {
        const char *nl = memchr(c->text + at, '\n', (size_t)(c->len - at));
        Py_ssize_t end = nl != NULL ? nl - c->text : c->len;
        int r = parse_line(c->text, at, end, c);
        if (r != 0)
            return r;
        at = end + 1;
    }
    return 0;
}

/* The kept lines put in the order of their starts (stable, as the Python
 * parse sorts them), where they are not in it already (a kernel's own
 * symbols are; its modules' follow in their own order).  0, or -1 out of
 * memory. */
static int
sort_columns(KallsymsColumns *c)
{
    Py_ssize_t i, n = c->n, *order, *tmp;
    uint64_t *u64;
    uint32_t *u32;
    uint8_t *u8;
    for (i = 1; i < n && c->starts[i - 1] <= c->starts[i]; i++)
        ;
    if (i >= n)
        return 0;
    order = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    tmp = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    if (order == NULL || tmp == NULL) {
        PyMem_Free(order);
        PyMem_Free(tmp);
        return -1;
    }
    for (i = 0; i < n; i++)
        order[i] = i;
    sort_by_key(order, tmp, n, c->starts);
    /* (tmp, free again, holds each column in order while it is copied back) */
    u64 = (uint64_t *)tmp;
    for (i = 0; i < n; i++)
        u64[i] = c->starts[order[i]];
    memcpy(c->starts, u64, (size_t)n * 8);
    u32 = (uint32_t *)tmp;
    for (i = 0; i < n; i++)
        u32[i] = c->name_at[order[i]];
    memcpy(c->name_at, u32, (size_t)n * 4);
    u8 = (uint8_t *)tmp;
    for (i = 0; i < n; i++)
        u8[i] = c->bindings[order[i]];
    memcpy(c->bindings, u8, (size_t)n);
    for (i = 0; i < n; i++)
        u8[i] = c->module[order[i]];
    memcpy(c->module, u8, (size_t)n);
    PyMem_Free(order);
    PyMem_Free(tmp);
    return 0;
}

/* A kept symbol's flags byte in kallsyms.py's cache file: its binding
 * (bits 0-1), 8 where it has a module's name. */
#define KSYM_MODULE 8

/* A kallsyms text parsed as kallsyms.py's cache file holds its table (its
 * header and the identity left to Python: head and tail bytes of room) into
 * o, of head + 21 * cap + tail bytes (cap: count_lines'): the kept
 * symbols' starts and sizes (native unsigned 64-bit), where each one's name
 * is in the text (native unsigned 32-bit: the text is under 4 GiB) and a
 * flags byte each; the names and modules stay in the text.  The columns are
 * laid out for every line that could be kept, fixed up there, then moved
 * down to the symbols kept: o is the parse's one large piece of memory (on
 * this project's machines each page a process touches for the first time
 * costs as much as parsing 200 lines; kallsyms.py hands over the cache
 * file itself, mapped, so that the table is not written twice).  Returns
 * how many are kept (*bad: the malformed lines; *all_zero), -1 with an
 * exception set, -2 for a text the Python parse must read. */
static Py_ssize_t
kallsyms_table(const char *text, Py_ssize_t len, Py_ssize_t cap, char *image, Py_ssize_t head,
               Py_ssize_t tail, Py_ssize_t *bad, int *all_zero)
{
    KallsymsColumns c;
    Py_ssize_t kept = -1, i, k;
    uint8_t *keep = NULL;
    char *o = image + head;
    c.module = PyMem_Malloc(cap ? (size_t)cap : 1);
    keep = PyMem_Malloc(cap ? (size_t)cap : 1);
    if (c.module == NULL || keep == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    c.text = text;
    c.len = len;
    c.starts = (uint64_t *)o;
    c.sizes = (uint64_t *)(o + 8 * cap);
    c.name_at = (uint32_t *)(o + 16 * cap);
    c.bindings = (uint8_t *)(o + 20 * cap);
    c.n = 0;
    c.cap = cap;
    c.bad = 0;
    if (parse_lines(&c) > 0) {
        kept = -2;
        goto done;
    }
    *bad = c.bad;
    *all_zero = c.n > 0;
    for (i = 0; i < c.n && *all_zero; i++)
        *all_zero = c.starts[i] == 0;
    if (*all_zero) {
        kept = 0;
        goto done;
    }
    if (sort_columns(&c) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    kept = fixup(c.n, c.starts, NULL, c.bindings, c.module, kallsyms_choice, &c, NULL,
                 c.sizes, keep);
    if (kept < 0)
        goto done;
    /* The kept symbols' columns (fixup put their sizes first), then each
     * moved down to where kept symbols' columns are (each to below its
     * own place, past the columns before it). */
    for (i = 0, k = 0; i < c.n; i++) {
        if (keep[i]) {
            c.starts[k] = c.starts[i];
            c.name_at[k] = c.name_at[i];
            c.bindings[k] = (uint8_t)(c.bindings[i] |
                                      (c.module[i] & NAMES_MODULE ? KSYM_MODULE : 0));
            k++;
        }
    }
    memmove(o + 8 * kept, c.sizes, (size_t)kept * 8);
    memmove(o + 16 * kept, c.name_at, (size_t)kept * 4);
    memmove(o + 20 * kept, c.bindings, (size_t)kept);
    memset(image, 0, (size_t)head);
    memset(o + 21 * kept, 0, (size_t)tail);
done:
    PyMem_Free(c.module);
    PyMem_Free(keep);
    return kept;
}

/* The room parse_kallsyms lays a text out in: head + 21 * (its lines of
 * five bytes or more) + tail, or -1 (past PY_SSIZE_T_MAX). */
static Py_ssize_t
kallsyms_room(const char *text, Py_ssize_t len, Py_ssize_t head, Py_ssize_t tail,
              Py_ssize_t *cap)
{
    *cap = count_lines(text, len);
    if (*cap > (PY_SSIZE_T_MAX - head - tail) / 21)
        return -1;
    return head + 21 * *cap + tail;
}

PyDoc_STRVAR(parse_kallsyms_doc,
"parse_kallsyms(text, head, tail[, out]) -> tuple | None\n\n"
"A kallsyms text (bytes) parsed and fixed up as KernelSymbols.parse does,\n"
"in the layout of kallsyms.py's cache file: (malformed lines, every address\n"
"0, symbols kept, then, unless every address is 0, a bytearray: head bytes\n"
"of room, the starts and sizes (native unsigned 64-bit), where each name is\n"
"in the text (native unsigned 32-bit), a flags byte per symbol (its\n"
"binding; 8: a module), tail bytes of room).  head: a multiple of 8.  With\n"
"out (a writable buffer of kallsyms_room(text, head, tail) bytes or more,\n"
"8-aligned: a file mapped), laid out there instead, the fourth item None\n"
"(what follows the tail's room up to the room's end: not the table's).\n"
"None for a text the\n"
"Python parse must read: a byte other than printable ASCII, tab and\n"
"newline, an address other than 1-16 hexadecimal digits, or 4 GiB or more.");

static int
room_checked(Py_ssize_t head, Py_ssize_t tail)
{
    /* (head a multiple of 8: the columns of 64-bit numbers are aligned) */
    if (head < 0 || tail < 0 || head > (1 << 20) || tail > (1 << 20) || head % 8) {
        PyErr_SetString(PyExc_ValueError, "head and tail: 0 to 1 MiB, head a multiple of 8");
        return -1;
    }
    return 0;
}

static PyObject *
py_parse_kallsyms(PyObject *self, PyObject *args)
{
    Py_buffer text, out = {NULL, NULL};
    PyObject *image = NULL, *result = NULL;
    Py_ssize_t head, tail, cap, room, kept, bad = 0;
    int all_zero = 0;
    if (!PyArg_ParseTuple(args, "y*nn|w*:parse_kallsyms", &text, &head, &tail, &out))
        return NULL;
    if (room_checked(head, tail) < 0)
        goto done;
    /* (the names' places are 32-bit offsets) */
    if (text.len > (Py_ssize_t)0xFFFFFFFF || !all_printable((const char *)text.buf, text.len)) {
        Py_INCREF(Py_None);
        result = Py_None;       /* Python's splitlines and split decide */
        goto done;
    }
    room = kallsyms_room((const char *)text.buf, text.len, head, tail, &cap);
    if (room < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (out.buf != NULL) {
        if (out.len < room || (uintptr_t)out.buf % 8) {
            PyErr_Format(PyExc_ValueError, "out: %zd bytes, %zd needed, 8-aligned", out.len,
                         room);
            goto done;
        }
    }
    else {
        image = PyByteArray_FromStringAndSize(NULL, room);
        if (image == NULL)
            goto done;
    }
    kept = kallsyms_table((const char *)text.buf, text.len, cap,
                          image != NULL ? PyByteArray_AS_STRING(image) : (char *)out.buf, head,
                          tail, &bad, &all_zero);
    if (kept == -1)
        goto done;
    if (kept == -2) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    if (all_zero) {
        result = Py_BuildValue("nin", bad, 1, (Py_ssize_t)0);
        goto done;
    }
    if (image != NULL && PyByteArray_Resize(image, head + 21 * kept + tail) < 0)
        goto done;
    result = Py_BuildValue("ninO", bad, 0, kept, image != NULL ? image : Py_None);
done:
    Py_XDECREF(image);
    if (out.buf != NULL)
        PyBuffer_Release(&out);
    PyBuffer_Release(&text);
    return result;
}

PyDoc_STRVAR(kallsyms_room_doc,
"kallsyms_room(text, head, tail) -> int\n\n"
"The bytes parse_kallsyms(text, head, tail, out) lays the table out in.");

static PyObject *
py_kallsyms_room(PyObject *self, PyObject *args)
{
    Py_buffer text;
    Py_ssize_t head, tail, cap, room = -1;
    if (!PyArg_ParseTuple(args, "y*nn:kallsyms_room", &text, &head, &tail))
        return NULL;
    if (room_checked(head, tail) == 0) {
        room = kallsyms_room((const char *)text.buf, text.len, head, tail, &cap);
        if (room < 0)
            PyErr_NoMemory();
    }
    PyBuffer_Release(&text);
    return room < 0 ? NULL : PyLong_FromSsize_t(room);
}

static PyMethodDef methods[] = {
    {"fixup", py_fixup, METH_VARARGS, fixup_doc},
    {"demangler", py_demangler, METH_O, demangler_doc},
    {"relocs", py_relocs, METH_VARARGS, relocs_doc},
    {"plt_slots", py_plt_slots, METH_VARARGS, plt_slots_doc},
    {"read_symbols", py_read_symbols, METH_VARARGS, read_symbols_doc},
    {"parse_kallsyms", py_parse_kallsyms, METH_VARARGS, parse_kallsyms_doc},
    {"kallsyms_room", py_kallsyms_room, METH_VARARGS, kallsyms_room_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_symtab",
    "The first run's symbol tables in C: perf's fixups, ELF symbol sections, kallsyms.",
    -1, methods
};

PyMODINIT_FUNC
PyInit__symtab(void)
{
    PyObject *m;
    hex_digits_init();
    m = PyModule_Create(&module);
    /* (what this build's entry points are: compiled.py takes no other, so
     * that a module built from older sources falls back to Python) */
    if (m != NULL && PyModule_AddIntConstant(m, "VERSION", SYMTAB_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
