"""Rust symbol names, demangled.

Rust legacy names are Itanium-shaped (`_ZN...17h<hash>E`); perf prints them
without the trailing hash, so they are decoded here rather than by cxxfilt.
Rust v0 names (`_R...`, RFC 2603) are decoded by a small parser below, in the
form rustc-demangle prints with `{:#}` (no crate disambiguators).  A name
that does not decode gives None.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

_LEGACY_HASH = re.compile(r"h[0-9a-f]{16}\Z")


# ----------------------------------------------------------------- legacy
_LEGACY_ESCAPES = {
    "SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ",",
}


def demangle_rust_legacy(name: str) -> str | None:
    """`_ZN4core3fmt5write17h0123456789abcdefE` -> `core::fmt::write`, or None
    if the name is not a Rust legacy symbol (its last element must be the hash)."""
    s = name
    if s.startswith("__ZN"):
        s = s[1:]
    if not s.startswith("_ZN"):
        return None
    i = 3
    elements = []
    while i < len(s) and s[i] != "E":
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        if j == i:
            return None
        n = int(s[i:j])
        if n == 0 or j + n > len(s):
            return None
        elements.append(s[j:j + n])
        i = j + n
    # Whatever follows the closing E (".llvm.123" from LTO) is dropped, as
    # perf drops it.
    if i >= len(s) or not elements or not _LEGACY_HASH.match(elements[-1]):
        return None
    out = []
    for el in elements[:-1]:
        dec = _legacy_unescape(el)
        if dec is None:
            return None
        out.append(dec)
    return "::".join(out)


def _legacy_unescape(el: str) -> str | None:
    if el.startswith("_$"):
        el = el[1:]
    out = []
    i = 0
    while i < len(el):
        c = el[i]
        if c == "$":
            j = el.find("$", i + 1)
            if j < 0:
                return None
            code = el[i + 1:j]
            if code in _LEGACY_ESCAPES:
                out.append(_LEGACY_ESCAPES[code])
            elif code.startswith("u") and re.fullmatch(r"u[0-9a-f]{1,6}", code):
                try:
                    out.append(chr(int(code[1:], 16)))
                except ValueError:
                    return None
            else:
                return None
            i = j + 1
        elif c == "." and el.startswith("..", i):
            out.append("::")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --------------------------------------------------------------------- v0
class _Invalid(Exception):
    pass


_BASIC = {
    "a": "i8", "b": "bool", "c": "char", "d": "f64", "e": "str", "f": "f32",
    "h": "u8", "i": "isize", "j": "usize", "l": "i32", "m": "u32", "n": "i128",
    "o": "u128", "s": "i16", "t": "u16", "u": "()", "v": "...", "x": "i64",
    "y": "u64", "z": "!", "p": "_",
}
_SIGNED = set("ailnsx")
_UNSIGNED = set("hjmoty")
_MAX_DEPTH = 200


class _V0:
    def __init__(self, sym: str) -> None:
        self.s = sym
        self.pos = 0
        self.depth = 0
        self.bound_lifetimes = 0

    # -- lexing
    def peek(self) -> str:
        return self.s[self.pos] if self.pos < len(self.s) else ""

    def eat(self, c: str) -> bool:
        if self.peek() == c:
            self.pos += 1
            return True
        return False

    def next(self) -> str:
        c = self.peek()
        if not c:
            raise _Invalid("end")
        self.pos += 1
        return c

    def base62(self) -> int:
        if self.eat("_"):
            return 0
        x = 0
        while True:
            c = self.next()
            if c == "_":
                return x + 1
            if c.isdigit():
                d = ord(c) - 48
            elif "a" <= c <= "z":
                d = ord(c) - 97 + 10
            elif "A" <= c <= "Z":
                d = ord(c) - 65 + 36
            else:
                raise _Invalid("base62")
            x = x * 62 + d
            if x > 1 << 64:
                raise _Invalid("overflow")

    def opt_base62(self, tag: str) -> int:
        return self.base62() + 1 if self.eat(tag) else 0

    def decimal(self) -> int:
        # decimal-number = "0" | nonzero-digit {digit}: a 0 stands alone, so
        # "00" is two numbers (two empty closure names in a row).
        if self.eat("0"):
            return 0
        start = self.pos
        while self.peek().isdigit():
            self.pos += 1
        if start == self.pos:
            raise _Invalid("decimal")
        return int(self.s[start:self.pos])

    def ident(self) -> tuple[str, int]:
        dis = self.opt_base62("s")
        punycode = self.eat("u")
        n = self.decimal()
        self.eat("_")
        raw = self.s[self.pos:self.pos + n]
        if len(raw) != n:
            raise _Invalid("ident")
        self.pos += n
        if punycode:
            raw = _punycode(raw)
        return raw, dis

    def backref(self, fn: Callable[[], str]) -> str:
        start = self.pos - 1
        i = self.base62()
        if i >= start:
            raise _Invalid("backref")
        saved = self.pos
        self.pos = i
        try:
            return fn()
        finally:
            self.pos = saved

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Invalid("depth")

    # -- grammar
    def path(self, in_value: bool) -> str:
        self.enter()
        try:
            tag = self.next()
            if tag == "C":
                name, _ = self.ident()
                return name
            if tag == "M":
                self.impl_path()
                return "<" + self.type() + ">"
            if tag == "X":
                self.impl_path()
                t = self.type()
                return "<" + t + " as " + self.path(False) + ">"
            if tag == "Y":
                t = self.type()
                return "<" + t + " as " + self.path(False) + ">"
            if tag == "N":
                ns = self.next()
                if not ns.isalpha():
                    raise _Invalid("namespace")
                prefix = self.path(in_value)
                name, dis = self.ident()
                if ns.isupper():
                    kind = {"C": "closure", "S": "shim"}.get(ns, ns)
                    inner = kind + (":" + name if name else "") + "#" + str(dis)
                    return prefix + "::{" + inner + "}"
                return prefix + "::" + name if name else prefix
            if tag == "I":
                p = self.path(in_value)
                args = []
                while not self.eat("E"):
                    args.append(self.generic_arg())
                return p + ("::<" if in_value else "<") + ", ".join(args) + ">"
            if tag == "B":
                return self.backref(lambda: self.path(in_value))
            raise _Invalid("path")
        finally:
            self.depth -= 1

    def impl_path(self) -> None:
        self.opt_base62("s")
        self.path(False)

    def generic_arg(self) -> str:
        if self.eat("L"):
            return self.lifetime(self.base62())
        if self.eat("K"):
            return self.const()
        return self.type()

    def lifetime(self, i: int) -> str:
        if i == 0:
            return "'_"
        depth = self.bound_lifetimes - i
        if depth < 0:
            raise _Invalid("lifetime")
        return "'" + (chr(97 + depth) if depth < 26 else "_" + str(depth))

    def binder(self) -> str:
        n = self.opt_base62("G")
        if n == 0:
            return ""
        names = []
        for _ in range(n):
            self.bound_lifetimes += 1
            names.append(self.lifetime(1))
        return "for<" + ", ".join(names) + "> "

    def type(self) -> str:
        self.enter()
        try:
            c = self.next()
            if c in _BASIC:
                return _BASIC[c]
            if c in "RQ":
                lt = ""
                if self.eat("L"):
                    i = self.base62()
                    if i:
                        lt = self.lifetime(i) + " "
                return "&" + lt + ("mut " if c == "Q" else "") + self.type()
            if c == "P":
                return "*const " + self.type()
            if c == "O":
                return "*mut " + self.type()
            if c == "A":
                t = self.type()
                return "[" + t + "; " + self.const() + "]"
            if c == "S":
                return "[" + self.type() + "]"
            if c == "T":
                items = []
                while not self.eat("E"):
                    items.append(self.type())
                return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
            if c == "F":
                saved = self.bound_lifetimes
                try:
                    out = self.binder()
                    if self.eat("U"):
                        out += "unsafe "
                    if self.eat("K"):
                        if self.eat("C"):
                            abi = "C"
                        else:
                            abi, _ = self.ident()
                            abi = abi.replace("_", "-")
                        out += 'extern "' + abi + '" '
                    args = []
                    while not self.eat("E"):
                        args.append(self.type())
                    out += "fn(" + ", ".join(args) + ")"
                    ret = self.type()
                    if ret != "()":
                        out += " -> " + ret
                    return out
                finally:
                    self.bound_lifetimes = saved
            if c == "D":
                saved = self.bound_lifetimes
                try:
                    out = "dyn " + self.binder()
                    traits = []
                    while not self.eat("E"):
                        traits.append(self.dyn_trait())
                    out += " + ".join(traits)
                    if not self.eat("L"):
                        raise _Invalid("dyn lifetime")
                    i = self.base62()
                    if i:
                        out += " + " + self.lifetime(i)
                    return out
                finally:
                    self.bound_lifetimes = saved
            if c == "B":
                return self.backref(self.type)
            self.pos -= 1
            return self.path(False)
        finally:
            self.depth -= 1

    def dyn_trait(self) -> str:
        p = self.path(False)
        assoc = []
        while self.eat("p"):
            name, _ = self.ident()
            assoc.append(name + " = " + self.type())
        if not assoc:
            return p
        if p.endswith(">"):
            return p[:-1] + ", " + ", ".join(assoc) + ">"
        return p + "<" + ", ".join(assoc) + ">"

    def const(self) -> str:
        if self.eat("B"):
            return self.backref(self.const)
        c = self.next()
        if c == "p":
            return "_"
        neg = False
        if c in _SIGNED and self.eat("n"):
            neg = True
        start = self.pos
        while self.peek() and self.peek() != "_":
            if self.peek() not in "0123456789abcdef":
                raise _Invalid("const")
            self.pos += 1
        digits = self.s[start:self.pos]
        if not self.eat("_"):
            raise _Invalid("const end")
        value = int(digits, 16) if digits else 0
        if c in _SIGNED or c in _UNSIGNED:
            return str(-value if neg else value)
        if c == "b":
            if value > 1:
                raise _Invalid("bool")
            return "true" if value else "false"
        if c == "c":
            try:
                return _rust_char(chr(value))
            except (ValueError, OverflowError):
                raise _Invalid("char") from None
        raise _Invalid("const type")


def _rust_char(ch: str) -> str:
    esc = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "'": "\\'", "\\": "\\\\", "\0": "\\0"}
    if ch in esc:
        return "'" + esc[ch] + "'"
    if ch.isprintable():
        return "'" + ch + "'"
    return "'\\u{%x}'" % ord(ch)


def _punycode(raw: str) -> str:
    # v0 uses '_' where RFC 3492 uses '-' as the basic/extended delimiter.
    i = raw.rfind("_")
    enc = (raw[:i] + "-" + raw[i + 1:]) if i >= 0 else raw
    try:
        return enc.encode("ascii").decode("punycode")
    except Exception:
        raise _Invalid("punycode") from None


def demangle_rust_v0(name: str) -> str | None:
    """`_RNvCs15kBYyAo9fc_7mycrate7example` -> `mycrate::example`, or None."""
    s = name[1:] if name.startswith("__R") else name
    if not s.startswith("_R"):
        return None
    body = s[2:]
    if body[:1].isdigit():        # an encoding version number; only 0 exists
        return None
    p = _V0(body)
    try:
        out = p.path(True)
        if p.peek() and p.peek().isupper():
            p.path(False)          # instantiating crate: not printed
    except (_Invalid, IndexError, RecursionError):
        return None
    rest = body[p.pos:]
    if rest and not rest.startswith((".", "$")):
        return None
    return out
