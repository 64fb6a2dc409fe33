"""CFA programs run into rows: `run_program` executes a CIE's or an FDE's
DW_CFA_* instructions into `CfiRow`s, the unwind rules in force over each
address range (RULE_*: where each register of the caller is).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

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

from .cfi_encoding import CfiError, sleb128, uleb128

if TYPE_CHECKING:
    from collections.abc import Callable

    from .cfi_encoding import CfiSection
    from .cfi_entries import Cie

    # A row's CFA rule: (register, offset), or ("expr", a DWARF expression);
    # the register is None before the first DW_CFA_def_cfa.
    CfaRule = tuple[Any, Any]
    # A register's rule: (RULE_*, argument), the argument an int (an offset
    # or a register), a DWARF expression (bytes) or None, as the kind says.
    Rule = tuple[str, Any]
    # CfiRow.saved_slots: (columns, first offset from the CFA, size, unpack_from).
    SavedSlots = tuple[tuple[int, ...], int, int, Callable[..., tuple[int, ...]]]

# Not among pyelftools' DW_CFA constants (GCC's, obsolete, still decoded).
DW_CFA_GNU_negative_offset_extended = 0x2f

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


def run_program(cie: Cie, sec: CfiSection, pos: int, end: int, loc: int, cfa: CfaRule | None,
                rules: dict[int, Rule] | None, initial_cie: Cie | None
                ) -> tuple[CfaRule, dict[int, Rule], list[tuple[int, CfiRow]]]:
    """Execute the CFA instructions in sec.data[pos:end] from address `loc`.
    Returns (cfa, rules, rows) with rows a list of (loc, CfiRow), one per
    address range, in address order.  `initial_cie` is None while running
    the CIE's own initial instructions."""
    data = sec.data
    code_align = cie.code_align
    rules = dict(rules) if rules else {}
    if cfa is None:
        cfa = (None, 0)
    stack: list[tuple[CfaRule, dict[int, Rule]]] = []
    rows: list[tuple[int, CfiRow]] = []
    init_rules = cie.initial_rules if initial_cie is not None else {}
    n = end
    while pos < n:
        op = data[pos]
        pos += 1
        high = op & 0xC0
        if high == DW_CFA_advance_loc:
            delta = (op & 0x3F) * code_align
        elif high == DW_CFA_offset:
            off, pos = uleb128(data, pos)
            rules[op & 0x3F] = (RULE_OFFSET, off * cie.data_align)
            continue
        elif high == DW_CFA_restore:
            _restore(rules, init_rules, op & 0x3F)
            continue
        elif op in _ADVANCES:
            delta, pos = _advance(op, cie, sec, pos, loc)
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
        elif op in _CFA_DEFINITIONS:
            cfa, pos = _define_cfa(op, data, pos, cfa, cie.data_align)
            continue
        else:
            pos = _set_rule(op, data, pos, rules, init_rules, cie.data_align)
            continue
        if pos > n:
            raise CfiError("CFA instruction runs past its entry")
        # an advance: the current row covers [loc, loc + delta)
        if initial_cie is None:
            raise CfiError("advance in a CIE's initial instructions")
        if delta:
            rows.append((loc, _row(cfa, rules, cie, sec)))
            loc += delta
    if pos > n:
        raise CfiError("CFA instruction runs past its entry")
    if initial_cie is not None:
        rows.append((loc, _row(cfa, rules, cie, sec)))
    return cfa, rules, rows


def _row(cfa: CfaRule, rules: dict[int, Rule], cie: Cie, sec: CfiSection) -> CfiRow:
    """The CfiRow of these rules (one object for equal rows)."""
    # Real CFI describes a few dozen registers at most; a hostile program
    # describing thousands would make every row a copy of them all.
    if len(rules) > MAX_RULES_PER_ROW:
        raise CfiError("CFI describes %d registers" % len(rules))
    key = (cfa, tuple(sorted(rules.items())), cie.ra_column,
           cie.signal_frame, cie.address_size, sec.endian)
    row = _SHARED_ROWS.get(key)
    if row is None:
        if len(_SHARED_ROWS) > SHARED_ROWS_KEPT:
            _SHARED_ROWS.clear()
        row = _SHARED_ROWS[key] = CfiRow(cfa, dict(rules), cie.ra_column,
                                         cie.signal_frame, cie.address_size, sec.endian)
    return row


_ADVANCES = frozenset((DW_CFA_advance_loc1, DW_CFA_advance_loc2, DW_CFA_advance_loc4,
                       DW_CFA_set_loc))


def _advance(op: int, cie: Cie, sec: CfiSection, pos: int, loc: int) -> tuple[int, int]:
    """(how far the location advances, the position after the operands) of
    DW_CFA_advance_loc1/2/4 and DW_CFA_set_loc."""
    data = sec.data
    if op == DW_CFA_advance_loc1:
        return data[pos] * cie.code_align, pos + 1
    if op == DW_CFA_advance_loc2:
        return struct.unpack_from(sec.endian + "H", data, pos)[0] * cie.code_align, pos + 2
    if op == DW_CFA_advance_loc4:
        return struct.unpack_from(sec.endian + "I", data, pos)[0] * cie.code_align, pos + 4
    # DW_CFA_set_loc
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
    return new_loc - loc, pos


