"""`perfdata report`: the table `perf report --stdio --no-children -g none` prints.

One section per event: `# Samples: 2K of event 'cpu-clock:u'`, the event
count (sum of periods), the column header, then one row per histogram entry
(`    12.34%  comm  libc.so.6  [.] sym`), sorted by overhead, ties by the sort
keys in order.  Entries are keyed as perf keys them: comm, the dso's short
name, the symbol (as perf prints it: C++ without parameters, the symbol
table's name rather than an inlined function's), or, without a symbol, the
address (`[.] 0x00000000000011de`, map-relative as perf prints it).

`--children` adds perf's inclusive column: every entry on a sample's stack
gets the sample's period once, sorted by that, then by self.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..format import (RecordType as RT, MISC_CPUMODE_MASK, MISC_GUEST_KERNEL, MISC_GUEST_USER,
                      MISC_HYPERVISOR, MISC_KERNEL, SampleType)
from .dsoname import dso_short_name
from .errors import CommandError
from .collapse import open_output
from .options import (add_force_argument, add_input_argument, add_symbolize_options,
                      make_sample_symbolizer,
                      open_profile, print_warnings)
from ..run.progress import sample_progress
from ..run.sharded import add_jobs_argument

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable, Sequence

    from ..format import PerfFile, EventAttr
    from ..resolve.frames import StackFrame
    from ..session.threads import Thread
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample

    # (sample) -> whether it makes an entry (Report's hist_filter)
    HistFilter = Callable[[SymbolizedSample], bool]

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
_LEVEL = {MISC_KERNEL: "k", MISC_GUEST_KERNEL: "g", MISC_GUEST_USER: "u",
          MISC_HYPERVISOR: "H"}


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


def _addr_text(address: int) -> str:
    # perf: "%-#.*llx" with 16 digits: C's '#' adds no 0x to zero.
    return "0x%016x" % address if address else "%016x" % 0


class Entry:
    __slots__ = ("key", "level", "self_period", "children", "samples", "unresolved", "thread",
                 "first")

    def __init__(self, key: tuple[Any, ...], level: str, unresolved: bool,
                 thread: Thread | _Comm | None = None, first: int = 0) -> None:
        self.key = key
        self.level = level
        self.self_period = 0
        self.children = 0
        self.samples = 0
        self.unresolved = unresolved
        self.thread = thread        # of the sample that made the entry (perf's he->thread)
        self.first = first          # that sample's place in the file (sharded runs)

    def __getstate__(self) -> dict[str, Any]:  # a worker's entry: the thread by its comm only
        state = {k: getattr(self, k) for k in self.__slots__}
        state["thread"] = _Comm(_thread_comm(self.thread))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def merge(self, other: Entry) -> None:
        """Add another worker's entry of the same key; the level and thread
        are those of the entry made first, as in one process."""
        self.self_period += other.self_period
        self.children += other.children
        self.samples += other.samples
        if other.first < self.first:
            self.level, self.unresolved, self.thread, self.first = \
                other.level, other.unresolved, other.thread, other.first


class _Comm:
    """A thread as the table prints it, from a worker (its last comm)."""
    __slots__ = ("comm",)

    def __init__(self, comm: str) -> None:
        self.comm = comm

    def __getstate__(self) -> str:
        return self.comm

    def __setstate__(self, comm: str) -> None:
        self.comm = comm


class EventHistogram:
    def __init__(self, event: EventAttr) -> None:
        self.event = event
        self.entries: dict[tuple[Any, ...], Entry] = {}
        self.total_period = 0
        self.samples = 0

    def merge(self, other: EventHistogram) -> None:
        """Add another worker's histogram of the same event; the entries stay
        in the order they were first made (ties in the table keep it)."""
        self.total_period += other.total_period
        self.samples += other.samples
        entries = self.entries
        for key, theirs in other.entries.items():
            mine = entries.get(key)
            if mine is None:
                entries[key] = theirs
            else:
                mine.merge(theirs)
        self.entries = dict(sorted(entries.items(), key=lambda item: item[1].first))


class Report:
    """Histograms per event of symbolized samples."""

    def __init__(self, sort_keys: list[str], children: bool = False,
                 sampler: SampleSymbolizer | None = None,
                 hist_filter: HistFilter | None = None) -> None:
        """hist_filter: perf report's --pid, --tid, --comm, --dsos and
        --symbols (HIST_FILTER_*): a sample they leave out still counts in its
        event's totals, which the percentages are of (perf's default
        --percentage absolute), but makes no entry."""
        self.sort_keys = sort_keys
        self.children = children
        self.sampler = sampler
        self.hist_filter = hist_filter
        self.hists: dict[int, EventHistogram] = {}
        self.order = 0          # the place in the file of the sample being added

    def merge(self, other: Report) -> None:
        """Add the histograms of another worker's share of the samples."""
        for index, theirs in other.hists.items():
            mine = self.hists.get(index)
            if mine is None:
                self.hists[index] = theirs
            else:
                mine.merge(theirs)

    def __getstate__(self) -> dict[str, Any]:  # what crosses from a worker: no sampler
        return {"sort_keys": self.sort_keys, "children": self.children,
                "hists": {i: (h.event.index, h.entries, h.total_period, h.samples)
                          for i, h in self.hists.items()}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.sort_keys, self.children = state["sort_keys"], state["children"]
        self.sampler, self.hist_filter, self.order, self.hists = None, None, 0, {}
        for i, (index, entries, total, samples) in state["hists"].items():
            # (a stand-in: _report_sharded gives it the run's EventAttr)
            hist = self.hists[i] = EventHistogram(_EventIndex(index))  # type: ignore[arg-type]
            hist.entries, hist.total_period, hist.samples = entries, total, samples

    def _frame_entry(self, hist: EventHistogram, sample: SymbolizedSample, frame: StackFrame,
                     level: str, suffix: str = "", in_chain: bool = False) -> Entry:
        key: str | tuple[Any, ...]      # (a sort key's name, then the entry's key)
        values: list[Any] = []
        for key in self.sort_keys:
            if key == "comm":
                values.append(sample.comm)
            elif key == "dso":
                values.append(dso_short_name(frame))
            elif key == "pid":
                # perf's "pid" key is the thread (shown with its last comm).
                values.append(sample.tid)
            elif key == "cpu":
                # (a sample without one: perf's (u32)-1 read as an int)
                values.append(sample.cpu if sample.cpu is not None else -1)
            else:
                if frame.symbol is not None:
                    # perf's sort__sym_cmp: a symbol is its dso and start
                    # (map-relative; two overloads printed alike stay two rows);
                    # an inlined function, its name and the range of the
                    # function it is inlined in (new_inline_sym() gives it
                    # that symbol's start and end; _sort__sym_cmp() takes
                    # overlapping ranges as one): Py_INCREF inlined in two
                    # functions is two rows.  (An inlined frame's offset is
                    # from the start of the function that holds it.)
                    ident = None
                    if frame.offset is not None and frame.address is not None:
                        ident = (frame.dso_path or frame.dso, frame.address - frame.offset)
                    values.append(("s", frame.symbol + suffix, ident))
                elif in_chain and frame.avma is not None:
                    # perf's callchain entries without a symbol carry the
                    # absolute address, its sample entries the map-relative one.
                    values.append(("a", frame.avma))
                else:
                    values.append(("a", self._entry_address(sample, frame)))
        # The privilege level ([k], [.]) belongs to the symbol key, but
        # for an address without a symbol: perf's sort__sym_cmp() compares
        # those by address alone, and the row shows the level of the first
        # sample that made it.
        key = (level if "sym" in self.sort_keys and frame.symbol is not None else None,
               ) + tuple(values)
        entry = hist.entries.get(key)
        if entry is None:
            entry = hist.entries[key] = Entry(tuple(values), level, frame.symbol is None,
                                              sample.thread, self.order)
        return entry

    def _entry_address(self, sample: SymbolizedSample, frame: StackFrame) -> int:
        """perf's al->addr for an entry without a symbol: map-relative, also
        in a kernel module ([name]); absolute in the kernel image."""
        if frame.kernel and frame.avma is not None and self.sampler is not None:
            short = dso_short_name(frame)
            if short.startswith("[") and short not in ("[kernel.kallsyms]", "[unknown]",
                                                       "[bpf_prog]"):
                try:
                    m = self.sampler.machine.find_map(sample.thread, frame.avma, True)
                except Exception:
                    m = None
                if m is not None:
                    return m.file_offset(frame.avma)
        return frame.address

    def _real_frame(self, sample: SymbolizedSample, frames: Sequence[StackFrame], index: int
                    ) -> tuple[StackFrame, int]:
        """The frame at `index` as the symbol table names it: perf report's
        entries are symbols, not the inlined functions perf script shows."""
        frame = frames[index]
        if not frame.inlined:
            return frame, index
        j = index
        while j < len(frames) and frames[j].inlined and frames[j].avma == frame.avma:
            j += 1
        if j < len(frames) and frames[j].avma == frame.avma and not frames[j].inlined:
            return frames[j], j
        if self.sampler is not None and frame.avma is not None:
            try:
                again = self.sampler.frames_for_address(sample, frame.avma, frame.kernel, False)
            except Exception:
                again = None
            if again:
                return again[-1], j - 1
        return frame, j - 1

    def add(self, sample: SymbolizedSample) -> None:
        hist = self.hists.get(sample.event.index)
        if hist is None:
            hist = self.hists[sample.event.index] = EventHistogram(sample.event)
        period = sample.period or 0
        hist.total_period += period
        hist.samples += 1
        if self.hist_filter is not None and not self.hist_filter(sample):
            return
        frames = sample.frames
        cpumode = sample.cpumode & MISC_CPUMODE_MASK
        level = _LEVEL.get(cpumode, ".")
        if frames:
            leaf, _ = self._real_frame(sample, frames, 0)
        else:
            from ..resolve.frames import StackFrame
            leaf = StackFrame(sample.ip or 0, sample.ip or 0, None, None, "[unknown]")
        entry = self._frame_entry(hist, sample, leaf, level)
        entry.self_period += period
        entry.samples += 1
        if self.children:
            # perf's children entries are the frames perf script prints,
            # inlined functions as "name (inlined)".
            seen = {id(entry)}
            entry.children += period
            # An entry in no map keeps the level the entry before it set:
            # perf's fill_callchain_info() leaves al->level alone for it, and
            # walks the chain caller first (--children's order), from the
            # sample's own level ("[k] 0000000000000000" at the bottom of the
            # user stack of a sample in the kernel).
            levels = [level] * len(frames)
            lvl = level
            for i in range(len(frames) - 1, 0, -1):
                frame = frames[i]
                if frame.note != "no-map":
                    lvl = "k" if frame.kernel else "."
                levels[i] = lvl
            for i, frame in enumerate(frames):
                lvl = levels[i]
                e = self._frame_entry(hist, sample, frame, lvl,
                                      " (inlined)" if frame.inlined else "", in_chain=True)
                if id(e) not in seen:
                    seen.add(id(e))
                    e.children += period

    def add_counted(self, sample: Any, frame: StackFrame, cpumode: int, period: int,
                    samples: int, first: int) -> None:
        """Add samples counted elsewhere (the compiled core: perfdata/core/
        report.py) as add() would have added them one by one: `samples`
        samples of one event, thread, comm, tid, cpu and cpumode (`sample`
        holds event, thread, comm, tid, cpu) whose leaf entry is `frame`
        (the symbol table's, not an inlined one), their periods summed; the
        first of them the sample at `first` (the entry made by the earliest
        sample keeps its level and thread, as Entry.merge).  Without
        hist_filter and --children only; sort_by_first() puts the entries
        back in the order one pass would have made them."""
        index = sample.event.index
        hist = self.hists.get(index)
        if hist is None:
            hist = self.hists[index] = EventHistogram(sample.event)
        hist.total_period += period
        hist.samples += samples
        level = _LEVEL.get(cpumode & MISC_CPUMODE_MASK, ".")
        self.order = first
        entry = self._frame_entry(hist, sample, frame, level)
        if first < entry.first:
            entry.level, entry.unresolved, entry.thread, entry.first = \
                level, frame.symbol is None, sample.thread, first
        entry.self_period += period
        entry.samples += samples

    def sort_by_first(self) -> None:
        """Each histogram's entries in the order of the samples that made
        them (Entry.first; entries of one sample keep their order)."""
        for hist in self.hists.values():
            hist.entries = dict(sorted(hist.entries.items(), key=lambda item: item[1].first))

    # ---------------------------------------------------------------- text
    def _cell(self, key: str, value: Any, level: str, thread: Thread | _Comm | None = None
              ) -> str:
        if key == "sym":
            kind, v = value[:2]
            return "[%s] %s" % (level, v if kind == "s" else _addr_text(v))
        if key == "pid":
            return "%7d:%s" % (value, _thread_comm(thread))
        if key == "cpu":
            # perf's hist_entry__cpu_snprintf(): "%*.*d" at the column's width
            return "%*.*d" % (len(SORT_KEYS["cpu"]), len(SORT_KEYS["cpu"]), value)
        return value

    def _sort_key(self, entry: Entry) -> tuple[Any, ...]:
        parts: list[Any] = []
        for key, value in zip(self.sort_keys, entry.key):
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
        if self.children:
            return (-entry.children, -entry.self_period, parts)
        return (-entry.self_period, parts)

    def describe(self, attrs: Iterable[EventAttr], lost: int = 0, *,
                 show_nr_samples: bool = False, quiet: bool = False,
                 percent_limit: float = 0.0, elided: dict[str, str] | None = None,
                 groups: dict[int, tuple[str | None, list[int]]] | None = None,
                 leaders: set[int] | None = None) -> str:
        """The table as perf report --stdio prints it; show_nr_samples: the
        Samples column (-n); quiet: no comment lines (-q); percent_limit:
        the entries below it left out (--percent-limit: of the children
        period with --children), the columns sized by them all, as perf's;
        elided: {sort key: the one name a filter list gave for it (--comm,
        --dsos, --symbols)}: perf's sort__setup_elide() says it in the
        header and leaves the column out, unless every column would go;
        groups: {leader's index: (group name, the members' indexes)}
        (event_groups()): each group one table, as perf's default --group
        view prints it, a column per event in each percent column (a name
        of None: the events of a file without groups put in one by
        --group, evsel__group_desc() of a forced leader); leaders: the
        indexes of group leaders shown apart (--no-group), whose header
        says "of events" (nr_members > 1)."""
        elided = {k: v for k, v in (elided or {}).items() if k in self.sort_keys}
        said = ["# %s: %s\n" % ("symbol" if k == "sym" else k, elided[k])
                for k in self.sort_keys if k in elided]
        if len(elided) == len(self.sort_keys):
            elided = {}
        out = [] if quiet else [
            "# To display the perf.data header info, please use "
            "--header/--header-only options.\n", "#\n"] + said + [
            "#\n", "# Total Lost Samples: %d\n" % lost, "#\n"]
        shown = [k for k in self.sort_keys if k not in elided]
        groups = groups or {}
        members_of = {m for _, members in groups.values() for m in members}
        attrs = list(attrs)
        names = {ea.index: getattr(ea, "name", "") for ea in attrs} if groups else {}
        for ea in attrs:
            if ea.index in members_of:
                continue        # (in its leader's table)
            hist = self.hists.get(ea.index)
            if hist is None:
                continue
            group = groups.get(ea.index)
            if group is None:
                out.extend(self._describe_hist(hist, show_nr_samples, quiet, percent_limit,
                                               shown, leader=ea.index in (leaders or ())))
                continue
            name, members = group
            title = ", ".join([ea.name] + [names.get(m, "") for m in members])
            if name is not None:            # (None: a forced leader's, without braces)
                title = "%s { %s }" % (name, title)
            out.extend(self._describe_hist(hist, show_nr_samples, quiet, percent_limit, shown,
                                           [self.hists.get(m) for m in members], title))
        if not quiet:
            out.append("#\n#\n")
        return "".join(out)

    def _describe_hist(self, hist: EventHistogram, show_nr_samples: bool = False,
                       quiet: bool = False, percent_limit: float = 0.0,
                       shown: list[str] | None = None,
                       members: list[EventHistogram | None] | None = None,
                       group_title: str | None = None, leader: bool = False) -> list[str]:
        """One event's table; with members (a group's other events: perf's
        --group view, its default), the leader's table with a column per
        event in each percent column: the member entries paired by key
        (hists__match), those only a member has added with nothing for the
        leader (hists__link), sorted by the leader's period, then the
        members' in order (__hpp__sort; with --children, by the leader's
        children period first, __hpp__sort_acc)."""
        k: str | None           # (a sort key's name; None for a percent column)
        group: list[EventHistogram | None] = [hist]
        group += members or []
        if quiet:
            out = []
        elif group_title is None:
            out = ["# Samples: %s of event%s '%s'\n" % (_unit_number(hist.samples),
                                                        "s" if leader else "", hist.event.name),
                   "# Event count (approx.): %d\n" % hist.total_period, "#\n"]
        else:
            out = ["# Samples: %s of events '%s'\n" % (
                       _unit_number(sum(h.samples for h in group if h is not None)), group_title),
                   "# Event count (approx.): %d\n" % sum(h.total_period for h in group
                                                        if h is not None), "#\n"]
        total = hist.total_period or 1

        def shown_entry(e: Entry) -> bool:
            return bool(e.self_period or (self.children and e.children) or e.samples)
        by_key = {key: e for key, e in hist.entries.items() if shown_entry(e)}
        for member in group[1:]:
            for key, e in (member.entries.items() if member is not None else ()):
                if key not in by_key and shown_entry(e):
                    # (hists__add_dummy_entry(): the leader's row, empty)
                    by_key[key] = Entry(e.key, e.level, e.unresolved, e.thread, e.first)
        entries = list(by_key.values())
        key_of = {id(e): key for key, e in by_key.items()}

        def paired(e: Entry) -> list[Entry | None]:
            key = key_of[id(e)]
            return [e] + [member.entries.get(key) if member is not None else None
                          for member in group[1:]]
        if len(group) > 1:
            def group_sort_key(e: Entry) -> tuple[Any, ...]:
                mine = paired(e)
                selfs = tuple(-(x.self_period if x is not None else 0) for x in mine)
                if self.children:
                    # (__hpp__sort_acc(): the leader's children period only)
                    return (-e.children,) + selfs + (self._sort_key(e)[-1],)
                return selfs + (self._sort_key(e)[-1],)
            entries.sort(key=group_sort_key)
        else:
            entries.sort(key=self._sort_key)
        n = len(group)
        totals = [h.total_period if h is not None else 0 for h in group]

        def pct_cell(values: list[int]) -> str:
            # perf's __hpp__fmt(): " %6.2f%%" per event of the group (0.00
            # for one without the entry or without samples), the first
            # space left to the column's padding
            if n == 1:
                return "%.2f%%" % (100.0 * values[0] / total)
            return "".join(" %6.2f%%" % (100.0 * v / t if t else 0.0)
                           for v, t in zip(values, totals))[1:]
        sort_keys = self.sort_keys if shown is None else shown    # the columns printed
        rows = []
        for e in entries:
            cells = [self._cell(k, v, e.level, e.thread) for k, v in zip(self.sort_keys, e.key)
                     if k in sort_keys]
            mine = paired(e) if n > 1 else [e]
            pcts = [pct_cell([x.self_period if x is not None else 0 for x in mine])]
            if self.children:
                pcts.insert(0, pct_cell([x.children if x is not None else 0 for x in mine]))
            if show_nr_samples:
                pcts.append("".join(" %11d" % (x.samples if x is not None else 0)
                                    for x in mine)[1:] if n > 1 else "%d" % e.samples)
            rows.append((pcts, cells))
        heads = (["Children", "Self"] if self.children else ["Overhead"]) + \
            (["Samples"] if show_nr_samples else []) + [SORT_KEYS[k] for k in sort_keys]
        npct = (2 if self.children else 1) + (1 if show_nr_samples else 0)
        # (perf's percent columns are 8 wide at least, its Samples 12, each
        # times the events of a group: hpp__width_fn())
        widths = [(12 * n if h == "Samples" else max(len(h), 8 * n)) if i < npct else len(h)
                  for i, h in enumerate(heads)]
        keys = [None] * npct + list(sort_keys)
        for pcts, cells in rows:
            for i, text in enumerate(pcts + cells):
                # (comm, pid: below; cpu: hists__calc_col_len() fixes HISTC_CPU
                # at 3, the header's width, and a wider "%*.*d" ("-001", a
                # sample without PERF_SAMPLE_CPU) just overflows it)
                if keys[i] in ("comm", "pid", "cpu"):
                    continue
                if text.endswith(" (inlined)"):
                    # perf sizes the column by the symbol's own name.
                    text = text[:-len(" (inlined)")]
                widths[i] = max(widths[i], len(text))
        # perf's hists__calc_col_len(): an entry without a symbol makes room
        # for a 16-digit address, in the symbol and the dso columns.
        if any(e.unresolved for e in entries):
            for i, k in enumerate(sort_keys):
                if k == "sym":
                    widths[npct + i] = max(widths[npct + i], 16 + 4 + 2)
                elif k == "dso":
                    widths[npct + i] = max(widths[npct + i], 16)
        # perf sizes the comm column by the threads' comm lengths, taken once
        # at the end (thread__comm_len), and cuts longer comms to fit;
        # "Pid:Command" is 8 wider.
        comm_len = max((len(_thread_comm(e.thread)) for e in entries), default=0)
        for i, k in enumerate(keys):
            if k == "comm":
                widths[i] = max(widths[i], comm_len)
            elif k == "pid":
                widths[i] = max(widths[i], comm_len + 8)
            if k in ("comm", "pid"):
                for _, cells in rows:
                    cells[i - npct] = cells[i - npct][:widths[i]]
        head_cells = []
        for i, h in enumerate(heads):
            head_cells.append(("%*s" if i < npct else "%-*s") % (widths[i], h))
        if not quiet:
            out.append("# " + "  ".join(head_cells) + "\n")
            out.append("# " + "  ".join("." * w for w in widths) + "\n")
            out.append("#\n")
        for e, (pcts, cells) in zip(entries, rows):
            if percent_limit > 0 and 100.0 * (e.children if self.children else e.self_period) \
                    / total < percent_limit:
                # perf's hist_entry__get_percent_limit(); the columns stay
                # sized by every entry, as perf's are
                continue
            parts = ["%*s" % (widths[i], p) for i, p in enumerate(pcts)]
            for j, c in enumerate(cells):
                i = npct + j
                # Every cell is padded to its column, but a symbol in the last one.
                last_sym = j == len(cells) - 1 and sort_keys[j] == "sym"
                parts.append(c if last_sym else "%-*s" % (widths[i], c))
            out.append("  " + "  ".join(parts) + "\n")
        out.append("\n\n")
        return out

    def percentages(self) -> dict[str, dict[tuple[str, ...], tuple[float, float]]]:
        """{event name: {key tuple: (self %, children %)}}: for tests and tools."""
        result: dict[str, dict[tuple[str, ...], tuple[float, float]]] = {}
        for hist in self.hists.values():
            total = hist.total_period or 1
            table = result.setdefault(hist.event.name, {})
            for e in hist.entries.values():
                cells = tuple(self._cell(k, v, e.level, e.thread)
                              for k, v in zip(self.sort_keys, e.key))
                # Two symbols printed alike (overloads) add up under one key.
                was = table.get(cells, (0.0, 0.0))
                table[cells] = (was[0] + 100.0 * e.self_period / total,
                                was[1] + 100.0 * e.children / total)
        return result


def _thread_comm(thread: Thread | _Comm | None) -> str:
    return thread.comm if thread is not None else ""


def _unit_number(n: int) -> str:
    """perf's convert_unit(): 2387 -> '2K', 140 -> '140 '."""
    unit = " "
    if n > 1000000000:
        n, unit = n // 1000000000, "G"
    elif n > 1000000:
        n, unit = n // 1000000, "M"
    elif n > 1000:
        n, unit = n // 1000, "K"
    return "%d%s" % (n, unit)


class _EventIndex:
    """A worker histogram's event, until the run's own EventAttr replaces it."""
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def build_report(pf: PerfFile, samples: SampleSymbolizer, sort_keys: list[str],
                 children: bool = False, progress: bool = True,
                 report: Report | None = None) -> Report:
    """The Report of the samples (added to `report` if given: a fault
    mid-file leaves it holding the samples before the fault)."""
    if report is None:
        report = Report(sort_keys, children, sampler=samples)
    from ..core import compiled
    module = compiled()
    if module is not None:
        # (the compiled core counts the -g samples it can: perfdata/core/report.py)
        from ..core.report import ReportCore
        if ReportCore.applies_to(samples, report):
            core = ReportCore(module, samples, report)
            core.fill(sample_progress(core, pf, "report") if progress else None)
            return report
    it = sample_progress(samples, pf, "report") if progress else samples
    ordered = samples.share is not None
    for sample in it:
        if ordered:
            report.order = samples.ordinal
        report.add(sample)  # type: ignore[arg-type]  # (made without side events)
    return report


# Samples per block of a sharded run (-j).
SHARD_BLOCK = 512


def report_jobs(args: argparse.Namespace, pf: PerfFile, filtered: bool = False) -> int:
    """Worker processes for the table: -j, but one with --stitch (it needs
    the thread's other samples), and by default one where the compiled core
    counts the samples (filtered: a histogram filter is given, which the
    core leaves to the Python path)."""
    from ..run.sharded import default_jobs
    if getattr(args, "stitch", False):
        return 1
    if args.jobs is None and not args.children and not filtered:
        from ..core.report import takes_most_samples
        if takes_most_samples(args, pf):
            return 1        # (a second worker costs more than it saves: see script_jobs)
    return default_jobs(args.jobs, pf)


def _report_sharded(args: argparse.Namespace, keys: list[str], jobs: int, pf: PerfFile,
                    hist_filter: Callable[[SampleSymbolizer], HistFilter | None] = lambda s: None
                    ) -> tuple[Report, int]:
    """(Report, lost samples) from `jobs` workers' shares of the samples."""
    from functools import partial

    from ..run.sharded import add_up_parts, compute_part
    report, lost = Report(keys, args.children), 0

    def fill(wpf: PerfFile, samples: SampleSymbolizer, mine: list[Any]) -> None:
        build_report(wpf, samples, keys, children=args.children, progress=False,
                     report=mine[0])
        # Every worker reads every record: each counts all the lost samples.
        mine[1] = samples.lost_samples

    def merge(part: list[Any]) -> None:
        nonlocal lost
        report.merge(part[0])
        lost = part[1]

    # a worker's part: [its Report, the lost samples]
    add_up_parts(pf, jobs, SHARD_BLOCK,
                 partial(compute_part, args,
                         make=lambda samples: [Report(keys, args.children, sampler=samples,
                                                      hist_filter=hist_filter(samples)), 0],
                         fill=fill),
                 merge)
    events = {ea.index: ea for ea in pf.attrs}
    for hist in report.hists.values():
        hist.event = events.get(hist.event.index, hist.event)
    return report, lost


_HIST_FILTER_ARGS = ("pid", "tid", "comm", "dsos", "symbols")


def split_hist_filters(args: argparse.Namespace
                       ) -> tuple[argparse.Namespace, Callable[[SampleSymbolizer], HistFilter | None],
                                  dict[str, str]]:
    """perf report's filters by thread, comm, dso and symbol leave a sample
    in its event's totals (HIST_FILTER_*), where -C and --time drop it:
    (the arguments for the sample stream, without the first kind; a
    function of a run's SampleSymbolizer giving the Report's hist_filter,
    or None; {sort key: the one name its filter list gave} for the elided
    columns)."""
    import argparse as _argparse
    from .options import (make_leaf_filter, make_sample_filter, name_list, option_value,
                          symbol_list)
    stream_args = _argparse.Namespace(**vars(args))
    for name in _HIST_FILTER_ARGS:
        setattr(stream_args, name, None)
    thread_keep = make_sample_filter(_argparse.Namespace(
        pid=args.pid, tid=args.tid, comm=args.comm, cpu=None, time=None))
    leaf_keep = make_leaf_filter(args)

    def hist_filter(sampler: SampleSymbolizer) -> HistFilter | None:
        if thread_keep is None and leaf_keep is None:
            return None

        def keep(sample: SymbolizedSample) -> bool:
            if thread_keep is not None and not thread_keep(sample):
                return False
            return leaf_keep is None or leaf_keep(sample, sampler.leaf_frames(sample))
        return keep

    lists: dict[str, set[str]] = {}
    if args.comm is not None:
        lists["comm"] = set(option_value(args.comm, name_list))
    if getattr(args, "dsos", None) is not None:
        lists["dso"] = set(option_value(args.dsos, name_list))
    if getattr(args, "symbols", None) is not None:
        # (-S: names and addresses; an address echoed as perf echoes a
        # hexadecimal entry written without 0x)
        names, addrs = option_value(args.symbols, symbol_list)
        lists["sym"] = set(names) | {"%x" % a for a in addrs}
    elided = {key: next(iter(given)) for key, given in lists.items() if len(given) == 1}
    return stream_args, hist_filter, elided


def event_groups(pf: PerfFile, group: bool | None = None
                 ) -> dict[int, tuple[str | None, list[int]]]:
    """{leader's index: (group name, the members' indexes)} from the
    GROUP_DESC feature, as perf's process_group_desc() rebuilds the groups
    (a leader's next nr_members - 1 events are its members; "{anon_group}"
    is printed "anon group"); groups of one event are none.  group: perf
    report's --group (True: a file without groups has its events put in one
    under the first, evlist__force_leader(), named None) or --no-group
    (False: none)."""
    from ..format import Feature
    attrs = list(pf.attrs)
    if group is False:
        return {}
    try:
        descs = pf.feature(Feature.GROUP_DESC) or []
    except Exception:       # a damaged section: no groups, as perf's reading fails
        descs = []
    groups: dict[int, tuple[str | None, list[int]]] = {}
    for desc in descs:
        try:
            leader, nr = int(desc["leader_idx"]), int(desc["nr_members"])
            name = str(desc["name"])
        except (KeyError, TypeError, ValueError):
            continue
        if nr > 1 and 0 <= leader < len(attrs) and leader + nr <= len(attrs):
            groups[attrs[leader].index] = (
                "anon group" if name == "{anon_group}" else name,
                [attrs[i].index for i in range(leader + 1, leader + nr)])
    if group and not groups and len(attrs) > 1:
        groups[attrs[0].index] = (None, [ea.index for ea in attrs[1:]])
    return groups


def run(args: argparse.Namespace, out: TextIO) -> None:
    keys = parse_sort(args.sort)
    args, hist_filter, elided = split_hist_filters(args)
    stream, close = open_output(args.output, out)
    if args.call_graph != "none":
        sys.stderr.write("perfdata: note: report prints the flat table only (as -g none); "
                         "see perfdata flamegraph for the call graph\n")
    pf = open_profile(args.file, getattr(args, "strict", False))
    if args.children and not any(ea.sample_type & SampleType.CALLCHAIN for ea in pf.attrs):
        # perf's report__setup_sample_type(): --children is silently dropped
        # when no event has callchains (one Overhead column, not two)
        args.children = False
    samples = make_sample_symbolizer(pf, args)
    jobs = report_jobs(args, pf, hist_filter(samples) is not None)
    if jobs > 1:
        pf.resolve_event_names()
        report, lost = _report_sharded(args, keys, jobs, pf, hist_filter)
    else:
        try:
            report = build_report(pf, samples, keys, children=args.children,
                                  report=Report(keys, args.children, sampler=samples,
                                                hist_filter=hist_filter(samples)))
        finally:
            print_warnings(pf, samples.symbolizer.warnings)
        lost = samples.lost_samples
    text = report.describe(pf.attrs, lost=lost, show_nr_samples=args.show_nr_samples,
                           quiet=args.quiet, percent_limit=args.percent_limit, elided=elided,
                           groups=event_groups(pf, args.group),
                           # (--no-group sets perf's group_set: the events are
                           # grouped, a forced leader if need be, but shown
                           # apart, a leader's header saying "of events")
                           leaders=set(event_groups(pf, True)) if args.group is False
                           else None)
    if args.threads:
        text += thread_values(pf)
    try:
        stream.write(text)
    finally:
        if close:
            stream.close()


def thread_values(pf: PerfFile) -> str:
    """perf report -T (--threads): the counter values of the file's READ
    records (perf record -s, inherit_stat: a thread's count when it exits),
    as perf_read_values__display_pretty() prints them after the table: a
    row per pid/tid in the order of their first record (perf's time order),
    a column per event in the order of its first record, values of one
    thread and event added up, 0 where a thread has none; the widths those
    of the longest number or name (at least 3 for PID and TID).  The value
    is the record's first word (perf's event->read.value)."""
    threads: dict[tuple[int, int], dict[int, int]] = {}
    counters: dict[int, str] = {}
    for rec in pf.records(order="time"):
        if rec.type != RT.READ:
            continue
        fields = rec.parse()
        attr = rec.attr or (pf.attrs[0] if pf.attrs else None)
        if attr is None:
            continue
        key = (_pid_t(fields["pid"]), _pid_t(fields["tid"]))
        values = fields["values"]
        value = next(iter(values.values()), 0) if isinstance(values, dict) else 0
        counters.setdefault(attr.index, attr.name)
        row = threads.setdefault(key, {})
        row[attr.index] = (row.get(attr.index, 0) + value) % (1 << 64)
    pid_w = max([3] + [len(str(p)) for p, _ in threads])
    tid_w = max([3] + [len(str(t)) for _, t in threads])
    widths = {i: max([len(name)] + [len(str(row.get(i, 0))) for row in threads.values()])
              for i, name in counters.items()}
    out = ["# %*s  %*s" % (pid_w, "PID", tid_w, "TID")
           + "".join("  %*s" % (widths[i], name) for i, name in counters.items()) + "\n"]
    for (pid, tid), row in threads.items():
        out.append("  %*d  %*d" % (pid_w, pid, tid_w, tid)
                   + "".join("  %*d" % (widths[i], row.get(i, 0)) for i in counters) + "\n")
    return "".join(out)


def _pid_t(value: int) -> int:
    """A u32 pid or tid as perf prints it (%d)."""
    return value - (1 << 32) if value >= 1 << 31 else value



def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("report", help="overhead table, as perf report --stdio")
    add_input_argument(p)
    add_force_argument(p)
    p.add_argument("-o", "--output", help="write here (default: standard output)")
    add_report_options(p)
    p.add_argument("-T", "--threads", action="store_true",
                   help="after the table, the counter values per thread of a file "
                        "recorded with perf record -s (its READ records)")
    add_jobs_argument(p)
    add_symbolize_options(p)
    p.set_defaults(func=run)


def add_report_options(p: argparse.ArgumentParser) -> None:
    """The table's options (also those of `perfdata fleet report`)."""
    p.add_argument("-s", "--sort", default=DEFAULT_SORT,
                   help="sort keys: %s (default %s)" % (",".join(VALID_SORT_KEYS), DEFAULT_SORT))
    # (both may be given, as to perf: the last one wins)
    p.add_argument("--children", action="store_true",
                   help="add inclusive time (perf report --children)")
    p.add_argument("--no-children", dest="children", action="store_false",
                   help="self time only (the default, as --no-children)")
    p.add_argument("-n", "--show-nr-samples", action="store_true",
                   help="a column of each entry's sample count")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="the rows only: no comment lines")
    p.add_argument("--percent-limit", type=_percent, default=0.0, metavar="PCT",
                   help="leave out entries below PCT%% (of the children time with --children)")
    # (perf's OPT_BOOLEAN_SET: without either, a file's own groups are shown
    # together, symbol_conf.event_group's default)
    p.add_argument("--group", action="store_true", default=None,
                   help="show the events of a group together (the default for a file "
                        "with groups; without groups: all events in one table)")
    p.add_argument("--no-group", dest="group", action="store_false",
                   help="a table per event, also for an event group")
    p.add_argument("--stdio", action="store_true", help=argparse_suppress())
    # perf's -g: only the flat table is printed, so only `-g none` is meaningful.
    p.add_argument("-g", "--call-graph", nargs="?", const="graph", default="none",
                   type=call_graph, help=argparse_suppress())


