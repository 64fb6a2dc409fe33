"""DWARF call frame information: `.eh_frame` (found through `.eh_frame_hdr`)
and `.debug_frame`, evaluated to one row for one address: `CfiTable`.

Decoding is lazy on purpose: parsing all of libc's `.eh_frame` in pyelftools
costs more than a whole run, while a profile touches a few dozen functions.
Opening a table reads only the section bytes and the `.eh_frame_hdr` search
table; an FDE is decoded the first time an address inside it is asked for,
its whole CFA program is run once into a sorted list of rows, and the row
for each asked address is memoised.

Nothing here raises on malformed input: an FDE that cannot be decoded gives
no row (`row_for` returns None), like an address with no CFI at all.

Addresses are svma (as stated in the ELF file).  The parts: cfi_encoding
(LEB128, pointer encodings, sections), cfi_entries (CIEs, FDEs, the FDE
index), cfi_rows (CFA programs run into CfiRows), dwarf_expr (DWARF
expressions); this module is their face.
"""
from __future__ import annotations

import bisect
import struct
from typing import IO, TYPE_CHECKING, Any

from construct import ConstructError

from .cfi_encoding import (EH_FRAME_HDR_HEADER, POINTER_ENCODING, CfiError, CfiSection,
                           StackOutOfRange, describe_pointer_encoding)
from .cfi_entries import decode_fde, hdr_index, scan_index
from .cfi_rows import (RULE_EXPRESSION, RULE_OFFSET, RULE_REGISTER, RULE_SAME_VALUE,
                       RULE_UNDEFINED, RULE_VAL_EXPRESSION, RULE_VAL_OFFSET, CfiRow)
from .dwarf_expr import evaluate_expression

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..elffile import Binary
    from .cfi_entries import Fde, FdeIndex

__all__ = [
    "CfiTable", "CfiRow", "CfiError", "StackOutOfRange",
    "evaluate_expression",
    "RULE_UNDEFINED", "RULE_SAME_VALUE", "RULE_OFFSET", "RULE_VAL_OFFSET",
    "RULE_REGISTER", "RULE_EXPRESSION", "RULE_VAL_EXPRESSION",
    "EH_FRAME_HDR_HEADER", "POINTER_ENCODING", "describe_pointer_encoding",
]


class _Memo(dict):
    """key -> compute(key), computed on first use."""
    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self.compute(key)
        return value


# What a table keeps of what it decoded, then forgets to start afresh (the
# project's rule for caches: cleared when full).  A row is a CfiRow and its
# rules, some hundreds of bytes in Python: the whole of a big binary's CFI
# would not fit in memory, while the working set of a recording (the
# functions its stacks pass through) is far smaller than this bound.
CFI_ROWS_KEPT = 1 << 16
# Addresses whose row is remembered (CfiTable.rows).
CFI_ADDRESSES_KEPT = 1 << 16


