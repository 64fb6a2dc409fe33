"""The tracing data of perf.data: feature TRACING_DATA in file mode, the payload
of PERF_RECORD_HEADER_TRACING_DATA in pipe mode.

Layout (tools/perf/util/trace-event-read.c, trace_report()):

    "\\x17\\x08\\x44" "tracing"          magic
    version                            NUL-terminated text, e.g. "0.6"
    u8 file_bigendian, u8 long_size, u32 page_size
    "header_page\\0"  u64 size, text   the ring buffer page header format
    "header_event\\0" u64 size, text
    u32 count, count x (u64 size, text)              ftrace formats
    u32 systems, systems x (name\\0, u32 count,
                             count x (u64 size, text))  event formats
    u32 size, bytes                    /proc/kallsyms (empty since perf 6.x)
    u32 size, text                     printk formats
    u64 size, text                     saved cmdlines (version >= 0.6)

Every number after the endianness byte is in the byte order that byte gives,
which is that of the traced kernel.  An event format text is the kernel's
tracefs `format` file: `name:`, `ID:`, `format:` with one
`field:TYPE NAME; offset:N; size:N; signed:N;` line per field, and
`print fmt:`.
"""
from __future__ import annotations

import functools
import io
import re
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import construct as cs

from .endian import ints
from .errors import CorruptError
from .constructs import Counted, describe_construct_error

if TYPE_CHECKING:
    from .errors import InputName
    # What EventFormat.decode gives a field.
    FieldValue = int | str | bytes | list[int | bytes] | None

TRACING_MAGIC = b"\x17\x08\x44tracing"


def _text(raw: bytes) -> str:
    return bytes(raw).decode("utf-8", "replace")


@functools.lru_cache(maxsize=None)
def tracing_prefix_schema() -> cs.Struct:
    """The byte-order-neutral start: magic, version, endianness, long size."""
    return cs.Struct(
        "magic" / cs.Const(TRACING_MAGIC),
        "version" / cs.CString("utf8"),
        "file_bigendian" / cs.Int8ub,
        "long_size" / cs.Int8ub,
    )


@functools.lru_cache(maxsize=None)
def tracing_data_schema(little: bool = True) -> cs.Struct:
    """The whole tracing data for one byte order (the one file_bigendian gives)."""
    i = ints(little)
    u32, u64 = i.u32, i.u64
    sized64 = cs.Prefixed(u64, cs.GreedyBytes)
    sized32 = cs.Prefixed(u32, cs.GreedyBytes)
    system = cs.Struct(
        "name" / cs.CString("utf8"),
        "formats" / Counted(u32, sized64, 8),
    )
    return cs.Struct(
        "prefix" / tracing_prefix_schema(),
        "page_size" / u32,
        "header_page_tag" / cs.Const(b"header_page\0"),
        "header_page" / sized64,
        "header_event_tag" / cs.Const(b"header_event\0"),
        "header_event" / sized64,
        "ftrace_formats" / Counted(u32, sized64, 8),
        "systems" / Counted(u32, system, 5),
        "kallsyms" / sized32,
        "printk" / sized32,
        "saved_cmdlines" / cs.If(lambda ctx: _atof(ctx.prefix.version) >= 0.6, sized64),
    )


def _atof(text: str) -> float:
    """C's atof: the number at the start of text, 0.0 when there is none."""
    match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(match.group(0)) if match else 0.0


# ------------------------------------------------------------ format files
_FIELD_RE = re.compile(
    r"^\s*field:(?P<decl>[^;]*);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);"
    r"(?:\s*signed:(?P<signed>-?\d+);)?")
_ARRAY_RE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*\[(?P<len>[^\]]*)\]\s*$")


