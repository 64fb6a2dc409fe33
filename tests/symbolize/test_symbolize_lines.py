"""Inlined frames and source lines against addr2line -f -i.

One documented difference: where an inlined function
has no linkage name (a `static inline` C++ function), GNU addr2line prints
the outermost function's name for it (gdb and the DWARF say `sq`, line 4 of the
source is `sq`'s body), or under -flto the name of the symbol around the
address (`_ZN2ns1K3runEi.constprop.0`, a clone of the outermost function);
there only the lines are compared.
"""
import re
import subprocess
import time

import pytest

from symbolize import Binary, LineInfo, Symbolizer, SymbolizerOptions, DebugInfoLocator
from test_symbolize_util import compile_c, libc_and_debug, need, run

CPP = r"""#include <vector>
#include <cstdio>
static inline int sq(int x) { return x * x + (x & 7); }
template <class T> inline T acc(const std::vector<T>& v) { T s = 0; for (auto& e : v) s += sq(e); return s; }
namespace ns { struct K { __attribute__((noinline)) int run(int n); }; }
int ns::K::run(int n) { std::vector<int> v; for (int i = 0; i < n; i++) v.push_back(i * 3); return acc(v); }
static inline __attribute__((always_inline)) int twice(int x) { return sq(x) + sq(x + 1); }
__attribute__((noinline)) int outer_fn(int x) { return twice(x) * 3; }
int main(int argc, char** argv) { ns::K k; std::printf("%d %d\n", k.run(argc * 1000), outer_fn(argc)); return 0; }
"""
SRC_LINES = CPP.count("\n")


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    d = tmp_path_factory.mktemp("lines")
    return compile_c(d, "inl", CPP, "-O2", "-g", lang="cpp")


@pytest.fixture(scope="module", params=["-gdwarf-5", "-gdwarf-4", "-gdwarf-3", "no-aranges", "lto"])
def variant(request, tmp_path_factory):
    """The same program in each DWARF version the reader decodes (2-4 share
    the .debug_ranges and 1-based file numbering paths), without
    .debug_aranges (the CU index is then built from the CUs' own ranges), and
    built with -flto (inlined calls name their origin in another unit through
    DW_FORM_ref_addr)."""
    d = tmp_path_factory.mktemp("dwarfv")
    if request.param == "lto":
        return compile_c(d, "inl", CPP, "-O2", "-gdwarf-4", "-flto", lang="cpp")
    if request.param == "no-aranges":
        need("objcopy")
        src = compile_c(d, "inl", CPP, "-O2", "-g", lang="cpp")
        out = str(d / "inl-noaranges")
        run("objcopy", "--remove-section=.debug_aranges", src, out)
        return out
    return compile_c(d, "inl", CPP, "-O2", request.param, lang="cpp")


def code_addresses(path):
    out = run("objdump", "-d", "--no-show-raw-insn", path)
    return [int(l.split(":")[0], 16) for l in out.splitlines() if re.match(r"^\s+[0-9a-f]+:\s", l)]


def addr2line(path, addrs, *flags):
    out = run("addr2line", "-a", *flags, "-e", path, *[hex(a) for a in addrs]).splitlines()
    res, cur = {}, None
    for l in out:
        if l.startswith("0x"):
            cur = int(l, 16)
            res[cur] = []
        else:
            res[cur].append(re.sub(r" \(discriminator \d+\)", "", l))
    return res


def split_loc(loc):
    f, _, line = loc.rpartition(":")
    return f, int(line) if line.isdigit() else None


def test_frames_match_addr2line(variant):
    prog = variant
    need("addr2line", "objdump")
    addrs = code_addresses(prog)
    truth = addr2line(prog, addrs, "-f", "-i")
    li = LineInfo(Binary(prog))
    compared = inlined = padding = 0
    for a in addrs:
        t = truth[a]
        exp = [(t[i], split_loc(t[i + 1])) for i in range(0, len(t), 2)]
        if not exp[0][1][1]:           # addr2line knows no line here
            continue
        got = li.frames(a)
        assert len(got) == len(exp), (hex(a), exp, got)
        compared += 1
        inlined += len(got) > 1
        for k, ((efn, (efile, eline)), g) in enumerate(zip(exp, got)):
            assert g.line == eline, (hex(a), k, exp, got)
            if not (efile.endswith(".cpp") and eline > SRC_LINES):   # addr2line's wrong file
                assert g.file == efile, (hex(a), k, exp, got)
            quirk = k < len(exp) - 1 and (efn == exp[-1][0] or efn.startswith(exp[-1][0] + "."))
            if g.function is None and len(exp) == 1:
                # Alignment padding after a function: in no DWARF function;
                # addr2line borrows the preceding symbol's name.
                padding += 1
            elif quirk:
                assert g.function != efn and g.function
            else:
                assert g.function == efn, (hex(a), k, exp, got)
    assert compared > 50 and inlined > 5 and padding < compared / 10


