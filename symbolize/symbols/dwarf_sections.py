"""The DWARF sections of an ELF file, as lines.py and unit_symcache.py read
them: a part at a time (a unit, a line program) or whole, a compressed
section inflated as far as it is read and kept for both; pyelftools' section
descriptors of them, streams that read the same way; .debug_aranges read
with struct."""
from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING, Any, Literal

from ..elfcompress import Inflater
from ..elffile import SHF_COMPRESSED, Binary

if TYPE_CHECKING:
    from collections.abc import Callable

    from elftools.dwarf.structs import DWARFStructs


class DwarfSections:
    """One file's DWARF sections, read part by part or whole."""

    def __init__(self, binary: Binary) -> None:
        self.binary = binary
        self._inflaters: dict[str, Inflater] = {}     # compressed sections, by name
        # (aranges_sets of .debug_aranges; False: not read yet)
        self._sets: list[tuple[int, list[tuple[int, int]]]] | None | Literal[False] = False

    def size(self, name: str) -> int | None:
        """The size of a section, decompressed (a compressed one's header
        says: nothing is inflated); None where it is absent."""
        sec = self.binary.get_section(name)
        if sec is None:
            return None
        if not sec.flags & SHF_COMPRESSED:
            return sec.size
        inflater = self._inflater(name, sec)
        return inflater.size if inflater.ok else None

    def part(self, name: str, offset: int, size: int) -> bytes | None:
        """size bytes at offset of a section, decompressed, or None past its
        end.  A compressed section is inflated up to there and kept (the
        units asked about end before most of libc6-dbg's .debug_info
        does); another is read from the file, part by part: a unit's own
        symcache needs its unit and line program, not the whole of
        libpython's 14 MB of .debug_info."""
        sec = self.binary.get_section(name)
        if sec is None or offset < 0 or size < 0:
            return None
        if sec.flags & SHF_COMPRESSED:
            got = self._inflater(name, sec).upto(offset + size)
            if offset + size > len(got):
                return None
            return bytes(got[offset:offset + size])
        if offset + size > sec.size:
            return None
        return self.binary.read(sec.offset + offset, size)

    def whole(self, name: str) -> bytes | None:
        """A section's bytes, decompressed (a compressed one kept), or None."""
        sec = self.binary.get_section(name)
        if sec is None:
            return None
        if sec.flags & SHF_COMPRESSED:
            return self._inflater(name, sec).whole()
        return self.binary.section_data(sec)

    def stream(self, name: str, by_part: bool) -> SectionStream | LazySection | None:
        """A file-like reader of a section (pyelftools' streams), or None
        where the section is absent (or a compressed one's header is bad).
        by_part: reading as part() does, a Python call a read (where
        pyelftools reads a few units: the native index answers the rest);
        else the whole section in an io.BytesIO, made at the first read."""
        size = self.size(name)          # (None: absent, or a bad header)
        if size is None:
            return None
        if by_part:
            return SectionStream(self, name, size)
        return LazySection(lambda: self.whole(name), size)

    def _inflater(self, name: str, sec: Any) -> Inflater:
        got = self._inflaters.get(name)
        if got is None:
            got = self._inflaters[name] = Inflater(self.binary, sec)
        return got

    def aranges(self) -> list[tuple[int, int, int]] | None:
        """.debug_aranges' ranges (read_aranges), read without a pyelftools
        DWARFInfo; None where it is absent or aranges_sets does not read it."""
        return _ranges_of(self._aranges_sets())

    def listed_units(self) -> set[int] | None:
        """The units .debug_aranges has a set for (aranges_sets), or None."""
        sets = self._aranges_sets()
        return None if sets is None else {unit for unit, _ in sets}

    def _aranges_sets(self) -> list[tuple[int, list[tuple[int, int]]]] | None:
        if self._sets is False:
            self._sets = None
            data = self.whole(".debug_aranges")
            if data is not None:
                from elftools.dwarf.structs import DWARFStructs
                b = self.binary
                structs = DWARFStructs(little_endian=b.little_endian, dwarf_format=32,
                                       address_size=8 if b.is_64 else 4)
                self._sets = aranges_sets(bytes(data), structs)
        return self._sets


class SectionStream:
    """One section as pyelftools reads it (seek, tell, read), its bytes
    from DwarfSections.part at each read: a unit's DIEs read by pyelftools
    inflate a compressed .debug_info only up to that unit, and a section
    it never reads (.debug_loclists, where no DIE says DW_FORM_loclistx)
    not at all; an uncompressed one is read from the file's mapping, not
    copied whole first."""
    __slots__ = ("sections", "name", "size", "pos")

    def __init__(self, sections: DwarfSections, name: str, size: int) -> None:
        self.sections = sections
        self.name = name
        self.size = size
        self.pos = 0

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = max(0, offset if whence == 0 else self.pos + offset if whence == 1
                       else self.size + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int | None = -1) -> bytes:
        """n bytes from the position (fewer at the section's end)."""
        left = self.size - self.pos
        if n is None or n < 0 or n > left:
            n = left
        if n <= 0:
            return b""
        data = self.sections.part(self.name, self.pos, n) or b""
        self.pos += len(data)
        return data


class LazySection:
    """An io.BytesIO of a section's bytes, made at its first use (a section
    pyelftools never reads, .debug_loclists where no DIE says
    DW_FORM_loclistx, is never read or inflated); its methods are then the
    BytesIO's own, as fast."""

    def __init__(self, load: Callable[[], bytes | None], size: int) -> None:
        self._load = load
        self.size = size

    def __getattr__(self, name: str) -> Any:
        stream = self.__dict__.get("_stream")
        if stream is None:
            stream = self._stream = io.BytesIO(self._load() or b"")
            self.read, self.seek, self.tell = stream.read, stream.seek, stream.tell
        return getattr(stream, name)


