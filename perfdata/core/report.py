"""The compiled core's driver for `perfdata report`: the histogram entries of
frame-pointer (-g) samples counted by perfdata.core._core, the others added
by the Python path (views/report.py Report.add), into one Report.

The core walks each sample's callchain as for `perfdata script`
(perfdata/core/script.py says how, and what it hands back) and stops at the
leaf: the first frame the resolver names.  What it keeps of an address is a
number naming the leaf entry's frame as Report takes it (Report._real_frame:
the symbol table's frame, not an inlined function's), made once by the
Python path for each (binary, file offset, is a return address).  Each
sample adds its period to counts[event, cpumode, leaf, and the tid, cpu
and comm where the sort keys read them], whose value also holds the first
such sample's ordinal and thread (the entry's level and thread are those
of the first sample that made it); after
the run those counts go into the Report (Report.add_counted) as the Python
path would have added them one by one, and the entries are put back in the
order of the samples that made them.  The core hands back (the Python path
adds the sample itself) a sample without a callchain or leaf, a leaf whose
entry Report makes from more than its frame (an inlined function without
its symbol's frame, a kernel address without a symbol: perf's map-relative
address of a module), a pid_t below 0, a comm UTF-8 cannot carry.  It is
not used with --children, the histogram filters (--pid, --comm, --dsos,
...), or a sharded run.  tests/test_core_equality.py requires the same
bytes as the Python path, which stays the reference.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..format.constants import SampleType as ST
from ..session.stream import BuildId
from ..symbolized import SymbolizedSample
from .script import _HEADER_BITS, ScriptCore

if TYPE_CHECKING:
    import types
    from collections.abc import Iterator, Sequence

    from ..format.eventattr import EventAttr
    from ..frames import StackFrame
    from ..session.threads import Thread
    from ..symbolized import SampleSymbolizer
    from ..views.report import Report
    from .script import Plan


class _Counted:
    """What Report.add_counted reads of the samples of one count: their
    event, thread, comm, tid and cpu (a SymbolizedSample's names)."""
    __slots__ = ("event", "thread", "comm", "tid", "cpu")

    def __init__(self, event: EventAttr, thread: Thread, comm: str, tid: int,
                 cpu: int) -> None:
        self.event = event
        self.thread = thread
        self.comm = comm
        self.tid = tid
        self.cpu = cpu


class ReportCore(ScriptCore):
    """Fills a Report: the samples the core counts into its counts, the
    others through Report.add (see `fill`)."""

    def __init__(self, module: types.ModuleType, samples: SampleSymbolizer,
                 report: Report) -> None:
        self.report = report
        # {key bytes: [period, samples, first ordinal, thread, comm, tid,
        # cpu, cpumode, attr, leaf text]}: the core's (count_report)
        self.counted: dict[bytes, list[Any]] = {}
        # the leaf entries' frames, by the number the core keeps as a text
        self._leaves: list[StackFrame] = []
        self._leaf_number: dict[tuple[Any, ...], int] = {}
        super().__init__(module, samples, None, 0, self.counted)  # type: ignore[arg-type]

    @staticmethod
    def applies_to(samples: SampleSymbolizer, report: Report) -> bool:
        """Whether the core counts any of the run's samples: no filters, no
        DWARF unwinder, no stitching, one process; no --children and no
        histogram filter."""
        return ScriptCore.applies(samples, None) and not report.children and \
            report.hist_filter is None and samples.share is None

    def fill(self, items: Iterator[Any] | None = None) -> None:
        """Count every sample of the stream into the report.  items: this
        driver's own iteration wrapped (a progress display), or None."""
        report = self.report
        stream = self.samples.stream
        add = report.add
        try:
            for sample in (self if items is None else items):
                report.order = stream.ordinal
                add(sample)
        finally:
            # (a fault mid-file leaves the report holding the samples
            # before it, as the Python path's)
            self._add_counted()

    def __iter__(self) -> Iterator[SymbolizedSample]:
        samples = self.samples
        stream = samples.stream
        counts = samples.counts
        build_ids = samples.build_ids
        symbolize = samples.symbolize
        stream.sample_text = self.core.consume
        event: Any      # (told apart by its exact type, kind, below)
        try:
            for event in stream:
                kind = type(event)
                if kind is SymbolizedSample:
                    counts["samples"] += 1
                    symbolize(event)
                    yield event
                elif kind is BuildId:
                    build_ids.setdefault(event.path, event.build_id)
        finally:
            stream.sample_text = None
            counts["samples"] += self.core.counts()["made"]
            flush = getattr(samples.symbolizer, "flush", None)
            if flush is not None:
                flush()

    def _add_counted(self) -> None:
        """The core's counts into the report, then every histogram's entries
        in the order one pass would have made them."""
        report = self.report
        leaves = self._leaves
        for period, n, first, thread, comm, tid, cpu, cpumode, attr, leaf in \
                self.counted.values():
            frame = leaves[int(leaf)]
            report.add_counted(_Counted(attr, thread, comm, tid, cpu), frame, cpumode,
                               period, n, first)
        report.sort_by_first()

    # ------------------------------------------------------- the answers
    def _plan(self, event: EventAttr) -> Plan | None:
        """The histogram's plan of the event's samples: where their fields
        are; None for what the core does not read."""
        st = event.sample_type
        if not event.has_callchain or event.lbr_call_stack or event.reads_group or \
                st & ST.READ or not st & ST.TID:
            return None
        offsets = self._offsets(event)
        if offsets is None:
            return None
        module = self.module
        keys = self.report.sort_keys
        # (the sample's fields the entry's key reads: a count a value of them)
        flags = module.H_FOLDED | module.H_REPORT
        if "comm" in keys:
            flags |= _HEADER_BITS["comm"]
        if "pid" in keys:
            flags |= _HEADER_BITS["tid"]        # (perf's pid key is the thread)
        if "cpu" in keys:
            flags |= _HEADER_BITS["cpu"]
        return (flags, b"", None, None) + offsets + (event.attr["sample_period"], 0)

    def _format_of(self, event: EventAttr) -> int:
        return 0        # (one leaf entry a frame a run)

    def _frames_text(self, found: Sequence[StackFrame], event: EventAttr) -> str:
        """The number of the leaf entry's frame of an address's frames (""
        for none: the walk goes on to the next address, as the Python
        path's frames do), or a text UTF-8 cannot carry where Report would
        make the entry from more than the frame: the core then hands the
        sample back."""
        if not found:
            return ""
        frame = found[0]
        if frame.inlined:
            # (Report._real_frame: the symbol's own frame of the address,
            # else it asks the resolver again: the Python path's)
            j = 0
            while j < len(found) and found[j].inlined and found[j].avma == frame.avma:
                j += 1
            if j < len(found) and found[j].avma == frame.avma and not found[j].inlined:
                frame = found[j]
            else:
                return "\udc80"
        if frame.symbol is None and frame.kernel:
            return "\udc80"     # (Report._entry_address reads the thread's kernel maps)
        # (one number for the frames Report makes one entry of, whatever
        # the sample: what _frame_entry and Entry read of the frame; the
        # first such frame stands for them all)
        start = frame.address - frame.offset if frame.symbol is not None and \
            frame.offset is not None and frame.address is not None else None
        same = (frame.dso, frame.dso_path, frame.symbol, frame.kernel, frame.offset is None,
                frame.address if start is None else start)
        number = self._leaf_number.get(same)
        if number is None:
            number = self._leaf_number[same] = len(self._leaves)
            self._leaves.append(frame)
        return "%d" % number

    def _no_map_parts(self, data: bytes, avma: int) -> tuple[bytes, bytes] | None:
        return None     # (a leaf in no map is its address: each one asked)

    def _check_table(self, space: int, key: int, is_ret: int, data: bytes) -> None:
        return None     # (the core's symbol tables make script's lines, not these)
