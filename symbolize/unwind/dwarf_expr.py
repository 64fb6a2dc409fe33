"""DWARF expressions, the subset CFI uses (glibc, PLT stubs, signal
frames): `evaluate_expression`.  Opcodes by pyelftools' DW_OP_* names."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .cfi_encoding import CfiError, StackOutOfRange, sleb128, uleb128

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

# The opcodes, as pyelftools names them (elftools.dwarf.dwarf_expr's
# DW_OP_name2opcode, which tests/symbolize/test_unwind_cfi.py checks these against:
# importing it here would load pyelftools' construct library at start-up).
DW_OP_addr = 0x03
DW_OP_deref = 0x06
DW_OP_const1u = 0x08
DW_OP_const1s = 0x09
DW_OP_const2u = 0x0A
DW_OP_const2s = 0x0B
DW_OP_const4u = 0x0C
DW_OP_const4s = 0x0D
DW_OP_const8u = 0x0E
DW_OP_const8s = 0x0F
DW_OP_constu = 0x10
DW_OP_consts = 0x11
DW_OP_dup = 0x12
DW_OP_drop = 0x13
DW_OP_over = 0x14
DW_OP_pick = 0x15
DW_OP_swap = 0x16
DW_OP_rot = 0x17
DW_OP_abs = 0x19
DW_OP_and = 0x1A
DW_OP_div = 0x1B
DW_OP_minus = 0x1C
DW_OP_mod = 0x1D
DW_OP_mul = 0x1E
DW_OP_neg = 0x1F
DW_OP_not = 0x20
DW_OP_or = 0x21
DW_OP_plus = 0x22
DW_OP_plus_uconst = 0x23
DW_OP_shl = 0x24
DW_OP_shr = 0x25
DW_OP_shra = 0x26
DW_OP_xor = 0x27
DW_OP_bra = 0x28
DW_OP_eq = 0x29
DW_OP_ge = 0x2A
DW_OP_gt = 0x2B
DW_OP_le = 0x2C
DW_OP_lt = 0x2D
DW_OP_ne = 0x2E
DW_OP_skip = 0x2F
DW_OP_lit0 = 0x30
DW_OP_lit31 = 0x4F
DW_OP_reg0 = 0x50
DW_OP_reg31 = 0x6F
DW_OP_breg0 = 0x70
DW_OP_breg31 = 0x8F
DW_OP_regx = 0x90
DW_OP_bregx = 0x92
DW_OP_deref_size = 0x94
DW_OP_nop = 0x96

# Expressions longer than this (in steps, branches included) are refused:
# a loop in a hostile one would never end.
MAX_EXPRESSION_STEPS = 10000


class _Machine:
    """One evaluation's registers, memory and word size."""
    __slots__ = ("get_register", "read_word", "address_size", "mask", "sign")

    def __init__(self, get_register: Callable[[int], int | None],
                 read_word: Callable[[int], int | None], address_size: int) -> None:
        self.get_register = get_register
        self.read_word = read_word
        self.address_size = address_size
        self.mask = (1 << (8 * address_size)) - 1
        self.sign = 1 << (8 * address_size - 1)

    def signed(self, v: int) -> int:
        return v - (self.mask + 1) if v & self.sign else v

    def reg(self, num: int) -> int:
        v = self.get_register(num)
        if v is None:
            raise CfiError("expression needs unknown register %d" % num)
        return v

    def deref(self, addr: int) -> int:
        v = self.read_word(addr)
        if v is None:
            raise StackOutOfRange(addr)
        return v


def evaluate_expression(expr: bytes, get_register: Callable[[int], int | None],
                        read_word: Callable[[int], int | None], initial: Sequence[int] = (),
                        address_size: int = 8) -> int:
    """Value left on top of the stack after running DWARF expression `expr`.

    `get_register(dwarf_number)` returns a register value or None (unknown);
    `read_word(address)` returns the pointer-size word at address or None
    (outside the snapshot -> StackOutOfRange).  `initial` is pushed first
    (the CFA, for register rules).  Raises CfiError on anything else.
    """
    m = _Machine(get_register, read_word, address_size)
    stack = list(initial)
    data = expr
    pos = 0
    n = len(data)
    steps = 0
    while pos < n:
        steps += 1
        if steps > MAX_EXPRESSION_STEPS:
            raise CfiError("expression runs too long")
        op = data[pos]
        pos += 1
        pushed = _operand(m, op, data, pos)
        if pushed is not None:
            value, pos = pushed
            stack.append(value)
        elif op == DW_OP_skip or op == DW_OP_bra:
            (off,) = struct.unpack_from("<h", data, pos)
            pos += 2
            if op == DW_OP_skip or stack.pop() != 0:
                pos += off
                if pos < 0 or pos > n:
                    raise CfiError("branch out of the expression")
        else:
            pos = _stack_op(m, op, data, pos, stack)
    if not stack:
        raise CfiError("expression leaves an empty stack")
    return stack[-1]


