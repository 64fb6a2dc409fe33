"""DWARF call frame information: `.eh_frame` (found through `.eh_frame_hdr`)
and `.debug_frame`, evaluated to one row for one address.

Decoding is lazy on purpose: parsing all of libc's `.eh_frame` costs 0.4 s in
pyelftools (see shared NOTES), while a profile touches a few dozen functions.
Opening a table reads only the section bytes and the `.eh_frame_hdr` search
table; an FDE is decoded the first time an address inside it is asked for,
its whole CFA program is run once into a sorted list of rows, and the row
for each asked address is memoised.

Nothing here raises on malformed input: an FDE that cannot be decoded gives
no row (`row_for` returns None), like an address with no CFI at all.

Addresses are svma (as stated in the ELF file).
"""
from __future__ import annotations

import bisect
import struct
from typing import IO, TYPE_CHECKING, Any, Literal

# (pyelftools 0.33 makes most of these names at import time, from its DW_CFA
# enum: mypy sees only those it also spells out)
from elftools.dwarf.constants import (  # type: ignore[attr-defined]
    DW_CFA_AARCH64_negate_ra_state,
    DW_CFA_GNU_args_size,
    DW_CFA_advance_loc,
    DW_CFA_advance_loc1,
    DW_CFA_advance_loc2,
    DW_CFA_advance_loc4,
    DW_CFA_def_cfa,
    DW_CFA_def_cfa_expression,
    DW_CFA_def_cfa_offset,
    DW_CFA_def_cfa_offset_sf,
    DW_CFA_def_cfa_register,
    DW_CFA_def_cfa_sf,
    DW_CFA_expression,
    DW_CFA_nop,
    DW_CFA_offset,
    DW_CFA_offset_extended,
    DW_CFA_offset_extended_sf,
    DW_CFA_register,
    DW_CFA_remember_state,
    DW_CFA_restore,
    DW_CFA_restore_extended,
    DW_CFA_restore_state,
    DW_CFA_same_value,
    DW_CFA_set_loc,
    DW_CFA_undefined,
    DW_CFA_val_expression,
    DW_CFA_val_offset,
    DW_CFA_val_offset_sf)
from construct import Struct, Int8ul, Enum, BitStruct, Flag, BitsInteger, ConstructError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..elffile import Binary

    # A row's CFA rule: (register, offset), or ("expr", a DWARF expression);
    # the register is None before the first DW_CFA_def_cfa.
    CfaRule = tuple[Any, Any]
    # A register's rule: (RULE_*, argument), the argument an int (an offset
    # or a register), a DWARF expression (bytes) or None, as the kind says.
    Rule = tuple[str, Any]
    # CfiRow.saved_slots: (columns, first offset from the CFA, size, unpack_from).
    SavedSlots = tuple[tuple[int, ...], int, int, Callable[..., tuple[int, ...]]]

__all__ = [
    "CfiTable", "CfiRow", "CfiError", "StackOutOfRange",
    "evaluate_expression",
    "RULE_UNDEFINED", "RULE_SAME_VALUE", "RULE_OFFSET", "RULE_VAL_OFFSET",
    "RULE_REGISTER", "RULE_EXPRESSION", "RULE_VAL_EXPRESSION",
    "EH_FRAME_HDR_HEADER", "POINTER_ENCODING", "describe_pointer_encoding",
]

MASK64 = (1 << 64) - 1


# Not among pyelftools' DW_CFA constants (GCC's, obsolete, still decoded).
DW_CFA_GNU_negative_offset_extended = 0x2f


class CfiError(Exception):
    """Malformed CFI or an expression that cannot be evaluated."""


class StackOutOfRange(CfiError):
    """A memory read fell outside the stack snapshot; `address` is the one wanted."""

    def __init__(self, address: int) -> None:
        super().__init__("memory at 0x%x is outside the stack snapshot" % address)
        self.address = address


# ---------------------------------------------------------------------------
# Layouts.  The fixed part of .eh_frame_hdr and the pointer-encoding byte are
# declarative construct schemas (they are read once per file, speed does not
# matter); the variable-length CIE/FDE bodies and the CFA programs are read by
# the small LEB128/pointer readers below because they sit on the hot path.

# LSB 5.0, "Exception Frame Header"
EH_FRAME_HDR_HEADER = Struct(
    "version" / Int8ul,             # 1
    "eh_frame_ptr_enc" / Int8ul,    # a DW_EH_PE_* byte
    "fde_count_enc" / Int8ul,
    "table_enc" / Int8ul,
    # followed by eh_frame_ptr, fde_count and the (initial_location, fde
    # address) table, each in its encoding
)