# Sections pyelftools' DWARFInfo takes, by its keyword. .debug_loc(lists) are
# needed although no location is read: pyelftools resolves DW_FORM_loclistx
# while it parses a DIE.
SECTIONS = {
    "debug_info_sec": ".debug_info",
    "debug_aranges_sec": ".debug_aranges",
    "debug_abbrev_sec": ".debug_abbrev",
    "debug_str_sec": ".debug_str",
    "debug_line_sec": ".debug_line",
    "debug_line_str_sec": ".debug_line_str",
    "debug_str_offsets_sec": ".debug_str_offsets",
    "debug_addr_sec": ".debug_addr",
    "debug_ranges_sec": ".debug_ranges",
    "debug_rnglists_sec": ".debug_rnglists",
    "debug_loc_sec": ".debug_loc",
    "debug_loclists_sec": ".debug_loclists",
}
UNUSED_SECTIONS = ("debug_frame_sec", "eh_frame_sec", "debug_pubtypes_sec", "debug_pubnames_sec",
                   "debug_sup_sec", "gnu_debugaltlink_sec", "debug_types_sec")


def pyelftools_sections(b: Binary, supplementary: bool = False,
                        sections: DwarfSections | None = None, by_part: bool = False
                        ) -> tuple[dict, Any] | None:
    """The DWARF sections of a file as pyelftools' section descriptors, with
    its DwarfConfig; None without .debug_info and .debug_abbrev (a
    supplementary file: without .debug_str and them; dwz moves strings
    alone there where no DIE is shared).  sections: read through it, as
    its streams (DwarfSections.stream, by_part or not: lines.py's own
    file); else each section read (and decompressed) whole now."""
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor, DwarfConfig
    secs: dict = dict.fromkeys(UNUSED_SECTIONS)
    for key, name in SECTIONS.items():
        sec = b.get_section(name)
        stream: Any = None
        if sec is None:
            pass
        elif sections is not None:
            stream = sections.stream(name, by_part)
        else:
            data = b.section_data(sec)
            stream = None if data is None else io.BytesIO(bytes(data))
        if stream is None:
            secs[key] = None          # absent, or unreadable (already warned)
            continue
        size = len(stream.getbuffer()) if isinstance(stream, io.BytesIO) else stream.size
        secs[key] = DebugSectionDescriptor(stream, name, sec.offset, size, sec.addr)  # type: ignore[union-attr]
    has_units = secs["debug_info_sec"] is not None and secs["debug_abbrev_sec"] is not None
    if not (has_units or (supplementary and secs["debug_str_sec"] is not None)):
        return None
    return secs, DwarfConfig(little_endian=b.little_endian, machine_arch=b.machine or "",
                             default_address_size=8 if b.is_64 else 4)


def _fixed_layout(construct: Any) -> tuple[str, list[str]] | None:
    """(struct format, names) of a pyelftools struct of numbers: for each
    field the first fixed-size number found in it (for the initial length,
    its 32-bit form); None when a field has none."""
    fmt, names = "", []
    for sub in construct.subcons:
        inner = sub
        while not hasattr(inner, "packer"):
            if hasattr(inner, "subcon"):
                inner = inner.subcon
            elif getattr(inner, "subcons", None):
                inner = inner.subcons[0]
            else:
                return None
        fmt += inner.packer.format[-1:] if fmt else inner.packer.format
        names.append(sub.name)
    return fmt, names


def read_aranges(data: bytes | bytearray, structs: DWARFStructs) -> list[tuple[int, int, int]] | None:
    """(begin, end, CU offset) of every range of .debug_aranges (aranges_sets,
    flattened), or None where aranges_sets does not read the section."""
    return _ranges_of(aranges_sets(data, structs))


def _ranges_of(sets: list[tuple[int, list[tuple[int, int]]]] | None
               ) -> list[tuple[int, int, int]] | None:
    """aranges_sets' ranges as (begin, end, CU offset)."""
    return None if sets is None else [(lo, hi, unit) for unit, ranges in sets
                                      for lo, hi in ranges]


def aranges_sets(data: bytes | bytearray, structs: DWARFStructs
                 ) -> list[tuple[int, list[tuple[int, int]]]] | None:
    """Each set of .debug_aranges: its unit's offset in .debug_info and its
    (begin, end) ranges (none for a unit without code), read as pyelftools'
    ARanges reads them but with struct: its construct parse of each address
    costs more than a lookup saves on a libc's ranges.  The set header layout
    is derived from pyelftools' Dwarf_aranges_header.  None (pyelftools then
    reads it) for 64-bit DWARF or segmented addresses."""
    layout = _fixed_layout(structs.Dwarf_aranges_header)
    if layout is None:
        return None
    header = struct.Struct(layout[0])
    names = layout[1]
    endian = layout[0][0]
    out = []
    offset = 0
    while offset + header.size <= len(data):
        h = dict(zip(names, header.unpack_from(data, offset)))
        if h["unit_length"] >= 0xFFFFFFF0 or h["segment_size"] != 0 or \
                h["address_size"] not in (4, 8):
            return None
        end = offset + 4 + h["unit_length"]
        pair = struct.Struct(endian + ("II" if h["address_size"] == 4 else "QQ"))
        pos = offset + header.size
        pos = -(-pos // pair.size) * pair.size      # tuples align to their size
        ranges = []
        while pos + pair.size <= min(end, len(data)):
            addr, length = pair.unpack_from(data, pos)
            pos += pair.size
            if addr == 0 and length == 0:
                break
            if length:
                ranges.append((addr, addr + length))
        out.append((h["debug_info_offset"], ranges))
        if end <= offset:
            return None
        offset = end
    return out
