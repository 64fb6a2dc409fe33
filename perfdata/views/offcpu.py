"""`perfdata offcpu FILE`: off-CPU time, where threads wait, with stacks.

From the scheduler switches a recording holds (perfdata/session/switches.py
keeps the waits): `sched:sched_switch` samples, whose callchain is the stack
where the thread going out blocked and whose `prev_state` says why;
PERF_RECORD_SWITCH records (`--switch-events`), which say when a thread of a
per-process recording runs again; `sched:sched_wakeup`/`sched_waking`, which
name the waker (and, their callchain, where it woke the thread: --wakers,
views/offcpu_wakers.py); perf's `offcpu-time` samples (`perf record
--off-cpu`, perf 5.20 and later: views/offcpu_time.py), each a wait or a sum
of waits of one thread and stack.

Record with (docs/offcpu.md):
    perf record -e sched:sched_switch -e sched:sched_wakeup --switch-events \\
        --call-graph dwarf -- PROGRAM
    perf sched record -g -- PROGRAM           (system-wide)

Outputs (--format): `report` (threads, then stacks by wait time), `threads`
(the per-thread table), `collapse` (folded stacks weighted by wait time in
ns, for flamegraph.pl or `perfdata flamegraph`-style rendering) and
`flamegraph` (an SVG whose off-CPU frames have a colour family of their own);
`perfdata export --offcpu` gives the same waits to speedscope and pprof
(views/offcpu_export.py).
"""
from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..format import (MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT, AttrType, RecordType as RT,
                      SampleType as ST)
from ..session.switches import SHORT_WAITS, SWITCH_FIELDS, WAKEUP_FIELDS, SwitchTracker, \
    TracepointLayout
from .errors import CommandError
from .options import add_input_argument, add_symbolize_options

if TYPE_CHECKING:
    import argparse
    from collections.abc import Hashable, Sequence

    from ..format import EventAttr, EventFormat, PerfFile
    from ..resolve import ResolveOptions
    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample
    from ..session.switches import ThreadTimes

    # A stack as the views draw it, outermost frame first: (name, kind, dso).
    Path = tuple[tuple[str, str, str], ...]

SWITCH_EVENT = "sched:sched_switch"
WAKEUP_EVENTS = ("sched:sched_wakeup", "sched:sched_waking")
OFFCPU_EVENT = "offcpu-time"
# Waits shorter than this are added up as one "[short waits]" stack per
# thread and state (--min-wait): a busy thread's many short waits would
# otherwise fill the report with stacks of microseconds.
DEFAULT_MIN_WAIT = "10us"
# prev_state as the kernel's sched_switch print fmt names it (Linux 4.14 on:
# the report bits, then TASK_REPORT_MAX for a preempted task): the names when
# the file's own format cannot be evaluated.
_STATE_LETTERS = "SDTtXZPI"
_STATE_IN_TEXT = re.compile(r"prev_state=(\S+)")
_FLAG = re.compile(r'\{\s*(0x[0-9a-fA-F]+|[0-9]+)\s*,\s*"([^"]*)"\s*\}')
# The state perf's offcpu-time samples stand for (its BPF program counts
# the switches out of interruptible and uninterruptible sleep).
OFFCPU_TIME_STATE = "S|D"
NO_CALLCHAIN = "[no callchain]"
# PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK: a sample's period is the
# nanoseconds the thread ran since the last one.
CLOCK_CONFIGS = (0, 1)


def parse_duration(text: str) -> int:
    """--min-wait: a number with ns, us, ms or s (no unit: microseconds)."""
    import argparse
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|ms|s)?\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError("not a duration: %r (examples: 10us, 1ms, 0)" % text)
    scale = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000, None: 1000}[m.group(2)]
    return int(float(m.group(1)) * scale)


def state_name(value: int) -> str:
    """prev_state as Linux 4.14 and later print it: S, D, R, R+, D|K ..."""
    flags = [c for bit, c in enumerate(_STATE_LETTERS) if value & (1 << bit)]
    return ("|".join(flags) if flags else "R") + ("+" if value & 0x100 else "")


