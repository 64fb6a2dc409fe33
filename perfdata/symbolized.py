"""Samples with symbolized stacks: the layer that joins the session's maps to
`symbolize/`.

perfdata.format gives records, perfdata.session the threads and maps at each
moment; this module walks a file in perf's time order, keeps the session up to
date and turns each SAMPLE into a `SymbolizedSample` whose frames carry the
address, the symbol, the offset, the dso, the build-id, inlined frames and
source lines.  Views (script, folded stacks, reports) format these.
"""
import os

from symbolize import DebugInfoLocator, Symbolizer

from .format.constants import (CallchainContext as CC, Feature, MISC_COMM_EXEC,
                               MISC_CPUMODE_MASK,
                               MISC_GUEST_KERNEL, MISC_HYPERVISOR, MISC_KERNEL,
                               RecordType as RT, SampleType as ST)
from .format.errors import PerfDataError
from .session.machine import KERNEL_DSO, Machine

SESSION_TYPES = (RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2, RT.KSYMBOL)
LOST_SAMPLES = RT.LOST_SAMPLES
MISC_LOST_SAMPLES_BPF = 1 << 15     # samples a BPF filter dropped: perf does not count them
# Side events whose thread is the one the record names; the others' is the
# one of their sample_id (perf script's print_event() arguments).
_OWN_THREAD_TYPES = frozenset((RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2, RT.NAMESPACES))
KERNEL_MODES = (MISC_KERNEL, MISC_GUEST_KERNEL, MISC_HYPERVISOR)
# Outermost frames: nothing calls them, so what a frame-pointer walk finds
# past them is garbage (a makecontext coroutine's stack ends at
# __start_context, and perf walks on into unrelated memory).
STACK_BOTTOMS = frozenset(("_start", "__start_context", "clone", "clone3", "__clone",
                           "__clone3", "__GI___clone", "__GI___clone3"))
# Kernel entry points of interrupts and exceptions (x86): the frame after one
# is the interrupted address (pt_regs->ip), not a return address.
INTERRUPT_ENTRIES = ("asm_sysvec_", "asm_common_interrupt", "asm_exc_",
                     "asm_spurious_interrupt", "asm_fred_entry")
# perf's sysctl_perf_event_max_stack default.
DEFAULT_MAX_STACK = 127
# Stacks kept (with their frames) for samples that repeat them; cleared when
# full.  A many-process recording (make) repeats few: each process has its
# own address space, so a larger bound only holds dead stacks (52k of them,
# 38 MiB, for 60k samples of make -j2).
STACK_CACHE_SIZE = 16384


