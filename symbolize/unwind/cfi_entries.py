"""CIEs and FDEs: their headers and bodies decoded (each FDE's program run
into rows once, when first asked for), and `FdeIndex`, a section's FDEs by
start address (from .eh_frame_hdr's table, or by walking the entries).
"""
from __future__ import annotations

import bisect
import struct
from typing import TYPE_CHECKING

from .cfi_encoding import (DW_EH_PE_datarel_sdata4, DW_EH_PE_omit, EH_FRAME_HDR_HEADER,
                           CfiError, CfiSection, sleb128, uleb128)
from .cfi_rows import run_program

if TYPE_CHECKING:
    from .cfi_rows import CfaRule, CfiRow, Rule


class Cie:
    __slots__ = ("code_align", "data_align", "ra_column", "fde_encoding",
                 "has_aug_data", "signal_frame", "instructions", "address_size",
                 "initial_cfa", "initial_rules")
    code_align: int
    data_align: int
    ra_column: int
    fde_encoding: int | None        # None in .debug_frame
    has_aug_data: bool
    signal_frame: bool
    instructions: tuple[int, int]
    address_size: int
    initial_cfa: CfaRule
    initial_rules: dict[int, Rule]


class Fde:
    __slots__ = ("cie", "start", "end", "locs", "rows")
    cie: Cie
    start: int
    end: int
    locs: list[int]
    rows: list[CfiRow]


def parse_entry_header(sec: CfiSection, offset: int) -> tuple[int, int, int, bool, int] | None:
    """(length_end, id_pos, id_value, id_is_cie, after_id) of the entry at offset,
    or None for the zero terminator."""
    data = sec.data
    u32 = struct.Struct(sec.endian + "I")
    (length,) = u32.unpack_from(data, offset)
    pos = offset + 4
    wide = False
    if length == 0xFFFFFFFF:
        (length,) = struct.unpack_from(sec.endian + "Q", data, pos)
        pos += 8
        wide = True
    if length == 0:
        return None
    end = pos + length
    if end > len(data):
        raise CfiError("entry at 0x%x runs past the section end" % offset)
    id_pos = pos
    if wide and not sec.is_eh:
        (cie_id,) = struct.unpack_from(sec.endian + "Q", data, pos)
        pos += 8
        is_cie = cie_id == 0xFFFFFFFFFFFFFFFF
    else:
        (cie_id,) = u32.unpack_from(data, pos)
        pos += 4
        is_cie = cie_id == 0 if sec.is_eh else cie_id == 0xFFFFFFFF
    return end, id_pos, cie_id, is_cie, pos


def decode_cie(sec: CfiSection, offset: int) -> Cie | None:
    if offset in sec.cies:
        return sec.cies[offset]
    cie = None
    try:
        cie = _decode_cie_anew(sec, offset)
    except (CfiError, IndexError, struct.error, ValueError):
        cie = None
    sec.cies[offset] = cie
    return cie


def _decode_cie_anew(sec: CfiSection, offset: int) -> Cie:
    hdr = parse_entry_header(sec, offset)
    if hdr is None or not hdr[3]:
        raise CfiError("no CIE at 0x%x" % offset)
    end, _, _, _, pos = hdr
    data = sec.data
    cie = Cie()
    version = data[pos]
    pos += 1
    aug_end = data.index(b"\0", pos, end)
    aug = data[pos:aug_end].decode("ascii", "replace")
    pos = aug_end + 1
    cie.address_size = sec.address_size
    if "eh" in aug:                 # old GCC: a pointer to exception data
        pos += sec.address_size
    if version >= 4:
        cie.address_size = data[pos]
        pos += 2                    # address_size, segment_selector_size
    cie.code_align, pos = uleb128(data, pos)
    cie.data_align, pos = sleb128(data, pos)
    if version == 1:
        cie.ra_column = data[pos]
        pos += 1
    else:
        cie.ra_column, pos = uleb128(data, pos)
    cie.fde_encoding = 0x00 if sec.is_eh else None
    cie.has_aug_data = aug.startswith("z")
    cie.signal_frame = False
    if cie.has_aug_data:
        aug_len, pos = uleb128(data, pos)
        aug_data_end = pos + aug_len
        for ch in aug[1:]:
            if ch == "R":
                cie.fde_encoding = data[pos]
                pos += 1
            elif ch == "L":
                pos += 1            # LSDA encoding; the LSDA is not our business
            elif ch == "P":
                penc = data[pos]
                _, pos = sec.read_encoded(pos + 1, penc & 0x7F)
            elif ch == "S":
                cie.signal_frame = True
            elif ch in "BG":        # aarch64 BTI / MTE-tagged frames: no data
                pass
            else:
                break               # unknown: the length lets us skip the rest
        pos = aug_data_end
    elif aug not in ("", "eh"):
        raise CfiError("unknown CIE augmentation %r" % aug)
    cie.instructions = (pos, end)
    # Run the initial instructions once: they are the state DW_CFA_restore
    # goes back to.
    cfa, rules, _ = run_program(cie, sec, pos, end, 0, None, None, None)
    cie.initial_cfa = cfa
    cie.initial_rules = rules
    return cie


