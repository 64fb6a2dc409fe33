"""The lines of `perfdata script --show-*-events`: the records besides
samples (MMAP, COMM, FORK, SWITCH, ...) as perf script prints them
(print_event_with_time(), perf_event__fprintf() of util/event.c, perf 6.1),
and the -F misc column's letters, which sample lines print too."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..format import (MISC_COMM_EXEC, MISC_GUEST_KERNEL, MISC_GUEST_USER, MISC_HYPERVISOR,
                      MISC_KERNEL, MISC_MMAP_DATA, MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT,
                      MISC_USER, RecordType as RT, SampleType as ST)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ..session.stream import SideEvent

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


def side_event_types(args: argparse.Namespace) -> set[int]:
    """The record types the --show-*-events options ask for."""
    types: set[int] = set()
    for name, _, rtypes in SHOW_EVENTS:
        if getattr(args, "show_%s_events" % name.replace("-", "_"), False):
            types.update(rtypes)
    return types


def format_time(ns: int, nanosecs: bool = False) -> str:
    secs, rest = divmod(ns, 1_000_000_000)
    if nanosecs:
        return "%5d.%09d: " % (secs, rest)
    return "%12s: " % ("%d.%06d" % (secs, rest // 1000))


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


def side_event_start(event: SideEvent, fields: tuple[str, ...], hide_call_graph: bool,
                     time_text: Callable[[int], str]) -> str:
    """The start of a side event's line, as of a sample's of its event
    (fields: those its samples print): comm, pid/tid, cpu, misc and time
    from the record's sample_id.  time_text(ns): the time column, called
    once a line that prints one (--reltime counts it)."""
    rec, f = event.record, event.fields
    rtype, ea = rec.type, rec.attr
    if ea is None:
        return ""
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
    has = set(fields).__contains__
    out = []
    if has("comm"):
        comm = event.thread.comm if event.thread is not None else ":-1"
        chain = has("ip") and bool(ea.sample_type & ST.CALLCHAIN) and not hide_call_graph
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
        out.append(time_text(time))
    return "".join(out)


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
