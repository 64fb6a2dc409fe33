"""Tracepoint fields as `perf script` prints them: libtraceevent's `print fmt`.

`format_trace_fields(event_format, raw)` returns the text perf 6.1 prints after
`event_name: ` for a tracepoint sample.  perf 6.1 (Debian's build) carries its
own copy of libtraceevent (tools/lib/traceevent, kernel 6.1) and loads no
plugins, so the text is the event's `print fmt:` evaluated the way that copy
evaluates it.  This module re-implements that behaviour, quirks included:

* The print fmt is tokenized and parsed once per event into a tree of print
  args, with libtraceevent's own operator handling (its priorities and its
  "rotate the tree" step, not a textbook C grammar) and its set of helpers:
  `__print_flags`, `__print_symbolic`, `__print_hex`, `__print_hex_str`,
  `__print_array`, `__get_str`, `__get_rel_str`, `__get_bitmask`,
  `__get_dynamic_array[_len]`, `__builtin_expect`.  Anything else (an unknown
  function such as `sizeof` or `__get_cpumask` in 6.1, a syntax error, too
  few arguments for the conversions) makes the event "failed": every sample
  then prints `[FAILED TO PARSE]` and ` field=value` for each non-common
  field, as tep_print_fields() does.
* Numbers are unsigned 64-bit throughout; a field is read unsigned whatever
  its sign; casts only mask (`(int)x` is `x & 0xffffffff`); `^` evaluates to 0.
* Conversions: `%d %i %u %x %X %o` with `#`, `-`, `0`, width, precision,
  `*` and the h/hh/l/ll/L/z length letters, the value passed as the C cast
  libtraceevent makes (char, short, int, long, long long); `%s`; `%p` (glibc's
  `0x...` or `(nil)`), `%ps %pS %pf %pF` (kernel symbol through `kallsyms`),
  `%pM %pm %pI4 %pI6 %pIS %pU %ph`.  Any other letter prints as `>c<` and
  consumes no argument (so `%c` prints `>c<`), as in 6.1.
* `%s` of a field as wide as a long prints it in bare hex (or the printk
  string at that address); `%s` of other fields prints their bytes up to NUL.

Nothing here raises on hostile input: reads past the raw data give 0 or
nothing, and an internal failure falls back to the `[FAILED TO PARSE]`
listing.
"""
import functools
import weakref

__all__ = ["format_trace_fields", "parse_print_fmt", "describe_raw_fields",
           "trace_long_size", "TracePrinter"]

# ---------------------------------------------------------------- tokens
_T_ERROR, _T_NONE, _T_SPACE, _T_NEWLINE, _T_OP, _T_DELIM, _T_ITEM, _T_DQUOTE, \
    _T_SQUOTE = range(9)

_SPACE = b" \t\n\v\f\r"
_U64 = (1 << 64) - 1


def _ctype(ch):
    """libtraceevent's get_type(); -1 is the end of input."""
    if ch < 0:
        return _T_NONE
    if ch == 0x0a:
        return _T_NEWLINE
    if ch in _SPACE:
        return _T_SPACE
    if 0x30 <= ch <= 0x39 or 0x41 <= ch <= 0x5a or 0x61 <= ch <= 0x7a or ch == 0x5f:
        return _T_ITEM
    if ch == 0x27:
        return _T_SQUOTE
    if ch == 0x22:
        return _T_DQUOTE
    if not 0x20 <= ch <= 0x7e:
        return _T_NONE
    if ch in b"(),":
        return _T_DELIM
    return _T_OP


class _ParseError(Exception):
    pass


_FORCED = {"LOCAL_PR_FMT": b'"%s" ', "STA_PR_FMT": b'" sta:%pM" ',
           "VIF_PR_FMT": b'" vif:%p(%d)" '}


class _Lexer:
    def __init__(self, data):
        self.buf = data
        self.pos = 0

    def _read(self):
        if self.pos >= len(self.buf):
            return -1
        ch = self.buf[self.pos]
        self.pos += 1
        # input_buf is a (signed) char array: bytes >= 0x80 read as negative,
        # which __read_token takes for the end of input.
        return -1 if ch >= 0x80 else ch

    def _peek(self):
        if self.pos >= len(self.buf):
            return -1
        ch = self.buf[self.pos]
        return -1 if ch >= 0x80 else ch

    def raw_token(self):
        ch = self._read()
        if ch < 0:
            return _T_NONE, None
        kind = _ctype(ch)
        if kind == _T_NONE:
            return kind, None
        out = [ch]
        if kind in (_T_NEWLINE, _T_DELIM):
            return kind, chr(ch)
        if kind == _T_OP:
            test_equal = False
            if ch == 0x2d and self._peek() == 0x3e:          # "->"
                out.append(self._read())
            elif ch in b"-+|&><":
                last = ch
                if self._peek() != last:
                    test_equal = True
                else:
                    out.append(self._read())
                    if last in b"><":
                        test_equal = True
            elif ch in b"!=":
                test_equal = True
            if test_equal and self._peek() == 0x3d:
                out.append(self._read())
            return kind, bytes(out).decode("ascii")
        if kind in (_T_DQUOTE, _T_SQUOTE):
            quote = ch
            out = []
            while True:
                # A quote ends the string unless a backslash precedes it
                # (libtraceevent's "\\\\ cancels itself" has no effect).
                prev = quote
                while True:
                    ch = self._read()
                    if ch < 0:
                        raise _ParseError("unterminated string")
                    if ch == quote and prev != 0x5c:
                        break
                    out.append(ch)
                    prev = ch
                if kind != _T_DQUOTE:
                    break
                save = self.pos
                ch = self._read()
                while ch >= 0 and ch in _SPACE:
                    ch = self._read()
                if ch != 0x22:
                    self.pos = save
                    break
            return kind, bytes(out).decode("latin-1")
        while _ctype(self._peek()) == kind:
            out.append(self._read())
        tok = bytes(out).decode("ascii")
        if kind == _T_ITEM and tok in _FORCED:
            return _Lexer(_FORCED[tok]).raw_token()
        return kind, tok

    def token(self):
        """read_token(): skips spaces, not newlines."""
        while True:
            kind, tok = self.raw_token()
            if kind != _T_SPACE:
                return kind, tok

    def token_item(self):
        """read_token_item(): skips spaces and newlines."""
        while True:
            kind, tok = self.raw_token()
            if kind not in (_T_SPACE, _T_NEWLINE):
                return kind, tok


# ---------------------------------------------------------------- print args
class _Arg:
    """One print arg (struct tep_print_arg).  Mutable on purpose: the parser
    copies args over each other as libtraceevent does."""

    def __init__(self, kind="null"):
        self.kind = kind
        self.next = None
        self.prio = 0

    def assign(self, other):
        self.__dict__.clear()
        self.__dict__.update(other.__dict__)

    def clone(self):
        new = _Arg()
        new.assign(self)
        return new


