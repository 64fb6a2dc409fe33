"""The table `perf diff` prints (perf 6.1, --stdio): each file's histogram of
sample leaves, paired across files by perf diff's keys, sorted and printed.

perf diff keys an entry by its sort keys (`dso,sym` by default) as
hists__match() pairs them: a symbol by its name alone (sort_sym's
se_collapse is sort__sym_sort in SORT_MODE__DIFF: two builds of a program,
other addresses, still pair), a dso by its short name; the entries without
a symbol of one dso are one entry (cmp_null() of two NULL symbols is 0),
shown with the lowest address.  The first file is the baseline; an entry
only a NEW file has is added to the baseline's table empty (hists__link(),
a "dummy" entry).  The rows are sorted by the compute column of the file
`-o` names (entries paired there first), then by the baseline's period,
then by each NEW file's compute column, then by the sort keys.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .report.entries import ThreadByComm
from .report.sort_keys import SORT_KEYS, cell_text, row_order

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..format import EventAttr
    from ..session.threads import Thread
    from .report.entries import Entry, ThreadComm
    from .report.histogram import Report

# perf diff's computations: (column header, its minimum width)
COLUMNS = {"delta": ("Delta", 7), "delta-abs": ("Delta Abs", 7), "ratio": ("Ratio", 14),
           "wdiff": ("Weighted diff", 14)}
# perf's MAX_COL_WIDTH: the Formula column's width
FORMULA_WIDTH = 70
PERIOD_WIDTH = 14
# an address where a symbol is missing: 16 hexadecimal digits (BITS_PER_LONG / 4)
UNRESOLVED_WIDTH = 16


@dataclass(frozen=True, slots=True)
class DiffOptions:
    """perf diff's options that shape the table."""
    compute: str = "delta-abs"          # -c: delta, delta-abs, ratio, wdiff
    weights: tuple[int, int] = (1, 1)   # -c wdiff:w1,w2
    order: int = 1                      # -o: the file whose column sorts first (0: none)
    show_period: bool = False           # -p
    show_formula: bool = False          # -F
    baseline_only: bool = False         # -b
    quiet: bool = False                 # -q
    relative: bool = False              # --percentage relative
    dso_filtered: bool = False          # -d given (no room made for unresolved dsos)


class DiffEntry(ThreadByComm):
    """One file's entry of a key: its period and how the row shows it (the
    sort keys' values, privilege level and thread of the entry kept: key,
    level and thread are report.Entry's)."""
    __slots__ = ("key", "level", "thread", "self_period", "unresolved")

    def __init__(self, key: tuple[Any, ...], level: str, thread: Thread | ThreadComm | None,
                 self_period: int, unresolved: bool) -> None:
        self.key = key
        self.level = level
        self.thread = thread
        self.self_period = self_period
        self.unresolved = unresolved

    @classmethod
    def of(cls, entry: Entry) -> DiffEntry:
        return cls(entry.key, entry.level, entry.thread, entry.self_period, entry.unresolved)

    def copy(self) -> DiffEntry:
        return DiffEntry(self.key, self.level, self.thread, self.self_period, self.unresolved)

    def add(self, other: DiffEntry, sym_at: int | None) -> None:
        """Add the period of another entry of the same key (sym_at: the
        place of the sym key, None if not sorted by it)."""
        self.self_period += other.self_period
        if sym_at is not None and self.unresolved:
            # (the entries of a dso without a symbol are shown with the
            # first in perf's address order)
            if _signed(other.key[sym_at][1]) < _signed(self.key[sym_at][1]):
                self.key, self.level, self.thread = other.key, other.level, other.thread



@dataclass(slots=True)
class EventTable:
    """One event's entries in one file, by perf diff's key."""
    entries: dict[tuple[Any, ...], DiffEntry]
    total: int              # every sample's period (--percentage absolute)
    shown_total: int        # the period of the samples the filters keep (relative)

    def total_of(self, relative: bool) -> int:
        return self.shown_total if relative else self.total

    def merged(self, other: EventTable, sym_at: int | None) -> EventTable:
        """A new table of both files' samples (as one file holding them:
        each key's periods added, the entries of this one first)."""
        entries = {key: e.copy() for key, e in self.entries.items()}
        for key, e in other.entries.items():
            mine = entries.get(key)
            if mine is None:
                entries[key] = e.copy()
            else:
                mine.add(e, sym_at)
        return EventTable(entries, self.total + other.total,
                          self.shown_total + other.shown_total)


