"""`perfdata header`: the text of `perf report --header-only` (and `-I`).

Line for line as perf 6.1 prints it (perf_header__fprintf_info and the
print_* functions of tools/perf/util/header.c, perf_event_attr__fprintf of
tools/perf/util/perf_event_attr_fprintf.c), with these deliberate
differences (tests/test_header_view.py lists them where they show):

* A feature section that does not decode prints `# <FEATURE>: <error>`
  where perf prints what its half-filled state holds ("(null)", zeros).
  BRANCH_STACK, AUXTRACE and STAT keep perf's fixed line: it does not depend
  on the section.
* Feature sections outside the file are reported the same way; perf skips
  those its lseek refuses and prints "(null)" for the rest.  When the data
  size is 0 (perf record did not finish, no section table) nothing is
  printed for the features.
* perf stops processing feature sections at the first that fails and prints
  the later ones from an empty state; every section is decoded on its own
  here.
* A NUMA node with an empty cpu list prints it empty (perf prints the cpus
  of the machine reading the file).
* A truncated HEADER_FEATURE record (pipe mode) prints `# FEATURE: <error>`;
  perf reports it on stderr.
"""
from __future__ import annotations

import os
import struct
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ..format import Feature, PerfDataError
from ..format import COMP_ZSTD, NAME_ALIGN, parse_bpf_prog_info, parse_feature, feature_bits
from .units import unit_number

if TYPE_CHECKING:
    from ..format import PerfFile

#: Features perf 6.1 knows (HEADER_LAST_FEATURE): bits at or above are ignored.
HEADER_LAST_FEATURE = 32

#: Printed only with -I (feat_ops[].full_only).
FULL_ONLY = {Feature.CPU_TOPOLOGY, Feature.NUMA_TOPOLOGY, Feature.CACHE,
             Feature.MEM_TOPOLOGY, Feature.HYBRID_TOPOLOGY}

#: Features perf has no print function for.
NO_PRINT = {Feature.TRACING_DATA, Feature.BUILD_ID}

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

_U64 = (1 << 64) - 1

#: clockid_name() of perf's clockid.c (first name per clock).
CLOCKID_NAMES = {1: "monotonic", 4: "monotonic_raw", 0: "realtime", 7: "boottime",
                 11: "tai"}


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

    unsigned = lambda v: p.set("%d" % (v & _U64))
    hexa = lambda v: p.set("%#x" % (v & _U64))
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


