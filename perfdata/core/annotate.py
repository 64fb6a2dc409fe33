"""The compiled core's driver for `perfdata annotate`: the samples counted
by their own ip in perfdata.core._core (LeafCounter), no Python object made
of each.

The counter knows no map and no symbol.  Where a sample's ip is in no range
it was told, it hands the sample back, and the Python path
(views/annotate_samples.py LeafCounts) finds the map the ip is in as it
would name it: a process's map of a binary file (no JIT's: a jitdump's code
changes at an address over time) or a kernel map, whose addresses name the
same functions in every process that maps it, whenever the sample was
taken.  It tells the counter that map's extent and a number for it
(CompiledLeaves.add_user_map, add_kernel_map), and the counter counts every
later sample in it by (event, map's number, address), until a record
changes the process's maps (forget) or the kernel's (forget_all).  At the
end each map's addresses are named once, sorted (LeafCounts.done).  The
counts are those of the Python path, which stays the reference
(tests/core/test_annotate_core.py).
"""
from __future__ import annotations

import bisect
import sys
from array import array
from typing import TYPE_CHECKING, Any, NamedTuple

import construct as cs

from ..format import SampleType as ST, field
from ..resolve.frames import KERNEL_MODES
from ..resolve.jit_sources import JIT_PATHS
from . import walk

if TYPE_CHECKING:
    import types
    from collections.abc import Callable, Iterable, Iterator

    from ..format import EventAttr, Record
    from ..session.maps import Map
    from ..resolve.symbolized import SampleSymbolizer


class LeafLayout(NamedTuple):
    """Where a sample body holds what the leaf counters read: offsets of
    the ip (u64), pid and tid (u32), the period (u64; -1: the sample has
    none, and the attr's sample_period counts); and the body's shape: the
    offset of the callchain's nr (-1: no callchain) and the size of every
    field but the callchain's entries.  A body is counted only where its
    length is that size plus 8 bytes an entry: one the decoder would refuse
    (a callchain's nr past the body's end) goes to the Python path, which
    says what is wrong and skips it."""
    ip: int
    pid: int
    tid: int
    period: int
    callchain: int
    size: int


def leaf_layout(ea: EventAttr) -> LeafLayout | None:
    """The event's LeafLayout, from the sample's construct schema (every
    field before the period is of fixed size); None for an event whose
    samples the leaf counters leave to the Python path (another byte order,
    no ip or tid, a read of counters, a field of variable size other than
    the callchain: the user registers and stack of a DWARF recording, raw
    data)."""
    from ..format import sample_schema
    if ea.little != (sys.byteorder == "little") or not ea.sample_type & ST.IP or \
            not ea.sample_type & ST.TID or ea.sample_type & ST.READ or ea.reads_group:
        return None
    schema = sample_schema(ea.sample_type)
    size, variable = 0, []
    for sub in schema.subcons:
        try:
            size += sub.sizeof()
        except cs.SizeofError:
            variable.append(sub.name)
    if variable not in ([], ["callchain"]):
        return None
    callchain = field(schema, "callchain").offset if variable else -1
    period = field(schema, "period").offset if ea.sample_type & ST.PERIOD else -1
    return LeafLayout(field(schema, "ip").offset, field(schema, "pid").offset,
                      field(schema, "tid").offset, period, callchain,
                      size + 8 if variable else size)


def body_fits(layout: LeafLayout, body: bytes | memoryview) -> bool:
    """Whether a sample body has the layout's shape (LeafLayout): the
    Python counter's test, as the compiled counter's leaf_fits."""
    at = layout.callchain
    if at < 0:
        return len(body) == layout.size
    if at + 8 > len(body):
        return False
    nr = int.from_bytes(body[at:at + 8], sys.byteorder)
    return len(body) - layout.size == 8 * nr


class MapNamed(NamedTuple):
    """A map whose addresses the counter counts: the Map, the binary it is
    looked up by (FrameResolver.dso_of: path, build-id, as it was when the
    map was told), and whether it is a kernel map."""
    map: Map
    path: str
    build_id: str | None
    kernel: bool


