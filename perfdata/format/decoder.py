"""Record decoding that needs no file: (type, misc, body, attr) -> a dict.

What a record needs to be decoded is its event attr (the sample layout, the
sample_id trailer) and the byte order; which attr a record belongs to is
found through the id map of the file's events.  `DecodeContext` holds those
(shared, not copied, with the container: pipe mode adds attrs as their
records arrive), so a `Record` carries its attr and this small context and
no back-pointer to the file it came from.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import construct as cs

from .attr import attr_size_at
from .constructs import to_builtins
from .constants import (MISC_MMAP_BUILD_ID, RecordType as RT, USER_TYPE_START,
                        record_type_name)
from .errors import CorruptError
from .eventattr import EventAttr
from .fastpath import DecodeError, NotDerivable, derive_decoder
from .records import body_schemas, header_attr_schema, read_format_schema
from .sample import id_position_in_sample, id_position_in_trailer

if TYPE_CHECKING:
    from .errors import InputName


# (bound once: make_record and decode_record run for every record; RT.X
# on the enum class costs ~100 ns, a module name ~15)
_SAMPLE, _HEADER_ATTR, _READ, _MMAP2 = RT.SAMPLE, RT.HEADER_ATTR, RT.READ, RT.MMAP2


class DecodeContext:
    """What decoding a record of one recording needs besides its bytes: the
    byte order, the events (`attrs`, `id_to_attr`: the container's own list
    and dict) and where the event id sits in a sample and in a trailer.
    `path` names the recording in errors."""
    __slots__ = ("little", "path", "attrs", "id_to_attr", "sample_id_pos", "trailer_id_pos")

    def __init__(self, little: bool, path: InputName | None = None,
                 attrs: list[EventAttr] | None = None,
                 id_to_attr: dict[int, EventAttr] | None = None) -> None:
        self.little = little
        self.path = path
        self.attrs = [] if attrs is None else attrs
        self.id_to_attr = {} if id_to_attr is None else id_to_attr
        self.sample_id_pos: int | None = None
        self.trailer_id_pos: int | None = None
        self.refresh_id_positions()

    def refresh_id_positions(self) -> None:
        """Call when the first attr changes (the id positions follow its
        sample_type: perf requires every event of a file to agree on them)."""
        st = self.attrs[0].sample_type if self.attrs else 0
        self.sample_id_pos = id_position_in_sample(st)
        self.trailer_id_pos = id_position_in_trailer(st)

    def trailer_size(self) -> int:
        """Bytes of the sample_id trailer that kernel records end with: the
        first event's (perf requires the events of a file to agree), 0
        without sample_id_all."""
        first = self.attrs[0] if self.attrs else None
        return first.trailer_size if first is not None and first.sample_id_all else 0

    def attr_for(self, rtype: int, body: bytes | memoryview) -> EventAttr | None:
        """The event a kernel record belongs to, by the id in its body (the
        first event when the id is absent or unknown)."""
        attrs = self.attrs
        if not attrs:
            return None
        if len(attrs) == 1 or not self.id_to_attr:
            return attrs[0]
        first = attrs[0]
        u64 = first.u64
        if rtype == _SAMPLE:
            pos = self.sample_id_pos
            if pos is None or 8 * pos + 8 > len(body):
                return first
            ident = u64.unpack_from(body, 8 * pos)[0]
        else:
            pos = self.trailer_id_pos
            if pos is None or not first.sample_id_all or 8 * pos > len(body):
                return first
            ident = u64.unpack_from(body, len(body) - 8 * pos)[0]
        return self.id_to_attr.get(ident, first)

    def id_known(self, rtype: int, body: bytes | memoryview) -> bool:
        """A kernel record whose event id (sample or trailer) the attrs know."""
        if rtype >= USER_TYPE_START or not self.id_to_attr:
            return False
        first = self.attrs[0]
        if rtype == _SAMPLE:
            pos = self.sample_id_pos
            if pos is None or 8 * pos + 8 > len(body):
                return False
            return first.u64.unpack_from(body, 8 * pos)[0] in self.id_to_attr
        pos = self.trailer_id_pos
        if pos is None or not first.sample_id_all or 8 * pos > len(body):
            return False
        return first.u64.unpack_from(body, len(body) - 8 * pos)[0] in self.id_to_attr

    def make_record(self, rtype: int, misc: int, size: int, offset: int,
                    body: bytes | memoryview) -> Record:
        """A Record with its event and time (kernel records), not decoded."""
        attr = None
        time = None
        if rtype < USER_TYPE_START:
            attr = self.attr_for(rtype, body)
            if attr is not None:
                if rtype == _SAMPLE:
                    time = attr.sample_time(body)
                else:
                    time = attr.trailer_time(body)
        return Record(self, rtype, misc, size, offset, body, attr, time)


class Record:
    """One record: header fields, where it was, its body, its event."""
    __slots__ = ("type", "misc", "size", "offset", "body", "attr", "time", "file",
                 "compressed", "payload_offset", "payload_size", "ctx")

    def __init__(self, ctx: DecodeContext, rtype: int, misc: int, size: int, offset: int,
                 body: bytes | memoryview, attr: EventAttr | None = None, time: int | None = None
                 ) -> None:
        self.ctx = ctx
        self.type = rtype
        self.misc = misc
        self.size = size
        self.offset = offset
        self.body = body
        self.attr = attr
        self.time = time
        # set by the walk: which file of a directory it is in, and whether
        # it came out of a COMPRESSED record
        self.file = 0
        self.compressed = False
        self.payload_offset: int | None = None
        self.payload_size = 0

    @property
    def name(self) -> str:
        return record_type_name(self.type)

    def parse(self, with_trailer: bool = True) -> dict[str, Any]:
        """Decode the body into a dict (SAMPLE: the sample fields; kernel records:
        their fields plus `sample_id` from the trailer, unless with_trailer
        is False: the session reads none of it, and a shell's fork, exec and
        mmaps are a hundred thousand records a minute)."""
        ctx = self.ctx
        return decode_record(self.type, self.misc, self.body, self.attr, ctx.little,
                             ctx.path, self.offset, with_trailer)

    def __repr__(self) -> str:
        return "<%s at %#x size %d>" % (self.name, self.offset, self.size)


def decode_record(rtype: int, misc: int, body: bytes | memoryview, attr: EventAttr | None,
                  little: bool, path: InputName | None = None,
                  offset: int | None = None, with_trailer: bool = True) -> dict[str, Any]:
    """The fields of a record body (after its 8-byte header) as a dict: a
    SAMPLE's by its attr's layout, a kernel record's by its body schema plus
    `sample_id` (the trailer, when the attr has sample_id_all), perf's own
    records by theirs; `{"raw": bytes}` for a type without a schema.
    Raises CorruptError (naming `path` and `offset`) when the bytes do not fit."""
    try:
        if rtype == _SAMPLE:
            if attr is None:
                raise CorruptError("SAMPLE with no event attr", path=path, offset=offset)
            return attr.decode_sample(body)
        if rtype == _HEADER_ATTR:
            parsed = header_attr_schema(min(attr_size_at(body, 0, little), len(body)),
                                        little).parse(body)
            return to_builtins(parsed)
        trailer = None
        if rtype < USER_TYPE_START and attr is not None and attr.sample_id_all:
            if with_trailer:
                trailer = attr.decode_trailer(body)
            body = body[:len(body) - attr.trailer_size]
        if rtype == _READ:
            schema = cs.Struct("pid" / (cs.Int32ul if little else cs.Int32ub),
                               "tid" / (cs.Int32ul if little else cs.Int32ub),
                               "values" / read_format_schema(
                                   attr.read_format if attr else 0, little))
            out = to_builtins(schema.parse(body))
        else:
            schemas = body_schemas(little)
            if rtype == _MMAP2:
                schema = schemas[mmap2_form(body, misc)]
            else:
                schema = schemas.get(rtype)
                if schema is None:
                    return {"raw": bytes(body)}
            out = _parse_body(schema, body)
            if rtype == _MMAP2 and misc & MISC_MMAP_BUILD_ID:
                _build_id_as_hex(out)
        if trailer is not None:
            out["sample_id"] = trailer
        return out
    except DecodeError as exc:
        raise CorruptError("%s record: field %s: %s" % (record_type_name(rtype), exc.field, exc),
                           path=path, offset=offset)
    except (cs.ConstructError, struct.error, UnicodeDecodeError) as exc:
        raise CorruptError("%s record: %s" % (record_type_name(rtype), short_error(exc)),
                           path=path, offset=offset)


def _parse_body(schema: cs.Construct, body: bytes | memoryview) -> dict[str, Any]:
    """A record body by the decoder derived from its schema (a MMAP2 by
    construct costs ~50 us, and a DWARF recording has thousands); by the
    schema itself where none derives, and where the derived one refuses the
    bytes, for construct's own account of what is wrong."""
    entry = _BODY_DECODERS.get(id(schema))
    if entry is None or entry[0] is not schema:
        try:
            decode = derive_decoder(schema)
        except NotDerivable:
            decode = None
        entry = _BODY_DECODERS[id(schema)] = (schema, decode)
    decode = entry[1]
    if decode is not None:
        data = bytes(body)
        try:
            return decode(data, 0, len(data))[0]
        except DecodeError:
            pass
    return to_builtins(schema.parse(body))