def fde_address_range(sec: CfiSection, cie: Cie, pos: int) -> tuple[int, int, int]:
    """(start, end, pos) of an FDE's initial_location/address_range at pos."""
    if sec.is_eh:
        # (.eh_frame: the CIE has an FDE encoding)
        start, pos = sec.read_encoded(pos, cie.fde_encoding)  # type: ignore[arg-type]
        # the range has the same format but no application
        # (the same encoding)
        size, pos = sec.read_encoded(pos, cie.fde_encoding & 0x0F)  # type: ignore[operator]
    else:
        # .debug_frame: plain target addresses of the CIE's address size
        pair = struct.Struct(sec.endian + ("QQ" if cie.address_size == 8 else "II"))
        start, size = pair.unpack_from(sec.data, pos)
        pos += pair.size
    return start, start + size, pos


def cie_offset(sec: CfiSection, id_pos: int, cie_id: int) -> int:
    # In .eh_frame the id is the distance back to the CIE; in .debug_frame it
    # is the CIE's offset in the section.
    return id_pos - cie_id if sec.is_eh else cie_id


def decode_fde(sec: CfiSection, offset: int) -> Fde | None:
    """The Fde at offset (its rows computed), or None when malformed."""
    try:
        return sec.fdes[offset]
    except KeyError:
        pass
    fde = None
    try:
        fde = _decode_fde_anew(sec, offset)
    except (CfiError, IndexError, struct.error, ValueError, OverflowError):
        fde = None
    sec.fdes[offset] = fde
    return fde


def _decode_fde_anew(sec: CfiSection, offset: int) -> Fde:
    hdr = parse_entry_header(sec, offset)
    if hdr is None or hdr[3]:
        raise CfiError("no FDE at 0x%x" % offset)
    end, id_pos, cie_id, _, pos = hdr
    cie = decode_cie(sec, cie_offset(sec, id_pos, cie_id))
    if cie is None:
        raise CfiError("FDE at 0x%x has a bad CIE" % offset)
    fde = Fde()
    fde.cie = cie
    fde.start, fde.end, pos = fde_address_range(sec, cie, pos)
    if cie.has_aug_data:
        aug_len, pos = uleb128(sec.data, pos)
        pos += aug_len
    _, _, rows = run_program(cie, sec, pos, end, fde.start, cie.initial_cfa,
                              cie.initial_rules, cie)
    fde.locs = [loc for loc, _ in rows]
    fde.rows = [row for _, row in rows]
    return fde


class FdeIndex:
    """Sorted FDE start addresses of one section, for binary search."""

    def __init__(self, starts: list[int], offsets: list[int]) -> None:
        self.starts = starts        # svma of each FDE's first instruction, sorted
        self.offsets = offsets      # offset of that FDE in its section

    def find(self, svma: int) -> int | None:
        i = bisect.bisect_right(self.starts, svma) - 1
        if i < 0:
            return None
        return self.offsets[i]


def hdr_index(hdr: CfiSection, eh: CfiSection) -> FdeIndex | None:
    """FdeIndex from .eh_frame_hdr's sorted table, or None if it has none we can read."""
    data = hdr.data
    if len(data) < 4:
        return None
    head = EH_FRAME_HDR_HEADER.parse(data[:4])
    if head.version != 1:
        return None
    _, pos = hdr.read_encoded(4, head.eh_frame_ptr_enc)
    if head.fde_count_enc == DW_EH_PE_omit or head.table_enc == DW_EH_PE_omit:
        return None
    count, pos = hdr.read_encoded(pos, head.fde_count_enc)
    if head.table_enc == DW_EH_PE_datarel_sdata4:
        if pos + count * 8 > len(data):
            return None             # a cut table: scan .eh_frame instead
        # the common case, read in one go: pairs of int32 relative to the hdr
        vals = struct.unpack_from("%s%di" % (hdr.endian, 2 * count), data, pos)
        base = hdr.addr
        starts = [v + base for v in vals[0::2]]
        fdes = [v + base - eh.addr for v in vals[1::2]]
    else:
        starts, fdes = [], []
        for _ in range(count):
            s, pos = hdr.read_encoded(pos, head.table_enc)
            f, pos = hdr.read_encoded(pos, head.table_enc)
            starts.append(s)
            fdes.append(f - eh.addr)
    if any(starts[i] > starts[i + 1] for i in range(len(starts) - 1)):
        order = sorted(range(len(starts)), key=starts.__getitem__)
        starts = [starts[i] for i in order]
        fdes = [fdes[i] for i in order]
    return FdeIndex(starts, fdes)


def scan_index(sec: CfiSection) -> FdeIndex:
    """FdeIndex built by walking entry headers (no CFA programs are decoded).
    Used for .debug_frame, and for .eh_frame without a usable .eh_frame_hdr."""
    pairs = []
    offset = 0
    data = sec.data
    while offset + 4 <= len(data):
        try:
            hdr = parse_entry_header(sec, offset)
        except (CfiError, struct.error, IndexError):
            break
        if hdr is None:
            if sec.is_eh:
                break               # the terminator
            offset += 4
            continue
        end, id_pos, cie_id, is_cie, pos = hdr
        if not is_cie:
            cie = decode_cie(sec, cie_offset(sec, id_pos, cie_id))
            if cie is not None:
                try:
                    start, stop, _ = fde_address_range(sec, cie, pos)
                    if stop > start:
                        pairs.append((start, offset))
                except (CfiError, struct.error, IndexError):
                    pass
        offset = end
    pairs.sort()
    return FdeIndex([p[0] for p in pairs], [p[1] for p in pairs])
