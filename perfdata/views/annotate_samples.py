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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..core.annotate import LeafLayout, body_fits, compiled_leaves, leaf_layout
from ..format import MISC_CPUMODE_MASK
from ..resolve.frames import KERNEL_MODES
from ..resolve.symbolized import SymbolizedSample

if TYPE_CHECKING:
    from array import array
    from collections.abc import Iterable, Sequence

    from ..core.annotate import CompiledLeaves, MapNamed
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
    # JIT code (path: its jitdump): the code load's index in the dump (an
    # address holds several functions in turn), its addresses the process's
    jit_index: int | None = None

    @property
    def total_hits(self) -> int:
        return sum(self.hits.values())

    @property
    def total_period(self) -> int:
        return sum(self.period.values())


def jit_index_of(samples: SampleSymbolizer, sample: SymbolizedSample,
                 f: StackFrame | None) -> int | None:
    """The index of the code load a jitdump names a leaf frame from (the
    code at the address at the sample's time), or None: not a jitdump's."""
    if f is None or f.source != "jitdump" or f.dso_path is None:
        return None
    return samples.symbolizer.lookup_jitdump(f.dso_path, f.address,
                                             samples.jit_time(sample))[1]


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

    def __init__(self, samples: SampleSymbolizer, event: str | None) -> None:
        self.samples = samples
        self.event = event          # (only this event's samples, where given)
        self.functions: dict[tuple[Any, ...], FunctionSamples] = {}
        self.totals: dict[str, tuple[int, int]] = {}

    def slot(self, event: str, f: StackFrame | None, jit_index: int | None = None
             ) -> tuple[FunctionSamples, int] | None:
        """The function a leaf frame is in and the frame's address there;
        None for a frame in no known function.  jit_index: the code load a
        jitdump's frame is in (jit_index_of)."""
        if jit_index is not None and f is not None and f.offset is not None and \
                f.symbol is not None:
            address = f.address      # (the process's: the code has no other)
        elif f is None or f.symbol is None or f.svma is None or f.offset is None:
            return None
        else:
            address = f.svma
        start = address - f.offset
        key = (event, f.dso_path or f.dso, f.build_id, start, jit_index)
        fs = self.functions.get(key)
        if fs is None:
            fs = self.functions[key] = FunctionSamples(event, f.symbol, f.dso, f.dso_path,
                                                       f.build_id, start, jit_index=jit_index)
        return fs, address

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
        f = function_frame(sample.frames)
        self.add(event, self.slot(event, f, jit_index_of(self.samples, sample, f)),
                 sample.period or 1)


