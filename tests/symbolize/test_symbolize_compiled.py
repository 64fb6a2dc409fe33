"""The compiled symbol tables (symbolize/symbols/_symtab.c) against the
pure-Python reference (PERFDATA_CORE=pure): the same tables, the same
warnings and the same cache files, from real binaries (libc and its debug
file, cc1, this Python, ld.so), the kernel's kallsyms, and hostile input
(symbol sections and kallsyms texts with bytes changed at random).  And the
C reads the fields where pyelftools' Elf_Sym struct puts them: its symbols
are the ones pyelftools parses, filtered by perf's rules.

The comparisons (compare_elf, compare_kallsyms, compare_fixup) and the
mutators are also run under AddressSanitizer by tools/fuzz_compiled.py."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from contextlib import contextmanager

import pytest

from symbolize import Binary
from symbolize.cachedir import CacheDir
from symbolize.symbols import kallsyms
from symbolize.symbols.compiled import symtab_core
from symbolize.symbols.elfsymbols import read_symbol_columns
from symbolize.symbols.fixups import fixup_columns
from symbolize.symbols.symtab import build_symbol_table

pytestmark = pytest.mark.skipif(symtab_core() is None,
                                reason="symbolize.symbols._symtab is not built")


@contextmanager
def _path(pure: bool):
    """Run with the pure-Python path (PERFDATA_CORE=pure) or the compiled."""
    saved = os.environ.get("PERFDATA_CORE")
    if pure:
        os.environ["PERFDATA_CORE"] = "pure"
    else:
        os.environ.pop("PERFDATA_CORE", None)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PERFDATA_CORE", None)
        else:
            os.environ["PERFDATA_CORE"] = saved


def _both(make):
    """(make() on the pure path, make() on the compiled)."""
    out = []
    for pure in (True, False):
        with _path(pure):
            out.append(make())
    return out[0], out[1]


# ------------------------------------------------------------------ ELF

def elf_state(path: str, objects: bool, demangled: str) -> tuple:
    """What a binary's table is, everything a run can see of it: the cache
    file's bytes, every symbol, the bindings, the warnings of the reading."""
    binary = Binary(path)
    table = build_symbol_table(binary, objects=objects, demangled=demangled)
    bindings = bytes(table.binding(s.start) for s in table)
    columns = {}
    if binary.ok:
        for section in (".symtab", ".dynsym"):
            # (each column's values: the compiled reader's numbers are arrays)
            columns[section] = [list(c) for c in
                                read_symbol_columns(binary, section, "x", objects)]
    return (table.to_bytes(), list(table), bindings, columns,
            list(getattr(binary, "warnings", [])))


def compare_elf(path: str, modes=(("p", False), ("s", True), ("", False))) -> int:
    """Both paths on one file, in each (naming mode, objects); the symbols
    compared (for the callers' counts).  An AssertionError on a difference."""
    count = 0
    for demangled, objects in modes:
        pure, compiled = _both(lambda: elf_state(path, objects, demangled))
        assert pure == compiled, (path, demangled, objects)
        count += len(pure[1])
    return count


