"""The samples of `perfdata annotate`: per function, the hits and period of
each instruction its leaf ips fell on.

A sample counts for the function its own ip is in, as perf annotate counts
it: no call chain is walked, no user stack unwound, no inlined frame looked
up.  Where no filter chooses the samples, LeafCounts takes each SAMPLE
record from the session stream before it is decoded (the stream's
sample_text hook, as the compiled core takes them): it reads the ip, pid
and period where the event's sample_type puts them, and names an
(event, cpumode, ip) of a process once, until a record changes that
process's maps (or the kernel's: then every process's).  It is named by
the resolver as the Python path names it, but for an address of a binary
already named in another process (the same path and load bias), or inside
a function of that binary already named (within its symbol's size, where
the binary's symbol table finds that symbol): a build's compilers are many
processes of one binary.  A JIT's address is named again at each sample (a
jitdump's code changes at an address over time).  The records it does not
take (another byte order, a group read, a counter read, a pid beyond
pid_t) go the Python path.
"""
from __future__ import annotations

import bisect
import struct
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..format import MISC_CPUMODE_MASK, SampleType as ST
from ..resolve.frames import KERNEL_MODES
from ..resolve.symbolized import SymbolizedSample

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..format import EventAttr, Record
    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SampleSymbolizer

# The sample body's fields before PERIOD, in perf's order, with their sizes
# (perf_event.h: IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD).
_JIT_SOURCES = ("perfmap", "jitdump")


@dataclass(slots=True)
class FunctionSamples:
    """The samples whose ip fell in one function of one binary, for one
    event: hits and period by address (the binary's own, objdump's)."""
    event: str
    name: str
    dso: str
    path: str | None
    build_id: str | None
    start: int
    hits: dict[int, int] = field(default_factory=dict)
    period: dict[int, int] = field(default_factory=dict)

    @property
    def total_hits(self) -> int:
        return sum(self.hits.values())

    @property
    def total_period(self) -> int:
        return sum(self.period.values())


def function_frame(frames: Iterable[StackFrame]) -> StackFrame | None:
    """The leaf's function as its binary's symbol table names it: the first
    frame not inlined into another (an inlined leaf's address is in its
    caller's code)."""
    for f in frames:
        if not f.inlined:
            return f
    return None


class Gathered:
    """The functions the samples' ips fell in, and per event its (samples,
    period) in all: what global percents divide by."""

    def __init__(self, event: str | None) -> None:
        self.event = event          # (only this event's samples, where given)
        self.functions: dict[tuple[Any, ...], FunctionSamples] = {}
        self.totals: dict[str, tuple[int, int]] = {}

    def slot(self, event: str, f: StackFrame | None) -> tuple[FunctionSamples, int] | None:
        """The function a leaf frame is in and the frame's address there;
        None for a frame in no known function."""
        if f is None or f.symbol is None or f.svma is None or f.offset is None:
            return None
        start = f.svma - f.offset
        key = (event, f.dso_path or f.dso, f.build_id, start)
        fs = self.functions.get(key)
        if fs is None:
            fs = self.functions[key] = FunctionSamples(event, f.symbol, f.dso, f.dso_path,
                                                       f.build_id, start)
        return fs, f.svma

    def add(self, event: str, slot: tuple[FunctionSamples, int] | None, period: int) -> None:
        n, p = self.totals.get(event, (0, 0))
        self.totals[event] = (n + 1, p + period)
        if slot is not None:
            fs, svma = slot
            fs.hits[svma] = fs.hits.get(svma, 0) + 1
            fs.period[svma] = fs.period.get(svma, 0) + period

    def add_sample(self, sample: SymbolizedSample) -> None:
        """A sample the Python path symbolized (its leaf's frames only)."""
        event = sample.event.name
        if self.event is not None and event != self.event:
            return
        self.add(event, self.slot(event, function_frame(sample.frames)), sample.period or 1)


class _Layout:
    """Where an event's sample body holds what LeafCounts reads, and the
    event's samples and period counted there so far."""
    __slots__ = ("name", "wanted", "index", "ip", "read", "fixed_period", "samples", "total")

    def __init__(self, ea: EventAttr, wanted: bool, index: int) -> None:
        # (the offsets from the sample's schema, as the compiled core takes
        # them: every field before the period is of fixed size)
        from ..core.layout import field
        from ..format import sample_schema
        schema = sample_schema(ea.sample_type)
        self.name = ea.name
        self.wanted = wanted
        self.index = index
        self.ip = field(schema, "ip").offset
        self.fixed_period = ea.attr["sample_period"]
        # ip, pid, tid (just after the ip) and the period (where the sample
        # has none: the attr's sample_period, as Sample.period) in one unpack
        self.read: Callable[[Any, int], tuple[int, ...]]
        if ea.sample_type & ST.PERIOD:
            gap = field(schema, "period").offset - field(schema, "tid").offset - 4
            self.read = struct.Struct("<QII%dxQ" % gap).unpack_from
        else:
            self.read = _no_period(struct.Struct("<QII").unpack_from, self.fixed_period)
        self.samples = self.total = 0


