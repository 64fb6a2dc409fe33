"""Google's pprof profile format (profile.proto), written with the protobuf
library: `go tool pprof`, Pyroscope and Grafana read it.

profile.proto is described below once, as data; the message classes are made
from that description at run time, so no generated code or protoc is needed.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ..run.folded import CollapseOptions, frame_names

if TYPE_CHECKING:
    from collections.abc import Sequence

    from google.protobuf.message import Message

    from ..format import EventAttr
    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SymbolizedSample

# Events whose period is time in nanoseconds (perf's software clocks).
NS_EVENTS = ("cpu-clock", "task-clock")

# (message, [(field, number, type, repeated)]) of perftools.profiles, from
# github.com/google/pprof/blob/main/proto/profile.proto.
PROFILE_PROTO = (
    ("Profile", [("sample_type", 1, "ValueType", True), ("sample", 2, "Sample", True),
                 ("mapping", 3, "Mapping", True), ("location", 4, "Location", True),
                 ("function", 5, "Function", True), ("string_table", 6, "string", True),
                 ("drop_frames", 7, "int64", False), ("keep_frames", 8, "int64", False),
                 ("time_nanos", 9, "int64", False), ("duration_nanos", 10, "int64", False),
                 ("period_type", 11, "ValueType", False), ("period", 12, "int64", False),
                 ("comment", 13, "int64", True), ("default_sample_type", 14, "int64", False)]),
    ("ValueType", [("type", 1, "int64", False), ("unit", 2, "int64", False)]),
    ("Sample", [("location_id", 1, "uint64", True), ("value", 2, "int64", True),
                ("label", 3, "Label", True)]),
    ("Label", [("key", 1, "int64", False), ("str", 2, "int64", False),
               ("num", 3, "int64", False), ("num_unit", 4, "int64", False)]),
    ("Mapping", [("id", 1, "uint64", False), ("memory_start", 2, "uint64", False),
                 ("memory_limit", 3, "uint64", False), ("file_offset", 4, "uint64", False),
                 ("filename", 5, "int64", False), ("build_id", 6, "int64", False),
                 ("has_functions", 7, "bool", False), ("has_filenames", 8, "bool", False),
                 ("has_line_numbers", 9, "bool", False),
                 ("has_inline_frames", 10, "bool", False)]),
    ("Location", [("id", 1, "uint64", False), ("mapping_id", 2, "uint64", False),
                  ("address", 3, "uint64", False), ("line", 4, "Line", True),
                  ("is_folded", 5, "bool", False)]),
    ("Line", [("function_id", 1, "uint64", False), ("line", 2, "int64", False),
              ("column", 3, "int64", False)]),
    ("Function", [("id", 1, "uint64", False), ("name", 2, "int64", False),
                  ("system_name", 3, "int64", False), ("filename", 4, "int64", False),
                  ("start_line", 5, "int64", False)]),
)


@functools.lru_cache(maxsize=1)
def profile_classes() -> dict[str, type[Message]]:
    """{message name: class} of profile.proto (needs the protobuf package)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fdp = descriptor_pb2.FileDescriptorProto(name="perfdata/profile.proto",
                                             package="perftools.profiles", syntax="proto3")
    FD = descriptor_pb2.FieldDescriptorProto
    scalar = {"int64": FD.TYPE_INT64, "uint64": FD.TYPE_UINT64, "bool": FD.TYPE_BOOL,
              "string": FD.TYPE_STRING}
    for name, fields in PROFILE_PROTO:
        msg = fdp.message_type.add(name=name)
        for fname, number, ftype, repeated in fields:
            f = msg.field.add(name=fname, number=number,
                              label=FD.LABEL_REPEATED if repeated else FD.LABEL_OPTIONAL)
            if ftype in scalar:
                f.type = scalar[ftype]
            else:
                f.type = FD.TYPE_MESSAGE
                f.type_name = ".perftools.profiles." + ftype
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {name: message_factory.GetMessageClass(
        pool.FindMessageTypeByName("perftools.profiles." + name)) for name, _ in PROFILE_PROTO}