def _real_binaries() -> list[str]:
    paths = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
             "/lib/aarch64-linux-gnu/libc.so.6", sys.executable]
    libpython = [p for p in _mapped() if "libpython" in p]
    paths += libpython[:1]
    gcc = shutil.which("gcc")
    if gcc:
        paths.append(subprocess.run([gcc, "-print-prog-name=cc1"], capture_output=True,
                                    text=True).stdout.strip())
    real = sorted({os.path.realpath(p) for p in paths if p and os.path.isfile(p)})
    debug = []
    for p in real:
        bid = Binary(p).build_id
        if bid:
            debug.append(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")
    return real + [p for p in debug if os.path.isfile(p)]


def _mapped() -> list[str]:
    with open("/proc/self/maps") as f:
        return [line.split()[-1] for line in f if line.rstrip().endswith(".so") or ".so." in line]


def test_real_binaries_give_the_same_tables():
    """libc (and its debug file's .symtab of 10,000 entries), ld.so, cc1
    (27,000 .dynsym entries), this Python: the same table from both paths
    in every naming mode, with and without data objects."""
    counted = sum(compare_elf(p) for p in _real_binaries())
    assert counted > 3000 or pytest.skip("no real binary with symbols here")


_ENUMS = None


def _pyelftools_symbols(path: str, section: str, objects: bool) -> list[tuple]:
    """The symbols of a section as pyelftools parses them (its own Elf_Sym
    struct, entry by entry), kept by perf's rules: the C must read the same
    fields from the same places."""
    from elftools.elf import enums
    from elftools.elf.elffile import ELFFile

    def value(v, table):
        return table[v] if isinstance(v, str) else v

    out = []
    with open(path, "rb") as f:
        elf = ELFFile(f)
        sec = elf.get_section_by_name(section)
        if sec is None or not hasattr(sec, "iter_symbols"):     # (NOBITS in a debug file)
            return []
        headers = [(s["sh_flags"], s.name) for s in elf.iter_sections()]
        arm = elf["e_machine"] in ("EM_ARM", "EM_AARCH64")
        for sym in sec.iter_symbols():
            typ = value(sym["st_info"]["type"], enums.ENUM_ST_INFO_TYPE)
            bind = value(sym["st_info"]["bind"], enums.ENUM_ST_INFO_BIND)
            shndx = value(sym["st_shndx"], enums.ENUM_ST_SHNDX)
            vis = value(sym["st_other"]["visibility"], enums.ENUM_ST_VISIBILITY) & 3
            if sym["st_name"] == 0 or shndx == 0 or shndx >= 0xFF00:
                continue
            label = typ == 0
            if label and vis in (1, 2):
                continue
            if not label and typ not in (2, 10) and not (objects and typ == 1):
                continue
            if shndx >= len(headers) or not headers[shndx][0] & 2:      # SHF_ALLOC
                continue
            if label and "text" not in headers[shndx][1]:
                continue
            name = sym.name
            if arm and name[:1] == "$" and name[1:2] in ("a", "d", "t", "x") and \
                    (len(name) == 2 or name[2] == "."):
                continue
            out.append((name, sym["st_value"], sym["st_size"], bind, typ))
    return out


@pytest.mark.parametrize("section", [".symtab", ".dynsym"])
def test_the_compiled_reader_reads_what_pyelftools_parses(section):
    """The fields' offsets and widths the C is handed come from pyelftools'
    struct: the symbols it keeps are pyelftools' own parse of each entry,
    filtered as perf filters them (names that decode as UTF-8)."""
    checked = 0
    for path in _real_binaries():
        if os.path.getsize(path) > 64 << 20:
            continue
        for objects in (False, True):
            with _path(pure=False):
                c = read_symbol_columns(Binary(path), section, "x", objects)
            got = list(zip(c.names, c.starts, c.sizes, c.bindings, c.types))
            want = _pyelftools_symbols(path, section, objects)
            assert got == want, (path, section, objects)
            checked += len(got)
    assert checked > 1000 or pytest.skip("no real binary with a %s here" % section)


def mutate_elf(data: bytes, rng: random.Random) -> bytes:
    """An ELF file with hostile bytes where the symbol tables are read: in
    the symbol and string sections, in their section headers (offset, size,
    link, entry size), or anywhere."""
    import struct
    buf = bytearray(data)
    if buf[4] != 2 or buf[5] != 1:          # (64-bit little-endian files only)
        return bytes(buf)
    shoff, = struct.unpack_from("<Q", buf, 0x28)
    shnum, = struct.unpack_from("<H", buf, 0x3C)
    sections = []
    for i in range(shnum):
        at = shoff + 64 * i
        if at + 64 > len(buf):
            break
        sh_type, = struct.unpack_from("<I", buf, at + 4)
        off, size = struct.unpack_from("<QQ", buf, at + 24)
        sections.append((at, sh_type, off, size))
    symbolish = [s for s in sections if s[1] in (2, 3, 11)] or sections   # SYMTAB STRTAB DYNSYM
    for _ in range(rng.randint(1, 6)):
        kind = rng.random()
        if kind < 0.6 and symbolish:
            _, _, off, size = rng.choice(symbolish)
            if size and off < len(buf):
                at = off + rng.randrange(min(size, len(buf) - off))
                width = rng.choice((1, 1, 2, 4, 8))
                buf[at:at + width] = rng.randbytes(len(buf[at:at + width]))
        elif kind < 0.85 and symbolish:
            at = rng.choice(symbolish)[0]
            field, width = rng.choice(((16, 8), (24, 8), (32, 8), (40, 4), (44, 4), (56, 8)))
            value = rng.choice((0, 1, 7, 24, 0xFFFF, 0xFFFFFFFF, (1 << 63),
                                rng.getrandbits(8 * width)))
            struct.pack_into("<" + {4: "I", 8: "Q"}[width], buf, at + field,
                             value & ((1 << (8 * width)) - 1))
        else:
            at = rng.randrange(len(buf))
            buf[at] = rng.randrange(256)
    return bytes(buf)


def test_hostile_symbol_sections_give_the_same_tables(tmp_path):
    """Files with their symbol tables, string tables and section headers
    damaged at random: both paths give the same table and warnings."""
    sources = [p for p in _real_binaries() if os.path.getsize(p) < 8 << 20][:3]
    if not sources:
        pytest.skip("no small real binary here")
    rng = random.Random(33)
    for k in range(60):
        data = mutate_elf(open(rng.choice(sources), "rb").read(), rng)
        path = tmp_path / ("m%d" % k)
        path.write_bytes(data)
        compare_elf(str(path), modes=(("p", k % 2 == 0),))


def test_read_symbols_refuses_fields_outside_the_entry():
    core = symtab_core()
    good = ((0, 4), (8, 8), (16, 8), (4, 1), (5, 1), (6, 2))
    core.read_symbols(bytes(48), b"\0a\0", good, 24, True, b"\3", False, False)
    for fields in (good[:5], ((0, 4), (8, 8), (20, 8), (4, 1), (5, 1), (6, 2)),
                   ((0, 3), (8, 8), (16, 8), (4, 1), (5, 1), (6, 2)),
                   ((-1, 4), (8, 8), (16, 8), (4, 1), (5, 1), (6, 2))):
        with pytest.raises(ValueError):
            core.read_symbols(bytes(48), b"\0a\0", fields, 24, True, b"\3", False, False)
    with pytest.raises(ValueError):
        core.read_symbols(bytes(48), b"\0a\0", good, 0, True, b"\3", False, False)


# ---------------------------------------------------------------- fixup

# Names of each kind C compares itself or leaves to Python: plain, with
# underscores, perf's "SyS" rule (a C++ class named SyS demangles to it),
# C++ names (one not demangled), with a version suffix, Rust legacy (the
# "17h" of its hash) and v0, the prefixes demangle.py tells apart, not ASCII.
_FIXUP_NAMES = ("f", "_f", "__f", "SyS_f", "compat_SyS_g", "_ZN1a1bEv", "_ZN1a1cEv", "_ZN1aC1Ev",
                "_ZN1aC2Ev", "_ZN3SySC1Ev", "_ZN3SySC2Ev", "_ZN4_abc1fEv", "_Z1fIiEvT_", "_Zxx",
                "_Z1fv@@GLIBC_2.2.5", "_ZN4core3fmt5write17h0123456789abcdefE",
                "_ZN1a17h0123456789abcdeE", "_RNvC1a1f", "__RNvC1a1f", "___Z1fv", "__ZN1a1bEv",
                "__Z1fv", "longer_name", "f@plt", "", "é", "_ZN1\u00e91fEv")


def compare_fixup(rng: random.Random, n: int) -> None:
    """fixup_columns on a random table (shared addresses, sizes of 0,
    weak, local and global aliases, mangled and underscored names) the
    same on both paths, names compared as read and demangled."""
    starts = [rng.choice((0, 16, 4096, 4097, rng.randrange(1 << 20), (1 << 64) - 1))
              for _ in range(n)]
    sizes = [rng.choice((0, 0, 1, 16, rng.randrange(1 << 12))) for _ in range(n)]
    bindings = [rng.choice((0, 1, 2, 10)) for _ in range(n)]
    names = [rng.choice(_FIXUP_NAMES) for _ in range(n)]
    sources = [rng.choice(("symtab", "plt")) for _ in range(n)]
    for demangled in ("", "p", "s"):
        pure, compiled = _both(lambda: [list(column) for column in fixup_columns(
            list(starts), list(sizes), list(bindings), list(names), list(sources),
            demangled=demangled)])
        assert pure == compiled, (starts, sizes, bindings, names, demangled)


def test_fixup_of_random_tables():
    rng = random.Random(7)
    for k in range(400):
        compare_fixup(rng, rng.choice((1, 2, 3, 8, 40, 300)))


def test_fixup_leaves_values_beyond_64_bits_to_python():
    """A table made by hand may hold any int: the pure path takes it."""
    starts, sizes = [1 << 64, 5, -1], [0, 0, 0]
    pure, compiled = _both(lambda: [list(c) for c in fixup_columns(starts, sizes, [1, 1, 1],
                                                                   ["a", "b", "c"])])
    assert pure == compiled


# ------------------------------------------------------------- kallsyms

def kallsyms_state(text, cache_dir) -> tuple:
    """Everything a table parsed from a kallsyms text shows: its symbols,
    bindings, kernel bounds, warnings, and the cache file it is saved as."""
    table = kallsyms.KernelSymbols.parse(text, source="k")
    syms = list(table)
    bindings = [table.binding(s.start) for s in syms]
    saved = None
    if len(table) and not table.warnings:
        cache = CacheDir(str(cache_dir))
        kallsyms._save_cached("id", table, cache)
        with open(cache.file(kallsyms._cache_file("id")), "rb") as f:
            saved = f.read()
    return syms, bindings, table.kernel_bounds(), table.warnings, saved


def compare_kallsyms(text, cache_dir) -> int:
    """Both paths on one text (str or bytes); the symbols compared."""
    os.makedirs(cache_dir, exist_ok=True)
    pure, compiled = _both(lambda: kallsyms_state(text, cache_dir))
    assert pure == compiled, text[:2000]
    return len(pure[0])


def _kallsyms_texts() -> list[bytes]:
    texts = []
    for path in ["/proc/kallsyms"] + sorted(
            __import__("glob").glob(os.path.expanduser("~/.debug/[[]kernel.kallsyms[]]/*/kallsyms"))
    )[:2]:
        try:
            with open(path, "rb") as f:
                texts.append(f.read())
        except OSError:
            pass
    return texts


SYNTHETIC = (
    b"ffffffff81000000 T _stext\n"
    b"ffffffff81000000 T startup_64\n"
    b"ffffffff81000000 t __pfx_startup_64\n"
    b"ffffffff81000010 W weak_one\n"
    b"ffffffff81000010 T strong_one\n"
    b"ffffffff81000010 t _local_one\n"
    b"ffffffff81000020 T SyS_read\n"
    b"ffffffff81000020 T sys_read\n"
    b"ffffffff81000030 T compat_SyS_x\n"
    b"ffffffff81000030 T compat_sys_x\n"
    b"ffffffff81000040 D some_data\n"
    b"ffffffff81000050 B some_bss\n"
    b"ffffffff81000060 R rodata_skipped\n"
    b"ffffffff81000070 b local_bss\n"
    b"ffffffff81000080 d local_data\n"
    b"ffffffff81000090 w weak_local\n"
    b"\n"
    b"   \t  \n"
    b"ffffffff81000100 T\n"
    b"ffffffff81000100 TT two_letters\n"
    b"ffffffffc0000000 t mod_fn\t[mymod]\n"
    b"ffffffffc0000000 t mod_alias\t[mymod]\n"
    b"ffffffffc0000040 t mod_fn2 [mymod]   \n"
    b"ffffffffc0001000 t empty_marker\t[]\n"
    b"ffffffffc0002000 t half_marker\t[nobracket\n"
    b"ffffffffc0003000 t name[with]bracket\n"
    b"ffffffffc0004000 t spaced\t[a b]\n"
    b"ffffffff81000200 T after_modules\n"
    b"0000000000000000 A absolute_skipped\n"
    b"ffffffff81000300 t " + b"x" * 511 + b"\n"
    b"ffffffff81000310 t " + b"y" * 512 + b"\n"
    b"FFFFFFFF81000400 T upper_hex\n"
    b"1 T tiny_address\n"
    b"ffffffff81000500 T last_one"
)


def test_kallsyms_of_this_kernel_the_same():
    """/proc/kallsyms and perf's saved copies: the same table, bindings,
    bounds and cache file from both paths."""
    texts = _kallsyms_texts()
    if not texts:
        pytest.skip("no kallsyms readable here")
    for text in texts:
        compare_kallsyms(text, "/tmp/%d-kallsyms-cache" % os.getpid())
    shutil.rmtree("/tmp/%d-kallsyms-cache" % os.getpid(), ignore_errors=True)


def test_kallsyms_files_cached_the_same(tmp_path):
    """from_file: the cache file the compiled parse lays out as it parses
    (header, columns, identity) is the pure path's, byte for byte, and
    reads back to the same table."""
    texts = [t[:300_000] for t in _kallsyms_texts()] + [SYNTHETIC]
    for k, text in enumerate(texts):
        path = tmp_path / ("kallsyms%d" % k)
        path.write_bytes(text)
        got = []
        for pure in (True, False):
            cache_dir = tmp_path / ("cache%d%d" % (k, pure))
            with _path(pure):
                table = kallsyms.KernelSymbols.from_file(str(path), CacheDir(str(cache_dir)))
                again = kallsyms.KernelSymbols.from_file(str(path), CacheDir(str(cache_dir)))
            files = sorted(p for p in cache_dir.rglob("kallsyms-*"))
            got.append((list(table), table.warnings, list(again),
                        [p.read_bytes() for p in files]))
        assert got[0] == got[1]
        assert got[0][3] or got[0][1], "no cache file written"


@pytest.mark.parametrize("text", [
    SYNTHETIC,
    SYNTHETIC.decode(),
    b"",
    b"\n\n",
    b"0000000000000000 T a\n0000000000000000 t b\n",          # kptr_restrict
    b"0 T a\n0 t b\nzz T bad\n",
    b"0x10 T hex_prefix\n20 T b\n",                          # int(, 16) takes 0x: Python decides
    b"10 T a\n+20 T plus\n1_0 T underscore\n",
    b"10000000000000000 T seventeen_digits\n10 T b\n",
    b"00000000000000010 T leading_zero\n",
    b"30 T c\n20 T b\n10 T a\n20 t b2\n",                    # out of order (modules)
    b"10 T a\r\n20 T b\r\n",
    b"10 T a\x0b20 T b\n",
    b"10 T caf\xc3\xa9\n20 T b\n",
    b"10 T bad\xff\n20 T b\n",
    b"10 T a\x7f\n",
    b"ffffffffffffffff T top\n",
    b"fffffffffffff000 T near_top\nfffffffffffffff0 T a [m]\n",
    # the kernel's own form, which C reads at fixed places, and near misses
    b"ffffffff8100000g T bad_digit\nffffffff81000000 T a\n",
    b" fffffff81000000 T leading_blank\nffffffff81000010 T b\n",
    b"ffffffff81000000 T  two_blanks\nffffffff81000000 T\ttab\n",
    b"ffffffff81000000 T name extra words [m]\nffffffff81000000 T name_a_bit_longer_still\n",
    b"ffffffff81000000 t x\tyy\n", b"ffffffff81000000 T 0123456789abcdef\t[m o d]\t\n",
], ids=lambda t: repr(t[:24]))
def test_kallsyms_edge_cases_the_same(text, tmp_path):
    compare_kallsyms(text, str(tmp_path))


def kernel_with_modules(rng: random.Random) -> bytes:
    """A kallsyms text as a kernel with modules writes it: the kernel's own
    symbols in order (aliases at one address among them), then each
    module's in its own order, not the addresses' (the compiled parse sorts
    those columns in place), with "\t[module]" markers, then BPF's."""
    lines, at = [], 0xffffffff81000000
    for i in range(3000):
        at += rng.choice((0, 0x10, 0x40, 0x1000))
        kind = rng.choice("TTtttWDdbB")
        lines.append(b"%016x %s %s%s" % (at, kind.encode(), rng.choice((b"", b"_", b"__")),
                                         b"sym%d" % i))
    for m in range(6):
        base = 0xffffffffc0000000 + m * 0x10000 + rng.randrange(4) * 0x10
        syms = [b"%016x %s m%d_%d\t[mod%d]" % (base + rng.randrange(0x800) * 0x10,
                                               rng.choice(b"tTdbw").to_bytes(1, "little"),
                                               m, j, m) for j in range(200)]
        rng.shuffle(syms)
        lines.extend(syms)
    lines += [b"%016x t bpf_prog_%d\t[bpf]" % (0xffffffffa0000000 + i * 0x40, i)
              for i in range(40, 0, -1)]
    return b"\n".join(lines) + b"\n"


def test_kallsyms_of_a_kernel_with_modules_the_same(tmp_path):
    rng = random.Random(5)
    for _ in range(4):
        assert compare_kallsyms(kernel_with_modules(rng), str(tmp_path)) > 3000


def mutate_kallsyms(text: bytes, rng: random.Random) -> bytes:
    """A kallsyms text with hostile changes: bytes changed, whitespace and
    brackets put in, lines cut, doubled or moved, addresses made equal."""
    lines = text.split(b"\n")
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(lines))
        line = bytearray(lines[i])
        kind = rng.random()
        if kind < 0.3 and line:
            line[rng.randrange(len(line))] = rng.choice(b" \t[]_0aZT\x00\xff\x0b\rx")
        elif kind < 0.45:
            lines.insert(rng.randrange(len(lines)), bytes(line))
        elif kind < 0.6 and len(lines) > 1:
            lines.insert(rng.randrange(len(lines)), lines.pop(i))
        elif kind < 0.7:
            j = rng.randrange(len(lines))
            lines[j] = bytes(line[:16]) + lines[j][16:]
        elif kind < 0.8:
            line += rng.choice((b"\t[m]", b" [", b"]", b"\t[]", b"   ", b"\t[a b] "))
        elif kind < 0.9 and line:
            del line[rng.randrange(len(line)):]
        else:
            line[:0] = rng.choice((b"_", b"__", b"SyS", b" ", b"0"))
        lines[i] = bytes(line)
    return b"\n".join(lines)


