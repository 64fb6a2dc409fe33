"""Samples with symbolized stacks: the layer that joins the session's maps to
`symbolize/`.

perfdata.format gives records, perfdata.session the threads and maps at each
moment; this module walks a file in perf's time order, keeps the session up to
date and turns each SAMPLE into a `SymbolizedSample` whose frames carry the
address, the symbol, the offset, the dso, the build-id, inlined frames and
source lines.  Views (script, folded stacks, reports) format these.
"""
from symbolize import DebugInfoLocator, Symbolizer

from .format.constants import (CallchainContext as CC, Feature, MISC_COMM_EXEC,
                               MISC_CPUMODE_MASK, RecordType as RT, SampleType as ST)
from .format.errors import PerfDataError
from .frames import DEFAULT_MAX_STACK, KERNEL_MODES, FrameResolver, with_avma
from .session.machine import KERNEL_DSO, Machine

SESSION_TYPES = (RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2, RT.KSYMBOL)
LOST_SAMPLES = RT.LOST_SAMPLES
MISC_LOST_SAMPLES_BPF = 1 << 15     # samples a BPF filter dropped: perf does not count them
# Side events whose thread is the one the record names; the others' is the
# one of their sample_id (perf script's print_event() arguments).
_OWN_THREAD_TYPES = frozenset((RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2, RT.NAMESPACES))


class SymbolizedSample:
    __slots__ = ("record", "fields", "event", "thread", "comm", "pid", "tid", "time", "cpu",
                 "period", "ip", "frames", "stop_reason", "cpumode", "unwind")

    def __init__(self, record, fields, event, thread):
        get = fields.get
        self.record = record
        self.fields = fields
        self.event = event
        self.thread = thread
        self.comm = thread.comm if thread is not None else ":-1"
        self.pid = get("pid", -1)
        self.tid = get("tid", -1)
        self.time = get("time", 0)
        self.cpu = get("cpu")
        # Without PERIOD in sample_type perf reports the attr's sample_period.
        period = get("period")
        self.period = event.attr["sample_period"] if period is None else period
        self.ip = get("ip")
        self.cpumode = record.misc & MISC_CPUMODE_MASK
        self.frames = []
        self.stop_reason = None
        self.unwind = None              # the UnwindResult of a DWARF sample


class SideEvent:
    """A non-sample record the caller asked to see, with the thread it
    concerns (after the record is applied, except EXIT; None where perf has
    none: a sample_id without a tid, FINISHED_ROUND)."""
    __slots__ = ("record", "fields", "thread")

    def __init__(self, record, fields, thread):
        self.record = record
        self.fields = fields
        self.thread = thread


