"""What perf's own records define: the events, features, build-ids and
tracing data a recording's header holds, as records.

In pipe mode the header arrives as records (perf's HEADER_ATTR,
HEADER_FEATURE, HEADER_BUILD_ID, HEADER_EVENT_TYPE, HEADER_TRACING_DATA and
ID_INDEX: perf_session__process_user_event); a file may hold some too.  The
walk hands each one to `HeaderRecords` as it reads it, and the records after
it are decoded by what it defined.  The container (PerfFile) reads its
attrs, features and build-ids from here: the lists and dicts are shared.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import construct as cs

from .attr import attr_size_at
from .constants import Feature, RecordType as RT
from .decoder import DecodeContext, short_error
from .eventattr import EventAttr
from .records import body_schemas, event_header_struct, header_attr_schema

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .decoder import Record
    from .errors import InputName
    from .tracing import EventFormat

# Most bytes one COMPRESSED record may expand to, unless the COMPRESSED
# feature's mmap_len asks for more (4 times it: perf's buffer holds that).
DEFAULT_DECOMPRESS_LIMIT = 64 << 20


def decompress_limit(compressed: Mapping[str, Any] | None) -> int:
    """The expansion limit for a recording whose COMPRESSED feature is
    `compressed` (parsed, or None)."""
    mmap_len = compressed and compressed.get("mmap_len")
    return max(DEFAULT_DECOMPRESS_LIMIT, 4 * mmap_len) if mmap_len else \
        DEFAULT_DECOMPRESS_LIMIT


class HeaderRecords:
    """The events and the header records of one recording.  `ctx` decodes
    its records (it holds `attrs` and `id_to_attr`); `warnings` is the
    container's list."""

    def __init__(self, ctx: DecodeContext, warnings: list[str],
                 max_decompressed: int | None = None) -> None:
        self.ctx = ctx
        self.little = ctx.little
        self.attrs: list[EventAttr] = ctx.attrs
        self.id_to_attr: dict[int, EventAttr] = ctx.id_to_attr
        self.warnings = warnings
        self.feature_data: dict[int, bytes] = {}    # fid -> bytes (HEADER_FEATURE)
        self.feature_cache: dict[int, Any] = {}     # fid -> parsed (the container's)
        # HEADER_BUILD_ID records, whole: together they have the layout of
        # the BUILD_ID feature section.
        self.build_id_records: list[bytes] = []
        self.tracing_data: bytes | None = None      # of HEADER_TRACING_DATA
        self.event_types: list[Any] = []
        self.max_decompressed = max_decompressed
        # What a walk's zstd stream may expand one record to: the container
        # sets it from a file's COMPRESSED feature; a stream's HEADER_FEATURE
        # sets it here.
        self.decompress_limit = max_decompressed or DEFAULT_DECOMPRESS_LIMIT

    def add_attr(self, attr: Mapping[str, Any], ids: list[int], name: str | None = None
                 ) -> EventAttr:
        """A new event, with the ids its records carry."""
        ea = EventAttr(len(self.attrs), attr, ids, self.little, name)
        self.attrs.append(ea)
        for i in ids:
            self.id_to_attr.setdefault(i, ea)
        return ea

    def name_events(self, descs: list[dict[str, Any]]) -> list[EventAttr]:
        """Name the events by their EVENT_DESC entries (found by id, else by
        place), as perf does; the tracepoints left unnamed are returned (the
        tracing data's formats name them: name_tracepoints)."""
        for index, desc in enumerate(descs):
            name = desc.get("name") if isinstance(desc, dict) else None
            if not name:
                continue
            target = None
            for ident in desc.get("ids") or ():
                target = self.id_to_attr.get(ident)
                if target is not None:
                    break
            if target is None and not desc.get("ids") and index < len(self.attrs):
                target = self.attrs[index]
            if target is not None:
                target.name = name
                target.named_by = "event_desc"
        return [ea for ea in self.attrs
                if ea.attr["type"] == 2 and getattr(ea, "named_by", None) is None]

    @staticmethod
    def name_tracepoints(tracepoints: list[EventAttr], formats: Mapping[int, EventFormat]
                         ) -> None:
        """Name tracepoint events `system:name` by their format's id."""
        for ea in tracepoints:
            fmt = formats.get(ea.attr["config"])
            if fmt is not None:
                ea.name = "%s:%s" % (fmt.system, fmt.name)
                ea.named_by = "tracing_data"

    def apply(self, rec: Record, path: InputName | None) -> None:
        """Keep what one of perf's own records defines (the walk hands each
        one over as it reads it)."""
        rtype = rec.type
        little = self.little
        try:
            if rtype == RT.HEADER_ATTR:
                attr_size = min(attr_size_at(rec.body, 0, little), len(rec.body))
                parsed = header_attr_schema(attr_size, little).parse(rec.body)
                self.add_attr(parsed.attr, list(parsed.ids))
                self.ctx.refresh_id_positions()
            elif rtype == RT.HEADER_FEATURE:
                parsed = body_schemas(little)[rtype].parse(rec.body)
                self._feature_read(parsed.feat_id, bytes(parsed.data), path)
            elif rtype == RT.HEADER_BUILD_ID:
                self.build_id_records.append(
                    event_header_struct(little).pack(rec.type, rec.misc, rec.size)
                    + bytes(rec.body))
            elif rtype == RT.HEADER_EVENT_TYPE:
                self.event_types.append(body_schemas(little)[rtype].parse(rec.body))
            # EVENT_UPDATE names are not applied: perf 6.1 keeps the name it
            # computed from the attr (checked on the quipper pipe files).
            elif rtype == RT.ID_INDEX:
                parsed = body_schemas(little)[rtype].parse(rec.body)
                for entry in parsed.entries:
                    if entry.idx < len(self.attrs):
                        self.id_to_attr.setdefault(entry.id, self.attrs[entry.idx])
        except (cs.ConstructError, struct.error, UnicodeDecodeError) as exc:
            # perf counts the record and goes on; so do we, with a warning.
            self.warnings.append("%s: offset %#x: %s record: %s"
                                 % (path, rec.offset, rec.name, short_error(exc)))

    def _feature_read(self, fid: int, data: bytes, path: InputName | None) -> None:
        self.feature_data[fid] = data
        self.feature_cache.pop(fid, None)
        if fid == Feature.COMPRESSED and not self.max_decompressed:
            from .features import parse_feature
            try:
                self.decompress_limit = decompress_limit(
                    parse_feature(fid, data, self.little, path=path))
            except Exception:   # a broken feature section must not stop the data
                pass

    def tracing_data_read(self, data: bytes, in_record: bool) -> None:
        """The tracing data of a HEADER_TRACING_DATA record (`in_record`:
        simpleperf's, inside the record, which does not replace one read
        before; perf's follows the record)."""
        self.tracing_data = data
        if in_record:
            self.feature_data.setdefault(Feature.TRACING_DATA, data)
        else:
            self.feature_data[Feature.TRACING_DATA] = data
