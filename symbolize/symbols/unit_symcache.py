"""Symcaches of single DWARF units, for the units of a debug file that a
first run asks about (native.py builds the whole file's otherwise).

A first `perfdata script` of a DWARF recording of sqlite3 asks libc's debug
file (libc6-dbg: about 2,000 units, 5.8 MB of .debug_info) the inline chains
of ~110 addresses in 19 units: symbolic's symcache of the whole file costs
0.12-0.2 s, the 19 units' own 8 ms together; a CPython recording asks 76 of
libpython's units, 9.7 of its 14 MB, 0.27 s against the whole file's 0.35 s
(benchmarks/RESULTS.md, "First runs: the units asked about").  The answers
are the same: each unit's symcache sees the unit's DIEs and line program as
the whole file's does, and tests/symbolize/test_unit_symcache.py compares the
two address by address on libc, a libpython and C++ programs.

Each unit's symcache is built from an ELF file assembled in memory: the unit
alone as .debug_info (a unit's references to its own DIEs are relative to
its start), its abbreviation table and its line program alone (their
offsets in the unit set to 0), the strings, ranges and addresses sections
whole.  No symbol table and no program headers: the names are DWARF's, as
native.py's copy with the symbol tables hidden gives them, and addresses are
the file's own.  A unit that refers outside itself (DW_FORM_ref_addr, type
signatures, a supplementary file's strings or DIEs, imported units: dwz and
LTO output) or that is not a DWARF 2-5 compile unit of 32-bit offsets is not
built this way: the whole file's index answers for it.
"""
from __future__ import annotations

import struct
from typing import Any, NamedTuple, Protocol

# The sections a unit's symbolic reading goes to, whole, besides the unit, its
# abbreviation table and its line program. .debug_aranges is not read (the
# unit is the only one), nor locations (no variable is looked up).
KEPT_SECTIONS = (".debug_line_str", ".debug_str", ".debug_str_offsets", ".debug_addr",
                 ".debug_ranges", ".debug_rnglists")
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


class UnitHeader(NamedTuple):
    end: int              # the unit's end in .debug_info
    abbrev_offset: int    # its abbreviation table's offset in .debug_abbrev
    abbrev_field: int     # where the unit holds that offset, from its start
    size: int             # the header's size: the root DIE follows
    address_size: int


def unit_span(head: bytes, offset: int, section_size: int) -> UnitHeader | None:
    """The header of the unit at `offset` of a little-endian .debug_info of
    `section_size` bytes, from `head`, its first 12 bytes (fewer at the
    section's end); None where it is not a DWARF 2-5 compile unit of 32-bit
    offsets lying wholly in the section."""
    if offset < 0 or len(head) < 12:
        return None
    length, version = struct.unpack_from("<IH", head, 0)
    end = offset + 4 + length
    if length >= 0xFFFFFFF0 or end > section_size:
        return None
    if 2 <= version <= 4 and length >= 7:
        return UnitHeader(end, struct.unpack_from("<I", head, 6)[0], 6, 11, head[10])
    if version == 5 and head[6] == _DW_UT_COMPILE and length >= 8:
        return UnitHeader(end, struct.unpack_from("<I", head, 8)[0], 8, 12, head[7])
    return None


def self_contained(abbrev: bytes, offset: int,
                   code: int = 1) -> tuple[int, list[tuple[int, int]]] | None:
    """(the end of the abbreviation table at `offset`, the (attribute, form)
    pairs of its declaration `code`) where it describes no DIE that refers
    outside its unit (see _OUTWARD_FORMS); None where one does, or the table
    runs past the section."""
    end = len(abbrev)
    pos = offset
    wanted: list[tuple[int, int]] = []
    this = False        # reading declaration `code`
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
                return pos, wanted
            this = value == code
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
                continue
            if this:
                wanted.append((attr, value))
            if value == _DW_FORM_IMPLICIT_CONST:
                expect = 4                       # its value next (SLEB128: the same bytes)
            else:
                expect = 2
        else:
            expect = 2


# Sizes of the forms a compile unit's root DIE may hold before its
# DW_AT_stmt_list, by form: fixed, or read as noted in _skip_value.
_FIXED_SIZES = {0x0b: 1, 0x05: 2, 0x06: 4, 0x07: 8, 0x0c: 1, 0x0e: 4, 0x11: 1, 0x12: 2,
                0x13: 4, 0x14: 8, 0x17: 4, 0x19: 0, 0x1e: 16, 0x1f: 4, 0x21: 0, 0x25: 1,
                0x26: 2, 0x27: 3, 0x28: 4, 0x29: 1, 0x2a: 2, 0x2b: 3, 0x2c: 4}