class SampleSymbolizer:
    """Iterate over the symbolized samples of an open PerfFile."""

    def __init__(self, pf, symbolizer=None, max_stack=DEFAULT_MAX_STACK, inline=True,
                 demangle=True, unwind="auto", filters=None, dwarf_inline=True,
                 side_events=(), strict=False, leaf_filter=None, side_cpus=None,
                 order="time", stitch=False, stitch_lookahead=None, share=None):
        self.pf = pf
        # share: (block, jobs, index) for one of `jobs` workers of a sharded
        # run: only the samples of blocks index, index + jobs, ... (blocks of
        # `block` SAMPLE records in delivery order) are decoded, symbolized
        # and handed out, and the side events that fall in those blocks; the
        # session (threads, maps) still follows every record.
        self.share = share
        self.ordinal = 0        # SAMPLE records seen so far (with share)
        self.symbolizer = symbolizer or Symbolizer(DebugInfoLocator(), demangle=demangle,
                                                   inline=inline)
        self.machine = Machine()
        self.max_stack = max_stack
        self.unwind = unwind
        # filters(sample) before symbolizing; leaf_filter(sample, frames of
        # its ip) after resolving the ip only (perf's -S, --dsos).
        self.filters = filters
        self.leaf_filter = leaf_filter
        # perf's filter_cpu() on side events too; the record order ('file'
        # for --show-round-events, where perf does not sort).
        self.side_cpus = side_cpus
        self.order = order
        self.build_ids = {}
        self._read_values = {}
        self.counts = {"samples": 0, "frames": 0}
        # perf's "Total Lost Samples": the LOST_SAMPLES records' counts seen
        # so far (not LOST, which perf counts apart; not those a BPF filter
        # dropped), so a report needs no second pass over the file.
        self.lost_samples = 0
        self.dwarf_inline = dwarf_inline
        # Record types to hand out too, as SideEvent (--show-mmap-events ...).
        self.side_events = frozenset(side_events)
        # strict: a sample that does not decode ends the run instead of being skipped.
        self.strict = strict
        self._load_build_ids()
        self.resolver = FrameResolver(self.machine, self.symbolizer, self.build_ids,
                                      pf.warnings, lambda: _recorded_release(pf), max_stack,
                                      dwarf_inline, self.counts)
        self.unwinder = None
        if unwind in ("auto", "dwarf") and any(
                ea.sample_type & ST.REGS_USER and ea.sample_type & ST.STACK_USER
                for ea in pf.attrs):
            from .unwinding import SampleUnwinder
            arch = "x86_64"
            try:
                arch = pf.feature(Feature.ARCH) or arch
            except PerfDataError:
                pass
            try:
                self.unwinder = SampleUnwinder(self.symbolizer, arch, max_stack)
            except (KeyError, ValueError):
                pf.warnings.append("no unwinder for architecture %s" % arch)
        # --stitch: DWARF stacks cut by the snapshot completed from the
        # thread's other samples (a no-op without DWARF samples).
        self.stitcher = None
        if stitch and self.unwinder is not None:
            from .stitch import DEFAULT_LOOKAHEAD, StackStitcher
            self.stitcher = StackStitcher(self._finish_stitched,
                                          stitch_lookahead or DEFAULT_LOOKAHEAD)

    def _load_build_ids(self):
        """The build-ids the recording lists (BUILD_ID feature or pipe-mode
        records), perf's kernel entry also under [kernel.kallsyms]."""
        for name, bid in self.pf.recorded_build_ids().items():
            self.build_ids.setdefault(name, bid)
            if name.startswith(KERNEL_DSO):
                self.build_ids.setdefault(KERNEL_DSO, bid)

    # ------------------------------------------------------------ iteration
    def __iter__(self):
        try:
            if self.stitcher is not None:
                yield from self._stitched(self._samples())
            else:
                yield from self._samples()
        finally:
            # What the symbolizer learnt that outlives the run (inline names).
            flush = getattr(self.symbolizer, "flush", None)
            if flush is not None:
                flush()

    def _samples(self):
        machine = self.machine
        pf = self.pf
        pf.resolve_event_names()
        counts = self.counts
        filters = self.filters
        leaf_filter = self.leaf_filter
        leaf_frames = self.resolver.leaf_frames
        symbolize = self._symbolize_sample
        thread_of = machine.thread
        sample_type = RT.SAMPLE
        side_events = self.side_events
        share = self.share
        if share is not None:
            block, jobs, index = share

            def mine():         # does the current block belong to this worker?
                return self.ordinal // block % jobs == index
        for rec in pf.records(self.order):
            rtype = rec.type
            if rtype == sample_type:
                if share is not None:
                    ours = mine()
                    self.ordinal += 1
                    if not ours:
                        continue
                ea = rec.attr
                try:
                    fields = ea.decode_sample(rec.body)
                except Exception:
                    try:
                        fields = rec.parse()      # the reader's error, with the offset
                    except PerfDataError as exc:
                        if self.strict:
                            raise
                        # One damaged sample: say where, and go on with the others.
                        pf.warnings.append("%s (sample skipped)" % exc)
                        counts["samples_skipped"] = counts.get("samples_skipped", 0) + 1
                        continue
                thread = thread_of(fields.get("pid", -1), fields.get("tid", -1))
                if ea.reads_group:
                    for sample in self._expand_group(rec, fields, thread):
                        if filters is not None and not filters(sample):
                            self._left_out(sample)
                            continue
                        if leaf_filter is not None and not leaf_filter(sample,
                                                                       leaf_frames(sample)):
                            self._left_out(sample)
                            continue
                        symbolize(sample)
                        counts["samples"] += 1
                        yield sample
                    continue
                sample = SymbolizedSample(rec, fields, ea, thread)
                if filters is not None and not filters(sample):
                    self._left_out(sample)
                    continue
                if leaf_filter is not None and not leaf_filter(sample, leaf_frames(sample)):
                    self._left_out(sample)
                    continue
                symbolize(sample)
                counts["samples"] += 1
                yield sample
                continue
            if rtype == LOST_SAMPLES and not rec.misc & MISC_LOST_SAMPLES_BPF:
                try:
                    self.lost_samples += rec.parse().get("lost", 0) or 0
                except PerfDataError as exc:
                    pf.warnings.append(str(exc))
            if rtype in SESSION_TYPES:
                try:
                    fields = rec.parse()
                except PerfDataError as exc:
                    pf.warnings.append(str(exc))
                    continue
                if rtype == RT.MMAP2 and fields.get("build_id"):
                    self.build_ids.setdefault(fields["filename"], fields["build_id"])
                shown = rtype in side_events and self._side_cpu_ok(rec, fields)
                if shown and share is not None:
                    shown = mine()
                if shown and rtype == RT.EXIT:
                    # perf prints an EXIT before processing it.
                    yield SideEvent(rec, fields, self._side_thread(rtype, fields))
                machine.apply(rtype, fields, rec.misc, rec.time or 0)
                if self.stitcher is not None and (
                        rtype in (RT.EXIT, RT.FORK) or
                        (rtype == RT.COMM and rec.misc & MISC_COMM_EXEC)):
                    # A stack is never stitched across an exit or an exec (a
                    # FORK's tid may be a reused one: start it afresh too).
                    self.stitcher.end_thread((fields.get("pid"), fields.get("tid")))
                if shown and rtype != RT.EXIT:
                    yield SideEvent(rec, fields, self._side_thread(rtype, fields))
                continue
            if rtype in side_events:
                try:
                    fields = rec.parse()
                except PerfDataError as exc:
                    pf.warnings.append(str(exc))
                    continue
                if share is not None and not mine():
                    continue
                if rtype >= RT.HEADER_ATTR:     # perf's own: FINISHED_ROUND, ...
                    yield SideEvent(rec, fields, None)
                elif self._side_cpu_ok(rec, fields):
                    yield SideEvent(rec, fields, self._side_thread(rtype, fields))
                continue
            if rtype == RT.HEADER_BUILD_ID:
                self._load_build_ids()

    def _side_thread(self, rtype, fields):
        """The thread perf script's print_event() names: the record's own
        pid/tid, or its sample_id's (none without a tid)."""
        if rtype in _OWN_THREAD_TYPES:
            return self.machine.thread(fields["pid"], fields["tid"])
        sid = fields.get("sample_id") or {}
        tid = sid.get("tid", -1)
        if tid in (-1, 0xffffffff):
            return None
        return self.machine.thread(sid.get("pid", -1), tid)

    def _side_cpu_ok(self, rec, fields):
        """perf's filter_cpu() for a side event: its sample_id's cpu (0
        without sample_id_all; none, which passes, without PERF_SAMPLE_CPU)."""
        cpus = self.side_cpus
        if cpus is None:
            return True
        ea = rec.attr
        if ea is not None and not ea.sample_id_all:
            cpu = 0
        else:
            cpu = (fields.get("sample_id") or {}).get("cpu")
        return cpu is None or cpu in cpus

    # ------------------------------------------------ frames (the resolver's)
    def leaf_frames(self, sample):
        """The frames of the sample's own ip (what -S, --dsos look at)."""
        return self.resolver.leaf_frames(sample)

    def frames_for_address(self, sample, avma, kernel, is_return_address):
        return self.resolver.frames_for_address(sample, avma, kernel, is_return_address)

    def frames_for_callchain(self, sample, ips):
        return self.resolver.frames_for_callchain(sample, ips)

    def dso_of(self, m):
        """(path to look the binary up by, build-id) for a map."""
        return self.resolver.dso_of(m)

    def kernel_symbols(self):
        """The kallsyms table of the profiled kernel, or None."""
        return self.resolver.kernel_symbols()

    def _expand_group(self, rec, fields, thread):
        """A sample that reads a whole group stands for one sample per member
        (perf's deliver_sample_group)."""
        read = fields.get("read") or {}
        out = []
        for value in read.get("values", ()):
            ident = value.get("id")
            member = self.pf.id_to_attr.get(ident)
            if member is None:
                continue
            sample = SymbolizedSample(rec, dict(fields), member, thread)
            # The period of each member is its counter's growth since the
            # last sample (perf's deliver_sample_value).
            last = self._read_values.get(ident, 0)
            sample.period = value["value"] - last
            self._read_values[ident] = value["value"]
            out.append(sample)
        return out

    # -------------------------------------------------------- symbolization
    def _symbolize_sample(self, sample):
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

    def _symbolize_dwarf(self, sample, chain):
        """Kernel part of the recorded callchain, then the user stack unwound
        from REGS_USER and STACK_USER, printed as perf does: callers at their
        return address - 1, with DWARF inline chains."""
        resolver = self.resolver
        result = self.unwinder.unwind(sample, resolver.dso_of)
        if result is None or not result.frames:
            return False
        kernel_frames = ()
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
            self.unwinder.counts["ip_mismatch"] += 1
            user[0] = sample.ip
        exact = tuple(result.exact_ip_frames)
        sample.frames = resolver.dwarf_stack(sample, kernel_frames, user, exact)
        sample.stop_reason = result.stop_reason
        sample.unwind = result
        return True

    # ------------------------------------------------------------ stitching
    def _stitched(self, items):
        """The items with cut stacks completed, in the same order (a cut
        sample is held back, with what follows it, until a later sample of
        its thread completes it or the look-ahead is full)."""
        stitcher = self.stitcher
        for item in items:
            if type(item) is SymbolizedSample:
                stitcher.add_sample(item, (item.pid, item.tid), self._user_stack(item),
                                    item.stop_reason)
            else:
                stitcher.add_other(item)
            yield from stitcher.ready()
        stitcher.close()
        yield from stitcher.ready()

    def _user_stack(self, sample, result=None):
        """The stitcher's view of a sample's unwound user stack (None: no
        view; also without a tid, as the thread would not be known)."""
        from .stitch import BOTTOM_REASONS, UserStack
        result = result or sample.unwind
        if result is None or result.sp is None or sample.tid in (-1, None):
            return None
        return UserStack(result.frames[:self.max_stack], result.cfas, result.sp,
                         result.exact_ip_frames, result.stop_reason in BOTTOM_REASONS)

    def _left_out(self, sample):
        """A sample the filters leave out still tells the stitcher where its
        thread's stack was (a return past a frame, in particular)."""
        if self.stitcher is None or "regs_user" not in sample.fields:
            return
        result = self.unwinder.unwind(sample, self.resolver.dso_of)
        if result is not None and result.frames:
            self.stitcher.add_sample(sample, (sample.pid, sample.tid),
                                     self._user_stack(sample, result), result.stop_reason,
                                     shown=False)

    def _finish_stitched(self, sample, stack):
        """A cut sample completed: its frames, then the stitched ones (each
        marked), up to --max-stack user frames."""
        extra = stack.pcs[stack.own:self.max_stack]
        frames = list(sample.frames)
        for index, avma in enumerate(extra, stack.own):
            for f in self.resolver.dwarf_frames(sample, avma, index not in stack.exact):
                f = with_avma(f, f.avma)
                f.stitched = True
                frames.append(f)
        sample.frames = frames


def _recorded_release(pf):
    """The uname -r the file was recorded on (HEADER_OSRELEASE), or None."""
    try:
        return pf.feature(Feature.OSRELEASE)
    except PerfDataError:
        return None
