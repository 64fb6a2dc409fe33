"""Samples with symbolized stacks: the layer that joins the session's maps to
`symbolize/`.

perfdata.session's SessionStream walks a file in perf's time order, keeps the
session up to date and hands out typed events; this module turns each sample
into a `SymbolizedSample` whose frames carry the address, the symbol, the
offset, the dso, the build-id, inlined frames and source lines.  Views
(script, folded stacks, reports) format these.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from symbolize import DebugInfoLocator, Symbolizer

from ..format.constants import (CallchainContext as CC, Feature, MISC_COMM_EXEC,
                               RecordType as RT, SampleType as ST)
from ..format.errors import PerfDataError
from .dsos import RecordedBinaries
from .frames import DEFAULT_MAX_STACK, KERNEL_MODES, FrameResolver
from ..session.stream import (BuildId, Sample, SessionStream, SideEvent,
                             recorded_build_id_choices, recorded_build_ids)

if TYPE_CHECKING:
    import types
    from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

    from symbolize import KernelSymbols
    from symbolize.unwind.unwinder import UnwindResult

    from ..format.container import PerfFile
    from ..format.decoder import Record
    from ..format.eventattr import EventAttr
    from .frames import StackFrame
    from ..session.maps import Map
    from ..session.threads import Thread
    from . import unwinding
    from .stitch import StackStitcher, UserStack


# (bound once: a sample is built per SAMPLE record, and reading Sample.__init__
# through the class each time is a lookup per sample)
_init_sample = Sample.__init__


class SymbolizedSample(Sample):
    """A Sample with its stack: frames (leaf first), and for a DWARF sample
    why the unwind stopped and the UnwindResult."""
    __slots__ = ("frames", "stop_reason", "unwind")

    def __init__(self, record: Record, fields: dict[str, Any], event: EventAttr,
                 thread: Thread | None) -> None:
        _init_sample(self, record, fields, event, thread)
        self.frames: Sequence[StackFrame] = []
        self.stop_reason: str | None = None
        self.unwind: UnwindResult | None = None


@dataclass(frozen=True, slots=True)
class StackOptions:
    """How a sample's stack is walked and named."""
    max_stack: int = DEFAULT_MAX_STACK  # frames per stack (perf's --max-stack)
    # user stacks: auto (dwarf where the samples carry REGS_USER and
    # STACK_USER, else the recorded callchain), dwarf, fp, none (the ip only)
    unwind: str = "auto"
    dwarf_inline: bool = True           # inline chains from DWARF (--no-inline: False)
    stitch: bool = False                # --stitch (see stitch.py)
    stitch_lookahead: int | None = None  # None: stitch.DEFAULT_LOOKAHEAD
    # perfdata.core._unwind: the DWARF walk's common step in C (None: Python's)
    compiled_unwind: types.ModuleType | None = None


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """What the session stream hands out, and in which order (see
    SessionStream): the side events asked for beside the samples (record
    types) and the cpus they are kept for (-C; None: all); perf's time
    order or the file's ("file"); strict: stop at the first fault."""
    side_events: frozenset[int] = frozenset()
    side_cpus: Collection[int] | None = None
    order: str = "time"
    strict: bool = False


