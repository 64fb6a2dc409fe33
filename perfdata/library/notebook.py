"""What a notebook shows of a profile (IPython's `_repr_html_`): its flame
graph, inline, over the first rows of its report; a report table alone as
an HTML table with the columns of `perfdata report`.

The flame graph is the SVG `perfdata flamegraph` writes, drawn from the top
so that its first screen holds the root and the hot paths where no script
runs (a notebook that is not trusted drops them).
"""
from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .profile import Profile
    from .tables import ReportRow, ReportTable

# Rows of the report a profile shows under its flame graph.
SHOWN_ROWS = 20
_HEADS = {"comm": "Command", "pid": "Pid", "dso": "Shared Object", "sym": "Symbol",
          "cpu": "CPU"}


def _cell(row: ReportRow, key: str) -> str:
    if key == "comm":
        return row.command or ""
    if key == "pid":
        return "%d" % row.pid if row.pid is not None else ""
    if key == "dso":
        return row.shared_object or ""
    if key == "cpu":
        return "%d" % row.cpu if row.cpu is not None else ""
    return "[%s] %s" % (row.level, row.symbol or "")


def report_html(table: ReportTable, limit: int | None = None) -> str:
    """The table as HTML: the percent columns, then the sort keys'."""
    children = any(r.children is not None for r in table.rows)
    heads = (["Children", "Self"] if children else ["Overhead"]) + \
        [_HEADS.get(k, k) for k in table.sort_keys]
    out = ["<table>",
           "<caption>Samples: %d of event '%s', event count %d</caption>"
           % (table.samples, escape(table.event), table.event_count),
           "<thead><tr>%s</tr></thead><tbody>" % "".join("<th>%s</th>" % escape(h)
                                                         for h in heads)]
    rows = table.rows if limit is None else table.rows[:limit]
    for row in rows:
        pcts = ([row.children or 0.0] if children else []) + [row.overhead]
        cells = ["<td style=\"text-align:right\">%.2f%%</td>" % p for p in pcts]
        cells += ["<td style=\"text-align:left\">%s</td>" % escape(_cell(row, k))
                  for k in table.sort_keys]
        out.append("<tr>%s</tr>" % "".join(cells))
    out.append("</tbody></table>")
    if limit is not None and len(table.rows) > limit:
        out.append("<p>%d of %d rows</p>" % (limit, len(table.rows)))
    return "\n".join(out)


def profile_html(profile: Profile) -> str:
    """The profile's flame graph over its report's first rows."""
    graph = profile.flamegraph()
    table = profile.report()
    return "<div>%s\n%s</div>" % (graph.svg(), report_html(table, SHOWN_ROWS))