# A DW_EH_PE_* byte: how a pointer is stored (low nibble) and what it is
# relative to (bits 4-6); bit 7 says the stored value is the address of the
# pointer.  0xff (DW_EH_PE_omit) means absent.
POINTER_ENCODING = BitStruct(
    "indirect" / Flag,
    "application" / Enum(BitsInteger(3), absptr=0, pcrel=1, textrel=2,
                         datarel=3, funcrel=4, aligned=5),
    "format" / Enum(BitsInteger(4), absptr=0x0, uleb128=0x1, udata2=0x2,
                    udata4=0x3, udata8=0x4, sleb128=0x9, sdata2=0xa,
                    sdata4=0xb, sdata8=0xc),
)

DW_EH_PE_omit = 0xFF


def describe_pointer_encoding(enc: int) -> str:
    """'pcrel|sdata4'-style text for a DW_EH_PE_* byte (for messages)."""
    if enc == DW_EH_PE_omit:
        return "omit"
    p = POINTER_ENCODING.parse(bytes([enc]))
    return "%s%s|%s" % ("indirect|" if p.indirect else "", p.application, p.format)


DW_EH_PE_datarel_sdata4 = 0x3B

# Fixed-size pointer formats: struct format letter (little endian added later).
_PE_FIXED = {0x2: "H", 0x3: "I", 0x4: "Q", 0xA: "h", 0xB: "i", 0xC: "q"}


