"""--sort: the keys perf report takes, each key's column (its header and
cell text) and the order of the rows they give."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CommandError
from .entries import thread_comm

if TYPE_CHECKING:
    from ...session.threads import Thread
    from .entries import Entry, ThreadComm

SORT_KEYS = {
    "comm": "Command",
    "dso": "Shared Object",
    "sym": "Symbol",
    "symbol": "Symbol",
    "pid": "    Pid:Command",
    "cpu": "CPU",
}
DEFAULT_SORT = "comm,dso,sym"
# The keys --sort takes, for its help, its errors and shell completion
# ("symbol" is perf's spelling of sym).
VALID_SORT_KEYS = tuple(k for k in SORT_KEYS if k != "symbol")
VALID_SORT_TEXT = ", ".join(VALID_SORT_KEYS)


# The other keys perf 6.1's --sort takes (perf report -s help text).
_PERF_SORT_KEYS = frozenset("""
    overhead overhead_sys overhead_us overhead_guest_sys overhead_guest_us
    overhead_children sample period parent socket srcline srcfile local_weight
    weight transaction trace symbol_size dso_size cgroup cgroup_id ipc_null time
    code_page_size local_ins_lat ins_lat local_p_stage_cyc p_stage_cyc addr dso_from
    dso_to symbol_from symbol_to mispredict abort in_tx cycles srcline_from srcline_to
    ipc_lbr addr_from addr_to symbol_daddr dso_daddr locked tlb mem snoop dcacheline
    symbol_iaddr phys_daddr data_page_size blocked""".split())


class ReportError(CommandError):
    pass


# perf 6.1's common_sort_dimensions in its order: a --sort key is the first
# of them (then of the others, _PERF_SORT_KEYS) that it begins, whatever
# the case (sort_dimension__add: strncasecmp over the key's length), so
# `s` is symbol, `c` comm, `p` pid, `t` transaction.
_PERF_COMMON_SORT = ("pid", "comm", "dso", "symbol", "parent", "cpu", "socket", "srcline",
                     "srcfile", "local_weight", "weight", "transaction", "trace",
                     "symbol_size", "dso_size", "cgroup", "cgroup_id", "ipc_null", "time",
                     "code_page_size", "local_ins_lat", "ins_lat", "local_p_stage_cyc",
                     "p_stage_cyc", "addr")


def parse_sort(text: str | None) -> list[str]:
    """--sort as perf splits it (strtok on ',' and ' ') and matches each
    key (a prefix, any case); a list of no key at all (`-s ,`) is the
    Overhead column alone, one row."""
    import re
    keys: list[str] = []
    for key in re.split(r"[, ]", DEFAULT_SORT if text is None else text or DEFAULT_SORT):
        if not key:
            continue
        low = key.lower()
        name = next((n for n in _PERF_COMMON_SORT if n.startswith(low)), None) or \
            next((n for n in sorted(_PERF_SORT_KEYS) if n.startswith(low)), None)
        if name is None:
            raise ReportError("unknown sort key %r (valid keys: %s)" % (key, VALID_SORT_TEXT))
        if name not in SORT_KEYS:
            raise ReportError("sort key %r is perf's, not supported here (valid keys: %s)"
                              % (key, VALID_SORT_TEXT))
        name = "sym" if name == "symbol" else name
        if name not in keys:
            keys.append(name)
    return keys


def addr_text(address: int) -> str:
    # perf: "%-#.*llx" with 16 digits: C's '#' adds no 0x to zero.
    return "0x%016x" % address if address else "%016x" % 0


def cell_text(key: str, value: Any, level: str, thread: Thread | ThreadComm | None = None
              ) -> str:
    """An entry's cell in the column of sort key `key`."""
    if key == "sym":
        kind, v = value[:2]
        return "[%s] %s" % (level, v if kind == "s" else addr_text(v))
    if key == "pid":
        return "%7d:%s" % (value, thread_comm(thread))
    if key == "cpu":
        # perf's hist_entry__cpu_snprintf(): "%*.*d" at the column's width
        return "%*.*d" % (len(SORT_KEYS["cpu"]), len(SORT_KEYS["cpu"]), value)
    return value


def row_order(sort_keys: list[str], children: bool, entry: Entry) -> tuple[Any, ...]:
    """The key the rows are sorted by: the overhead (with --children, the
    children period first), then the sort keys in order."""
    parts: list[Any] = []
    for key, value in zip(sort_keys, entry.key):
        if key == "sym":
            kind, v = value[:2]
            # perf's _sort__addr_cmp(): (int64_t)(right_ip - left_ip), so
            # addresses with bit 63 set (garbage words of a frame-pointer
            # walk, kernel addresses in no map) sort as negative numbers
            # (where two differ by 2**63 or more, perf's order is its
            # rbtree's shape, not followed here)
            parts.append((1, "", v - (1 << 64) if v >= 1 << 63 else v) if kind == "a"
                         else (0, v, 0))
        elif key == "dso":
            # perf: an entry without a map ([unknown]) after those with one.
            parts.append((1, "") if value == "[unknown]" else (0, value))
        else:
            parts.append(value)
    if children:
        return (-entry.children, -entry.self_period, parts)
    return (-entry.self_period, parts)
