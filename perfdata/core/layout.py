"""The byte layouts compiled code reads, derived from the construct schemas.

The construct schemas (perfdata/format/records.py, sample.py) stay the one
description of each layout: C code in perfdata/core is handed the offsets and
sizes below at run time (never writes them down itself), so that a schema and
the compiled walk cannot disagree.  Each value is computed from the schema
(perfdata.format.field: the sizes of the fields before the one asked for),
and a field whose width is not the one the C reads with is refused
(LayoutError) rather than read wrong."""
from __future__ import annotations

import functools
from typing import NamedTuple

import construct as cs

from ..format import LayoutError, RecordType as RT, body_schemas, event_header_schema, field


def _fixed(schema: cs.Struct, name: str, width: int) -> int:
    got = field(schema, name)
    if got.width != width:
        raise LayoutError("field %r is %d bytes, not %d" % (name, got.width, width))
    return got.offset


class HeaderLayout(NamedTuple):
    """perf_event_header: where type (u32), misc (u16) and size (u16) are."""
    type_off: int
    misc_off: int
    size_off: int
    size: int


@functools.lru_cache(maxsize=None)
def header_layout(little: bool = True) -> HeaderLayout:
    schema = event_header_schema(little)
    return HeaderLayout(_fixed(schema, "type", 4), _fixed(schema, "misc", 2),
                        _fixed(schema, "size", 2), schema.sizeof())


@functools.lru_cache(maxsize=None)
def name_offsets() -> dict[int, int]:
    """{record type: offset in the body of the name it ends with} for MMAP,
    MMAP2 and COMM (the NUL-terminated name the walker's size rule reads)."""
    schemas = body_schemas(True)
    return {int(rtype): field(schemas[rtype], name).offset
            for rtype, name in ((RT.MMAP, "filename"), (RT.MMAP2, "filename"),
                                (RT.COMM, "comm"))}


@functools.lru_cache(maxsize=None)
def lost_samples_offset() -> int:
    """Offset of `lost` (u64) in a LOST_SAMPLES body."""
    return _fixed(body_schemas(True)[RT.LOST_SAMPLES], "lost", 8)


def sample_offsets(schema: cs.Struct) -> tuple[int, int, int, int, int, int, int]:
    """(pid, tid, time, cpu, period, callchain, after) of a sample's
    schema: the offsets of its fixed fields (-1: absent), of the callchain,
    and the fixed size of what follows the callchain.  Every field the core
    reads must be before the callchain, of the width it reads, in little-
    endian order (the machine's: applies() checked); LayoutError else."""
    names = [sub.name for sub in schema.subcons]
    if "callchain" not in names:
        raise LayoutError("no callchain")
    callchain = field(schema, "callchain").offset
    out = []
    for name, width in (("pid", 4), ("tid", 4), ("time", 8), ("cpu", 4), ("period", 8)):
        if name not in names:
            out.append(-1)
            continue
        got = field(schema, name)
        sub = schema.subcons[names.index(name)]
        fmt = getattr(getattr(sub, "subcon", sub), "fmtstr", "")
        if got.width != width or not fmt.startswith("<") or got.offset >= callchain:
            raise LayoutError("%s: %d bytes %r at %d" % (name, got.width, fmt, got.offset))
        out.append(got.offset)
    after = 0
    for sub in schema.subcons[names.index("callchain") + 1:]:
        try:
            after += sub.sizeof()
        except cs.SizeofError:
            raise LayoutError("%s after the callchain has no fixed size" % sub.name)
    return out[0], out[1], out[2], out[3], out[4], callchain, after