class _Slot:
    """The samples counted at one address of one function (fs None: in
    none), added to the function at the end."""
    __slots__ = ("fs", "svma", "hits", "period")

    def __init__(self, named: tuple[FunctionSamples, int] | None) -> None:
        self.fs: FunctionSamples | None = named[0] if named is not None else None
        self.svma = named[1] if named is not None else 0
        self.hits = self.period = 0


def _no_period(read: Callable[[Any, int], tuple[int, ...]], period: int
               ) -> Callable[[Any, int], tuple[int, ...]]:
    """read, with `period` after its (ip, pid, tid)."""
    return lambda body, at: read(body, at) + (period,)


class LeafCounts:
    """The stream's sample_text hook of an unfiltered run (see the module's
    doc): takes the SAMPLE records it can, counted into a Gathered by
    `done`."""

    def __init__(self, samples: SampleSymbolizer, gathered: Gathered) -> None:
        self.samples = samples
        self.gathered = gathered
        self.layouts: dict[int, _Layout | None] = {}
        # pid -> {(event's layout index, misc, ip): slot} while its maps stay
        self.named: dict[int, dict[tuple[int, int, int], _Slot]] = {}
        # (event attr id, binary path, its load bias, ip) -> slot: an
        # address of a binary named once for every process that maps it
        self.in_binary: dict[tuple[int, str, int, int], _Slot] = {}
        self.slots: list[_Slot] = []
        # the same key -> the functions named in it: (starts, [(end, function,
        # svma - avma)]) in address order, for an address in a function
        # already named
        self.functions: dict[tuple[int, str, int], tuple[list[int], list[Any]]] = {}

    @staticmethod
    def applies(samples: SampleSymbolizer) -> bool:
        return samples.filters is None and samples.leaf_filter is None and \
            samples.shard is None

    def forget(self, rtype: int, record: Record, fields: dict[str, Any]) -> None:
        """A record applied to the machine: the names made in the maps it
        may have changed are dropped."""
        pid = fields.get("pid")
        if pid is None or pid <= 0 or pid > 0x7FFFFFFF:
            self.named.clear()
        else:
            self.named.pop(pid, None)

    def _layout(self, ea: EventAttr) -> _Layout | None:
        wanted = self.gathered.event is None or ea.name == self.gathered.event
        ok = (ea.little == (sys.byteorder == "little") and ea.sample_type & ST.IP and
              ea.sample_type & ST.TID and not ea.sample_type & ST.READ and
              not ea.reads_group)
        return _Layout(ea, wanted, len(self.layouts)) if ok else None

    def taker(self) -> Callable[[Record, int], bool]:
        """The hook: take(record, ordinal), true where the sample is
        counted (or not wanted) here.  (A closure: it runs once a sample.)"""
        layouts = self.layouts
        named_by_pid = self.named
        make_layout = self._layout
        name = self._name

        def take(rec: Record, ordinal: int) -> bool:
            ea = rec.attr
            if id(ea) not in layouts:
                layouts[id(ea)] = make_layout(ea) if ea is not None else None
            layout = layouts[id(ea)]
            if layout is None:
                return False
            if not layout.wanted:
                return True
            try:
                ip, pid, tid, period = layout.read(rec.body, layout.ip)
            except struct.error:
                return False        # (a short body: the Python path says what is wrong)
            if pid > 0x7FFFFFFF:
                return False
            named = named_by_pid.get(pid)
            if named is None:
                named = named_by_pid[pid] = {}
            key = (layout.index, rec.misc, ip)
            slot = named.get(key)
            if slot is None:
                slot, cacheable = name(rec, ea, pid, tid, ip)   # type: ignore[arg-type]
                if slot is None:
                    return False
                if cacheable:
                    named[key] = slot
            period = period or 1
            slot.hits += 1
            slot.period += period
            layout.samples += 1
            layout.total += period
            return True
        return take

    def _name(self, rec: Record, ea: EventAttr, pid: int, tid: int, ip: int
              ) -> tuple[_Slot | None, bool]:
        """The slot of the sample's leaf as the Python path names it, and
        whether another sample at its address in this process gets the
        same."""
        samples = self.samples
        thread = samples.machine.thread(pid, tid)
        kernel = rec.misc & MISC_CPUMODE_MASK in KERNEL_MODES
        m = None if kernel else samples.machine.find_map(thread, ip, False)
        key: tuple[int, str, int, int] | None = None
        if m is not None and m.path.startswith("/") and not m.path.startswith("/memfd:"):
            key = (id(ea), m.path, m.start - m.pgoff, ip)
            slot = self.in_binary.get(key)
            if slot is None:
                slot = self._in_known_function(key)
            if slot is not None:
                return slot, True
        try:
            fields = ea.decode_sample(rec.body)
        except Exception:
            return None, False      # (the Python path: it warns, or stops a strict run)
        sample = SymbolizedSample(rec, fields, ea, thread)
        if sample.ip is None:
            return None, False
        f = function_frame(samples.frames_for_address(sample, sample.ip, kernel, False))
        slot = _Slot(self.gathered.slot(ea.name, f))
        self.slots.append(slot)
        if f is not None and f.source in _JIT_SOURCES:
            return slot, False
        if key is not None:
            self.in_binary[key] = slot
            if slot.fs is not None and f is not None:
                self._known_function(key, f, slot.fs)
        return slot, True

    def _in_known_function(self, key: tuple[int, str, int, int]) -> _Slot | None:
        """A slot for an address inside a function of its binary named
        before (within its symbol's size, and the symbol its table finds
        there), without asking the resolver."""
        known = self.functions.get(key[:3])
        if known is None:
            return None
        ip = key[3]
        i = bisect.bisect_right(known[0], ip) - 1
        if i < 0:
            return None
        end, fs, delta, table = known[1][i]
        if ip >= end:
            return None
        sym = table.lookup(ip + delta)
        if sym is None or sym.start != fs.start:
            return None             # (a symbol nested in it: the resolver's to name)
        slot = self.in_binary[key] = _Slot((fs, ip + delta))
        self.slots.append(slot)
        return slot

    def _known_function(self, key: tuple[int, str, int, int], f: StackFrame,
                        fs: FunctionSamples) -> None:
        """Remember the function an address was named in, by its symbol's
        extent (a symbol of no size: not remembered)."""
        table = self.samples.symbolizer.symbol_table(fs.path, fs.build_id) if fs.path else None
        sym = table.lookup(fs.start) if table is not None else None
        if sym is None or sym.start != fs.start or not sym.size or f.avma is None:
            return
        delta = fs.start - (f.svma or 0)
        lo = f.avma + delta                 # (the function's start, as an avma)
        delta = (f.svma or 0) - f.avma
        starts, rest = self.functions.setdefault(key[:3], ([], []))
        i = bisect.bisect_left(starts, lo)
        if i < len(starts) and starts[i] == lo:
            return
        starts.insert(i, lo)
        rest.insert(i, (lo + sym.size, fs, delta, table))

    def done(self) -> None:
        """The counts made here added to the Gathered."""
        gathered = self.gathered
        for layout in self.layouts.values():
            if layout is not None and layout.samples:
                n, p = gathered.totals.get(layout.name, (0, 0))
                gathered.totals[layout.name] = (n + layout.samples, p + layout.total)
        for slot in self.slots:
            fs = slot.fs
            if fs is not None and slot.hits:
                fs.hits[slot.svma] = fs.hits.get(slot.svma, 0) + slot.hits
                fs.period[slot.svma] = fs.period.get(slot.svma, 0) + slot.period
        self.slots = []


def gather(samples: SampleSymbolizer, run: Iterable[SymbolizedSample],
           event: str | None) -> Gathered:
    """The functions of the samples `run` (an iteration of `samples`) hands
    out, the unfiltered ones taken before they are decoded."""
    gathered = Gathered(event)
    stream = samples.stream
    counts = LeafCounts(samples, gathered) if LeafCounts.applies(samples) else None
    before = stream.after_apply
    if counts is not None:
        stream.sample_text = counts.taker()

        def applied(rtype: int, record: Record, fields: dict[str, Any]) -> None:
            counts.forget(rtype, record, fields)
            if before is not None:
                before(rtype, record, fields)
        stream.after_apply = applied
    try:
        for sample in run:
            gathered.add_sample(sample)
    finally:
        stream.sample_text = None
        stream.after_apply = before
    if counts is not None:
        counts.done()
    return gathered
