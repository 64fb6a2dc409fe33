"""Decoders derived from the construct schemas, for the hot records.

Interpreted construct costs ~20-30 us a record (docs/perf-facts.md).  `derive_decoder`
walks a schema once and turns it into a short list of steps: runs of fixed
fields become one `struct.Struct.unpack_from`, arrays of numbers one unpack,
byte fields a memoryview slice.  The schema stays the only description of the
layout; a test checks that both give the same dict on every sample file.
Every step checks its bounds first, so a hostile count or length raises
`DecodeError` instead of reading or allocating beyond the record.
"""
from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING, Any, Callable

import construct as cs

if TYPE_CHECKING:
    # decode(buf, off, end) -> (the fields, the offset after them)
    Decoder = Callable[[bytes | memoryview, int, int], tuple[dict[str, Any], int]]


class DecodeError(Exception):
    def __init__(self, message: str, field: str | None = None, offset: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.offset = offset


class NotDerivable(Exception):
    """The schema uses a construct class the deriver does not handle."""


def _format_field(sub: cs.Construct) -> str | None:
    while isinstance(sub, cs.Renamed):
        sub = sub.subcon
    if isinstance(sub, cs.FormatField):
        return sub.fmtstr
    return None


def _is_cstring(sub: cs.Construct) -> bool:
    return (isinstance(sub, cs.StringEncoded) and isinstance(sub.subcon, cs.NullTerminated))


def derive_struct(schema: cs.Construct) -> struct.Struct:
    """The struct.Struct of a schema made only of fixed-size numbers (e.g.
    perf_event_header), for hot loops that unpack it in place."""
    # (str once the check below has refused a None in it)
    fmts: list[str] = [_format_field(sub)  # type: ignore[misc]
                       for sub in getattr(schema, "subcons", ())]
    if not fmts or None in fmts or len({f[0] for f in fmts}) != 1:
        raise NotDerivable("not a struct of numbers of one byte order")
    return struct.Struct(fmts[0][0] + "".join(f[1:] for f in fmts))


def derive_decoder(schema: cs.Construct) -> Decoder:
    """Return decode(buf, off, end) -> (dict, new_off) for a Struct schema.

    The schema is turned once into the source of one Python function (as
    construct's own compile() does, but with every count and length checked
    against the bytes left): fixed runs unpack into locals, and each dict is
    built at the end of its struct from a literal.  That is what makes it
    several times faster than a chain of per-field steps."""
    if not isinstance(schema, cs.Struct):
        raise NotDerivable(type(schema).__name__)
    gen = _Generator()
    lines = ["def decode(buf, off=0, end=None):",
             "    if end is None:",
             "        end = len(buf)"]
    result = gen.struct(schema, lines, "    ")
    lines.append("    return %s, off" % result)
    namespace = dict(gen.constants, DecodeError=DecodeError, unpack_from=struct.unpack_from)
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<decoder derived from %s>" % _schema_label(schema), "exec"),
         namespace)
    decode = namespace["decode"]
    decode.source = source
    return decode


def _schema_label(schema: cs.Construct) -> str:
    names = [sub.name for sub in getattr(schema, "subcons", ()) if sub.name]
    return ",".join(names[:6]) + (",..." if len(names) > 6 else "")


_PATH = re.compile(r"this\['([A-Za-z_][A-Za-z0-9_]*)'\]\Z")
_PATH_ANYWHERE = re.compile(r"this\['([A-Za-z_][A-Za-z0-9_]*)'\]")
_ARITHMETIC = re.compile(r"[0-9\s()!=<>&|^+*/%-]*\Z")