# ----------------------------------------------------------------- helpers
def parse_cpu_list(text: str) -> list[int]:
    """The cpus of a list like '0-3,8' (perf_cpu_map__new), sorted, unique."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo: str | int                   # the text, then the number
        hi: str | int
        lo, sep, hi = part.partition("-")
        try:
            lo = int(lo)
            hi = int(hi) if sep else lo
        except ValueError:
            break
        if hi < lo or hi - lo > 1 << 16:
            break
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_ranges(numbers: Iterable[int]) -> str:
    """'0-3,8' from sorted numbers (cpu_map__snprint, bitmap_scnprintf)."""
    parts = []
    start: int | None
    prev: int                   # (read once start is a number)
    start = prev = None  # type: ignore[assignment]
    for n in numbers:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            parts.append("%d" % start if start == prev else "%d-%d" % (start, prev))
            start = prev = n
    if start is not None:
        parts.append("%d" % start if start == prev else "%d-%d" % (start, prev))
    return ",".join(parts)


def _usec(ts: int) -> str:
    """timestamp__scnprintf_usec."""
    return "%d.%06d" % (ts // 1000000000, ts % 1000000000 // 1000)


def _escape_arg(arg: str) -> str:
    return arg.replace("'", "\\'")


def _c_int(value: int) -> int:
    """A u32 printed with %d."""
    value &= 0xffffffff
    return value - (1 << 32) if value & 0x80000000 else value


# ---------------------------------------------------------- BTF func names
_BTF_KIND_EXTRA = {1: lambda v: 4, 3: lambda v: 12, 4: lambda v: 12 * v, 5: lambda v: 12 * v,
                   6: lambda v: 8 * v, 13: lambda v: 8 * v, 14: lambda v: 4,
                   15: lambda v: 12 * v, 17: lambda v: 4, 19: lambda v: 12 * v}


def _btf_type_name(btf: bytes, type_id: int, little: bool) -> str | None:
    """The name of BTF type `type_id`, or None."""
    e = "<" if little else ">"
    if len(btf) < 24:
        return None
    magic, version, flags, hdr_len = struct.unpack_from(e + "HBBI", btf, 0)
    if magic != 0xeb9f:
        return None
    type_off, type_len, str_off, str_len = struct.unpack_from(e + "IIII", btf, 8)
    types = hdr_len + type_off
    strings = hdr_len + str_off
    pos, end, current = types, types + type_len, 1
    while pos + 12 <= end and current < type_id:
        _, info, _ = struct.unpack_from(e + "III", btf, pos)
        kind, vlen = (info >> 24) & 0x1f, info & 0xffff
        pos += 12 + _BTF_KIND_EXTRA.get(kind, lambda v: 0)(vlen)
        current += 1
    if current != type_id or pos + 12 > end:
        return None
    name_off = struct.unpack_from(e + "I", btf, pos)[0]
    start = strings + name_off
    stop = btf.find(b"\0", start, strings + str_len)
    if stop < 0:
        return None
    return btf[start:stop].decode("utf-8", "replace")


def describe_bpf_prog_info(infos: list[dict[str, Any]], btfs: dict[int, bytes],
                           little: bool) -> list[str]:
    lines = []
    for info in infos:
        count = info["nr_jited_ksyms"]
        if count != info["nr_prog_tags"] or count != info["nr_jited_func_lens"]:
            continue
        btf = btfs.get(info["btf_id"]) if info["btf_id"] else None

        def name(sub: int) -> str:
            tag = info["prog_tags_array"][sub].hex()
            short = None
            if btf is not None and info["func_info_rec_size"]:
                short = _bpf_func_name(info, btf, sub, little)
            elif sub == 0 and count == 1:
                short = info["name"] or None
            else:
                short = "F"
            return "bpf_prog_" + tag + ("_" + short if short else "")

        addrs, lens = info["jited_ksyms_array"], info["jited_func_lens_array"]
        if count == 1:
            lines.append("# bpf_prog_info %d: %s addr 0x%x size %d"
                         % (info["id"], name(0), addrs[0], lens[0]))
            continue
        lines.append("# bpf_prog_info %d:" % info["id"])
        for sub in range(count):
            lines.append("# \tsub_prog %d: %s addr 0x%x size %d"
                         % (sub, name(sub), addrs[sub], lens[sub]))
    return lines


def _bpf_func_name(info: dict[str, Any], btf: bytes, sub: int, little: bool) -> str | None:
    data = info.get("_data", b"")
    off = info["func_info"] + sub * info["func_info_rec_size"]
    if off + 8 > len(data):
        return None
    type_id = struct.unpack_from("<I" if little else ">I", data, off + 4)[0]
    return _btf_type_name(btf, type_id, little)


# ----------------------------------------------------------------- the view
class _State:
    """What perf's perf_env holds across features (as the print_* read it)."""

    def __init__(self, pf: PerfFile) -> None:
        self.pf = pf
        self.nrcpus: dict[str, int] | None = None
        self.bpf_btfs: dict[int, bytes] = {}
        self.event_names: dict[int, str] = {}      # index -> name, from EVENT_DESC

    def nr_cpus_available(self) -> int | None:
        """NRCPUS's available count, once that section is read."""
        return None if self.nrcpus is None else self.nrcpus["nr_cpus_available"]