class StateNames:
    """prev_state values named as perf script prints them.  The sched_switch
    print fmt of every kernel since 2.6 names the state with __print_flags
    of a table of single bits, "R" for none, and "+" for the bit above the
    table's highest (TASK_REPORT_MAX, TASK_STATE_MAX): read off the file's
    own format; where it is not of that form, the whole print fmt is
    evaluated (perfdata.tracefmt) once per value."""

    def __init__(self, pf: PerfFile, fmt: EventFormat, layout: TracepointLayout) -> None:
        self.pf = pf
        self.fmt = fmt
        self.layout = layout
        self.names: dict[int, str] = {}
        table = [(int(bit, 0), name) for bit, name in _FLAG.findall(fmt.print_fmt)]
        self.table = table if table and "prev_state" in fmt.print_fmt and all(
            bit and not bit & (bit - 1) for bit, _ in table) else None
        self.printer: Any = None

    def name(self, value: int) -> str:
        got = self.names.get(value)
        if got is None:
            got = self.names[value] = self._name(value)
        return got

    def _name(self, value: int) -> str:
        if self.table is not None:
            top = max(bit for bit, _ in self.table) << 1
            flags = [name for bit, name in self.table if value & (top - 1) & bit]
            return ("|".join(flags) if flags else "R") + ("+" if value & top else "")
        if self.printer is None:
            from ..tracefmt import TracePrinter
            self.printer = TracePrinter.for_file(self.pf) or False
        text = None
        if self.printer:
            st, offset, _ = self.layout.fields["prev_state"]
            raw = bytearray(max(o + n for _, o, n in self.layout.fields.values()))
            st.pack_into(raw, offset, value)
            text = self.printer.format(self.fmt.id, bytes(raw))
        m = _STATE_IN_TEXT.search(text or "")
        return m.group(1) if m else state_name(value)


class Roles:
    """What each event of the file is to the off-CPU view."""

    def __init__(self, pf: PerfFile) -> None:
        pf.resolve_event_names()
        tracing = pf.tracing()
        little = tracing.little if tracing is not None else True
        formats = pf.tracepoint_formats()
        self.switch: dict[int, TracepointLayout] = {}
        self.wakeup: dict[int, TracepointLayout] = {}
        self.offcpu: set[int] = set()
        # the software clocks, whose period is nanoseconds run (--wall)
        self.clock: set[int] = set()
        self.states: StateNames | None = None
        self.attrs: dict[int, EventAttr] = {}
        for ea in pf.attrs:
            self.attrs[id(ea)] = ea
            config = ea.attr["config"]
            if ea.name == SWITCH_EVENT and config in formats:
                layout = self.switch[id(ea)] = self._layout(formats[config], SWITCH_FIELDS,
                                                            little, pf)
                if self.states is None:
                    self.states = StateNames(pf, formats[config], layout)
            elif ea.name in WAKEUP_EVENTS and config in formats:
                self.wakeup[id(ea)] = self._layout(formats[config], WAKEUP_FIELDS, little, pf)
            elif ea.name == OFFCPU_EVENT:
                self.offcpu.add(id(ea))
            elif ea.attr["type"] == AttrType.SOFTWARE and config in CLOCK_CONFIGS:
                self.clock.add(id(ea))
        if not self.switch and not self.offcpu and not _has_switch_records(pf):
            raise CommandError(
                "%s: no scheduler switches (no %s samples, no offcpu-time samples, no "
                "switch records): record with `perf record -e sched:sched_switch -e "
                "sched:sched_wakeup --switch-events -g`, or `perf sched record`"
                % (pf.path, SWITCH_EVENT))

    @staticmethod
    def _layout(fmt: Any, names: tuple[str, ...], little: bool, pf: PerfFile
                ) -> TracepointLayout:
        try:
            return TracepointLayout(fmt, names, little)
        except (KeyError, ValueError) as exc:
            raise CommandError("%s: the tracing data's %s:%s format lacks the field %s"
                               % (pf.path, fmt.system, fmt.name, exc))


def _has_switch_records(pf: PerfFile) -> bool:
    """Whether the events were recorded with --switch-events (context_switch)."""
    return any(ea.attr.get("context_switch") for ea in pf.attrs)