def test_hostile_kallsyms_texts_the_same(tmp_path):
    rng = random.Random(11)
    texts = [t[:rng.randrange(len(t))][:40000] for t in _kallsyms_texts()] + [SYNTHETIC]
    for k in range(150):
        compare_kallsyms(mutate_kallsyms(rng.choice(texts), rng), str(tmp_path))


# ------------------------------------------------------------ PLT stubs

def _stub(rng: random.Random, kind: int) -> bytes:
    """A PLT stub's bytes of each form plt.py decodes (and near misses)."""
    if kind == 1:                                   # AArch64: [bti c] adrp x16; ldr x17
        adrp = 0x90000010 | rng.randrange(1 << 32) & ~0x9F00001F & 0xFFFFFFFF
        ldr = 0xF9400211 | (rng.randrange(1 << 12) << 10)
        words = ([0xD503245F] if rng.random() < 0.3 else []) + [adrp, ldr, 0xD61F0220]
        if rng.random() < 0.2:
            words[-2] ^= 1
        code = b"".join(w.to_bytes(4, "little") for w in words)
    else:
        endbr = (b"\xf3\x0f\x1e\xfa", b"\xf3\x0f\x1e\xfb")[kind == 2]
        jump = rng.choice((b"\xff\x25", b"\xff\xa3", b"\xff\x15", b"\xe9\x00"))
        code = (endbr if rng.random() < 0.4 else b"") + (b"\xf2" * rng.randrange(3)) + jump + \
            rng.randbytes(4)
    return (code + rng.randbytes(16))[:rng.choice((8, 16, 16, 32))]


