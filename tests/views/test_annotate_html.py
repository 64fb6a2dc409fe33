"""`perfdata annotate --html`: the page's numbers are the annotation's
(each instruction's share as --json gives it, each source line's the sum of
its instructions'), and in headless Chromium (driven as for the flame
graph: test_views_flamegraph.chromium) its script runs, each function's
source and disassembly stand side by side, the hottest rows are the
reddest, and pointing at a source line marks its instructions."""
from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import SAMPLE_SYMBOL_ARGS, run_cli
from test_views_flamegraph import CHROMIUM, chromium

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
RECORDING = SAMPLES / "threads.fp.data"

pytest.importorskip("capstone")


class _Rows(HTMLParser):
    """The page's rows: per section (function), its source rows (line,
    share or None) and its instruction rows (address, share, line)."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict] = []
        self.column: str | None = None
        self.row: dict | None = None
        self.cells: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append({"name": a["data-name"], "source": [], "disasm": []})
        elif tag == "div" and a.get("class") in ("source", "disasm"):
            self.column = a["class"]
        elif tag == "tr" and self.column and a.get("class") != "file":
            self.row, self.cells = a, []
        elif tag == "td" and self.row is not None:
            self.cells.append("")

    def handle_data(self, data: str) -> None:
        if self.row is not None and self.cells:
            self.cells[-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self.row is not None:
            self.sections[-1][self.column].append((self.row, self.cells))
            self.row = None


def _page(tmp_path: Path) -> tuple[Path, str]:
    rc, out, err = run_cli(["annotate", str(RECORDING), "--html"] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    page = tmp_path / "annotate.html"
    page.write_text(out)
    return page, out


def test_page_numbers_are_the_annotations(tmp_path: Path) -> None:
    _, page = _page(tmp_path)
    rc, out, err = run_cli(["annotate", str(RECORDING), "--json"] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    want = json.loads(out)
    parser = _Rows()
    parser.feed(page)
    assert [s["name"] for s in parser.sections] == [a["function"] for a in want]
    assert len(want) >= 2
    for section, a in zip(parser.sections, want):
        got = [(int(row["data-addr"], 16), row.get("data-line"))
               for row, cells in section["disasm"]]
        assert got == [(i["address"], i["srcline"]) for i in a["instructions"]]
        # (--json's shares are rounded to 4 places, the page's to 2)
        assert all(abs(float(cells[0]) - i["percent"]) <= 0.0051
                   for (_, cells), i in zip(section["disasm"], a["instructions"]))
        lines: dict[str, float] = {}
        for i in a["instructions"]:
            if i["srcline"]:
                lines[i["srcline"]] = lines.get(i["srcline"], 0.0) + i["percent"]
        shown = {row["data-line"]: float(cells[0]) for row, cells in section["source"]
                 if "data-line" in row}
        assert shown.keys() == lines.keys()
        assert all(abs(shown[k] - v) < 0.006 for k, v in lines.items())
        # (the lines between them too, numbered, without a share)
        numbers = [int(cells[1]) for _, cells in section["source"]]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))


_CHECK = """<script>
(function () {
  function rgb(el) { return getComputedStyle(el).backgroundColor; }
  var out = {ready: document.body.dataset.ready || null, functions: []};
  var sections = document.querySelectorAll("section.function");
  for (var i = 0; i < sections.length; i++) {
    var s = sections[i];
    var src = s.querySelector("div.source"), dis = s.querySelector("div.disasm");
    var a = src.getBoundingClientRect(), b = dis.getBoundingClientRect();
    var rows = Array.prototype.slice.call(s.querySelectorAll("div.source tr[data-line]"));
    rows.sort(function (x, y) { return +y.cells[0].textContent - +x.cells[0].textContent; });
    var hot = rows[0], line = hot.dataset.line;
    var cold = s.querySelector("div.disasm tr:not([style])");
    hot.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
    var linked = Array.prototype.map.call(s.querySelectorAll("div.disasm tr.linked"),
                                          function (r) { return r.dataset.line; });
    hot.dispatchEvent(new MouseEvent("mouseout", {bubbles: true}));
    out.functions.push({
      source: [a.left, a.right, a.top, a.width], disasm: [b.left, b.right, b.top, b.width],
      hot: hot.cells[0].textContent, hotColor: rgb(hot),
      coldColor: cold ? rgb(cold) : null, line: line, linked: linked,
      withLine: s.querySelectorAll('div.disasm tr[data-line="' + CSS.escape(line) + '"]').length,
      after: s.querySelectorAll("tr.linked").length});
  }
  var pre = document.createElement("pre");
  pre.id = "result";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script></body>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")
def test_page_in_chromium(tmp_path: Path) -> None:
    page, text = _page(tmp_path)
    checked = tmp_path / "checked.html"
    checked.write_text(text.replace("</body>", _CHECK))
    res = chromium("--dump-dom", "--virtual-time-budget=2000", "--window-size=1400,900",
                   checked.as_uri(), want=lambda r: '<pre id="result">' in r.stdout)
    m = re.search(r'<pre id="result">(.*?)</pre>', res.stdout, re.S)
    assert m, res.stderr[-2000:]
    out = json.loads(html.unescape(m.group(1)))
    assert out["ready"] == "1"          # (the page's own script ran)
    assert len(out["functions"]) >= 2
    for f in out["functions"]:
        # side by side: the source on the left, the disassembly on the
        # right, at the same height, each of a fair width
        assert f["source"][1] <= f["disasm"][0] and abs(f["source"][2] - f["disasm"][2]) < 1
        assert f["source"][3] > 300 and f["disasm"][3] > 300
        # the hottest line red, a row without samples not
        r, g, b = (int(v) for v in re.findall(r"\d+", f["hotColor"])[:3])
        assert float(f["hot"]) > 20 and r > g + 60 and r > b + 60, f
        assert f["coldColor"] in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)"), f
        # pointing at it marks its instructions, and only those
        assert f["linked"] and set(f["linked"]) == {f["line"]}
        assert len(f["linked"]) == f["withLine"] and f["after"] == 0
