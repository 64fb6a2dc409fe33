"""A few fields of some events' samples, read straight from a file's bytes.

The record walker (walker.py) decodes every record as it goes, which a
system-wide scheduler recording (`perf sched record -a`: a million samples
a minute) makes slow.  Where a view needs only the sample's pid, tid, time
and cpu and some fixed fields of its tracepoint data, `scan_samples` reads
the data section in one pass with one unpack per field, and sorts the
samples it keeps by time (perf's order: by time, ties in file order).

It applies to a regular, uncompressed, little-endian file whose events'
samples hold TIME and no READ, in an order perf would write; otherwise, or
at the first record it cannot step over (a size under 8 or past the data's
end), it returns None and the caller walks the file the careful way.
"""
from __future__ import annotations

import mmap
import operator
import os
import struct
from typing import TYPE_CHECKING, Any

import construct as cs

from .constants import Feature, RecordType as RT, SampleType as ST
from .sample import id_position_in_sample, sample_schema

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from .container import PerfFile
    from .eventattr import EventAttr

    # One raw field to read: (its struct, its offset in the raw data).
    RawField = tuple[struct.Struct, int]

_HEADER = struct.Struct("<IHH")
_U64 = struct.Struct("<Q")
_SAMPLE = int(RT.SAMPLE)
_LOST = int(RT.LOST)
_LOST_SAMPLES = int(RT.LOST_SAMPLES)


# How the scan reads the fields it returns (pid, tid, time, cpu); the
# sample's other fixed fields are stepped over.
_READ_AS = {"pid": "i", "tid": "i", "time": "Q", "cpu": "I"}


def _fixed_fields(sample_type: int) -> list[tuple[str, int]]:
    """(name, width) of the fields sample_schema lays out before a sample's
    first of no fixed size (its raw data, for the samples scanned), for a
    sample without READ and CALLCHAIN (the callchain is stepped over
    apart)."""
    out = []
    for sub in sample_schema(sample_type & ~(ST.READ | ST.CALLCHAIN)).subcons:
        try:
            out.append((sub.name, sub.sizeof()))
        except cs.SizeofError:
            break
    return out


def sample_offsets(sample_type: int) -> dict[str, int]:
    """Where a sample of this sample_type holds its pid (then tid), time and
    cpu, and its raw data's size (the data follow it), as offsets from the
    record's start, for a sample without READ and CALLCHAIN; a field the
    sample lacks is missing from the answer."""
    out = {}
    at = 8
    for name, width in _fixed_fields(sample_type):
        if name in ("pid", "time", "cpu"):
            out[name] = at
        at += width
    out["raw_size"] = at
    return out


class _Plan:
    """Where one event's sample holds what is read of it: `fixed` reads the
    pid, tid, time and cpu (in that order, as the sample holds them) from
    the record's start; `raw` the fields from the raw data's start, which
    follows `after` bytes of fixed fields, and the callchain if any."""
    __slots__ = ("tag", "fixed", "after", "callchain", "raw", "whole")

    def __init__(self, tag: int, sample_type: int, fields: Sequence[RawField]) -> None:
        fmt = ["<8x"]
        for name, width in _fixed_fields(sample_type):
            code = _READ_AS.get(name)
            if code is not None and struct.calcsize("<" + code) != width:
                raise ValueError("%s is %d bytes" % (name, width))
            fmt.append(code or "%dx" % width)
        self.tag = (tag,)
        self.fixed = struct.Struct("".join(fmt))
        self.after = self.fixed.size        # (from the record's start)
        self.callchain = bool(sample_type & ST.CALLCHAIN)
        raw, at = ["<4x"], 0
        for st, offset in fields:
            if offset < at:
                raise ValueError("raw fields out of order")
            raw.append("%dx%s" % (offset - at, st.format.lstrip("<>=!@")))
            at = offset + st.size
        self.raw = struct.Struct("".join(raw))
        # without a callchain, the raw fields lie at fixed places too: one
        # unpack reads the sample's fields and the raw ones
        self.whole = None if self.callchain else struct.Struct(
            "".join(fmt) + "".join(raw)[1:])


