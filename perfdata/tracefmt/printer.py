"""The print args of one event evaluated over a sample's raw bytes, and the
conversions printed as libtraceevent's C printf does."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Literal

from .evaluate import eval_type_str, s64, strtoull
from .lexer import SPACE, U64
from .printf import ip4, ip4_reverse, ip6, ip6c, printf_int, printf_str, sext

if TYPE_CHECKING:
    from symbolize.symbols.kallsyms import KernelSymbols

    from ..format.tracing import FieldFormat
    from .parser import _Arg, _FieldInfo, _Parsed
    from .segments import Segment
    # Kernel symbols for %pS: a KernelSymbols, or a callable addr -> (name, start) | None.
    Kallsyms = KernelSymbols | Callable[[int], tuple[str, int] | None]


# ---------------------------------------------------------------- printing
class Printer:
    def __init__(self, parsed: _Parsed, raw: bytes | memoryview, long_size: int, little: bool,
                 kallsyms: Kallsyms | None, printk: dict[int, str] | None) -> None:
        self.ev = parsed.event
        self.data = bytes(raw)
        self.long_size = long_size
        self.order: Literal["little", "big"] = "little" if little else "big"
        self.little = little
        self.kallsyms = kallsyms
        self.printk = printk or {}

    # -- raw reads
    def read_number(self, offset: int, size: int) -> int:
        if size not in (1, 2, 4, 8) or offset < 0 or offset + size > len(self.data):
            return 0
        return int.from_bytes(self.data[offset:offset + size], self.order)

    def read_native(self, offset: int, size: int) -> int:
        if offset < 0 or offset + size > len(self.data):
            return 0
        return int.from_bytes(self.data[offset:offset + size], "little")

    def cstring(self, offset: int, limit: int | None = None) -> bytes:
        if offset < 0 or offset >= len(self.data):
            return b""
        end = len(self.data) if limit is None else min(len(self.data), offset + limit)
        chunk = self.data[offset:end]
        nul = chunk.find(b"\0")
        return chunk if nul < 0 else chunk[:nul]

    def info(self, field: FieldFormat) -> _FieldInfo:
        return self.ev.info[id(field)]

    # -- eval_num_arg
    def num(self, arg: _Arg, depth: int = 0) -> int:
        if depth > 200:
            return 0
        kind = arg.kind
        if kind == "atom":
            return strtoull(arg.atom)
        if kind == "field":
            field = arg.field
            if field is None:
                field = arg.field = self.ev.find_any(arg.name)
                if field is None:
                    return 0
            return self.read_number(field.offset, field.size)
        if kind == "type":
            return eval_type_str(self.num(arg.item, depth + 1), arg.type, False)
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

    def num_op(self, arg: _Arg, depth: int) -> int:
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
            f: FieldFormat | None
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
            val = self.read_number(offset & U64, field_size)
            if typearg is not None:
                val = eval_type_str(val, typearg.type, True)
            return val
        if op == "?":
            cond = self.num(arg.left, depth)
            branch = arg.right
            if branch is None or branch.kind != "op":
                return 0
            # (the ':' op of a '?' has both sides)
            return self.num(branch.left if cond else branch.right, depth)  # type: ignore[arg-type]
        left = self.num(arg.left, depth) if arg.left is not None else 0
        right = self.num(arg.right, depth) if arg.right is not None else 0
        if op == "!":
            return int(not right)
        if op == "!=":
            return int(left != right)
        if op == "~":
            return ~right & U64
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
            return (left << (right & 63)) & U64
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
            return (left - right) & U64
        if op == "+":
            return (left + right) & U64
        if op == "/":
            return left // right if right else 0
        if op == "%":
            return left % right if right else 0
        if op == "*":
            return (left * right) & U64
        return 0          # '^' and anything else: "unknown op", 0

    # -- print_str_arg
    def str_arg(self, fmt: str, len_arg: int | None, arg: _Arg, depth: int = 0) -> bytes:
        if depth > 200:
            return b""
        kind = arg.kind
        if kind == "atom":
            return printf_str(fmt, len_arg, arg.atom.encode("latin-1", "replace"))
        if kind == "field":
            return self.field_str(fmt, len_arg, arg)
        if kind == "flags":
            return self.flags_str(fmt, len_arg, arg, depth)
        if kind == "symbol":
            val = s64(self.num(arg.field, depth + 1))
            for value, text in arg.symbols:
                if val == _eval_flag(value):
                    return printf_str(fmt, len_arg, text.encode("latin-1", "replace"))
            return b"0x%x" % (val & U64)
        if kind in ("hex", "hexstr"):
            start = self.array_start(arg.field)
            if start is None:
                return b""
            count = _s32(self.num(arg.size, depth + 1))
            count = max(0, min(count, len(self.data) - start))
            sep = b" " if kind == "hex" else b""
            return sep.join(b"%02x" % b for b in self.data[start:start + count])
        if kind == "intarray":
            return self.int_array_str(arg, depth)
        if kind == "string":
            field = arg.field
            if field is None:
                field = arg.field = self.ev.find_any(arg.name)
                if field is None:
                    return b""
            offset = self.read_number(field.offset, 4) & 0xffff
            if self.info(field).relative:
                offset += field.offset + field.size
            return printf_str(fmt, len_arg, self.cstring(offset))
        if kind == "bitmask":
            field = self.ev.find_any(arg.name)
            if field is None:
                return b""
            loc = self.read_number(field.offset, 4)
            size, offset = loc >> 16, loc & 0xffff
            if self.info(field).relative:
                offset += field.offset + field.size
            return printf_str(fmt, len_arg, self.bitmask(offset, size))
        if kind == "op":
            if arg.op != "?" or arg.right is None or arg.right.kind != "op":
                return b""
            cond = self.num(arg.left, depth + 1)
            branch = arg.right.left if cond else arg.right.right
            # (the ':' op of a '?' has both sides)
            return self.str_arg(fmt, len_arg, branch, depth + 1)  # type: ignore[arg-type]
        return b""

    def field_str(self, fmt: str, len_arg: int | None, arg: _Arg) -> bytes:
        """A field printed with %s: its string, or a pointer named by the
        printk formats."""
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
        return printf_str(fmt, len_arg, self.cstring(field.offset, max(size, 0)))

    def flags_str(self, fmt: str, len_arg: int | None, arg: _Arg, depth: int) -> bytes:
        """__print_flags(): the names of the bits set, joined by its delimiter."""
        val = s64(self.num(arg.field, depth + 1))
        out = []
        printed = False
        delim = (arg.delim or "").encode("latin-1", "replace") if arg.delim else None
        for value, text in arg.flags:
            fval = _eval_flag(value)
            if not val and fval < 0:
                out.append(printf_str(fmt, len_arg, text.encode("latin-1", "replace")))
                break
            if fval > 0 and (val & fval) == fval:
                if printed and delim is not None:
                    out.append(delim)
                out.append(printf_str(fmt, len_arg, text.encode("latin-1", "replace")))
                printed = True
                val &= ~fval
        if val:
            if printed and delim is not None:
                out.append(delim)
            out.append(b"0x%x" % (val & U64))
        return b"".join(out)

    def int_array_str(self, arg: _Arg, depth: int) -> bytes:
        """__print_array(): the numbers of an array, by element size."""
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

    def array_start(self, arg: _Arg) -> int | None:
        """Where the array of __print_hex/__print_array starts in the data."""
        if arg.kind == "dynarray":
            f = arg.dynfield
            return self.read_number(f.offset, f.size) & 0xffff
        if arg.kind == "field":
            field = arg.field or self.ev.find_any(arg.name)
            return None if field is None else field.offset
        return None

    def bitmask(self, offset: int, size: int) -> bytes:
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
    def pointer(self, fmt: str, plen: int, arg: _Arg) -> bytes:
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

    def function(self, letter: str, arg: _Arg) -> bytes:
        val = self.num(arg)
        found = _lookup_symbol(self.kallsyms, val)
        if found is not None:
            name, start = found
            out = name.encode("utf-8", "replace")
            if letter in ("F", "S"):
                out += b"+0x%x" % ((val - start) & U64)
            return out
        # "0x%lx" of (long)val or "0x%llx": the same on a 64-bit host
        return b"0x%x" % val

    def field_bytes(self, arg: _Arg, size: int) -> tuple[FieldFormat | None, bytes]:
        """The bytes of the FIELD arg of an address printer, or an error text."""
        if arg.kind != "field":
            return None, b"ARG TYPE NOT FIELD BUT %d" % _ARG_TYPE_NUMBER.get(arg.kind, 0)
        field = arg.field or self.ev.find_any(arg.name)
        if field is None:
            return None, b""
        return field, self.data[field.offset:field.offset + size].ljust(size, b"\0")

    def mac(self, rest: str, arg: _Arg) -> bytes:
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

    def ip(self, rest: str, arg: _Arg) -> bytes:
        style = rest[:1]
        version = rest[1:2]
        tail = rest[2:]
        if version == "4":
            field, buf = self.field_bytes(arg, 4)
            if field is None:
                return buf
            if field.size != 4:
                return b"INVALIDIPv4"
            return ip4(style, ip4_reverse(tail, self.little), buf)
        if version == "6":
            field, buf = self.field_bytes(arg, 16)
            if field is None:
                return buf
            if field.size != 16:
                return b"INVALIDIPv6"
            if style == "I" and tail[:1] == "c":
                return ip6c(buf)
            return ip6(style, buf)
        if version == "S":
            have_p = have_c = False
            if style == "I":
                if tail[:1] == "p":
                    have_p, tail = True, tail[1:]
                if tail[:1] == "c":
                    have_c, tail = True, tail[1:]
            reverse = ip4_reverse(tail, self.little)
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
                out = ip4(style, reverse, sa[4:8])
                if have_p:
                    out += b":%d" % int.from_bytes(sa[2:4], "big")
                return out
            if family == 10:                                  # AF_INET6
                if field.size < 28:
                    return b"INVALIDIPv6"
                out = b"[" if have_p else b""
                addr = sa[8:24]
                out += ip6c(addr) if have_c else ip6(style, addr)
                if have_p:
                    out += b"]:%d" % int.from_bytes(sa[2:4], "big")
                return out
            return b""
        return b""

    def uuid(self, rest: str, arg: _Arg) -> bytes:
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

    def raw_buff(self, rest: str, arg: _Arg, plen: int) -> bytes:
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
    def render(self, segments: list[Segment]) -> bytes:
        out: list[bytes] = []
        for seg in segments:
            if seg.kind == "text":
                out.append(seg.text)  # type: ignore[arg-type]  # (a text segment's)
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
                out.append(printf_int(seg.format, len_arg, self.num(seg.arg), seg.ls))
            elif seg.kind == "pointer":
                out.append(self.pointer(seg.format, 1 if len_arg is None else len_arg,
                                        seg.arg))
            else:
                out.append(self.str_arg(seg.format, len_arg, seg.arg))
        return b"".join(out)

    # -- tep_print_fields
    def fields(self) -> bytes:
        out = [b"[FAILED TO PARSE]"]
        for field in self.ev.fields:
            out.append(b" %s=" % str(field.name).encode("latin-1", "replace"))
            out.append(self.field_value(field))
        return b"".join(out)

    def field_value(self, field: FieldFormat) -> bytes:
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
                return b"%d" % sext(val, 32)
            if field.size == 2:
                return b"%2d" % sext(val, 16)
            if field.size == 1:
                return b"%1d" % sext(val, 8)
            return b"%d" % s64(val)
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
def _eval_flag(text: str) -> int:
    if text[:1].isdigit() and text[:1].isascii():
        return s64(strtoull(text))
    return _FLAG_NAMES.get(text, -1)


def _s32(v: int) -> int:
    v &= 0xffffffff
    return v - (1 << 32) if v >> 31 else v


def _printable(chunk: bytes) -> bool:
    for b in chunk:
        if b == 0:
            break
        if not (0x20 <= b <= 0x7e or b in SPACE):
            return False
    return True


def _lookup_symbol(kallsyms: Kallsyms | None, addr: int) -> tuple[str, int] | None:
    """(name, start) of the kernel symbol holding addr, or None.  `kallsyms`
    is a callable addr -> (name, start) | None, or an object whose
    `lookup(addr)` gives something with `.name` and `.start` (such as
    symbolize.symbols.kallsyms.KernelSymbols)."""
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