def time_window(args: argparse.Namespace, pf: PerfFile) -> list[tuple[int, int]] | None:
    """--time as [(start, end)] ns, or None for the whole file."""
    if not args.time:
        return None
    from .options import option_value, time_ranges
    return window_of(option_value(args.time, time_ranges), pf)


def window_of(parsed: Any, pf: PerfFile) -> list[tuple[int, int]] | None:
    """Time ranges (ResolveOptions.time: (start, end) each, None for open,
    or PercentRanges) as [(start, end)] ns; None for the whole file."""
    from ..resolve.filters import PercentRanges, sample_span
    if not parsed:
        return None
    if isinstance(parsed, PercentRanges):
        span = sample_span(pf)
        if span == (0, 0):
            raise CommandError("--time in percent: the file has no first/last sample time "
                               "(HEADER_SAMPLE_TIME)")
        parsed = parsed.resolve(*span)
    return [(lo or 0, hi if hi is not None else 1 << 64) for lo, hi in parsed]


def thread_filter(args: argparse.Namespace) -> Any:
    """keep(ThreadTimes) for --pid, --tid, --comm, or None."""
    from .options import int_list, name_list, option_value
    return keep_of(option_value(args.pid, int_list) if args.pid is not None else None,
                   option_value(args.tid, int_list) if args.tid is not None else None,
                   option_value(args.comm, name_list) if args.comm is not None else None)


def keep_of(pids: Any, tids: Any, comms: Any) -> Any:
    """keep(ThreadTimes) for these pids, tids and comms (None: any), or None."""
    if pids is None and tids is None and comms is None:
        return None

    def keep(t: ThreadTimes) -> bool:
        return (pids is None or t.pid in pids) and (tids is None or t.tid in tids) and \
            (comms is None or t.comm in comms)
    return keep


def refuse_options(args: argparse.Namespace) -> None:
    """The sample options that have no meaning for waits."""
    for dest, option in (("cpu", "--cpu"), ("symbols", "--symbols"), ("dsos", "--dsos"),
                         ("stitch", "--stitch")):
        if getattr(args, dest, None):
            raise CommandError("offcpu: %s does not apply to waits" % option)


class StackNames:
    """Symbolized stacks as paths (name, kind, dso), outermost first; each
    distinct frames object named once."""

    def __init__(self) -> None:
        from ..run.folded import CollapseOptions
        self.opts = CollapseOptions()
        self.cache: dict[int, tuple[Sequence[StackFrame], Path]] = {}

    def path(self, frames: Sequence[StackFrame]) -> Path:
        hit = self.cache.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        from ..run.folded import frame_kind, frame_names
        path = tuple((name, frame_kind(fr), fr.dso or "[unknown]")
                     for fr in reversed(frames) for name in frame_names(fr, self.opts))
        if len(self.cache) > 100000:
            self.cache.clear()
        self.cache[id(frames)] = (frames, path)
        return path


def gather(options: ResolveOptions, pf: PerfFile, tracker: SwitchTracker,
           fast: bool = True, wakers: bool = True, compiled: bool = True,
           oncpu: bool = False) -> None:
    """Feed the tracker every switch, wakeup and offcpu-time sample of the
    file, in time order; the stacks of switches out symbolized (wakers:
    the wakeups too, which name the waker of each wait; oncpu: the samples of
    cpu-clock or task-clock, the wall-clock view's run time).  fast: where
    no stack is to be symbolized (no callchains), read the switches straight
    from the file's bytes (format's scan_samples, or with `compiled` the C
    sums of perfdata/core/switches.py) when that applies."""
    from ..resolve import build_sample_symbolizer
    from ..run.profile import print_warnings
    roles = Roles(pf)
    if not wakers:
        roles.wakeup.clear()        # (who woke whom: only the report says)
    if tracker.wakes is not None and not roles.wakeup:
        pf.warnings.append("--wakers: no sched:sched_wakeup or sched:sched_waking samples "
                           "(record them beside the switches)")
    if not oncpu:
        roles.clock.clear()
    elif not roles.clock:
        pf.warnings.append("--wall: no cpu-clock or task-clock samples (record with "
                           "-e cpu-clock beside the switches): waits only")
    if fast and not roles.clock and tracker.wakes is None and \
            gather_fast(pf, roles, tracker, compiled):
        print_warnings(pf)
        return
    samples = build_sample_symbolizer(pf, options,
                                      side_events=(RT.SWITCH, RT.SWITCH_CPU_WIDE, RT.EXIT))
    feed = _Feeder(roles, samples, tracker)
    try:
        feed.run()
        tracker.finish()
        if feed.unreadable:
            pf.warnings.append("%d offcpu-time samples left out: their raw data is shorter "
                               "than its callchain" % feed.unreadable)
    finally:
        print_warnings(pf, samples.symbolizer.warnings)
    if tracker.switches and not tracker.switch_ins and roles.switch:
        pf.warnings.append("no thread was seen switching in: a per-process recording needs "
                           "--switch-events (or record system-wide, -a), else no wait ends")
        print_warnings(pf)


