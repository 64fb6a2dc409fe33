"""`perfdata annotate --html`: a page of the annotated functions, each with
its source and its disassembly side by side, hot lines highlighted.

Per function, the source column holds the lines of its source files from
the first to the last line its instructions come from (the text where the
file is readable here, else the line numbers alone), each with the share
of the function's samples its instructions have (perf annotate's -l sums
them the same way); the disassembly column holds every instruction with
its share.  A row's background is as red as its share is high (the
function's hottest row the reddest); a row past perf's -l threshold
(PRINT_LINE_MIN) is marked hot.  Pointing at a source line marks its
instructions, pointing at an instruction marks its line.  The page is
self-contained (no request leaves it) and sets data-ready on its body
once its script ran.
"""
from __future__ import annotations

import html
import linecache
import os
from typing import TYPE_CHECKING

from .annotate import PRINT_LINE_MIN

if TYPE_CHECKING:
    from .annotate import Annotation

_STYLE = """
body { font: 13px/1.35 monospace; margin: 12px; color: #222; background: #fff; }
h1 { font-size: 16px; }
h2 { font-size: 14px; margin: 18px 0 6px; }
.pair { display: flex; gap: 12px; align-items: flex-start; }
.pair > div { flex: 1 1 50%; overflow-x: auto; border: 1px solid #ccc; }
table { border-collapse: collapse; width: 100%; }
td { padding: 0 6px; white-space: pre; vertical-align: top; }
td.pct { text-align: right; width: 4.5em; }
td.num { text-align: right; color: #777; width: 4em; }
tr.hot td.pct { font-weight: bold; }
tr.linked { outline: 2px solid #06c; outline-offset: -2px; }
.file { background: #eee; color: #555; }
.problem { color: #a00; }
"""

_SCRIPT = """
(function () {
  function mark(line, on) {
    var rows = document.querySelectorAll('tr[data-line="' + CSS.escape(line) + '"]');
    for (var i = 0; i < rows.length; i++) rows[i].classList.toggle("linked", on);
  }
  var rows = document.querySelectorAll("tr[data-line]");
  for (var i = 0; i < rows.length; i++) {
    rows[i].addEventListener("mouseover", function (e) { mark(this.dataset.line, true); });
    rows[i].addEventListener("mouseout", function (e) { mark(this.dataset.line, false); });
  }
  document.body.dataset.ready = "1";
})();
"""


def render_html(annotations: list[Annotation], title: str) -> str:
    """The page of the annotations (hottest first, as the text's)."""
    out = ['<!DOCTYPE html>\n<html><head><meta charset="utf-8">\n<title>%s</title>\n'
           '<style>%s</style></head>\n<body>\n<h1>%s</h1>\n'
           % (html.escape(title), _STYLE, html.escape(title))]
    for k, a in enumerate(annotations):
        out.append(_function(a, k))
    out.append("<script>%s</script>\n</body></html>\n" % _SCRIPT)
    return "".join(out)


def line_shares(a: Annotation) -> dict[str, float]:
    """{'path:line': the share of its instructions} of a function, every
    line an instruction comes from."""
    shares: dict[str, float] = {}
    for ins in a.instructions:
        if ins.srcline:
            shares[ins.srcline] = shares.get(ins.srcline, 0.0) + ins.percent
    return shares


def _function(a: Annotation, k: int) -> str:
    fs = a.function
    head = "%s (%s) %s: %d samples, percent: %s" % (
        fs.name, os.path.basename(fs.dso), fs.event, fs.total_hits,
        a.percent_type.replace("-", " "))
    out = ['<section class="function" id="f%d" data-name="%s" data-start="%x">\n<h2>%s</h2>\n'
           % (k, html.escape(fs.name, quote=True), fs.start, html.escape(head))]
    if a.problem is not None:
        out.append('<p class="problem">no instructions: %s</p>\n' % html.escape(a.problem))
    shares = line_shares(a)
    top = max([ins.percent for ins in a.instructions] + list(shares.values()) + [0.0])
    out.append('<div class="pair">\n<div class="source"><table>\n')
    out.extend(_source_rows(shares, top))
    out.append('</table></div>\n<div class="disasm"><table>\n')
    for ins in a.instructions:
        out.append('<tr%s data-addr="%x"%s><td class="pct">%.2f</td><td>%x:</td><td>%s</td>'
                   '</tr>\n' % (_row_style(ins.percent, top), ins.address,
                                _line_attr(ins.srcline), ins.percent, ins.address,
                                html.escape(ins.text)))
    out.append("</table></div>\n</div>\n</section>\n")
    return "".join(out)


def _source_rows(shares: dict[str, float], top: float) -> list[str]:
    """The rows of the source column: per file, its lines from the first
    to the last an instruction comes from."""
    by_file: dict[str, list[int]] = {}
    for srcline in shares:
        path, _, line = srcline.rpartition(":")
        if line.isdigit() and int(line) > 0:
            by_file.setdefault(path, []).append(int(line))
    out = []
    for path in sorted(by_file, key=lambda p: -sum(v for s, v in shares.items()
                                                    if s.rpartition(":")[0] == p)):
        lines = by_file[path]
        out.append('<tr class="file"><td colspan="3">%s</td></tr>\n' % html.escape(path))
        for n in range(min(lines), max(lines) + 1):
            srcline = "%s:%d" % (path, n)
            share = shares.get(srcline)
            text = linecache.getline(path, n).rstrip("\n")
            out.append('<tr%s%s><td class="pct">%s</td><td class="num">%d</td><td>%s</td></tr>\n'
                       % (_row_style(share or 0.0, top),
                          _line_attr(srcline) if share is not None else "",
                          "%.2f" % share if share is not None else "", n, html.escape(text)))
    return out


def _line_attr(srcline: str | None) -> str:
    return ' data-line="%s"' % html.escape(srcline, quote=True) if srcline else ""


def _row_style(share: float, top: float) -> str:
    """A row's class and background: red as deep as its share of the
    function's hottest row's."""
    if share <= 0.0 or top <= 0.0:
        return ""
    alpha = 0.08 + 0.62 * min(share / top, 1.0)
    hot = ' class="hot"' if share > PRINT_LINE_MIN else ""
    return '%s style="background: rgba(230, 40, 30, %.3f)"' % (hot, alpha)
