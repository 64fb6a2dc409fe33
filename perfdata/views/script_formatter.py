"""`perfdata script`'s sample lines: the text `perf script` prints of a
sample, from perfdata's own stacks.

Field selection and layout follow tools/perf/builtin-script.c (perf 6.1):
the sample header line (comm, pid/tid, cpu, time, period, event), then either
the ip/sym/dso on the same line or, for samples with a stack, one line per
frame (script_frame_lines.py).
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..format import HARDWARE_NAMES, SOFTWARE_NAMES, AttrType, RecordType as RT, SampleType as ST
from ..format import weight_and_ins_lat
from .memdata import data_src_text, page_size_name
from .regs import perf_arch, regs_text
from .script_fields import event_fields, parse_field_spec
from .script_frame_lines import FrameLines
from .script_side_events import describe_side_event, format_time, misc_text, side_event_start

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from symbolize import KernelSymbols

    from ..format import PerfFile, EventAttr
    from ..resolve.frames import StackFrame
    from ..session.stream import SideEvent
    from ..resolve.symbolized import SymbolizedSample
    from ..tracefmt import TracePrinter
    from .header import PipeFeaturePrinter
    from .script_fields import Fields

    # A field printed before or after the ip: appends its text to `out`.
    Printer = Callable[[SymbolizedSample, list[str]], None]
    # ScriptFormatter._layout: (has, then comm pid tid cpu time period event
    # trace ip: is it printed, then the printers before and after the ip)
    Layout = tuple[Callable[[str], bool], bool, bool, bool, bool, bool, bool, bool, bool,
                   bool, tuple[Printer, ...], tuple[Printer, ...]]
    # ScriptFormatter._plan: (fields, layout, header function, plain stack line)
    Plan = tuple[Fields, Layout, Callable[[SymbolizedSample], str], bool]
    # kernel_symbols: a table, or what loads it when first needed
    KernelTable = KernelSymbols | Callable[[], KernelSymbols | None]

# The fields process_event() prints between the event (or trace) and the ip,
# and those after the ip (after a stack too): ScriptFormatter._print_<field>.
_BEFORE_IP = ("addr", "data_src", "weight", "ins_lat")
_AFTER_IP = ("iregs", "uregs", "phys_addr", "data_page_size", "code_page_size")


class RelativeTime:
    """perf script's --reltime and --deltatime (perf_sample__fprintf_start):
    the time of every printed line, sample or side event, less the first
    non-zero time printed, or less the previous line's (0 for the first)."""

    def __init__(self, delta: bool) -> None:
        self.delta = delta
        self.last = 0

    def __call__(self, t: int) -> int:
        if self.delta:
            last, self.last = self.last, t
            return t - last if last else 0
        if not self.last:
            self.last = t
        return t - self.last


def _print_number(field: str, fmt: str, sample: SymbolizedSample, out: list[str]) -> None:
    value = sample.fields.get(field)
    if value is not None:
        out.append(fmt % value)


def _print_page_size(field: str, sample: SymbolizedSample, out: list[str]) -> None:
    size = sample.fields.get(field)
    if size is not None:
        out.append(" " + page_size_name(size))


@dataclass(frozen=True, slots=True)
class ScriptOptions:
    """What the command line asks of the sample lines.  fields: -F, perf's
    syntax.  hide_call_graph: perf's -G, a sample on one line with its own
    ip.  reltime/deltatime: times relative to the first line / the previous
    one.  kernel_path: the kernel dso's name with --show-kernel-path (the
    vmlinux its symbols came from)."""
    fields: str | None = None
    nanosecs: bool = False
    hide_call_graph: bool = False
    reltime: bool = False
    deltatime: bool = False
    full_source_path: bool = False
    kernel_path: str | None = None