def test_plt_stubs_decoded_as_in_python():
    """plt_slots (C) gives the GOT slot plt.py's decoders give, for each
    machine's stub forms, at section addresses near 0 and 2**64 (a slot
    outside 64 bits: -1, no slot in either path)."""
    from symbolize.symbols import plt
    core = symtab_core()
    rng = random.Random(3)
    for _ in range(600):
        kind = rng.randrange(3)
        slot = rng.choice((8, 16, 32))
        data = b"".join(_stub(rng, kind).ljust(slot, b"\0")[:slot] for _ in range(4))
        data += rng.randbytes(rng.randrange(slot))
        base = rng.choice((0, 0x1000, (1 << 63), (1 << 64) - 64, (1 << 64) - 0x100000))
        got_base = rng.choice((0, 0x2000, (1 << 64) - 1))
        first = rng.choice((0, 16))
        decode = (plt._x86_64_got_slot, plt._aarch64_got_slot,
                  lambda code, addr: plt._i386_got_slot(code, addr, got_base))[kind]
        want = [decode(data[off:off + slot], base + off)
                for off in range(first, len(data) - slot + 1, slot)]
        want = [g if g is None or 0 <= g < 1 << 64 else -1 for g in want]
        assert core.plt_slots(data, base, first, slot, kind, got_base) == want, \
            (kind, data.hex(), base, got_base)