_OP_PRIO1 = {"~": 4, "!": 4, "*": 6, "/": 6, "%": 6, "+": 7, "-": 7, "<": 9, ">": 9,
             "&": 11, "^": 12, "|": 13, "?": 16}
_OP_PRIO2 = {"++": 3, "--": 3, ">>": 8, "<<": 8, ">=": 9, "<=": 9, "==": 10, "!=": 10,
             "&&": 14, "||": 15}
_BINARY = {">>", "<<", "&", "|", "&&", "||", "-", "+", "*", "^", "/", "%", "<", ">",
           "<=", ">=", "==", "!="}


def _op_prio(op):
    """get_op_prio(); -1 for an operator it does not know."""
    prio = _OP_PRIO1.get(op) if len(op) == 1 else _OP_PRIO2.get(op)
    return -1 if prio is None else prio


class _Event:
    """What the parser and the printer need of an EventFormat, in
    libtraceevent's terms."""

    def __init__(self, fmt, long_size):
        self.fmt = fmt
        self.long_size = long_size
        fields = list(getattr(fmt, "fields", None) or ())
        self.common = [f for f in fields if getattr(f, "is_common", False)]
        self.fields = [f for f in fields if not getattr(f, "is_common", False)]
        self.info = {}
        for f in fields:
            self.info[id(f)] = _field_info(f, long_size)
        #: fields whose STRING flag tep_print_field() has cleared
        self.not_string = set()

    def find_any(self, name):
        for f in self.common:
            if f.name == name:
                return f
        return self.find(name)

    def find(self, name):
        for f in self.fields:
            if f.name == name:
                return f
        return None


_TYPE_SIZE = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "s8": 1, "s16": 2, "s32": 4,
              "s64": 8, "char": 1}


class _FieldInfo:
    __slots__ = ("array", "dynamic", "relative", "string", "long", "pointer", "signed",
                 "elementsize")