def gather_fast(pf: PerfFile, roles: Roles, tracker: SwitchTracker, compiled: bool = True
                ) -> bool:
    """The switches and wakeups of a file without stacks or switch records,
    read by scan_samples (or summed by the compiled core); False where that
    does not apply."""
    from ..format import scan_samples
    attrs = [roles.attrs[key] for key in list(roles.switch) + list(roles.wakeup)]
    if roles.offcpu or _has_switch_records(pf) or not roles.switch or \
            any(ea.has_callchain or ea.sample_type & ST.REGS_USER for ea in attrs):
        return False
    if compiled and tracker.window is None and tracker.keep is None and \
            _compiled_sums(pf, roles, tracker):
        return True
    wanted = {}
    for key, layout in list(roles.switch.items()) + list(roles.wakeup.items()):
        names = SWITCH_FIELDS if key in roles.switch else ("pid",)
        wanted[roles.attrs[key]] = [layout.fields[n][:2] for n in names]
    got = scan_samples(pf, wanted)
    if got is None:
        return False
    rows, lost = got
    switch_tags = {roles.attrs[key].index for key in roles.switch}
    states = roles.states
    assert states is not None
    comms: dict[bytes, str] = {}
    switch, woken, name = tracker.switch, tracker.wakeup, states.name
    for row in rows:
        if row[-1] in switch_tags:
            pid, tid, time, cpu, prev_comm, prev, state, next_comm, nxt, _ = row
            comm = comms.get(prev_comm)
            if comm is None:
                comm = comms[prev_comm] = _comm_text(prev_comm)
            into = comms.get(next_comm)
            if into is None:
                into = comms[next_comm] = _comm_text(next_comm)
            switch(time, cpu, prev, pid if tid == prev else -1, comm, name(state), None, nxt, into)
        elif row[4]:
            woken(row[4], row[1], None)
    if lost:
        pf.warnings.append("%d events lost (perf record -m: a larger buffer)" % lost)
    return True


def _compiled_sums(pf: PerfFile, roles: Roles, tracker: SwitchTracker) -> bool:
    """The tracker filled by perfdata/core/switches.py's sums; False where
    they do not apply."""
    from ..core.switches import sum_switches
    got = sum_switches(pf, {roles.attrs[k]: v for k, v in roles.switch.items()},
                       {roles.attrs[k]: v for k, v in roles.wakeup.items()}, tracker.min_wait)
    if got is None:
        return False
    threads, tracker.switches, tracker.switch_ins, tracker.inferred_ins, lost = got
    states = roles.states
    assert states is not None
    for tid, pid, comm, first, last, run, switches_out, waits in threads:
        tracker.add_sums(tid, pid, _comm_text(comm), first, last, run, switches_out,
                         [(states.name(state), bool(short), _comm_text(waker), ns, n)
                          for state, short, waker, ns, n in waits])
    if lost:
        pf.warnings.append("%d events lost (perf record -m: a larger buffer)" % lost)
    return True