class SampleSymbolizer:
    """Iterate over the symbolized samples of an open PerfFile (and the side
    events asked for, as SideEvent): the consumer of its SessionStream that
    filters, symbolizes and stitches; what the stream says of lost samples
    and build-ids is kept in lost_samples and build_ids.  filters(sample)
    is asked before symbolizing, leaf_filter(sample, frames of its ip)
    after resolving the ip only (perf's -S, --dsos); shard: (block, jobs,
    index) of a sharded run's worker."""

    def __init__(self, pf: PerfFile, symbolizer: Symbolizer | None = None,
                 stacks: StackOptions = StackOptions(), stream: StreamOptions = StreamOptions(),
                 filters: Callable[[SymbolizedSample], bool] | None = None,
                 leaf_filter: Callable[[SymbolizedSample, Sequence[StackFrame]], bool]
                 | None = None,
                 shard: tuple[int, int, int] | None = None) -> None:
        self.pf = pf
        # the session (threads, maps) follows every record
        self.stream = SessionStream(pf, stream.side_events, stream.side_cpus, stream.order,
                                    stream.strict, shard, sample_class=SymbolizedSample)
        self.machine = self.stream.machine
        self.symbolizer = symbolizer or Symbolizer(DebugInfoLocator())
        max_stack = self.max_stack = stacks.max_stack
        unwind = self.unwind = stacks.unwind
        self.filters = filters
        self.leaf_filter = leaf_filter
        # {path: build-id}: the recording's table, then those the records
        # name as they stream by (the resolver looks binaries up by it).
        self.build_ids = recorded_build_ids(pf)
        self.counts = {"samples": 0, "frames": 0}
        self.dwarf_inline = stacks.dwarf_inline
        recorded = RecordedBinaries(self.build_ids, recorded_build_id_choices(pf),
                                    lambda: _recorded_release(pf))
        self.resolver = FrameResolver(self.machine, self.symbolizer, recorded, pf.warnings,
                                      max_stack, stacks.dwarf_inline, self.counts)
        self.unwinder: unwinding.SampleUnwinder | None = None
        if unwinds_by_dwarf(pf, unwind):
            from .unwinding import SampleUnwinder
            arch = "x86_64"
            try:
                arch = pf.feature(Feature.ARCH) or arch
            except PerfDataError:
                pass
            try:
                self.unwinder = SampleUnwinder(self.symbolizer, arch, max_stack,
                                               stacks.compiled_unwind)
            except (KeyError, ValueError):
                pf.warnings.append("no unwinder for architecture %s" % arch)
        # --stitch: DWARF stacks cut by the snapshot completed from the
        # thread's other samples (a no-op without DWARF samples).
        self.stitcher: StackStitcher | None = None
        # (see let_go_of_stack_copies)
        self._stack_copies_kept = True
        if stacks.stitch and self.unwinder is not None:
            # (imported here: a run without --stitch never needs the module)
            from .stitch import DEFAULT_LOOKAHEAD, StackStitcher, UserStack
            self._stack_view = UserStack.of_unwind
            self.stitcher = StackStitcher(self._finish_stitched,
                                          stacks.stitch_lookahead or DEFAULT_LOOKAHEAD)
            self.stream.after_apply = self._thread_restarts

    def let_go_of_stack_copies(self) -> None:
        """With a stitcher: a sample once unwound keeps neither its
        record's body nor its stack copy (fields["stack_user"]["data"]
        None; size and dyn_size stay), for a caller that reads its fields
        and frames only (script's text).  The look-ahead holds 4,096 items
        behind a cut sample: their records' bytes, most of them the stack
        copy, made a third of the run's memory and missed the cache."""
        self._stack_copies_kept = False

    @property
    def lost_samples(self) -> int:
        """perf's "Total Lost Samples": the LOST_SAMPLES records' counts seen
        so far (not LOST, which perf counts apart), so a report needs no
        second pass over the file (the stream counts them)."""
        return self.stream.lost_samples

    @property
    def ordinal(self) -> int:
        """SAMPLE records seen so far (in a sharded run, see SessionStream)."""
        return self.stream.ordinal

    @property
    def shard(self) -> tuple[int, int, int] | None:
        """(block, jobs, index) of a sharded run's worker, else None."""
        return self.stream.shard

    # ------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[SymbolizedSample | SideEvent]:
        try:
            yield from self._samples()
        finally:
            # What the symbolizer learnt that outlives the run (inline names).
            flush = getattr(self.symbolizer, "flush", None)
            if flush is not None:
                flush()

    def _samples(self) -> Iterator[SymbolizedSample | SideEvent]:
        """The stream's samples filtered and symbolized, its side events as
        they come; its build-ids kept.  With a stitcher, the items with cut
        stacks completed, in the same order (a cut sample is held back,
        with what follows it, until a later sample of its thread completes
        it or the look-ahead is full): in this loop, not a generator of its
        own around it, which cost every sample a resumption more."""
        counts = self.counts
        filters = self.filters
        leaf_filter = self.leaf_filter
        leaf_frames = self.resolver.leaf_frames
        symbolize = self._symbolize_sample
        build_ids = self.build_ids
        stitcher = self.stitcher
        if stitcher is not None:
            take_sample, user_stack, ready = stitcher.take_sample, self._user_stack, stitcher.ready
        event: Any      # (told apart by its exact type, kind, below)
        for event in self.stream:
            kind = type(event)
            if kind is SymbolizedSample:
                if filters is not None and not filters(event):
                    self._left_out(event)
                    continue
                if leaf_filter is not None and not leaf_filter(event, leaf_frames(event)):
                    self._left_out(event)
                    continue
                symbolize(event)
                counts["samples"] += 1
                if stitcher is None:
                    yield event
                    continue
                stack = user_stack(event)
                if not self._stack_copies_kept:
                    _let_go_of_stack_copy(event)
                if take_sample(event, (event.pid, event.tid), stack, event.stop_reason):
                    yield event     # (nothing held it back)
                else:
                    yield from ready()
            elif kind is SideEvent:
                if stitcher is None:
                    yield event
                else:
                    stitcher.add_other(event)
                    yield from ready()
            elif kind is BuildId:
                build_ids.setdefault(event.path, event.build_id)
        if stitcher is not None:
            stitcher.close()
            yield from ready()

    def _thread_restarts(self, rtype: int, record: Record, fields: dict[str, Any]) -> None:
        """A stack is never stitched across an exit or an exec (a FORK's tid
        may be a reused one: start it afresh too)."""
        if rtype in (RT.EXIT, RT.FORK) or (rtype == RT.COMM and record.misc & MISC_COMM_EXEC):
            # (after_apply is set to this only with a stitcher)
            self.stitcher.end_thread((fields.get("pid"), fields.get("tid")))  # type: ignore[union-attr]

    # ------------------------------------------------ frames (the resolver's)
    def frames_for_address(self, sample: Sample, avma: int, kernel: bool,
                           is_return_address: bool) -> Sequence[StackFrame]:
        return self.resolver.frames_for_address(sample, avma, kernel, is_return_address)

    def frames_in_binary(self, m: Map, path: str, bid: str | None, avma: int,
                         is_return_address: bool) -> Sequence[StackFrame]:
        """The frames of an address in a process's map of a binary file, no
        JIT's, (path, bid) its dso_of(m), without the sample."""
        return self.resolver.frames_in_binary(m, path, bid, avma, is_return_address)

    def frames_in_kernel_map(self, m: Map, avma: int, is_return_address: bool
                             ) -> Sequence[StackFrame]:
        """The frames of a kernel address in one of the kernel's maps."""
        return self.resolver.frames_in_kernel_map(m, avma, is_return_address)

    def jit_time(self, sample: Sample) -> int | None:
        """The sample's time on a jitdump's clock (what lookup_jitdump
        takes), or None where the recording's clock is another."""
        return self.resolver.jit.jit_time(sample)

    def leaf_frames(self, sample: Sample) -> Sequence[StackFrame]:
        """The frames of the sample's own ip (what -S and --dsos look at)."""
        return self.resolver.leaf_frames(sample)

    def data_frame(self, sample: Sample, addr: int) -> StackFrame:
        """The map and symbol of a sample's data address (a page fault's:
        what `-F addr,sym,dso` prints), data objects included."""
        return self.resolver.data_frame(sample, addr)

    def dso_of(self, m: Map) -> tuple[str, str | None]:
        """(path to look the binary up by, build-id) for a map."""
        return self.resolver.dso_of(m)

    def kernel_symbols(self) -> KernelSymbols | None:
        """The kallsyms table of the profiled kernel, or None."""
        return self.resolver.kernel_symbols()

    # -------------------------------------------------------- symbolization
    def symbolize(self, sample: SymbolizedSample) -> None:
        """Give a sample of the stream its frames (what iterating does to
        each; for a caller that walks `stream` itself: the compiled core)."""
        self._symbolize_sample(sample)

    def _symbolize_sample(self, sample: SymbolizedSample) -> None:
        resolver = self.resolver
        fields = sample.fields
        chain = fields.get("callchain")
        if self.unwinder is not None and "regs_user" in fields:
            if self._symbolize_dwarf(sample, chain):
                return
        if self.unwind == "none":
            if sample.ip is not None:
                kernel = sample.cpumode in KERNEL_MODES
                sample.frames = resolver.frames_for_address(sample, sample.ip, kernel, False)
            return
        ips = chain["ips"] if chain is not None else None
        if ips:
            if sample.event.lbr_call_stack and fields.get("branch_stack"):
                lbr = resolver.lbr_frames(sample, ips, fields["branch_stack"]["entries"])
                if lbr is not None:
                    sample.frames = lbr
                    return
            sample.frames = resolver.frames_for_callchain(sample, ips)
        elif sample.ip is not None:
            kernel = sample.cpumode in KERNEL_MODES
            sample.frames = resolver.frames_for_address(sample, sample.ip, kernel, False)

    def _symbolize_dwarf(self, sample: SymbolizedSample, chain: dict[str, Any] | None) -> bool:
        """Kernel part of the recorded callchain, then the user stack unwound
        from REGS_USER and STACK_USER, printed as perf does: callers at their
        return address - 1, with DWARF inline chains."""
        resolver = self.resolver
        # (called only with an unwinder)
        result = self.unwinder.unwind(  # type: ignore[union-attr]
            sample, resolver.dso_of, resolver.jit.jit_unwind_table(sample),
            resolver.jit.memfd_is_jit(sample))
        if result is None or not result.frames:
            return False
        kernel_frames: Sequence[StackFrame] = ()
        ips = chain.get("ips") if chain else None
        if ips:
            kernel_part = []
            for ip in ips:
                if ip == CC.USER:
                    break
                kernel_part.append(ip)
            if any(ip < CC.MAX for ip in kernel_part):
                kernel_frames = resolver.frames_for_callchain(sample, kernel_part)
        user = result.frames[:self.max_stack]
        kernel_sample = sample.cpumode in KERNEL_MODES
        if not kernel_sample and sample.ip is not None and user[0] != sample.ip:
            # precise_ip skid: the hardware's ip is the leaf we print, the
            # unwind itself started from the consistent REGS_USER pair.
            self.unwinder.counts["ip_mismatch"] += 1  # type: ignore[union-attr]  # (as above)
            user[0] = sample.ip
        exact = tuple(result.exact_ip_frames)
        sample.frames = resolver.dwarf_stack(sample, kernel_frames, user, exact)
        sample.stop_reason = result.stop_reason
        sample.unwind = result
        return True

    # ------------------------------------------------------------ stitching
    def _user_stack(self, sample: SymbolizedSample, result: UnwindResult | None = None
                    ) -> UserStack | None:
        """The stitcher's view of a sample's unwound user stack (None: no
        view; also without a tid, as the thread would not be known)."""
        result = result or sample.unwind
        if result is None or result.sp is None or sample.tid in (-1, None):
            return None
        return self._stack_view(result, self.max_stack)

    def _left_out(self, sample: SymbolizedSample) -> None:
        """A sample the filters leave out still tells the stitcher where its
        thread's stack was (a return past a frame, in particular)."""
        if self.stitcher is None or "regs_user" not in sample.fields:
            return
        # (a stitcher is made only with an unwinder)
        result = self.unwinder.unwind(  # type: ignore[union-attr]
            sample, self.resolver.dso_of, self.resolver.jit.jit_unwind_table(sample),
            self.resolver.jit.memfd_is_jit(sample))
        if result is not None and result.frames:
            self.stitcher.add_sample(sample, (sample.pid, sample.tid),
                                     self._user_stack(sample, result), result.stop_reason,
                                     shown=False)

    def _finish_stitched(self, sample: SymbolizedSample, stack: UserStack) -> None:
        """A cut sample completed: its frames, then the stitched ones (each
        marked), up to --max-stack user frames."""
        own, exact = stack.own, stack.exact
        tail = tuple(stack.pcs[own:self.max_stack])
        # (each a return address, but those after a signal frame)
        returns = tuple(index not in exact for index in range(own, own + len(tail))) \
            if exact and max(exact) >= own else (True,) * len(tail)
        sample.frames = self.resolver.stitched_stack(sample, sample.frames, tail, returns)


def unwinds_by_dwarf(pf: PerfFile, unwind: str) -> bool:
    """Whether a run unwinds user stacks by DWARF: --unwind auto or dwarf,
    and an event that records the user registers and stack
    (--call-graph=dwarf; a tracepoint's samples too)."""
    return unwind in ("auto", "dwarf") and any(
        ea.sample_type & ST.REGS_USER and ea.sample_type & ST.STACK_USER for ea in pf.attrs)


def _let_go_of_stack_copy(sample: SymbolizedSample) -> None:
    """(SampleSymbolizer.let_go_of_stack_copies)"""
    sample.record.body = b""
    stack = sample.fields.get("stack_user")
    if stack is not None:
        stack["data"] = None


def _recorded_release(pf: PerfFile) -> str | None:
    """The uname -r the file was recorded on (HEADER_OSRELEASE), or None."""
    try:
        return pf.feature(Feature.OSRELEASE)
    except PerfDataError:
        return None
