"""print fmt -> a tree of print args and the format segments, parsed once per
event as libtraceevent does (its operator priorities and tree rotation, its
helpers), with its parse-time evaluation."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from .evaluate import arg_eval
from .lexer import (T_DELIM, T_DQUOTE, T_ERROR, T_ITEM, T_NEWLINE, T_NONE, T_OP, T_SQUOTE, Lexer,
                    ParseError)
from .segments import parse_segments

if TYPE_CHECKING:
    from ..format.tracing import EventFormat, FieldFormat
    from .lexer import Token, TokenText
    from .segments import Segment


# ---------------------------------------------------------------- print args
class _Arg:
    """One print arg (struct tep_print_arg).  Mutable on purpose: the parser
    copies args over each other as libtraceevent does."""
    # What the parser sets, by kind (an arg has its kind's only):
    atom: str                   # atom
    name: str                   # field, string, bitmask
    op: str                     # op
    left: _Arg                  # op (None only while the parser builds it)
    right: _Arg | None          # op
    type: str                   # type (a cast): the type
    item: _Arg                  # type: what is cast
    # field and string: the FieldFormat (None until found); flags, symbol,
    # hex, hexstr, intarray: the _Arg giving the value
    field: Any
    delim: str | None           # flags
    flags: list[tuple[str, str]]        # flags: (value, text)
    symbols: list[tuple[str, str]]      # symbol: (value, text)
    size: _Arg                  # hex, hexstr
    count: _Arg                 # intarray
    el_size: _Arg               # intarray
    dynfield: FieldFormat       # dynarray, dynarraylen

    def __init__(self, kind: str = "null") -> None:
        self.kind = kind
        self.next: _Arg | None = None
        self.prio = 0

    def assign(self, other: _Arg) -> None:
        self.__dict__.clear()
        self.__dict__.update(other.__dict__)

    def clone(self) -> _Arg:
        new = _Arg()
        new.assign(self)
        return new


_OP_PRIO1 = {"~": 4, "!": 4, "*": 6, "/": 6, "%": 6, "+": 7, "-": 7, "<": 9, ">": 9,
             "&": 11, "^": 12, "|": 13, "?": 16}
_OP_PRIO2 = {"++": 3, "--": 3, ">>": 8, "<<": 8, ">=": 9, "<=": 9, "==": 10, "!=": 10,
             "&&": 14, "||": 15}
_BINARY = {">>", "<<", "&", "|", "&&", "||", "-", "+", "*", "^", "/", "%", "<", ">",
           "<=", ">=", "==", "!="}


def _op_prio(op: str) -> int:
    """get_op_prio(); -1 for an operator it does not know."""
    prio = _OP_PRIO1.get(op) if len(op) == 1 else _OP_PRIO2.get(op)
    return -1 if prio is None else prio


class _Event:
    """What the parser and the printer need of an EventFormat, in
    libtraceevent's terms."""

    def __init__(self, fmt: EventFormat, long_size: int) -> None:
        self.fmt = fmt
        self.long_size = long_size
        fields = list(getattr(fmt, "fields", None) or ())
        self.common = [f for f in fields if getattr(f, "is_common", False)]
        self.fields = [f for f in fields if not getattr(f, "is_common", False)]
        self.info = {}
        for f in fields:
            self.info[id(f)] = _field_info(f, long_size)
        #: fields whose STRING flag tep_print_field() has cleared
        self.not_string: set[int] = set()

    def find_any(self, name: str) -> FieldFormat | None:
        for f in self.common:
            if f.name == name:
                return f
        return self.find(name)

    def find(self, name: str) -> FieldFormat | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


_TYPE_SIZE = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "s8": 1, "s16": 2, "s32": 4,
              "s64": 8, "char": 1}


