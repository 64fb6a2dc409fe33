"""The feature sections of perf.data (HEADER_* in tools/perf/util/header.h).

One construct schema per section layout, built once per byte order; the
layouts are those of perf's write_*() / process_*() functions in
tools/perf/util/header.c.  `parse_feature()` dispatches on the feature number
and turns every decoding failure into `CorruptError`.

Building blocks shared by the sections:

* `perf_header_string`: u32 len (with the NUL padding, a multiple of 64 when
  perf wrote it) followed by len bytes; the string ends at the first NUL.
* string lists: u32 nr followed by nr such strings.

Counts are checked against the bytes left in the section before any item is
read, so a count of 2**32 in a 100-byte section is an error at once.
"""
from __future__ import annotations

import functools
import struct
from typing import TYPE_CHECKING, Any, BinaryIO, Mapping

import construct as cs

from .attr import attr_schema, complete_attr
from .constants import Feature, feature_name
from .endian import ints
from .errors import CorruptError
from .constructs import Counted, describe_construct_error, stream_left, to_builtins

if TYPE_CHECKING:
    from .errors import InputName

#: Strings are padded to this alignment (NAME_ALIGN in perf).
NAME_ALIGN = 64
#: sizeof(struct perf_record_header_build_id): header, pid, build_id[24].
BUILD_ID_RECORD_SIZE = 36
#: Size of the oldest build-id records, which had no pid.
BUILD_ID_RECORD_SIZE_NO_PID = 32
#: perf_event_header.misc bit: the size byte after the build-id is valid.
MISC_BUILD_ID_SIZE = 1 << 15
BUILD_ID_SIZE = 20
#: perf_env.comp_type value for zstd.
COMP_ZSTD = 1


class RawFeature:
    """A feature this module has no schema for: the bytes, and why."""

    def __init__(self, fid: int, data: bytes | memoryview, note: str) -> None:
        self.fid = fid
        self.data = bytes(data)
        self.note = note

    def __repr__(self) -> str:
        return "RawFeature(%s, %d bytes: %s)" % (feature_name(self.fid), len(self.data),
                                                 self.note)


# ------------------------------------------------------------ building blocks
def _c_string(raw: bytes) -> str:
    """Bytes up to the first NUL (all of them when there is none), as text."""
    end = raw.find(b"\0")
    if end >= 0:
        raw = raw[:end]
    return raw.decode("utf-8", "replace")


class HeaderStringAdapter(cs.Adapter):
    """perf_header_string: the text of a u32-length-prefixed NUL-padded field."""

    def _decode(self, obj: bytes, context: cs.Container, path: str) -> str:
        return _c_string(obj)

    def _encode(self, obj: str, context: cs.Container, path: str) -> bytes:
        raw = obj.encode("utf-8") + b"\0"
        return raw + bytes(-len(raw) % NAME_ALIGN)


class AttrOfSize(cs.Construct):
    """A perf_event_attr of the size stated in the enclosing section
    (`this._.attr_size`), read with attr.attr_schema of that size."""

    def __init__(self, little: bool) -> None:
        super().__init__()
        self.little = little

    def _parse(self, stream: BinaryIO, context: cs.Container, path: str) -> cs.Container:
        size = context._.attr_size
        return attr_schema(size, self.little)._parsereport(stream, context, path)

    def _build(self, obj: Mapping[str, Any], stream: BinaryIO, context: cs.Container,
               path: str) -> cs.Container:
        size = context._.attr_size
        return attr_schema(size, self.little)._build(obj, stream, context, path)

    def _sizeof(self, context: cs.Container, path: str) -> int:
        return context._.attr_size