class _RelocSection:
    """A section of _RelocBinary: its type, link and bytes."""

    def __init__(self, type: int | str, link: int, data: bytes) -> None:
        self.type, self.link, self.data = type, link, data
        self.offset, self.size = 0, len(data)


class _RelocBinary:
    """What plt._read_relocs asks of a Binary: its class and byte order,
    its sections by index and their bytes, and pyelftools' Elf_Sym layout
    for that class and order (as Binary.struct_layout gives it)."""

    def __init__(self, is_64: bool, little: bool, sections: list) -> None:
        self.is_64, self.little_endian, self.sections = is_64, little, sections

    def section_data(self, sec: _RelocSection) -> bytes:
        return sec.data

    def section_view(self, sec: _RelocSection) -> memoryview:
        return memoryview(sec.data)

    def let_go(self, offset: int, size: int) -> None:
        pass

    def section_by_index(self, index: int) -> _RelocSection | None:
        return self.sections[index] if 0 <= index < len(self.sections) else None

    def struct_layout(self, name: str) -> tuple[str, list[str]]:
        assert name == "Elf_Sym"
        order = "<" if self.little_endian else ">"
        if self.is_64:
            return order + "LBBHQQ", ["st_name", "st_info", "st_other", "st_shndx",
                                      "st_value", "st_size"]
        return order + "LLLBBH", ["st_name", "st_value", "st_size", "st_info", "st_other",
                                  "st_shndx"]