@dataclass(slots=True, repr=False, eq=False)
class FieldFormat:
    """One field of an event format: name, type, offset and size in the raw
    data, signedness, and how it is stored (`is_array` with `array_len`,
    `is_dynamic` for __data_loc / __rel_loc, `is_dynamic_array` for those
    declared with brackets, `is_string` as libtraceevent flags it: char, u8
    or s8 arrays)."""
    name: str
    type: str
    offset: int
    size: int
    signed: bool
    is_array: bool = False
    array_len: int = 0
    is_dynamic: bool = False
    is_rel: bool = False
    is_common: bool = False
    # `__data_loc char[] name` is an array to libtraceevent (it saw a `[`),
    # `__data_loc cpumask_t mask` (ipi_send_cpumask) is not: its [FAILED TO
    # PARSE] listing prints the location word as a number.  (None: as
    # is_dynamic says.)
    is_dynamic_array: bool | None = None
    # libtraceevent's field_is_string(): an array whose type mentions char,
    # u8 or s8 (dynamic arrays alike).
    is_string: bool = field(init=False)
    is_pointer: bool = field(init=False)

    def __post_init__(self) -> None:
        is_dynamic, ctype = self.is_dynamic, self.type
        self.is_dynamic_array = is_dynamic if self.is_dynamic_array is None else \
            is_dynamic and self.is_dynamic_array
        self.is_string = (self.is_array or is_dynamic) and "*" not in ctype and \
            any(t in ctype for t in ("char", "u8", "s8"))
        self.is_pointer = "*" in ctype

    @classmethod
    def from_decl(cls, decl: str, offset: int, size: int, signed: bool | None,
                  is_common: bool = False) -> FieldFormat:
        decl = " ".join(decl.split())
        dynamic = rel = False
        for tag in ("__data_loc ", "__rel_loc "):
            if decl.startswith(tag):
                dynamic, rel = True, tag == "__rel_loc "
                decl = decl[len(tag):]
        ctype, _, name = decl.rpartition(" ")
        if not ctype:
            ctype, name = name, name
        is_array, array_len = False, 0
        match = _ARRAY_RE.match(name)
        if match:
            name = match.group("name")
            is_array = True
            try:
                array_len = int(match.group("len"), 0)
            except ValueError:
                array_len = 0
        bracketed = "[" in ctype
        if dynamic:
            ctype = ctype.replace("[]", "").strip()
            is_array = False
        if signed is None:
            signed = not re.search(r"\bunsigned\b|\bu(8|16|32|64)\b|\b__u(8|16|32|64)\b",
                                   ctype)
        return cls(name, ctype, offset, size, bool(signed), is_array, array_len,
                   dynamic, rel, is_common, is_dynamic_array=bracketed)

    def __repr__(self) -> str:
        extra = "[%d]" % self.array_len if self.is_array else ""
        if self.is_dynamic:
            extra += " __rel_loc" if self.is_rel else " __data_loc"
        return "<FieldFormat %s %s%s offset=%d size=%d signed=%d>" % (
            self.type, self.name, extra, self.offset, self.size, self.signed)


def parse_fields(text: str) -> list[FieldFormat]:
    """The fields of a format text; those before the first blank line after
    `format:` are the common ones."""
    fields: list[FieldFormat] = []
    common = True
    seen_format = False
    for line in text.splitlines():
        if line.startswith("format:"):
            seen_format = True
            continue
        if seen_format and not line.strip() and fields:
            common = False
            continue
        match = _FIELD_RE.match(line)
        if not match:
            continue
        signed = match.group("signed")
        fields.append(FieldFormat.from_decl(
            match.group("decl"), int(match.group("offset")), int(match.group("size")),
            None if signed is None else int(signed) != 0,
            is_common=common and seen_format))
    if not seen_format:
        for f in fields:
            f.is_common = False
    return fields


class EventFormat:
    """The format of one tracepoint: system, name, id, fields and print fmt.

    `decode(raw)` turns the RAW bytes of a sample of this event into a dict of
    field name -> value: int for scalars, str (up to the first NUL) for char
    arrays and dynamic char strings, list of ints for other fixed arrays (u8
    ones too), bytes for other dynamic arrays and odd sizes; None for a field
    the raw data is too short for."""

    def __init__(self, system: str, name: str | None, id: int | None, fields: list[FieldFormat],
                 print_fmt: str, little: bool = True, long_size: int = 8) -> None:
        self.system = system
        self.name = name
        self.id = id
        self.fields = fields
        self.print_fmt = print_fmt
        self.little = little
        self.long_size = long_size

    @property
    def common_fields(self) -> list[FieldFormat]:
        return [f for f in self.fields if f.is_common]

    @property
    def event_fields(self) -> list[FieldFormat]:
        return [f for f in self.fields if not f.is_common]

    def field(self, name: str) -> FieldFormat | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    @classmethod
    def from_text(cls, system: str, text: str, little: bool = True,
                  long_size: int = 8) -> EventFormat:
        name = None
        event_id = None
        print_fmt = ""
        for line in text.splitlines():
            if line.startswith("name:"):
                name = line[5:].strip()
            elif line.startswith("ID:"):
                try:
                    event_id = int(line[3:].strip(), 0)
                except ValueError:
                    event_id = None
            elif line.startswith("print fmt:"):
                print_fmt = line[len("print fmt:"):].strip()
        return cls(system, name, event_id, parse_fields(text), print_fmt, little, long_size)

    def _int(self, raw: bytes, offset: int, size: int, signed: bool) -> int | bytes:
        if size not in (1, 2, 4, 8):
            return bytes(raw[offset:offset + size])
        return int.from_bytes(raw[offset:offset + size], "little" if self.little else "big",
                              signed=signed)

    def decode(self, raw: bytes | memoryview) -> dict[str, FieldValue]:
        raw = bytes(raw)
        out: dict[str, FieldValue] = {}
        for f in self.fields:
            if f.offset + f.size > len(raw):
                out[f.name] = None
                continue
            if f.is_dynamic:
                loc = self._int(raw, f.offset, 4, False) if f.size >= 4 else 0
                # (_int reads 4 bytes as an int)
                start, length = loc & 0xffff, loc >> 16  # type: ignore[operator]
                if f.is_rel:
                    start += f.offset + f.size
                data = raw[start:start + length]
                if f.is_string and "char" in f.type:
                    end = data.find(b"\0")
                    out[f.name] = (data if end < 0 else data[:end]).decode("utf-8", "replace")
                else:
                    out[f.name] = data
            elif f.is_array:
                data = raw[f.offset:f.offset + f.size]
                if f.is_string and "char" in f.type:
                    end = data.find(b"\0")
                    out[f.name] = (data if end < 0 else data[:end]).decode("utf-8", "replace")
                elif f.array_len and f.size % f.array_len == 0 and \
                        f.size // f.array_len in (1, 2, 4, 8):
                    width = f.size // f.array_len
                    out[f.name] = [self._int(data, k * width, width, f.signed)
                                   for k in range(f.array_len)]
                else:
                    out[f.name] = data
            else:
                out[f.name] = self._int(raw, f.offset, f.size, f.signed)
        return out

    def __repr__(self) -> str:
        return "<EventFormat %s:%s id=%s %d fields>" % (self.system, self.name, self.id,
                                                        len(self.fields))