def _field_info(f, long_size):
    """The flags and element size libtraceevent gives a field."""
    info = _FieldInfo()
    ctype = str(getattr(f, "type", "") or "")
    dynamic = bool(getattr(f, "is_dynamic", False))
    size = int(getattr(f, "size", 0) or 0)
    info.dynamic = dynamic
    info.relative = bool(getattr(f, "is_rel", False))
    info.array = bool(getattr(f, "is_array", False)) or dynamic
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

    def __init__(self, event, text):
        self.ev = event
        self.lex = _Lexer(text)
        self.flag_field = False

    def expect(self, kind, tok, want_kind, want_tok=None):
        if kind != want_kind or (want_tok is not None and tok != want_tok):
            raise _ParseError("expected %r, read %r" % (want_tok, tok))

    def parse(self):
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_DQUOTE)
        fmt = tok
        while True:
            kind, tok = self.lex.token_item()
            if kind == _T_NONE:
                return fmt, None
            if kind == _T_DQUOTE:
                fmt += tok
                continue
            break
        self.expect(kind, tok, _T_DELIM, ",")
        return fmt, self.read_args()

    def read_args(self):
        head = None
        last = None
        kind = _T_ERROR
        while True:
            if kind == _T_NEWLINE:
                kind, tok = self.lex.token_item()
                if kind == _T_NONE:
                    break
                continue
            arg = _Arg()
            kind, tok = self.process_arg(arg)
            if kind == _T_ERROR:
                raise _ParseError("bad argument")
            if last is None:
                head = arg
            else:
                last.next = arg
            last = arg
            if kind == _T_OP:
                kind, tok = self.process_op(arg, tok)
                if kind == _T_ERROR:
                    raise _ParseError("bad operator")
                if kind == _T_NONE:
                    break
                continue
            if kind == _T_DELIM and tok == ",":
                continue
            break
        return head

    # -- process_arg / process_arg_token
    def process_arg(self, arg):
        kind, tok = self.lex.token()
        return self.process_arg_token(arg, tok, kind)

    def process_arg_token(self, arg, tok, kind):
        if kind == _T_ITEM:
            if tok == "REC":
                return self.process_entry(arg)
            atom = tok
            kind, tok = self.lex.token_item()
            if kind == _T_DELIM and tok == "(":
                return self.process_function(arg, atom)
            while kind == _T_ITEM:
                atom += " " + tok
                kind, tok = self.lex.token_item()
            arg.kind, arg.atom = "atom", atom
            return kind, tok
        if kind in (_T_DQUOTE, _T_SQUOTE):
            arg.kind, arg.atom = "atom", tok
            return self.lex.token_item()
        if kind == _T_DELIM and tok == "(":
            return self.process_paren(arg)
        if kind in (_T_DELIM, _T_OP):
            arg.kind, arg.op, arg.left, arg.right = "op", tok, None, None
            return self.process_op(arg, tok)
        raise _ParseError("unexpected token %r" % (tok,))

    def process_entry(self, arg):
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_OP, "->")
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_ITEM)
        arg.kind, arg.name = "field", tok
        arg.field = None
        if self.flag_field:
            self.flag_field = False
            arg.field = self.ev.find_any(tok)
            if arg.field is None:
                # perf 6.1 dereferences NULL here; call it a parse failure.
                raise _ParseError("flag field %s not found" % tok)
        return self.lex.token()

    def process_paren(self, arg):
        kind, tok = self.process_arg(arg)
        if kind == _T_ERROR:
            raise _ParseError("bad paren")
        if kind == _T_OP:
            kind, tok = self.process_op(arg, tok)
        self.expect(kind, tok, _T_DELIM, ")")
        kind, tok = self.lex.token_item()
        if kind in (_T_ITEM, _T_DQUOTE, _T_SQUOTE) or (kind == _T_DELIM and tok == "("):
            if arg.kind != "atom":
                raise _ParseError("previous needed to be an atom")
            item = _Arg()
            arg.kind, arg.type, arg.item = "type", arg.atom, item
            del arg.atom
            kind, tok = self.process_arg_token(item, tok, kind)
        return kind, tok

    def process_op(self, arg, tok):
        right = None
        if arg.kind == "op" and arg.left is None:
            if len(tok) != 1 or tok not in "~!+-":
                raise _ParseError("bad op token %s" % tok)
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
                raise _ParseError("unknown op %r" % tok)
            kind, tok = self.lex.token_item()
            if arg.op == "*" and kind == _T_DELIM and tok == ")":
                if left.kind != "atom":
                    raise _ParseError("bad pointer type")
                left.atom += " *"
                arg.assign(left)
                return kind, tok
            right = _Arg()
            kind, tok = self.process_arg_token(right, tok, kind)
            if kind == _T_ERROR:
                raise _ParseError("bad right operand")
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
            raise _ParseError("unknown op %r" % tok)
        if kind == _T_OP and tok != ":":
            prio = _op_prio(tok)
            if prio > getattr(arg, "prio", 0):
                return self.process_op(arg, tok)
            if right is None:
                raise _ParseError("operator without operand")
            return self.process_op(right, tok)
        return kind, tok

    def process_cond(self, top):
        arg, left, right = _Arg("op"), _Arg(), _Arg()
        arg.left, arg.right = left, right
        kind, tok = self.process_arg(left)
        while True:
            if kind == _T_ERROR:
                raise _ParseError("bad condition")
            if kind == _T_OP and tok != ":":
                kind, tok = self.process_op(left, tok)
                continue
            break
        self.expect(kind, tok, _T_OP, ":")
        arg.op = ":"
        arg.prio = 0
        kind, tok = self.process_arg(right)
        top.right = arg
        return kind, tok

    def process_array(self, top):
        arg = _Arg()
        kind, tok = self.process_arg(arg)
        self.expect(kind, tok, _T_OP, "]")
        top.right = arg
        return self.lex.token_item()

    def process_field_arg(self, arg):
        kind, tok = self.process_arg(arg)
        while kind == _T_OP:
            kind, tok = self.process_op(arg, tok)
        return kind, tok

    def process_fields(self):
        entries = []
        while True:
            kind, tok = self.lex.token_item()
            if kind != _T_OP or tok != "{":
                return entries, kind, tok
            arg = _Arg()
            kind, tok = self.process_arg(arg)
            if kind == _T_OP:
                kind, tok = self.process_op(arg, tok)
            if kind == _T_ERROR:
                raise _ParseError("bad flag value")
            self.expect(kind, tok, _T_DELIM, ",")
            value = _arg_eval(arg)
            arg = _Arg()
            kind, tok = self.process_arg(arg)
            self.expect(kind, tok, _T_OP, "}")
            text = _arg_eval(arg)
            entries.append((value, text))
            kind, tok = self.lex.token_item()
            if not (kind == _T_DELIM and tok == ","):
                return entries, kind, tok

    def process_flags(self, arg):
        field = _Arg()
        kind, tok = self.process_field_arg(field)
        while kind == _T_OP:
            kind, tok = self.process_op(field, tok)
        self.expect(kind, tok, _T_DELIM, ",")
        arg.kind, arg.field, arg.delim = "flags", field, None
        kind, tok = self.lex.token_item()
        if kind in (_T_ITEM, _T_DQUOTE, _T_SQUOTE):
            arg.delim = tok
            kind, tok = self.lex.token_item()
        self.expect(kind, tok, _T_DELIM, ",")
        arg.flags, kind, tok = self.process_fields()
        self.expect(kind, tok, _T_DELIM, ")")
        return self.lex.token_item()

    def process_symbols(self, arg):
        field = _Arg()
        kind, tok = self.process_field_arg(field)
        self.expect(kind, tok, _T_DELIM, ",")
        arg.kind, arg.field = "symbol", field
        arg.symbols, kind, tok = self.process_fields()
        self.expect(kind, tok, _T_DELIM, ")")
        return self.lex.token_item()

    def _delim_arg(self, delim):
        arg = _Arg()
        kind, tok = self.process_arg(arg)
        self.expect(kind, tok, _T_DELIM, delim)
        return arg

    def process_hex(self, arg, kind_name):
        arg.kind = kind_name
        arg.field = self._delim_arg(",")
        arg.size = self._delim_arg(")")
        return self.lex.token_item()

    def process_int_array(self, arg):
        arg.kind = "intarray"
        arg.field = self._delim_arg(",")
        arg.count = self._delim_arg(",")
        arg.el_size = self._delim_arg(")")
        return self.lex.token_item()

    def process_dynamic_array(self, arg):
        kind, tok = self.lex.token()
        if kind != _T_ITEM:
            raise _ParseError("bad dynamic array")
        field = self.ev.find(tok)
        if field is None:
            raise _ParseError("dynamic array field %s not found" % tok)
        arg.kind, arg.dynfield = "dynarray", field
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_DELIM, ")")
        kind, tok = self.lex.token_item()
        if kind != _T_OP or tok != "[":
            return kind, tok
        # libtraceevent 6.1 rejects __get_dynamic_array(f)[i] whatever follows
        # (its test of the closing bracket is inverted).
        raise _ParseError("indexed dynamic array")

    def process_dynamic_array_len(self, arg):
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_ITEM)
        field = self.ev.find(tok)
        if field is None:
            raise _ParseError("dynamic array field %s not found" % tok)
        arg.kind, arg.dynfield = "dynarraylen", field
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_DELIM, ")")
        return self.lex.token()

    def process_named(self, arg, kind_name):
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_ITEM)
        arg.kind, arg.name, arg.field = kind_name, tok, None
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_DELIM, ")")
        return self.lex.token()

    def process_builtin_expect(self, arg):
        kind, tok = self.process_arg(arg)
        if kind != _T_DELIM or tok != ",":
            raise _ParseError("bad __builtin_expect")
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_ITEM)
        kind, tok = self.lex.token()
        self.expect(kind, tok, _T_DELIM, ")")
        return self.lex.token_item()

    def process_function(self, arg, name):
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
        raise _ParseError("function %s not defined" % name)


# ---------------------------------------------------------------- parse-time evaluation
@functools.lru_cache(maxsize=4096)
def _strtoull(text):
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
    if n > _U64:
        return _U64
    return (-n) & _U64 if neg else n


def _strtoll(text):
    """C strtoll(text, NULL, 0) as a Python int (saturating)."""
    s = text.lstrip(" \t\n\v\f\r")
    neg = s[:1] == "-"
    mag = _strtoull(s[1:] if s[:1] in "+-" and s[:1] else s)
    if neg:
        return -min(mag, 1 << 63)
    return min(mag, (1 << 63) - 1)


def _s64(v):
    v &= _U64
    return v - (1 << 64) if v >> 63 else v


def _arg_num_eval(arg):
    """arg_num_eval(): the value of a constant expression as a long long, or
    None when it is not one."""
    if arg.kind == "atom":
        return _strtoll(arg.atom)
    if arg.kind == "type":
        v = _arg_num_eval(arg.item)
        if v is None:
            return None
        return _s64(_eval_type_str(v & _U64, arg.type, False))
    if arg.kind != "op":
        return None
    op = arg.op
    if op in ("-", "+") and arg.left.kind == "null":
        left = 0
    elif op == "~":
        left = 0
    else:
        left = _arg_num_eval(arg.left)
        if left is None:
            return None
    right = _arg_num_eval(arg.right) if arg.right is not None else None
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
    return _s64(v)