def _uleb(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _sleb(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            if b & 0x40:
                result -= 1 << shift
            return result, pos


class _Section:
    """Bytes of one CFI section and what is needed to read pointers in it."""

    def __init__(self, data: bytes, addr: int, is_eh: bool, endian: str, address_size: int,
                 datarel_base: int | None = None) -> None:
        self.data = bytes(data)
        self.addr = addr
        self.is_eh = is_eh
        self.endian = endian
        self.address_size = address_size
        self.datarel_base = datarel_base    # for DW_EH_PE_datarel (the .got on x86 / hdr)
        self.cies: dict[int, _Cie | None] = {}   # offset -> _Cie or None
        self.fdes: dict[int, _Fde | None] = {}   # offset -> _Fde or None

    def read_encoded(self, pos: int, enc: int) -> tuple[Any, int]:
        """(value, new_pos) of a DW_EH_PE-encoded pointer at pos."""
        # (the value: an int, or None for DW_EH_PE_omit)
        if enc == DW_EH_PE_omit:
            return None, pos
        fmt = enc & 0x0F
        field_addr = self.addr + pos
        if fmt == 0x0:
            size = self.address_size
            if len(self.data) < pos + size:
                raise CfiError("pointer beyond section end")
            value = int.from_bytes(self.data[pos:pos + size], self.endian_name)
            pos += size
        elif fmt == 0x1:
            value, pos = _uleb(self.data, pos)
        elif fmt == 0x9:
            value, pos = _sleb(self.data, pos)
        else:
            letter = _PE_FIXED.get(fmt)
            if letter is None:
                raise CfiError("unknown pointer format in %s" % describe_pointer_encoding(enc))
            st = struct.Struct(self.endian + letter)
            (value,) = st.unpack_from(self.data, pos)
            pos += st.size
        app = enc & 0x70
        if app == 0x10:         # pcrel
            value += field_addr
        elif app == 0x30:       # datarel
            if self.datarel_base is None:
                raise CfiError("datarel pointer without a base")
            value += self.datarel_base
        elif app not in (0x00,):
            # textrel/funcrel/aligned are not used by GCC or LLVM on our targets
            raise CfiError("unsupported pointer encoding %s" % describe_pointer_encoding(enc))
        if enc & 0x80:
            raise CfiError("unsupported pointer encoding %s" % describe_pointer_encoding(enc))
        return value & MASK64, pos

    @property
    def endian_name(self) -> Literal["little", "big"]:
        return "little" if self.endian == "<" else "big"


class _Cie:
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


class _Fde:
    __slots__ = ("cie", "start", "end", "locs", "rows")
    cie: _Cie
    start: int
    end: int
    locs: list[int]
    rows: list[CfiRow]


def _parse_entry_header(sec: _Section, offset: int) -> tuple[int, int, int, bool, int] | None:
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


def _decode_cie(sec: _Section, offset: int) -> _Cie | None:
    if offset in sec.cies:
        return sec.cies[offset]
    cie = None
    try:
        cie = _decode_cie_uncached(sec, offset)
    except (CfiError, IndexError, struct.error, ValueError):
        cie = None
    sec.cies[offset] = cie
    return cie


def _decode_cie_uncached(sec: _Section, offset: int) -> _Cie:
    hdr = _parse_entry_header(sec, offset)
    if hdr is None or not hdr[3]:
        raise CfiError("no CIE at 0x%x" % offset)
    end, _, _, _, pos = hdr
    data = sec.data
    cie = _Cie()
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
    cie.code_align, pos = _uleb(data, pos)
    cie.data_align, pos = _sleb(data, pos)
    if version == 1:
        cie.ra_column = data[pos]
        pos += 1
    else:
        cie.ra_column, pos = _uleb(data, pos)
    cie.fde_encoding = 0x00 if sec.is_eh else None
    cie.has_aug_data = aug.startswith("z")
    cie.signal_frame = False
    if cie.has_aug_data:
        aug_len, pos = _uleb(data, pos)
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
    cfa, rules, _ = _run_program(cie, sec, pos, end, 0, None, None, None)
    cie.initial_cfa = cfa
    cie.initial_rules = rules
    return cie


def _fde_address_range(sec: _Section, cie: _Cie, pos: int) -> tuple[int, int, int]:
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


def _cie_offset(sec: _Section, id_pos: int, cie_id: int) -> int:
    # In .eh_frame the id is the distance back to the CIE; in .debug_frame it
    # is the CIE's offset in the section.
    return id_pos - cie_id if sec.is_eh else cie_id


def _decode_fde(sec: _Section, offset: int) -> _Fde | None:
    """The _Fde at offset (its rows computed), or None when malformed."""
    try:
        return sec.fdes[offset]
    except KeyError:
        pass
    fde = None
    try:
        fde = _decode_fde_uncached(sec, offset)
    except (CfiError, IndexError, struct.error, ValueError, OverflowError):
        fde = None
    sec.fdes[offset] = fde
    return fde


def _decode_fde_uncached(sec: _Section, offset: int) -> _Fde:
    hdr = _parse_entry_header(sec, offset)
    if hdr is None or hdr[3]:
        raise CfiError("no FDE at 0x%x" % offset)
    end, id_pos, cie_id, _, pos = hdr
    cie = _decode_cie(sec, _cie_offset(sec, id_pos, cie_id))
    if cie is None:
        raise CfiError("FDE at 0x%x has a bad CIE" % offset)
    fde = _Fde()
    fde.cie = cie
    fde.start, fde.end, pos = _fde_address_range(sec, cie, pos)
    if cie.has_aug_data:
        aug_len, pos = _uleb(sec.data, pos)
        pos += aug_len
    _, _, rows = _run_program(cie, sec, pos, end, fde.start, cie.initial_cfa,
                              cie.initial_rules, cie)
    fde.locs = [loc for loc, _ in rows]
    fde.rows = [row for _, row in rows]
    return fde


# ---------------------------------------------------------------------------
# Rows

RULE_UNDEFINED = "undefined"
RULE_SAME_VALUE = "same_value"
RULE_OFFSET = "offset"                  # saved at CFA + N
RULE_VAL_OFFSET = "val_offset"          # value is CFA + N
RULE_REGISTER = "register"              # value is in register N
RULE_EXPRESSION = "expression"          # saved at eval(expr, push CFA)
RULE_VAL_EXPRESSION = "val_expression"  # value is eval(expr, push CFA)


class CfiRow:
    """The unwind rules in force at one address.

    The CFA is `cfa_register + cfa_offset`, or the value of the DWARF
    expression `cfa_expression` when that is not None.  `rules` maps a DWARF
    register column to (kind, argument) with kind one of the RULE_* names;
    a column absent from `rules` has no rule (the caller keeps callee-saved
    values).  `ra_column` is the return-address column of the CIE.
    `signal_frame` marks a signal trampoline (CIE augmentation 'S'): the
    caller's address is an interrupted pc, not a return address.
    `saved_slots`: when every rule is RULE_OFFSET (nearly every row a
    compiler emits), where they all are at once: (columns, first offset
    from the CFA, size, unpack_from) with `unpack_from(buffer, position)`
    the words from CFA + first offset on, in the order of `columns`; the
    unwinder reads them in one call instead of dispatching rule by rule.
    None otherwise.
    """

    __slots__ = ("cfa_register", "cfa_offset", "cfa_expression", "rules",
                 "ra_column", "signal_frame", "saved_slots")

    def __init__(self, cfa: CfaRule, rules: dict[int, Rule], ra_column: int, signal_frame: bool,
                 address_size: int = 8, endian: str = "<") -> None:
        if cfa[0] == "expr":
            self.cfa_register: int | None = None
            self.cfa_offset: int = 0
            self.cfa_expression: bytes | None = cfa[1]
        else:
            self.cfa_register, self.cfa_offset = cfa
            self.cfa_expression = None
        self.rules = rules
        self.ra_column = ra_column
        self.signal_frame = signal_frame
        self.saved_slots = _saved_slots(rules, address_size, endian)

    def __repr__(self) -> str:
        if self.cfa_expression is not None:
            cfa = "expr(%s)" % self.cfa_expression.hex()
        else:
            cfa = "r%s%+d" % (self.cfa_register, self.cfa_offset)
        rules = ", ".join("r%d=%s(%s)" % (c, k, v.hex() if isinstance(v, bytes) else v)
                          for c, (k, v) in sorted(self.rules.items()))
        return "CfiRow(cfa=%s, %s)" % (cfa, rules)


# struct format -> Struct.unpack_from (rows share a few layouts)
_SLOT_READERS: dict[str, Callable[..., tuple[Any, ...]]] = {}


def _saved_slots(rules: dict[int, Rule], address_size: int, endian: str) -> SavedSlots | None:
    """CfiRow.saved_slots of these rules: None unless every rule is
    RULE_OFFSET and no two slots overlap."""
    if not all(kind is RULE_OFFSET for kind, _ in rules.values()):
        return None
    slots = sorted((arg, column) for column, (_, arg) in rules.items())
    word = "Q" if address_size == 8 else "I"
    first = slots[0][0] if slots else 0
    parts = [endian]
    at = first
    for offset, _ in slots:
        if offset < at:
            return None
        parts.append("%dx%s" % (offset - at, word) if offset > at else word)
        at = offset + address_size
    fmt = "".join(parts)
    unpack_from = _SLOT_READERS.get(fmt)
    if unpack_from is None:
        unpack_from = _SLOT_READERS[fmt] = struct.Struct(fmt).unpack_from
    return tuple(column for _, column in slots), first, at - first, unpack_from


# Compilers nest DW_CFA_remember_state a level or two (one per epilogue).
MAX_REMEMBER_DEPTH = 64


MAX_RULES_PER_ROW = 96

# Rows equal in every field are one CfiRow (never changed once made): a
# binary's CFI repeats a few thousand rows over its addresses (the same
# prologue and epilogue steps in every function), and a row with its rules
# costs ~500 bytes.  Cleared when full.
SHARED_ROWS_KEPT = 1 << 14
_SHARED_ROWS: dict[tuple, CfiRow] = {}


def _run_program(cie: _Cie, sec: _Section, pos: int, end: int, loc: int, cfa: CfaRule | None,
                 rules: dict[int, Rule] | None, initial_cie: _Cie | None
                 ) -> tuple[CfaRule, dict[int, Rule], list[tuple[int, CfiRow]]]:
    """Execute the CFA instructions in sec.data[pos:end] from address `loc`.
    Returns (cfa, rules, rows) with rows a list of (loc, CfiRow), one per
    address range, in address order.  `initial_cie` is None while running
    the CIE's own initial instructions."""
    data = sec.data
    code_align = cie.code_align
    data_align = cie.data_align
    rules = dict(rules) if rules else {}
    if cfa is None:
        cfa = (None, 0)
    stack: list[tuple[CfaRule, dict[int, Rule]]] = []
    rows: list[tuple[int, CfiRow]] = []
    init_rules = cie.initial_rules if initial_cie is not None else {}

    def emit(at: int) -> None:
        # Real CFI describes a few dozen registers at most; a hostile program
        # describing thousands would make every row a copy of them all.
        # (rules and cfa are set before: mypy gives a closure their declared types)
        if len(rules) > MAX_RULES_PER_ROW:  # type: ignore[arg-type]
            raise CfiError("CFI describes %d registers" % len(rules))  # type: ignore[arg-type]
        key = (cfa, tuple(sorted(rules.items())), cie.ra_column,  # type: ignore[union-attr]
               cie.signal_frame, cie.address_size, sec.endian)
        row = _SHARED_ROWS.get(key)
        if row is None:
            if len(_SHARED_ROWS) > SHARED_ROWS_KEPT:
                _SHARED_ROWS.clear()
            row = _SHARED_ROWS[key] = CfiRow(cfa, dict(rules), cie.ra_column,  # type: ignore[arg-type]
                                             cie.signal_frame, cie.address_size, sec.endian)
        rows.append((at, row))

    n = end
    while pos < n:
        op = data[pos]
        pos += 1
        high = op & 0xC0
        if high == DW_CFA_advance_loc:
            delta = (op & 0x3F) * code_align
        elif high == DW_CFA_offset:
            off, pos = _uleb(data, pos)
            rules[op & 0x3F] = (RULE_OFFSET, off * data_align)
            continue
        elif high == DW_CFA_restore:
            _restore(rules, init_rules, op & 0x3F)
            continue
        elif op == DW_CFA_nop:
            continue
        elif op == DW_CFA_advance_loc1:
            delta = data[pos] * code_align
            pos += 1
        elif op == DW_CFA_advance_loc2:
            delta = struct.unpack_from(sec.endian + "H", data, pos)[0] * code_align
            pos += 2
        elif op == DW_CFA_advance_loc4:
            delta = struct.unpack_from(sec.endian + "I", data, pos)[0] * code_align
            pos += 4
        elif op == DW_CFA_set_loc:
            if sec.is_eh:
                # encoded like the FDE's initial location
                # (.eh_frame: the CIE has an FDE encoding)
                new_loc, pos = sec.read_encoded(pos, cie.fde_encoding)  # type: ignore[arg-type]
            else:
                size = cie.address_size
                new_loc = int.from_bytes(data[pos:pos + size], sec.endian_name)
                pos += size
            if new_loc < loc:
                raise CfiError("DW_CFA_set_loc goes backwards")
            delta = new_loc - loc
        elif op == DW_CFA_offset_extended:
            reg, pos = _uleb(data, pos)
            off, pos = _uleb(data, pos)
            rules[reg] = (RULE_OFFSET, off * data_align)
            continue
        elif op == DW_CFA_restore_extended:
            reg, pos = _uleb(data, pos)
            _restore(rules, init_rules, reg)
            continue
        elif op == DW_CFA_undefined:
            reg, pos = _uleb(data, pos)
            rules[reg] = (RULE_UNDEFINED, None)
            continue
        elif op == DW_CFA_same_value:
            reg, pos = _uleb(data, pos)
            rules[reg] = (RULE_SAME_VALUE, None)
            continue
        elif op == DW_CFA_register:
            reg, pos = _uleb(data, pos)
            reg2, pos = _uleb(data, pos)
            rules[reg] = (RULE_REGISTER, reg2)
            continue
        elif op == DW_CFA_remember_state:
            # Each level copies the rules: unbounded nesting would make a
            # hostile FDE cost memory quadratic in its length.
            if len(stack) >= MAX_REMEMBER_DEPTH:
                raise CfiError("DW_CFA_remember_state nested deeper than %d"
                               % MAX_REMEMBER_DEPTH)
            stack.append((cfa, dict(rules)))
            continue
        elif op == DW_CFA_restore_state:
            if not stack:
                raise CfiError("DW_CFA_restore_state with an empty stack")
            # The CFA is part of the remembered state (DWARF 5 6.4.2.4).
            cfa, rules = stack.pop()
            continue
        elif op == DW_CFA_def_cfa:
            reg, pos = _uleb(data, pos)
            off, pos = _uleb(data, pos)
            cfa = (reg, off)
            continue
        elif op == DW_CFA_def_cfa_register:
            reg, pos = _uleb(data, pos)
            cfa = (reg, cfa[1] if cfa[0] != "expr" else 0)
            continue
        elif op == DW_CFA_def_cfa_offset:
            off, pos = _uleb(data, pos)
            if cfa[0] == "expr":
                raise CfiError("def_cfa_offset after a CFA expression")
            cfa = (cfa[0], off)
            continue
        elif op == DW_CFA_def_cfa_expression:
            size, pos = _uleb(data, pos)
            cfa = ("expr", bytes(data[pos:pos + size]))
            pos += size
            continue
        elif op == DW_CFA_expression or op == DW_CFA_val_expression:
            reg, pos = _uleb(data, pos)
            size, pos = _uleb(data, pos)
            kind = RULE_EXPRESSION if op == DW_CFA_expression else RULE_VAL_EXPRESSION
            rules[reg] = (kind, bytes(data[pos:pos + size]))
            pos += size
            continue
        elif op == DW_CFA_offset_extended_sf:
            reg, pos = _uleb(data, pos)
            off, pos = _sleb(data, pos)
            rules[reg] = (RULE_OFFSET, off * data_align)
            continue
        elif op == DW_CFA_def_cfa_sf:
            reg, pos = _uleb(data, pos)
            off, pos = _sleb(data, pos)
            cfa = (reg, off * data_align)
            continue
        elif op == DW_CFA_def_cfa_offset_sf:
            off, pos = _sleb(data, pos)
            if cfa[0] == "expr":
                raise CfiError("def_cfa_offset_sf after a CFA expression")
            cfa = (cfa[0], off * data_align)
            continue
        elif op == DW_CFA_val_offset or op == DW_CFA_val_offset_sf:
            reg, pos = _uleb(data, pos)
            if op == DW_CFA_val_offset:
                off, pos = _uleb(data, pos)
            else:
                off, pos = _sleb(data, pos)
            rules[reg] = (RULE_VAL_OFFSET, off * data_align)
            continue
        elif op == DW_CFA_GNU_args_size:       # only for landing pads
            _, pos = _uleb(data, pos)
            continue
        elif op == DW_CFA_GNU_negative_offset_extended:
            reg, pos = _uleb(data, pos)
            off, pos = _uleb(data, pos)
            rules[reg] = (RULE_OFFSET, -off * data_align)
            continue
        elif op == DW_CFA_AARCH64_negate_ra_state:
            # (DW_CFA_GNU_window_save on SPARC): the return address gets
            # signed; Arch.ra_mask strips the code.
            continue
        else:
            raise CfiError("unknown CFA opcode 0x%x" % op)
        if pos > n:
            raise CfiError("CFA instruction runs past its entry")
        # an advance: the current row covers [loc, loc + delta)
        if initial_cie is None:
            raise CfiError("advance in a CIE's initial instructions")
        if delta:
            emit(loc)
            loc += delta
    if pos > n:
        raise CfiError("CFA instruction runs past its entry")
    if initial_cie is not None:
        emit(loc)
    return cfa, rules, rows


def _restore(rules: dict[int, Rule], init_rules: dict[int, Rule], reg: int) -> None:
    if reg in init_rules:
        rules[reg] = init_rules[reg]
    else:
        rules.pop(reg, None)


# ---------------------------------------------------------------------------
# DWARF expressions (the subset CFI uses: glibc, PLT stubs, signal frames)

def evaluate_expression(expr: bytes, get_register: Callable[[int], int | None],
                        read_word: Callable[[int], int | None], initial: Sequence[int] = (),
                        address_size: int = 8) -> int:
    """Value left on top of the stack after running DWARF expression `expr`.

    `get_register(dwarf_number)` returns a register value or None (unknown);
    `read_word(address)` returns the pointer-size word at address or None
    (outside the snapshot -> StackOutOfRange).  `initial` is pushed first
    (the CFA, for register rules).  Raises CfiError on anything else.
    """
    mask = (1 << (8 * address_size)) - 1
    sign = 1 << (8 * address_size - 1)

    def signed(v: int) -> int:
        return v - (mask + 1) if v & sign else v

    def reg(num: int) -> int:
        v = get_register(num)
        if v is None:
            raise CfiError("expression needs unknown register %d" % num)
        return v

    def deref(addr: int) -> int:
        v = read_word(addr)
        if v is None:
            raise StackOutOfRange(addr)
        return v

    stack = list(initial)
    data = expr
    pos = 0
    n = len(data)
    steps = 0
    while pos < n:
        steps += 1
        if steps > 10000:
            raise CfiError("expression runs too long")
        op = data[pos]
        pos += 1
        if 0x30 <= op <= 0x4F:                  # lit0..lit31
            stack.append(op - 0x30)
        elif 0x70 <= op <= 0x8F:                # breg0..breg31
            off, pos = _sleb(data, pos)
            stack.append((reg(op - 0x70) + off) & mask)
        elif 0x50 <= op <= 0x6F:                # reg0..reg31 (a location, used as value)
            stack.append(reg(op - 0x50))
        elif op == 0x92:                        # bregx
            r, pos = _uleb(data, pos)
            off, pos = _sleb(data, pos)
            stack.append((reg(r) + off) & mask)
        elif op == 0x90:                        # regx
            r, pos = _uleb(data, pos)
            stack.append(reg(r))
        elif op == 0x03:                        # addr
            stack.append(int.from_bytes(data[pos:pos + address_size], "little"))
            pos += address_size
        elif op in _CONST_FORMATS:
            fmt = _CONST_FORMATS[op]
            (v,) = struct.unpack_from("<" + fmt, data, pos)
            pos += struct.calcsize(fmt)
            stack.append(v & mask)
        elif op == 0x10:                        # constu
            v, pos = _uleb(data, pos)
            stack.append(v & mask)
        elif op == 0x11:                        # consts
            v, pos = _sleb(data, pos)
            stack.append(v & mask)
        elif op == 0x06:                        # deref
            stack.append(deref(stack.pop()))
        elif op == 0x94:                        # deref_size
            size = data[pos]
            pos += 1
            stack.append(deref(stack.pop()) & ((1 << (8 * size)) - 1))
        elif op == 0x12:                        # dup
            stack.append(stack[-1])
        elif op == 0x13:                        # drop
            stack.pop()
        elif op == 0x14:                        # over
            stack.append(stack[-2])
        elif op == 0x15:                        # pick
            idx = data[pos]
            pos += 1
            stack.append(stack[-1 - idx])
        elif op == 0x16:                        # swap
            stack[-1], stack[-2] = stack[-2], stack[-1]
        elif op == 0x17:                        # rot
            stack[-1], stack[-2], stack[-3] = stack[-2], stack[-3], stack[-1]
        elif op == 0x23:                        # plus_uconst
            v, pos = _uleb(data, pos)
            stack.append((stack.pop() + v) & mask)
        elif op in _BINARY:
            b = stack.pop()
            a = stack.pop()
            stack.append(_BINARY[op](a, b, signed, mask) & mask)
        elif op == 0x19:                        # abs
            stack.append(abs(signed(stack.pop())) & mask)
        elif op == 0x1F:                        # neg
            stack.append((-signed(stack.pop())) & mask)
        elif op == 0x20:                        # not
            stack.append(~stack.pop() & mask)
        elif op == 0x2F or op == 0x28:          # skip / bra
            (off,) = struct.unpack_from("<h", data, pos)
            pos += 2
            if op == 0x2F or stack.pop() != 0:
                pos += off
                if pos < 0 or pos > n:
                    raise CfiError("branch out of the expression")
        elif op == 0x96:                        # nop
            pass
        else:
            raise CfiError("unsupported DWARF expression op 0x%x" % op)
    if not stack:
        raise CfiError("expression leaves an empty stack")
    return stack[-1]


_CONST_FORMATS = {0x08: "B", 0x09: "b", 0x0A: "H", 0x0B: "h",
                  0x0C: "I", 0x0D: "i", 0x0E: "Q", 0x0F: "q"}


def _div(a: int, b: int, signed: Callable[[int], int], mask: int) -> int:
    if b == 0:
        raise CfiError("division by zero in expression")
    q = abs(signed(a)) // abs(signed(b))
    return q if (signed(a) < 0) == (signed(b) < 0) else -q


def _mod(a: int, b: int, signed: Callable[[int], int], mask: int) -> int:
    if b == 0:
        raise CfiError("modulo by zero in expression")
    return a % b


_BINARY = {
    0x1A: lambda a, b, s, m: a & b,                         # and
    0x1B: _div,                                             # div (signed)
    0x1C: lambda a, b, s, m: a - b,                         # minus
    0x1D: _mod,                                             # mod
    0x1E: lambda a, b, s, m: a * b,                         # mul
    0x21: lambda a, b, s, m: a | b,                         # or
    0x22: lambda a, b, s, m: a + b,                         # plus
    0x24: lambda a, b, s, m: a << b if b < 128 else 0,      # shl
    0x25: lambda a, b, s, m: a >> b,                        # shr
    0x26: lambda a, b, s, m: s(a) >> min(b, 127),           # shra
    0x27: lambda a, b, s, m: a ^ b,                         # xor
    # comparisons are signed (DWARF 5 2.5.1.4)
    0x29: lambda a, b, s, m: int(s(a) == s(b)),             # eq
    0x2A: lambda a, b, s, m: int(s(a) >= s(b)),             # ge
    0x2B: lambda a, b, s, m: int(s(a) > s(b)),              # gt
    0x2C: lambda a, b, s, m: int(s(a) <= s(b)),             # le
    0x2D: lambda a, b, s, m: int(s(a) < s(b)),              # lt
    0x2E: lambda a, b, s, m: int(s(a) != s(b)),             # ne
}


# ---------------------------------------------------------------------------
# The table

class _Index:
    """Sorted FDE start addresses of one section, for binary search."""

    def __init__(self, starts: list[int], offsets: list[int]) -> None:
        self.starts = starts        # svma of each FDE's first instruction, sorted
        self.offsets = offsets      # offset of that FDE in its section

    def find(self, svma: int) -> int | None:
        i = bisect.bisect_right(self.starts, svma) - 1
        if i < 0:
            return None
        return self.offsets[i]


def _hdr_index(hdr: _Section, eh: _Section) -> _Index | None:
    """_Index from .eh_frame_hdr's sorted table, or None if it has none we can read."""
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
    return _Index(starts, fdes)


def _scan_index(sec: _Section) -> _Index:
    """_Index built by walking entry headers (no CFA programs are decoded).
    Used for .debug_frame, and for .eh_frame without a usable .eh_frame_hdr."""
    pairs = []
    offset = 0
    data = sec.data
    while offset + 4 <= len(data):
        try:
            hdr = _parse_entry_header(sec, offset)
        except (CfiError, struct.error, IndexError):
            break
        if hdr is None:
            if sec.is_eh:
                break               # the terminator
            offset += 4
            continue
        end, id_pos, cie_id, is_cie, pos = hdr
        if not is_cie:
            cie = _decode_cie(sec, _cie_offset(sec, id_pos, cie_id))
            if cie is not None:
                try:
                    start, stop, _ = _fde_address_range(sec, cie, pos)
                    if stop > start:
                        pairs.append((start, offset))
                except (CfiError, struct.error, IndexError):
                    pass
        offset = end
    pairs.sort()
    return _Index([p[0] for p in pairs], [p[1] for p in pairs])


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
# rules, about 500 bytes in Python: a DWARF recording of a build (make -j2 of
# 48 files) decoded 3,837 of cc1's 45,201 FDEs, 71,472 rows, 38 MiB, and the
# whole of a big binary's CFI would be gigabytes.  The working set of a
# recording (the functions its stacks pass through) is far smaller: the
# CPython, sqlite and 12-file make recordings hold 6,371, 1,656 and 55,830.
CFI_ROWS_KEPT = 1 << 16
# Addresses whose row is remembered (CfiTable.rows).
CFI_ADDRESSES_KEPT = 1 << 16


class CfiTable:
    """Call frame information of one ELF file, looked up by svma."""

    def __init__(self, eh_frame: _Section | None = None, eh_frame_hdr: _Section | None = None,
                 debug_frame: _Section | None = None) -> None:
        """Sections as _Section objects; use from_elf() or from_sections()."""
        self._sections: list[list[Any]] = []  # (_Section, lazily built _Index or None)
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
            hdr = _Section(eh_frame_hdr, eh_frame_hdr_addr, True, endian, address_size,
                           datarel_base=eh_frame_hdr_addr)
        if eh_frame is not None:
            eh = _Section(eh_frame, eh_frame_addr, True, endian, address_size)
        if debug_frame is not None:
            dbg = _Section(debug_frame, 0, False, endian, address_size)
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

    def _index(self, entry: list[Any]) -> _Index:
        """The FDE index of one section, built on first use."""
        sec, index = entry
        if index is None:
            if sec.is_eh and self._eh_hdr is not None:
                try:
                    index = _hdr_index(self._eh_hdr, sec)
                except (CfiError, ConstructError, struct.error, IndexError, ValueError):
                    index = None
            if index is None:
                index = _scan_index(sec)
            entry[1] = index
        return index

    def _fde_in(self, entry: list[Any], svma: int) -> _Fde | None:
        """The decoded _Fde of one section covering svma, or None."""
        sec = entry[0]
        offset = self._index(entry).find(svma)
        if offset is None:
            return None
        known = offset in sec.fdes
        fde = _decode_fde(sec, offset)
        if not known:
            self.stats_fdes_decoded += 1
            if fde is not None:
                self._rows_held += len(fde.rows)
                if self._rows_held > CFI_ROWS_KEPT:
                    self._forget(sec, offset, fde)
        if fde is None or not (fde.start <= svma < fde.end):
            return None
        return fde

    def _forget(self, sec: _Section, offset: int, fde: _Fde) -> None:
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
                       ) -> tuple[_Section | None, _Section | None, _Section | None]:
    """(eh_frame, eh_frame_hdr, debug_frame) _Sections of an ELF file: an
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


def _sections_of(binary: Binary) -> tuple[_Section | None, _Section | None, _Section | None]:
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
        hdr = _Section(data, s.addr, True, endian, asize, datarel_base=s.addr)  # type: ignore[union-attr]
    s = binary.get_section(".eh_frame")
    data = binary.section_data(s)
    if data is not None:
        # datarel in .eh_frame itself is relative to the GOT (i386 ABI);
        # x86_64 and aarch64 compilers use pcrel there
        # (data: the section is there)
        eh = _Section(data, s.addr, True, endian, asize,  # type: ignore[union-attr]
                      datarel_base=got.addr if got is not None else None)
    data = binary.section_data(".debug_frame")
    if data is not None:
        dbg = _Section(data, 0, False, endian, asize)
    return eh, hdr, dbg
