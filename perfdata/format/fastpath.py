"""Decoders derived from the construct schemas, for the hot records.

Interpreted construct costs ~20-30 us a record (NOTES.md).  `derive_decoder`
walks a schema once and turns it into a short list of steps: runs of fixed
fields become one `struct.Struct.unpack_from`, arrays of numbers one unpack,
byte fields a memoryview slice.  The schema stays the only description of the
layout; a test checks that both give the same dict on every sample file.
Every step checks its bounds first, so a hostile count or length raises
`DecodeError` instead of reading or allocating beyond the record.
"""
import struct

import construct as cs


class DecodeError(Exception):
    def __init__(self, message, field=None, offset=None):
        super().__init__(message)
        self.field = field
        self.offset = offset


class NotDerivable(Exception):
    """The schema uses a construct class the deriver does not handle."""


def _format_field(sub):
    while isinstance(sub, cs.Renamed):
        sub = sub.subcon
    if isinstance(sub, cs.FormatField):
        return sub.fmtstr
    return None


def _is_cstring(sub):
    return (isinstance(sub, cs.StringEncoded) and isinstance(sub.subcon, cs.NullTerminated))


def derive_struct(schema):
    """The struct.Struct of a schema made only of fixed-size numbers (e.g.
    perf_event_header), for hot loops that unpack it in place."""
    fmts = [_format_field(sub) for sub in getattr(schema, "subcons", ())]
    if not fmts or None in fmts or len({f[0] for f in fmts}) != 1:
        raise NotDerivable("not a struct of numbers of one byte order")
    return struct.Struct(fmts[0][0] + "".join(f[1:] for f in fmts))


def derive_decoder(schema):
    """Return decode(buf, off, end) -> (dict, new_off) for a Struct schema."""
    if not isinstance(schema, cs.Struct):
        raise NotDerivable(type(schema).__name__)
    steps = []
    run_names, run_fmt = [], []

    def flush_run():
        if not run_names:
            return
        prefix = run_fmt[0][0]
        packed = struct.Struct(prefix + "".join(f[1:] for f in run_fmt))
        names = tuple(run_names)
        size = packed.size
        unpack = packed.unpack_from

        def fixed(buf, off, end, out):
            if off + size > end:
                raise DecodeError("needs %d bytes, %d left" % (size, end - off), names[0], off)
            out.update(zip(names, unpack(buf, off)))
            return off + size
        steps.append(fixed)
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
        steps.append(_derive_field(name, inner))
    flush_run()
    steps = tuple(steps)

    def decode(buf, off=0, end=None):
        if end is None:
            end = len(buf)
        out = {}
        for step in steps:
            off = step(buf, off, end, out)
        return out, off
    return decode


def _evaluate(expr, ctx, name):
    if callable(expr):
        try:
            return expr(ctx)
        except (KeyError, TypeError) as exc:
            raise NotDerivable("%s: expression needs %s" % (name, exc))
    return expr


def _derive_field(name, sub):
    if isinstance(sub, cs.Struct):
        decode = derive_decoder(sub)

        def nested(buf, off, end, out):
            out[name], off = decode(buf, off, end)
            return off
        return nested

    if isinstance(sub, cs.Array):
        count_expr = sub.count
        item_fmt = _format_field(sub.subcon)
        if item_fmt is not None:
            prefix, code = item_fmt[0], item_fmt[1:]
            item_size = struct.calcsize(item_fmt)

            def array_of_numbers(buf, off, end, out):
                count = _evaluate(count_expr, out, name)
                if count < 0 or count * item_size > end - off:
                    raise DecodeError("count %d of %d-byte items exceeds the %d bytes left"
                                      % (count, item_size, end - off), name, off)
                out[name] = list(struct.unpack_from("%s%d%s" % (prefix, count, code), buf, off))
                return off + count * item_size
            return array_of_numbers
        item_decode = derive_decoder(sub.subcon)
        try:
            min_item = sub.subcon.sizeof()
        except cs.SizeofError:
            min_item = 1

        def array_of_structs(buf, off, end, out):
            count = _evaluate(count_expr, out, name)
            if count < 0 or count * min_item > end - off:
                raise DecodeError("count %d exceeds the %d bytes left" % (count, end - off),
                                  name, off)
            items = []
            for _ in range(count):
                item, off = item_decode(buf, off, end)
                items.append(item)
            out[name] = items
            return off
        return array_of_structs

    if isinstance(sub, cs.Bytes):
        length_expr = sub.length

        def raw_bytes(buf, off, end, out):
            length = _evaluate(length_expr, out, name)
            if length < 0 or length > end - off:
                raise DecodeError("length %d exceeds the %d bytes left" % (length, end - off),
                                  name, off)
            out[name] = buf[off:off + length]
            return off + length
        return raw_bytes

    if isinstance(sub, cs.IfThenElse) and isinstance(sub.elsesubcon, type(cs.Pass)):
        cond = sub.condfunc
        then = _derive_field(name, sub.thensubcon)

        def optional(buf, off, end, out):
            if _evaluate(cond, out, name):
                return then(buf, off, end, out)
            out[name] = None
            return off
        return optional

    if _is_cstring(sub):
        encoding = sub.encoding

        def cstring(buf, off, end, out):
            chunk = bytes(buf[off:end])
            nul = chunk.find(b"\0")
            if nul < 0:
                raise DecodeError("string without terminator", name, off)
            out[name] = chunk[:nul].decode(encoding, "replace")
            return off + nul + 1
        return cstring

    fmt = _format_field(sub)
    if fmt is not None:
        single = struct.Struct(fmt)

        def number(buf, off, end, out):
            if off + single.size > end:
                raise DecodeError("truncated", name, off)
            out[name] = single.unpack_from(buf, off)[0]
            return off + single.size
        return number

    raise NotDerivable("%s: %s" % (name, type(sub).__name__))