def _signed(address: int) -> int:
    """perf's _sort__addr_cmp() reads a u64 difference as int64."""
    return address - (1 << 64) if address >= 1 << 63 else address


def diff_key(sort_keys: Sequence[str], values: tuple[Any, ...]) -> tuple[Any, ...]:
    """perf diff's collapse key of an entry: a symbol by its name, every
    entry without a symbol as one (None)."""
    return tuple((v[1] if v[0] == "s" else None) if k == "sym" else v
                 for k, v in zip(sort_keys, values))


def sym_place(sort_keys: Sequence[str]) -> int | None:
    return sort_keys.index("sym") if "sym" in sort_keys else None


def event_tables(report: Report) -> dict[int, EventTable]:
    """{event index: EventTable} of a file's Report (made without --children)."""
    keys = report.sort_keys
    sym_at = sym_place(keys)
    tables = {}
    for index, hist in report.hists.items():
        entries: dict[tuple[Any, ...], DiffEntry] = {}
        shown = 0
        for entry in hist.entries.values():
            shown += entry.self_period
            key = diff_key(keys, entry.key)
            mine = entries.get(key)
            if mine is None:
                entries[key] = DiffEntry.of(entry)
            else:
                mine.add(DiffEntry.of(entry), sym_at)
        tables[index] = EventTable(entries, hist.total_period, shown)
    return tables


def matching_event(attr: EventAttr, attrs: Sequence[EventAttr]) -> EventAttr | None:
    """perf's evsel__match2(): the first event of the same type and config."""
    for other in attrs:
        if other.attr["type"] == attr.attr["type"] and \
                other.attr["config"] == attr.attr["config"]:
            return other
    return None


class DiffRow:
    """A row: the baseline's entry (None: only NEW files have the key) and
    each NEW file's entry of the key (None where it has none)."""
    __slots__ = ("key", "base", "pairs", "shown")

    def __init__(self, key: tuple[Any, ...], base: DiffEntry | None,
                 pairs: list[DiffEntry | None]) -> None:
        self.key = key
        self.base = base
        self.pairs = pairs
        self.shown = base if base is not None else next(p for p in pairs if p is not None)


