"""The commands' views as data: the rows of `perfdata report`'s table, of
`perfdata diff`'s and the tree of `perfdata flamegraph`, frozen and typed,
made from the views' own Report, DiffTable and FlameGraphBuilder (so they
hold the same numbers and names as the commands print).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..views import difftable
    from ..views.flamegraph import FlameGraphBuilder, Node
    from ..views.report.entries import EventHistogram
    from ..views.report.histogram import Report


Row = TypeVar("Row")


class Rows(Generic[Row]):
    """A table's rows as a sequence: iterating gives them; `len()` and
    indexing too (ReportTable's and DiffTable's `rows`)."""
    __slots__ = ()
    rows: tuple[Row, ...]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Row, ...]: ...

    def __getitem__(self, index: int | slice) -> Row | tuple[Row, ...]:
        return self.rows[index]


@dataclass(frozen=True, slots=True)
class ReportRow:
    """One row of `perfdata report`'s table.

    overhead: the row's percent of the event's period (perf's Overhead;
        Self with children=True).
    children: the inclusive percent (perf's Children column), None unless
        the report was made with children=True.
    samples, period: the samples counted in the row and their periods.
    command, pid, shared_object, cpu: the columns of the sort keys (None
        for a key not sorted by); pid is the thread's id, as perf's pid key.
    symbol: the function as perf prints it (C++ without parameters), or,
        without one, the address as perf prints it (`0x00000000000011de`).
    level: perf's privilege mark before the symbol: "." user, "k" kernel,
        "g" guest kernel, "u" guest user, "H" hypervisor.
    """
    overhead: float
    children: float | None
    samples: int
    period: int
    command: str | None
    pid: int | None
    shared_object: str | None
    symbol: str | None
    level: str
    cpu: int | None


@dataclass(frozen=True, slots=True)
class ReportTable(Rows[ReportRow]):
    """One event's table of `perfdata report`, its rows sorted as perf sorts
    them (by overhead, ties by the sort keys in order).  Iterating gives
    the rows; `len()` and indexing too."""
    event: str
    samples: int
    event_count: int
    sort_keys: tuple[str, ...]
    rows: tuple[ReportRow, ...]

    def _repr_html_(self) -> str:
        from .notebook import report_html
        return report_html(self)


@dataclass(frozen=True, slots=True)
class FlameNode:
    """A node of the flame graph: a frame reached by one path from the root.
    value: the weight of the samples through it (its width); self_value:
    of those whose stack ends here; kind: its colour family ("root" for
    the root and the comms under it); children: the widest first."""
    name: str
    value: int
    self_value: int
    kind: str
    dso: str | None
    children: tuple[FlameNode, ...]

    def walk(self) -> Iterator[tuple[int, FlameNode]]:
        """(depth, node) of this node and every node below it, depth first."""
        todo: list[tuple[int, FlameNode]] = [(0, self)]
        while todo:
            depth, node = todo.pop()
            yield depth, node
            todo.extend((depth + 1, c) for c in reversed(node.children))


@dataclass(frozen=True, slots=True)
class FlameGraph:
    """The tree `perfdata flamegraph` draws: root ("all"), the comms under it,
    their stacks.  weight: "samples" or "period"; event: the event drawn
    (the first one seen).  svg() draws it; a notebook shows it inline."""
    root: FlameNode
    weight: str
    event: str | None
    title: str
    _builder: Any = field(repr=False, compare=False)

    def svg(self, *, title: str | None = None, width: int = 1200, flame: bool = False,
            colors: str = "kind") -> str:
        """The SVG `perfdata flamegraph` writes (drawn from the top; flame:
        roots at the bottom; colors: "kind", "hot" or "dso", as its
        --colors)."""
        from ..views.flamegraph import render_svg
        return render_svg(self._builder, title=title, subtitle=self.title, width=width,
                          flame=flame, colors=colors)

    def _repr_svg_(self) -> str:
        return self.svg()


def flame_graph(builder: FlameGraphBuilder, title: str) -> FlameGraph:
    """The FlameGraph of a filled builder."""
    return FlameGraph(_node(builder.root), builder.weight, builder.event_name, title, builder)


def _node(node: Node) -> FlameNode:
    kids = sorted(node.children.values(), key=lambda c: (-c.value, c.name))
    return FlameNode(node.name, node.value, node.self_value, node.kind, node.dso,
                     tuple(_node(c) for c in kids))


def report_tables(report: Report, event_order: list[int]) -> list[ReportTable]:
    """The tables of a filled Report, one per event that has samples, in the
    order of event_order (the file's events' indexes)."""
    out = []
    for index in event_order:
        hist = report.hists.get(index)
        if hist is not None:
            out.append(_table(report, hist))
    return out


def _table(report: Report, hist: EventHistogram) -> ReportTable:
    from ..views.report.sort_keys import addr_text, row_order
    keys = report.sort_keys
    total = hist.total_period or 1
    entries = [e for e in hist.entries.values()
               if e.self_period or (report.children and e.children) or e.samples]
    entries.sort(key=lambda e: row_order(keys, report.children, e))
    rows = []
    for e in entries:
        cells = dict(zip(keys, e.key))
        sym = cells.get("sym")
        rows.append(ReportRow(
            100.0 * e.self_period / total,
            100.0 * e.children / total if report.children else None,
            e.samples, e.self_period, cells.get("comm"),
            cells.get("pid"), cells.get("dso"),
            None if sym is None else sym[1] if sym[0] == "s" else addr_text(sym[1]),
            e.level, cells.get("cpu")))
    return ReportTable(hist.event.name, hist.samples, hist.total_period, tuple(keys), tuple(rows))


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One row of `perfdata diff BASE NEW`'s table (perf diff's): a function
    (by default; a value of each sort key) of either profile.

    baseline: its percent of the base's period (perf's Baseline), 0.0
        where the base has no such function (perf leaves the cell blank).
    new: its percent of the new profile's period.
    delta: new - baseline (perf's Delta; Delta Abs is its size), where
        perf leaves the cell blank (the new profile lacks the function)
        -baseline.
    base_period, new_period: the periods of its samples (perf's -p
        columns), 0 where a profile has none.
    command, pid, shared_object, cpu: the columns of the sort keys (None
        for a key not sorted by), as ReportRow's.
    symbol: the function as perf prints it; where the binary has no
        symbol, the lowest address sampled in it (perf diff takes all of
        them for one entry).  level: perf's privilege mark (".", "k", ...).
    """
    baseline: float
    new: float
    delta: float
    base_period: int
    new_period: int
    command: str | None
    pid: int | None
    shared_object: str | None
    symbol: str | None
    level: str
    cpu: int | None


@dataclass(frozen=True, slots=True)
class DiffTable(Rows[DiffRow]):
    """One event's table of `perfdata diff BASE NEW` (`-c delta-abs`, perf
    diff's default), its rows in perf diff's order: the functions both
    profiles have by the size of the change, then those of the base only.
    base_event_count, new_event_count: the periods the percents are of.
    Iterating gives the rows; `len()` and indexing too."""
    event: str
    sort_keys: tuple[str, ...]
    base_event_count: int
    new_event_count: int
    rows: tuple[DiffRow, ...]


def diff_table(table: difftable.DiffTable, event: str) -> DiffTable:
    """The DiffTable of views.difftable's table of two files."""
    from ..views.report.sort_keys import addr_text
    keys = table.sort_keys
    rows = []
    for row in table.sorted_rows():
        new = row.pairs[0]
        baseline, share = table.percent(row.base, 0), table.percent(new, 1)
        cells = dict(zip(keys, row.shown.key))
        sym = cells.get("sym")
        rows.append(DiffRow(
            baseline, share, share - baseline,
            row.base.self_period if row.base is not None else 0,
            new.self_period if new is not None else 0,
            cells.get("comm"), cells.get("pid"), cells.get("dso"),
            None if sym is None else sym[1] if sym[0] == "s" else addr_text(sym[1]),
            row.shown.level, cells.get("cpu")))
    return DiffTable(event, tuple(keys), table.totals[0], table.totals[1], tuple(rows))