_ULEB_FORMS = frozenset((0x0d, 0x0f, 0x15, 0x1a, 0x1b, 0x22, 0x23, 0x1f01, 0x1f02))
_DW_AT_STMT_LIST = 0x10


def _uleb(data: bytes | bytearray, pos: int) -> tuple[int, int] | None:
    """(value, position after) of the ULEB128 number at pos, or None."""
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos
    return None


def stmt_list_at(unit: bytes | bytearray, header: UnitHeader,
                 attrs: list[tuple[int, int]]) -> int | None:
    """Where in `unit` (its bytes from its start) the root DIE holds its
    DW_AT_stmt_list as a 4-byte offset, or None: no such attribute, another
    form, or a form before it this does not read."""
    got = _uleb(unit, header.size)                 # the root's abbreviation code
    if got is None:
        return None
    pos = got[1]
    for attr, form in attrs:
        if attr == _DW_AT_STMT_LIST:
            return pos if form in (0x06, 0x17) and pos + 4 <= len(unit) else None
        size = _FIXED_SIZES.get(form)
        if size is not None:
            pos += size
        elif form == 0x01:                         # DW_FORM_addr
            pos += header.address_size
        elif form == 0x08:                         # DW_FORM_string
            pos = unit.find(b"\0", pos) + 1
            if pos == 0:
                return None
        elif form in _ULEB_FORMS or form in (0x09, 0x18):
            got = _uleb(unit, pos)
            if got is None:
                return None
            pos = got[1] + (got[0] if form in (0x09, 0x18) else 0)   # block, exprloc
        elif form in (0x0a, 0x03, 0x04):           # block1, block2, block4
            width = {0x0a: 1, 0x03: 2, 0x04: 4}[form]
            if pos + width > len(unit):
                return None
            pos += width + int.from_bytes(unit[pos:pos + width], "little")
        else:
            return None
        if pos > len(unit):
            return None
    return None


def assembled_elf(e_machine: int, unit: bytes, sections: dict[str, bytes]) -> bytes:
    """A little-endian ELF64 file whose sections are `unit` as .debug_info
    and `sections` (name: bytes) as they are, and nothing else."""
    named = [(".debug_info", unit)] + list(sections.items())
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


class UnitSource(Protocol):
    """Where the DWARF units of a file are found (lines.LineInfo)."""

    def unit_offset(self, svma: int) -> int | None:
        """Offset in .debug_info of the unit .debug_aranges places svma in."""

    def listed_units(self) -> set[int] | None:
        """The units .debug_aranges has a set for, where unit_offset finds
        units by it (its None then means "in no unit"); None otherwise."""

    def section_size(self, name: str) -> int | None:
        """A DWARF section's size, decompressed; None where it is absent."""

    def section_part(self, name: str, offset: int, size: int) -> bytes | None:
        """size bytes at offset of a DWARF section, decompressed."""


