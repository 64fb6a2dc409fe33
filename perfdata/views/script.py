"""`perfdata script`: the text `perf script` prints, from perfdata's own stacks.

Field selection and layout follow tools/perf/builtin-script.c (perf 6.1):
the sample header line (comm, pid/tid, cpu, time, period, event), then either
the ip/sym/dso on the same line or, for samples with a stack, one line per
frame: a tab, the address in 16 columns, `sym+0xoff`, and `(dso)`.
"""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ..format import (MISC_COMM_EXEC, MISC_GUEST_KERNEL, MISC_GUEST_USER, MISC_HYPERVISOR,
                      MISC_KERNEL, MISC_MMAP_DATA, MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT,
                      MISC_USER, AttrType, RecordType as RT, SampleType as ST)
from ..format import HARDWARE_NAMES, SOFTWARE_NAMES, PerfDataError
from ..session.machine import KERNEL_DSO
from ..format import weight_and_ins_lat
from ..resolve.hitrate import HitRate
from .dsoname import dso_short_name
from .memdata import data_src_text, page_size_name
from .regs import perf_arch, regs_text

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Generator, Iterable, Sequence

    from symbolize import KernelSymbols

    from ..format import PerfFile, EventAttr
    from ..resolve.frames import StackFrame
    from ..session.stream import SideEvent
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample
    from ..tracefmt import TracePrinter
    from .header import PipeFeaturePrinter
    from ..run.sharded import Described, Share, Tagged

    # The fields a sample of one event prints, in order.
    Fields = tuple[str, ...]
    # A field printed before or after the ip: appends its text to `out`.
    Printer = Callable[[SymbolizedSample, list[str]], None]
    # ScriptFormatter._layout: (has, then comm pid tid cpu time period event
    # trace ip: is it printed, then the printers before and after the ip)
    Layout = tuple[Callable[[str], bool], bool, bool, bool, bool, bool, bool, bool, bool,
                   bool, tuple[Printer, ...], tuple[Printer, ...]]
    # ScriptFormatter._plan: (fields, layout, header function, plain stack line)
    Plan = tuple[Fields, Layout, Callable[[SymbolizedSample], str], bool]
    # parse_field_spec: (attr type or None, exact or None, add, remove)
    FieldSpec = tuple[int | None, list[str] | None, list[str], list[str]]
    # kernel_symbols: a table, or what loads it when first needed
    KernelTable = KernelSymbols | Callable[[], KernelSymbols | None]

ALL_FIELDS = ("comm", "pid", "tid", "time", "cpu", "event", "ip", "sym", "symoff", "dso",
              "addr", "period", "srcline", "trace", "callindent", "iregs", "uregs",
              "brstack", "misc", "ipc", "insn", "data_src", "weight", "phys_addr",
              "data_page_size", "code_page_size", "ins_lat")

_DEFAULT_HW = ("comm", "tid", "cpu", "time", "event", "ip", "sym", "symoff", "dso", "period")
_DEFAULT_TRACE = ("comm", "tid", "cpu", "time", "event", "trace")
# PERF_TYPE_RAW (e.g. mem-loads, MEM_TRANS_RETIRED.*) prints the memory fields too.
_DEFAULT_RAW = _DEFAULT_HW + ("addr", "data_src", "weight", "phys_addr", "data_page_size",
                              "code_page_size", "ins_lat")
# The fields perf drops silently from its defaults when the samples lack them
# (evsel__check_attr).  (perf prints a period even without PERIOD in
# sample_type: the attr's.)
_NEEDS = {"cpu": ST.CPU, "time": ST.TIME, "addr": ST.ADDR, "ip": ST.IP, "tid": ST.TID,
          "pid": ST.TID, "data_src": ST.DATA_SRC, "weight": ST.WEIGHT | ST.WEIGHT_STRUCT,
          "ins_lat": ST.WEIGHT_STRUCT, "phys_addr": ST.PHYS_ADDR,
          "data_page_size": ST.DATA_PAGE_SIZE, "code_page_size": ST.CODE_PAGE_SIZE}

# Frame lines kept (with their frames: ~0.4 KiB each) for the stacks that
# share frames; cleared when full.
FRAME_LINES_KEPT = 16384
# Stack texts kept (cleared when full), and the lookups per decision whether
# stacks repeat enough to keep their texts (ScriptFormatter._stack_text).
STACK_TEXTS_KEPT = 16384
# ... and at most this many characters of them: a DWARF stack's text is ~2 KiB
# (a -g one ~0.3), and 16,384 of those, with the frames they keep alive, were
# the largest part of the heap on a 5.6 GB DWARF recording (31 of 85 MiB).
STACK_TEXT_CHARS = 8 << 20
STACK_TEXT_WINDOW = 1024
# The fields process_event() prints between the event (or trace) and the ip,
# and those after the ip (after a stack too): ScriptFormatter._print_<field>.
_BEFORE_IP = ("addr", "data_src", "weight", "ins_lat")
_AFTER_IP = ("iregs", "uregs", "phys_addr", "data_page_size", "code_page_size")


def default_fields(event: EventAttr, any_tracepoint_callchain: bool = False) -> list[str]:
    if event.attr["type"] == AttrType.TRACEPOINT:
        fields = list(_DEFAULT_TRACE)
        if any_tracepoint_callchain:
            # perf adds the stack to tracepoints when one of them has one.
            fields += ["ip", "sym", "symoff", "dso"]
    elif event.attr["type"] == AttrType.RAW:
        fields = list(_DEFAULT_RAW)
    else:
        fields = list(_DEFAULT_HW)
    return [f for f in fields if f not in _NEEDS or event.sample_type & _NEEDS[f]]


# The event types perf's -F names (parse_output_fields); "synth" selects
# none of a file's events here.
_SPEC_TYPES = {"hw": AttrType.HARDWARE, "sw": AttrType.SOFTWARE, "trace": AttrType.TRACEPOINT,
               "raw": AttrType.RAW, "break": AttrType.BREAKPOINT, "synth": -1}