def _arg_eval(arg):
    """arg_eval(): the text of a flag/symbol value or string."""
    if arg.kind == "atom":
        return arg.atom
    if arg.kind == "type":
        return _arg_eval(arg.item)
    if arg.kind == "op":
        v = _arg_num_eval(arg)
        if v is None:
            raise _ParseError("cannot evaluate")
        return "%d" % v
    raise _ParseError("invalid eval type")


def _eval_type_str(val, ctype, pointer):
    if not ctype:
        return val
    if pointer:
        if ctype[-1] != "*":
            return val
        return _eval_type_str(val, ctype[:-2], False)
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


# ---------------------------------------------------------------- print fmt segments
_SIMPLE_INT = {"d": True, "i": True, "u": False}


class _Segment:
    __slots__ = ("kind", "format", "arg", "len_arg", "ls", "text", "simple")

    def __init__(self, kind, fmt, arg=None, len_arg=None, ls=0):
        self.kind = kind            # "text", "digit", "pointer", "string"
        self.format = fmt
        self.arg = arg
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


def _pointer_ext(fmt, i):
    """parse_arg_format_pointer(): how many letters after %p belong to it."""
    def at(k):
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


class _ArgList:
    def __init__(self, head):
        self.cur = head

    def take(self):
        arg = self.cur
        if arg is None:
            raise _ParseError("no argument match")
        self.cur = arg.next
        return arg


def _parse_conversion(fmt, start, args, out):
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
                raise _ParseError("no argument match")
            if len_arg is not None:
                raise _ParseError("argument already matched")
            len_arg = args.take()
        elif c == "p":
            arg = args.take()
            res = _pointer_ext(fmt, i + 1)
            if res > 0:
                i += res
                ret += res
            spec = fmt[start:i + 1]
            if len(spec) > 31:
                raise _ParseError("bad format")
            out.append(_Segment("pointer", spec, arg, len_arg, ls))
            return ret + 1
        elif c in "duixXo":
            arg = args.take()
            spec = fmt[start:i + 1]
            if len(spec) > 30 or ls < -2 or ls > 2:
                raise _ParseError("bad format")
            out.append(_Segment("digit", spec, arg, len_arg, ls))
            return ret + 1
        elif c == "s":
            arg = args.take()
            spec = fmt[start:i + 1]
            if len(spec) > 31:
                raise _ParseError("bad format")
            out.append(_Segment("string", spec, arg, len_arg, 0))
            return ret + 1
        else:
            out.append(_Segment("text", ">%s<" % c))
            return ret + 1
        ret += 1
        i += 1
    return ret


def _parse_literal(fmt, start, out):
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
    out.append(_Segment("text", "".join(buf)))
    return max(i - start, 1)


def _parse_segments(fmt, head):
    segments = []
    args = _ArgList(head)
    i = 0
    n = len(fmt)
    while i < n:
        if fmt[i] == "%" and fmt[i + 1:i + 2] != "%":
            i += _parse_conversion(fmt, i, args, segments)
        else:
            i += _parse_literal(fmt, i, segments)
    return segments


class _Parsed:
    def __init__(self, event, segments, failed, why=None):
        self.event = event
        self.segments = segments
        self.failed = failed
        self.why = why


_CACHE = weakref.WeakKeyDictionary()


def parse_print_fmt(event_format, long_size=8):
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
            raise _ParseError("no print fmt")
        data = text.encode("utf-8", "replace") + b"\n"
        fmt, head = _Parser(event, data).parse()
        parsed = _Parsed(event, _parse_segments(fmt, head), False)
    except (_ParseError, RecursionError) as exc:
        parsed = _Parsed(event, [], True, str(exc) or type(exc).__name__)
    try:
        _CACHE[event_format] = (key, parsed)
    except TypeError:
        pass
    return parsed