# __parse_callchain_report_opt()'s words, each taken by any prefix of it.
_CALL_GRAPH_WORDS = ("graph", "flat", "fractal", "folded", "callee", "caller", "function",
                     "address", "percent", "period", "count")


def call_graph(text: str) -> str:
    """perf report's -g as perf 6.1 checks it (__parse_callchain_report_opt):
    comma-separated tokens, each a prefix of a mode, order, sort key or value
    word, or a number (the threshold, strtod, then print limits, strtoul:
    whatever follows the number's start is ignored); a prefix of `none`
    ends the list and turns the call graph off ("none" here).  Anything
    else is refused, as perf refuses it (its usage text, exit 129)."""
    import argparse
    import re
    numbers = 0
    for tok in text.split(","):
        if not tok:
            continue
        if "none".startswith(tok):
            return "none"
        if any(word.startswith(tok) for word in _CALL_GRAPH_WORDS):
            continue
        number = r"[ \t\n\v\f\r]*[-+]?(\d|\.\d|inf|nan)" if not numbers else \
            r"[ \t\n\v\f\r]*[-+]?\d"
        if re.match(number, tok, re.IGNORECASE) is None:
            raise argparse.ArgumentTypeError("invalid call graph option %r in %r (perf's: "
                                             "print_type,threshold[,print_limit],order,"
                                             "sort_key[,branch],value)" % (tok, text))
        numbers += 1
    return text


def _percent(text: str) -> float:
    """--percent-limit's value: perf reads it with strtof (a number, or 0)."""
    import re
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(m.group(0)) if m else 0.0


def argparse_suppress() -> str:
    import argparse
    return argparse.SUPPRESS