def _comm_text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class _Feeder:
    """One pass over the session's stream, into the tracker."""

    def __init__(self, roles: Roles, samples: SampleSymbolizer, tracker: SwitchTracker) -> None:
        self.roles = roles
        self.samples = samples
        self.tracker = tracker
        self.names = StackNames()
        self.switch_tp = bool(roles.switch)
        self.unreadable = 0         # offcpu-time samples whose raw data is cut short

    def stack(self, sample: SymbolizedSample) -> Hashable:
        if not sample.fields.get("callchain") and "regs_user" not in sample.fields:
            return None
        self.samples.symbolize(sample)
        return self.names.path(sample.frames)

    def run(self) -> None:
        from ..session.stream import BuildId, SideEvent
        from ..resolve.symbolized import SymbolizedSample
        roles, tracker = self.roles, self.tracker
        build_ids = self.samples.build_ids
        for ev in self.samples.stream:
            kind = type(ev)
            if kind is SymbolizedSample:
                key = id(ev.event)  # type: ignore[union-attr]
                layout = roles.switch.get(key)
                if layout is not None:
                    self.switch(ev, layout)  # type: ignore[arg-type]
                elif key in roles.wakeup:
                    self.wakeup(ev, roles.wakeup[key])  # type: ignore[arg-type]
                elif key in roles.offcpu:
                    self.offcpu_time(ev)  # type: ignore[arg-type]
                elif key in roles.clock:
                    s: Any = ev
                    tracker.ran(s.time, s.tid, s.pid, s.comm, s.period, self.stack(s))
            elif kind is SideEvent:
                self.side_record(ev)  # type: ignore[arg-type]
            elif kind is BuildId:
                build_ids.setdefault(ev.path, ev.build_id)  # type: ignore[union-attr]

    def switch(self, s: SymbolizedSample, layout: TracepointLayout) -> None:
        raw = (s.fields.get("raw") or {}).get("data") or b""
        prev, nxt = layout.read(raw, "prev_pid"), layout.read(raw, "next_pid")
        value = layout.read(raw, "prev_state")
        if prev is None or nxt is None or value is None:
            return
        assert self.roles.states is not None
        self.tracker.switch(s.time, s.cpu, prev, s.pid if s.tid == prev else -1,
                            layout.read(raw, "prev_comm"), self.roles.states.name(value),
                            self.stack(s) if prev else None, nxt, layout.read(raw, "next_comm"))

    def wakeup(self, s: SymbolizedSample, layout: TracepointLayout) -> None:
        raw = (s.fields.get("raw") or {}).get("data") or b""
        woken = layout.read(raw, "pid")
        if not woken:
            return
        tracker = self.tracker
        if tracker.wakes is None or not tracker.waiting(woken):
            tracker.wakeup(woken, s.tid, None)
        else:
            # (the sample is the waker's: its stack is where it woke the thread)
            tracker.wakeup(woken, s.tid, self.stack(s), (s.comm, s.pid))

    def offcpu_time(self, s: SymbolizedSample) -> None:
        """One sample of perf's offcpu-time event (perfdata/views/offcpu_time.py)."""
        from .offcpu_time import read_offcpu_sample
        got = read_offcpu_sample(s, self.samples.machine, self.samples.pf.little)
        if got is None:
            self.unreadable += 1
            return
        start = s.time - s.period if got else None
        if start is None or start < 0:
            self.tracker.add_total(s.tid, s.pid, s.comm, s.period, OFFCPU_TIME_STATE,
                                   self.stack(s))
        else:
            self.tracker.add_wait(s.tid, s.pid, s.comm, start, s.time, OFFCPU_TIME_STATE,
                                  self.stack(s))

    def side_record(self, ev: Any) -> None:
        """A switch record, or an exit (which ends a run no switch out ends)."""
        rec = ev.record
        if rec.type == RT.EXIT:
            tid = ev.fields.get("tid")
            if tid and rec.time is not None:
                self.tracker.exited(rec.time, tid)
            return
        tid = (ev.fields.get("sample_id") or {}).get("tid")
        if tid is None or tid <= 0 or rec.time is None:
            return
        if not rec.misc & MISC_SWITCH_OUT:
            self.tracker.switch_in(rec.time, tid)
        elif not self.switch_tp:
            # (no sched_switch samples: the record says only whether it was preempted)
            thread = ev.thread
            self.tracker.switch_out(rec.time, tid, thread.pid if thread else -1,
                                    thread.comm if thread else ":%d" % tid,
                                    "R" if rec.misc & MISC_SWITCH_OUT_PREEMPT else "S|D")


