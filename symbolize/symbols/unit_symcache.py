"""Symcaches of single DWARF units, for the few units of a large debug file
that a first run asks about (native.py builds the whole file's otherwise).

A first `perfdata script` of a DWARF recording of sqlite3 asks libc's debug
file (libc6-dbg: about 2,000 units, 5.8 MB of .debug_info) the inline chains
of ~110 addresses in 19 units.  symbolic's symcache of the whole file costs
0.12-0.2 s; the 19 units' own cost 22 ms together (benchmarks/RESULTS.md,
"First runs: the units asked").  The answers are the same: each unit's
symcache sees the unit's DIEs and line program exactly as the whole file's
does, and tests/symbolize/test_native_index.py compares the two address by
address on libc, a libpython and a C++ program.

Each unit's symcache is built from an ELF file assembled in memory: the unit
alone as .debug_info (a unit's references to its own DIEs are relative to
its start), the other DWARF sections whole, so abbreviations, line programs,
strings and ranges are found at the offsets the unit names.  No symbol table
and no program headers: the names are DWARF's, as native.py's copy with the
symbol tables hidden gives them, and addresses are the file's own.  A unit
that refers outside itself (DW_FORM_ref_addr, type signatures, a
supplementary file's strings or DIEs, imported units: dwz and LTO output) or
that is not a DWARF 2-5 compile unit of 32-bit offsets is not built this
way: the whole file's index answers for it.
"""
from __future__ import annotations

import struct
from typing import Any

# The sections a unit's symbolic reading goes to, whole, besides the unit and
# its abbreviation table. .debug_aranges is not read (the unit is the only
# one), nor locations (no variable is looked up).
KEPT_SECTIONS = (".debug_line", ".debug_line_str", ".debug_str",
                 ".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists")
# ELF e_machine numbers, by pyelftools' names (the assembled file's header).
E_MACHINE = {"EM_X86_64": 62, "EM_AARCH64": 183}

# Forms that name something outside the unit: DW_FORM_ref_addr, indirect
# (any form), ref_sup4, strp_sup, ref_sig8, ref_sup8, GNU_ref_alt, GNU_strp_alt.
_OUTWARD_FORMS = frozenset((0x10, 0x16, 0x1c, 0x1d, 0x20, 0x24, 0x1f20, 0x1f21))
_DW_TAG_IMPORTED_UNIT = 0x3d
_DW_FORM_IMPLICIT_CONST = 0x21
_DW_UT_COMPILE = 1

_SHDR = struct.Struct("<IIQQQQIIQQ")
_EHDR = struct.Struct("<4sBBBBB7sHHIQQQIHHHHHH")

WHOLE = object()
"""UnitSymcaches.lookup's answer where the whole file's index must answer."""


def unit_span(info: bytes, offset: int) -> tuple[int, int, int] | None:
    """(end, abbreviation table's offset, where the unit holds that offset)
    of the unit at `offset` of a little-endian .debug_info, or None where it
    is not a DWARF 2-5 compile unit of 32-bit offsets lying wholly in the
    section."""
    if offset < 0 or offset + 12 > len(info):
        return None
    length, version = struct.unpack_from("<IH", info, offset)
    end = offset + 4 + length
    if length >= 0xFFFFFFF0 or end > len(info):
        return None
    if 2 <= version <= 4:
        return end, struct.unpack_from("<I", info, offset + 6)[0], 6
    if version == 5 and info[offset + 6] == _DW_UT_COMPILE:
        return end, struct.unpack_from("<I", info, offset + 8)[0], 8
    return None