class CpuTopologyTail(cs.Construct):
    """The parts of CPU_TOPOLOGY after the sibling lists, each present only when
    the section is long enough (as process_cpu_topology reads them): per-cpu
    core_id/socket_id, then the die lists and per-cpu die_id.

    Their number of cpus is NRCPUS' nr_cpus_available, passed to parse as
    `nr_cpus_avail`; without it the count is the one that makes the section
    parse to its last byte."""

    def __init__(self, little: bool) -> None:
        super().__init__()
        i = ints(little)
        self.core_socket = cs.Struct("core_id" / i.u32, "socket_id" / i.u32)
        self.die_lists = Counted(i.u32, _header_string(little), 4)
        self.die_id = i.u32

    def _parse_with(self, stream: BinaryIO, context: cs.Container, path: str,
                    nr: int) -> cs.Container:
        cpus = cs.ListContainer(self.core_socket._parsereport(stream, context, path)
                                for _ in range(nr))
        out = cs.Container(cpus=cpus, sibling_dies=None)
        if stream_left(stream) == 0:
            return out
        out.sibling_dies = self.die_lists._parsereport(stream, context, path)
        for cpu in cpus:
            cpu.die_id = self.die_id._parsereport(stream, context, path)
        return out

    def _parse(self, stream: BinaryIO, context: cs.Container, path: str) -> cs.Container:
        left = stream_left(stream)
        if left == 0:
            return cs.Container(cpus=None, sibling_dies=None)
        nr = getattr(context._params, "nr_cpus_avail", None) if "_params" in context else None
        if nr is not None:
            if nr * 8 > left:
                raise cs.RangeError("%d cpus need %d bytes, %d left" % (nr, nr * 8, left),
                                    path=path)
            return self._parse_with(stream, context, path, nr)
        start = stream.tell()
        # Without the cpu count: the count that reads the section exactly, the
        # layout with die information (perf since 5.3) first.
        candidates = [n for n in range(1, left // 12 + 1)]
        if left % 8 == 0:
            candidates.append(left // 8)
        for n in candidates:
            stream.seek(start)
            try:
                out = self._parse_with(stream, context, path, n)
            except cs.ConstructError:
                continue
            if stream_left(stream) == 0 and (out.sibling_dies is not None or n * 8 == left):
                return out
        raise cs.ValidationError("no cpu count makes the per-cpu topology fit %d bytes"
                                 % left, path=path)

    def _build(self, obj: Mapping[str, Any], stream: BinaryIO, context: cs.Container,
               path: str) -> Mapping[str, Any]:
        if obj.get("cpus") is None:
            return obj
        for cpu in obj["cpus"]:
            self.core_socket._build(cpu, stream, context, path)
        if obj.get("sibling_dies") is not None:
            self.die_lists._build(obj["sibling_dies"], stream, context, path)
            for cpu in obj["cpus"]:
                self.die_id._build(cpu["die_id"], stream, context, path)
        return obj

    def _sizeof(self, context: cs.Container, path: str) -> int:
        raise cs.SizeofError("variable", path=path)


@functools.lru_cache(maxsize=None)
def _header_string(little: bool = True) -> HeaderStringAdapter:
    return HeaderStringAdapter(cs.Prefixed(ints(little).u32, cs.GreedyBytes))


@functools.lru_cache(maxsize=None)
def _string_list(little: bool = True) -> Counted:
    return Counted(ints(little).u32, _header_string(little), 4)


# ------------------------------------------------------------------- schemas
@functools.lru_cache(maxsize=None)
def feature_schemas(little: bool = True) -> dict[Feature | str, cs.Construct]:
    """{Feature: construct schema} for one byte order (TRACING_DATA excepted:
    see tracing.py): the machine's, then the session's."""
    return {**_machine_schemas(little), **_session_schemas(little),
            "_build_id_no_pid": _build_id_table(little, with_pid=False)}


def _build_id_table(little: bool, with_pid: bool = True) -> cs.Struct:
    """The BUILD_ID section: build_id_event records to its end.  perf before
    2.6.34 (a1645ce1) wrote no pid; perf reads such a table when the first
    filename reads as "nel.kallsyms]" (perf_header__read_build_ids)."""
    i = ints(little)
    least = BUILD_ID_RECORD_SIZE if with_pid else BUILD_ID_RECORD_SIZE_NO_PID
    record = cs.Struct(
        "header" / cs.Struct("type" / i.u32, "misc" / i.u16, "size" / i.u16),
        cs.Check(cs.this.header.size >= least),
        *(("pid" / i.s32,) if with_pid else ()),
        "build_id" / cs.Bytes(BUILD_ID_SIZE),
        "size" / i.u8,
        "reserved" / cs.Bytes(3),
        "filename" / cs.ExprAdapter(cs.Bytes(cs.this.header.size - least),
                                    lambda obj, ctx: _c_string(obj),
                                    lambda obj, ctx: _pad_name(obj, ctx.header.size - least)),
    )
    return cs.Struct("records" / cs.GreedyRange(record), cs.Terminated)


def _machine_schemas(little: bool) -> dict[Feature | str, cs.Construct]:
    """The features that describe the machine: its names, CPUs, memory,
    caches, PMUs."""
    i = ints(little)
    u32, u64 = i.u32, i.u64
    string = _header_string(little)
    strings = _string_list(little)
    pmu_caps_entry = cs.Struct("name" / string, "value" / string)
    return {
        Feature.HOSTNAME: string,
        Feature.OSRELEASE: string,
        Feature.VERSION: string,
        Feature.ARCH: string,
        Feature.NRCPUS: cs.Struct("nr_cpus_available" / u32, "nr_cpus_online" / u32),
        Feature.CPUDESC: string,
        Feature.CPUID: string,
        Feature.TOTAL_MEM: u64,
        Feature.CMDLINE: strings,
        Feature.CPU_TOPOLOGY: cs.Struct(
            "sibling_cores" / strings,
            "sibling_threads" / strings,
            "tail" / CpuTopologyTail(little),
        ),
        Feature.NUMA_TOPOLOGY: Counted(u32, cs.Struct(
            "node" / u32, "mem_total" / u64, "mem_free" / u64, "cpus" / string), 24),
        Feature.PMU_MAPPINGS: Counted(u32, cs.Struct("type" / u32, "name" / string), 8),
        Feature.CACHE: cs.Struct(
            "version" / u32,
            cs.Check(cs.this.version == 1),
            "caches" / Counted(u32, cs.Struct(
                "level" / u32, "line_size" / u32, "sets" / u32, "ways" / u32,
                "type" / string, "size" / string, "map" / string), 28),
        ),
        Feature.MEM_TOPOLOGY: cs.Struct(
            "version" / u64,
            cs.Check(cs.this.version == 1),
            "block_size" / u64,
            "nodes" / Counted(u64, cs.Struct(
                "node" / u64,
                "size" / u64,
                "bitmap_size" / u64,
                cs.Check(cs.this.bitmap_size <= (1 << 32)),
                "bitmap" / cs.Array((cs.this.bitmap_size + 63) // 64, u64),
            ), 24),
        ),
        Feature.CPU_PMU_CAPS: Counted(u32, pmu_caps_entry, 8),
        Feature.HYBRID_TOPOLOGY: Counted(u32, cs.Struct("pmu_name" / string, "cpus" / string), 8),
        Feature.PMU_CAPS: Counted(u32, cs.Struct(
            "caps" / Counted(u32, pmu_caps_entry, 8),
            "pmu_name" / string,
        ), 8),
    }


def _session_schemas(little: bool) -> dict[Feature | str, cs.Construct]:
    """The features that describe the session: its events, binaries,
    clocks, times, BPF programs, compression."""
    i = ints(little)
    u32, u64 = i.u32, i.u64
    event = cs.Struct(
        "attr" / AttrOfSize(little),
        "nr_ids" / u32,
        "name" / _header_string(little),
        cs.Check(cs.this.nr_ids * 8 <= cs.this._.section_size),
        "ids" / cs.Array(cs.this.nr_ids, u64),
    )
    return {
        Feature.BUILD_ID: _build_id_table(little),
        Feature.EVENT_DESC: cs.Struct(
            "nr_events" / u32,
            "attr_size" / u32,
            cs.Check(cs.this.attr_size >= 8),
            "section_size" / cs.Computed(lambda ctx: _stream_size_of(ctx)),
            cs.Check(cs.this.nr_events * (cs.this.attr_size + 8) <= cs.this.section_size),
            "events" / cs.Array(cs.this.nr_events, event),
        ),
        Feature.BRANCH_STACK: cs.Struct(),
        Feature.GROUP_DESC: Counted(u32, cs.Struct(
            "name" / _header_string(little), "leader_idx" / u32, "nr_members" / u32), 12),
        # auxtrace_index__write: u64 total, then {file_offset, sz} per entry.
        Feature.AUXTRACE: Counted(u64, cs.Struct("file_offset" / u64, "sz" / u64), 16),
        Feature.STAT: cs.Struct(),
        Feature.SAMPLE_TIME: cs.Struct("first_sample_time" / u64, "last_sample_time" / u64),
        Feature.CLOCKID: u64,
        Feature.DIR_FORMAT: u64,
        Feature.BPF_PROG_INFO: Counted(u32, cs.Struct(
            "info_len" / u32,
            "data_len" / u32,
            "arrays" / u64,
            "info" / cs.Bytes(cs.this.info_len),
            "data" / cs.Bytes(cs.this.data_len),
        ), 16),
        Feature.BPF_BTF: Counted(u32, cs.Struct(
            "id" / u32, "data_size" / u32, "data" / cs.Bytes(cs.this.data_size)), 8),
        Feature.COMPRESSED: cs.Struct(
            "version" / u32, "type" / u32, "level" / u32, "ratio" / u32, "mmap_len" / u32),
        Feature.CLOCK_DATA: cs.Struct(
            "version" / u32,
            cs.Check(cs.this.version == 1),
            "clockid" / u32,
            "tod_ns" / u64,
            "clockid_ns" / u64,
        ),
    }


def _stream_size_of(ctx: cs.Container) -> int:
    stream = ctx._io
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end


def _pad_name(text: str, size: int) -> bytes:
    raw = text.encode("utf-8") + b"\0"
    if len(raw) > size:
        raise cs.ValidationError("filename %r does not fit %d bytes" % (text, size))
    return raw + bytes(size - len(raw))


# ------------------------------------------------------------- bpf_prog_info
@functools.lru_cache(maxsize=None)
def bpf_prog_info_schema(little: bool = True) -> cs.Struct:
    """struct bpf_prog_info (include/uapi/linux/bpf.h), the fields perf prints;
    shorter infos are zero-extended as perf does."""
    i = ints(little)
    u32, u64 = i.u32, i.u64
    return cs.Struct(
        "type" / u32, "id" / u32, "tag" / cs.Bytes(8),
        "jited_prog_len" / u32, "xlated_prog_len" / u32,
        "jited_prog_insns" / u64, "xlated_prog_insns" / u64,
        "load_time" / u64, "created_by_uid" / u32, "nr_map_ids" / u32,
        "map_ids" / u64, "name" / cs.Bytes(16), "ifindex" / u32,
        "gpl_compatible" / u32, "netns_dev" / u64, "netns_ino" / u64,
        "nr_jited_ksyms" / u32, "nr_jited_func_lens" / u32,
        "jited_ksyms" / u64, "jited_func_lens" / u64,
        "btf_id" / u32, "func_info_rec_size" / u32, "func_info" / u64,
        "nr_func_info" / u32, "nr_line_info" / u32, "line_info" / u64,
        "jited_line_info" / u64, "nr_jited_line_info" / u32,
        "line_info_rec_size" / u32, "jited_line_info_rec_size" / u32,
        "nr_prog_tags" / u32, "prog_tags" / u64,
    )


BPF_PROG_INFO_SIZE = 208  # of the struct in perf 6.1's uapi (through attach_btf_id)


def parse_bpf_prog_info(entry: Mapping[str, Any], little: bool = True) -> dict[str, Any]:
    """The bpf_prog_info of one BPF_PROG_INFO entry, with its arrays read from
    the entry's data (perf stores array pointers as offsets into data)."""
    schema = bpf_prog_info_schema(little)
    raw = bytes(entry["info"])
    need = schema.sizeof()
    if len(raw) < need:
        raw = raw + bytes(need - len(raw))
    info = to_builtins(schema.parse(raw))
    data = bytes(entry["data"])
    fmt = "<" if little else ">"

    def array(offset_field: str, count_field: str, item: str) -> list[int]:
        count = info[count_field]
        offset = info[offset_field]
        width = struct.calcsize(item)
        if count == 0:
            return []
        if offset + count * width > len(data):
            raise CorruptError("bpf_prog_info %d: %s outside the data" % (info["id"],
                                                                      offset_field))
        return list(struct.unpack_from(fmt + "%d%s" % (count, item), data, offset))

    info["jited_ksyms_array"] = array("jited_ksyms", "nr_jited_ksyms", "Q")
    info["jited_func_lens_array"] = array("jited_func_lens", "nr_jited_func_lens", "I")
    count = info["nr_prog_tags"]
    off = info["prog_tags"]
    if count and off + count * 8 > len(data):
        raise CorruptError("bpf_prog_info %d: prog_tags outside the data" % info["id"])
    info["prog_tags_array"] = [data[off + 8 * k:off + 8 * k + 8] for k in range(count)]
    info["name"] = _c_string(info["name"])
    return info


# ------------------------------------------------------------------- parsing


def parse_feature(fid: int, data: bytes | memoryview, little: bool = True,
                  path: InputName | None = None, offset: int | None = None,
                  nr_cpus_avail: int | None = None) -> Any:
    """The parsed feature section `fid` from its bytes.

    Returns str for the string features, int for TOTAL_MEM, CLOCKID and
    DIR_FORMAT, a list or dict otherwise (see the schemas), a
    tracing.TracingData for TRACING_DATA, and a RawFeature for a number
    without a schema.  Raises CorruptError (with `path` and `offset`) for a
    section that does not decode.
    """
    data = bytes(data)
    try:
        fid = Feature(fid)
    except ValueError:
        return RawFeature(fid, data, "unknown feature %d" % fid)
    try:
        if fid == Feature.TRACING_DATA:
            from .tracing import parse_tracing_data
            return parse_tracing_data(data, path=path, offset=offset)
        schemas = feature_schemas(little)
        if fid == Feature.BUILD_ID:
            return _parse_build_ids(schemas, data)
        schema = schemas.get(fid)
        if schema is None:
            return RawFeature(fid, data, "no schema for %s" % fid.name)
        if fid == Feature.CPU_TOPOLOGY:
            parsed = schema.parse(data, nr_cpus_avail=nr_cpus_avail)
            tail = parsed.tail
            return {"sibling_cores": list(parsed.sibling_cores),
                    "sibling_threads": list(parsed.sibling_threads),
                    "cpus": to_builtins(tail.cpus),
                    "sibling_dies": None if tail.sibling_dies is None
                    else list(tail.sibling_dies)}
        parsed = schema.parse(data)
        if fid == Feature.EVENT_DESC:
            return [{"attr": complete_attr(ev.attr), "name": ev.name,
                     "ids": list(ev.ids)} for ev in parsed.events]
        if fid == Feature.CMDLINE:
            return list(parsed)
        return to_builtins(parsed)
    except CorruptError:
        raise
    except (cs.ConstructError, struct.error, ValueError, OverflowError, MemoryError) as exc:
        raise CorruptError("%s: %s" % (fid.name, describe_construct_error(exc)), path=path,
                           offset=offset) from None


def _parse_build_ids(schemas: dict[Feature | str, cs.Construct],
                     data: bytes) -> list[dict[str, Any]]:
    schema = schemas[Feature.BUILD_ID]
    try:
        records = schema.parse(data).records
        quirk = bool(records) and records[0].filename.startswith("nel.kallsyms]")
    except cs.ConstructError:
        # The pid-less layout is tried when the first record reads as one.
        quirk = data[36:36 + 13] == b"nel.kallsyms]"
        if not quirk:
            raise
    if quirk:
        records = schemas["_build_id_no_pid"].parse(data).records
        for rec in records:
            # perf fills in the missing pid from misc (HOST_KERNEL_ID or
            # DEFAULT_GUEST_KERNEL_ID).
            rec.pid = 0 if rec.header.misc in (4, 5) else -1
    out = []
    for rec in records:
        size = rec.size if rec.header.misc & MISC_BUILD_ID_SIZE else BUILD_ID_SIZE
        size = min(size, BUILD_ID_SIZE)
        out.append({"type": rec.header.type, "misc": rec.header.misc, "pid": rec.pid,
                    "build_id": bytes(rec.build_id[:size]), "filename": rec.filename})
    return out


def build_feature(fid: int, value: Any, little: bool = True) -> bytes:
    """The bytes of a feature section from a value as parse_feature returns it
    (for the schemas that parse to plain values; used by tests)."""
    fid = Feature(fid)
    schema = feature_schemas(little)[fid]
    return schema.build(value)
