"""The lines perf prints for each feature section of the header (its
print_* functions in tools/perf/util/header.c), from the parsed section
and what perf's perf_env notes of the sections read before it."""
from __future__ import annotations

import struct
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ...format import (COMP_ZSTD, NAME_ALIGN, Feature, PerfDataError, parse_bpf_prog_info,
                       parse_feature)
from ..units import unit_number
from .bpf import describe_bpf_prog_info
from .event_desc import U64, describe_event_desc

if TYPE_CHECKING:
    from ...format import PerfFile

#: Features perf 6.1 knows (HEADER_LAST_FEATURE): bits at or above are ignored.
HEADER_LAST_FEATURE = 32

#: Printed only with -I (feat_ops[].full_only).
FULL_ONLY = {Feature.CPU_TOPOLOGY, Feature.NUMA_TOPOLOGY, Feature.CACHE,
             Feature.MEM_TOPOLOGY, Feature.HYBRID_TOPOLOGY}

#: Features perf has no print function for.
NO_PRINT = {Feature.TRACING_DATA, Feature.BUILD_ID}

#: clockid_name() of perf's clockid.c (first name per clock).
CLOCKID_NAMES = {1: "monotonic", 4: "monotonic_raw", 0: "realtime", 7: "boottime",
                 11: "tai"}


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


class FeatureState:
    """What perf's perf_env holds across features (as the print_* read it)."""

    def __init__(self, pf: PerfFile) -> None:
        self.pf = pf
        self.nrcpus: dict[str, int] | None = None
        self.bpf_btfs: dict[int, bytes] = {}
        self.event_names: dict[int, str] = {}      # index -> name, from EVENT_DESC

    def nr_cpus_available(self) -> int | None:
        """NRCPUS's available count, once that section is read."""
        return None if self.nrcpus is None else self.nrcpus["nr_cpus_available"]


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


def _cpu_topology_lines(value: dict[str, Any], state: FeatureState) -> list[str]:
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


def _group_lines(groups: list[dict[str, Any]], state: FeatureState) -> list[str]:
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


def _numa_topology_lines(value: list[dict[str, Any]], state: FeatureState) -> list[str]:
    lines = []
    for n in value:
        lines.append("# node%d meminfo  : total = %d kB, free = %d kB"
                     % (n["node"], n["mem_total"], n["mem_free"]))
        lines.append("# node%d cpu list : %s" % (n["node"],
                                                 format_ranges(parse_cpu_list(n["cpus"]))))
    return lines


def _pmu_mappings_lines(value: list[dict[str, Any]], state: FeatureState) -> list[str]:
    if not value:
        return ["# pmu mappings: not available"]
    return ["# pmu mappings: " + ", ".join("%s = %d" % (m["name"], m["type"])
                                           for m in value)]


def _cache_lines(value: dict[str, Any], state: FeatureState) -> list[str]:
    return ["# CPU cache info:"] + [
        "#  L%d %-15s %8s [%s]" % (_c_int(c["level"]), c["type"], c["size"], c["map"])
        for c in value["caches"]]


def _sample_time_lines(value: dict[str, int], state: FeatureState) -> list[str]:
    first, last = value["first_sample_time"], value["last_sample_time"]
    return ["# time of first sample : %s" % _usec(first),
            "# time of last sample : %s" % _usec(last),
            "# sample duration : %10.3f ms" % (((last - first) & U64) / 1e6)]


def _mem_topology_lines(value: dict[str, Any], state: FeatureState) -> list[str]:
    lines = ["# memory nodes (nr %d, block size %#x):"
             % (_c_int(len(value["nodes"])), value["block_size"])]
    if value["block_size"] == 0:
        lines[0] = lines[0].replace("block size 0", "block size 0x0")
    for n in value["nodes"]:
        bits = [w * 64 + b for w, word in enumerate(n["bitmap"]) for b in range(64)
                if word >> b & 1 and w * 64 + b < n["bitmap_size"]]
        size = (value["block_size"] * len(bits)) & U64
        lines.append("#  %3d [%s]: %s" % (n["node"], unit_number(size),
                                          format_ranges(bits)[:99]))
    return lines


def _bpf_prog_info_lines(value: list[dict[str, Any]], state: FeatureState) -> list[str]:
    infos: dict[int, dict[str, Any]] = {}
    for entry in value:
        info = parse_bpf_prog_info(entry, state.pf.little)
        info["_data"] = bytes(entry["data"])
        infos.setdefault(info["id"], info)
    return describe_bpf_prog_info([infos[k] for k in sorted(infos)], state.bpf_btfs,
                                  state.pf.little)


def _compressed_lines(value: dict[str, int], state: FeatureState) -> list[str]:
    return ["# compressed : %s, level = %d, ratio = %d"
            % ("Zstd" if value["type"] == COMP_ZSTD else "Unknown",
               _c_int(value["level"]), _c_int(value["ratio"]))]