def _reloc_binary(rng: random.Random, is_64: bool, little: bool, rela: bool):
    """A relocation section (linked to a symbol section, linked to its
    names) of random entries: types among the wanted and not, symbol
    indices in and past the table, names past their table, unterminated or
    not UTF-8, a cut entry at the end; sometimes no symbol or name section."""
    import struct
    from symbolize.symbols.plt import SHT_REL, SHT_RELA
    order = "<" if little else ">"
    strtab = b"\0" + b"\0".join(rng.choice((b"puts", b"malloc@GLIBC_2.2.5", b"\xff\xfe",
                                               b"caf\xc3\xa9", b"")) for _ in range(8)) + \
        rng.choice((b"\0", b"tail_without_nul"))
    count = rng.randrange(1, 12)
    binary = _RelocBinary(is_64, little, [])
    fmt = binary.struct_layout("Elf_Sym")[0]
    symtab = b"".join(struct.pack(fmt, *[rng.choice((0, 1, 5, len(strtab) - 3, len(strtab) + 9))
                                         if i == 0 else 0 for i in range(len(fmt) - 1)])
                      for _ in range(count))
    symtab += rng.randbytes(rng.choice((0, 0, 3)))
    entry = (order + ("QQq" if rela else "QQ")) if is_64 else (order + ("IIi" if rela else "II"))
    shift = 32 if is_64 else 8
    entries = []
    for _ in range(rng.randrange(30)):
        rtype = rng.choice((6, 7, 37, 1026, 0, 255))
        index = rng.choice((0, 1, count - 1, count, count + 5))
        info = (index << shift | rtype) & ((1 << (64 if is_64 else 32)) - 1)
        values = [rng.randrange(1 << (64 if is_64 else 32)), info]
        if rela:
            values.append(rng.randrange(-(1 << (63 if is_64 else 31)), 1 << (63 if is_64 else 31)))
        entries.append(struct.pack(entry, *values))
    data = b"".join(entries) + rng.randbytes(rng.choice((0, 0, 5)))
    link = rng.choice((1, 1, 1, 7))     # (7: no symbol section)
    binary.sections = [_RelocSection(SHT_RELA if rela else SHT_REL, link, data),
                       _RelocSection("SHT_DYNSYM", rng.choice((2, 2, 9)), symtab),
                       _RelocSection("SHT_STRTAB", 0, strtab)]
    return binary


