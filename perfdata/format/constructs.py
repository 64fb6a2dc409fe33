"""construct pieces the schemas share."""
from __future__ import annotations

from typing import Any, BinaryIO, Sequence

import construct as cs


def to_builtins(obj: Any) -> Any:
    """construct's Containers and ListContainers as dicts and lists (as
    msgspec.to_builtins names it), without construct's '_' keys."""
    if isinstance(obj, dict):
        return {k: to_builtins(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [to_builtins(v) for v in obj]
    return obj


def stream_left(stream: BinaryIO) -> int:
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end - here


class Counted(cs.Construct):
    """A count followed by that many items, refusing a count the bytes left
    cannot hold (each item takes at least `min_item_size` bytes)."""

    def __init__(self, countfield: cs.Construct, subcon: cs.Construct, min_item_size: int) -> None:
        super().__init__()
        self.countfield = countfield
        self.subcon = subcon
        self.min_item_size = min_item_size

    def _parse(self, stream: BinaryIO, context: cs.Container, path: str) -> cs.ListContainer:
        count = self.countfield._parsereport(stream, context, path)
        left = stream_left(stream)
        if count * self.min_item_size > left:
            raise cs.RangeError("count %d needs at least %d bytes, %d left"
                                % (count, count * self.min_item_size, left), path=path)
        out = cs.ListContainer()
        for index in range(count):
            context._index = index
            out.append(self.subcon._parsereport(stream, context, path))
        return out

    def _build(self, obj: Sequence[Any], stream: BinaryIO, context: cs.Container,
               path: str) -> Sequence[Any]:
        self.countfield._build(len(obj), stream, context, path)
        for index, item in enumerate(obj):
            context._index = index
            self.subcon._build(item, stream, context, path)
        return obj

    def _sizeof(self, context: cs.Container, path: str) -> int:
        raise cs.SizeofError("Counted has no fixed size", path=path)


def describe_construct_error(exc: Exception) -> str:
    """A construct error as one line: what, then where in the schema."""
    text = str(exc).strip()
    where = None
    if text.startswith("Error in path"):
        first, _, rest = text.partition("\n")
        where = first[len("Error in path"):].strip()
        text = rest.strip() or first
        where = where.replace("(parsing)", "").strip(" ->")
    text = " ".join(text.split())
    return "%s (in %s)" % (text, where) if where else text