def _feature_lines(fid: Feature, value: Any, state: _State, full: bool) -> list[str]:
    """The lines perf prints for one feature, from its parsed value."""
    F = Feature
    if fid in NO_PRINT:
        return []
    if fid in FULL_ONLY and not full:
        return ["# %s info available, use -I to display" % fid.name]
    if fid == F.HOSTNAME:
        return ["# hostname : %s" % value]
    if fid == F.OSRELEASE:
        return ["# os release : %s" % value]
    if fid == F.VERSION:
        return ["# perf version : %s" % value]
    if fid == F.ARCH:
        return ["# arch : %s" % value]
    if fid == F.NRCPUS:
        return ["# nrcpus online : %d" % value["nr_cpus_online"],
                "# nrcpus avail : %d" % value["nr_cpus_available"]]
    if fid == F.CPUDESC:
        return ["# cpudesc : %s" % value]
    if fid == F.CPUID:
        return ["# cpuid : %s" % value]
    if fid == F.TOTAL_MEM:
        return ["# total memory : %d kB" % value]
    if fid == F.CMDLINE:
        return ["# cmdline : " + "".join(_escape_arg(a) + " " for a in value)]
    if fid == F.EVENT_DESC:
        return describe_event_desc(value)
    if fid == F.CPU_TOPOLOGY:
        return _cpu_topology_lines(value, state)
    if fid == F.NUMA_TOPOLOGY:
        lines = []
        for n in value:
            lines.append("# node%d meminfo  : total = %d kB, free = %d kB"
                         % (n["node"], n["mem_total"], n["mem_free"]))
            lines.append("# node%d cpu list : %s" % (n["node"],
                                                     format_ranges(parse_cpu_list(n["cpus"]))))
        return lines
    if fid == F.BRANCH_STACK:
        return ["# contains samples with branch stack"]
    if fid == F.PMU_MAPPINGS:
        if not value:
            return ["# pmu mappings: not available"]
        return ["# pmu mappings: " + ", ".join("%s = %d" % (m["name"], m["type"])
                                               for m in value)]
    if fid == F.GROUP_DESC:
        return _group_lines(value, state)
    if fid == F.AUXTRACE:
        return ["# contains AUX area data (e.g. instruction trace)"]
    if fid == F.STAT:
        return ["# contains stat data"]
    if fid == F.CACHE:
        return ["# CPU cache info:"] + [
            "#  L%d %-15s %8s [%s]" % (_c_int(c["level"]), c["type"], c["size"], c["map"])
            for c in value["caches"]]
    if fid == F.SAMPLE_TIME:
        first, last = value["first_sample_time"], value["last_sample_time"]
        return ["# time of first sample : %s" % _usec(first),
                "# time of last sample : %s" % _usec(last),
                "# sample duration : %10.3f ms" % (((last - first) & _U64) / 1e6)]
    if fid == F.MEM_TOPOLOGY:
        lines = ["# memory nodes (nr %d, block size %#x):"
                 % (_c_int(len(value["nodes"])), value["block_size"])]
        if value["block_size"] == 0:
            lines[0] = lines[0].replace("block size 0", "block size 0x0")
        for n in value["nodes"]:
            bits = [w * 64 + b for w, word in enumerate(n["bitmap"]) for b in range(64)
                    if word >> b & 1 and w * 64 + b < n["bitmap_size"]]
            size = (value["block_size"] * len(bits)) & _U64
            lines.append("#  %3d [%s]: %s" % (n["node"], unit_number(size),
                                              format_ranges(bits)[:99]))
        return lines
    if fid == F.CLOCKID:
        return ["# clockid frequency: %d MHz" % ((value * 1000) & _U64)]
    if fid == F.DIR_FORMAT:
        return ["# directory data version : %d" % value]
    if fid == F.BPF_PROG_INFO:
        infos: dict[int, dict[str, Any]] = {}
        for entry in value:
            info = parse_bpf_prog_info(entry, state.pf.little)
            info["_data"] = bytes(entry["data"])
            infos.setdefault(info["id"], info)
        return describe_bpf_prog_info([infos[k] for k in sorted(infos)], state.bpf_btfs,
                                      state.pf.little)
    if fid == F.BPF_BTF:
        ids = sorted({b["id"] for b in value})
        return ["# btf info of id %d" % i for i in ids]
    if fid == F.COMPRESSED:
        return ["# compressed : %s, level = %d, ratio = %d"
                % ("Zstd" if value["type"] == COMP_ZSTD else "Unknown",
                   _c_int(value["level"]), _c_int(value["ratio"]))]
    if fid == F.CPU_PMU_CAPS:
        return [_pmu_caps_line("cpu", value)]
    if fid == F.CLOCK_DATA:
        return _clock_data_lines(value)
    if fid == F.HYBRID_TOPOLOGY:
        return ["# hybrid cpu system:"] + ["# %s cpu list : %s" % (n["pmu_name"], n["cpus"])
                                          for n in value]
    if fid == F.PMU_CAPS:
        return [_pmu_caps_line(p["pmu_name"], p["caps"]) for p in value]
    return []


def _safe_lines(fid: Feature, value: Any, state: _State, full: bool) -> list[str]:
    """_feature_lines, degrading to an error line for values it cannot print
    (a BPF_PROG_INFO whose arrays point outside its data, say)."""
    try:
        return _feature_lines(fid, value, state, full)
    except PerfDataError as exc:
        return [_error_line(fid, exc)]
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, struct.error) as exc:
        return ["# %s: cannot print: %s" % (fid.name, exc)]