class _FieldInfo:
    __slots__ = ("array", "dynamic", "relative", "string", "long", "pointer", "signed",
                 "elementsize")
    array: bool
    dynamic: bool
    relative: bool
    string: bool
    long: bool
    pointer: bool
    signed: bool
    elementsize: int


def _field_info(f: FieldFormat, long_size: int) -> _FieldInfo:
    """The flags and element size libtraceevent gives a field."""
    info = _FieldInfo()
    ctype = str(getattr(f, "type", "") or "")
    dynamic = bool(getattr(f, "is_dynamic", False))
    size = int(getattr(f, "size", 0) or 0)
    info.dynamic = dynamic
    info.relative = bool(getattr(f, "is_rel", False))
    info.array = bool(getattr(f, "is_array", False)) or (
        dynamic and bool(getattr(f, "is_dynamic_array", True)))
    info.string = info.array and any(t in ctype for t in ("char", "u8", "s8"))
    if dynamic and size == 2:
        info.string = info.array = True
    info.long = "long" in ctype
    info.pointer = "*" in ctype
    info.signed = bool(getattr(f, "signed", False))
    if info.array:
        arraylen = int(getattr(f, "array_len", 0) or 0)
        if arraylen:
            info.elementsize = size // arraylen
        elif dynamic:
            words = ctype.split()
            info.elementsize = _TYPE_SIZE.get(words[-1] if words else "", 0)
        elif info.string:
            info.elementsize = 1
        elif info.long:
            info.elementsize = long_size
        else:
            info.elementsize = 0
    else:
        info.elementsize = size
    return info