def _operand(m: _Machine, op: int, data: bytes, pos: int) -> tuple[int, int] | None:
    """(the value op pushes, the position after it) for an op that pushes a
    value of its own (a literal, a constant, a register, an address); None
    for any other op."""
    if DW_OP_lit0 <= op <= DW_OP_lit31:
        return op - DW_OP_lit0, pos
    if DW_OP_breg0 <= op <= DW_OP_breg31:
        off, pos = sleb128(data, pos)
        return (m.reg(op - DW_OP_breg0) + off) & m.mask, pos
    if DW_OP_reg0 <= op <= DW_OP_reg31:          # (a location, used as value)
        return m.reg(op - DW_OP_reg0), pos
    if op == DW_OP_bregx:
        r, pos = uleb128(data, pos)
        off, pos = sleb128(data, pos)
        return (m.reg(r) + off) & m.mask, pos
    if op == DW_OP_regx:
        r, pos = uleb128(data, pos)
        return m.reg(r), pos
    if op == DW_OP_addr:
        return (int.from_bytes(data[pos:pos + m.address_size], "little"),
                pos + m.address_size)
    fmt = _CONST_FORMATS.get(op)
    if fmt is not None:
        (v,) = struct.unpack_from("<" + fmt, data, pos)
        return v & m.mask, pos + struct.calcsize(fmt)
    if op == DW_OP_constu:
        v, pos = uleb128(data, pos)
        return v & m.mask, pos
    if op == DW_OP_consts:
        v, pos = sleb128(data, pos)
        return v & m.mask, pos
    return None


def _stack_op(m: _Machine, op: int, data: bytes, pos: int, stack: list[int]) -> int:
    """Run an op that works on the stack; the position after it."""
    mask = m.mask
    if op in _BINARY:
        b = stack.pop()
        a = stack.pop()
        stack.append(_BINARY[op](a, b, m.signed, mask) & mask)
    elif op == DW_OP_deref:
        stack.append(m.deref(stack.pop()))
    elif op == DW_OP_deref_size:
        size = data[pos]
        pos += 1
        stack.append(m.deref(stack.pop()) & ((1 << (8 * size)) - 1))
    elif op == DW_OP_dup:
        stack.append(stack[-1])
    elif op == DW_OP_drop:
        stack.pop()
    elif op == DW_OP_over:
        stack.append(stack[-2])
    elif op == DW_OP_pick:
        idx = data[pos]
        pos += 1
        stack.append(stack[-1 - idx])
    elif op == DW_OP_swap:
        stack[-1], stack[-2] = stack[-2], stack[-1]
    elif op == DW_OP_rot:
        stack[-1], stack[-2], stack[-3] = stack[-2], stack[-3], stack[-1]
    elif op == DW_OP_plus_uconst:
        v, pos = uleb128(data, pos)
        stack.append((stack.pop() + v) & mask)
    elif op == DW_OP_abs:
        stack.append(abs(m.signed(stack.pop())) & mask)
    elif op == DW_OP_neg:
        stack.append((-m.signed(stack.pop())) & mask)
    elif op == DW_OP_not:
        stack.append(~stack.pop() & mask)
    elif op != DW_OP_nop:
        raise CfiError("unsupported DWARF expression op 0x%x" % op)
    return pos


_CONST_FORMATS = {DW_OP_const1u: "B", DW_OP_const1s: "b", DW_OP_const2u: "H",
                  DW_OP_const2s: "h", DW_OP_const4u: "I", DW_OP_const4s: "i",
                  DW_OP_const8u: "Q", DW_OP_const8s: "q"}


def _div(a: int, b: int, signed: Callable[[int], int], mask: int) -> int:
    if b == 0:
        raise CfiError("division by zero in expression")
    q = abs(signed(a)) // abs(signed(b))
    return q if (signed(a) < 0) == (signed(b) < 0) else -q


def _mod(a: int, b: int, signed: Callable[[int], int], mask: int) -> int:
    if b == 0:
        raise CfiError("modulo by zero in expression")
    return a % b


_BINARY: dict[int, Callable[[int, int, Callable[[int], int], int], int]] = {
    DW_OP_and: lambda a, b, s, m: a & b,
    DW_OP_div: _div,                                        # (signed)
    DW_OP_minus: lambda a, b, s, m: a - b,
    DW_OP_mod: _mod,
    DW_OP_mul: lambda a, b, s, m: a * b,
    DW_OP_or: lambda a, b, s, m: a | b,
    DW_OP_plus: lambda a, b, s, m: a + b,
    DW_OP_shl: lambda a, b, s, m: a << b if b < 128 else 0,
    DW_OP_shr: lambda a, b, s, m: a >> b,
    DW_OP_shra: lambda a, b, s, m: s(a) >> min(b, 127),
    DW_OP_xor: lambda a, b, s, m: a ^ b,
    # comparisons are signed (DWARF 5 2.5.1.4)
    DW_OP_eq: lambda a, b, s, m: int(s(a) == s(b)),
    DW_OP_ge: lambda a, b, s, m: int(s(a) >= s(b)),
    DW_OP_gt: lambda a, b, s, m: int(s(a) > s(b)),
    DW_OP_le: lambda a, b, s, m: int(s(a) <= s(b)),
    DW_OP_lt: lambda a, b, s, m: int(s(a) < s(b)),
    DW_OP_ne: lambda a, b, s, m: int(s(a) != s(b)),
}