def test_relocations_read_as_in_python():
    """relocs (C) gives plt._read_relocs' pure loop's (offset, type, name,
    addend) for ELF64 and ELF32, REL and RELA, either byte order: the
    wanted types only, names by symbol index (\"\" for entry 0 and past the
    table, past the names' end, or with no symbol section), not-UTF-8
    names replaced as Python decodes them."""
    from symbolize.symbols import plt
    rng = random.Random(7)
    wanted = (6, 7, 37, 1026)
    for k in range(400):
        binary = _reloc_binary(rng, k % 2 == 0, k % 4 < 2, k % 8 < 4)
        sec = binary.sections[0]
        pure, compiled = _both(lambda: [tuple(r) for r in plt._read_relocs(
            binary, sec, wanted)])  # type: ignore[arg-type]
        assert pure == compiled, (k, binary.is_64, binary.little_endian, sec.type)


def test_kallsyms_texts_of_other_bytes_left_to_python():
    """The C parse takes printable ASCII, tabs and newlines only (it checks
    eight bytes at a time): every other byte value, at each place in a
    word, gives the text to the Python parse (None)."""
    core = symtab_core()
    printable = set(range(0x20, 0x7F)) | {9, 10}
    for value in range(256):
        for at in range(8):
            text = b"ffffffff81000000 T name_" + b"x" * at + bytes([value]) + b"y" * 9 + b"\n"
            parsed = core.parse_kallsyms(text, 0, 0)
            assert (parsed is not None) == (value in printable), (value, at)