# ---------------------------------------------------------------- printing
class _Printer:
    def __init__(self, parsed, raw, long_size, little, kallsyms, printk):
        self.ev = parsed.event
        self.data = bytes(raw)
        self.long_size = long_size
        self.order = "little" if little else "big"
        self.little = little
        self.kallsyms = kallsyms
        self.printk = printk or {}

    # -- raw reads
    def read_number(self, offset, size):
        if size not in (1, 2, 4, 8) or offset < 0 or offset + size > len(self.data):
            return 0
        return int.from_bytes(self.data[offset:offset + size], self.order)

    def read_native(self, offset, size):
        if offset < 0 or offset + size > len(self.data):
            return 0
        return int.from_bytes(self.data[offset:offset + size], "little")

    def cstring(self, offset, limit=None):
        if offset < 0 or offset >= len(self.data):
            return b""
        end = len(self.data) if limit is None else min(len(self.data), offset + limit)
        chunk = self.data[offset:end]
        nul = chunk.find(b"\0")
        return chunk if nul < 0 else chunk[:nul]

    def info(self, field):
        return self.ev.info[id(field)]

    # -- eval_num_arg
    def num(self, arg, depth=0):
        if depth > 200:
            return 0
        kind = arg.kind
        if kind == "atom":
            return _strtoull(arg.atom)
        if kind == "field":
            field = arg.field
            if field is None:
                field = arg.field = self.ev.find_any(arg.name)
                if field is None:
                    return 0
            return self.read_number(field.offset, field.size)
        if kind == "type":
            return _eval_type_str(self.num(arg.item, depth + 1), arg.type, False)
        if kind == "op":
            return self.num_op(arg, depth + 1)
        if kind == "dynarraylen":
            f = arg.dynfield
            return self.read_number(f.offset, f.size) >> 16
        if kind == "dynarray":
            f = arg.dynfield
            # perf returns a host pointer here; the offset is the stable part.
            return self.read_number(f.offset, f.size) & 0xffff
        return 0

    def num_op(self, arg, depth):
        op = arg.op
        if op == "[":
            right = self.num(arg.right, depth) if arg.right is not None else 0
            larg = arg.left
            typearg = None
            while larg.kind == "type":
                if typearg is None:
                    typearg = larg
                larg = larg.item
            field_size = self.long_size
            if larg.kind == "dynarray":
                f = larg.dynfield
                offset = (self.read_number(f.offset, f.size) & 0xffff) + right
                esize = self.info(f).elementsize
                if esize:
                    field_size = esize
            elif larg.kind == "field":
                f = larg.field or self.ev.find_any(larg.name)
                if f is None:
                    return 0
                field_size = self.info(f).elementsize
                offset = f.offset + right * field_size
            else:
                return 0
            val = self.read_number(offset & _U64, field_size)
            if typearg is not None:
                val = _eval_type_str(val, typearg.type, True)
            return val
        if op == "?":
            cond = self.num(arg.left, depth)
            branch = arg.right
            if branch is None or branch.kind != "op":
                return 0
            return self.num(branch.left if cond else branch.right, depth)
        left = self.num(arg.left, depth) if arg.left is not None else 0
        right = self.num(arg.right, depth) if arg.right is not None else 0
        if op == "!":
            return int(not right)
        if op == "!=":
            return int(left != right)
        if op == "~":
            return ~right & _U64
        if op == "|":
            return left | right
        if op == "||":
            return int(bool(left or right))
        if op == "&":
            return left & right
        if op == "&&":
            return int(bool(left and right))
        if op == "<":
            return int(left < right)
        if op == "<<":
            return (left << (right & 63)) & _U64
        if op == "<=":
            return int(left <= right)
        if op == ">":
            return int(left > right)
        if op == ">>":
            return left >> (right & 63)
        if op == ">=":
            return int(left >= right)
        if op == "==":
            return int(left == right)
        if op == "-":
            return (left - right) & _U64
        if op == "+":
            return (left + right) & _U64
        if op == "/":
            return left // right if right else 0
        if op == "%":
            return left % right if right else 0
        if op == "*":
            return (left * right) & _U64
        return 0          # '^' and anything else: "unknown op", 0

    # -- print_str_arg
    def str_arg(self, fmt, len_arg, arg, depth=0):
        if depth > 200:
            return b""
        kind = arg.kind
        if kind == "atom":
            return _printf_str(fmt, len_arg, arg.atom.encode("latin-1", "replace"))
        if kind == "field":
            field = arg.field or self.ev.find_any(arg.name)
            if field is None:
                return b""
            info = self.info(field)
            size = field.size if field.size else len(self.data) - field.offset
            if not info.array and field.size == self.long_size:
                addr = self.read_native(field.offset, 8 if self.long_size == 8 else 4)
                text = self.printk.get(addr)
                if text is not None:
                    return str(text).encode("utf-8", "replace")
                return b"%x" % addr
            return _printf_str(fmt, len_arg, self.cstring(field.offset, max(size, 0)))
        if kind == "flags":
            val = _s64(self.num(arg.field, depth + 1))
            out = []
            printed = False
            delim = (arg.delim or "").encode("latin-1", "replace") if arg.delim else None
            for value, text in arg.flags:
                fval = _eval_flag(value)
                if not val and fval < 0:
                    out.append(_printf_str(fmt, len_arg, text.encode("latin-1", "replace")))
                    break
                if fval > 0 and (val & fval) == fval:
                    if printed and delim is not None:
                        out.append(delim)
                    out.append(_printf_str(fmt, len_arg, text.encode("latin-1", "replace")))
                    printed = True
                    val &= ~fval
            if val:
                if printed and delim is not None:
                    out.append(delim)
                out.append(b"0x%x" % (val & _U64))
            return b"".join(out)
        if kind == "symbol":
            val = _s64(self.num(arg.field, depth + 1))
            for value, text in arg.symbols:
                if val == _eval_flag(value):
                    return _printf_str(fmt, len_arg, text.encode("latin-1", "replace"))
            return b"0x%x" % (val & _U64)
        if kind in ("hex", "hexstr"):
            start = self.array_start(arg.field)
            if start is None:
                return b""
            count = _s32(self.num(arg.size, depth + 1))
            count = max(0, min(count, len(self.data) - start))
            sep = b" " if kind == "hex" else b""
            return sep.join(b"%02x" % b for b in self.data[start:start + count])
        if kind == "intarray":
            start = self.array_start(arg.field)
            if start is None:
                return b""
            count = _s32(self.num(arg.count, depth + 1))
            el_size = _s32(self.num(arg.el_size, depth + 1))
            out = []
            pos = start
            for i in range(max(0, count)):
                if pos >= len(self.data):
                    break
                if el_size not in (1, 2, 4, 8):
                    out.append(b"BAD SIZE:%d 0x%x" % (el_size, self.data[pos]))
                    pos += 1
                    el_size = 1
                else:
                    out.append(b"%d" % self.read_native(pos, el_size))
                    pos += el_size
            return b" ".join(out)
        if kind == "string":
            field = arg.field
            if field is None:
                field = arg.field = self.ev.find_any(arg.name)
                if field is None:
                    return b""
            offset = self.read_number(field.offset, 4) & 0xffff
            if self.info(field).relative:
                offset += field.offset + field.size
            return _printf_str(fmt, len_arg, self.cstring(offset))
        if kind == "bitmask":
            field = self.ev.find_any(arg.name)
            if field is None:
                return b""
            loc = self.read_number(field.offset, 4)
            size, offset = loc >> 16, loc & 0xffff
            if self.info(field).relative:
                offset += field.offset + field.size
            return _printf_str(fmt, len_arg, self.bitmask(offset, size))
        if kind == "op":
            if arg.op != "?" or arg.right is None or arg.right.kind != "op":
                return b""
            cond = self.num(arg.left, depth + 1)
            branch = arg.right.left if cond else arg.right.right
            return self.str_arg(fmt, len_arg, branch, depth + 1)
        return b""

    def array_start(self, arg):
        """Where the array of __print_hex/__print_array starts in the data."""
        if arg.kind == "dynarray":
            f = arg.dynfield
            return self.read_number(f.offset, f.size) & 0xffff
        if arg.kind == "field":
            field = arg.field or self.ev.find_any(arg.name)
            return None if field is None else field.offset
        return None

    def bitmask(self, offset, size):
        data = self.data[offset:offset + size] if 0 <= offset else b""
        data = data + b"\0" * (size - len(data))
        nr_bits = size * 8
        str_size = (nr_bits + 3) // 4 + (int((nr_bits - 1) / 32) if nr_bits else 0)
        buf = bytearray(b"?" * str_size)
        n = 0
        i = str_size - 2
        while i >= 0:
            index = n if self.little else size - (n + 1)
            buf[i:i + 2] = b"%02x" % data[index]
            n += 1
            if not (n & 3) and i > 0:
                i -= 1
                buf[i] = 0x2c
            i -= 2
        return bytes(buf)

    # -- print_arg_pointer and friends
    def pointer(self, fmt, plen, arg):
        p = fmt.find("p")
        letter = fmt[p + 1:p + 2] if p >= 0 else ""
        rest = fmt[p + 1:] if p >= 0 else ""
        if letter in ("F", "f", "S", "s"):
            return self.function(letter, arg)
        if letter in ("M", "m"):
            return self.mac(rest, arg)
        if letter in ("I", "i"):
            return self.ip(rest, arg)
        if letter == "U":
            return self.uuid(rest, arg)
        if letter == "h":
            return self.raw_buff(rest, arg, plen)
        val = self.num(arg)
        return b"(nil)" if val == 0 else b"0x%x" % val

    def function(self, letter, arg):
        val = self.num(arg)
        found = _lookup_symbol(self.kallsyms, val)
        if found is not None:
            name, start = found
            out = name.encode("utf-8", "replace")
            if letter in ("F", "S"):
                out += b"+0x%x" % ((val - start) & _U64)
            return out
        # "0x%lx" of (long)val or "0x%llx": the same on a 64-bit host
        return b"0x%x" % val

    def field_bytes(self, arg, size):
        """The bytes of the FIELD arg of an address printer, or an error text."""
        if arg.kind != "field":
            return None, b"ARG TYPE NOT FIELD BUT %d" % _ARG_TYPE_NUMBER.get(arg.kind, 0)
        field = arg.field or self.ev.find_any(arg.name)
        if field is None:
            return None, b""
        return field, self.data[field.offset:field.offset + size].ljust(size, b"\0")

    def mac(self, rest, arg):
        field, buf = self.field_bytes(arg, 6)
        if field is None:
            return buf
        if field.size != 6:
            return b"INVALIDMAC"
        sep = b":"
        if rest[:1] == "m":
            sep = b""
        elif rest[:2] == "MF":
            sep = b"-"
        if rest[1:2] == "R":
            buf = buf[::-1]
        return sep.join(b"%02x" % b for b in buf)

    def ip(self, rest, arg):
        style = rest[:1]
        version = rest[1:2]
        tail = rest[2:]
        if version == "4":
            field, buf = self.field_bytes(arg, 4)
            if field is None:
                return buf
            if field.size != 4:
                return b"INVALIDIPv4"
            return _ip4(style, _ip4_reverse(tail, self.little), buf)
        if version == "6":
            field, buf = self.field_bytes(arg, 16)
            if field is None:
                return buf
            if field.size != 16:
                return b"INVALIDIPv6"
            if style == "I" and tail[:1] == "c":
                return _ip6c(buf)
            return _ip6(style, buf)
        if version == "S":
            have_p = have_c = False
            if style == "I":
                if tail[:1] == "p":
                    have_p, tail = True, tail[1:]
                if tail[:1] == "c":
                    have_c, tail = True, tail[1:]
            reverse = _ip4_reverse(tail, self.little)
            if arg.kind != "field":
                return b"ARG TYPE NOT FIELD BUT %d" % _ARG_TYPE_NUMBER.get(arg.kind, 0)
            field = arg.field or self.ev.find_any(arg.name)
            if field is None:
                return b""
            sa = self.data[field.offset:field.offset + max(field.size, 0)]
            family = int.from_bytes(sa[:2].ljust(2, b"\0"), "little")
            if family == 2:                                   # AF_INET
                if field.size < 16:
                    return b"INVALIDIPv4"
                out = _ip4(style, reverse, sa[4:8])
                if have_p:
                    out += b":%d" % int.from_bytes(sa[2:4], "big")
                return out
            if family == 10:                                  # AF_INET6
                if field.size < 28:
                    return b"INVALIDIPv6"
                out = b"[" if have_p else b""
                addr = sa[8:24]
                out += _ip6c(addr) if have_c else _ip6(style, addr)
                if have_p:
                    out += b"]:%d" % int.from_bytes(sa[2:4], "big")
                return out
            return b""
        return b""

    def uuid(self, rest, arg):
        variant = rest[1:2]
        upper = variant in ("L", "B")
        index = (3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15) \
            if variant in ("L", "l") else tuple(range(16))
        field, buf = self.field_bytes(arg, 16)
        if field is None:
            return buf
        if field.size != 16:
            return b"INVALIDUUID"
        out = []
        for i in range(16):
            out.append((b"%02X" if upper else b"%02x") % buf[index[i]])
            if i in (3, 5, 7, 9):
                out.append(b"-")
        return b"".join(out)

    def raw_buff(self, rest, arg, plen):
        delim = {"C": b":", "D": b"-", "N": b""}.get(rest[1:2], b" ")
        if arg.kind != "dynarray":
            return b"ARG TYPE NOT FIELD BUT %d" % _ARG_TYPE_NUMBER.get(arg.kind, 0)
        f = arg.dynfield
        loc = self.read_number(f.offset, f.size)
        length, start = loc >> 16, loc & 0xffff
        plen = min(plen, length)
        if plen < 1:
            return b""
        buf = self.data[start:start + plen]
        return delim.join(b"%02x" % b for b in buf)

    # -- print_event_cache
    def render(self, segments):
        out = []
        for seg in segments:
            if seg.kind == "text":
                out.append(seg.text)
                continue
            simple = seg.simple
            if simple is not None:
                # the cast (int/long) and printf's read agree: same width
                val = self.num(seg.arg)
                bits, signed, hexa = simple
                if bits == 32 or seg.ls == 0:
                    val &= 0xffffffff
                    if bits == 32 and signed and val >> 31:
                        val -= 1 << 32
                elif signed and val >> 63:
                    val -= 1 << 64
                out.append(b"%x" % val if hexa else b"%d" % val)
                continue
            len_arg = _s32(self.num(seg.len_arg)) if seg.len_arg is not None else None
            if seg.kind == "digit":
                out.append(_printf_int(seg.format, len_arg, self.num(seg.arg), seg.ls))
            elif seg.kind == "pointer":
                out.append(self.pointer(seg.format, 1 if len_arg is None else len_arg,
                                        seg.arg))
            else:
                out.append(self.str_arg(seg.format, len_arg, seg.arg))
        return b"".join(out)

    # -- tep_print_fields
    def fields(self):
        out = [b"[FAILED TO PARSE]"]
        for field in self.ev.fields:
            out.append(b" %s=" % str(field.name).encode("latin-1", "replace"))
            out.append(self.field_value(field))
        return b"".join(out)

    def field_value(self, field):
        info = self.info(field)
        if info.array:
            offset, length = field.offset, field.size
            if info.dynamic:
                val = self.read_number(offset, length)
                length, offset = val >> 16, val & 0xffff
                if info.relative:
                    offset += field.offset + field.size
            string = info.string and id(field) not in self.ev.not_string
            chunk = self.data[offset:offset + length] if offset >= 0 else b""
            if string and _printable(chunk):
                return self.cstring(offset)
            self.ev.not_string.add(id(field))
            return b"ARRAY[" + b", ".join(b"%02x" % b for b in chunk) + b"]"
        val = self.read_number(field.offset, field.size)
        if info.pointer:
            return b"0x%x" % val
        if info.signed:
            if field.size == 4:
                if info.long:
                    return b"0x%x" % (val & 0xffffffff)
                return b"%d" % _sext(val, 32)
            if field.size == 2:
                return b"%2d" % _sext(val, 16)
            if field.size == 1:
                return b"%1d" % _sext(val, 8)
            return b"%d" % _s64(val)
        if info.long:
            return b"0x%x" % val
        return b"%d" % val