class DiffTable:
    """One event's table over the files (tables[0] the baseline's; a NEW
    file without the event is None)."""

    def __init__(self, sort_keys: list[str], tables: list[EventTable | None],
                 opts: DiffOptions) -> None:
        self.sort_keys = sort_keys
        self.opts = opts
        self.tables = tables
        base = tables[0] or EventTable({}, 0, 0)
        news = tables[1:]
        rows = {key: DiffRow(key, e, [t.entries.get(key) if t else None for t in news])
                for key, e in base.entries.items()}
        base_total = base.total_of(opts.relative)
        if opts.baseline_only:
            # (hists__baseline_only(): before the deltas, which keep the
            # totals as read; the baseline's column is of what is left)
            gone = [k for k, r in rows.items() if not any(r.pairs)]
            for key in gone:
                base_total -= rows.pop(key).base.self_period  # type: ignore[union-attr]
        else:
            for i, table in enumerate(news):
                for key in (table.entries if table else ()):
                    if key not in rows:
                        rows[key] = DiffRow(key, None, [t.entries.get(key) if t else None
                                                        for t in news])
        self.rows = list(rows.values())
        self.base_shown_total = base_total
        self.totals = [t.total_of(opts.relative) if t else 0 for t in tables]

    # ------------------------------------------------------------ computing
    def percent(self, entry: DiffEntry | None, file: int) -> float:
        if entry is None:
            return 0.0
        total = self.totals[file]
        return entry.self_period * 100.0 / total if total else 0.0

    def value(self, row: DiffRow, file: int, compute: str | None = None) -> float:
        """The compute column's value of a row for NEW file `file` (>= 1),
        which has the row's key (perf's compute_delta, _ratio, _wdiff)."""
        compute = compute or self.opts.compute
        pair = row.pairs[file - 1]
        assert pair is not None
        old = row.base.self_period if row.base is not None else 0
        if compute in ("delta", "delta-abs"):
            delta = self.percent(pair, file) - self.percent(row.base, 0)
            return abs(delta) if compute == "delta-abs" else delta
        if compute == "ratio":
            return pair.self_period / (old or 1)
        w1, w2 = self.opts.weights
        return pair.self_period * w2 - old * w1

    def _column_order(self, row: DiffRow, file: int) -> tuple[Any, ...]:
        """perf's hist_entry__cmp_compute(): rows with pairs first, those
        paired in this file first, the larger value first."""
        pair = row.pairs[file - 1]
        return (0 if any(row.pairs) else 1, 0 if pair is not None else 1,
                -self.value(row, file) if pair is not None else 0)

    def _sort_order(self, row: DiffRow) -> tuple[Any, ...]:
        opts = self.opts
        parts: list[Any] = []
        if opts.order:
            # (hist_entry__cmp_compute_idx(): a ratio or wdiff of an entry
            # the baseline lacks has no meaning: those last)
            pair = row.pairs[opts.order - 1]
            dummy = row.base is None and opts.compute not in ("delta", "delta-abs")
            parts.append((0 if pair is not None else 1, dummy if pair is not None else 0,
                          -self.value(row, opts.order) if pair is not None else 0))
        parts.append(-(row.base.self_period if row.base is not None else 0))
        parts.extend(self._column_order(row, f) for f in range(1, len(self.tables)))
        # (then the sort keys, as perf report orders them)
        parts.append(row_order(self.sort_keys, False, row.shown)[-1])  # type: ignore[arg-type]
        return tuple(parts)

    def sorted_rows(self) -> list[DiffRow]:
        return sorted(self.rows, key=self._sort_order)

    # ------------------------------------------------------------- printing
    def _diff_cells(self, row: DiffRow, widths: list[int]) -> list[str]:
        """The cells of the diff columns (perf's hpp__color_* and
        hpp__entry_global()), each padded to its column."""
        opts = self.opts
        cells = []
        w = iter(widths)
        width = next(w)
        if row.base is not None:
            pct = row.base.self_period * 100.0 / self.base_shown_total if self.base_shown_total \
                else 0.0
            cells.append("%*.2f%%" % (width - 1, pct))
        else:
            cells.append(" " * width)
        if opts.show_period:
            cells.append("%*d" % (next(w), row.base.self_period if row.base is not None else 0))
        for file in range(1, len(self.tables)):
            cells.append(self._compute_cell(row, file, next(w)))
            pair = row.pairs[file - 1]
            if opts.show_formula:
                width = next(w)
                cells.append("%*s" % (width, self._formula(row, file) if pair else " "))
            if opts.show_period:
                width = next(w)
                cells.append("%*s" % (width, pair.self_period if pair is not None else " "))
        return cells

    def _compute_cell(self, row: DiffRow, file: int, width: int) -> str:
        compute = self.opts.compute
        if row.pairs[file - 1] is None:
            return " " * width
        if compute in ("delta", "delta-abs"):
            return "%+*.2f%%" % (width - 1, self.value(row, file, "delta"))
        if row.base is None:
            return "%*s" % (width, "N/A")
        if compute == "ratio":
            return "%*.6f" % (width, self.value(row, file))
        # (perf's "%14ld" whatever the column's width; the cell is then padded)
        return "%14d" % self.value(row, file)

    def _formula(self, row: DiffRow, file: int) -> str:
        pair = row.pairs[file - 1]
        assert pair is not None
        old = row.base.self_period if row.base is not None else 0
        compute = self.opts.compute
        if compute in ("delta", "delta-abs"):
            return "(%d * 100 / %d) - (%d * 100 / %d)" % (
                pair.self_period, self.totals[file], old, self.base_shown_total)
        if compute == "ratio":
            return "%.0f / %.0f" % (pair.self_period, old)
        w1, w2 = self.opts.weights
        return "(%d * %d) - (%d * %d)" % (pair.self_period, w2, old, w1)

    def _key_cell(self, key: str, value: Any, entry: DiffEntry, width: int) -> str:
        if key in ("pid", "comm"):
            # (cut to the column, which perf sizes by the comms' lengths)
            comm = entry.thread.comm if entry.thread is not None else ""
            return "%7d:%-*.*s" % (value, width - 8, width - 8, comm) if key == "pid" \
                else value[:width]
        return str(cell_text(key, value, entry.level, entry.thread))

    def diff_headers(self) -> list[tuple[str, int]]:
        """(header, width) of the diff columns in their order (perf's
        init_header(): "Name/N" with more than one NEW file)."""
        opts = self.opts
        many = len(self.tables) > 2

        def head(name: str, width: int, file: int) -> tuple[str, int]:
            text = "%s/%d" % (name, file) if many else name
            return text, max(width, len(text))
        out = [head("Baseline", 0, 0)]
        if opts.show_period:
            out.append(head("Base period", PERIOD_WIDTH, 0))
        for file in range(1, len(self.tables)):
            out.append(head(*COLUMNS[opts.compute], file))
            if opts.show_formula:
                out.append(head("Formula", FORMULA_WIDTH, file))
            if opts.show_period:
                out.append(head("Period", PERIOD_WIDTH, file))
        return out

    def key_widths(self, rows: list[DiffRow], shown: list[str]) -> list[int]:
        """The sort keys' columns sized as perf's hists__calc_col_len()."""
        widths = [len(SORT_KEYS[k]) for k in shown]
        comm_len = max((len(r.shown.thread.comm) for r in rows
                        if r.shown.thread is not None), default=0)
        for r in rows:
            for i, k in enumerate(shown):
                value = r.shown.key[self.sort_keys.index(k)]
                if k == "sym":
                    if value[0] == "s":
                        widths[i] = max(widths[i], len(value[1]) + 4)
                    else:
                        widths[i] = max(widths[i], UNRESOLVED_WIDTH + 4 + 2)
                elif k == "dso":
                    widths[i] = max(widths[i], len(value))
                    if r.shown.unresolved and not self.opts.dso_filtered:
                        widths[i] = max(widths[i], UNRESOLVED_WIDTH)
                elif k == "comm":
                    widths[i] = max(widths[i], comm_len)
                elif k == "pid":
                    widths[i] = max(widths[i], comm_len + 8)
        return widths

    def describe(self, shown: list[str]) -> list[str]:
        """The table's lines: header (unless quiet) and rows; `shown`: the
        sort keys printed (the others elided by a one-name filter)."""
        rows = self.sorted_rows()
        heads = self.diff_headers()
        widths = [w for _, w in heads] + self.key_widths(rows, shown)
        out = []
        if not self.opts.quiet:
            names = ["%*s" % (w, h) for h, w in heads] + \
                ["%-*s" % (w, SORT_KEYS[k]) for k, w in zip(shown, widths[len(heads):])]
            out.append("# " + "  ".join(names) + "\n")
            out.append("# " + "  ".join("." * w for w in widths) + "\n")
            out.append("#\n")
        positions = [self.sort_keys.index(k) for k in shown]
        for row in rows:
            cells = self._diff_cells(row, widths)
            for k, at, width in zip(shown, positions, widths[len(heads):]):
                cells.append(self._key_cell(k, row.shown.key[at], row.shown, width))
            # (hist_entry__snprintf_alignment(): every cell padded to its
            # column but the last, and a symbol is printed unpadded)
            last_sym = bool(shown) and shown[-1] == "sym"
            text = "".join("  " + (c if i == len(cells) - 1 and last_sym else c.ljust(widths[i]))
                           for i, c in enumerate(cells))
            out.append(text + "\n")
        return out