_CFA_DEFINITIONS = frozenset((DW_CFA_def_cfa, DW_CFA_def_cfa_register, DW_CFA_def_cfa_offset,
                              DW_CFA_def_cfa_expression, DW_CFA_def_cfa_sf,
                              DW_CFA_def_cfa_offset_sf))


def _define_cfa(op: int, data: bytes, pos: int, cfa: CfaRule, data_align: int
                ) -> tuple[CfaRule, int]:
    """(the CFA rule, the position after the operands) of a DW_CFA_def_cfa*."""
    if op == DW_CFA_def_cfa:
        reg, pos = uleb128(data, pos)
        off, pos = uleb128(data, pos)
        return (reg, off), pos
    if op == DW_CFA_def_cfa_register:
        reg, pos = uleb128(data, pos)
        return (reg, cfa[1] if cfa[0] != "expr" else 0), pos
    if op == DW_CFA_def_cfa_offset:
        off, pos = uleb128(data, pos)
        if cfa[0] == "expr":
            raise CfiError("def_cfa_offset after a CFA expression")
        return (cfa[0], off), pos
    if op == DW_CFA_def_cfa_expression:
        size, pos = uleb128(data, pos)
        return ("expr", bytes(data[pos:pos + size])), pos + size
    if op == DW_CFA_def_cfa_sf:
        reg, pos = uleb128(data, pos)
        off, pos = sleb128(data, pos)
        return (reg, off * data_align), pos
    # DW_CFA_def_cfa_offset_sf
    off, pos = sleb128(data, pos)
    if cfa[0] == "expr":
        raise CfiError("def_cfa_offset_sf after a CFA expression")
    return (cfa[0], off * data_align), pos


def _set_rule(op: int, data: bytes, pos: int, rules: dict[int, Rule],
              init_rules: dict[int, Rule], data_align: int) -> int:
    """Run an instruction that sets (or drops) a register's rule, or does
    nothing (DW_CFA_nop, DW_CFA_GNU_args_size, DW_CFA_AARCH64_negate_ra_state);
    the position after its operands.  Any other opcode is an error."""
    if op == DW_CFA_nop:
        return pos
    if op == DW_CFA_offset_extended or op == DW_CFA_offset_extended_sf or \
            op == DW_CFA_GNU_negative_offset_extended:
        reg, pos = uleb128(data, pos)
        if op == DW_CFA_offset_extended_sf:
            off, pos = sleb128(data, pos)
        else:
            off, pos = uleb128(data, pos)
        if op == DW_CFA_GNU_negative_offset_extended:
            off = -off
        rules[reg] = (RULE_OFFSET, off * data_align)
    elif op == DW_CFA_restore_extended:
        reg, pos = uleb128(data, pos)
        _restore(rules, init_rules, reg)
    elif op == DW_CFA_undefined or op == DW_CFA_same_value:
        reg, pos = uleb128(data, pos)
        rules[reg] = (RULE_UNDEFINED if op == DW_CFA_undefined else RULE_SAME_VALUE, None)
    elif op == DW_CFA_register:
        reg, pos = uleb128(data, pos)
        reg2, pos = uleb128(data, pos)
        rules[reg] = (RULE_REGISTER, reg2)
    elif op == DW_CFA_expression or op == DW_CFA_val_expression:
        reg, pos = uleb128(data, pos)
        size, pos = uleb128(data, pos)
        kind = RULE_EXPRESSION if op == DW_CFA_expression else RULE_VAL_EXPRESSION
        rules[reg] = (kind, bytes(data[pos:pos + size]))
        pos += size
    elif op == DW_CFA_val_offset or op == DW_CFA_val_offset_sf:
        reg, pos = uleb128(data, pos)
        if op == DW_CFA_val_offset:
            off, pos = uleb128(data, pos)
        else:
            off, pos = sleb128(data, pos)
        rules[reg] = (RULE_VAL_OFFSET, off * data_align)
    elif op == DW_CFA_GNU_args_size:       # only for landing pads
        _, pos = uleb128(data, pos)
    elif op != DW_CFA_AARCH64_negate_ra_state:
        # (negate_ra_state, DW_CFA_GNU_window_save on SPARC: the return
        # address gets signed; Arch.ra_mask strips the code.)
        raise CfiError("unknown CFA opcode 0x%x" % op)
    return pos


def _restore(rules: dict[int, Rule], init_rules: dict[int, Rule], reg: int) -> None:
    if reg in init_rules:
        rules[reg] = init_rules[reg]
    else:
        rules.pop(reg, None)


