"""The table as `perf report --stdio` prints it: the file's comment lines,
then per event (or event group) its header, the column heads and one row
per entry, the columns sized as perf's hists__calc_col_len() sizes them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..units import convert_unit
from .entries import Entry, thread_comm
from .sort_keys import SORT_KEYS, cell_text, row_order

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ...format import EventAttr
    from .entries import EventHistogram
    from .histogram import Report

    # An entry's percent cells (then its samples), and its sort keys' cells.
    Row = tuple[list[str], list[str]]


def describe_report(report: Report, attrs: Iterable[EventAttr], lost: int = 0, *,
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
    sort_keys = report.sort_keys
    elided = {k: v for k, v in (elided or {}).items() if k in sort_keys}
    said = ["# %s: %s\n" % ("symbol" if k == "sym" else k, elided[k])
            for k in sort_keys if k in elided]
    if len(elided) == len(sort_keys):
        elided = {}
    out = [] if quiet else [
        "# To display the perf.data header info, please use "
        "--header/--header-only options.\n", "#\n"] + said + [
        "#\n", "# Total Lost Samples: %d\n" % lost, "#\n"]
    shown = [k for k in sort_keys if k not in elided]
    groups = groups or {}
    members_of = {m for _, members in groups.values() for m in members}
    attrs = list(attrs)
    names = {ea.index: getattr(ea, "name", "") for ea in attrs} if groups else {}
    for ea in attrs:
        if ea.index in members_of:
            continue        # (in its leader's table)
        hist = report.hists.get(ea.index)
        if hist is None:
            continue
        group = groups.get(ea.index)
        if group is None:
            out.extend(describe_hist(report, hist, show_nr_samples, quiet, percent_limit,
                                     shown, leader=ea.index in (leaders or ())))
            continue
        name, members = group
        title = ", ".join([ea.name] + [names.get(m, "") for m in members])
        if name is not None:            # (None: a forced leader's, without braces)
            title = "%s { %s }" % (name, title)
        out.extend(describe_hist(report, hist, show_nr_samples, quiet, percent_limit, shown,
                                 [report.hists.get(m) for m in members], title))
    if not quiet:
        out.append("#\n#\n")
    return "".join(out)


def describe_hist(report: Report, hist: EventHistogram, show_nr_samples: bool = False,
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
    group: list[EventHistogram | None] = [hist]
    group += members or []
    out = [] if quiet else _hist_head(hist, group, group_title, leader)
    children = report.children
    pairs = _paired_entries(report, group)
    entries = [e for e, _ in pairs]
    sort_keys = report.sort_keys if shown is None else shown    # the columns printed
    rows = _rows(report, pairs, group, sort_keys, show_nr_samples)
    heads = (["Children", "Self"] if children else ["Overhead"]) + \
        (["Samples"] if show_nr_samples else []) + [SORT_KEYS[k] for k in sort_keys]
    npct = (2 if children else 1) + (1 if show_nr_samples else 0)
    widths = _column_widths(heads, npct, len(group), sort_keys, rows, entries)
    if not quiet:
        out.append("# " + "  ".join(("%*s" if i < npct else "%-*s") % (widths[i], h)
                                    for i, h in enumerate(heads)) + "\n")
        out.append("# " + "  ".join("." * w for w in widths) + "\n")
        out.append("#\n")
    total = hist.total_period or 1
    for e, (pcts, cells) in zip(entries, rows):
        if percent_limit > 0 and 100.0 * (e.children if children else e.self_period) \
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


def _hist_head(hist: EventHistogram, group: list[EventHistogram | None],
               group_title: str | None, leader: bool) -> list[str]:
    """The lines above an event's (or a group's) table: its samples and
    event count."""
    if group_title is None:
        return ["# Samples: %s of event%s '%s'\n" % (convert_unit(hist.samples),
                                                    "s" if leader else "", hist.event.name),
                "# Event count (approx.): %d\n" % hist.total_period, "#\n"]
    return ["# Samples: %s of events '%s'\n" % (
                convert_unit(sum(h.samples for h in group if h is not None)), group_title),
            "# Event count (approx.): %d\n" % sum(h.total_period for h in group
                                                 if h is not None), "#\n"]


def _paired_entries(report: Report, group: list[EventHistogram | None]
                    ) -> list[tuple[Entry, list[Entry | None]]]:
    """The rows of a table in their order: each the leader's entry (an
    empty one where only a member has the key: hists__add_dummy_entry()),
    and it followed by the members' entries of its key (None for a member
    without it)."""
    children = report.children

    def shown_entry(e: Entry) -> bool:
        return bool(e.self_period or (children and e.children) or e.samples)
    hist = group[0]
    assert hist is not None
    by_key = {key: e for key, e in hist.entries.items() if shown_entry(e)}
    for member in group[1:]:
        for key, e in (member.entries.items() if member is not None else ()):
            if key not in by_key and shown_entry(e):
                by_key[key] = Entry(e.key, e.level, e.unresolved, e.thread, e.first)
    pairs: list[tuple[Entry, list[Entry | None]]] = []
    for key, e in by_key.items():
        mine: list[Entry | None] = [e]
        mine += [member.entries.get(key) if member is not None else None
                 for member in group[1:]]
        pairs.append((e, mine))

    def order(pair: tuple[Entry, list[Entry | None]]) -> tuple[Any, ...]:
        e, mine = pair
        if len(group) == 1:
            return row_order(report.sort_keys, children, e)
        keys = row_order(report.sort_keys, children, e)[-1]
        selfs = tuple(-(x.self_period if x is not None else 0) for x in mine)
        if children:
            # (__hpp__sort_acc(): the leader's children period only)
            return (-e.children,) + selfs + (keys,)
        return selfs + (keys,)
    pairs.sort(key=order)
    return pairs


def _rows(report: Report, pairs: list[tuple[Entry, list[Entry | None]]],
          group: list[EventHistogram | None], sort_keys: list[str], show_nr_samples: bool
          ) -> list[Row]:
    """Each row's percent cells (then its Samples cell) and sort key cells."""
    n = len(group)
    hist = group[0]
    assert hist is not None
    total = hist.total_period or 1
    totals = [h.total_period if h is not None else 0 for h in group]

    def pct_cell(values: list[int]) -> str:
        # perf's __hpp__fmt(): " %6.2f%%" per event of the group (0.00
        # for one without the entry or without samples), the first
        # space left to the column's padding
        if n == 1:
            return "%.2f%%" % (100.0 * values[0] / total)
        return "".join(" %6.2f%%" % (100.0 * v / t if t else 0.0)
                       for v, t in zip(values, totals))[1:]
    rows = []
    for e, mine in pairs:
        cells = [cell_text(k, v, e.level, e.thread) for k, v in zip(report.sort_keys, e.key)
                 if k in sort_keys]
        pcts = [pct_cell([x.self_period if x is not None else 0 for x in mine])]
        if report.children:
            pcts.insert(0, pct_cell([x.children if x is not None else 0 for x in mine]))
        if show_nr_samples:
            pcts.append("".join(" %11d" % (x.samples if x is not None else 0)
                                for x in mine)[1:] if n > 1 else "%d" % e.samples)
        rows.append((pcts, cells))
    return rows


def _column_widths(heads: list[str], npct: int, n: int, sort_keys: list[str], rows: list[Row],
                   entries: list[Entry]) -> list[int]:
    """The width of each column (npct percent columns first, then the sort
    keys'; n events in each percent column), as perf sizes them; the comm
    cells of `rows` are cut to theirs."""
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
    comm_len = max((len(thread_comm(e.thread)) for e in entries), default=0)
    for i, key in enumerate(keys):
        if key == "comm":
            widths[i] = max(widths[i], comm_len)
        elif key == "pid":
            widths[i] = max(widths[i], comm_len + 8)
        if key in ("comm", "pid"):
            for _, cells in rows:
                cells[i - npct] = cells[i - npct][:widths[i]]
    return widths
