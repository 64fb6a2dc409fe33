"""Where a field lies in a construct struct schema: the one description of
each layout (records.py, sample.py) read for the offsets that code reading
bytes directly needs (samplescan.py here, the compiled core's drivers in
perfdata/core), so that none of them writes a layout down a second time.
A field after one of no fixed size has no fixed offset (LayoutError).
"""
from __future__ import annotations

from typing import NamedTuple

import construct as cs


class LayoutError(Exception):
    """A schema no longer has the shape the compiled code reads."""


class Field(NamedTuple):
    offset: int
    width: int


def field(schema: cs.Struct, name: str) -> Field:
    """Where `name` is in a struct schema whose fields before it are of fixed
    size: (offset, width); width -1 where the field has no fixed size."""
    offset = 0
    for sub in schema.subcons:
        try:
            width = sub.sizeof()
        except cs.SizeofError:
            width = -1
        if sub.name == name:
            return Field(offset, width)
        if width < 0:
            break
        offset += width
    raise LayoutError("no fixed-offset field %r in %s" % (name, schema))