class _Parser:
    """event_read_print() and the process_*() family of libtraceevent 6.1."""

    def __init__(self, event: _Event, text: bytes) -> None:
        self.ev = event
        self.lex = Lexer(text)
        self.flag_field = False

    def expect(self, kind: int, tok: str | None, want_kind: int,
               want_tok: str | None = None) -> None:
        if kind != want_kind or (want_tok is not None and tok != want_tok):
            raise ParseError("expected %r, read %r" % (want_tok, tok))

    def parse(self) -> tuple[str, _Arg | None]:
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_DQUOTE)
        fmt = tok
        while True:
            kind, tok = self.lex.token_item()
            if kind == T_NONE:
                return fmt, None
            if kind == T_DQUOTE:
                fmt += tok
                continue
            break
        self.expect(kind, tok, T_DELIM, ",")
        return fmt, self.read_args()

    def read_args(self) -> _Arg | None:
        head = None
        last = None
        kind = T_ERROR
        while True:
            if kind == T_NEWLINE:
                kind, tok = self.lex.token_item()
                if kind == T_NONE:
                    break
                continue
            arg = _Arg()
            kind, tok = self.process_arg(arg)
            if kind == T_ERROR:
                raise ParseError("bad argument")
            if last is None:
                head = arg
            else:
                last.next = arg
            last = arg
            if kind == T_OP:
                kind, tok = self.process_op(arg, tok)
                if kind == T_ERROR:
                    raise ParseError("bad operator")
                if kind == T_NONE:
                    break
                continue
            if kind == T_DELIM and tok == ",":
                continue
            break
        return head

    # -- process_arg / process_arg_token
    def process_arg(self, arg: _Arg) -> Token:
        kind, tok = self.lex.token()
        return self.process_arg_token(arg, tok, kind)

    def process_arg_token(self, arg: _Arg, tok: TokenText, kind: int) -> Token:
        if kind == T_ITEM:
            if tok == "REC":
                return self.process_entry(arg)
            atom = tok
            kind, tok = self.lex.token_item()
            if kind == T_DELIM and tok == "(":
                return self.process_function(arg, atom)
            while kind == T_ITEM:
                atom += " " + tok
                kind, tok = self.lex.token_item()
            arg.kind, arg.atom = "atom", atom
            return kind, tok
        if kind in (T_DQUOTE, T_SQUOTE):
            arg.kind, arg.atom = "atom", tok
            return self.lex.token_item()
        if kind == T_DELIM and tok == "(":
            return self.process_paren(arg)
        if kind in (T_DELIM, T_OP):
            arg.kind, arg.op, arg.left, arg.right = "op", tok, None, None  # type: ignore[assignment]
            return self.process_op(arg, tok)
        raise ParseError("unexpected token %r" % (tok,))

    def process_entry(self, arg: _Arg) -> Token:
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_OP, "->")
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_ITEM)
        arg.kind, arg.name = "field", tok
        arg.field = None
        if self.flag_field:
            self.flag_field = False
            arg.field = self.ev.find_any(tok)
            if arg.field is None:
                # perf 6.1 dereferences NULL here; call it a parse failure.
                raise ParseError("flag field %s not found" % tok)
        return self.lex.token()

    def process_paren(self, arg: _Arg) -> Token:
        kind, tok = self.process_arg(arg)
        if kind == T_ERROR:
            raise ParseError("bad paren")
        if kind == T_OP:
            kind, tok = self.process_op(arg, tok)
        self.expect(kind, tok, T_DELIM, ")")
        kind, tok = self.lex.token_item()
        if kind in (T_ITEM, T_DQUOTE, T_SQUOTE) or (kind == T_DELIM and tok == "("):
            if arg.kind != "atom":
                raise ParseError("previous needed to be an atom")
            item = _Arg()
            arg.kind, arg.type, arg.item = "type", arg.atom, item
            del arg.atom
            kind, tok = self.process_arg_token(item, tok, kind)
        return kind, tok

    def process_op(self, arg: _Arg, tok: str) -> Token:
        right = None
        if arg.kind == "op" and arg.left is None:
            if len(tok) != 1 or tok not in "~!+-":
                raise ParseError("bad op token %s" % tok)
            arg.left = _Arg("null")
            right = _Arg()
            arg.right = right
            kind, tok = self.process_arg(right)
        elif tok == "?":
            left = arg.clone()
            arg.__dict__.clear()
            arg.kind, arg.op, arg.left, arg.right, arg.prio = "op", "?", left, None, 0
            arg.next = None
            kind, tok = self.process_cond(arg)
        elif tok in _BINARY:
            left = arg.clone()
            arg.__dict__.clear()
            arg.kind, arg.op, arg.left, arg.right = "op", tok, left, None
            arg.next = None
            arg.prio = 0 if left.kind == "null" else _op_prio(tok)
            if arg.prio < 0:
                raise ParseError("unknown op %r" % tok)
            kind, tok = self.lex.token_item()
            if arg.op == "*" and kind == T_DELIM and tok == ")":
                if left.kind != "atom":
                    raise ParseError("bad pointer type")
                left.atom += " *"
                arg.assign(left)
                return kind, tok
            right = _Arg()
            kind, tok = self.process_arg_token(right, tok, kind)
            if kind == T_ERROR:
                raise ParseError("bad right operand")
            if right.kind == "op" and _op_prio(arg.op) < _op_prio(right.op):
                # rotate ops according to the priority
                arg.right = right.left
                tmp = arg.clone()
                arg.assign(right)
                right.assign(tmp)
                arg.left = right
            else:
                arg.right = right
        elif tok == "[":
            left = arg.clone()
            arg.__dict__.clear()
            arg.kind, arg.op, arg.left, arg.right, arg.prio = "op", "[", left, None, 0
            arg.next = None
            kind, tok = self.process_array(arg)
        else:
            raise ParseError("unknown op %r" % tok)
        if kind == T_OP and tok != ":":
            prio = _op_prio(tok)
            if prio > getattr(arg, "prio", 0):
                return self.process_op(arg, tok)
            if right is None:
                raise ParseError("operator without operand")
            return self.process_op(right, tok)
        return kind, tok

    def process_cond(self, top: _Arg) -> Token:
        arg, left, right = _Arg("op"), _Arg(), _Arg()
        arg.left, arg.right = left, right
        kind, tok = self.process_arg(left)
        while True:
            if kind == T_ERROR:
                raise ParseError("bad condition")
            if kind == T_OP and tok != ":":
                kind, tok = self.process_op(left, tok)
                continue
            break
        self.expect(kind, tok, T_OP, ":")
        arg.op = ":"
        arg.prio = 0
        kind, tok = self.process_arg(right)
        top.right = arg
        return kind, tok

    def process_array(self, top: _Arg) -> Token:
        arg = _Arg()
        kind, tok = self.process_arg(arg)
        self.expect(kind, tok, T_OP, "]")
        top.right = arg
        return self.lex.token_item()

    def process_field_arg(self, arg: _Arg) -> Token:
        kind, tok = self.process_arg(arg)
        while kind == T_OP:
            kind, tok = self.process_op(arg, tok)
        return kind, tok

    def process_fields(self) -> tuple[list[tuple[str, str]], int, str | None]:
        entries: list[tuple[str, str]] = []
        while True:
            kind, tok = self.lex.token_item()
            if kind != T_OP or tok != "{":
                return entries, kind, tok
            arg = _Arg()
            kind, tok = self.process_arg(arg)
            if kind == T_OP:
                kind, tok = self.process_op(arg, tok)
            if kind == T_ERROR:
                raise ParseError("bad flag value")
            self.expect(kind, tok, T_DELIM, ",")
            value = arg_eval(arg)
            arg = _Arg()
            kind, tok = self.process_arg(arg)
            self.expect(kind, tok, T_OP, "}")
            text = arg_eval(arg)
            entries.append((value, text))
            kind, tok = self.lex.token_item()
            if not (kind == T_DELIM and tok == ","):
                return entries, kind, tok

    def process_flags(self, arg: _Arg) -> Token:
        field = _Arg()
        kind, tok = self.process_field_arg(field)
        while kind == T_OP:
            kind, tok = self.process_op(field, tok)
        self.expect(kind, tok, T_DELIM, ",")
        arg.kind, arg.field, arg.delim = "flags", field, None
        kind, tok = self.lex.token_item()
        if kind in (T_ITEM, T_DQUOTE, T_SQUOTE):
            arg.delim = tok
            kind, tok = self.lex.token_item()
        self.expect(kind, tok, T_DELIM, ",")
        arg.flags, kind, tok = self.process_fields()
        self.expect(kind, tok, T_DELIM, ")")
        return self.lex.token_item()

    def process_symbols(self, arg: _Arg) -> Token:
        field = _Arg()
        kind, tok = self.process_field_arg(field)
        self.expect(kind, tok, T_DELIM, ",")
        arg.kind, arg.field = "symbol", field
        arg.symbols, kind, tok = self.process_fields()
        self.expect(kind, tok, T_DELIM, ")")
        return self.lex.token_item()

    def _delim_arg(self, delim: str) -> _Arg:
        arg = _Arg()
        kind, tok = self.process_arg(arg)
        self.expect(kind, tok, T_DELIM, delim)
        return arg

    def process_hex(self, arg: _Arg, kind_name: str) -> Token:
        arg.kind = kind_name
        arg.field = self._delim_arg(",")
        arg.size = self._delim_arg(")")
        return self.lex.token_item()

    def process_int_array(self, arg: _Arg) -> Token:
        arg.kind = "intarray"
        arg.field = self._delim_arg(",")
        arg.count = self._delim_arg(",")
        arg.el_size = self._delim_arg(")")
        return self.lex.token_item()

    def process_dynamic_array(self, arg: _Arg) -> Token:
        kind, tok = self.lex.token()
        if kind != T_ITEM:
            raise ParseError("bad dynamic array")
        field = self.ev.find(tok)
        if field is None:
            raise ParseError("dynamic array field %s not found" % tok)
        arg.kind, arg.dynfield = "dynarray", field
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_DELIM, ")")
        kind, tok = self.lex.token_item()
        if kind != T_OP or tok != "[":
            return kind, tok
        # libtraceevent 6.1 rejects __get_dynamic_array(f)[i] whatever follows
        # (its test of the closing bracket is inverted).
        raise ParseError("indexed dynamic array")

    def process_dynamic_array_len(self, arg: _Arg) -> Token:
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_ITEM)
        field = self.ev.find(tok)
        if field is None:
            raise ParseError("dynamic array field %s not found" % tok)
        arg.kind, arg.dynfield = "dynarraylen", field
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_DELIM, ")")
        return self.lex.token()

    def process_named(self, arg: _Arg, kind_name: str) -> Token:
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_ITEM)
        arg.kind, arg.name, arg.field = kind_name, tok, None
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_DELIM, ")")
        return self.lex.token()

    def process_builtin_expect(self, arg: _Arg) -> Token:
        kind, tok = self.process_arg(arg)
        if kind != T_DELIM or tok != ",":
            raise ParseError("bad __builtin_expect")
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_ITEM)
        kind, tok = self.lex.token()
        self.expect(kind, tok, T_DELIM, ")")
        return self.lex.token_item()

    def process_function(self, arg: _Arg, name: str) -> Token:
        if name == "__print_flags":
            self.flag_field = True
            return self.process_flags(arg)
        if name == "__print_symbolic":
            self.flag_field = True
            return self.process_symbols(arg)
        if name == "__print_hex":
            return self.process_hex(arg, "hex")
        if name == "__print_hex_str":
            return self.process_hex(arg, "hexstr")
        if name == "__print_array":
            return self.process_int_array(arg)
        if name in ("__get_str", "__get_rel_str"):
            return self.process_named(arg, "string")
        if name in ("__get_bitmask", "__get_rel_bitmask"):
            return self.process_named(arg, "bitmask")
        if name in ("__get_dynamic_array", "__get_rel_dynamic_array"):
            return self.process_dynamic_array(arg)
        if name in ("__get_dynamic_array_len", "__get_rel_dynamic_array_len"):
            return self.process_dynamic_array_len(arg)
        if name == "__builtin_expect":
            return self.process_builtin_expect(arg)
        # perf 6.1 registers no print functions (and loads no plugins).
        raise ParseError("function %s not defined" % name)