# Every field perf 6.1's -F knows (builtin-script.c all_output_options);
# perfdata prints those of ALL_FIELDS and takes the others without output.
PERF_FIELDS = frozenset(ALL_FIELDS) | frozenset((
    "trace", "brstacksym", "flags", "bpf-output", "insnlen", "brstackinsn", "brstackoff",
    "synth", "metric", "srccode", "tod", "brstackinsnlen", "machine_pid", "vcpu"))


def valid_fields() -> list[str]:
    """The names -F takes, for its error and shell completion: those
    perfdata prints in their usual order, then perf's others (accepted,
    printed as nothing)."""
    return list(ALL_FIELDS) + sorted(PERF_FIELDS - frozenset(ALL_FIELDS))


# perf's event_type(): the name -F's messages give an output type.
_TYPE_NAMES = {AttrType.HARDWARE: "hardware", AttrType.SOFTWARE: "software",
               AttrType.TRACEPOINT: "tracepoint", AttrType.HW_CACHE: "hardware-cache"}
# The types of perf 6.1's output[] table (hw, sw, tracepoint, hw-cache, raw,
# breakpoint, synth, other), for the warnings of a field no type takes.
_OUTPUT_TYPES = (AttrType.HARDWARE, AttrType.SOFTWARE, AttrType.TRACEPOINT, AttrType.HW_CACHE,
                 AttrType.RAW, AttrType.BREAKPOINT, -1, -2)


def type_name(etype: int) -> str:
    return _TYPE_NAMES.get(etype, "unknown")     # type: ignore[call-overload]


def invalid_fields(etype: int) -> tuple[str, ...]:
    """output[type].invalid_fields: what -F cannot give events of a type."""
    if etype == AttrType.TRACEPOINT:
        return ()
    return ("trace",) if etype == AttrType.SOFTWARE else ("trace", "bpf-output")


def _spec_body(text: str) -> tuple[str | None, str]:
    """(the type prefix or None, the fields): perf takes everything before
    the string's first ':' for the type (strchr), wherever it is."""
    if ":" in text:
        name, body = text.split(":", 1)
        return name, body
    return None, text


def field_spec(text: str) -> str:
    """-F as perf checks it (parse_output_fields), token by token in its
    order: an unknown event type, an empty list for every type, +/-fields
    mixed with plain ones, an unknown field (names taken as written:
    strtok on ',' alone, no blanks dropped), or with a type one that type
    cannot print, is refused before anything is read."""
    import argparse
    name, body = _spec_body(text)
    etype = None
    if name is not None:
        if name not in _SPEC_TYPES:
            raise argparse.ArgumentTypeError("Invalid event type %r in field string %r "
                                             "(valid types: %s)"
                                             % (name, text, ",".join(_SPEC_TYPES)))
        etype = _SPEC_TYPES[name]
    elif not text:
        raise argparse.ArgumentTypeError("Cannot set fields to 'none' for all event types.")
    change = None
    for item in body.split(","):
        if not item:
            continue
        kind = item[0] if item[0] in "+-" else "="
        if (change not in (None, "=")) if kind == "=" else (change == "="):
            raise argparse.ArgumentTypeError("Cannot mix +-field with overridden fields: %r"
                                             % text)
        change = kind
        field = item if kind == "=" else item[1:]
        if field == "flags":
            continue
        if field not in PERF_FIELDS:
            raise argparse.ArgumentTypeError("Invalid field requested: %r (valid fields: %s)"
                                             % (field, ",".join(valid_fields())))
        if etype is not None and field in invalid_fields(etype):
            raise argparse.ArgumentTypeError("'%s' not valid for %s events." % (field, type_name(etype)))
    return text


def field_warnings(text: str | None) -> list[str]:
    """perf's warnings for a list for every type naming a field some types
    cannot print: "'trace' not valid for hardware events. Ignoring.", once a
    type of its output table (those types print the rest)."""
    if text is None or _spec_body(text)[0] is not None:
        return []
    out = []
    for item in text.split(","):
        field = item[1:] if item[:1] in ("+", "-") else item
        for etype in _OUTPUT_TYPES:
            if field and field in invalid_fields(etype):
                out.append("'%s' not valid for %s events. Ignoring." % (field, type_name(etype)))
    return out


def parse_field_spec(spec: str | None) -> FieldSpec | None:
    """perf's -F syntax: 'comm,tid,ip' or 'type:comm,tid' or '+field'/'-field'.

    (attr type or None, exact, add, remove): with a type (hw, sw, trace, raw,
    break) the fields are those of that type's events only; the others keep
    their defaults.  exact is None where the defaults stay: perf resets them
    only for a string with no '+' or '-' anywhere (a name with a dash,
    bpf-output, counts), and a plain field then adds to them."""
    if spec is None:
        return None
    name, body = _spec_body(spec)
    etype = _SPEC_TYPES.get(name) if name is not None else None
    reset = "+" not in body and "-" not in body
    add: list[str]
    remove: list[str]
    exact: list[str]
    add, remove, exact = [], [], []
    for item in body.split(","):
        if not item:
            continue
        if item.startswith("+"):
            add.append(item[1:])
        elif item.startswith("-"):
            remove.append(item[1:])
        else:
            (exact if reset else add).append(item)
    return etype, exact if reset else None, add, remove