def _pmu_caps_line(pmu: str, caps: list[dict[str, str]]) -> str:
    if not caps:
        return "# %s pmu capabilities: not available" % pmu
    return "# %s pmu capabilities: %s" % (pmu, ", ".join("%s=%s" % (c["name"], c["value"])
                                                          for c in caps))


def _clock_data_lines(value: dict[str, int]) -> list[str]:
    tod = value["tod_ns"]
    sec, usec = tod // 1000000000, tod % 1000000000 // 1000
    ref = value["clockid_ns"]
    csec, cnsec = ref // 1000000000, ref % 1000000000
    clockid = value["clockid"]
    try:
        date = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(sec))
        tstr = "%s.%06d" % (date, usec)
    except (OverflowError, ValueError, OSError):
        tstr = "<error>"
    name = CLOCKID_NAMES.get(_c_int(clockid), "(not found)")
    return ["# clockid: %s (%d)" % (name, clockid),
            "# reference time: %s = %d.%06d (TOD) = %d.%09d (%s)"
            % (tstr, sec, usec, csec, cnsec, name)]


def _cpu_topology_lines(value: dict[str, Any], state: _State) -> list[str]:
    lines = ["# sibling sockets : %s" % s for s in value["sibling_cores"]]
    dies = value["sibling_dies"]
    if dies:
        lines += ["# sibling dies    : %s" % s for s in dies]
    lines += ["# sibling threads : %s" % s for s in value["sibling_threads"]]
    cpus = value["cpus"]
    if dies:
        if cpus is not None:
            lines += ["# CPU %d: Core ID %d, Die ID %d, Socket ID %d"
                      % (i, _c_int(c["core_id"]), _c_int(c["die_id"]), _c_int(c["socket_id"]))
                      for i, c in enumerate(cpus)]
        else:
            lines.append("# Core ID, Die ID and Socket ID information is not available")
    else:
        if cpus is not None:
            lines += ["# CPU %d: Core ID %d, Socket ID %d"
                      % (i, _c_int(c["core_id"]), _c_int(c["socket_id"]))
                      for i, c in enumerate(cpus)]
        else:
            lines.append("# Core ID and Socket ID information is not available")
    return lines


def _group_lines(groups: list[dict[str, Any]], state: _State) -> list[str]:
    """process_group_desc then print_group_desc, over the file's events."""
    attrs = state.pf.attrs
    names = [state.event_names.get(i, a.name) for i, a in enumerate(attrs)]
    leaders = {}        # index -> (group name, nr_members)
    i = nr = 0
    for idx in range(len(attrs)):
        if i < len(groups) and idx == groups[i]["leader_idx"]:
            name = groups[i]["name"]
            leaders[idx] = ("" if name == "{anon_group}" else name, groups[i]["nr_members"])
            if nr > 0:
                break
            nr = groups[i]["nr_members"] - 1
            i += 1
        elif nr:
            nr -= 1
    lines = []
    nr = 0
    current = None
    for idx, name in enumerate(names):
        lead = leaders.get(idx)
        if lead and lead[1] > 1:
            current = "# group: %s{%s" % (lead[0], name)
            nr = lead[1] - 1
        elif nr:
            current += ",%s" % name  # type: ignore[operator]  # (nr: a group is open)
            nr -= 1
            if nr == 0:
                lines.append(current + "}")
                current = None
    if current is not None:
        lines.append(current)       # perf leaves an unfinished group's line open
    return lines


def _parse(pf: PerfFile, fid: Feature, data: bytes, state: _State,
           offset: int | None = None) -> Any:
    nr_cpus = state.nr_cpus_available() if fid == Feature.CPU_TOPOLOGY else None
    value = parse_feature(fid, data, pf.little, path=pf.path, offset=offset,
                          nr_cpus_avail=nr_cpus)
    return _noted(fid, value, len(data), state)