_ARG_TYPE_NUMBER = {"null": 0, "atom": 1, "field": 2, "flags": 3, "symbol": 4, "hex": 5,
                    "intarray": 6, "type": 7, "string": 8, "bstring": 9, "dynarray": 10,
                    "op": 11, "func": 12, "bitmask": 13, "dynarraylen": 14, "hexstr": 15}

_FLAG_NAMES = {"HI_SOFTIRQ": 0, "TIMER_SOFTIRQ": 1, "NET_TX_SOFTIRQ": 2,
               "NET_RX_SOFTIRQ": 3, "BLOCK_SOFTIRQ": 4, "IRQ_POLL_SOFTIRQ": 5,
               "TASKLET_SOFTIRQ": 6, "SCHED_SOFTIRQ": 7, "HRTIMER_SOFTIRQ": 8,
               "RCU_SOFTIRQ": 9, "HRTIMER_NORESTART": 0, "HRTIMER_RESTART": 1}


@functools.lru_cache(maxsize=4096)
def _eval_flag(text):
    if text[:1].isdigit() and text[:1].isascii():
        return _s64(_strtoull(text))
    return _FLAG_NAMES.get(text, -1)


def _s32(v):
    v &= 0xffffffff
    return v - (1 << 32) if v >> 31 else v