@dataclass(repr=False, eq=False)
class TracingData:
    """Parsed tracing data.  `events` maps event id to EventFormat."""
    version: str
    little: bool
    long_size: int
    page_size: int
    header_page: str
    header_event: str
    ftrace_formats: list[EventFormat]
    events: dict[int, EventFormat]
    kallsyms: bytes
    printk_formats: dict[int, str]
    saved_cmdlines: dict[int, str]
    size: int       # bytes the tracing data takes (perf pads the record to 8 after it)
    header_page_fields: list[FieldFormat] = field(init=False)

    def __post_init__(self) -> None:
        self.header_page_fields = parse_fields(self.header_page)

    def find_event(self, system: str, name: str) -> EventFormat | None:
        for ev in self.events.values():
            if ev.system == system and ev.name == name:
                return ev
        return None

    def __repr__(self) -> str:
        return "<TracingData version=%s %s-endian %d events>" % (
            self.version, "little" if self.little else "big", len(self.events))


def _parse_printk(text: str) -> dict[int, str]:
    out = {}
    for line in text.splitlines():
        addr, sep, fmt = line.partition(":")
        if not sep:
            continue
        try:
            key = int(addr.strip(), 16)
        except ValueError:
            continue
        fmt = fmt.strip()
        if len(fmt) >= 2 and fmt[0] == '"' and fmt[-1] == '"':
            fmt = fmt[1:-1]
        out[key] = fmt
    return out


def _parse_cmdlines(text: str) -> dict[int, str]:
    out = {}
    for line in text.splitlines():
        pid, _, comm = line.strip().partition(" ")
        try:
            out[int(pid)] = comm
        except ValueError:
            continue
    return out


def parse_tracing_data(data: bytes | memoryview, path: InputName | None = None,
                       offset: int | None = None) -> TracingData:
    """Parse tracing data bytes into a TracingData; CorruptError if they do not
    decode."""
    data = bytes(data)
    try:
        prefix = tracing_prefix_schema().parse(data)
        little = not prefix.file_bigendian
        schema = tracing_data_schema(little)
        stream = io.BytesIO(data)
        parsed = schema.parse_stream(stream)
        size = stream.tell()
    except (cs.ConstructError, struct.error, ValueError, OverflowError) as exc:
        raise CorruptError("TRACING_DATA: %s" % describe_construct_error(exc), path=path, offset=offset) from None
    if prefix.long_size not in (4, 8):
        raise CorruptError("TRACING_DATA: long size %d" % prefix.long_size, path=path,
                           offset=offset)
    events: dict[int, EventFormat] = {}
    for system in parsed.systems:
        for text in system.formats:
            ev = EventFormat.from_text(system.name, _text(text), little, prefix.long_size)
            if ev.id is not None:
                events.setdefault(ev.id, ev)
    ftrace = [EventFormat.from_text("ftrace", _text(t), little, prefix.long_size)
              for t in parsed.ftrace_formats]
    cmdlines = parsed.saved_cmdlines
    return TracingData(
        version=prefix.version, little=little, long_size=prefix.long_size,
        page_size=parsed.page_size, header_page=_text(parsed.header_page),
        header_event=_text(parsed.header_event), ftrace_formats=ftrace, events=events,
        kallsyms=bytes(parsed.kallsyms), printk_formats=_parse_printk(_text(parsed.printk)),
        saved_cmdlines={} if cmdlines is None else _parse_cmdlines(_text(cmdlines)),
        size=size)