def _noted(fid: Feature, value: Any, size: int, state: _State) -> Any:
    """A parsed section as the printing takes it, after what perf notes of
    it on the way (the event names, NRCPUS, BTF; CPU_TOPOLOGY cut to what
    perf reads of a section of `size` bytes, on a copy)."""
    if fid == Feature.NRCPUS:
        state.nrcpus = value
    elif fid == Feature.EVENT_DESC:
        for index, ev in enumerate(value):
            state.event_names.setdefault(index, ev["name"])
    elif fid == Feature.CPU_TOPOLOGY:
        value = dict(value)
        _perf_topology_cut(value, size, state.nr_cpus_available() or 0)
    elif fid == Feature.BPF_BTF:
        for b in value:
            state.bpf_btfs.setdefault(b["id"], bytes(b["data"]))
    return value


def _string_size(text: str) -> int:
    """perf's string_size(): what it assumes a string took in the section."""
    return (len(text.encode("utf-8")) + 1 + NAME_ALIGN - 1) // NAME_ALIGN * NAME_ALIGN + 4


def _perf_topology_cut(value: dict[str, Any], section_size: int, nr_cpus: int) -> None:
    """process_cpu_topology() decides whether the per-cpu ids and the die
    lists are present from a size it computes with string_size(), not from
    the lengths stored in the file: cut what perf would not read."""
    size = 4 + sum(_string_size(s) for s in value["sibling_cores"])
    size += 4 + sum(_string_size(s) for s in value["sibling_threads"])
    if section_size <= size:
        value["cpus"] = None
        value["sibling_dies"] = None
        return
    size += 8 * nr_cpus
    if section_size <= size:
        value["sibling_dies"] = None


#: Features whose line perf prints whatever their section holds.
CONSTANT_LINES = {
    Feature.BRANCH_STACK: "# contains samples with branch stack",
    Feature.AUXTRACE: "# contains AUX area data (e.g. instruction trace)",
    Feature.STAT: "# contains stat data",
}


def _error_line(fid: Feature, exc: PerfDataError) -> str:
    message = exc.message
    if message.startswith(fid.name + ": "):
        message = message[len(fid.name) + 2:]
    return "# %s: %s" % (fid.name, message)


def _captured_on(pf: PerfFile) -> str:
    try:
        mtime = os.stat(pf.path).st_mtime      # a directory's `data` file
    except (OSError, TypeError):
        mtime = time.time()
    return "# captured on    : %s" % time.ctime(mtime)


_PIPE_HEAD = ["# data offset    : 0", "# data size      : 0", "# feat offset    : 0",
              "# ========", "#"]


def describe_pipe_header_start(pf: PerfFile) -> str:
    """Pipe mode: what perf prints of the header before it reads the stream
    (perf script --header then prints each HEADER_FEATURE record as it meets
    it: PipeFeaturePrinter)."""
    lines = ["# ========", _captured_on(pf),
             "# header version : %d" % (getattr(pf, "header_version", 2) - 1)] + _PIPE_HEAD
    return "\n".join(lines) + "\n"


def describe_header(pf: PerfFile, full: bool = False) -> str:
    """The text `perf report --header-only` prints for `pf` (`-I` with full),
    ending with a newline."""
    lines = ["# ========", _captured_on(pf),
             "# header version : %d" % (getattr(pf, "header_version", 2) - 1)]
    if pf.is_pipe:
        lines += _PIPE_HEAD
        lines += _pipe_features(pf, full)
        return "\n".join(lines) + "\n"
    hdr = pf.header
    data_offset, data_size = hdr["data"]["offset"], hdr["data"]["size"]
    lines += ["# data offset    : %d" % data_offset, "# data size      : %d" % data_size,
              "# feat offset    : %d" % ((data_offset + data_size) & _U64)]
    bits = set(feature_bits(hdr["adds_features"], pf.little))
    state = _State(pf)
    values = {}
    # perf processes every section before printing any: parse them all first,
    # in bit order, so NRCPUS and BPF_BTF are known to those that use them.
    for fid in sorted(bits):
        if fid >= HEADER_LAST_FEATURE or fid == 0:
            continue
        fid = Feature(fid)
        if fid in NO_PRINT:
            continue
        if not pf.has_feature(fid) and data_size == 0:
            # perf record did not finish: no feature section table was written.
            continue
        try:
            # (parsed by the file, as every other reader gets it)
            value = pf.feature(fid)
            if value is None:
                raise PerfDataError("section outside the file")
            values[fid] = _noted(fid, value, pf.feature_size(fid) or 0, state)
        except PerfDataError as exc:
            values[fid] = exc
    for fid in sorted(values):
        value = values[fid]
        if fid in FULL_ONLY and not full:
            lines.append("# %s info available, use -I to display" % fid.name)
        elif fid in CONSTANT_LINES:
            lines.append(CONSTANT_LINES[fid])
        elif isinstance(value, PerfDataError):
            lines.append(_error_line(fid, value))
        else:
            lines += _safe_lines(fid, value, state, full)
    missing = [Feature(b).name for b in range(1, HEADER_LAST_FEATURE) if b not in bits]
    lines.append("# missing features: " + "".join(name + " " for name in missing))
    lines += ["# ========", "#"]
    return "\n".join(lines) + "\n"