class UnitSymcaches:
    """symbolic's symcaches of the units asked about, one per unit, while
    building them costs less than the whole file's would."""

    def __init__(self, symbolic: Any, arch: str, e_machine: int, source: UnitSource) -> None:
        """source: the file's DWARF sections and units (a .debug_info there)."""
        self._symbolic = symbolic
        self._arch = arch
        self._e_machine = e_machine
        self._source = source
        self._info_size = source.section_size(".debug_info") or 0
        self._line_size = source.section_size(".debug_line")
        self._abbrev = self._whole(".debug_abbrev") or b""
        self._kept = {n: d for n in KEPT_SECTIONS if (d := self._whole(n)) is not None}
        self._built: dict[int, Any] = {}       # unit offset: its symcache, or WHOLE
        # A unit costs symbolic about what its share of the whole file would
        # (libpython: 76 units, 9.7 of its 14 MB of .debug_info, 0.27 s; the
        # whole file 0.35 s), plus copies of the kept sections: the units stop
        # where those copies pass 16 times .debug_info's size (64 units at
        # least).
        kept = sum(len(d) for d in self._kept.values())
        self._copies_left = max(64, 16 * self._info_size // max(kept, 1))
        self._all_listed: bool | None = None   # see _every_unit_listed
        self.exhausted = False                 # too many built: the whole index answers
        self.built = 0                         # units whose symcache was built

    def _whole(self, name: str) -> bytes | None:
        size = self._source.section_size(name)
        return self._source.section_part(name, 0, size) if size is not None else None

    def lookup(self, svma: int) -> list | Any:
        """symbolic's SourceLocations at svma from the symcache of the unit
        the source places it in, or WHOLE: no unit known, one not built
        this way, or too many built."""
        if self.exhausted:
            return WHOLE
        unit = self._source.unit_offset(svma)
        if unit is None:
            # In no unit: no DWARF function there when .debug_aranges lists
            # every unit (libpython's PLT and _init, 0x109bf0: lines.py and
            # the whole file's index find none either); otherwise the whole
            # file's index looks.
            return [] if self._every_unit_listed() else WHOLE
        sc = self._built.get(unit)
        if sc is None:
            sc = self._built[unit] = self._build(unit)
        if sc is WHOLE:
            return WHOLE
        try:
            return list(sc.lookup(svma))
        except Exception:
            return WHOLE

    def _every_unit_listed(self) -> bool:
        """Whether units are found by .debug_aranges and it has a set for
        every compile unit of .debug_info (GCC writes one for each, an empty
        one for a unit without code); False for a section this does not
        read."""
        if self._all_listed is None:
            self._all_listed = False
            listed = self._source.listed_units()
            if listed is None:
                return False
            at = 0
            while at < self._info_size:
                head = self._source.section_part(".debug_info", at, 7)
                if head is None:
                    return False
                length, version = struct.unpack_from("<IH", head, 0)
                if length >= 0xFFFFFFF0 or at + 4 + length > self._info_size:
                    return False
                kind = head[6] if version == 5 else _DW_UT_COMPILE
                if kind == _DW_UT_COMPILE and at not in listed:
                    return False
                at += 4 + length
            self._all_listed = True
        return self._all_listed

    def _build(self, offset: int) -> Any:
        read = self._source.section_part
        head = read(".debug_info", offset, min(12, self._info_size - offset))
        header = unit_span(head, offset, self._info_size) if head is not None else None
        if header is None:
            return WHOLE
        got = read(".debug_info", offset, header.end - offset)
        if got is None:
            return WHOLE
        unit = bytearray(got)
        root = _uleb(unit, header.size)
        table = self_contained(self._abbrev, header.abbrev_offset, root[0] if root else 0)
        if table is None:
            return WHOLE
        if self._copies_left <= 0:
            self.exhausted = True
            return WHOLE
        self._copies_left -= 1
        try:
            # The unit with its own abbreviation table and line program alone,
            # their offsets in it set to 0 (libpython's .debug_line is 3 MB:
            # a copy of it a unit was most of a unit's cost).
            struct.pack_into("<I", unit, header.abbrev_field, 0)
            sections = dict(self._kept)
            sections[".debug_abbrev"] = self._abbrev[header.abbrev_offset:table[0]]
            at = stmt_list_at(unit, header, table[1])
            if at is not None and self._line_size is not None:
                start = struct.unpack_from("<I", unit, at)[0]
                program = self._line_program(start)
                if program is not None:
                    struct.pack_into("<I", unit, at, 0)
                    sections[".debug_line"] = program
            if ".debug_line" not in sections and self._line_size is not None:
                whole = self._whole(".debug_line")
                if whole is not None:
                    sections[".debug_line"] = whole
            elf = assembled_elf(self._e_machine, bytes(unit), sections)
            obj = self._symbolic.debuginfo.Archive.from_bytes(elf).get_object(arch=self._arch)
            if obj is None:
                return WHOLE
            sc = obj.make_symcache()
            self.built += 1
            return sc
        except Exception:
            return WHOLE

    def _line_program(self, offset: int) -> bytes | None:
        """The 32-bit DWARF line program at `offset` of .debug_line, or None
        where it is not one lying wholly in the section."""
        head = self._source.section_part(".debug_line", offset, 4)
        if head is None:
            return None
        length = struct.unpack_from("<I", head, 0)[0]
        if length >= 0xFFFFFFF0:
            return None
        return self._source.section_part(".debug_line", offset, 4 + length)