# id(schema) -> (schema, its derived decoder or None)
_BODY_DECODERS: dict[int, tuple[cs.Construct, Any]] = {}


# The first byte of a path where a MMAP2 record of Linux 3.12-3.15 has it.
_PATH_STARTS = (ord("/"), ord("["))


def _mmap2_lacks_prot_flags(body: bytes | memoryview) -> bool:
    """Linux 3.12-3.15 wrote MMAP2 records without prot/flags: the file name
    starts where prot would be.  prot and flags are small numbers; a path's
    first characters are not."""
    if len(body) < 64 or body[56] not in _PATH_STARTS:
        return False        # (the usual answer, found without a copy)
    head = bytes(body[56:64])
    return all(32 <= c < 127 for c in head[:4])



def mmap2_form(body: bytes | memoryview, misc: int) -> int | str:
    """The key in body_schemas of the layout a MMAP2 body (without its
    trailer) has: its header's misc says which form of the 24 bytes after
    pgoff it holds; Linux 3.12-3.15 wrote no prot and flags."""
    if misc & MISC_MMAP_BUILD_ID:
        return "MMAP2_build_id"
    return "MMAP2_pre316" if _mmap2_lacks_prot_flags(body) else _MMAP2


def _build_id_as_hex(out: dict[str, Any]) -> None:
    """A build-id form's fields as the reader gives them: `build_id` in hex,
    as long as its size says (at most 20 bytes)."""
    size = min(out.pop("build_id_size"), 20)
    del out["reserved1"], out["reserved2"]
    out["build_id"] = bytes(out["build_id"][:size]).hex()


def short_error(exc: BaseException) -> str:
    """The last line of an exception's text (construct's are long)."""
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__
