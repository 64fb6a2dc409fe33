"""Report: the histograms of symbolized samples, one per event, each entry
keyed as perf report keys it (sort_keys.py) and printed by text.py."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...format import (MISC_CPUMODE_MASK, MISC_GUEST_KERNEL, MISC_GUEST_USER, MISC_HYPERVISOR,
                       MISC_KERNEL)
from ..dsoname import dso_short_name
from .entries import Entry, EventHistogram
from .sort_keys import cell_text
from .text import describe_report

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from ...format import EventAttr
    from ...resolve.frames import StackFrame
    from ...resolve.symbolized import SampleSymbolizer, SymbolizedSample

    # (sample) -> whether it makes an entry (Report's hist_filter)
    HistFilter = Callable[[SymbolizedSample], bool]

_LEVEL = {MISC_KERNEL: "k", MISC_GUEST_KERNEL: "g", MISC_GUEST_USER: "u",
          MISC_HYPERVISOR: "H"}


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
            from ...resolve.frames import StackFrame
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


    def describe(self, attrs: Iterable[EventAttr], lost: int = 0, *,
                 show_nr_samples: bool = False, quiet: bool = False,
                 percent_limit: float = 0.0, elided: dict[str, str] | None = None,
                 groups: dict[int, tuple[str | None, list[int]]] | None = None,
                 leaders: set[int] | None = None) -> str:
        """The table as perf report --stdio prints it (text.describe_report
        says what each keyword shows)."""
        return describe_report(self, attrs, lost, show_nr_samples=show_nr_samples,
                               quiet=quiet, percent_limit=percent_limit, elided=elided,
                               groups=groups, leaders=leaders)

    def percentages(self) -> dict[str, dict[tuple[str, ...], tuple[float, float]]]:
        """{event name: {key tuple: (self %, children %)}}: for tests and tools."""
        result: dict[str, dict[tuple[str, ...], tuple[float, float]]] = {}
        for hist in self.hists.values():
            total = hist.total_period or 1
            table = result.setdefault(hist.event.name, {})
            for e in hist.entries.values():
                cells = tuple(cell_text(k, v, e.level, e.thread)
                              for k, v in zip(self.sort_keys, e.key))
                # Two symbols printed alike (overloads) add up under one key.
                was = table.get(cells, (0.0, 0.0))
                table[cells] = (was[0] + 100.0 * e.self_period / total,
                                was[1] + 100.0 * e.children / total)
        return result


class _EventIndex:
    """A worker histogram's event, until the run's own EventAttr replaces it."""
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

