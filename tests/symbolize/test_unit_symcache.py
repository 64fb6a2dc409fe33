"""Symcaches of single DWARF units (symbolize/symbols/unit_symcache.py), what
a first run builds for the few units of a large debug file it asks about,
against the whole file's symcache (native.py), address by address: the same
inline chains, names, files and lines, on libc through libc6-dbg's debug
file, a CPython libpython with full DWARF, and C++ programs built here (PIE,
non-PIE, DWARF 4, LTO); units that refer outside themselves are left to the
whole file's index; hostile abbreviation tables and units are refused, never
raised on."""
import os
import random
import struct

import pytest

from symbolize import Binary, CacheDir, LineInfo
from test_native_index import CPP, _libpython, text_range
from test_symbolize_util import compile_c, libc_and_debug

pytest.importorskip("symbolic")

from symbolize.symbols import native, unit_symcache  # noqa: E402


def units_and_whole(path, debug=None, count=2500, seed=7, share=0.4, most=48):
    """Addresses of `path`'s text in at most `most` units holding together at
    most `share` of its .debug_info (fewer units than UnitSymcaches builds
    before the whole file's index answers), each looked up through a NativeIndex of units and
    through one of the whole file (lines.py's LineInfo as the units' source);
    (addresses, the units' index, the differences)."""
    f = Binary(debug or path)
    lines = LineInfo(f)
    info_size = lines.section_size(".debug_info")
    lo, hi = text_range(path)
    rnd = random.Random(seed)
    sizes = {}
    budget = info_size * share
    for a in sorted(rnd.randrange(lo, hi) for _ in range(count)):
        unit = lines.unit_offset(a)
        if unit is None or unit in sizes:
            continue
        span = unit_symcache.unit_span(lines.section_part(".debug_info", unit, 12), unit,
                                       info_size)
        size = span[0] - unit if span else 0
        if size <= budget and len(sizes) < most:
            budget -= size
            sizes[unit] = size
    # then, in the units chosen, every few bytes (instructions' starts and middles)
    every = [a for a in range(lo, hi, 5) if lines.unit_offset(a) in sizes]
    addrs = every[::max(1, len(every) // count)]
    # and addresses in no unit (PLT, start-up code, functions without DWARF)
    addrs += [a for a in range(lo, hi, 3) if lines.unit_offset(a) is None][:300]
    per_unit = native.NativeIndex(f, units=lines)
    whole = native.NativeIndex(f)
    diffs = [(hex(a), per_unit.names(a), whole.names(a), per_unit.locations(a), whole.locations(a))
             for a in addrs
             if (per_unit.names(a), per_unit.locations(a)) != (whole.names(a), whole.locations(a))]
    assert not f.warnings, f.warnings
    return addrs, per_unit, diffs


def test_libc_units_as_the_whole_debug_file():
    libc, dbg = libc_and_debug()
    addrs, per_unit, diffs = units_and_whole(libc, dbg)
    assert diffs == [], diffs[:5]
    assert len(addrs) > 500
    # every answer came from the units: the whole file's index never built
    assert not per_unit.built
    assert per_unit.units_built > 20


def test_libpython_units_as_the_whole_file():
    lib = _libpython()
    if lib is None:
        pytest.skip("no libpython with .debug_info (pyenv's CPython builds have one; Debian: "
                    "libpython3.X-dbg)")
    addrs, per_unit, diffs = units_and_whole(lib, count=4000)
    assert diffs == [], diffs[:5]
    assert len(addrs) > 500 and per_unit.units_built > 0


@pytest.mark.parametrize("flags", [("-O2", "-g"), ("-O2", "-g", "-no-pie"),
                                   ("-O2", "-gdwarf-4"), ("-O2", "-g", "-flto")])
def test_cpp_program_units_as_the_whole_file(tmp_path, flags):
    prog = compile_c(tmp_path, "inl", CPP, *flags, lang="cpp")
    lo, hi = text_range(prog)
    addrs, per_unit, diffs = units_and_whole(prog, count=min(3000, hi - lo), share=1.0)
    assert diffs == [], diffs[:5]
    assert any(len(per_unit.names(a) or ()) > 1 for a in addrs)   # inlined calls compared
    if "-flto" not in flags:
        assert not per_unit.built and per_unit.units_built > 0


def test_first_run_keeps_no_whole_symcache_until_the_units_cost_more(tmp_path):
    libc, dbg = libc_and_debug()
    cache = CacheDir(tmp_path / "cache")
    key = ("cd" * 20, "d")
    lines = LineInfo(Binary(dbg))
    lo, hi = text_range(libc)
    few = [a for a in range(lo, hi, (hi - lo) // 8)][:8]
    first = native.NativeIndex(Binary(dbg), cache, key, units=lines)
    answers = [first.names(a) for a in few]
    assert not first.built and first.units_built > 0
    assert not os.path.exists(str(tmp_path / "cache" / "symcache"))
    # an address in every part of libc: the units would hold more than half
    # its DWARF, so the whole file's index is built (and kept) and answers
    many = range(lo, hi, 97)
    assert [first.names(a) for a in few] == answers
    for a in many:
        first.names(a)
    assert first.built and os.path.exists(first.cache_file)
    # the next run reads the whole file's index, and answers as the units did
    again = native.NativeIndex(Binary(dbg), cache, key, units=LineInfo(Binary(dbg)))
    assert [again.names(a) for a in few] == answers
    assert not again.built and again.units_built == 0


def _abbrev(*entries):
    """An abbreviation table: entries of (code, tag, children, [(attr, form[, const])])."""
    def uleb(v):
        out = bytearray()
        while True:
            b, v = v & 0x7F, v >> 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)
    out = b""
    for code, tag, children, attrs in entries:
        out += uleb(code) + uleb(tag) + bytes([children])
        for a in attrs:
            out += uleb(a[0]) + uleb(a[1]) + (uleb(a[2]) if len(a) > 2 else b"")
        out += b"\0\0"
    return out + b"\0"


def test_abbreviation_tables_that_refer_outside_are_refused():
    plain = _abbrev((1, 0x11, 1, [(0x25, 0x0e), (0x13, 0x0b), (0x10, 0x17)]),
                    (2, 0x2e, 0, [(0x03, 0x08), (0x2007, 0x0e), (0x3b, 0x21, 7)]))
    lead = b"\x55" * 5
    assert unit_symcache.self_contained(lead + plain, 5) == (5 + len(plain),
                                                             [(0x25, 0x0e), (0x13, 0x0b), (0x10, 0x17)])
    assert unit_symcache.self_contained(plain, 0, code=2)[1] == [(0x03, 0x08), (0x2007, 0x0e),
                                                                (0x3b, 0x21)]
    for outward in (0x10, 0x20, 0x1f20, 0x1f21, 0x1c, 0x24, 0x1d, 0x16):
        table = _abbrev((1, 0x11, 1, [(0x25, 0x0e)]), (2, 0x2e, 0, [(0x31, outward)]))
        assert unit_symcache.self_contained(table, 0) is None, hex(outward)
    assert unit_symcache.self_contained(_abbrev((1, 0x3d, 0, [(0x18, 0x13)])), 0) is None
    for cut in range(len(plain) - 1):
        assert unit_symcache.self_contained(plain[:cut], 0) is None
    assert unit_symcache.self_contained(plain, len(plain) + 10) is None
    assert unit_symcache.self_contained(b"\xff" * 64, 0) is None


def test_unit_headers_outside_the_section_or_of_other_kinds_are_refused():
    def span(unit, offset=0, size=None):
        return unit_symcache.unit_span(unit[:12], offset, len(unit) if size is None else size)
    v4 = struct.pack("<IHIB", 7, 4, 0x20, 8) + b"\0"
    assert span(v4) == (11, 0x20, 6, 11, 8)
    assert span(v4, 100, 111) == (111, 0x20, 6, 11, 8)
    v5 = struct.pack("<IHBBI", 8, 5, 1, 8, 0x30) + b"\0"
    assert span(v5) == (12, 0x30, 8, 12, 8)
    assert span(v5, 2) is None                                               # past the end
    assert span(v5[:11]) is None                                             # a cut header
    assert span(struct.pack("<IHBBI", 8, 5, 2, 8, 0) + b"\0") is None        # a type unit
    assert span(struct.pack("<IHIB", 900, 4, 0, 8) + b"\0") is None          # past the end
    assert span(struct.pack("<IHIB", 0xFFFFFFFF, 4, 0, 8) + b"\0" * 9) is None
    assert span(struct.pack("<IHIB", 7, 6, 0, 8) + b"\0") is None


@pytest.mark.parametrize("which", ["libc", "cpp-dwarf4"])
def test_line_program_found_as_pyelftools_finds_it(tmp_path, which):
    """Where the root DIE's DW_AT_stmt_list is read (to give a unit its own
    line program alone), it is the offset pyelftools reads, for every unit."""
    if which == "libc":
        path = libc_and_debug()[1]
    else:
        path = compile_c(tmp_path, "inl", CPP, "-O2", "-gdwarf-4", lang="cpp")
    lines = LineInfo(Binary(path))
    info_size = lines.section_size(".debug_info")
    abbrev = lines.section_part(".debug_abbrev", 0, lines.section_size(".debug_abbrev"))
    dwarf = lines._dwarfinfo()
    found = 0
    for cu in dwarf.iter_CUs():
        head = lines.section_part(".debug_info", cu.cu_offset, 12)
        header = unit_symcache.unit_span(head, cu.cu_offset, info_size)
        assert header is not None and header.end == cu.cu_offset + cu.size
        unit = lines.section_part(".debug_info", cu.cu_offset, header.end - cu.cu_offset)
        root = unit_symcache._uleb(unit, header.size)[0]
        table = unit_symcache.self_contained(abbrev, header.abbrev_offset, root)
        assert table is not None
        at = unit_symcache.stmt_list_at(unit, header, table[1])
        want = cu.get_top_DIE().attributes.get("DW_AT_stmt_list")
        if at is None:
            assert want is None
            continue
        assert struct.unpack_from("<I", unit, at)[0] == want.value
        found += 1
        if found == 400:
            break
    assert found >= (1 if which != "libc" else 400)


class HeldSections:
    """A unit source over sections held in memory (damaged by a test), the
    units placed as a LineInfo places them."""

    def __init__(self, lines, sections):
        self.lines, self.sections = lines, sections

    def unit_offset(self, svma):
        return self.lines.unit_offset(svma)

    def listed_units(self):
        return self.lines.listed_units()

    def section_size(self, name):
        return len(self.sections[name]) if name in self.sections else None

    def section_part(self, name, offset, size):
        data = self.sections.get(name)
        if data is None or offset < 0 or size < 0 or offset + size > len(data):
            return None
        return data[offset:offset + size]


def test_damaged_units_answer_or_hand_back_never_raise(tmp_path):
    prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
    lines = LineInfo(Binary(prog))
    names = (".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str",
             ".debug_aranges", ".debug_rnglists")
    sections = {n: lines.section_part(n, 0, lines.section_size(n)) for n in names
                if lines.section_size(n) is not None}
    lo, hi = text_range(prog)
    addrs = list(range(lo, hi, 7))
    import symbolic
    rnd = random.Random(3)
    answered = 0
    for trial in range(60):
        damaged = dict(sections)
        name = rnd.choice([".debug_info", ".debug_abbrev", ".debug_line", ".debug_str"])
        blob = bytearray(damaged[name])
        for _ in range(rnd.randint(1, 20)):
            blob[rnd.randrange(len(blob))] = rnd.randrange(256)
        damaged[name] = bytes(blob)
        index = unit_symcache.UnitSymcaches(symbolic, "x86_64", 62, HeldSections(lines, damaged))
        for a in addrs[::13]:
            got = index.lookup(a)
            assert got is unit_symcache.WHOLE or isinstance(got, list)
            answered += got is not unit_symcache.WHOLE
    assert answered
