"""libtraceevent's evaluation at parse time: the numbers of a print fmt's
constant expressions (arg_num_eval), the text of flag and symbol values
(arg_eval), C's strtoull and the casts of a type's width (eval_type_str)."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .lexer import U64, ParseError

if TYPE_CHECKING:
    from .parser import _Arg


@functools.lru_cache(maxsize=4096)
def strtoull(text: str) -> int:
    """C strtoull(text, NULL, 0), wrapped to 64 bits."""
    s = text.lstrip(" \t\n\v\f\r")
    neg = False
    if s[:1] in ("+", "-"):
        neg = s[0] == "-"
        s = s[1:]
    base = 10
    if s[:2].lower() == "0x" and len(s) > 2 and s[2] in "0123456789abcdefABCDEF":
        base, s = 16, s[2:]
    elif s[:1] == "0":
        base = 8
    digits = "0123456789abcdef"[:base]
    n = 0
    for ch in s:
        d = digits.find(ch.lower())
        if d < 0:
            break
        n = n * base + d
    if n > U64:
        return U64
    return (-n) & U64 if neg else n


def strtoll(text: str) -> int:
    """C strtoll(text, NULL, 0) as a Python int (saturating)."""
    s = text.lstrip(" \t\n\v\f\r")
    neg = s[:1] == "-"
    mag = strtoull(s[1:] if s[:1] in "+-" and s[:1] else s)
    if neg:
        return -min(mag, 1 << 63)
    return min(mag, (1 << 63) - 1)


def s64(v: int) -> int:
    v &= U64
    return v - (1 << 64) if v >> 63 else v


def arg_num_eval(arg: _Arg) -> int | None:
    """arg_num_eval(): the value of a constant expression as a long long, or
    None when it is not one."""
    if arg.kind == "atom":
        return strtoll(arg.atom)
    if arg.kind == "type":
        v = arg_num_eval(arg.item)
        if v is None:
            return None
        return s64(eval_type_str(v & U64, arg.type, False))
    if arg.kind != "op":
        return None
    op = arg.op
    left: int | None
    if op in ("-", "+") and arg.left.kind == "null":
        left = 0
    elif op == "~":
        left = 0
    else:
        left = arg_num_eval(arg.left)
        if left is None:
            return None
    right = arg_num_eval(arg.right) if arg.right is not None else None
    if right is None:
        return None
    if op == "|":
        v = left | right
    elif op == "||":
        v = int(bool(left or right))
    elif op == "&":
        v = left & right
    elif op == "&&":
        v = int(bool(left and right))
    elif op == "<":
        v = int(left < right)
    elif op == "<<":
        v = left << (right & 63)
    elif op == "<=":
        v = int(left <= right)
    elif op == ">":
        v = int(left > right)
    elif op == ">>":
        v = left >> (right & 63)
    elif op == ">=":
        v = int(left >= right)
    elif op == "==":
        v = int(left == right)
    elif op == "!=":
        v = int(left != right)
    elif op == "-":
        v = left - right
    elif op == "+":
        v = left + right
    elif op == "~":
        v = ~right
    else:
        return None
    return s64(v)


def arg_eval(arg: _Arg) -> str:
    """arg_eval(): the text of a flag/symbol value or string."""
    if arg.kind == "atom":
        return arg.atom
    if arg.kind == "type":
        return arg_eval(arg.item)
    if arg.kind == "op":
        v = arg_num_eval(arg)
        if v is None:
            raise ParseError("cannot evaluate")
        return "%d" % v
    raise ParseError("invalid eval type")


def eval_type_str(val: int, ctype: str, pointer: bool) -> int:
    if not ctype:
        return val
    if pointer:
        if ctype[-1] != "*":
            return val
        return eval_type_str(val, ctype[:-2], False)
    if ctype[-1] == "*" or ctype.startswith("struct"):
        return val
    if ctype == "u8":
        return val & 0xff
    if ctype == "u16":
        return val & 0xffff
    if ctype == "u32":
        return val & 0xffffffff
    if ctype in ("u64", "s64"):
        return val
    if ctype == "s8":
        return val & 0xff
    if ctype == "s16":
        return val & 0xffff
    if ctype == "s32":
        return val & 0xffffffff
    if ctype.startswith("unsigned "):
        ctype = ctype[9:]
    if ctype == "char":
        return val & 0xff
    if ctype == "short":
        return val & 0xffff
    if ctype == "int":
        return val & 0xffffffff
    return val