def test_a_module_built_from_other_sources_is_not_used(monkeypatch):
    """A _symtab built before its entry points changed (another VERSION)
    leaves the tables to Python rather than being called wrongly."""
    import types

    from symbolize.symbols import compiled
    monkeypatch.setattr(compiled, "_imported", [])
    monkeypatch.setattr(compiled.importlib, "import_module",
                        lambda name, package=None: types.SimpleNamespace(VERSION=1))
    assert compiled.symtab_core() is None
    monkeypatch.setattr(compiled, "_imported", [])
    monkeypatch.setattr(compiled.importlib, "import_module",
                        lambda name, package=None: types.SimpleNamespace(
                            VERSION=compiled.SYMTAB_VERSION))
    assert compiled.symtab_core() is not None


def test_kallsyms_room_asked_for_is_checked():
    """parse_kallsyms' head and tail: 0 to 1 MiB, head a multiple of 8 (the
    columns of 64-bit numbers after it stay aligned); anything else refused."""
    core = symtab_core()
    if core is None:
        pytest.skip("symbolize.symbols._symtab is not built")
    text = b"ffffffff81000000 T a\n"
    assert core.parse_kallsyms(text, 8, 3)[2] == 1
    for head, tail in ((1, 0), (12, 0), (-8, 0), (0, -1), (2 << 20, 0), (0, 2 << 20)):
        with pytest.raises(ValueError):
            core.parse_kallsyms(text, head, tail)


def test_kallsyms_laid_out_in_a_buffer_handed_over():
    """parse_kallsyms into a buffer of kallsyms_room's size (a file mapped):
    the same table as into its own bytearray, nothing past the room
    written; a buffer too small or not 8-aligned refused."""
    import mmap
    core = symtab_core()
    if core is None:
        pytest.skip("symbolize.symbols._symtab is not built")
    for text in [SYNTHETIC, kernel_with_modules(random.Random(2))]:
        own = core.parse_kallsyms(text, 32, 7)
        room = core.kallsyms_room(text, 32, 7)
        out = mmap.mmap(-1, room + 100)
        out[:] = b"\xaa" * (room + 100)
        got = core.parse_kallsyms(text, 32, 7, out)
        assert got[:3] == own[:3] and got[3] is None
        size = len(own[3])
        assert out[:size] == bytes(own[3])
        assert out[room:] == b"\xaa" * 100
        with pytest.raises(ValueError):
            core.parse_kallsyms(text, 32, 7, bytearray(room - 1))
        with pytest.raises(ValueError):
            core.parse_kallsyms(text, 32, 7, memoryview(out)[4:])
        out.close()