def self_contained(abbrev: bytes, offset: int) -> int | None:
    """The end of the abbreviation table at `offset` where it describes no
    DIE that refers outside its unit (see _OUTWARD_FORMS); None where one
    does, or the table runs past the section."""
    end = len(abbrev)
    pos = offset
    # (a loop of ULEB128 numbers, each read inline: this runs on every unit
    # a first run asks about, and a call per number tripled its cost)
    expect = 0          # 0: an abbreviation's code, 1: its tag, 2: an attribute, 3: a form
    while True:
        if pos >= end:
            return None
        byte = abbrev[pos]
        pos += 1
        value = byte & 0x7F
        shift = 7
        while byte >= 0x80:
            if pos >= end:
                return None
            byte = abbrev[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
        if expect == 0:
            if value == 0:                       # the table's end
                return pos
            expect = 1
        elif expect == 1:
            if value == _DW_TAG_IMPORTED_UNIT:
                return None
            pos += 1                             # DW_CHILDREN_*
            expect = 2
        elif expect == 2:
            attr = value
            expect = 3
        elif expect == 3:
            if value in _OUTWARD_FORMS:
                return None
            if attr == 0 and value == 0:
                expect = 0
            elif value == _DW_FORM_IMPLICIT_CONST:
                expect = 4                       # its value next (SLEB128: the same bytes)
            else:
                expect = 2
        else:
            expect = 2


def assembled_elf(e_machine: int, unit: bytes, abbrev: bytes,
                  sections: dict[str, bytes]) -> bytes:
    """A little-endian ELF64 file whose sections are `unit` as .debug_info,
    `abbrev` as .debug_abbrev and `sections` (name: bytes) as they are, and
    nothing else."""
    named = [(".debug_info", unit), (".debug_abbrev", abbrev)] + list(sections.items())
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _ in named) + b".shstrtab\0"
    headers = [_SHDR.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    parts = []
    at = _EHDR.size
    name_at = 1
    for name, data in named:
        headers.append(_SHDR.pack(name_at, 1, 0, 0, at, len(data), 0, 0, 1, 0))   # PROGBITS
        name_at += len(name) + 1
        parts.append(data)
        at += len(data)
    headers.append(_SHDR.pack(name_at, 3, 0, 0, at, len(names), 0, 0, 1, 0))      # STRTAB
    parts.append(names)
    at += len(names)
    pad = -at % 8
    ehdr = _EHDR.pack(b"\x7fELF", 2, 1, 1, 0, 0, bytes(7), 3, e_machine, 1, 0, 0, at + pad,
                      0, _EHDR.size, 56, 0, _SHDR.size, len(headers), len(headers) - 1)
    return b"".join([ehdr, *parts, bytes(pad), *headers])


class UnitSymcaches:
    """symbolic's symcaches of the units asked about, one per unit, while
    building them costs less than the whole file's would (`budget`)."""

    def __init__(self, symbolic: Any, arch: str, e_machine: int,
                 sections: dict[str, bytes], share: float = 0.5) -> None:
        """sections: the file's DWARF sections by name, decompressed; a
        .debug_info among them.  share: of .debug_info's bytes, how much
        the units built may hold before the whole file's index answers
        (measured: libc's 19 units of a first run cost 22 ms, its whole
        symcache 120-200 ms; ld.so's 10 units, 26% of its DWARF, about the
        whole's 25 ms)."""
        self._symbolic = symbolic
        self._arch = arch
        self._e_machine = e_machine
        self._info = sections[".debug_info"]
        self._abbrev = sections.get(".debug_abbrev", b"")
        self._kept = {n: sections[n] for n in KEPT_SECTIONS if n in sections}
        self._built: dict[int, Any] = {}       # unit offset: its symcache, or WHOLE
        # The units stop where their own bytes pass `share` of .debug_info, or
        # where the copies of the kept sections each one's file makes pass
        # four times the whole file's DWARF (64 units at least).
        kept = sum(len(d) for d in self._kept.values())
        self._budget = int(len(self._info) * share)
        self._copies_left = max(64, 4 * (len(self._info) + kept) // max(kept, 1))
        self.exhausted = False                 # past the budget: the whole index answers
        self.built = 0                         # units whose symcache was built

    def lookup(self, unit: int | None, svma: int) -> list | Any:
        """symbolic's SourceLocations at svma from the symcache of the unit at
        offset `unit` of .debug_info, or WHOLE: no unit, one not built this
        way, or the budget spent."""
        if unit is None or self.exhausted:
            return WHOLE
        sc = self._built.get(unit)
        if sc is None:
            sc = self._built[unit] = self._build(unit)
        if sc is WHOLE:
            return WHOLE
        try:
            return list(sc.lookup(svma))
        except Exception:
            return WHOLE

    def _build(self, offset: int) -> Any:
        span = unit_span(self._info, offset)
        if span is None:
            return WHOLE
        end, abbrev_at, abbrev_field = span
        abbrev_end = self_contained(self._abbrev, abbrev_at)
        if abbrev_end is None:
            return WHOLE
        size = end - offset
        if size > self._budget or self._copies_left <= 0:
            self.exhausted = True
            return WHOLE
        self._budget -= size
        self._copies_left -= 1
        try:
            # The unit with its own abbreviation table alone, at offset 0.
            unit = bytearray(self._info[offset:end])
            struct.pack_into("<I", unit, abbrev_field, 0)
            elf = assembled_elf(self._e_machine, bytes(unit), self._abbrev[abbrev_at:abbrev_end],
                                self._kept)
            obj = self._symbolic.debuginfo.Archive.from_bytes(elf).get_object(arch=self._arch)
            if obj is None:
                return WHOLE
            sc = obj.make_symcache()
            self.built += 1
            return sc
        except Exception:
            return WHOLE