class _Generator:
    """Writes the decoding source of one schema: locals _0, _1 ... hold the
    fields; constants (structs, expressions) go into the namespace."""

    def __init__(self) -> None:
        self.constants: dict[str, Any] = {}
        self.count = 0

    def var(self) -> str:
        self.count += 1
        return "_%d" % self.count

    def const(self, value: Any, prefix: str) -> str:
        name = "%s%d" % (prefix, len(self.constants))
        self.constants[name] = value
        return name

    def expression(self, expr: Any, fields: dict[str, str], name: str | None) -> str:
        """Source text of a count/length/condition expression of construct."""
        if not callable(expr):
            if isinstance(expr, int):
                return repr(expr)
            raise NotDerivable("%s: expression %r" % (name, expr))
        text = repr(expr)
        m = _PATH.match(text)
        if m and m.group(1) in fields:
            return fields[m.group(1)]
        if m:
            raise NotDerivable("%s: expression needs %s" % (name, m.group(1)))
        # Arithmetic and comparisons of fields and integers (`this.abi != 0`)
        # become source too; their repr is Python already.
        refs = _PATH_ANYWHERE.findall(text)
        if refs and all(r in fields for r in refs) and \
                _ARITHMETIC.match(_PATH_ANYWHERE.sub("0", text)):
            return _PATH_ANYWHERE.sub(lambda m: fields[m.group(1)], text)
        # Any other expression object is called with the fields decoded so far.
        ctx = "{%s}" % ", ".join("%r: %s" % kv for kv in fields.items())
        return "%s(%s)" % (self.const(expr, "_e"), ctx)

    def struct(self, schema: cs.Struct, lines: list[str], ind: str) -> str:
        """Emit the decoding of a Struct; return the name of the local
        holding its dict."""
        fields: dict[str, str] = {}     # field name -> local holding it
        run_names: list[str]
        run_fmt: list[str]
        run_names, run_fmt = [], []

        def flush_run() -> None:
            if not run_names:
                return
            packed = struct.Struct(run_fmt[0][0] + "".join(f[1:] for f in run_fmt))
            unpack = self.const(packed.unpack_from, "_s")
            names = [self.var() for _ in run_names]
            lines.append("%sif off + %d > end:" % (ind, packed.size))
            lines.append("%s    raise DecodeError('needs %d bytes, %%d left' %% (end - off), "
                         "%r, off)" % (ind, packed.size, run_names[0]))
            lines.append("%s%s, = %s(buf, off)" % (ind, ", ".join(names), unpack))
            lines.append("%soff += %d" % (ind, packed.size))
            fields.update(zip(run_names, names))
            run_names.clear()
            run_fmt.clear()

        for sub in schema.subcons:
            name = sub.name
            inner = sub.subcon if isinstance(sub, cs.Renamed) else sub
            fmt = _format_field(inner)
            if fmt is not None and name and (not run_fmt or run_fmt[0][0] == fmt[0]):
                run_names.append(name)
                run_fmt.append(fmt)
                continue
            flush_run()
            if fmt is not None:
                run_names.append(name)
                run_fmt.append(fmt)
                continue
            local = self.var()
            self.field(name, inner, fields, local, lines, ind)
            if name:
                fields[name] = local
        flush_run()
        result = self.var()
        lines.append("%s%s = {%s}" % (ind, result,
                                      ", ".join("%r: %s" % kv for kv in fields.items())))
        return result

    def field(self, name: str | None, sub: cs.Construct, fields: dict[str, str], local: str,
              lines: list[str], ind: str) -> None:
        """Emit code that leaves field `name` in `local`."""
        if isinstance(sub, cs.Struct):
            inner = self.struct(sub, lines, ind)
            lines.append("%s%s = %s" % (ind, local, inner))
            return

        if isinstance(sub, cs.Array):
            self.array(name, sub, fields, local, lines, ind)
            return

        if isinstance(sub, cs.Bytes):
            length = self.expression(sub.length, fields, name)
            n = self.var()
            lines.append("%s%s = %s" % (ind, n, length))
            lines.append("%sif %s < 0 or %s > end - off:" % (ind, n, n))
            lines.append("%s    raise DecodeError('length %%d exceeds the %%d bytes left' %% "
                         "(%s, end - off), %r, off)" % (ind, n, name))
            lines.append("%s%s = buf[off:off + %s]" % (ind, local, n))
            lines.append("%soff += %s" % (ind, n))
            return

        if isinstance(sub, cs.IfThenElse) and isinstance(sub.elsesubcon, type(cs.Pass)):
            cond = self.expression(sub.condfunc, fields, name)
            lines.append("%sif %s:" % (ind, cond))
            self.field(name, sub.thensubcon, fields, local, lines, ind + "    ")
            lines.append("%selse:" % ind)
            lines.append("%s    %s = None" % (ind, local))
            return

        if isinstance(sub, cs.Pointer):
            # A struct at a fixed place of the record (from its first byte,
            # as construct seeks): read there, then go on where we were.
            if not isinstance(sub.offset, int) or sub.offset < 0:
                raise NotDerivable("%s: Pointer to %r" % (name, sub.offset))
            saved = self.var()
            lines.append("%s%s = off" % (ind, saved))
            lines.append("%soff = %d" % (ind, sub.offset))
            self.field(name, sub.subcon, fields, local, lines, ind)
            lines.append("%soff = %s" % (ind, saved))
            return

        if _is_cstring(sub):
            self.cstring(name, sub, local, lines, ind)
            return

        fmt = _format_field(sub)
        if fmt is not None:
            single = struct.Struct(fmt)
            lines.append("%sif off + %d > end:" % (ind, single.size))
            lines.append("%s    raise DecodeError('truncated', %r, off)" % (ind, name))
            lines.append("%s%s, = %s(buf, off)" % (ind, local, self.const(single.unpack_from,
                                                                           "_s")))
            lines.append("%soff += %d" % (ind, single.size))
            return

        raise NotDerivable("%s: %s" % (name, type(sub).__name__))

    def array(self, name: str | None, sub: cs.Array, fields: dict[str, str], local: str,
              lines: list[str], ind: str) -> None:
        """An Array: of numbers, one unpack; else the item's decoder a time."""
        count = self.expression(sub.count, fields, name)
        n = self.var()
        lines.append("%s%s = %s" % (ind, n, count))
        item_fmt = _format_field(sub.subcon)
        if item_fmt is not None:
            size = struct.calcsize(item_fmt)
            lines.append("%sif %s < 0 or %s * %d > end - off:" % (ind, n, n, size))
            lines.append("%s    raise DecodeError('count %%d of %d-byte items exceeds the "
                         "%%d bytes left' %% (%s, end - off), %r, off)"
                         % (ind, size, n, name))
            lines.append("%s%s = list(unpack_from('%s%%d%s' %% %s, buf, off))"
                         % (ind, local, item_fmt[0], item_fmt[1:], n))
            lines.append("%soff += %s * %d" % (ind, n, size))
            return
        item = self.const(derive_decoder(sub.subcon), "_d")
        try:
            least = sub.subcon.sizeof()
        except cs.SizeofError:
            least = 1
        lines.append("%sif %s < 0 or %s * %d > end - off:" % (ind, n, n, least))
        lines.append("%s    raise DecodeError('count %%d exceeds the %%d bytes left' %% "
                     "(%s, end - off), %r, off)" % (ind, n, name))
        lines.append("%s%s = []" % (ind, local))
        lines.append("%sfor _ in range(%s):" % (ind, n))
        lines.append("%s    _item, off = %s(buf, off, end)" % (ind, item))
        lines.append("%s    %s.append(_item)" % (ind, local))

    def cstring(self, name: str | None, sub: cs.StringEncoded, local: str, lines: list[str],
                ind: str) -> None:
        """A NUL-terminated string."""
        lines.append("%s_chunk = bytes(buf[off:end])" % ind)
        lines.append("%s_nul = _chunk.find(b'\\0')" % ind)
        lines.append("%sif _nul < 0:" % ind)
        lines.append("%s    raise DecodeError('string without terminator', %r, off)"
                     % (ind, name))
        # (strict, as construct decodes: a caller that wants construct's
        # own error for bytes that are not text parses again with it)
        lines.append("%stry:" % ind)
        lines.append("%s    %s = _chunk[:_nul].decode(%r)" % (ind, local, sub.encoding))
        lines.append("%sexcept UnicodeDecodeError:" % ind)
        lines.append("%s    raise DecodeError('not %s text', %r, off)"
                     % (ind, sub.encoding, name))
        lines.append("%soff += _nul + 1" % ind)
