"""libtraceevent's printing of one conversion as C's printf does it
(trace_seq_printf over a %d, %u, %x, %s with flags, width, precision and
length letters), and the kernel's vsprintf forms of IPv4 and IPv6
addresses (%pI4, %pI6, %pI6c)."""
from __future__ import annotations

import functools

from .lexer import U64


def sext(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def ip4_reverse(tail: str, little: bool) -> bool:
    c = tail[:1]
    if c == "h":
        return little
    if c == "l":
        return True
    return False


def ip4(style: str, reverse: bool, buf: bytes) -> bytes:
    buf = bytes(buf).ljust(4, b"\0")[:4]
    if reverse:
        buf = buf[::-1]
    fmt = b"%03d.%03d.%03d.%03d" if style == "i" else b"%d.%d.%d.%d"
    return fmt % tuple(buf)


def ip6(style: str, buf: bytes) -> bytes:
    parts = [b"%02x%02x" % (buf[j], buf[j + 1]) for j in range(0, 16, 2)]
    return (b":" if style == "I" else b"").join(parts)


def ip6c(buf: bytes) -> bytes:
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
        out.append(ip4("I", False, buf[12:16]))
    return b"".join(out)


@functools.lru_cache(maxsize=1024)
def _spec(fmt: str) -> tuple[str, str, str | None, str, str, str]:
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


def _resolve_star(width: str, prec: str | None, flags: str,
                  len_arg: int | None) -> tuple[int | None, int | None, str]:
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


def _pad(body: bytes, width: int | None, flags: str, zero_ok: bool = False,
         sign: bytes = b"") -> bytes:
    width = min(width or 0, 1 << 16)
    total = len(sign) + len(body)
    if width <= total:
        return sign + body
    if "-" in flags:
        return sign + body + b" " * (width - total)
    if zero_ok and "0" in flags:
        return sign + b"0" * (width - total) + body
    return b" " * (width - total) + sign + body


def printf_str(fmt: str, len_arg: int | None, value: bytes) -> bytes:
    """trace_seq_printf(s, fmt, [len_arg,] str) for a %s conversion."""
    try:
        flags, width, prec, mods, conv, tail = _spec(fmt)
        w, p, flags = _resolve_star(width, prec, flags, len_arg)
        body = value if p is None else value[:p]
        return _pad(body, w, flags) + tail.encode("latin-1", "replace")
    except (ValueError, OverflowError):
        return value


def printf_int(fmt: str, len_arg: int | None, val: int, ls: int) -> bytes:
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
        passed = sext(val, bits) & 0xffffffff
    else:
        passed = val & U64
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
        v = sext(raw, rbits)
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