def _hybrid_topology_lines(value: list[dict[str, str]], state: FeatureState) -> list[str]:
    return ["# hybrid cpu system:"] + ["# %s cpu list : %s" % (n["pmu_name"], n["cpus"])
                                      for n in value]


# Feature -> its lines from (its parsed value, the state): perf's print_*
# functions, in perf's order of the features.
PRINTERS: dict[Feature, Callable[[Any, FeatureState], list[str]]] = {
    Feature.HOSTNAME: lambda value, state: ["# hostname : %s" % value],
    Feature.OSRELEASE: lambda value, state: ["# os release : %s" % value],
    Feature.VERSION: lambda value, state: ["# perf version : %s" % value],
    Feature.ARCH: lambda value, state: ["# arch : %s" % value],
    Feature.NRCPUS: lambda value, state: ["# nrcpus online : %d" % value["nr_cpus_online"],
                                          "# nrcpus avail : %d" % value["nr_cpus_available"]],
    Feature.CPUDESC: lambda value, state: ["# cpudesc : %s" % value],
    Feature.CPUID: lambda value, state: ["# cpuid : %s" % value],
    Feature.TOTAL_MEM: lambda value, state: ["# total memory : %d kB" % value],
    Feature.CMDLINE: lambda value, state: ["# cmdline : " + "".join(_escape_arg(a) + " "
                                                                    for a in value)],
    Feature.EVENT_DESC: lambda value, state: describe_event_desc(value),
    Feature.CPU_TOPOLOGY: _cpu_topology_lines,
    Feature.NUMA_TOPOLOGY: _numa_topology_lines,
    Feature.BRANCH_STACK: lambda value, state: ["# contains samples with branch stack"],
    Feature.PMU_MAPPINGS: _pmu_mappings_lines,
    Feature.GROUP_DESC: _group_lines,
    Feature.AUXTRACE: lambda value, state: ["# contains AUX area data (e.g. instruction trace)"],
    Feature.STAT: lambda value, state: ["# contains stat data"],
    Feature.CACHE: _cache_lines,
    Feature.SAMPLE_TIME: _sample_time_lines,
    Feature.MEM_TOPOLOGY: _mem_topology_lines,
    Feature.CLOCKID: lambda value, state: ["# clockid frequency: %d MHz" % ((value * 1000) & U64)],
    Feature.DIR_FORMAT: lambda value, state: ["# directory data version : %d" % value],
    Feature.BPF_PROG_INFO: _bpf_prog_info_lines,
    Feature.BPF_BTF: lambda value, state: ["# btf info of id %d" % i
                                           for i in sorted({b["id"] for b in value})],
    Feature.COMPRESSED: _compressed_lines,
    Feature.CPU_PMU_CAPS: lambda value, state: [_pmu_caps_line("cpu", value)],
    Feature.CLOCK_DATA: lambda value, state: _clock_data_lines(value),
    Feature.HYBRID_TOPOLOGY: _hybrid_topology_lines,
    Feature.PMU_CAPS: lambda value, state: [_pmu_caps_line(p["pmu_name"], p["caps"])
                                            for p in value],
}


def feature_lines(fid: Feature, value: Any, state: FeatureState, full: bool) -> list[str]:
    """The lines perf prints for one feature, from its parsed value."""
    if fid in NO_PRINT:
        return []
    if fid in FULL_ONLY and not full:
        return ["# %s info available, use -I to display" % fid.name]
    printer = PRINTERS.get(fid)
    return printer(value, state) if printer is not None else []


def safe_lines(fid: Feature, value: Any, state: FeatureState, full: bool) -> list[str]:
    """feature_lines, degrading to an error line for values it cannot print
    (a BPF_PROG_INFO whose arrays point outside its data, say)."""
    try:
        return feature_lines(fid, value, state, full)
    except PerfDataError as exc:
        return [error_line(fid, exc)]
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, struct.error) as exc:
        return ["# %s: cannot print: %s" % (fid.name, exc)]


def parse_section(pf: PerfFile, fid: Feature, data: bytes, state: FeatureState,
           offset: int | None = None) -> Any:
    nr_cpus = state.nr_cpus_available() if fid == Feature.CPU_TOPOLOGY else None
    value = parse_feature(fid, data, pf.little, path=pf.path, offset=offset,
                          nr_cpus_avail=nr_cpus)
    return noted(fid, value, len(data), state)


def noted(fid: Feature, value: Any, size: int, state: FeatureState) -> Any:
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


def error_line(fid: Feature, exc: PerfDataError) -> str:
    message = exc.message
    if message.startswith(fid.name + ": "):
        message = message[len(fid.name) + 2:]
    return "# %s: %s" % (fid.name, message)
