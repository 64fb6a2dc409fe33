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
from typing import TYPE_CHECKING, NamedTuple

from ..format import LayoutError, RecordType as RT, body_schemas, event_header_schema, field

if TYPE_CHECKING:
    import construct as cs


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
