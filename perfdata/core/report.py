"""The compiled core's driver for `perfdata report`: the histogram entries of
frame-pointer (-g) samples counted by perfdata.core._core, the others added
by the Python path (views/report/histogram.py Report.add), into one Report.

The core walks each sample's callchain as for `perfdata script`
(perfdata/core/script.py says how, and what it hands back) and stops at the
leaf: the first frame the resolver names.  What it keeps of an address is a
number naming the leaf entry's frame as Report takes it (Report._real_frame:
the symbol table's frame, not an inlined function's), made once by the
Python path for each (binary, file offset, is a return address); where a
binary's symbol table alone names its addresses the core searches it
itself (ScriptCore._table): a symbol's number is the frame the Python path
makes there (_name), an address in no symbol is written as the binary and
the file offset (_leaf_of), and every leaf the Python path makes of the
binary is checked against the core's (the table dropped on a difference).
Each sample adds its period to counts[event, cpumode, leaf, and the tid,
cpu and comm where the sort keys read them], whose value also holds the
first such sample's ordinal and thread (an entry's level and thread are
those of the first sample that made it); after the run those counts go
into the Report (Report.add_counted) as the Python path would have added
them one by one, and the entries are put back in the order of the samples
that made them.  A sample without a callchain has its ip for its leaf
(H_IP_LEAF: a body of its schema's fixed size).  The core hands back (the
Python path adds the sample itself) a sample without a leaf, a leaf whose
entry Report makes from more than its frame (an inlined function without
its symbol's frame, a kernel address without a symbol: perf's map-relative
address of a module), a pid_t below 0, a comm UTF-8 cannot carry.  It is
not used with --children, the histogram filters (--pid, --comm, --dsos,
...), or a sharded run.  tests/core/test_core_equality.py requires the same bytes as the
Python path, which stays the reference.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..format import AttrType, LayoutError, SampleType as ST, field
from ..resolve.symbolized import SymbolizedSample
from .script import _HEADER_BITS, ScriptCore

if TYPE_CHECKING:
    import types

    import construct as cs
    from collections.abc import Iterator, Sequence

    from ..format import PerfFile, EventAttr
    from ..resolve.frames import StackFrame
    from ..session.threads import Thread
    from ..resolve.symbolized import SampleSymbolizer
    from .script import Plan

    class Report(Protocol):
        """What the driver fills: the view's histograms (views/report/histogram.py
        Report, handed down by views/report/command.py), read for the
        options that decide whether the core counts, added to a sample or
        a count at a time."""
        order: int

        @property
        def sort_keys(self) -> list[str]: ...

        @property
        def children(self) -> bool: ...

        @property
        def hist_filter(self) -> object | None: ...

        def add(self, sample: SymbolizedSample) -> None: ...

        def add_counted(self, sample: Any, frame: StackFrame, cpumode: int, period: int,
                        samples: int, first: int) -> None: ...

        def sort_by_first(self) -> None: ...


def takes_most_samples(args: Any, pf: PerfFile) -> bool:
    """Whether the compiled core is built and would count a report's
    samples (script.takes_most_samples, but a sample without a callchain
    counts too: its ip is the leaf).  Such a run is one process by
    default."""
    from . import compiled
    if compiled() is None or getattr(args, "unwind", "auto") == "none":
        return False
    dwarf = args.unwind in ("auto", "dwarf") if hasattr(args, "unwind") else True
    sampling = [ea for ea in pf.attrs if ea.attr["type"] != AttrType.TRACEPOINT]
    return bool(sampling) and all(
        (ea.has_callchain or ea.sample_type & ST.IP) and
        not (dwarf and ea.sample_type & ST.REGS_USER and ea.sample_type & ST.STACK_USER)
        for ea in sampling)


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

    # (kernel frames asked for: the kernel's table is the script lines')
    _KERNEL_TABLES = False

    def __init__(self, module: types.ModuleType, samples: SampleSymbolizer,
                 report: Report) -> None:
        self.report = report
        # {key bytes: [period, samples, first ordinal, thread, comm, tid,
        # cpu, cpumode, attr, leaf text]}: the core's (count_report)
        self.counted: dict[bytes, list[Any]] = {}
        # the leaf entries' frames, by the number the core keeps as a text
        self._leaves: list[StackFrame] = []
        self._leaf_number: dict[tuple[Any, ...], int] = {}
        # the leaf frame the Python path made last (_check_table reads it)
        self._last_leaf: StackFrame | None = None
        self._tabling = 0       # the binary whose table is being set
        super().__init__(module, samples, None, 0, self.counted)  # type: ignore[arg-type]

    @staticmethod
    def applies_to(samples: SampleSymbolizer, report: Report) -> bool:
        """Whether the core counts any of the run's samples: no filters, no
        DWARF unwinder, no stitching, one process; no --children and no
        histogram filter."""
        return ScriptCore.applies(samples, None) and not report.children and \
            report.hist_filter is None and samples.shard is None

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
        return self._handed_back()

    def _add_counted(self) -> None:
        """The core's counts into the report, then every histogram's entries
        in the order one pass would have made them."""
        report = self.report
        leaves = self._leaves
        for period, n, first, thread, comm, tid, cpu, cpumode, attr, leaf in \
                self.counted.values():
            frame = leaves[self._leaf_of(leaf)]
            report.add_counted(_Counted(attr, thread, comm, tid, cpu), frame, cpumode,
                               period, n, first)
        report.sort_by_first()

    # ------------------------------------------------------- the answers
    def _plan(self, event: EventAttr) -> Plan | None:
        """The histogram's plan of the event's samples: where their fields
        are; None for what the core does not read."""
        st = event.sample_type
        if event.lbr_call_stack or event.reads_group or st & ST.READ or not st & ST.TID:
            return None
        module = self.module
        flags = module.H_FOLDED | module.H_REPORT | module.H_PLAIN_FRAMES
        if event.has_callchain:
            offsets = self._offsets(event)
        else:
            # (a sample without a callchain: its ip is the leaf, as
            # SampleSymbolizer._symbolize_sample makes its frames)
            flags |= module.H_IP_LEAF
            try:
                offsets = _ip_offsets(event.schema) if st & ST.IP else None
            except LayoutError:
                offsets = None
        if offsets is None:
            return None
        keys = self.report.sort_keys
        # (the sample's fields the entry's key reads: a count a value of them)
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
        self._last_leaf = None
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
        self._last_leaf = frame
        start = frame.address - frame.offset if frame.symbol is not None and \
            frame.offset is not None and frame.address is not None else None
        return self._number(frame, start)

    def _number(self, frame: StackFrame, start: int | None) -> str:
        """One number for the frames Report makes one entry of, whatever
        the sample: what _frame_entry and Entry read of the frame (start:
        its address less its offset in its symbol, or None); the first
        such frame stands for them all."""
        same = (frame.dso, frame.dso_path, frame.symbol, frame.kernel, start is None,
                frame.address if start is None else start)
        number = self._leaf_number.get(same)
        if number is None:
            number = self._leaf_number[same] = len(self._leaves)
            self._leaves.append(frame)
        return "%d" % number

    def _no_map_parts(self, data: bytes, avma: int) -> tuple[bytes, bytes] | None:
        return None     # (a leaf in no map is its address: each one asked)

    # ------------------------------------------------ a binary's symbols
    def _check_table(self, space: int, key: int, is_ret: int, data: bytes) -> None:
        """After the Python path made a leaf of a binary: the
        core is given the binary's symbol table where it alone names the
        binary's addresses (ScriptCore._table), and its number of this
        frame must be the Python path's, else the table is taken back.  (An
        address in no symbol the core writes as the binary and the file
        offset: _leaf_of.)"""
        frame = self._last_leaf
        if frame is None or frame.inlined or frame.kernel:
            return
        if space not in self._tables:
            self._tabling = space       # (for _table_dso)
            self._tables[space] = self._table(space)
        if self._tables[space] is None:
            return
        core = self.core
        got = core.table_text(space, key, is_ret, True)
        while type(got) is tuple:
            self._name(space, *got)
            got = core.table_text(space, key, is_ret, True)
        if got is not None and self._leaf_of(got) != int(data):
            core.drop_table(space)
            self._tables[space] = None

    def _table_dso(self, shown: str) -> str:
        """What the core writes before the file offset (hex) of a leaf in
        no symbol of a tabled binary: "a", the binary's space, ":"."""
        return "a%d:" % self._tabling

    def _leaf_of(self, text: bytes) -> int:
        """The number of the leaf entry's frame the core's text names: a
        number, or an address in no symbol of a tabled binary (_table_dso):
        the frame the Python path makes there (FrameResolver._lookup: the
        file offset printed, the map's path, the binary's path)."""
        if text[:1] != b"a":
            return int(text)
        space, offset = text[1:].split(b":", 1)
        path, bid, shown = self._space_binary[int(space)]
        from ..resolve.frames import StackFrame
        frame = StackFrame(None, int(offset, 16), None, None, shown, path, bid,
                           note="no-symbol")
        return int(self._number(frame, None))

    def _name(self, space: int, index: int, at: int) -> None:
        """The number of the leaf entry's frame of the symbol the core found
        at an address of a binary: the frame the Python path makes there
        (FrameResolver._lookup of Symbolizer.lookup: the map's path, the
        binary's path, the demangled name, its address the file offset,
        less the offset in the symbol), where one load segment alone holds
        the symbol (its offset less its address then the same for every
        address of the symbol); else the Python path's."""
        table = self._tables.get(space)
        sym = table.lookup(at) if table is not None else None
        data = None
        if sym is not None and table is not None:
            starts, sizes = table.bounds()
            if sym.start == starts[index] and sym.size == sizes[index]:
                delta = self._segment_delta(space, sym.start, max(sym.size, 1))
                path, bid, shown = self._space_binary[space]
                if delta is not None:
                    from ..resolve.frames import StackFrame
                    name = self.samples.symbolizer.demangle_name(sym.name)
                    start = sym.start + delta
                    frame = StackFrame(None, start, name, 0, shown, path, bid, kernel=False)
                    data = self._number(frame, start).encode("ascii")
        self.core.set_name(space, index, data, 0)

    def _segment_delta(self, space: int, start: int, size: int) -> int | None:
        """file offset - address of the one load segment whose addresses
        (as ScriptCore._table hands them to the core: from the page below
        the segment's offset to its end) meet [start, start + size); None
        where none or several do."""
        path, bid, _ = self._space_binary[space]
        choice = self.samples.symbolizer.binary_for(path, bid)
        src = choice.binary or choice.debug
        if src is None:
            return None
        found = None
        for s in src.load_segments:
            lo = s.vaddr - (s.offset - (s.offset & ~(s.page - 1)))
            hi = s.vaddr + max(s.memsz, s.filesz)
            if lo < start + size and start < hi:
                if found is not None:
                    return None
                found = s.offset - s.vaddr
        return found


def _ip_offsets(schema: cs.Struct) -> tuple[int, int, int, int, int, int, int]:
    """(pid, tid, time, cpu, period, ip, size) of the schema of a sample
    without a callchain: the offsets of its fields (-1: absent), of the ip,
    and its whole size; every field of fixed size (the core then reads a
    body of exactly that size), each the width the core reads, little-
    endian (the machine's order: ScriptCore.applies checked); LayoutError
    else."""
    names = [sub.name for sub in schema.subcons]
    try:
        size = schema.sizeof()
    except Exception:
        raise LayoutError("a field of no fixed size")
    out = []
    for name, width in (("pid", 4), ("tid", 4), ("time", 8), ("cpu", 4), ("period", 8),
                        ("ip", 8)):
        if name not in names:
            if name == "ip":
                raise LayoutError("no ip")
            out.append(-1)
            continue
        got = field(schema, name)
        sub = schema.subcons[names.index(name)]
        fmt = getattr(getattr(sub, "subcon", sub), "fmtstr", "")
        if got.width != width or not fmt.startswith("<"):
            raise LayoutError("%s: %d bytes %r at %d" % (name, got.width, fmt, got.offset))
        out.append(got.offset)
    return out[0], out[1], out[2], out[3], out[4], out[5], size