class CompiledLeaves:
    """The compiled LeafCounter of one run over `samples`, its events'
    layouts set (wanted: the event annotated, None: all), and the maps it
    was told, by number."""

    def __init__(self, module: types.ModuleType, samples: SampleSymbolizer,
                 wanted: str | None) -> None:
        self.module = module
        self.samples = samples
        self.counter = module.LeafCounter(sum(1 << mode for mode in KERNEL_MODES))
        self.attrs: list[EventAttr] = []
        for ea in samples.pf.attrs:
            layout = leaf_layout(ea)
            if layout is not None:
                self.counter.set_layout(ea, *layout, ea.attr["sample_period"],
                                        wanted is None or ea.name == wanted)
        self.maps: list[MapNamed] = []
        self._numbers: dict[tuple[Any, ...], int] = {}
        self.consume = self.counter.consume
        self.forget = self.counter.forget
        self.forget_all = self.counter.forget_all

    def start(self, at_end: Callable[[], None]) -> None:
        """The stream's samples the counter's first: from the compiled
        record walk where it applies (perfdata/core/walk.py), which hands
        back as Records only the samples it does not count.  at_end() is
        called after the last record, inside the stream's iteration (the
        counts are named there, and what naming them warns of is printed
        with the run's warnings)."""
        stream = self.samples.stream
        records: Iterable[Record | list[Any]]
        if walk.why_not(stream.pf, stream, self.module) is None:
            records = walk.RecordDelivery(self.module, self.counter, stream)
        else:
            records = stream.pf.records(stream.order)
        stream.records = _then(records, at_end)

    def stop(self) -> None:
        stream = self.samples.stream
        stream.records = None
        self.samples.counts["samples"] += self.counter.counts()["made"]

    def _number(self, key: tuple[Any, ...], named: MapNamed) -> int:
        n = self._numbers.get(key)
        if n is None:
            n = self._numbers[key] = len(self.maps)
            self.maps.append(named)
        return n

    def add_user_map(self, pid: int, m: Map) -> bool:
        """Count the process's later samples in m, a map of a binary file
        (not a JIT's): whether the counter took it."""
        if not m.path.startswith("/") or m.path.startswith(JIT_PATHS):
            return False
        path, bid = self.samples.dso_of(m)
        if path.startswith(JIT_PATHS):
            return False
        n = self._number((path, bid, m.path, m.start, m.end, m.pgoff),
                         MapNamed(m, path, bid, False))
        return self._add(pid, m, n)

    def add_kernel_map(self, m: Map) -> bool:
        """Count the later kernel samples in m, one of the kernel's maps."""
        n = self._number((m.path, m.start, m.end, m.pgoff, True), MapNamed(m, m.path, None, True))
        return self._add(-1, m, n)

    def _add(self, pid: int, m: Map, n: int) -> bool:
        try:
            self.counter.add_range(pid, m.start, m.end, n)
        except ValueError:
            return False        # (a range told before overlaps it: the Python path's)
        return True

    def groups(self) -> Iterator[tuple[EventAttr, MapNamed, array[int], array[int], array[int]]]:
        """The counts, a map of one event at a time: (event, the map, its
        addresses sorted, the samples and the period at each)."""
        raw = array("Q", self.counter.entries())
        layouts = [attr for attr, _, _ in self.counter.totals()]
        spaces, ips, hits, periods = raw[0::4], raw[1::4], raw[2::4], raw[3::4]
        start, n = 0, len(spaces)
        while start < n:
            space = spaces[start]
            end = bisect.bisect_right(spaces, space, start)
            yield (layouts[space >> 32], self.maps[space & 0xFFFFFFFF], ips[start:end],
                   hits[start:end], periods[start:end])
            start = end

    def totals(self) -> list[tuple[EventAttr, int, int]]:
        """[(event, samples, period)] counted by the counter."""
        return self.counter.totals()  # type: ignore[no-any-return]


def compiled_leaves(samples: SampleSymbolizer, wanted: str | None) -> CompiledLeaves | None:
    """The compiled leaf counter of a run, or None where the compiled core
    is not built (or PERFDATA_CORE=pure) or was built without one."""
    from . import compiled
    module = compiled()
    if module is None or not hasattr(module, "LeafCounter"):
        return None
    return CompiledLeaves(module, samples, wanted)


def _then(records: Iterable[Record | list[Any]], at_end: Callable[[], None]
          ) -> Iterator[Record | list[Any]]:
    yield from records
    at_end()