class CfiTable:
    """Call frame information of one ELF file, looked up by svma."""

    def __init__(self, eh_frame: CfiSection | None = None, eh_frame_hdr: CfiSection | None = None,
                 debug_frame: CfiSection | None = None) -> None:
        """Sections as CfiSection objects; use from_elf() or from_sections()."""
        self._sections: list[list[Any]] = []  # (CfiSection, lazily built FdeIndex or None)
        self._eh_hdr = eh_frame_hdr
        for sec in (eh_frame, debug_frame):
            if sec is not None and sec.data:
                self._sections.append([sec, None])
        # svma -> CfiRow or None, each found on first use: what row_for
        # answers, and what the unwinder indexes (a dict lookup, no call)
        self.rows: dict[int, CfiRow | None] = _Memo(self._find_row)
        self.stats_fdes_decoded = 0
        self.stats_forgotten = 0       # times the decoded FDEs were let go (CFI_ROWS_KEPT)
        self._rows_held = 0            # rows of the FDEs decoded and kept

    # -- construction -----------------------------------------------------

    @classmethod
    def from_elf(cls, path_or_file: Binary | str | IO[bytes] | bytes,
                 debug_frame_path: Binary | str | IO[bytes] | bytes | None = None) -> CfiTable:
        """Table for an ELF file given as an open Binary, a path, a binary
        file object or bytes.  `debug_frame_path` names a separate debug
        file (or is its Binary) whose .debug_frame is used where .eh_frame
        has no FDE.  Returns an empty
        table (every lookup None) when the file is not a readable ELF."""
        eh = hdr = dbg = None
        try:
            eh, hdr, dbg = _read_elf_sections(path_or_file)
        except Exception:
            pass
        if debug_frame_path is not None:
            try:
                _, _, dbg2 = _read_elf_sections(debug_frame_path)
                if dbg2 is not None:
                    dbg = dbg2 if dbg is None else dbg
            except Exception:
                pass
        return cls(eh, hdr, dbg)

    @classmethod
    def from_sections(cls, eh_frame: bytes | None = None, eh_frame_addr: int = 0,
                      eh_frame_hdr: bytes | None = None, eh_frame_hdr_addr: int = 0,
                      debug_frame: bytes | None = None, address_size: int = 8,
                      little_endian: bool = True) -> CfiTable:
        """Table from raw section bytes and their svma (for tests and for
        callers that already hold the sections, like a vdso image)."""
        endian = "<" if little_endian else ">"
        eh = hdr = dbg = None
        if eh_frame_hdr is not None:
            hdr = CfiSection(eh_frame_hdr, eh_frame_hdr_addr, True, endian, address_size,
                           datarel_base=eh_frame_hdr_addr)
        if eh_frame is not None:
            eh = CfiSection(eh_frame, eh_frame_addr, True, endian, address_size)
        if debug_frame is not None:
            dbg = CfiSection(debug_frame, 0, False, endian, address_size)
        return cls(eh, hdr, dbg)

    # -- lookup -----------------------------------------------------------

    def has_cfi(self) -> bool:
        return bool(self._sections)

    def row_for(self, svma: int) -> CfiRow | None:
        """The CfiRow in force at svma, or None when no FDE covers it (or the
        covering FDE is malformed); the same as self.rows[svma]."""
        return self.rows[svma]

    def _find_row(self, svma: int) -> CfiRow | None:
        if len(self.rows) >= CFI_ADDRESSES_KEPT:
            self.rows.clear()
        for entry in self._sections:
            try:
                row = self._row_in(entry, svma)
            except Exception:       # a malformed section never escapes
                row = None
            if row is not None:
                return row
        return None

    def _index(self, entry: list[Any]) -> FdeIndex:
        """The FDE index of one section, built on first use."""
        sec, index = entry
        if index is None:
            if sec.is_eh and self._eh_hdr is not None:
                try:
                    index = hdr_index(self._eh_hdr, sec)
                except (CfiError, ConstructError, struct.error, IndexError, ValueError):
                    index = None
            if index is None:
                index = scan_index(sec)
            entry[1] = index
        return index

    def _fde_in(self, entry: list[Any], svma: int) -> Fde | None:
        """The decoded Fde of one section covering svma, or None."""
        sec = entry[0]
        offset = self._index(entry).find(svma)
        if offset is None:
            return None
        known = offset in sec.fdes
        fde = decode_fde(sec, offset)
        if not known:
            self.stats_fdes_decoded += 1
            if fde is not None:
                self._rows_held += len(fde.rows)
                if self._rows_held > CFI_ROWS_KEPT:
                    self._forget(sec, offset, fde)
        if fde is None or not (fde.start <= svma < fde.end):
            return None
        return fde

    def _forget(self, sec: CfiSection, offset: int, fde: Fde) -> None:
        """Let go of the decoded FDEs and the rows remembered by address
        (they hold those FDEs' rows), but the FDE just decoded."""
        self.stats_forgotten += 1
        for entry in self._sections:
            entry[0].fdes.clear()
        self.rows.clear()
        sec.fdes[offset] = fde
        self._rows_held = len(fde.rows)

    def _row_in(self, entry: list[Any], svma: int) -> CfiRow | None:
        fde = self._fde_in(entry, svma)
        if fde is None:
            return None
        i = bisect.bisect_right(fde.locs, svma) - 1
        if i < 0:
            return None
        return fde.rows[i]

    def fde_range(self, svma: int) -> tuple[int, int] | None:
        """(start, end) svma range of the FDE covering svma, or None."""
        for entry in self._sections:
            try:
                fde = self._fde_in(entry, svma)
            except Exception:
                fde = None
            if fde is not None:
                return fde.start, fde.end
        return None


def _read_elf_sections(source: Binary | str | IO[bytes] | bytes
                       ) -> tuple[CfiSection | None, CfiSection | None, CfiSection | None]:
    """(eh_frame, eh_frame_hdr, debug_frame) CfiSections of an ELF file: an
    open Binary (the one the symbolizer already holds), a path, a binary
    file object or bytes."""
    from ..elffile import Binary

    if isinstance(source, Binary):
        return _sections_of(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        binary = Binary("<memory>", data=bytes(source))
    elif hasattr(source, "read"):
        binary = Binary(getattr(source, "name", "<stream>"), data=source.read())
    else:
        binary = Binary(source)
    try:
        return _sections_of(binary)
    finally:
        binary.close()


def _sections_of(binary: Binary) -> tuple[CfiSection | None, CfiSection | None, CfiSection | None]:
    if not binary.ok:
        raise CfiError(binary.error or "not an ELF file")
    endian = "<" if binary.little_endian else ">"
    asize = 8 if binary.is_64 else 4
    got = binary.get_section(".got")
    eh = hdr = dbg = None
    # section_data: None for a SHT_NOBITS section (stripped out of a debug
    # file); SHF_COMPRESSED contents decompressed.
    s = binary.get_section(".eh_frame_hdr")
    data = binary.section_data(s)
    if data is not None:
        # (data: the section is there)
        hdr = CfiSection(data, s.addr, True, endian, asize, datarel_base=s.addr)  # type: ignore[union-attr]
    s = binary.get_section(".eh_frame")
    data = binary.section_data(s)
    if data is not None:
        # datarel in .eh_frame itself is relative to the GOT (i386 ABI);
        # x86_64 and aarch64 compilers use pcrel there
        # (data: the section is there)
        eh = CfiSection(data, s.addr, True, endian, asize,  # type: ignore[union-attr]
                      datarel_base=got.addr if got is not None else None)
    data = binary.section_data(".debug_frame")
    if data is not None:
        dbg = CfiSection(data, 0, False, endian, asize)
    return eh, hdr, dbg