def _sext(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _printable(chunk):
    for b in chunk:
        if b == 0:
            break
        if not (0x20 <= b <= 0x7e or b in _SPACE):
            return False
    return True


def _ip4_reverse(tail, little):
    c = tail[:1]
    if c == "h":
        return little
    if c == "l":
        return True
    return False


def _ip4(style, reverse, buf):
    buf = bytes(buf).ljust(4, b"\0")[:4]
    if reverse:
        buf = buf[::-1]
    fmt = b"%03d.%03d.%03d.%03d" if style == "i" else b"%d.%d.%d.%d"
    return fmt % tuple(buf)


def _ip6(style, buf):
    parts = [b"%02x%02x" % (buf[j], buf[j + 1]) for j in range(0, 16, 2)]
    return (b":" if style == "I" else b"").join(parts)


def _ip6c(buf):
    words = [int.from_bytes(buf[j:j + 2], "big") for j in range(0, 16, 2)]
    v4mapped = words[:5] == [0] * 5 and words[5] == 0xffff
    isatap = (words[4] | 0x0200) == 0x0200 and words[5] == 0x5efe
    use4 = v4mapped or isatap
    rng = 6 if use4 else 8
    zerolen = [0] * 8
    for i in range(rng):
        for j in range(i, rng):
            if words[j] != 0:
                break
            zerolen[i] += 1
    longest, colonpos = 1, -1
    for i in range(rng):
        if zerolen[i] > longest:
            longest, colonpos = zerolen[i], i
    if longest == 1:
        colonpos = -1
    out = []
    needcolon = False
    i = 0
    while i < rng:
        if i == colonpos:
            if needcolon or i == 0:
                out.append(b":")
            out.append(b":")
            needcolon = False
            i += longest
            continue
        if needcolon:
            out.append(b":")
            needcolon = False
        hi, lo = words[i] >> 8, words[i] & 0xff
        out.append(b"%x%02x" % (hi, lo) if hi else b"%x" % lo)
        needcolon = True
        i += 1
    if use4:
        if needcolon:
            out.append(b":")
        out.append(_ip4("I", False, buf[12:16]))
    return b"".join(out)


def _lookup_symbol(kallsyms, addr):
    """(name, start) of the kernel symbol holding addr, or None.  `kallsyms`
    is a callable addr -> (name, start) | None, or an object whose
    `lookup(addr)` gives something with `.name` and `.start` (such as
    symbolize.kallsyms.KernelSymbols)."""
    if kallsyms is None:
        return None
    try:
        if hasattr(kallsyms, "lookup"):
            sym = kallsyms.lookup(addr)
            if sym is None:
                return None
            return str(sym.name), int(sym.start)
        found = kallsyms(addr)
        if not found:
            return None
        name, start = found
        return str(name), int(start)
    except Exception:
        return None


# ---------------------------------------------------------------- C printf, one conversion
@functools.lru_cache(maxsize=1024)
def _spec(fmt):
    """Split one printf conversion ('%-08.3lx') into flags, width, precision,
    length letters and the conversion letter (any of them may hold '*')."""
    i = 1
    flags = ""
    n = len(fmt)
    while i < n and fmt[i] in "-0# +'":
        flags += fmt[i]
        i += 1
    width = ""
    while i < n and (fmt[i].isdigit() or fmt[i] == "*") and fmt[i].isascii():
        width += fmt[i]
        i += 1
    prec = None
    if i < n and fmt[i] == ".":
        i += 1
        prec = ""
        while i < n and (fmt[i].isdigit() or fmt[i] == "*") and fmt[i].isascii():
            prec += fmt[i]
            i += 1
    mods = ""
    while i < n and fmt[i] in "hlLzZqjt":
        mods += fmt[i]
        i += 1
    conv = fmt[i:i + 1]
    return flags, width, prec, mods, conv, fmt[i + 1:]


def _resolve_star(width, prec, flags, len_arg):
    """Apply the one '*' argument perf passes (to the width or the precision)."""
    w = None
    p = None
    if width == "*":
        w = len_arg if len_arg is not None else 0
        if w < 0:
            flags += "-"
            w = -w
    elif width:
        w = int(width)
    if prec is not None:
        if prec == "*":
            p = len_arg if (len_arg is not None and width != "*") else 0
            if p < 0:
                p = None
        else:
            p = int(prec or "0")
    return w, p, flags


def _pad(body, width, flags, zero_ok=False, sign=b""):
    width = min(width or 0, 1 << 16)
    total = len(sign) + len(body)
    if width <= total:
        return sign + body
    if "-" in flags:
        return sign + body + b" " * (width - total)
    if zero_ok and "0" in flags:
        return sign + b"0" * (width - total) + body
    return b" " * (width - total) + sign + body


def _printf_str(fmt, len_arg, value):
    """trace_seq_printf(s, fmt, [len_arg,] str) for a %s conversion."""
    try:
        flags, width, prec, mods, conv, tail = _spec(fmt)
        w, p, flags = _resolve_star(width, prec, flags, len_arg)
        body = value if p is None else value[:p]
        return _pad(body, w, flags) + tail.encode("latin-1", "replace")
    except (ValueError, OverflowError):
        return value


def _printf_int(fmt, len_arg, val, ls):
    """trace_seq_printf(s, fmt, [len_arg,] (cast)val) with the cast
    print_arg_number() makes for `ls` (-2 char .. 2 long long)."""
    try:
        flags, width, prec, mods, conv, tail = _spec(fmt)
        w, p, flags = _resolve_star(width, prec, flags, len_arg)
    except (ValueError, OverflowError):
        return b""
    # The argument as passed: char/short/int are promoted to a 32-bit int
    # (in a register whose upper half reads as zero), long/long long are 64-bit.
    if ls <= 0:
        bits = {-2: 8, -1: 16}.get(ls, 32)
        passed = _sext(val, bits) & 0xffffffff
    else:
        passed = val & _U64
    # How printf reads it back: its own length letters.
    if "l" in mods or "L" in mods or "z" in mods or "Z" in mods or "q" in mods \
            or "j" in mods or "t" in mods:
        rbits = 64
    elif mods.count("h") >= 2:
        rbits = 8
    elif "h" in mods:
        rbits = 16
    else:
        rbits = 32
    raw = passed & ((1 << rbits) - 1)
    sign = b""
    if conv in ("d", "i"):
        v = _sext(raw, rbits)
        if v < 0:
            sign, v = b"-", -v
        elif "+" in flags:
            sign = b"+"
        elif " " in flags:
            sign = b" "
        digits = b"%d" % v
    elif conv == "u":
        digits = b"%d" % raw
    elif conv == "x":
        digits = b"%x" % raw
    elif conv == "X":
        digits = b"%X" % raw
    elif conv == "o":
        digits = b"%o" % raw
    else:
        return b""
    if p is not None:
        p = min(p, 1 << 16)
        if p == 0 and raw == 0:
            digits = b""
        elif len(digits) < p:
            digits = b"0" * (p - len(digits)) + digits
    if "#" in flags:
        if conv == "o" and not digits.startswith(b"0"):
            digits = b"0" + digits
        elif conv in ("x", "X") and raw != 0:
            sign = b"0x" if conv == "x" else b"0X"
    return _pad(digits, w, flags, zero_ok=p is None, sign=sign) + \
        tail.encode("latin-1", "replace")


# ---------------------------------------------------------------- entry points
def format_trace_fields(event_format, raw_bytes, *, long_size=8, little=True,
                        pevent_cmdlines=None, kallsyms=None, printk_formats=None):
    """The text perf 6.1's `perf script` prints after `event_name: ` for a
    tracepoint sample of `event_format` (an EventFormat) with RAW data
    `raw_bytes`.

    `long_size` and `little` are the traced kernel's: trace_long_size(td) and
    TracingData.little; `kallsyms` resolves %pS-style pointers (see _lookup_symbol);
    `printk_formats` maps addresses to strings (TracingData.printk_formats)
    for `%s` of pointer-sized fields.  `pevent_cmdlines` is accepted for the
    caller's convenience: perf 6.1's pretty printer never uses them."""
    try:
        parsed = parse_print_fmt(event_format, long_size)
        printer = _Printer(parsed, raw_bytes or b"", long_size, little, kallsyms,
                           printk_formats)
        if parsed.failed:
            out = printer.fields()
        else:
            try:
                out = printer.render(parsed.segments)
            except RecursionError:
                out = printer.fields()
        return out.decode("utf-8", "replace")
    except Exception:          # never raise on hostile input
        return describe_raw_fields(event_format, raw_bytes)


def trace_long_size(tracing_data):
    """The long size perf 6.1 gives libtraceevent for a TracingData: the size
    of the `commit` field of the ring buffer's header_page ("the commit field
    in the page is of type long, use that instead, since it represents the
    kernel", trace-event-read.c), else the long size byte of the header."""
    try:
        for f in tracing_data.header_page_fields:
            if f.name == "commit" and f.size > 0:
                return f.size
        return tracing_data.long_size
    except Exception:
        return 8


def describe_raw_fields(event_format, raw_bytes):
    """perf's `[FAILED TO PARSE] field=value ...` listing, built from
    EventFormat.decode() alone (the last-resort fallback)."""
    try:
        values = event_format.decode(bytes(raw_bytes or b""))
        parts = []
        for f in event_format.fields:
            if getattr(f, "is_common", False):
                continue
            v = values.get(f.name)
            if isinstance(v, (bytes, bytearray)):
                v = "ARRAY[" + ", ".join("%02x" % b for b in v) + "]"
            elif isinstance(v, list):
                v = "ARRAY[" + ", ".join(str(x) for x in v) + "]"
            parts.append(" %s=%s" % (f.name, "" if v is None else v))
        return "[FAILED TO PARSE]" + "".join(parts)
    except Exception:
        return "[FAILED TO PARSE]"


# ---------------------------------------------------------------- per file
class TracePrinter:
    """format_trace_fields() for the samples of one file: the file's event
    formats, long size, byte order and printk strings, read once.

        printer = TracePrinter.for_file(pf, kallsyms=table)   # None: no tracing data
        text = printer.format(sample_attr["config"], raw_bytes)  # None: unknown id
    """

    def __init__(self, tracing_data_bytes, kallsyms=None):
        from ..format.tracing import parse_tracing_data
        data = bytes(tracing_data_bytes)
        td = parse_tracing_data(data)
        self.tracing_data = td
        self.events = td.events
        self.long_size = trace_long_size(td)
        self.little = td.little
        self.printk = td.printk_formats
        self.kallsyms = kallsyms
        _restore_multiline_print_fmts(td, data)

    @classmethod
    def for_file(cls, pf, kallsyms=None):
        """The printer of a PerfFile, or None when it has no (readable)
        tracing data."""
        from ..format.constants import Feature
        try:
            pf.tracepoint_formats()          # reads pipe-mode tracing data too
            data = pf.feature_bytes(Feature.TRACING_DATA)
            return cls(data, kallsyms) if data else None
        except Exception:
            return None

    def format(self, event_id, raw_bytes):
        ev = self.events.get(event_id)
        if ev is None:
            return None
        return format_trace_fields(ev, raw_bytes, long_size=self.long_size,
                                   little=self.little, kallsyms=self.kallsyms,
                                   printk_formats=self.printk)


def _restore_multiline_print_fmts(td, data):
    """EventFormat.from_text keeps the first line of `print fmt:`; a few
    kernel formats (ext4_getfsmap_*, ext4_fc_stats) carry newlines inside the
    string, which perf prints.  Put the whole text back from the raw tracing
    data."""
    try:
        from ..format.tracing import tracing_data_schema
        parsed = tracing_data_schema(td.little).parse(data)
        for system in parsed.systems:
            for raw in system.formats:
                text = bytes(raw).decode("utf-8", "replace")
                at = text.find("print fmt:")
                if at < 0 or "\n" not in text[at:].strip():
                    continue
                event_id = None
                for line in text.splitlines():
                    if line.startswith("ID:"):
                        try:
                            event_id = int(line[3:].strip(), 0)
                        except ValueError:
                            pass
                        break
                ev = td.events.get(event_id)
                if ev is not None and ev.system == system.name:
                    ev.print_fmt = text[at + len("print fmt:"):].strip()
    except Exception:
        pass