#: Pipe mode: the HEADER_FEATURE records of a PerfFile, read once (a stream
#: cannot be read twice).
_PIPE_FEATURES: weakref.WeakKeyDictionary[PerfFile, list[tuple[int | None, bytes | str]]]
_PIPE_FEATURES = weakref.WeakKeyDictionary()


def _pipe_feature_records(pf: PerfFile) -> list[tuple[int | None, bytes | str]]:
    """[(fid, bytes) or (None, error message)] in stream order."""
    try:
        return _PIPE_FEATURES[pf]
    except (KeyError, TypeError):
        pass
    from ..format import RecordType
    out: list[tuple[int | None, bytes | str]] = []
    try:
        for rec in pf.records(order="file"):
            if rec.type != RecordType.HEADER_FEATURE:
                continue
            try:
                body = rec.parse()
                out.append((body["feat_id"], bytes(body["data"])))
            except PerfDataError as exc:
                out.append((None, exc.message))
    except PerfDataError:
        pass        # perf prints the features it met before the bad record
    try:
        _PIPE_FEATURES[pf] = out
    except TypeError:
        pass
    return out


def _pipe_features(pf: PerfFile, full: bool) -> list[str]:
    """Pipe mode: perf prints each HEADER_FEATURE record as it meets it."""
    printer = PipeFeaturePrinter(pf, full)
    lines = []
    for fid, data in _pipe_feature_records(pf):
        lines += printer.feed(fid, data)
        if printer.stopped:
            break
    return lines + printer.finish()


class PipeFeaturePrinter:
    """The lines perf prints for the HEADER_FEATURE records of a pipe, one
    record at a time (perf_event__process_feature())."""
    record_type: int        # the record type it prints (script.py sets it)

    def __init__(self, pf: PerfFile, full: bool = False) -> None:
        self.state = _State(pf)
        self.full = full
        self.pending = ""       # perf's printf("# %s") without a newline
        self.stopped = False

    def feed(self, fid: int | None, data: bytes | str) -> list[str]:
        """fid None: data is the record's decoding error."""
        if self.stopped:
            return []
        # (data is the error message when fid is None, the section's bytes else)
        if fid is None:
            out = ["# FEATURE: %s" % data]  # type: ignore[str-bytes-safe]
        elif fid == 0 or fid >= HEADER_LAST_FEATURE:
            self.stopped = True     # perf stops at an invalid feature record
            return []
        else:
            out = _pipe_feature_lines(Feature(fid), data, self.state,  # type: ignore[arg-type]
                                      self.full)
        if fid in NO_PRINT:
            self.pending += "# %s" % Feature(fid).name
            return []
        if self.pending and out:
            out[0] = self.pending + out[0]
            self.pending = ""
        return out

    def feed_record(self, fields: Mapping[str, Any]) -> str:
        """A parsed HEADER_FEATURE record's lines, as text."""
        lines = self.feed(fields["feat_id"], bytes(fields["data"]))
        return "".join(line + "\n" for line in lines)

    def finish(self) -> list[str]:
        pending, self.pending = self.pending, ""
        return [pending] if pending else []


def _pipe_feature_lines(fid: Feature, data: bytes, state: _State, full: bool) -> list[str]:
    if fid in FULL_ONLY and not full:
        try:
            _parse(state.pf, fid, data, state)
        except PerfDataError:
            pass
        return ["# %s info available, use -I to display" % fid.name]
    if fid in NO_PRINT:
        return []
    if fid in CONSTANT_LINES:
        return [CONSTANT_LINES[fid]]
    try:
        value = _parse(state.pf, fid, data, state)
    except PerfDataError as exc:
        return [_error_line(fid, exc)]
    return _safe_lines(fid, value, state, full)
