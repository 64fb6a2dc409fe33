"""EVENT_DESC's lines: each event's name, ids and perf_event_attr as
perf_event_attr__fprintf prints them (tools/perf/util/perf_event_attr_fprintf.c),
or perf's refusal of an attr it does not know (perf_attr_check)."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

# Bit names in perf_event_attr__fprintf's order.
SAMPLE_TYPE_BITS = (
    ("IP", 1 << 0), ("TID", 1 << 1), ("TIME", 1 << 2), ("ADDR", 1 << 3),
    ("READ", 1 << 4), ("CALLCHAIN", 1 << 5), ("ID", 1 << 6), ("CPU", 1 << 7),
    ("PERIOD", 1 << 8), ("STREAM_ID", 1 << 9), ("RAW", 1 << 10),
    ("BRANCH_STACK", 1 << 11), ("REGS_USER", 1 << 12), ("STACK_USER", 1 << 13),
    ("IDENTIFIER", 1 << 16), ("REGS_INTR", 1 << 18), ("DATA_SRC", 1 << 15),
    ("WEIGHT", 1 << 14), ("PHYS_ADDR", 1 << 19), ("AUX", 1 << 20),
    ("CGROUP", 1 << 21), ("DATA_PAGE_SIZE", 1 << 22), ("CODE_PAGE_SIZE", 1 << 23),
    ("WEIGHT_STRUCT", 1 << 24),
)
BRANCH_SAMPLE_TYPE_BITS = tuple((name, 1 << bit) for bit, name in enumerate((
    "USER", "KERNEL", "HV", "ANY", "ANY_CALL", "ANY_RETURN", "IND_CALL", "ABORT_TX",
    "IN_TX", "NO_TX", "COND", "CALL_STACK", "IND_JUMP", "CALL", "NO_FLAGS", "NO_CYCLES",
    "TYPE_SAVE", "HW_INDEX", "PRIV_SAVE")))
READ_FORMAT_BITS = (("TOTAL_TIME_ENABLED", 1), ("TOTAL_TIME_RUNNING", 2), ("ID", 4),
                    ("GROUP", 8), ("LOST", 16))

# perf_attr_check() limits of perf 6.1 (PERF_SAMPLE_MAX, PERF_FORMAT_MAX,
# PERF_SAMPLE_BRANCH_MAX).
SAMPLE_MAX = 1 << 25
FORMAT_MAX = 1 << 5
BRANCH_MAX = 1 << 19

# (perf's u64 arithmetic: what it prints of a sum or product wraps)
U64 = (1 << 64) - 1


class _BitsPrinter:
    """perf's __p_bits writes into one buffer shared by all fields; a value
    with only unknown bits leaves the previous field's text in it."""

    def __init__(self) -> None:
        self.buf = ""

    def bits(self, value: int, names: Iterable[tuple[str, int]]) -> str:
        text = "|".join(name for name, bit in names if value & bit)
        if text:
            self.buf = text
        return self.buf

    def set(self, text: str) -> str:
        self.buf = text
        return text


def describe_attr(attr: Mapping[str, Any]) -> list[str]:
    """', name = value' pairs of perf_event_attr__fprintf, without the first ', '."""
    flags = attr["flags"]
    p = _BitsPrinter()
    out = []

    def add(name: str, value: int, fmt: Callable[[int], str]) -> None:
        if value:
            out.append("%s = %s" % (name, fmt(value)))

    unsigned = lambda v: p.set("%d" % (v & U64))
    hexa = lambda v: p.set("%#x" % (v & U64))
    signed = lambda v: p.set("%d" % v)
    add("type", attr["type"], unsigned)
    add("size", attr["size"], unsigned)
    add("config", attr["config"], hexa)
    add("{ sample_period, sample_freq }", attr["sample_period"], unsigned)
    add("sample_type", attr["sample_type"], lambda v: p.bits(v, SAMPLE_TYPE_BITS))
    add("read_format", attr["read_format"], lambda v: p.bits(v, READ_FORMAT_BITS))
    for name in ("disabled", "inherit", "pinned", "exclusive", "exclude_user",
                 "exclude_kernel", "exclude_hv", "exclude_idle", "mmap", "comm", "freq",
                 "inherit_stat", "enable_on_exec", "task", "watermark", "precise_ip",
                 "mmap_data", "sample_id_all", "exclude_host", "exclude_guest",
                 "exclude_callchain_kernel", "exclude_callchain_user", "mmap2",
                 "comm_exec", "use_clockid", "context_switch", "write_backward",
                 "namespaces", "ksymbol", "bpf_event", "aux_output", "cgroup",
                 "text_poke", "build_id", "inherit_thread", "remove_on_exec", "sigtrap"):
        add(name, flags.get(name, 0), unsigned)
    add("{ wakeup_events, wakeup_watermark }", attr["wakeup_events"], unsigned)
    add("bp_type", attr["bp_type"], unsigned)
    add("{ bp_addr, config1 }", attr["config1"], hexa)
    add("{ bp_len, config2 }", attr["config2"], hexa)
    add("branch_sample_type", attr["branch_sample_type"],
        lambda v: p.bits(v, BRANCH_SAMPLE_TYPE_BITS))
    add("sample_regs_user", attr["sample_regs_user"], hexa)
    add("sample_stack_user", attr["sample_stack_user"], unsigned)
    add("clockid", attr["clockid"], signed)
    add("sample_regs_intr", attr["sample_regs_intr"], hexa)
    add("aux_watermark", attr["aux_watermark"], unsigned)
    add("sample_max_stack", attr["sample_max_stack"], unsigned)
    add("aux_sample_size", attr["aux_sample_size"], unsigned)
    add("sig_data", attr["sig_data"], unsigned)
    return out


def _attr_check(attr: Mapping[str, Any]) -> bool:
    """perf_attr_check(): False when perf 6.1 refuses the attr."""
    if attr["flags"].get("reserved_1") or attr.get("reserved_2") or attr.get("aux_action"):
        return False
    if attr["sample_type"] & ~(SAMPLE_MAX - 1):
        return False
    if attr["read_format"] & ~(FORMAT_MAX - 1):
        return False
    if attr["sample_type"] & (1 << 11) and attr["branch_sample_type"] & ~(BRANCH_MAX - 1):
        return False
    return True


def describe_event_desc(events: list[dict[str, Any]] | None) -> list[str]:
    if events is None or not all(_attr_check(ev["attr"]) for ev in events):
        return ["# event desc: not available or unable to read"]
    lines = []
    for ev in events:
        if not ev["attr"]["size"]:
            break       # perf's list ends at the first attr of size 0
        text = "# event : name = %s, " % ev["name"]
        if ev["ids"]:
            text += ", id = {" + ",".join(" %d" % i for i in ev["ids"]) + " }"
        pairs = describe_attr(ev["attr"])
        text += "".join(", " + pair for pair in pairs)
        lines.append(text)
    return lines