def test_srcline_matches_addr2line(variant):
    prog = variant
    addrs = code_addresses(prog)
    truth = addr2line(prog, addrs)
    li = LineInfo(Binary(prog))
    n = 0
    for a in addrs:
        f, line = split_loc(truth[a][0])
        if not line or (f.endswith(".cpp") and line > SRC_LINES):
            continue
        assert li.srcline(a) == f"{f}:{line}", hex(a)
        n += 1
    assert n > 50


def test_symbolizer_inline_frames_demangled(prog):
    """Symbolizer: inlined frames first (demangled as addr2line -C does),
    then the containing function with its offset from the symbol table."""
    addrs = code_addresses(prog)
    truth = addr2line(prog, addrs, "-f", "-i", "-C")
    nm = {n: int(a, 16) for a, t, n in (l.split(None, 2) for l in run("nm", "-C", "--defined-only", prog).splitlines()
                                       if len(l.split(None, 2)) == 3)}
    # (full signatures, as addr2line -C and nm -C print them)
    s = Symbolizer(DebugInfoLocator(buildid_dir=None), SymbolizerOptions(signatures=True))
    seen_inline = 0
    for a in addrs:
        t = truth[a]
        if len(t) < 4 or not split_loc(t[1])[1]:
            continue
        frames = s.lookup(prog, None, a)
        assert [f.inlined for f in frames] == [True] * (len(frames) - 1) + [False]
        assert [f.srcline for f in frames] == [t[i + 1] for i in range(0, len(t), 2)]
        outer = frames[-1]
        # The outer name is the symbol table's, as perf prints it: a cold
        # part is `f() [clone .cold]` where DWARF (addr2line) says `f()`.
        assert outer.name == t[-2] or outer.name.startswith(t[-2] + " [clone ")
        assert outer.offset == a - nm[outer.name]
        if t[-4] != t[-2]:         # addr2line's repeated outer name: see above
            assert frames[-2].name == t[-4]
        seen_inline += 1
    assert seen_inline > 5


def test_libc_lookups_are_lazy():
    libc, dbg = libc_and_debug()
    li = LineInfo(Binary(dbg))
    nm = [int(l.split()[0], 16) for l in run("nm", "--defined-only", dbg).splitlines()
          if " T " in l and l.split()[-1] in ("qsort", "strtol", "getenv")]
    t0 = time.perf_counter()
    frames = [li.frames(a + 4) for a in nm]
    first = time.perf_counter() - t0
    assert all(frames)
    assert len(li._cus) <= len(nm)        # one CU read per distinct address
    truth = addr2line(dbg, [a + 4 for a in nm], "-f", "-i")
    for a, fr in zip(nm, frames):
        t = truth[a + 4]
        assert [f.line for f in fr] == [split_loc(t[i + 1])[1] for i in range(0, len(t), 2)]
    print(f"\nlibc DWARF: first lookups in {len(li._cus)} CUs took {first * 1000:.0f} ms")


def test_no_dwarf_and_garbage(prog, tmp_path):
    need("strip")
    stripped = str(tmp_path / "s")
    run("strip", "-o", stripped, prog)
    li = LineInfo(Binary(stripped))
    assert not li.has_dwarf and li.frames(0x1000) == [] and li.srcline(0x1000) is None
    # Scribble over .debug_info and .debug_line: answers degrade, never raise.
    data = bytearray(open(prog, "rb").read())
    b = Binary(prog)
    addrs = code_addresses(prog)[::7]
    for name in (".debug_info", ".debug_line", ".debug_abbrev", ".debug_aranges"):
        sec = b.get_section(name)
        if sec is None:
            continue
        buf = bytearray(data)
        for i in range(sec.offset + 11, sec.offset + sec.size, 13):
            buf[i] ^= 0x5A
        p = tmp_path / name.strip(".")
        p.write_bytes(bytes(buf))
        li = LineInfo(Binary(str(p)))
        for a in addrs:
            li.frames(a)
            li.srcline(a)


