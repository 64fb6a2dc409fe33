"""A print fmt's text cut into segments, as libtraceevent's
parse_arg_format() and parse_arg_string() do: literal text, and each
conversion (%d, %s, %p...) with the print arg it takes."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .lexer import ParseError

if TYPE_CHECKING:
    from .parser import _Arg


_SIMPLE_INT = {"d": True, "i": True, "u": False}


class Segment:
    __slots__ = ("kind", "format", "arg", "len_arg", "ls", "text", "simple")
    arg: _Arg       # (None in a text segment)

    def __init__(self, kind: str, fmt: str, arg: _Arg | None = None, len_arg: _Arg | None = None,
                 ls: int = 0) -> None:
        self.kind = kind            # "text", "digit", "pointer", "string"
        self.format = fmt
        self.arg = arg  # type: ignore[assignment]
        self.len_arg = len_arg
        self.ls = ls
        self.text = fmt.encode("latin-1", "replace") if kind == "text" else None
        # %d %u %ld %llx ... without flags, width or precision: (bits, signed, hex)
        self.simple = None
        if kind == "digit" and len_arg is None and 0 <= ls <= 2:
            mods, conv = fmt[1:-1], fmt[-1:]
            if mods in ("", "l", "ll") and (conv in _SIMPLE_INT or conv == "x"):
                self.simple = (64 if mods else 32, _SIMPLE_INT.get(conv, False),
                               conv == "x")


def pointer_ext(fmt: str, i: int) -> int:
    """parse_arg_format_pointer(): how many letters after %p belong to it."""
    def at(k: int) -> str:
        return fmt[i + k] if i + k < len(fmt) else ""
    c = at(0)
    ret = 0
    if c in ("F", "S", "f", "s"):
        ret = 1
    elif c in ("M", "m"):
        if at(1) in ("R", "F"):
            ret += 1
        ret += 1
    elif c in ("I", "i"):
        index = 2
        c1 = at(1)
        if c1 in ("S", "4", "6"):
            if c1 == "S":
                while at(index) in ("p", "f", "s") and at(index):
                    ret += 1
                    index += 1
            if c1 in ("S", "4"):
                if at(index) in ("h", "n", "l", "b") and at(index):
                    ret += 1
                    index += 1
                if c1 == "4":
                    ret += 1
            if c1 in ("S", "6"):
                if at(index) == "c":
                    ret += 1
                ret += 1
        ret += 1
    elif c == "U":
        if at(1) in ("L", "l", "B", "b") and at(1):
            ret += 1
        ret += 1
    elif c == "h":
        if at(1) in ("C", "D", "N") and at(1):
            ret += 1
        ret += 1
    return ret


class ArgList:
    def __init__(self, head: _Arg | None) -> None:
        self.cur = head

    def take(self) -> _Arg:
        arg = self.cur
        if arg is None:
            raise ParseError("no argument match")
        self.cur = arg.next
        return arg


def parse_conversion(fmt: str, start: int, args: ArgList, out: list[Segment]) -> int:
    """parse_arg_format(): one conversion starting at fmt[start] == '%'.
    Returns how many characters it used."""
    i = start + 1
    ret = 1
    ls = 0
    len_arg = None
    while i < len(fmt):
        c = fmt[i]
        if c == "#" or c in ".zZ-" or c.isdigit() and c.isascii():
            pass
        elif c == "h":
            ls -= 1
        elif c == "l":
            ls += 1
        elif c == "L":
            ls = 2
        elif c == "*":
            if args.cur is None:
                raise ParseError("no argument match")
            if len_arg is not None:
                raise ParseError("argument already matched")
            len_arg = args.take()
        elif c == "p":
            arg = args.take()
            res = pointer_ext(fmt, i + 1)
            if res > 0:
                i += res
                ret += res
            spec = fmt[start:i + 1]
            if len(spec) > 31:
                raise ParseError("bad format")
            out.append(Segment("pointer", spec, arg, len_arg, ls))
            return ret + 1
        elif c in "duixXo":
            arg = args.take()
            spec = fmt[start:i + 1]
            if len(spec) > 30 or ls < -2 or ls > 2:
                raise ParseError("bad format")
            out.append(Segment("digit", spec, arg, len_arg, ls))
            return ret + 1
        elif c == "s":
            arg = args.take()
            spec = fmt[start:i + 1]
            if len(spec) > 31:
                raise ParseError("bad format")
            out.append(Segment("string", spec, arg, len_arg, 0))
            return ret + 1
        else:
            out.append(Segment("text", ">%s<" % c))
            return ret + 1
        ret += 1
        i += 1
    return ret


def parse_literal(fmt: str, start: int, out: list[Segment]) -> int:
    """parse_arg_string(): literal text up to the next conversion, with the
    backslash escapes of the format resolved."""
    buf = []
    i = start
    n = len(fmt)
    while i < n:
        c = fmt[i]
        if c == "\\":
            i += 1
            if i >= n:
                break
            c = fmt[i]
            buf.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(c, c))
        elif c == "%":
            if i + 1 < n and fmt[i + 1] == "%":
                buf.append("%")
                i += 1
            else:
                break
        else:
            buf.append(c)
        i += 1
    out.append(Segment("text", "".join(buf)))
    return max(i - start, 1)


def parse_segments(fmt: str, head: _Arg | None) -> list[Segment]:
    segments: list[Segment] = []
    args = ArgList(head)
    i = 0
    n = len(fmt)
    while i < n:
        if fmt[i] == "%" and fmt[i + 1:i + 2] != "%":
            i += parse_conversion(fmt, i, args, segments)
        else:
            i += parse_literal(fmt, i, segments)
    return segments