class _Layout:
    """Where an event's sample body holds what LeafCounts reads (core.
    annotate.leaf_layout: the sample's schema, as the compiled counter
    takes it), and the event's samples and period counted there so far."""
    __slots__ = ("name", "wanted", "index", "ip", "read", "fixed_period", "samples", "total",
                 "shape")

    def __init__(self, ea: EventAttr, layout: LeafLayout, wanted: bool, index: int) -> None:
        self.name = ea.name
        self.wanted = wanted
        self.index = index
        self.ip = layout.ip
        self.shape = layout
        self.fixed_period = ea.attr["sample_period"]
        # ip, pid, tid and the period (where the sample has none: the attr's
        # sample_period, as Sample.period) in one unpack from the ip on
        # (the schema's order: ip, pid, tid, period)
        fmt = "<Q%dxI%dxI" % (layout.pid - layout.ip - 8, layout.tid - layout.pid - 4)
        self.read: Callable[[Any, int], tuple[int, ...]]
        if layout.period >= 0:
            fmt += "%dxQ" % (layout.period - layout.tid - 4)
            self.read = struct.Struct(fmt).unpack_from
        else:
            self.read = _no_period(struct.Struct(fmt).unpack_from, self.fixed_period)
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

    def __init__(self, samples: SampleSymbolizer, gathered: Gathered,
                 compiled: CompiledLeaves | None = None) -> None:
        self.samples = samples
        self.gathered = gathered
        # the compiled counter that counts what it can first, or None
        self.compiled = compiled
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
        compiled = self.compiled
        if pid is None or pid <= 0 or pid > 0x7FFFFFFF:
            self.named.clear()
            if compiled is not None:
                compiled.forget_all()
        else:
            self.named.pop(pid, None)
            if compiled is not None:
                compiled.forget(pid)

    def _layout(self, ea: EventAttr) -> _Layout | None:
        wanted = self.gathered.event is None or ea.name == self.gathered.event
        layout = leaf_layout(ea)
        return _Layout(ea, layout, wanted, len(self.layouts)) if layout is not None else None

    def taker(self) -> Callable[[Record, int], bool]:
        """The hook: take(record, ordinal), true where the sample is
        counted (or not wanted) here.  (A closure: it runs once a sample.)"""
        layouts = self.layouts
        named_by_pid = self.named
        make_layout = self._layout
        name = self._name
        compiled = self.compiled
        counted = compiled.consume if compiled is not None else None
        tell = self._tell

        def take(rec: Record, ordinal: int) -> bool:
            if counted is not None and counted(rec):
                return True
            ea = rec.attr
            if id(ea) not in layouts:
                layouts[id(ea)] = make_layout(ea) if ea is not None else None
            layout = layouts[id(ea)]
            if layout is None:
                return False
            if not layout.wanted:
                return True
            if not body_fits(layout.shape, rec.body):
                return False        # (the Python path says what is wrong)
            ip, pid, tid, period = layout.read(rec.body, layout.ip)
            if pid > 0x7FFFFFFF:
                return False
            named = named_by_pid.get(pid)
            if named is None:
                named = named_by_pid[pid] = {}
            key = (layout.index, rec.misc, ip)
            slot = named.get(key)
            if slot is None:
                if counted is not None and tell(rec, pid, tid, ip):
                    return True
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

    def _tell(self, rec: Record, pid: int, tid: int, ip: int) -> bool:
        """Tell the compiled counter the map the sample's ip is in, where it
        names the same functions whenever a sample falls there (a binary
        file's, a kernel map), and have it count the sample: whether it
        did."""
        compiled = self.compiled
        assert compiled is not None
        machine = self.samples.machine
        thread = machine.thread(pid, tid)
        if rec.misc & MISC_CPUMODE_MASK in KERNEL_MODES:
            m = machine.find_map(thread, ip, True)
            told = m is not None and compiled.add_kernel_map(m)
        else:
            m = machine.find_map(thread, ip, False)
            told = m is not None and compiled.add_user_map(pid, m)
        return told and bool(compiled.consume(rec))

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
        slot = _Slot(self.gathered.slot(ea.name, f, jit_index_of(samples, sample, f)))
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
        """The counts made here (and the compiled counter's) added to the
        Gathered."""
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
        compiled = self.compiled
        if compiled is None:
            return
        for ea, samples, total in compiled.totals():
            if samples:
                n, p = gathered.totals.get(ea.name, (0, 0))
                gathered.totals[ea.name] = (n + samples, p + total)
        for ea, named, ips, hits, periods in compiled.groups():
            self._add_map(ea.name, named, ips, hits, periods)

    def _frames(self, named: MapNamed, ip: int) -> Sequence[StackFrame]:
        samples = self.samples
        if named.kernel:
            return samples.frames_in_kernel_map(named.map, ip, False)
        return samples.frames_in_binary(named.map, named.path, named.build_id, ip, False)

    def _add_map(self, event: str, named: MapNamed, ips: array[int], hits: array[int],
                 periods: array[int]) -> None:
        """The compiled counter's counts of one map: each address named as
        the Python path names it, the addresses after it in the same
        function (or in the same gap between two) at once (_run_end)."""
        i, n = 0, len(ips)
        while i < n:
            ip = ips[i]
            f = function_frame(self._frames(named, ip))
            slot = self.gathered.slot(event, f)
            end = self._run_end(named, f, slot, ip)
            j = bisect.bisect_left(ips, end, i + 1) if end > ip + 1 else i + 1
            if slot is not None:
                fs, svma = slot
                delta = svma - ip
                fs_hits, fs_period = fs.hits, fs.period
                for k in range(i, j):
                    a = ips[k] + delta
                    fs_hits[a] = fs_hits.get(a, 0) + hits[k]
                    fs_period[a] = fs_period.get(a, 0) + periods[k]
            i = j

    def _run_end(self, named: MapNamed, f: StackFrame | None,
                 slot: tuple[FunctionSamples, int] | None, ip: int) -> int:
        """Where the addresses from ip on stop being named as ip is (the
        first address that may not be), by the binary's symbol table, as
        _in_known_function trusts it: up to the end of the function ip is
        in, or the next symbol's start where one is nested in it; for an
        address in no function, the start of the next symbol (where the
        table names nothing either, and no DWARF names functions: no inline
        frames asked for).  Within the map, one segment of the binary."""
        if f is None or f.svma is None or named.kernel:
            return ip           # (a kernel address: each named, kallsyms' own search)
        symbolizer = self.samples.symbolizer
        if slot is not None:
            fs = slot[0]
            table = symbolizer.symbol_table(fs.path, fs.build_id) if fs.path else None
            start = fs.start
        elif f.symbol is None and not symbolizer.inline:
            table = symbolizer.symbol_table(named.path, named.build_id)
            if table is None or table.lookup(f.svma) is not None:
                return ip
            start = f.svma
        else:
            return ip
        if table is None:
            return ip
        starts, sizes = table.bounds()
        k = bisect.bisect_right(starts, start) - 1
        if slot is not None:
            if k < 0 or starts[k] != start or not sizes[k]:
                return ip
            end = start + sizes[k]
        else:
            end = 1 << 64
        if k + 1 < len(starts):
            end = min(end, starts[k + 1])
        return min(end - (f.svma - ip), named.map.end)


def gather(samples: SampleSymbolizer, run: Iterable[SymbolizedSample],
           event: str | None) -> Gathered:
    """The functions of the samples `run` (an iteration of `samples`) hands
    out, the unfiltered ones taken before they are decoded: by the compiled
    counter where it is built (core.annotate), else by LeafCounts."""
    gathered = Gathered(samples, event)
    stream = samples.stream
    counts = None
    if LeafCounts.applies(samples):
        counts = LeafCounts(samples, gathered, compiled_leaves(samples, event))
    before = stream.after_apply
    if counts is not None:
        stream.sample_text = counts.taker()
        if counts.compiled is not None:
            counts.compiled.start(counts.done)

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
        if counts is not None and counts.compiled is not None:
            counts.compiled.stop()
    if counts is not None and counts.compiled is None:
        counts.done()
    return gathered