@pytest.mark.parametrize("how", ["zlib", "zstd"])
def test_compressed_debug_sections(prog, tmp_path, how):
    """SHF_COMPRESSED DWARF (gcc -gz, objcopy --compress-debug-sections) gives
    the same answers as the uncompressed file (checked against addr2line above)."""
    need("objcopy")
    out = str(tmp_path / how)
    p = subprocess.run(["objcopy", f"--compress-debug-sections={how}", prog, out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"objcopy cannot compress with {how}: {p.stderr[:100]}")
    b = Binary(out)
    assert b.get_section(".debug_info").flags & 0x800
    plain, packed = LineInfo(Binary(prog)), LineInfo(b)
    addrs = code_addresses(prog)
    assert [packed.frames(a) for a in addrs] == [plain.frames(a) for a in addrs]
    assert any(plain.frames(a) for a in addrs)


def test_compressed_section_size_limit(prog, tmp_path):
    """A compressed section claiming more than the limit is not inflated."""
    import struct
    need("objcopy")
    out = str(tmp_path / "z")
    run("objcopy", "--compress-debug-sections=zlib", prog, out)
    sec = Binary(out).get_section(".debug_info")
    buf = bytearray(open(out, "rb").read())
    struct.pack_into("<Q", buf, sec.offset + 8, 1 << 40)        # ch_size
    bomb = tmp_path / "bomb"
    bomb.write_bytes(bytes(buf))
    b = Binary(str(bomb))
    assert b.section_data(".debug_info") is None and b.warnings
    assert LineInfo(b).frames(code_addresses(prog)[0]) == []


def test_sibling_link_pointing_back(prog, tmp_path):
    """A DW_AT_sibling that points at its own DIE: pyelftools' iter_children
    follows it forever (while skipping a subtree without a sibling link of
    its own, it yields nothing and never returns). The walk in lines.py
    follows only a link that moves forward and otherwise finds the end of the
    subtree by a linear scan, so here (links broken under a parent without
    one, and in a function's body) it loses nothing."""
    import signal
    import struct
    from elftools.elf.elffile import ELFFile
    with open(prog, "rb") as f:
        dwarf = ELFFile(f).get_dwarf_info(relocate_dwarf_sections=False)
        patches, in_body = [], []
        for cu in dwarf.iter_CUs():
            parents = []
            for die in cu.iter_DIEs():          # flat: safe on any sibling link
                if die.is_null():
                    parents.pop()
                    continue
                parent = parents[-1] if parents else None
                sib = die.attributes.get("DW_AT_sibling")
                if (sib is not None and sib.form == "DW_FORM_ref4" and die.has_children
                        and parent is not None and parent.has_children):
                    if "DW_AT_sibling" not in parent.attributes:
                        patches.append((sib.offset, die.offset - cu.cu_offset))
                    elif parent.tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in parent.attributes:
                        in_body.append((sib.offset, die.offset - cu.cu_offset))
                if die.has_children:
                    parents.append(die)
    assert patches and in_body, "no DIE with children and DW_AT_sibling where needed"
    patches.append(in_body[0])
    sec = Binary(prog).get_section(".debug_info")
    assert not sec.flags & 0x800
    buf = bytearray(open(prog, "rb").read())
    for attr_offset, self_ref in patches:
        struct.pack_into("<I", buf, sec.offset + attr_offset, self_ref)
    bad = tmp_path / "sibling-loop"
    bad.write_bytes(bytes(buf))

    def too_slow(signum, frame):
        raise TimeoutError("DIE walk does not end")
    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(60)
    try:
        b = Binary(str(bad))
        li = LineInfo(b)
        addrs = code_addresses(prog)
        got = [li.frames(a) for a in addrs]
        srclines = [li.srcline(a) for a in addrs]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    plain = LineInfo(Binary(prog))
    assert got == [plain.frames(a) for a in addrs]
    assert srclines == [plain.srcline(a) for a in addrs]
    assert any(len(g) > 1 for g in got) and not b.warnings


def _aranges_both(binary):
    from symbolize.symbols.dwarf_sections import read_aranges as _read_aranges
    li = LineInfo(binary)
    dwarf = li._dwarfinfo()
    data = li.sections.whole(".debug_aranges")
    if dwarf is None or data is None:
        return None, None
    ours = _read_aranges(data, dwarf.structs)
    theirs = sorted((e.begin_addr, e.begin_addr + e.length, e.info_offset)
                    for e in dwarf.get_aranges().entries if e.length)
    return (sorted(ours) if ours is not None else None), theirs


def test_aranges_read_as_pyelftools_reads_them(variant):
    """.debug_aranges read with the struct derived from pyelftools' header
    gives pyelftools' own ranges (every DWARF version, and libc's)."""
    ours, theirs = _aranges_both(Binary(variant))
    if theirs is None:
        pytest.skip("no .debug_aranges in this variant")
    assert ours == theirs and theirs
    lib = libc_and_debug()
    if lib is not None and lib[1] is not None:
        ours, theirs = _aranges_both(Binary(lib[1]))
        assert ours == theirs and len(theirs) > 100


def test_aranges_damaged_never_raise_or_loop(prog):
    from symbolize.symbols.dwarf_sections import read_aranges as _read_aranges
    li = LineInfo(Binary(prog))
    dwarf = li._dwarfinfo()
    data = bytes(li.sections.whole(".debug_aranges"))
    for cut in range(0, len(data), 3):
        _read_aranges(data[:cut], dwarf.structs)
    for i in range(0, min(len(data), 64)):
        bad = bytearray(data)
        bad[i] ^= 0xFF
        out = _read_aranges(bytes(bad), dwarf.structs)
        assert out is None or isinstance(out, list)