def run(args: argparse.Namespace, out: TextIO) -> None:
    from .collapse import open_output
    from ..run.profile import open_profile
    from . import offcpu_output
    refuse_options(args)
    if args.format == "flamegraph":
        from .flamegraph import check_width
        check_width(args)
    wakers = args.wakers and args.format != "threads"
    if wakers and args.wall:
        raise CommandError("offcpu: --wakers and --wall do not go together (a wakeup ends "
                           "a wait, not a run)")
    pf = open_profile(args.file, getattr(args, "strict", False))
    tracker = SwitchTracker(args.min_wait, time_window(args, pf), thread_filter(args), wakers)
    from .options import resolve_options
    gather(resolve_options(args), pf, tracker, wakers=args.format == "report" or wakers,
           oncpu=args.wall)
    stream, close = open_output(args.output, out)
    try:
        if wakers:
            from . import offcpu_wakers
            offcpu_output.write(args, tracker, stream, offcpu_wakers)
        else:
            offcpu_output.write(args, tracker, stream)
    finally:
        if close:
            stream.close()


def _min_width(text: str) -> Any:
    from .flamegraph import parse_min_width     # (the flame graph's module: when asked)
    return parse_min_width(text)


def _max_depth(text: str) -> int:
    from .flamegraph import parse_max_depth
    return parse_max_depth(text)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("offcpu", help="off-CPU time: where threads wait, with stacks "
                              "and states, from scheduler switches")
    add_input_argument(p)
    p.add_argument("-o", "--output", help="write here (default: standard output)")
    p.add_argument("--format", choices=("report", "threads", "collapse", "flamegraph"),
                   default="report",
                   help="report: threads, then stacks by wait time (default); threads: "
                        "wall, run and wait time per thread; collapse: folded stacks "
                        "weighted by wait time in ns; flamegraph: an SVG of those")
    p.add_argument("--min-wait", type=parse_duration, default=parse_duration(DEFAULT_MIN_WAIT),
                   metavar="TIME", help="waits shorter than this are added up as one "
                   "%s stack per thread and state (default %s; 0 keeps every stack)"
                   % (SHORT_WAITS, DEFAULT_MIN_WAIT))
    p.add_argument("--with-state", action="store_true",
                   help="collapse, flamegraph: end each stack with its state as a frame "
                        "([S], [D], [R+] ...)")
    p.add_argument("--wall", action="store_true",
                   help="collapse, flamegraph: where the threads' wall time went: the "
                        "on-CPU samples of a cpu-clock or task-clock event (weighted by "
                        "their period, ns) beside the waits, which end in their state")
    p.add_argument("--wakers", action="store_true",
                   help="the waits by who woke them and where (the waker's stack, from "
                        "the wakeups' callchains): report, collapse (wakeup chains as "
                        "offwaketime folds them: woken stack;--;waker stack leaf first;"
                        "waker) and flamegraph")
    p.add_argument("--tid-root", action="store_true",
                   help="collapse, flamegraph: root each stack at comm-pid/tid")
    p.add_argument("--percent-limit", type=float, default=0.0, metavar="PCT",
                   help="report: leave out stacks below this share of all waits")
    g = p.add_argument_group("flamegraph")
    g.add_argument("--title", help="title (default: Off-CPU Time Flame Graph)")
    g.add_argument("--colors", choices=("kind", "dso"), default="kind",
                   help="kind: off-CPU frames in a colour family of their own (default); "
                        "dso: one hue per shared object")
    g.add_argument("--flame", action="store_true",
                   help="draw roots at the bottom, as flamegraph.pl (default: from the top)")
    g.add_argument("--width", type=int, default=1200, help="image width in pixels")
    g.add_argument("--min-width", "--minwidth", dest="minwidth", type=_min_width,
                   default=None, metavar="PX|PCT%",
                   help="leave out frames narrower than this (default 0.1 px)")
    g.add_argument("--max-depth", type=_max_depth, default=0, metavar="N",
                   help="draw at most N frames of a stack below its thread (default: all)")
    add_symbolize_options(p)
    p.set_defaults(func=run)