class _Parsed:
    def __init__(self, event: _Event, segments: list[Segment], failed: bool,
                 why: str | None = None) -> None:
        self.event = event
        self.segments = segments
        self.failed = failed
        self.why = why


# EventFormat -> ((its print fmt, long size), what they parsed to)
_CACHE: weakref.WeakKeyDictionary[EventFormat, tuple[tuple[str | None, int], _Parsed]]
_CACHE = weakref.WeakKeyDictionary()


def parse_print_fmt(event_format: EventFormat, long_size: int = 8) -> _Parsed:
    """Parse an EventFormat's print fmt once; the result says whether perf 6.1
    would print `[FAILED TO PARSE]` for it (`.failed`, `.why`)."""
    key = (getattr(event_format, "print_fmt", None), long_size)
    try:
        hit = _CACHE.get(event_format)
    except TypeError:
        hit = None
    if hit is not None and hit[0] == key:
        return hit[1]
    event = _Event(event_format, long_size)
    text = key[0]
    try:
        if not isinstance(text, str):
            raise ParseError("no print fmt")
        data = text.encode("utf-8", "replace") + b"\n"
        fmt, head = _Parser(event, data).parse()
        parsed = _Parsed(event, parse_segments(fmt, head), False)
    except (ParseError, RecursionError) as exc:
        parsed = _Parsed(event, [], True, str(exc) or type(exc).__name__)
    try:
        _CACHE[event_format] = (key, parsed)
    except TypeError:
        pass
    return parsed
