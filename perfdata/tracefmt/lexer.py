"""The print fmt tokenizer (libtraceevent's event-parse.c lexer, quirks kept)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # A token's text: a str, None at the end of input (T_NONE), which the
    # parser tests by the kind before it reads the text (Any: mypy cannot).
    TokenText = Any
    Token = tuple[int, TokenText]           # (kind, text)

# ---------------------------------------------------------------- tokens
T_ERROR, T_NONE, T_SPACE, T_NEWLINE, T_OP, T_DELIM, T_ITEM, T_DQUOTE, \
    T_SQUOTE = range(9)

SPACE = b" \t\n\v\f\r"
U64 = (1 << 64) - 1


def _ctype(ch: int) -> int:
    """libtraceevent's get_type(); -1 is the end of input."""
    if ch < 0:
        return T_NONE
    if ch == 0x0a:
        return T_NEWLINE
    if ch in SPACE:
        return T_SPACE
    if 0x30 <= ch <= 0x39 or 0x41 <= ch <= 0x5a or 0x61 <= ch <= 0x7a or ch == 0x5f:
        return T_ITEM
    if ch == 0x27:
        return T_SQUOTE
    if ch == 0x22:
        return T_DQUOTE
    if not 0x20 <= ch <= 0x7e:
        return T_NONE
    if ch in b"(),":
        return T_DELIM
    return T_OP


class ParseError(Exception):
    pass


_FORCED = {"LOCAL_PR_FMT": b'"%s" ', "STA_PR_FMT": b'" sta:%pM" ',
           "VIF_PR_FMT": b'" vif:%p(%d)" '}


class Lexer:
    def __init__(self, data: bytes) -> None:
        self.buf = data
        self.pos = 0

    def _read(self) -> int:
        if self.pos >= len(self.buf):
            return -1
        ch = self.buf[self.pos]
        self.pos += 1
        # input_buf is a (signed) char array: bytes >= 0x80 read as negative,
        # which __read_token takes for the end of input.
        return -1 if ch >= 0x80 else ch

    def _peek(self) -> int:
        if self.pos >= len(self.buf):
            return -1
        ch = self.buf[self.pos]
        return -1 if ch >= 0x80 else ch

    def raw_token(self) -> Token:
        ch = self._read()
        if ch < 0:
            return T_NONE, None
        kind = _ctype(ch)
        if kind == T_NONE:
            return kind, None
        out = [ch]
        if kind in (T_NEWLINE, T_DELIM):
            return kind, chr(ch)
        if kind == T_OP:
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
        if kind in (T_DQUOTE, T_SQUOTE):
            quote = ch
            out = []
            while True:
                # A quote ends the string unless a backslash precedes it
                # (libtraceevent's "\\\\ cancels itself" has no effect).
                prev = quote
                while True:
                    ch = self._read()
                    if ch < 0:
                        raise ParseError("unterminated string")
                    if ch == quote and prev != 0x5c:
                        break
                    out.append(ch)
                    prev = ch
                if kind != T_DQUOTE:
                    break
                save = self.pos
                ch = self._read()
                while ch >= 0 and ch in SPACE:
                    ch = self._read()
                if ch != 0x22:
                    self.pos = save
                    break
            return kind, bytes(out).decode("latin-1")
        while _ctype(self._peek()) == kind:
            out.append(self._read())
        tok = bytes(out).decode("ascii")
        if kind == T_ITEM and tok in _FORCED:
            return Lexer(_FORCED[tok]).raw_token()
        return kind, tok

    def token(self) -> Token:
        """read_token(): skips spaces, not newlines."""
        while True:
            kind, tok = self.raw_token()
            if kind != T_SPACE:
                return kind, tok

    def token_item(self) -> Token:
        """read_token_item(): skips spaces and newlines."""
        while True:
            kind, tok = self.raw_token()
            if kind not in (T_SPACE, T_NEWLINE):
                return kind, tok