class ScriptFormatter:
    def __init__(self, pf: PerfFile, options: ScriptOptions = ScriptOptions(),
                 kernel_symbols: KernelTable | None = None,
                 feature_printer: PipeFeaturePrinter | None = None,
                 data_frame: Callable[[SymbolizedSample, int], StackFrame] | None = None
                 ) -> None:
        """kernel_symbols: a kallsyms table for %pS-style tracepoint fields
        (and TEXT_POKE addresses).  feature_printer: prints a pipe's
        HEADER_FEATURE records (--header).  data_frame(sample, addr): the
        map and symbol of a data address, for the addr field of page-fault
        samples (with sym and dso asked for)."""
        self.pf = pf
        self.spec = parse_field_spec(options.fields)
        self.nanosecs = options.nanosecs
        self.hide_call_graph = options.hide_call_graph
        self.reltime = RelativeTime(options.deltatime) \
            if (options.reltime or options.deltatime) else None
        self.kernel_path = options.kernel_path
        self.feature_printer = feature_printer
        self.data_frame = data_frame
        # {event index: whether its addr names a symbol (_addr_names_symbol)}
        self._addr_named: dict[int, bool] = {}
        self._name_width: int | None = None
        self.frame_text = FrameLines(options.kernel_path, options.full_source_path)
        self._stack_text = self.frame_text.stack_text
        self._has: dict[Fields, Layout] = {}
        # event index -> (fields, layout, header function, plain stack line)
        self._stack_plans: dict[int, Plan] = {}
        self._flat_plans: dict[int, Plan] = {}
        self._tracer: TracePrinter | Literal[False] | None = None
        self.kernel_symbols = kernel_symbols
        self._fields: dict[int, Fields] = {}
        self._data_src_width = 0
        self._regs_arch: str | None = None     # perf_env__arch(), when first needed

    def fields_for(self, event: EventAttr) -> Fields:
        got = self._fields.get(event.index)
        if got is None:
            got = self._fields[event.index] = event_fields(self.pf, self.spec,
                                                           self.hide_call_graph, event)
        return got

    def _layout_of(self, fields: Fields) -> Layout:
        layout = self._has.get(fields)
        if layout is None:
            layout = self._has[fields] = self._layout(fields)
        return layout

    def _layout(self, fields: Fields) -> Layout:
        """What a field set prints, worked out once per set."""
        has = frozenset(fields).__contains__
        before_ip = tuple(self._printer(f) for f in _BEFORE_IP if has(f))
        after_ip = tuple(self._printer(f) for f in _AFTER_IP if has(f))
        return (has, has("comm"), has("pid"), has("tid"), has("cpu"), has("time"),
                has("period"), has("event"), has("trace"), has("ip"), before_ip, after_ip)

    def _plan(self, event: EventAttr, has_stack: bool) -> Plan:
        """What the samples of one event print, worked out once per event
        (and whether it has a stack): (fields, layout, header function,
        whether the line is just the header and the stack)."""
        fields = self.fields_for(event)
        layout = self._layout_of(fields)
        header = self._header_for(event, layout, has_stack)
        (has, f_comm, f_pid, f_tid, f_cpu, f_time, f_period, f_event, f_trace, f_ip,
         before_ip, after_ip) = layout
        plain_stack = has_stack and f_ip and not (f_trace or before_ip or after_ip)
        plan = (fields, layout, header, plain_stack)
        (self._stack_plans if has_stack else self._flat_plans)[event.index] = plan
        return plan

    def format(self, sample: SymbolizedSample) -> str:
        event = sample.event
        has_stack = (event.has_callchain or len(sample.frames) > 1) and not self.hide_call_graph
        plan = (self._stack_plans if has_stack else self._flat_plans).get(event.index)
        if plan is None:
            plan = self._plan(event, has_stack)
        fields, layout, header, plain_stack = plan
        if not fields:
            return ""
        if plain_stack:
            # The usual line: the header, then the stack's text (shared by
            # every sample with this stack).
            text = self._stack_text(sample.frames, fields, layout[0], sample.unwind is not None)
            return header(sample) + "\n" + text + "\n"
        (has, f_comm, f_pid, f_tid, f_cpu, f_time, f_period, f_event, f_trace, f_ip,
         before_ip, after_ip) = layout
        out = [header(sample)]
        if f_trace and "raw" in sample.fields:
            # (The space or newline after it is the ip's, as in perf.)
            out.append(self._trace(sample))
        for field in before_ip:
            field(sample, out)
        if f_ip and has_stack:
            out.append("\n")
            out.append(self._stack_text(sample.frames, fields, has, sample.unwind is not None))
            for field in after_ip:
                field(sample, out)
            out.append("\n")
            return "".join(out)
        if f_ip and sample.frames:
            # Without a stack perf prints the sample's own address (avma)
            # and the function there (sample__fprintf_sym: not an inlined one).
            frame = sample.frames[0]
            if frame.inlined:
                frame = next((f for f in sample.frames if not f.inlined), frame)
            out.append(self.frame_text.line(frame, has, " ", "", sample.ip))
        for field in after_ip:
            field(sample, out)
        # (A trace text may end in a newline of its print fmt, ext4_fsmap_*'s:
        # perf prints its own after it all the same, an empty line.)
        out.append("\n")
        return "".join(out)

    def name_width(self) -> int:
        if self._name_width is None:
            # After the names are final (EVENT_DESC, tracing data).
            self._name_width = max((len(ea.name) for ea in self.pf.attrs), default=0)
        return self._name_width

    def _header_for(self, event: EventAttr, layout: Layout, has_stack: bool
                    ) -> Callable[[SymbolizedSample], str]:
        """The start of the line of a sample of one event (comm to event
        name), as one % format: a function generated once per event (the
        event name, its width and which fields print are fixed by then),
        several times faster than asking field by field for every sample.
        "%5d.%06d" is perf's "%12s" of "%d.%06d" for any number of seconds.
        A sample without a cpu (a group member whose leader has none) prints
        none, as perf does."""
        (has, f_comm, f_pid, f_tid, f_cpu, f_time, f_period, f_event, f_trace, f_ip,
         before_ip, after_ip) = layout
        fmt, args = [], []
        if f_comm:
            fmt.append("%s " if f_ip and has_stack else "%16s ")
            args.append("s.comm")
        if f_pid and f_tid:
            fmt.append("%5d/%-5d ")
            args += ["s.pid", "s.tid"]
        elif f_pid or f_tid:
            fmt.append("%5d ")
            args.append("s.pid" if f_pid else "s.tid")
        cpu_at = None
        if f_cpu and event.sample_type & ST.CPU:
            cpu_at = (len(fmt), len(args))
            fmt.append("[%03d] ")
            args.append("s.cpu")
        if has("misc"):
            fmt.append("%s")
            args.append("misc_text(s.record.misc, %d)" % RT.SAMPLE)
        time = "s.time"
        if f_time:
            if self.reltime is not None:
                time = "t"          # t = rel(s.time), once per line
            fmt.append("%5d.%09d: " if self.nanosecs else "%5d.%06d: ")
            args += ["%s // 1000000000" % time,
                     "%s %% 1000000000%s" % (time, "" if self.nanosecs else " // 1000")]
        if f_period:
            fmt.append("%10d ")
            args.append("s.period")
        if f_event:
            fmt.append(("%*s: " % (self.name_width(), event.name)).replace("%", "%%"))
        if has("flags"):
            # perf_sample__fprintf_flags(): "  %-21s " of the branch flags an
            # instruction trace's decoder gives its samples; none in a
            # recording's own samples
            fmt.append(_NO_FLAGS)
        text = "".join(fmt)
        if not args:
            text = text % ()
            return lambda s: text
        body = "    t = rel(s.time)\n" if time == "t" else ""
        if cpu_at is not None:
            f, a = cpu_at
            body += "    if s.cpu is None:\n        return %r %% (%s)\n" % (
                "".join(fmt[:f] + fmt[f + 1:]), "".join(x + ", " for x in args[:a] + args[a + 1:]))
        namespace: dict[str, Any] = {"rel": self.reltime, "misc_text": misc_text}
        exec("def header(s):\n%s    return %r %% (%s)\n"
             % (body, text, "".join(x + ", " for x in args)), namespace)
        return namespace["header"]

    # The memory fields, each as process_event() prints it; a field that a
    # sample lacks prints nothing (one asked for with -F that the event's
    # samples cannot give was refused before: check_output_fields).
    def _printer(self, field: str) -> Printer:
        if field == "addr":
            return self._print_addr
        if field == "phys_addr":
            return functools.partial(_print_number, field, "%16x")
        if field in ("data_page_size", "code_page_size"):
            return functools.partial(_print_page_size, field)
        if field in ("iregs", "uregs"):
            return functools.partial(self._print_regs, field)
        return getattr(self, "_print_" + field)

    def _print_regs(self, field: str, sample: SymbolizedSample, out: list[str]) -> None:
        """perf_sample__fprintf_{i,u}regs(): the registers of the attr's mask,
        named for the recording's arch."""
        if self._regs_arch is None:
            from ..format import Feature
            self._regs_arch = perf_arch(self.pf.feature(Feature.ARCH) or os.uname().machine)
        if field == "uregs":
            regs, mask = sample.fields.get("regs_user"), sample.event.attr["sample_regs_user"]
        else:
            regs, mask = sample.fields.get("regs_intr"), sample.event.attr["sample_regs_intr"]
        text = regs_text(regs, mask, self._regs_arch)
        if text:
            out.append(text)

    def _print_addr(self, sample: SymbolizedSample, out: list[str]) -> None:
        """perf_sample__fprintf_addr(): the address; for a page fault's, the
        symbol (with its offset with symoff) and the dso there, as asked."""
        addr = sample.fields.get("addr")
        if addr is None:
            return
        out.append("%16x" % addr)
        event = sample.event
        named = self._addr_named.get(event.index)
        if named is None:
            named = self._addr_named[event.index] = _addr_names_symbol(event)
        if not named or self.data_frame is None:
            return
        fields = self.fields_for(event)
        if "sym" not in fields and "dso" not in fields:
            return
        frame = self.data_frame(sample, addr)
        if "sym" in fields:
            if frame.symbol is None:
                out.append(" [unknown]")
            elif "symoff" in fields and frame.offset is not None:
                out.append(" %s+0x%x" % (frame.symbol, frame.offset))
            else:
                out.append(" " + frame.symbol)
        if "dso" in fields:
            out.append(" (%s)" % frame.dso)

    def _print_data_src(self, sample: SymbolizedSample, out: list[str]) -> None:
        src = sample.fields.get("data_src")
        if src is not None:
            text = data_src_text(src)
            # data_src__fprintf pads to the widest text printed so far.
            if len(text) > self._data_src_width:
                self._data_src_width = len(text)
            out.append(text.ljust(self._data_src_width))

    def _print_weight(self, sample: SymbolizedSample, out: list[str]) -> None:
        weight = weight_and_ins_lat(sample.fields, sample.event.sample_type)[0]
        if weight is not None:
            out.append("%16d" % weight)

    def _print_ins_lat(self, sample: SymbolizedSample, out: list[str]) -> None:
        ins_lat = weight_and_ins_lat(sample.fields, sample.event.sample_type)[1]
        if ins_lat is not None:
            out.append("%16d" % ins_lat)


    def format_side_event(self, event: SideEvent) -> str:
        """A --show-*-events line (perf script's print_event_with_time()):
        the start of a sample line from the record's sample_id (comm,
        pid/tid, cpu, time), then the record as perf_event__fprintf()
        prints it."""
        rec, f = event.record, event.fields
        rtype = rec.type
        if rtype == RT.FINISHED_ROUND:
            # process_finished_round_event(): the record alone.
            return "PERF_RECORD_FINISHED_ROUND\n"
        if rtype == RT.HEADER_FEATURE:
            printer = self.feature_printer
            return printer.feed_record(f) if printer is not None else ""
        start = ""
        if rec.attr is not None:
            start = side_event_start(event, self.fields_for(rec.attr), self.hide_call_graph,
                                     self._time_text)
        return start + describe_side_event(rtype, rec.misc, f, self._kernel_symbol_at) + "\n"

    def _time_text(self, time: int) -> str:
        if self.reltime is not None:
            time = self.reltime(time)
        return format_time(time, self.nanosecs)

    def _kernel_table(self) -> KernelSymbols | None:
        """The kallsyms table, or None; kernel_symbols may be a callable
        that loads it: called at the first use, once."""
        table = self.kernel_symbols
        if callable(table) and not hasattr(table, "lookup"):
            table = self.kernel_symbols = table()
        return table  # type: ignore[return-value]  # (a table or None by now)

    def _kernel_symbol_at(self, address: int) -> str:
        """'name+0xoff' of a kernel address (TEXT_POKE), or ''."""
        table = self._kernel_table()
        sym = table.lookup(address) if table is not None else None
        if sym is None:
            return ""
        return "%s+0x%x" % (sym.name, address - sym.start)


    def frame_lines(self, frames: Sequence[StackFrame], event: EventAttr) -> str:
        """The lines of a -g stack's frames as format() makes them for a
        sample of the event (the compiled core keeps them by address)."""
        fields = self.fields_for(event)
        return self.frame_text.lines(frames, fields, self._layout_of(fields)[0])

    def _trace(self, sample: SymbolizedSample) -> str:
        if self._tracer is None:
            # (imported here: only tracepoint events print their fields)
            from ..tracefmt import TracePrinter
            self._tracer = TracePrinter.for_file(self.pf, self._kernel_table()) or False
        if not self._tracer:
            return ""
        return self._tracer.format(sample.event.attr["config"],
                                   bytes(sample.fields["raw"]["data"])) or ""


# PERF_COUNT_SW_PAGE_FAULTS, _MIN, _MAJ; PERF_COUNT_HW_BRANCH_INSTRUCTIONS
# (the configs are the places of their names in perf's tables)
_PAGE_FAULTS = tuple(SOFTWARE_NAMES.index(n)
                     for n in ("page-faults", "minor-faults", "major-faults"))
_HW_BRANCH_INSTRUCTIONS = HARDWARE_NAMES.index("branches")


def _addr_names_symbol(event: EventAttr) -> bool:
    """perf's sample_addr_correlates_sym(): a sample's addr is a place in
    the process (a page fault's address; a BTS branch's target), named with
    the symbol and dso there; any other event's addr is just a number."""
    attr = event.attr
    if attr["type"] == AttrType.SOFTWARE and attr["config"] in _PAGE_FAULTS:
        return True
    # perf's is_bts_event(): branch instructions sampled one by one
    return bool(attr["type"] == AttrType.HARDWARE and attr["config"] & _HW_BRANCH_INSTRUCTIONS
                and attr["sample_period"] == 1)


# The flags column of a sample without branch flags: "  %-21s " of "".
_NO_FLAGS = " " * 24
