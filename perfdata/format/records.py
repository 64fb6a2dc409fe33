"""Schemas of the record bodies (everything after the 8-byte perf_event_header).

Kernel records (1..63) carry the sample_id trailer when the attr asks for it;
the reader strips it before a body schema sees the bytes, so these schemas
describe the body alone.  Strings are NUL-terminated and padded to 8 bytes:
`CString` stops at the NUL and the padding is left unread.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import construct as cs

from .attr import attr_schema
from .constants import RecordType
from .endian import ints

if TYPE_CHECKING:
    import struct

# Wire form of a record header.
@functools.lru_cache(maxsize=None)
def event_header_schema(little: bool = True) -> cs.Struct:
    i = ints(little)
    return cs.Struct("type" / i.u32, "misc" / i.u16, "size" / i.u16)


EVENT_HEADER_SIZE = 8


@functools.lru_cache(maxsize=None)
def event_header_struct(little: bool = True) -> struct.Struct:
    """perf_event_header as a struct.Struct (type, misc, size), derived from
    event_header_schema for the record loops."""
    from .fastpath import derive_struct
    return derive_struct(event_header_schema(little))

_string = cs.CString("utf8")


def _padded_string(length: int) -> cs.Construct:
    return cs.PaddedString(length, "utf8")


@functools.lru_cache(maxsize=None)
def read_format_schema(read_format: int, little: bool = True) -> cs.Struct:
    """The values a READ sample or record carries (perf_event_read_format)."""
    from .constants import ReadFormat as RF
    i = ints(little)
    value = ["value" / i.u64]
    if read_format & RF.GROUP:
        if read_format & RF.ID:
            value.append("id" / i.u64)
        if read_format & RF.LOST:
            value.append("lost" / i.u64)
        fields = ["nr" / i.u64]
        if read_format & RF.TOTAL_TIME_ENABLED:
            fields.append("time_enabled" / i.u64)
        if read_format & RF.TOTAL_TIME_RUNNING:
            fields.append("time_running" / i.u64)
        fields.append("values" / cs.Array(cs.this.nr, cs.Struct(*value)))
        return cs.Struct(*fields)
    fields = list(value)
    if read_format & RF.TOTAL_TIME_ENABLED:
        fields.append("time_enabled" / i.u64)
    if read_format & RF.TOTAL_TIME_RUNNING:
        fields.append("time_running" / i.u64)
    if read_format & RF.ID:
        fields.append("id" / i.u64)
    if read_format & RF.LOST:
        fields.append("lost" / i.u64)
    return cs.Struct(*fields)


@functools.lru_cache(maxsize=None)
def body_schemas(little: bool = True) -> dict[int | str, cs.Struct]:
    """Schemas of every record body whose layout does not depend on an attr:
    the kernel's records, then perf's own (USER_TYPE_START and up)."""
    return {**_kernel_body_schemas(little), **_perf_body_schemas(little)}


def _cpu_map_data(little: bool) -> cs.Struct:
    """perf_record_cpu_map_data: a CPU list, a mask or a range."""
    i = ints(little)
    u8, u16, u32, u64 = i.u8, i.u16, i.u32, i.u64
    return cs.Struct(
        "type" / u16,
        "map" / cs.Switch(cs.this.type, {
            0: cs.Struct("nr" / u16, "cpu" / cs.Array(cs.this.nr, u16)),
            1: cs.Struct(
                "nr" / u16, "long_size" / u16,
                "mask" / cs.Switch(cs.this.long_size, {
                    4: cs.Array(cs.this.nr, u32),
                    8: cs.Struct("pad" / u32, "words" / cs.Array(cs.this._.nr, u64)),
                }, default=cs.GreedyBytes)),
            2: cs.Struct("any_cpu" / u8, "pad" / u8, "start_cpu" / u16, "end_cpu" / u16),
        }, default=cs.GreedyBytes),
    )


def _kernel_body_schemas(little: bool) -> dict[int | str, cs.Struct]:
    """The kernel's records (without their sample_id trailer)."""
    i = ints(little)
    u8, u16, u32, u64 = i.u8, i.u16, i.u32, i.u64
    mmap2_head = ("pid" / u32, "tid" / u32, "start" / u64, "len" / u64, "pgoff" / u64)
    # The 24 bytes after pgoff have two forms: the device and inode numbers
    # of the mapped file, or (misc & MISC_MMAP_BUILD_ID, Linux 5.12 and
    # later) its build-id.  One schema each, chosen by the header's misc,
    # so that a record decodes the form it holds and no other.
    mmap2_inode = ("maj" / u32, "min" / u32, "ino" / u64, "ino_generation" / u64)
    mmap2_build_id = ("build_id_size" / u8, "reserved1" / u8, "reserved2" / u16,
                      "build_id" / cs.Bytes(20))
    mmap2_tail = ("prot" / u32, "flags" / u32, "filename" / _string)

    return {
        RecordType.MMAP: cs.Struct(
            "pid" / u32, "tid" / u32, "start" / u64, "len" / u64, "pgoff" / u64,
            "filename" / _string),
        RecordType.LOST: cs.Struct("id" / u64, "lost" / u64),
        RecordType.COMM: cs.Struct("pid" / u32, "tid" / u32, "comm" / _string),
        RecordType.EXIT: cs.Struct(
            "pid" / u32, "ppid" / u32, "tid" / u32, "ptid" / u32, "time" / u64),
        RecordType.FORK: cs.Struct(
            "pid" / u32, "ppid" / u32, "tid" / u32, "ptid" / u32, "time" / u64),
        RecordType.THROTTLE: cs.Struct("time" / u64, "id" / u64, "stream_id" / u64),
        RecordType.UNTHROTTLE: cs.Struct("time" / u64, "id" / u64, "stream_id" / u64),
        RecordType.MMAP2: cs.Struct(*mmap2_head, *mmap2_inode, *mmap2_tail),
        "MMAP2_build_id": cs.Struct(*mmap2_head, *mmap2_build_id, *mmap2_tail),
        # Linux 3.12-3.15 (RHEL 7's 3.10) wrote MMAP2 without prot and flags
        # (and long before the build-id form).
        "MMAP2_pre316": cs.Struct(*mmap2_head, *mmap2_inode, "filename" / _string),
        RecordType.AUX: cs.Struct("aux_offset" / u64, "aux_size" / u64, "flags" / u64),
        RecordType.ITRACE_START: cs.Struct("pid" / u32, "tid" / u32),
        RecordType.LOST_SAMPLES: cs.Struct("lost" / u64),
        RecordType.SWITCH: cs.Struct(),
        RecordType.SWITCH_CPU_WIDE: cs.Struct("next_prev_pid" / u32, "next_prev_tid" / u32),
        RecordType.NAMESPACES: cs.Struct(
            "pid" / u32, "tid" / u32, "nr_namespaces" / u64,
            "link_info" / cs.Array(cs.this.nr_namespaces, cs.Struct("dev" / u64, "ino" / u64))),
        RecordType.KSYMBOL: cs.Struct(
            "addr" / u64, "len" / u32, "ksym_type" / u16, "flags" / u16, "name" / _string),
        RecordType.BPF_EVENT: cs.Struct(
            "type" / u16, "flags" / u16, "id" / u32, "tag" / cs.Bytes(8)),
        RecordType.CGROUP: cs.Struct("id" / u64, "path" / _string),
        RecordType.TEXT_POKE: cs.Struct(
            "addr" / u64, "old_len" / u16, "new_len" / u16,
            "old_bytes" / cs.Bytes(cs.this.old_len), "new_bytes" / cs.Bytes(cs.this.new_len)),
        RecordType.AUX_OUTPUT_HW_ID: cs.Struct("hw_id" / u64),
    }