class PprofBuilder:
    """Aggregates symbolized samples into one pprof Profile (one event)."""

    def __init__(self) -> None:
        self.strings = {"": 0}
        self.functions: dict[tuple[str, str], int] = {}      # (name, dso) -> id
        # (name, dso) -> (id, function id, mapping id)
        self.locations: dict[tuple[str, str], tuple[int, int, int]] = {}
        self.mappings: dict[str, tuple[int, str | None]] = {}    # dso -> (id, build-id)
        # (loc ids, pid, tid, comm) -> [count, period]
        self.samples: dict[tuple[tuple[int, ...], int, int, str], list[int]] = {}
        self.event: EventAttr | None = None
        self._opts = CollapseOptions()
        # id(frames) -> (frames, location ids)
        self._stack_cache: dict[int, tuple[Sequence[StackFrame], tuple[int, ...]]] = {}
        self.first_time: int | None = None
        self.last_time: int | None = None

    def _s(self, text: str) -> int:
        idx = self.strings.get(text)
        if idx is None:
            idx = self.strings[text] = len(self.strings)
        return idx

    def _mapping(self, fr: StackFrame) -> int:
        dso = fr.dso or "[unknown]"
        hit = self.mappings.get(dso)
        if hit is None:
            hit = self.mappings[dso] = (len(self.mappings) + 1, fr.build_id)
        return hit[0]

    def _location(self, name: str, fr: StackFrame) -> int:
        dso = fr.dso or "[unknown]"
        key = (name, dso)
        hit = self.locations.get(key)
        if hit is None:
            fid = self.functions.get(key)
            if fid is None:
                fid = self.functions[key] = len(self.functions) + 1
            mid = self._mapping(fr) if dso != "[unknown]" else 0
            hit = self.locations[key] = (len(self.locations) + 1, fid, mid)
        return hit[0]

    def _stack(self, frames: Sequence[StackFrame]) -> tuple[int, ...]:
        hit = self._stack_cache.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        ids: list[int] | tuple[int, ...]        # (made a list, kept a tuple)
        ids = []
        for fr in frames:                       # leaf first, as pprof wants
            for name in reversed(frame_names(fr, self._opts)):
                ids.append(self._location(name, fr))
        ids = tuple(ids)
        if len(self._stack_cache) > 100000:
            self._stack_cache.clear()
        self._stack_cache[id(frames)] = (frames, ids)
        return ids

    def add(self, sample: SymbolizedSample) -> bool:
        """Count a sample; False when it is of another event than the first."""
        if self.event is None:
            self.event = sample.event
        elif sample.event.index != self.event.index:
            return False
        key = (self._stack(sample.frames), sample.pid, sample.tid, sample.comm)
        acc = self.samples.get(key)
        if acc is None:
            acc = self.samples[key] = [0, 0]
        acc[0] += 1
        acc[1] += sample.period or 0
        if sample.time:
            if self.first_time is None:
                self.first_time = sample.time
            self.last_time = sample.time
        return True

    def profile(self) -> Message:
        """The Profile message."""
        P = profile_classes()
        event = self.event.name if self.event is not None else "samples"
        base = event.split(":", 1)[0]
        kind, unit = ("cpu", "nanoseconds") if base in NS_EVENTS else (event, "count")
        prof = P["Profile"]()
        for t, u in (("samples", "count"), (kind, unit)):
            prof.sample_type.add(type=self._s(t), unit=self._s(u))
        k_pid, k_tid, k_comm = self._s("pid"), self._s("tid"), self._s("comm")
        for (locs, pid, tid, comm), (count, period) in self.samples.items():
            sm = prof.sample.add(location_id=locs, value=(count, period))
            sm.label.add(key=k_pid, num=pid)
            sm.label.add(key=k_tid, num=tid)
            sm.label.add(key=k_comm, str=self._s(comm))
        for dso, (mid, build_id) in self.mappings.items():
            prof.mapping.add(id=mid, filename=self._s(dso),
                             build_id=self._s(str(build_id)) if build_id else 0,
                             has_functions=True)
        for (name, dso), (lid, fid, mid) in self.locations.items():
            loc = prof.location.add(id=lid, mapping_id=mid)
            loc.line.add(function_id=fid)
        for (name, dso), fid in self.functions.items():
            prof.function.add(id=fid, name=self._s(name), system_name=self._s(name),
                              filename=self._s(dso))
        prof.period_type.type = self._s(kind)
        prof.period_type.unit = self._s(unit)
        if self.first_time is not None and self.last_time is not None:
            prof.duration_nanos = self.last_time - self.first_time
        prof.default_sample_type = self._s(kind)
        prof.string_table.extend(self.strings)    # insertion order = index order
        return prof

    def encode(self) -> bytes:
        """The serialized Profile (not yet gzipped)."""
        return self.profile().SerializeToString()