class StackFrame:
    """One printed line of a stack."""
    __slots__ = ("avma", "address", "symbol", "offset", "dso", "dso_path", "build_id",
                 "source", "inlined", "srcline", "kernel", "is_return_address", "note",
                 "stitched")

    def __init__(self, avma, address, symbol, offset, dso, dso_path=None, build_id=None,
                 source=None, inlined=False, srcline=None, kernel=False,
                 is_return_address=False, note=None, stitched=False):
        self.avma = avma
        self.address = address          # what perf prints: map-relative for user maps
        self.symbol = symbol            # None: [unknown]
        self.offset = offset
        self.dso = dso                  # display name, as perf prints it
        self.dso_path = dso_path
        self.build_id = build_id
        self.source = source            # symtab dynsym plt minidebuginfo debuginfo kallsyms ...
        self.inlined = inlined
        self.srcline = srcline
        self.kernel = kernel
        self.is_return_address = is_return_address
        self.note = note                # why a frame is unknown, for diagnosis
        # taken from the thread's other samples to complete a cut stack (--stitch)
        self.stitched = stitched

    def __repr__(self):
        return "<%x %s+%s (%s)>" % (self.address, self.symbol, self.offset, self.dso)


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
        self._perfmap_seen = {}
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
        self._frame_cache = {}
        self._stack_cache = {}
        self._dwarf_cache = {}            # (id(frames of an address), is_return): (frames, with inlines)
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
        leaf_frames = self.leaf_frames
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

    def leaf_frames(self, sample):
        """The frames of the sample's own ip (perf's machine__resolve()):
        what -S, --dsos look at."""
        if sample.ip is None:
            return ()
        return self.frames_for_address(sample, sample.ip, sample.cpumode in KERNEL_MODES,
                                       False)

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
        fields = sample.fields
        chain = fields.get("callchain")
        if self.unwinder is not None and "regs_user" in fields:
            if self._symbolize_dwarf(sample, chain):
                return
        if self.unwind == "none":
            if sample.ip is not None:
                kernel = sample.cpumode in KERNEL_MODES
                sample.frames = self.frames_for_address(sample, sample.ip, kernel, False)
            return
        ips = chain["ips"] if chain is not None else None
        if ips:
            if sample.event.lbr_call_stack and fields.get("branch_stack"):
                lbr = self._lbr_frames(sample, ips, fields["branch_stack"]["entries"])
                if lbr is not None:
                    sample.frames = lbr
                    return
            sample.frames = self.frames_for_callchain(sample, ips)
        elif sample.ip is not None:
            kernel = sample.cpumode in KERNEL_MODES
            sample.frames = self.frames_for_address(sample, sample.ip, kernel, False)

    def _symbolize_dwarf(self, sample, chain):
        """Kernel part of the recorded callchain, then the user stack unwound
        from REGS_USER and STACK_USER, printed as perf does: callers at their
        return address - 1, with DWARF inline chains."""
        result = self.unwinder.unwind(sample, self.dso_of)
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
                kernel_frames = self.frames_for_callchain(sample, kernel_part)
        user = result.frames[:self.max_stack]
        kernel_sample = sample.cpumode in KERNEL_MODES
        if not kernel_sample and sample.ip is not None and user[0] != sample.ip:
            # precise_ip skid: the hardware's ip is the leaf we print, the
            # unwind itself started from the consistent REGS_USER pair.
            self.unwinder.counts["ip_mismatch"] += 1
            user[0] = sample.ip
        exact = tuple(result.exact_ip_frames)
        # Samples with the same unwound stack in the same address space share
        # one frame list (and the views their text of it).
        maps = sample.thread.maps if sample.thread is not None else None
        key = ("dwarf", id(maps), maps.generation if maps is not None else 0,
               id(kernel_frames), tuple(user), exact)
        hit = self._stack_cache.get(key)
        if hit is not None and hit[0] is maps and hit[2] is kernel_frames:
            sample.frames = hit[1]
        else:
            frames = list(kernel_frames)
            for i, avma in enumerate(user):
                frames.extend(self._dwarf_frames(sample, avma, i > 0 and i not in exact))
            if len(self._stack_cache) > STACK_CACHE_SIZE:
                self._stack_cache.clear()
            self._stack_cache[key] = (maps, frames, kernel_frames)
            sample.frames = frames
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
        result = self.unwinder.unwind(sample, self.dso_of)
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
            for f in self._dwarf_frames(sample, avma, index not in stack.exact):
                f = _with_avma(f, f.avma)
                f.stitched = True
                frames.append(f)
        sample.frames = frames

    def kernel_symbols(self):
        """The kallsyms table of the profiled kernel, or None."""
        if not self._kernel_symbols_usable():
            return None
        return self.symbolizer.kernel_symbols(self.build_ids.get(KERNEL_DSO))

    def _lbr_frames(self, sample, ips, entries):
        """perf's resolve_lbr_callchain_sample(): with LBR call-stack mode the
        user part of the stack comes from the branch records: where the last
        call went (the current function), then every call site, innermost
        first.  The kernel part stays the recorded callchain."""
        if CC.USER not in ips or not entries:
            return None
        cut = ips.index(CC.USER)
        frames = self.frames_for_callchain(sample, ips[:cut]) if cut else []
        user = [entries[0]["to_ip"]] + [e["from_ip"] for e in entries]
        for avma in user[:self.max_stack]:
            # Branch sources are the call instructions themselves: no -1.
            frames.extend(self.frames_for_address(sample, avma, False, False))
        return frames

    def _build_id_of(self, m):
        return self.dso_of(m)[1]

    _dso_cache = None

    def dso_of(self, m):
        """(path to look the binary up by, build-id) for a map.  The vdso has
        no file: perf's build-id cache may hold its image; else, as perf does,
        this machine's own vdso stands in, used silently only when its
        build-id is the recorded one."""
        if self._dso_cache is None:
            self._dso_cache = {}
        key = (m.path, m.build_id)
        hit = self._dso_cache.get(key)
        if hit is None:
            bid = m.build_id or self.build_ids.get(m.path)
            hit = (m.path, bid)
            if m.path == "[vdso]":
                found = self.symbolizer.binary_for(m.path, bid).status == "found"
                if not found:
                    from symbolize.vdso import running_vdso
                    own = running_vdso()
                    if own is not None and (bid is None or bid == own[1]):
                        if bid is None:
                            self.pf.warnings.append(
                                "[vdso]: the profile has no build-id for it; assuming this "
                                "machine's vdso (build-id %s), as perf does" % own[1])
                        hit = own
            self._dso_cache[key] = hit
        return hit

    def _dwarf_frames(self, sample, avma, is_return):
        """perf's unwind_entry(): the frame at `avma` plus, from DWARF, the
        chain of functions inlined there, each printed with the containing
        symbol's offset.  perf prints an unwound caller at its return address
        - 1 (the call), with the offset of that address.

        The answer is kept for the (cached, so shared) frames of the address:
        every stack through it shares the same frame objects, rather than a
        copy per stack (on a 300 MB DWARF recording those copies were 49 MiB,
        the largest part of the stack caches)."""
        base = self.frames_for_address(sample, avma, False, is_return)
        if type(base) is not tuple:       # not from the frame cache: not shared
            return self._dwarf_frames_of(sample, avma, is_return, base)
        key = (id(base), is_return)
        hit = self._dwarf_cache.get(key)
        if hit is not None and hit[0] is base:
            return hit[1]
        out = self._dwarf_frames_of(sample, avma, is_return, base)
        if len(self._dwarf_cache) > 100000:
            self._dwarf_cache.clear()
        self._dwarf_cache[key] = (base, out)
        return out

    def _dwarf_frames_of(self, sample, avma, is_return, base):
        # (offset 0: the symbolizer named what is at the address itself,
        # address - 1 being padding; that one perf prints as is.)
        if is_return and base and base[-1].offset != 0:
            base = [_at_call(f) for f in base]
        if not self.dwarf_inline or not base or base[0].symbol is None or base[0].kernel:
            return base
        head = base[-1]
        m = self.machine.find_map(sample.thread, avma, False)
        if m is None:
            return base
        dso_path, dso_bid = self.dso_of(m)
        lines = self.symbolizer.line_info(dso_path, dso_bid)
        if lines is None:
            return [head]
        key = ("inline", m.path, head.build_id, head.address)
        chain = self._frame_cache.get(key)
        if chain is None:
            chain = ()
            choice = self.symbolizer.binary_for(dso_path, dso_bid)
            src = choice.binary or choice.debug
            svma = src.file_offset_to_svma(head.address) if src is not None else None
            if svma is not None:
                chain = tuple(self._symbol_name(name) for name in lines.function_names(svma))
            self._frame_cache[key] = chain
        if not chain:
            return [head]
        out = []
        for name in chain:
            if name is None:
                continue
            if name == head.symbol:
                out.append(head)
            else:
                f = _with_avma(head, head.avma)
                f.symbol = name
                f.inlined = True
                f.source = "dwarf-inline"
                out.append(f)
        return out or [head]

    def _symbol_name(self, name):
        return self.symbolizer.demangle_name(name)

    def frames_for_callchain(self, sample, ips):
        """Frames of a kernel-recorded callchain (-g): context markers switch
        between kernel and user; every frame but the first is a return address.
        The result is shared by every sample with the same stack in the same
        address space (cached until a map of that space changes)."""
        maps = sample.thread.maps if sample.thread is not None else None
        key = (id(maps), maps.generation if maps is not None else 0,
               self.machine.kernel_maps.generation, sample.cpumode, tuple(ips))
        hit = self._stack_cache.get(key)
        if hit is not None and hit[0] is maps:
            return hit[1]
        frames = self._frames_for_callchain(sample, ips)
        if len(self._stack_cache) > STACK_CACHE_SIZE:
            self._stack_cache.clear()
        self._stack_cache[key] = (maps, frames)
        return frames

    def _frames_for_callchain(self, sample, ips):
        frames = []
        kernel = sample.cpumode in KERNEL_MODES
        first = True
        depth = 0
        for index, ip in enumerate(ips):
            if ip >= CC.MAX:
                kernel = ip in (CC.KERNEL, CC.GUEST_KERNEL, CC.HV)
                if not kernel:
                    # The first user entry is where user space was interrupted
                    # (a syscall or an interrupt), an ip, not a return address.
                    first = True
                continue
            if depth >= self.max_stack:
                break
            found = self.frames_for_address(sample, ip, kernel, not first)
            frames.extend(found)
            at_ip = first
            first = False
            depth += 1
            if kernel and found and found[-1].symbol is not None and \
                    found[-1].symbol.startswith(INTERRUPT_ENTRIES):
                first = True
            # A bottom ends the stack where it is a caller (the outermost
            # frame of a new thread or process), not where it is the ip the
            # user stack starts at (clone3 in the parent, mid-syscall).
            if not kernel and found and not at_ip and found[-1].symbol in STACK_BOTTOMS:
                rest = sum(1 for x in ips[index + 1:] if x < CC.MAX)
                if rest:
                    self.counts["bottom_garbage_dropped"] = \
                        self.counts.get("bottom_garbage_dropped", 0) + rest
                    self.counts["bottom_garbage_samples"] = \
                        self.counts.get("bottom_garbage_samples", 0) + 1
                break
        return frames

    def frames_for_address(self, sample, avma, kernel, is_return_address):
        machine = self.machine
        thread = sample.thread
        m = machine.find_map(thread, avma, kernel)
        if m is None and not kernel:
            # perf falls back to the kernel maps for an address without a user map.
            km = machine.kernel_maps.find(avma)
            if km is not None and avma >= (1 << 63):
                m, kernel = km, True
        if m is None and kernel:
            m = self._kernel_text_map(avma)
        if m is None:
            if kernel:
                ks = machine.find_ksymbol(avma)
                if ks is not None:
                    return [StackFrame(avma, avma, ks.name, avma - ks.start,
                                       "[bpf_prog]" if ks.kind == 1 else KERNEL_DSO,
                                       source="ksymbol", kernel=True,
                                       is_return_address=is_return_address)]
                # perf prints unmapped kernel addresses against [unknown].
            return [StackFrame(avma, avma, None, None, "[unknown]", kernel=kernel,
                               is_return_address=is_return_address, note="no-map")]
        if kernel:
            path = KERNEL_DSO
            # perf prints a module by the path its MMAP record gave.
            dso = m.path
            if not self._kernel_symbols_usable():
                return [StackFrame(avma, avma, None, None, dso, m.path, kernel=True,
                                   is_return_address=is_return_address,
                                   note="kernel-mismatch")]
            key = (KERNEL_DSO, avma, is_return_address, dso)
            hit = self._frame_cache.get(key)
            if hit is None:
                hit = self._cache_frames(key, self._lookup(
                    path, self.build_ids.get(KERNEL_DSO), avma, None, is_return_address,
                    avma, dso, True), avma)
            return hit
        path, bid = self.dso_of(m)
        file_offset = m.file_offset(avma)
        # perf 6.1 looks a JIT's symbols up in /tmp/perf-PID.map for anonymous
        # memory only; a memfd mapping is a file it cannot open (map-relative
        # addresses, [unknown]): so here too, unless the process wrote a map
        # (a JIT that double-maps its code through a memfd).
        perfmap = "/tmp/perf-%d.map" % sample.pid
        if path.startswith("//anon") or path == "[anon]" or (
                path.startswith("/memfd:") and self._perfmap_exists(perfmap)):
            key = (perfmap, avma, is_return_address)
            hit = self._frame_cache.get(key)
            if hit is None:
                hit = self._cache_frames(key, self._lookup(
                    perfmap, None, avma, None, is_return_address, avma, perfmap, False,
                    display_path=path), avma)
            return hit
        # Frames are shared by every sample that hits this address of this
        # mapping (callers never change them).
        key = (path, bid, m.start, file_offset, is_return_address)
        hit = self._frame_cache.get(key)
        if hit is None:
            hit = self._cache_frames(key, self._lookup(
                path, bid, None, file_offset, is_return_address, file_offset, m.path, False),
                avma)
        return hit

    def _perfmap_exists(self, path):
        got = self._perfmap_seen.get(path)
        if got is None:
            got = self._perfmap_seen[path] = os.path.isfile(path)
        return got

    def _kernel_text_map(self, avma):
        """The kernel's map for an address past its MMAP's end (_etext) that
        a kernel symbol covers (.init.text: start_kernel): perf's kernel map
        reaches the last kallsyms symbol."""
        if avma < (1 << 63) or not self._kernel_symbols_usable():
            return None
        main = next((x for x in self.machine.kernel_maps if x.path == KERNEL_DSO), None)
        if main is None or avma < main.start:
            return None
        try:
            table = self.symbolizer.kernel_symbols(self.build_ids.get(KERNEL_DSO))
            s = table.lookup(avma)
        except Exception:           # a symbolizer bug must not stop the listing
            return None
        return main if s is not None and s.module is None else None

    def _cache_frames(self, key, frames, avma):
        for f in frames:
            f.avma = avma
        if len(self._frame_cache) > 500000:
            self._frame_cache.clear()
        self._frame_cache[key] = frames
        return frames

    _kernel_ok = None

    def _kernel_symbols_usable(self):
        """Kernel symbols are looked up only for the kernel that was profiled:
        by build-id when the file has one (the symbolizer checks it), else only
        if this machine runs the release the file names (perf 6.1 uses this
        machine's /proc/kallsyms for any file, and prints wrong names)."""
        if self._kernel_ok is None:
            bid = self.build_ids.get(KERNEL_DSO)
            if bid is not None or getattr(self.symbolizer, "_kallsyms", None) is not None:
                self._kernel_ok = True
            else:
                try:
                    release = self.pf.feature(Feature.OSRELEASE)
                except PerfDataError:
                    release = None
                self._kernel_ok = bool(release) and release == os.uname().release
                if not self._kernel_ok:
                    self.pf.warnings.append(
                        "kernel symbols: the file has no kernel build-id and was recorded on "
                        "kernel %s, not this one (%s); pass --kallsyms FILE or --vmlinux"
                        % (release or "unknown", os.uname().release))
        return self._kernel_ok

    def _lookup(self, path, bid, svma, file_offset, is_ret, printed, dso, kernel,
                display_path=None):
        try:
            found = self.symbolizer.lookup(path, bid, svma, file_offset=file_offset,
                                           is_return_address=is_ret)
        except Exception as exc:   # a symbolizer bug must not stop the listing
            self.pf.warnings.append("symbolizer: %s: %s" % (path, exc))
            found = []
        frames = []
        for fr in found:
            name = fr.name
            if name is None and kernel is False and display_path and fr.name is None:
                dso_shown = display_path
            else:
                dso_shown = dso
            frames.append(StackFrame(None, printed, name, fr.offset, dso_shown, fr.dso_path,
                                     fr.build_id or bid, fr.source, fr.inlined, fr.srcline,
                                     kernel, is_ret,
                                     note=None if name is not None else "no-symbol"))
        if not frames:
            frames.append(StackFrame(None, printed, None, None, display_path or dso, path, bid,
                                     kernel=kernel, is_return_address=is_ret,
                                     note="no-symbol"))
        return tuple(frames)


def _at_call(frame):
    """A return-address frame shown at the call instruction (address - 1)."""
    f = _with_avma(frame, frame.avma - 1 if frame.avma else frame.avma)
    f.address -= 1
    if f.offset is not None:
        f.offset -= 1
    return f


def _with_avma(frame, avma):
    f = StackFrame.__new__(StackFrame)
    for name in StackFrame.__slots__:
        setattr(f, name, getattr(frame, name))
    f.avma = avma
    return f