def _perf_body_schemas(little: bool) -> dict[int | str, cs.Struct]:
    """perf's own records: the header of a stream, rounds, AUX tracing,
    perf stat's, compressed data."""
    i = ints(little)
    u8, u16, u32, u64, s32 = i.u8, i.u16, i.u32, i.u64, i.s32
    cpu_map_data = _cpu_map_data(little)
    return {
        # name is char[64] but old perf wrote records shorter than that.
        RecordType.HEADER_EVENT_TYPE: cs.Struct(
            "event_id" / u64, "name" / cs.NullStripped(cs.GreedyString("utf8"))),
        RecordType.HEADER_TRACING_DATA: cs.Struct("size" / u32),
        RecordType.HEADER_BUILD_ID: cs.Struct(
            "pid" / s32, "build_id" / cs.Bytes(20), "build_id_size" / u8,
            "reserved1" / u8, "reserved2" / u16, "filename" / _string),
        RecordType.FINISHED_ROUND: cs.Struct(),
        RecordType.ID_INDEX: cs.Struct(
            "nr" / u64,
            "entries" / cs.Array(cs.this.nr, cs.Struct(
                "id" / u64, "idx" / u64, "cpu" / u64, "tid" / u64)),
            # perf 6.x appends machine_pid/vcpu per entry when it has guests.
            "entries2" / cs.GreedyRange(cs.Struct("machine_pid" / u64, "vcpu" / u64))),
        RecordType.AUXTRACE_INFO: cs.Struct(
            "type" / u32, "reserved" / u32, "priv" / cs.GreedyRange(u64)),
        RecordType.AUXTRACE: cs.Struct(
            "size" / u64, "offset" / u64, "reference" / u64,
            "idx" / u32, "tid" / u32, "cpu" / u32, "reserved" / u32),
        RecordType.AUXTRACE_ERROR: cs.Struct(
            "type" / u32, "code" / u32, "cpu" / u32, "pid" / u32, "tid" / u32,
            "fmt" / u32, "ip" / u64, "msg" / _padded_string(64),
            "extra" / cs.GreedyBytes),
        RecordType.THREAD_MAP: cs.Struct(
            "nr" / u64,
            "entries" / cs.Array(cs.this.nr, cs.Struct("pid" / u64, "comm" / _padded_string(16)))),
        RecordType.CPU_MAP: cpu_map_data,
        RecordType.STAT_CONFIG: cs.Struct(
            "nr" / u64, "data" / cs.Array(cs.this.nr, cs.Struct("tag" / u64, "val" / u64))),
        RecordType.STAT: cs.Struct(
            "id" / u64, "cpu" / u32, "thread" / u32, "val" / u64, "ena" / u64, "run" / u64),
        RecordType.STAT_ROUND: cs.Struct("type" / u64, "time" / u64),
        RecordType.EVENT_UPDATE: cs.Struct(
            "type" / u64, "id" / u64,
            "data" / cs.Switch(cs.this.type, {
                0: cs.Struct("unit" / _string),
                1: cs.Struct("scale" / (cs.Float64l if little else cs.Float64b)),
                2: cs.Struct("name" / _string),
                3: cs.Struct("cpus" / cpu_map_data),
            }, default=cs.GreedyBytes)),
        RecordType.TIME_CONV: cs.Struct(
            "time_shift" / u64, "time_mult" / u64, "time_zero" / u64,
            # Since perf 5.10; absent in older files.
            "ext" / cs.Optional(cs.Struct(
                "time_cycles" / u64, "time_mask" / u64,
                "cap_user_time_zero" / u8, "cap_user_time_short" / u8,
                "reserved" / cs.Bytes(6)))),
        RecordType.HEADER_FEATURE: cs.Struct("feat_id" / u64, "data" / cs.GreedyBytes),
        RecordType.COMPRESSED: cs.Struct("data" / cs.GreedyBytes),
        RecordType.FINISHED_INIT: cs.Struct(),
        RecordType.COMPRESSED2: cs.Struct(
            "data_size" / u64, "data" / cs.GreedyBytes),
    }


@functools.lru_cache(maxsize=None)
def header_attr_schema(attr_size: int, little: bool = True) -> cs.Struct:
    """HEADER_ATTR (pipe mode): a perf_event_attr of `attr_size` bytes (its own
    size field, 0 meaning 64), then the ids of that event up to the record end."""
    return cs.Struct(
        "attr" / attr_schema(attr_size, little),
        "ids" / cs.GreedyRange(ints(little).u64),
    )