def why_not_scanned(pf: PerfFile, attrs: Sequence[EventAttr]) -> str | None:
    """Why scan_samples does not apply, or None."""
    if pf.is_pipe or pf.is_directory or pf.data_files or pf.strict:
        return "a pipe, a directory or a strict walk"
    if not pf.little:
        return "a big-endian file"
    if pf.has_feature(Feature.COMPRESSED):
        return "compressed records"
    if pf.data_range[1] is None or not isinstance(pf.path_arg, (str, os.PathLike)):
        return "not a regular file"
    types = {ea.sample_type for ea in pf.attrs}
    if len(pf.attrs) > 1 and (len(types) > 1 and not all(t & ST.IDENTIFIER for t in types)
                              or id_position_in_sample(next(iter(types))) is None):
        return "samples that do not say their event where perf puts it"
    if any(not ea.sample_type & ST.TIME or ea.sample_type & ST.READ or
           not ea.sample_type & ST.RAW for ea in attrs):
        return "samples without time or raw data, or that read counters"
    return None


def scan_samples(pf: PerfFile, wanted: Mapping[EventAttr, Sequence[RawField]]
                 ) -> tuple[list[tuple[Any, ...]], int] | None:
    """([(pid, tid, time, cpu, field values..., tag)] by time, records
    lost) for the samples of the `wanted` events (tag: the event's index in
    pf.attrs; the raw fields given in their order in the raw data), or
    None where the scan does not apply."""
    if why_not_scanned(pf, list(wanted)) is not None:
        return None
    plans: dict[int | None, _Plan] = {}
    for ea, fields in wanted.items():
        if ea.sample_type & (ST.TID | ST.CPU) != ST.TID | ST.CPU:
            return None
        try:
            plan = _Plan(ea.index, ea.sample_type, fields)
        except ValueError:
            return None
        if len(pf.attrs) == 1:
            plans[None] = plan          # (a file of one event: every sample is its)
        elif not ea.ids:
            return None
        for ident in ea.ids:
            plans[ident] = plan
    id_at = id_offset(pf)
    start, end = pf.data_range
    with open(pf.path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return [], 0
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        got = _scan(buf, start, min(end or 0, len(buf)), plans, id_at)
    finally:
        buf.close()
    if got is None:
        return None
    out, lost = got
    out.sort(key=operator.itemgetter(2))
    return out, lost


def id_offset(pf: PerfFile) -> int | None:
    """The offset of a sample's event id from the record's start where the
    file has several events (None: one event, every sample is its)."""
    if len(pf.attrs) < 2:
        return None
    pos = id_position_in_sample(pf.attrs[0].sample_type)
    return 8 + 8 * pos  # type: ignore[operator]  # (why_not_scanned: an id position)


def _scan(buf: mmap.mmap, off: int, end: int, plans: dict[int | None, _Plan], id_at: int | None
          ) -> tuple[list[tuple[Any, ...]], int] | None:
    """The walk: None at a record it cannot step over."""
    out: list[tuple[Any, ...]] = []
    append = out.append
    header = _HEADER.unpack_from
    u64 = _U64.unpack_from
    lost = 0
    one = plans.get(None)
    # (the header and the sample's event id in one unpack, while the id's
    # place lies inside the data)
    with_id = struct.Struct("<IHH%dxQ" % (id_at - 8)).unpack_from if id_at is not None else None
    fast_end = end - (id_at or 0) - 8
    while off + 8 <= end:
        if with_id is not None and off <= fast_end:
            rtype, _, size, ident = with_id(buf, off)
        else:
            rtype, _, size = header(buf, off)
            ident = None
            if id_at is not None and rtype == _SAMPLE and off + id_at + 8 <= end:
                ident = u64(buf, off + id_at)[0]
        if size < 8 or off + size > end:
            return None
        if rtype == _SAMPLE:
            plan = one if id_at is None else plans.get(ident)
            if plan is not None and plan.whole is not None:
                if plan.whole.size > size:
                    return None
                append(plan.whole.unpack_from(buf, off) + plan.tag)
            elif plan is not None:
                pos = off + plan.after
                if plan.callchain:
                    if pos + 8 > off + size:
                        return None
                    pos += 8 + 8 * u64(buf, pos)[0]
                raw = plan.raw
                if pos + raw.size > off + size:
                    return None
                append(plan.fixed.unpack_from(buf, off) + raw.unpack_from(buf, pos) + plan.tag)
        elif rtype == _LOST or rtype == _LOST_SAMPLES:
            lost += u64(buf, off + 16 if rtype == _LOST else off + 8)[0]
        off += size
    return out, lost
