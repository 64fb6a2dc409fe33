"""What a run asks of every binary it uses (its machine, section headers,
load segments and build-id), as records, and the document in which they are
kept across runs (marshal, checked field by field when read)."""
from __future__ import annotations

import marshal
from typing import Any, NamedTuple


class LoadSegment(NamedTuple):
    vaddr: int
    memsz: int
    offset: int
    filesz: int
    flags: int
    align: int

    @property
    def page(self) -> int:
        """The page a mapping of this segment starts on below p_offset: its
        alignment where that is a power of two of at least 4 KiB, else 4 KiB."""
        align = self.align
        return max(align, 0x1000) if align and (align & (align - 1)) == 0 else 0x1000


class SectionHeader(NamedTuple):
    index: int  # type: ignore[assignment]  # (a field named as tuple.index, read as a field)
    name: str
    type: int          # raw sh_type
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


# A change to what keep_facts() keeps, or to how it is computed, makes the
# facts kept by an earlier version stale: a new number.
_FACTS_VERSION = 1


def _unmarshal(data: bytes | None) -> Any:
    """What marshal.dumps made of data; None for None or damaged bytes."""
    if data is None:
        return None
    try:
        return marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None


def _facts_from_doc(doc: Any, identity: str) -> tuple[str | None, list[SectionHeader],
                                                       list[LoadSegment], str | None] | None:
    """(machine, sections, load segments, build-id) from a facts document of
    this identity, or None when it is of another file, version or damaged."""
    if not isinstance(doc, list) or len(doc) != 6 or doc[0] != _FACTS_VERSION or \
            doc[1] != identity:
        return None
    _, _, machine, sections, segments, build_id = doc
    if not (machine is None or isinstance(machine, str)) or \
            not (build_id is None or isinstance(build_id, str)) or \
            not isinstance(sections, list) or not isinstance(segments, list):
        return None
    try:
        got_sections = [SectionHeader(*row) for row in sections]
        got_segments = [LoadSegment(*row) for row in segments]
    except TypeError:               # not a list, or of another length
        return None
    for i, sec in enumerate(got_sections):
        if sec.index != i or not isinstance(sec.name, str) or \
                not all(type(v) is int for v in sec[2:]):
            return None
    if not all(type(v) is int for seg in got_segments for v in seg):
        return None
    return machine, got_sections, got_segments, build_id


def facts_from_bytes(data: bytes | None, identity: str
                     ) -> tuple[str | None, list[SectionHeader], list[LoadSegment],
                                str | None] | None:
    """(machine, sections, load segments, build-id) kept for the file of this
    identity, or None (absent, another file's, another version's, damaged)."""
    return _facts_from_doc(_unmarshal(data), identity)


def facts_document(identity: str, machine: str | None, sections: list[SectionHeader],
                   segments: list[LoadSegment], build_id: str | None) -> bytes:
    """The document facts_from_bytes reads back."""
    # (marshal: a run reads a dozen of these, and needs no json for them)
    return marshal.dumps([_FACTS_VERSION, identity, machine, [list(s) for s in sections],
                          [list(s) for s in segments], build_id])