def format_time(ns: int, nanosecs: bool = False) -> str:
    secs, rest = divmod(ns, 1_000_000_000)
    if nanosecs:
        return "%5d.%09d: " % (secs, rest)
    return "%12s: " % ("%d.%06d" % (secs, rest // 1000))


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


def _carries_stack(event: EventAttr) -> bool:
    """A callchain, a branch stack, or what a DWARF unwind needs."""
    st = event.sample_type
    return bool(st & (ST.CALLCHAIN | ST.BRANCH_STACK) or
                (st & ST.REGS_USER and st & ST.STACK_USER))


def _print_number(field: str, fmt: str, sample: SymbolizedSample, out: list[str]) -> None:
    value = sample.fields.get(field)
    if value is not None:
        out.append(fmt % value)


def _print_page_size(field: str, sample: SymbolizedSample, out: list[str]) -> None:
    size = sample.fields.get(field)
    if size is not None:
        out.append(" " + page_size_name(size))


class ScriptFormatter:
    def __init__(self, pf: PerfFile, field_spec: str | None = None, nanosecs: bool = False,
                 kernel_symbols: KernelTable | None = None, hide_call_graph: bool = False,
                 reltime: bool = False, deltatime: bool = False,
                 full_source_path: bool = False, kernel_path: str | None = None,
                 feature_printer: PipeFeaturePrinter | None = None,
                 data_frame: Callable[[SymbolizedSample, int], StackFrame] | None = None
                 ) -> None:
        """kernel_symbols: a kallsyms table for %pS-style tracepoint fields
        (and TEXT_POKE addresses).  hide_call_graph: perf's -G, a sample on
        one line with its own ip.  reltime/deltatime: times relative to the
        first line / the previous one.  kernel_path: the kernel dso's name
        with --show-kernel-path (the vmlinux its symbols came from).
        feature_printer: prints a pipe's HEADER_FEATURE records (--header).
        data_frame(sample, addr): the map and symbol of a data address, for
        the addr field of page-fault samples (with sym and dso asked for)."""
        self.pf = pf
        self.spec = parse_field_spec(field_spec)
        self.nanosecs = nanosecs
        self.hide_call_graph = hide_call_graph
        self.reltime = RelativeTime(deltatime) if (reltime or deltatime) else None
        self.full_source_path = full_source_path
        self.kernel_path = kernel_path
        self.feature_printer = feature_printer
        self.data_frame = data_frame
        # {event index: whether its addr names a symbol (_addr_names_symbol)}
        self._addr_named: dict[int, bool] = {}
        self._name_width: int | None = None
        # {id(frames): (frames, fields, their text)}, and whether stacks
        # repeat enough to keep their texts (see _stack_text)
        self._stacks: dict[int, tuple[Sequence[StackFrame], Fields, str]] = {}
        self._stack_chars = 0       # the length of the texts in _stacks
        self._text_rate = HitRate(STACK_TEXT_WINDOW)
        # {frame: its line} for the field set _frame_lines_for (a frame is
        # its own key: StackFrame hashes by identity)
        self._frame_lines: dict[StackFrame, str] = {}
        self._frame_lines_for: Fields | None = None
        # (the same for the user frames of DWARF stacks, with srcline)
        self._unwound_lines: dict[StackFrame, str] = {}
        # {fields: whether frame lines take the one-format path}
        self._plain_lines: dict[Fields, bool] = {}
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
        got: Sequence[str] | None
        got = self._fields.get(event.index)
        if got is None:
            # (Not with -G: perf's use_callchain is off then.)
            tp_chain = not self.hide_call_graph and any(
                ea.attr["type"] == AttrType.TRACEPOINT and ea.sample_type & ST.CALLCHAIN
                for ea in self.pf.attrs)
            if self.spec is None or self.spec[0] not in (None, event.attr["type"]):
                got = default_fields(event, tp_chain)
            else:
                etype, exact, add, remove = self.spec
                # (perf adds ip and sym to the tracepoints' defaults only where -F
                # left their type alone: output[TRACEPOINT].user_set)
                base = list(exact) if exact is not None else default_fields(event, False)
                base += [f for f in add if f not in base]
                # (a list for every type leaves out what a type cannot print)
                bad = invalid_fields(event.attr["type"]) if etype is None else ()
                got = [f for f in base if f not in remove and f not in bad]
                if self.pf.is_pipe and not self.hide_call_graph and any(
                        _carries_stack(ea) for ea in self.pf.attrs):
                    # perf's process_attr() (pipe mode only): with stacks in
                    # the samples, ip and sym print unless -F removed them.
                    got += [f for f in ("ip", "sym") if f not in got and f not in remove]
            if all(f == "flags" for f in got):
                # perf's output[type].fields == 0 (flags is no field of it):
                # the samples of the type are not shown
                got = ()
            self._fields[event.index] = got = tuple(got)
        return got

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
        layout = self._has.get(fields)
        if layout is None:
            layout = self._has[fields] = self._layout(fields)
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
            out.append(self._frame_line(frame, has, " ", "", sample.ip))
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
        ea = rec.attr
        out = []
        if ea is not None:
            if ea.sample_id_all:
                sid = f.get("sample_id") or {}
                pid, tid = _s32(sid.get("pid", -1)), _s32(sid.get("tid", -1))
                cpu, time = _s32(sid.get("cpu", -1)), sid.get("time", 0)
            else:
                # Without sample_id_all perf uses what the record says.
                cpu = 0
                time = f.get("time", 0) if rtype in (RT.FORK, RT.EXIT) else 0
                if "pid" in f and "tid" in f and rtype != RT.KSYMBOL:
                    pid, tid = _s32(f["pid"]), _s32(f["tid"])
                else:
                    pid = tid = -1
            fields = self.fields_for(ea)
            has = set(fields).__contains__
            if has("comm"):
                comm = event.thread.comm if event.thread is not None else ":-1"
                chain = has("ip") and bool(ea.sample_type & ST.CALLCHAIN) and \
                    not self.hide_call_graph
                out.append(("%s " if chain else "%16s ") % comm)
            if has("pid") and has("tid"):
                out.append("%5d/%-5d " % (pid, tid))
            elif has("pid"):
                out.append("%5d " % pid)
            elif has("tid"):
                out.append("%5d " % tid)
            if has("cpu"):
                out.append("[%03d] " % cpu)
            if has("misc"):
                out.append(misc_text(rec.misc, rtype))
            if has("time"):
                if self.reltime is not None:
                    time = self.reltime(time)
                out.append(format_time(time, self.nanosecs))
        out.append(describe_side_event(rtype, rec.misc, f, self._kernel_symbol_at))
        return "".join(out) + "\n"

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
        """The lines of a -g stack's frames as _stack_text makes them for a
        sample of the event (the compiled core keeps them by address)."""
        fields = self.fields_for(event)
        layout = self._has.get(fields)
        if layout is None:
            layout = self._has[fields] = self._layout(fields)
        has = layout[0]
        plain = self._plain_lines.get(fields)
        if plain is None:
            plain = self._plain_lines[fields] = (
                has("sym") and has("symoff") and has("dso") and not has("srcline") and
                self.kernel_path is None)
        return "".join(self._frame_line(fr, has, "\t", "\n", plain=plain) for fr in frames)

    def _stack_text(self, frames: Sequence[StackFrame], fields: Fields,
                    has: Callable[[str], bool], unwound: bool = False) -> str:
        """The callchain lines.  Samples sharing a stack (the resolver's kept
        frame list) share its text, kept while stacks repeat (HitRate: where
        each process has its own address space, make, no later sample read
        the texts kept).  unwound: the user frames are the DWARF unwinder's
        (their srcline where none is known differs: see _frame_line)."""
        rate = self._text_rate
        probe = rate.keeping or rate.probe()
        if probe:
            hit = self._stacks.get(id(frames))
            if hit is not None and hit[0] is frames and hit[1] is fields:
                rate.looked_up(True)
                return hit[2]
            rate.looked_up(False)
        # Frames are shared by every stack through their address (the
        # resolver's caches): their lines are made once, kept by frame.
        lines = self._frame_lines
        if self._frame_lines_for is not fields:
            lines.clear()
            self._unwound_lines.clear()
            self._frame_lines_for = fields
        if unwound and has("srcline"):
            lines = self._unwound_lines
        plain = self._plain_lines.get(fields)
        if plain is None:
            # the default fields: one format per line (see _frame_line)
            plain = self._plain_lines[fields] = (
                has("sym") and has("symoff") and has("dso") and not has("srcline") and
                self.kernel_path is None)
        # (the lines met before found by map(), C's own loop, the others made)
        # (str, or None for a line not made yet: none is left at the join)
        parts: list[Any] = list(map(lines.get, frames))
        if None in parts:
            if len(lines) > FRAME_LINES_KEPT:
                lines.clear()
            for i, line in enumerate(parts):
                if line is None:
                    fr = frames[i]
                    line = parts[i] = lines[fr] = self._frame_line(fr, has, "\t", "\n",
                                                                   plain=plain,
                                                                   unwound=unwound)
        text = "".join(parts)
        if probe:
            if len(self._stacks) > STACK_TEXTS_KEPT or self._stack_chars > STACK_TEXT_CHARS:
                self._stacks.clear()
                self._stack_chars = 0
            self._stacks[id(frames)] = (frames, fields, text)
            self._stack_chars += len(text)
        return text

    def _frame_line(self, fr: StackFrame, has: Callable[[str], bool], lead: str, end: str,
                    address: int | None = None, plain: bool = False,
                    unwound: bool = False) -> str:
        """One frame's text.  plain: the fields are sym, symoff and dso (no
        srcline, no --show-kernel-path): then a line is one format.
        unwound: a frame of a DWARF stack (see srcline below)."""
        if plain and address is None and not (fr.inlined or fr.stitched):
            if fr.symbol is None:
                return "%s%16x [unknown] (%s)%s" % (lead, fr.address, fr.dso, end)
            if fr.offset is not None:
                return "%s%16x %s+0x%x (%s)%s" % (lead, fr.address, fr.symbol, fr.offset,
                                                  fr.dso, end)
            return "%s%16x %s (%s)%s" % (lead, fr.address, fr.symbol, fr.dso, end)
        parts = [lead]
        parts.append("%16x" % (fr.address if address is None else address))
        if has("sym"):
            name = fr.symbol if fr.symbol is not None else "[unknown]"
            if has("symoff") and fr.symbol is not None and fr.offset is not None:
                parts.append(" %s+0x%x" % (name, fr.offset))
            else:
                parts.append(" " + name)
        # perf prints "(inlined)" in place of the dso for inline frames,
        # after the source line if there is one.
        inlined_after = fr.inlined and has("srcline") and fr.srcline is not None
        if fr.inlined:
            if not inlined_after:
                parts.append(" (inlined)")
        elif has("dso"):
            if self.kernel_path is not None and fr.kernel and fr.dso == KERNEL_DSO:
                parts.append(" (%s)" % self.kernel_path)
            else:
                parts.append(" (%s)" % fr.dso)
        if fr.stitched:
            # --stitch: not in this sample's own stack copy
            parts.append(" [stitched]")
        if has("srcline"):
            if fr.srcline:
                # perf prints the file's base name, the whole path with
                # --full-source-path.
                path, _, line = fr.srcline.rpartition(":")
                if not self.full_source_path:
                    path = os.path.basename(path)
                parts.append("\n  %s:%s" % (path, line))
            elif fr.note != "no-map":
                # No line known: perf 6.1 prints "dso[address]" (objdump's
                # address) where the dso's short name is bracketed (the
                # kernel without a vmlinux, a module, the vdso, a JIT's
                # "[JIT] tid PID") and for a PLT stub, and nothing for the
                # other code of a binary without line tables (seen in perf's
                # output: of libstdc++ and libgcc_s, only their PLT stubs),
                # nor for an address in no map.
                #   An address of a binary without symbols (but PLT stubs)
                # gets "dso[address]" too (addr2line names no function there;
                # where it names one, perf prints nothing), and in a DWARF
                # stack a user frame in a named function without a line gets
                # "??:0" (perf's, as seen: the unwound stack's frames go
                # through its inline-aware lookup).
                short = dso_short_name(fr)
                if fr.source == "plt" or short.startswith("[") or fr.note == "no-symbols":
                    parts.append("\n  %s[%x]" % (short,
                                                   fr.address if fr.svma is None else fr.svma))
                elif unwound and not fr.kernel and fr.symbol is not None:
                    parts.append("\n  ??:0")
        if inlined_after:
            parts.append(" (inlined)")
        parts.append(end)
        return "".join(parts)

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
# perf_sample__fprintf_start()'s misc letters, each flag tested as
# (misc & F) == F: so a hypervisor sample (3) reads K, U and H.
_MISC_MODES = ((MISC_KERNEL, "K"), (MISC_USER, "U"), (MISC_HYPERVISOR, "H"),
               (MISC_GUEST_KERNEL, "G"), (MISC_GUEST_USER, "g"))
_misc_texts: dict[tuple[int, int], str] = {}


def misc_text(misc: int, rtype: int) -> str:
    """The -F misc column of a record: its mode letters, M (an MMAP of
    data), E (a COMM of an exec), S and p (a SWITCH out, preempted), padded
    to 6 as perf pads it ("%*s" of " " at 6 minus the letters)."""
    key = (misc, rtype)
    got = _misc_texts.get(key)
    if got is None:
        letters = "".join(ch for flag, ch in _MISC_MODES if misc & flag == flag)
        if rtype in (RT.MMAP, RT.MMAP2):
            letters += "M" if misc & MISC_MMAP_DATA else ""
        elif rtype == RT.COMM:
            letters += "E" if misc & MISC_COMM_EXEC else ""
        elif rtype in (RT.SWITCH, RT.SWITCH_CPU_WIDE) and misc & MISC_SWITCH_OUT:
            letters += "Sp" if misc & MISC_SWITCH_OUT_PREEMPT else "S"
        got = _misc_texts[key] = letters + "%*s" % (6 - len(letters), " ")
    return got


def _c_hex(value: int) -> str:
    """C's %#x: 0 prints as 0, not 0x0."""
    return "%#x" % value if value else "0"


def _s32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


# perf_ns__names (util/namespaces.c).
_NAMESPACES = ("net", "uts", "ipc", "pid", "user", "mnt", "cgroup")


def describe_side_event(rtype: int, misc: int, f: dict[str, Any],
                        kernel_symbol_at: Callable[[int], str] | None = None) -> str:
    """perf_event__fprintf() of a record (util/event.c), without its last
    newline.  kernel_symbol_at(address): 'sym+0xoff' for TEXT_POKE."""
    if rtype == RT.COMM:
        return "PERF_RECORD_COMM%s: %s:%d/%d" % (" exec" if misc & MISC_COMM_EXEC else "",
                                                 f["comm"], _s32(f["pid"]), _s32(f["tid"]))
    if rtype in (RT.FORK, RT.EXIT):
        return "PERF_RECORD_%s(%d:%d):(%d:%d)" % (RT(rtype).name, _s32(f["pid"]), _s32(f["tid"]),
                                                  _s32(f["ppid"]), _s32(f["ptid"]))
    if rtype == RT.MMAP:
        return "PERF_RECORD_MMAP %d/%d: [%s(%s) @ %s]: %s %s" % (
            _s32(f["pid"]), _s32(f["tid"]), _c_hex(f["start"]), _c_hex(f["len"]),
            _c_hex(f["pgoff"]), "r" if misc & MISC_MMAP_DATA else "x", f["filename"])
    if rtype == RT.MMAP2:
        prot, flags = f.get("prot", 0), f.get("flags", 0)
        perms = "%s%s%s%s" % ("r" if prot & 1 else "-", "w" if prot & 2 else "-",
                              "x" if prot & 4 else "-", "s" if flags & 1 else "p")
        if "build_id" in f:
            where = "<%s>" % f["build_id"]
        else:
            where = "%02x:%02x %d %d" % (f["maj"], f["min"], f["ino"], f["ino_generation"])
        return "PERF_RECORD_MMAP2 %d/%d: [%s(%s) @ %s %s]: %s %s" % (
            _s32(f["pid"]), _s32(f["tid"]), _c_hex(f["start"]), _c_hex(f["len"]),
            _c_hex(f["pgoff"]), where, perms, f["filename"])
    if rtype in (RT.SWITCH, RT.SWITCH_CPU_WIDE):
        out = misc & MISC_SWITCH_OUT
        in_out = "IN         " if not out else \
            "OUT preempt" if misc & MISC_SWITCH_OUT_PREEMPT else "OUT        "
        if rtype == RT.SWITCH:
            return "PERF_RECORD_SWITCH %s" % in_out
        return "PERF_RECORD_SWITCH_CPU_WIDE %s  %s pid/tid: %5d/%-5d" % (
            in_out, "next" if out else "prev", _s32(f["next_prev_pid"]),
            _s32(f["next_prev_tid"]))
    if rtype == RT.LOST:
        return "PERF_RECORD_LOST lost %d" % f["lost"]
    if rtype == RT.NAMESPACES:
        links = f["link_info"]
        parts = ["PERF_RECORD_NAMESPACES %d/%d - nr_namespaces: %d\n\t\t[" % (
            _s32(f["pid"]), _s32(f["tid"]), f["nr_namespaces"] & 0xffffffff)]
        for idx, link in enumerate(links):
            if idx and idx % 4 == 0:
                parts.append("\n\t\t ")
            parts.append("%d/%s: %d/%s%s" % (
                idx, _NAMESPACES[idx] if idx < len(_NAMESPACES) else "UNKNOWN",
                link["dev"], _c_hex(link["ino"]), ", " if idx + 1 != len(links) else "]"))
        return "".join(parts)
    if rtype == RT.CGROUP:
        return "PERF_RECORD_CGROUP cgroup: %d %s" % (f["id"], f["path"])
    if rtype == RT.KSYMBOL:
        return "PERF_RECORD_KSYMBOL addr %x len %d type %d flags 0x%x name %s" % (
            f["addr"], f["len"], f["ksym_type"], f["flags"], f["name"])
    if rtype == RT.BPF_EVENT:
        return "PERF_RECORD_BPF_EVENT type %d, flags %d, id %d" % (
            f["type"], f["flags"], f["id"])
    if rtype == RT.TEXT_POKE:
        name = kernel_symbol_at(f["addr"]) if kernel_symbol_at is not None else ""
        lines = ["PERF_RECORD_TEXT_POKE %x %s old len %d new len %d" % (
            f["addr"], name, f["old_len"], f["new_len"])]
        for label, data in (("Old", f["old_bytes"]), ("New", f["new_bytes"])):
            # binary__fprintf(): 16 bytes a line.
            for at in range(0, len(data), 16):
                lines.append("            %s bytes: %s" % (
                    label, " ".join("%02x" % b for b in data[at:at + 16])))
        return "\n".join(lines)
    return "PERF_RECORD_%s" % _record_name(rtype)


def _record_name(rtype: int) -> str:
    try:
        return RT(rtype).name
    except ValueError:
        return "%d" % rtype


# perf script's --show-*-events and the record types each prints (__cmd_script).
SHOW_EVENTS = (
    ("mmap", "MMAP/MMAP2", (RT.MMAP, RT.MMAP2)),
    ("task", "COMM/FORK/EXIT", (RT.COMM, RT.FORK, RT.EXIT)),
    ("switch", "SWITCH/SWITCH_CPU_WIDE (perf record --switch-events)",
     (RT.SWITCH, RT.SWITCH_CPU_WIDE)),
    ("namespace", "NAMESPACES (perf record --namespaces)", (RT.NAMESPACES,)),
    ("cgroup", "CGROUP (perf record --all-cgroups)", (RT.CGROUP,)),
    ("lost", "LOST", (RT.LOST,)),
    ("round", "FINISHED_ROUND; records in file order, as perf then", (RT.FINISHED_ROUND,)),
    ("bpf", "KSYMBOL/BPF_EVENT", (RT.KSYMBOL, RT.BPF_EVENT)),
    ("text-poke", "TEXT_POKE and KSYMBOL (perf record --kcore)", (RT.TEXT_POKE, RT.KSYMBOL)),
)


def add_script_options(p: argparse.ArgumentParser) -> None:
    """perf script's own options (perf 6.1's spellings), besides -F, --json
    and the options every symbolizing command shares."""
    p.add_argument("--ns", action="store_true", help="nanosecond timestamps")
    from ..run.sharded import add_jobs_argument
    add_jobs_argument(p)
    p.add_argument("-G", "--hide-call-graph", action="store_true",
                   help="samples on one line, with their own ip only (no stack)")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--reltime", action="store_true",
                      help="times relative to the first line printed")
    when.add_argument("--deltatime", action="store_true",
                      help="times relative to the line printed before")
    p.add_argument("--header", action="store_true",
                   help="print the file's header (as perfdata header) first")
    p.add_argument("--header-only", action="store_true", help="print the header only")
    p.add_argument("-I", "--show-info", action="store_true",
                   help="with --header: topology, caches, pmu caps too")
    p.add_argument("--show-kernel-path", action="store_true",
                   help="name the kernel by the --vmlinux its symbols came from")
    p.add_argument("--full-source-path", action="store_true",
                   help="srcline with the source file's whole path")
    for name, what, _ in SHOW_EVENTS:
        p.add_argument("--show-%s-events" % name, action="store_true",
                       help="also %s records" % what)


def script_header(pf: PerfFile, args: argparse.Namespace
                  ) -> tuple[str, PipeFeaturePrinter | None]:
    """--header, --header-only (-I: the full form): the header as perf
    script prints it first, and for a pipe the printer of the features that
    come in the stream (perf prints them as it meets them; with
    --header-only it stops before)."""
    from .header import PipeFeaturePrinter, describe_header, describe_pipe_header_start
    if not pf.is_pipe:
        return describe_header(pf, full=args.show_info), None
    printer = PipeFeaturePrinter(pf, full=args.show_info)
    printer.record_type = RT.HEADER_FEATURE
    return describe_pipe_header_start(pf), printer


def side_event_types(args: argparse.Namespace) -> set[int]:
    """The record types the --show-*-events options ask for."""
    types: set[int] = set()
    for name, _, rtypes in SHOW_EVENTS:
        if getattr(args, "show_%s_events" % name.replace("-", "_"), False):
            types.update(rtypes)
    return types


def sample_to_json(sample: SymbolizedSample) -> str:
    import json                 # (--json only: start-up time)
    return json.dumps({
        "comm": sample.comm, "pid": sample.pid, "tid": sample.tid, "time": sample.time,
        "cpu": sample.cpu, "period": sample.period, "event": sample.event.name,
        "ip": sample.ip, "stop_reason": sample.stop_reason,
        "frames": [_frame_json(fr) for fr in sample.frames],
    })


def _frame_json(fr: StackFrame) -> dict[str, Any]:
    out: dict[str, Any] = {"address": fr.avma, "printed_address": fr.address, "symbol": fr.symbol,
           "offset": fr.offset, "dso": fr.dso, "dso_path": fr.dso_path,
           "build_id": fr.build_id, "source": fr.source, "inlined": fr.inlined,
           "srcline": fr.srcline, "kernel": fr.kernel}
    if fr.stitched:
        out["stitched"] = True      # (only then: the default output is unchanged)
    return out


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .options import add_force_argument, add_input_argument, add_symbolize_options
    p = subparsers.add_parser("script", help="samples with symbolized stacks, as perf script")
    add_input_argument(p)
    add_force_argument(p)
    p.add_argument("-F", "--fields", type=field_spec, help="fields, with perf's syntax")
    p.add_argument("--json", action="store_true", help="one JSON object per sample")
    # perf's Python scripting (perfdata/scripting): the words after FILE are the
    # script's from the first that is no option of script's, or after `--`
    from ..scripting.command import ScriptArguments
    p.add_argument("-s", "--script", nargs="...", action=ScriptArguments,
                   metavar="FILE [ARG]",
                   help="run a perf Python script (its handlers, param_dict, "
                        "perf_trace_context); the script's arguments follow FILE "
                        "(after -- where one starts with -)")
    p.add_argument("-g", "--gen-script", metavar="LANG",
                   help="write perf-script.py, a starter script for the file's events "
                        "(LANG: python)")
    add_script_options(p)
    add_symbolize_options(p, unsigned_max_stack=True)
    p.set_defaults(func=run)


# Samples per block of a sharded run (-j): big enough that a block's text is
# one write and the workers seldom wait on each other.
SHARD_BLOCK = 512


def script_jobs(args: argparse.Namespace, pf: PerfFile) -> int:
    """How many worker processes print this run: -j (default: the machine's
    cores), but one where the output needs every sample in one process
    (--reltime and --deltatime carry the previous sample's time, --stitch
    the thread's other samples), where the input cannot be read again (a
    pipe) or is too small to gain, and by default where the compiled core
    makes the samples' text (perfdata/core/script.py)."""
    from ..run.sharded import default_jobs
    if args.reltime or args.deltatime or getattr(args, "stitch", False) or \
            args.show_round_events:
        return 1
    if args.jobs is None:
        from ..core.script import takes_most_samples
        if takes_most_samples(args, pf):
            return 1
    return default_jobs(args.jobs, pf)


def _script_run(pf: PerfFile, args: argparse.Namespace, side: set[int],
                features: PipeFeaturePrinter | None, share: Share | None = None
                ) -> tuple[SampleSymbolizer, ScriptFormatter]:
    """The symbolized samples and their formatter for one process's run."""
    from .options import make_sample_symbolizer, shown_kernel_path
    # perf script --show-round-events turns its time ordering off.
    samples = make_sample_symbolizer(pf, args, side_events=side,
                                     order="file" if args.show_round_events else "time",
                                     share=share)
    fmt = ScriptFormatter(pf, args.fields, nanosecs=args.ns,
                          kernel_symbols=samples.kernel_symbols,
                          hide_call_graph=args.hide_call_graph, reltime=args.reltime,
                          deltatime=args.deltatime, full_source_path=args.full_source_path,
                          kernel_path=shown_kernel_path(samples, args),
                          feature_printer=features, data_frame=samples.data_frame)
    return samples, fmt


def _script_items(samples: SampleSymbolizer, fmt: ScriptFormatter, args: argparse.Namespace,
                  block: int = 0, as_bytes: bool = False
                  ) -> Iterable[SymbolizedSample | SideEvent | tuple[int, str | bytes]]:
    """The run's samples and side events; where the compiled core is built
    (perfdata.core) and the options leave the samples to it, the samples it
    makes the text of come as (ordinal of the last, their text), the same
    bytes as format(), one item a block of `block` samples (0: any number);
    as UTF-8 bytes with as_bytes."""
    from ..core import compiled
    module = compiled()
    if module is None:
        return samples
    from ..core.script import ScriptCore
    if not ScriptCore.applies(samples, args):
        return samples
    return ScriptCore(module, samples, fmt, block, as_bytes=as_bytes)


def _script_blocks(args: argparse.Namespace, side: set[int],
                   features: PipeFeaturePrinter | None, share: Share
                   ) -> Generator[tuple[int, str], None, tuple[int, list[Tagged], Described | None]]:
    """One worker of a sharded run (sharded.run_sharded): (block, text) for
    the blocks of share; returns (SAMPLE records seen, warnings, error)."""
    from ..session.stream import SideEvent
    from .options import open_profile
    from ..run.sharded import describe_error, start_share, tagged_warnings
    block = share[0]
    pf = open_profile(args.file, args.strict)
    samples, fmt = _script_run(pf, args, side, features, share)
    start_share(pf, samples, share)
    current: int | None
    parts: list[str]
    error: Described | None
    current, parts, error = None, [], None
    try:
        for item in _script_items(samples, fmt, args, block):
            if type(item) is SideEvent:
                if args.json:
                    continue
                k, text = samples.ordinal // block, fmt.format_side_event(item)
            elif type(item) is tuple:
                # (the text of samples of one block, made by the compiled core)
                k, text = (item[0] - 1) // block, item[1]  # type: ignore[assignment]
            else:
                k = (samples.ordinal - 1) // block
                # (not a side event: a sample)
                text = sample_to_json(item) + "\n" if args.json else fmt.format(item)  # type: ignore[arg-type]
            if k != current:
                if parts:
                    yield current, "".join(parts)  # type: ignore[misc]  # (parts: current is set)
                    parts = []
                current = k
            parts.append(text)
    except PerfDataError as exc:
        error = describe_error(exc)
    if parts:
        yield current, "".join(parts)  # type: ignore[misc]  # (as above)
    return samples.ordinal, tagged_warnings(pf, samples), error


# perf's evsel__check_attr(), in its order: a field, the sample_type bits it
# needs, perf's name of them, and whether a file with AUXTRACE (whose samples
# a decoder makes) lets a field asked for pass without them.  A field asked
# for (-F) that its samples cannot give is refused; a default one is dropped.
# The symbol fields' own rules (_check_symbol_fields) come between the two.
_FIELD_NEEDS_FIRST: tuple[tuple[str, int, str, bool], ...] = (
    ("ip", ST.IP, "IP", False), ("addr", ST.ADDR, "ADDR", True),
    ("data_src", ST.DATA_SRC, "DATA_SRC", True),
    ("weight", ST.WEIGHT | ST.WEIGHT_STRUCT, "WEIGHT", True))
_FIELD_NEEDS_THEN: tuple[tuple[str, int, str, bool], ...] = (
    ("pid", ST.TID, "TID", False), ("time", ST.TIME, "TIME", False),
    ("cpu", ST.CPU, "CPU", True), ("iregs", ST.REGS_INTR, "IREGS", True),
    ("uregs", ST.REGS_USER, "UREGS", False), ("phys_addr", ST.PHYS_ADDR, "PHYS_ADDR", True),
    ("data_page_size", ST.DATA_PAGE_SIZE, "DATA_PAGE_SIZE", False),
    ("code_page_size", ST.CODE_PAGE_SIZE, "CODE_PAGE_SIZE", False),
    ("ins_lat", ST.WEIGHT_STRUCT, "WEIGHT_STRUCT", False))
_SW_DUMMY = SOFTWARE_NAMES.index("dummy")


def check_output_fields(pf: PerfFile, spec_text: str | None) -> None:
    """perf_session__check_output_opt(): the first event of each type (but a
    dummy) is checked against the fields it would print; a field asked for
    with -F that its samples lack is refused, as perf refuses it, before
    anything is printed (a default one is left out).  Nothing is checked in
    a file of counter values (HEADER_STAT).  A list for one type that names
    no field (`hw:`, `trace:flags`) needs an event of that type."""
    from ..format import Feature
    if spec_text is None:
        return
    spec = parse_field_spec(spec_text)
    assert spec is not None
    etype, exact, add, _ = spec
    if etype is not None and etype >= 0 and exact is not None and \
            all(f == "flags" for f in exact) and not any(
                ea.attr["type"] == etype and not (etype == AttrType.SOFTWARE and
                                                  ea.attr["config"] == _SW_DUMMY)
                for ea in pf.attrs):
        # (perf's wildcard_set stays false: no field was parsed)
        raise PerfDataError("%s events do not exist. Remove corresponding -F option to proceed."
                            % type_name(etype))
    if pf.has_feature(Feature.STAT):
        return
    decoded = pf.has_feature(Feature.AUXTRACE)
    # (the fields as perf checks them: before it adds ip and sym to the
    # tracepoints' defaults of a file with callchains, or to a pipe's events)
    formatter = ScriptFormatter(pf, spec_text, hide_call_graph=True)
    seen: set[int] = set()
    for ea in pf.attrs:
        atype, config = ea.attr["type"], ea.attr["config"]
        if (atype == AttrType.SOFTWARE and config == _SW_DUMMY) or atype in seen:
            continue
        seen.add(atype)
        # (perf's parse_output_fields() marks the fields as asked for only
        # in a list for every type: one for a type, `sw:...`, drops them)
        user_set = set(exact or ()) | set(add) if etype is None else set()
        fields = list(formatter.fields_for(ea))
        fields = _check_needs(_FIELD_NEEDS_FIRST, fields, ea, user_set, decoded)
        _check_symbol_fields(fields, ea.sample_type)
        _check_needs(_FIELD_NEEDS_THEN, fields, ea, user_set, decoded)


def _check_needs(needs: tuple[tuple[str, int, str, bool], ...], fields: list[str],
                 ea: EventAttr, user_set: set[str], decoded: bool) -> list[str]:
    """evsel__do_check_stype() for each of `needs`: a field asked for whose
    bits the samples lack is refused, a default one dropped; the fields
    left."""
    st = ea.sample_type
    for field, bits, what, lenient in needs:
        names = ("pid", "tid") if field == "pid" else (field,)
        shown = [f for f in names if f in fields]
        if not shown or st & bits:
            continue
        asked = [f for f in shown if f in user_set]
        if asked and not (lenient and decoded):
            raise PerfDataError("Samples for '%s' event do not have %s attribute set. "
                                "Cannot print '%s' field." % (ea.name, what, asked[0]))
        fields = [f for f in fields if f not in shown]
    return fields


def _check_symbol_fields(fields: list[str], sample_type: int) -> None:
    """The rules of evsel__check_attr() that hold whoever asked for the
    fields: a symbol, its offset, a dso or a source line need an address."""
    has_address = sample_type & (ST.IP | ST.ADDR)
    if "sym" in fields and not has_address:
        raise PerfDataError("Display of symbols requested but neither sample IP nor sample "
                            "address available. Hence, no addresses to convert to symbols.")
    if "symoff" in fields and "sym" not in fields:
        raise PerfDataError("Display of offsets requested but symbol is not selected.")
    if "dso" in fields and not has_address:
        raise PerfDataError("Display of DSO requested but no address to convert.")
    if ("srcline" in fields or "srccode" in fields) and "ip" not in fields:
        raise PerfDataError("Display of source line number requested but sample IP is not "
                            "selected. Hence, no address to lookup the source line number.")


def run(args: argparse.Namespace, out: TextIO) -> None:
    """`perfdata script`: every sample as perf script prints it."""
    import sys
    from ..session.stream import SideEvent
    from .options import open_profile, print_warnings
    from ..run.progress import sample_progress
    pf = open_profile(args.file, args.strict)
    if args.script or args.gen_script:
        from ..scripting.command import run_scripting
        return run_scripting(pf, args, out)
    side = side_event_types(args)
    features = None
    if args.header or args.header_only:
        text, features = script_header(pf, args)
        out.write(text)
        if args.header_only:
            print_warnings(pf)
            return
        if features is not None:
            side.add(features.record_type)
    for warning in dict.fromkeys(field_warnings(args.fields)):
        sys.stderr.write("perfdata: warning: %s\n" % warning)
    check_output_fields(pf, args.fields)
    jobs = script_jobs(args, pf)
    if jobs > 1:
        from ..run.sharded import run_sharded
        try:
            warnings = run_sharded(jobs, SHARD_BLOCK,
                                   lambda share: _script_blocks(args, side, features, share),
                                   out.write)
        except PerfDataError as exc:
            print_warnings(pf, getattr(exc, "warnings", ()))
            raise
        print_warnings(pf, warnings)
        return
    samples, fmt = _script_run(pf, args, side, features)
    from ..core.script import utf8_buffer
    # (the compiled core's texts, where out writes UTF-8, go to its buffer)
    buffer = utf8_buffer(out)
    # Text goes out in batches: one write per sample costs a twentieth of
    # the run (the text layer's per-call work), a batch of 256 next to nothing.
    pending: list[str] = []
    add = pending.append
    try:
        for item in sample_progress(_script_items(samples, fmt, args,
                                                  as_bytes=buffer is not None), pf, "script"):
            if type(item) is SideEvent:
                if not args.json:
                    add(fmt.format_side_event(item))
            elif type(item) is tuple:
                # (samples' text, made by the compiled core)
                if type(item[1]) is bytes:
                    out.write("".join(pending))
                    pending.clear()
                    out.flush()
                    buffer.write(item[1])
                else:
                    add(item[1])  # type: ignore[arg-type]
            else:
                # (not a side event: a sample)
                add(sample_to_json(item) + "\n" if args.json else fmt.format(item))  # type: ignore[arg-type]
            if len(pending) >= 256 or type(item) is tuple:
                # (the compiled core's texts come a few hundred KiB at once)
                out.write("".join(pending))
                pending.clear()
    finally:
        # (also before an error: what was decoded before the fault is printed)
        out.write("".join(pending))
        print_warnings(pf, samples.symbolizer.warnings)
