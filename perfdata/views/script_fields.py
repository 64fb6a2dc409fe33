"""The fields `perfdata script` prints: perf's -F (parse_output_fields),
the defaults of each event type, and the checks perf makes of them before
anything is printed (evsel__check_attr), as tools/perf/builtin-script.c
(perf 6.1) has them."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..format import AttrType, PerfDataError, SOFTWARE_NAMES, SampleType as ST

if TYPE_CHECKING:
    from ..format import EventAttr, PerfFile

    # The fields a sample of one event prints, in order.
    Fields = tuple[str, ...]
    # parse_field_spec: (attr type or None, exact or None, add, remove)
    FieldSpec = tuple[int | None, list[str] | None, list[str], list[str]]

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

def _carries_stack(event: EventAttr) -> bool:
    """A callchain, a branch stack, or what a DWARF unwind needs."""
    st = event.sample_type
    return bool(st & (ST.CALLCHAIN | ST.BRANCH_STACK) or
                (st & ST.REGS_USER and st & ST.STACK_USER))


def event_fields(pf: PerfFile, spec: FieldSpec | None, hide_call_graph: bool,
                 event: EventAttr) -> Fields:
    """The fields the samples of an event print: the event type's defaults,
    or what -F (parsed: parse_field_spec) makes of them.  hide_call_graph:
    perf's -G."""
    # (Not with -G: perf's use_callchain is off then.)
    tp_chain = not hide_call_graph and any(
        ea.attr["type"] == AttrType.TRACEPOINT and ea.sample_type & ST.CALLCHAIN
        for ea in pf.attrs)
    got: list[str]
    if spec is None or spec[0] not in (None, event.attr["type"]):
        got = default_fields(event, tp_chain)
    else:
        etype, exact, add, remove = spec
        # (perf adds ip and sym to the tracepoints' defaults only where -F
        # left their type alone: output[TRACEPOINT].user_set)
        base = list(exact) if exact is not None else default_fields(event, False)
        base += [f for f in add if f not in base]
        # (a list for every type leaves out what a type cannot print)
        bad = invalid_fields(event.attr["type"]) if etype is None else ()
        got = [f for f in base if f not in remove and f not in bad]
        if pf.is_pipe and not hide_call_graph and any(
                _carries_stack(ea) for ea in pf.attrs):
            # perf's process_attr() (pipe mode only): with stacks in
            # the samples, ip and sym print unless -F removed them.
            got += [f for f in ("ip", "sym") if f not in got and f not in remove]
    if all(f == "flags" for f in got):
        # perf's output[type].fields == 0 (flags is no field of it):
        # the samples of the type are not shown
        return ()
    return tuple(got)


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
    seen: set[int] = set()
    for ea in pf.attrs:
        atype, config = ea.attr["type"], ea.attr["config"]
        if (atype == AttrType.SOFTWARE and config == _SW_DUMMY) or atype in seen:
            continue
        seen.add(atype)
        # (perf's parse_output_fields() marks the fields as asked for only
        # in a list for every type: one for a type, `sw:...`, drops them)
        user_set = set(exact or ()) | set(add) if etype is None else set()
        # (the fields as perf checks them, as with -G: before it adds ip and
        # sym to the tracepoints' defaults of a file with callchains, or to
        # a pipe's events)
        fields = list(event_fields(pf, spec, True, ea))
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
