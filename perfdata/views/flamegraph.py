"""`perfdata flamegraph FILE -o out.svg`: an interactive SVG flame graph.

In the spirit of Brendan Gregg's flamegraph.pl, written from scratch: one
self-contained SVG (no external script, font or stylesheet) whose embedded
script gives
* hover: the frame's full name, its samples (or period) and share, at the
  bottom and as a tooltip;
* click: zoom, the clicked frame then spans the full width, its callers stay
  full width below it, its callees scale with it, the rest is hidden;
* search (button, or Ctrl-F): a regular expression, matches in magenta and
  the share they cover; "Reset Zoom" and "Reset Search";
* `--reverse`: an icicle graph (roots on top);
* `--colors kind` (default): user code warm (red to yellow), kernel blue, JIT green,
  inlined frames aqua, unknown frames grey; `--colors dso`: one hue per
  shared object (unknown grey);
* `--weight samples|period`, `--width`, `--title`.

The stacks are the folded stacks of `perfdata collapse` (same names, the
comm as root frame), merged by name at each level, siblings in name order.
"""
from __future__ import annotations

import re
import sys
import zlib
from typing import TYPE_CHECKING, Any, TextIO

from .collapse import CollapseOptions, EventFilter, frame_names, root_name, sample_weight
from .errors import CommandError
from .options import SampleRun, add_input_argument, add_symbolize_options
from .sharded import add_jobs_argument

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Sequence

    from ..format.container import PerfFile
    from ..frames import StackFrame
    from ..symbolized import SampleSymbolizer, SymbolizedSample

    # A stack's path from its outermost frame: (name, kind, dso) each.
    Path = list[tuple[str, str, str]]
    Rgb = tuple[int, ...]

FRAME_HEIGHT = 16
FONT_SIZE = 12
FONT_WIDTH = 0.59
XPAD = 10
MIN_WIDTH_PX = 0.1
_JIT_DSO = re.compile(r"(/tmp/perf-\d+\.map|^//anon|^\[anon|^/memfd:|^\[jit|(?:^|/)jit-\d+\.dump\Z)")

KIND_COLORS = {
    "kernel": ((70, 120, 200), (130, 175, 235)),  # blue
    "jit": ((50, 170, 50), (120, 220, 120)),      # green
    "inlined": ((60, 180, 190), (120, 220, 230)),  # aqua
    "unknown": ((160, 160, 160), (195, 195, 195)),  # grey
    "user": ((205, 50, 20), (255, 200, 55)),      # red to yellow ("hot")
    "root": ((170, 170, 210), (190, 190, 230)),   # all, comm: lilac
}


class Node:
    __slots__ = ("name", "value", "self_value", "children", "kind", "dso", "first")

    def __init__(self, name: str, kind: str = "user", dso: str | None = None,
                 first: int = 0) -> None:
        self.name = name
        self.value = 0
        self.self_value = 0
        self.children: dict[str, Node] = {}
        self.kind = kind
        self.dso = dso
        # the sample that made it (its kind and dso are that sample's frame's,
        # as when one process adds every sample in order)
        self.first = first

    def merge(self, other: Node) -> None:
        """Add another tree of the same root (a worker's share of the samples)."""
        self.value += other.value
        self.self_value += other.self_value
        if other.first < self.first:
            self.kind, self.dso, self.first = other.kind, other.dso, other.first
        for name, theirs in other.children.items():
            mine = self.children.get(name)
            if mine is None:
                self.children[name] = theirs
            else:
                mine.merge(theirs)


def frame_kind(frame: StackFrame) -> str:
    if frame.kernel:
        return "kernel"
    dso = frame.dso or ""
    if _JIT_DSO.search(dso):
        return "jit"
    if frame.symbol is None:
        return "unknown"
    if frame.inlined:
        return "inlined"
    return "user"


class FlameGraphBuilder:
    """Merges symbolized samples into a tree of frames."""

    def __init__(self, weight: str = "samples", collapse_options: CollapseOptions | None = None,
                 note_stream: TextIO | None = None) -> None:
        self.weight = weight
        self.opts = collapse_options or CollapseOptions()
        self.root = Node("all", "root")
        self.events = EventFilter(self.opts.event_filter, note_stream)
        self.samples = 0
        self._cache: dict[int, tuple[Sequence[StackFrame], Path]] = {}
        self.event_name: str | None = None

    def _path(self, frames: Sequence[StackFrame], java: bool) -> Path:
        hit = self._cache.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        path = []
        for fr in reversed(frames):
            kind = frame_kind(fr)
            dso = fr.dso or "[unknown]"
            for name in frame_names(fr, self.opts, java):
                path.append((name, kind, dso))
        if len(self._cache) > 100000:
            self._cache.clear()
        self._cache[id(frames)] = (frames, path)
        return path

    def add(self, sample: SymbolizedSample, order: int = 0) -> None:
        """One sample; `order`: its place in the file's samples, where workers
        each add a share of them (see merge)."""
        if not self.events.keep(sample.event):
            return
        if self.event_name is None:
            self.event_name = sample.event.name
        w = 1 if self.weight == "samples" else sample_weight(sample, "period")
        self.samples += 1
        root = root_name(sample, self.opts)
        node = self.root.children.get(root)
        if node is None:
            node = self.root.children[root] = Node(root, "root", first=order)
        self.root.value += w
        node.value += w
        self.add_path(self._path(sample.frames, root.startswith("java")), w, node, order)

    def add_path(self, path: Iterable[tuple[str, str, str | None]], weight: int,
                 node: Node | None = None, order: int = 0) -> None:
        """weight for one stack, path (name, kind, dso) from the outermost
        frame, below node (by default the graph's root, which counts it too)."""
        if node is None:
            node = self.root
            node.value += weight
        for name, kind, dso in path:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = Node(name, kind, dso, order)
            node = child
            node.value += weight
        node.self_value += weight

    def merge(self, other: FlameGraphBuilder) -> None:
        """Add the samples another builder of the same options added (a
        worker's share, each added with its order in the file)."""
        self.root.merge(other.root)
        self.samples += other.samples
        if self.event_name is None:
            self.event_name = other.event_name

    def __getstate__(self) -> dict[str, Any]:  # what crosses from a worker: no caches
        return {"weight": self.weight, "opts": self.opts, "root": self.root,
                "samples": self.samples, "event_name": self.event_name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._cache = {}
        self.events = EventFilter(self.opts.event_filter)


def _hash_name(name: str) -> tuple[float, float]:
    """Two stable numbers in [0, 1) from a name (flamegraph.pl hashes the
    name too, so one function keeps its colour across graphs)."""
    h = zlib.crc32(name.encode("utf-8", "replace"))
    return (h & 0xffff) / 65536.0, ((h >> 16) & 0xffff) / 65536.0


def _mix(lo: Rgb, hi: Rgb, t: float) -> Rgb:
    return tuple(int(a + (b - a) * t) for a, b in zip(lo, hi))


def _dso_color(dso: str | None) -> Rgb:
    if dso in ("[unknown]", None):
        return KIND_COLORS["unknown"][0]
    import colorsys
    a, b = _hash_name(dso)
    r, g, bl = colorsys.hls_to_rgb(a, 0.55 + 0.15 * b, 0.65)
    return int(r * 255), int(g * 255), int(bl * 255)


def node_color(node: Node, scheme: str) -> Rgb:
    if node.kind == "root":
        lo, hi = KIND_COLORS["root"]
        return _mix(lo, hi, _hash_name(node.name)[0])
    if node.kind == "unknown":
        lo, hi = KIND_COLORS["unknown"]
        return _mix(lo, hi, _hash_name(node.name)[0])
    if scheme == "dso":
        return _dso_color(node.dso)
    lo, hi = KIND_COLORS.get(node.kind, KIND_COLORS["user"])
    return _mix(lo, hi, _hash_name(node.name)[0])


def fit_label(name: str, width_px: float) -> str:
    chars = int((width_px - 6) / (FONT_SIZE * FONT_WIDTH))
    if chars < 3:
        return ""
    if len(name) <= chars:
        return name
    return name[:chars - 2] + ".."


def escape(text: str) -> str:
    """XML character data: what xml.sax.saxutils.escape does, without its
    import of urllib.request (15 ms, every command's start-up: the help
    lists this command)."""
    return text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")


def _attr(text: str) -> str:
    return escape(text).replace('"', "&quot;").replace("\n", "&#10;")


def render_svg(builder: FlameGraphBuilder, title: str | None = None,
               subtitle: str | None = None, width: int = 1200, reverse: bool = False,
               colors: str = "kind", min_width: float = MIN_WIDTH_PX) -> str:
    """The SVG text of a FlameGraphBuilder's tree."""
    title = title if title is not None else ("Icicle Graph" if reverse else "Flame Graph")
    unit = "samples" if builder.weight == "samples" else "period"
    root = builder.root
    total = root.value
    plot_w = max(width - 2 * XPAD, 10)
    scale = plot_w / total if total else 0.0
    # Lay out: (node, depth, x units), iteratively (stacks may be deep).
    placed = []
    max_depth = 0
    stack = [(root, 0, 0)]
    while stack:
        node, depth, x = stack.pop()
        if node.value * scale < min_width:
            continue
        placed.append((node, depth, x))
        if depth > max_depth:
            max_depth = depth
        cx = x
        kids = [node.children[k] for k in sorted(node.children)]
        for child in kids:
            stack.append((child, depth + 1, cx))
            cx += child.value
    ypad1 = FONT_SIZE * 3 + (FONT_SIZE + 4 if subtitle else 0)
    ypad2 = FONT_SIZE * 2 + 10
    levels = max_depth + 1 if total else 0
    height = ypad1 + ypad2 + levels * FRAME_HEIGHT + (0 if total else 3 * FRAME_HEIGHT)
    out: list[str] = []
    w = out.append
    w('<?xml version="1.0" standalone="no"?>\n')
    w('<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" '
      'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
      'data-total="%d" data-unit="%s" data-plotw="%.2f" data-xpad="%d" data-fontsize="%d" '
      'data-fontwidth="%.2f">\n'
      % (width, height, width, height, total, unit, plot_w, XPAD, FONT_SIZE, FONT_WIDTH))
    w('<style type="text/css">\n'
      'text { font-family: Verdana, "DejaVu Sans", Arial, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n'
      '#title { text-anchor: middle; font-size: %dpx; }\n'
      '#subtitle { text-anchor: middle; fill: rgb(100,100,100); }\n'
      '.button { cursor: pointer; fill: rgb(40,40,160); }\n'
      '.button:hover { text-decoration: underline; }\n'
      '.hide { display: none; }\n'
      '#frames > g { cursor: pointer; }\n'
      '#frames > g:hover > rect { stroke: black; stroke-width: 0.5; }\n'
      '#frames text { pointer-events: none; }\n'
      '</style>\n' % (FONT_SIZE, FONT_SIZE + 5))
    w('<rect x="0" y="0" width="%d" height="%d" fill="rgb(245,245,238)"/>\n' % (width, height))
    w('<text id="title" x="%.1f" y="%d">%s</text>\n' % (width / 2, FONT_SIZE * 2, escape(title)))
    if subtitle:
        w('<text id="subtitle" x="%.1f" y="%d">%s</text>\n'
          % (width / 2, FONT_SIZE * 3 + 2, escape(subtitle)))
    w('<text id="details" x="%d" y="%d"> </text>\n' % (XPAD, height - ypad2 / 2 + 4))
    w('<text id="unzoom" class="button hide" x="%d" y="%d">Reset Zoom</text>\n'
      % (XPAD, FONT_SIZE * 2))
    w('<text id="search" class="button" x="%d" y="%d" text-anchor="end">Search</text>\n'
      % (width - XPAD, FONT_SIZE * 2))
    w('<text id="resetsearch" class="button hide" x="%d" y="%d" text-anchor="end">'
      'Reset Search</text>\n' % (width - XPAD - 60, FONT_SIZE * 2))
    w('<text id="matched" x="%d" y="%d" text-anchor="end"> </text>\n'
      % (width - XPAD, height - ypad2 / 2 + 4))
    if not total:
        w('<text id="empty" x="%.1f" y="%d" text-anchor="middle">No samples</text>\n'
          % (width / 2, ypad1 + FRAME_HEIGHT * 2))
    w('<g id="frames">\n')
    for node, depth, x in sorted(placed, key=lambda p: (p[1], p[2])):
        px = XPAD + x * scale
        pw = node.value * scale
        if reverse:
            y = ypad1 + depth * FRAME_HEIGHT
        else:
            y = height - ypad2 - (depth + 1) * FRAME_HEIGHT
        share = 100.0 * node.value / total
        info = "%s (%s %s, %.2f%%)" % (node.name, format(node.value, ","), unit, share)
        tip = info
        if node.dso and node.kind not in ("root",):
            tip += "\n" + node.dso
        r, g, b = node_color(node, colors)
        w('<g data-d="%d" data-kind="%s" data-name="%s" data-info="%s">'
          '<title>%s</title>'
          '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="rgb(%d,%d,%d)" rx="2" ry="2" '
          'data-ox="%.4f" data-ow="%.4f"/>'
          '<text x="%.2f" y="%.1f">%s</text></g>\n'
          % (depth, node.kind, _attr(node.name), _attr(info), escape(tip),
             px, y, pw, FRAME_HEIGHT - 1, r, g, b, px, pw,
             px + 3, y + FRAME_HEIGHT - 4.5, escape(fit_label(node.name, pw))))
    w('</g>\n')
    w('<script type="text/ecmascript"><![CDATA[\n%s\n]]></script>\n' % _SCRIPT)
    w('</svg>\n')
    return "".join(out)


# The embedded script.  Plain ES5, no dependency; works when the SVG is
# opened on its own and when it is inlined in an HTML page.
_SCRIPT = r"""
(function () {
  "use strict";
  var svg = document.currentScript ? document.currentScript.ownerSVGElement ||
      document.currentScript.closest("svg") : null;
  if (!svg) { var all = document.getElementsByTagName("svg"); svg = all[all.length - 1]; }
  var NS = "http://www.w3.org/2000/svg";
  var plotw = parseFloat(svg.getAttribute("data-plotw"));
  var xpad = parseFloat(svg.getAttribute("data-xpad"));
  var fontsize = parseFloat(svg.getAttribute("data-fontsize"));
  var fontwidth = parseFloat(svg.getAttribute("data-fontwidth"));
  var total = parseFloat(svg.getAttribute("data-total"));
  var frames = svg.querySelector("#frames");
  var details = svg.querySelector("#details");
  var unzoomBtn = svg.querySelector("#unzoom");
  var searchBtn = svg.querySelector("#search");
  var resetSearchBtn = svg.querySelector("#resetsearch");
  var matchedText = svg.querySelector("#matched");
  var nodes = frames ? Array.prototype.slice.call(frames.children) : [];
  var currentSearch = null;

  function rectOf(g) { return g.querySelector("rect"); }
  function textOf(g) { return g.querySelector("text"); }
  function label(name, w) {
    var chars = Math.floor((w - 6) / (fontsize * fontwidth));
    if (chars < 3) return "";
    if (name.length <= chars) return name;
    return name.substring(0, chars - 2) + "..";
  }
  function place(g, x, w) {
    var r = rectOf(g), t = textOf(g);
    r.setAttribute("x", x.toFixed(2));
    r.setAttribute("width", w.toFixed(2));
    t.setAttribute("x", (x + 3).toFixed(2));
    t.textContent = label(g.getAttribute("data-name"), w);
  }
  function show(g, on) {
    if (on) g.classList.remove("hide"); else g.classList.add("hide");
  }
  function zoom(g) {
    var zr = rectOf(g);
    var zx = parseFloat(zr.getAttribute("data-ox"));
    var zw = parseFloat(zr.getAttribute("data-ow"));
    var zd = parseInt(g.getAttribute("data-d"), 10);
    var ratio = plotw / zw;
    var eps = 0.0001;
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], r = rectOf(n);
      var x = parseFloat(r.getAttribute("data-ox"));
      var w = parseFloat(r.getAttribute("data-ow"));
      var d = parseInt(n.getAttribute("data-d"), 10);
      if (d <= zd) {
        var holds = x <= zx + eps && x + w >= zx + zw - eps;
        show(n, holds);
        if (holds) place(n, xpad, plotw);
      } else {
        var inside = x >= zx - eps && x + w <= zx + zw + eps;
        show(n, inside);
        if (inside) place(n, xpad + (x - zx) * ratio, w * ratio);
      }
    }
    unzoomBtn.classList.remove("hide");
    svg.setAttribute("data-zoomed", g.getAttribute("data-name"));
    if (currentSearch !== null) search(currentSearch);
  }
  function unzoom() {
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], r = rectOf(n);
      show(n, true);
      place(n, parseFloat(r.getAttribute("data-ox")), parseFloat(r.getAttribute("data-ow")));
    }
    unzoomBtn.classList.add("hide");
    svg.removeAttribute("data-zoomed");
    if (currentSearch !== null) search(currentSearch);
  }
  function search(term) {
    var re;
    try { re = new RegExp(term); } catch (e) { matchedText.textContent = "bad regex"; return 0; }
    currentSearch = term;
    var spans = [];
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], r = rectOf(n);
      if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
      var hit = re.test(n.getAttribute("data-name"));
      r.setAttribute("fill", hit ? "rgb(230,0,230)" : r.getAttribute("data-fill"));
      if (hit) n.setAttribute("data-match", "1"); else n.removeAttribute("data-match");
      if (hit && !n.classList.contains("hide"))
        spans.push([parseFloat(r.getAttribute("data-ox")), parseFloat(r.getAttribute("data-ow"))]);
    }
    // Share covered by matches, nested matches counted once.
    spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var covered = 0, end = -1;
    for (var j = 0; j < spans.length; j++) {
      var s = spans[j][0], e = s + spans[j][1];
      if (s >= end) { covered += e - s; end = e; }
      else if (e > end) { covered += e - end; end = e; }
    }
    var base = plotw;
    var zoomed = svg.getAttribute("data-zoomed");
    if (zoomed !== null) {
      for (var k = 0; k < nodes.length; k++) {
        if (nodes[k].getAttribute("data-name") === zoomed && !nodes[k].classList.contains("hide")) {
          base = Math.min(base, parseFloat(rectOf(nodes[k]).getAttribute("data-ow")));
        }
      }
    }
    var pct = spans.length ? 100 * Math.min(covered, base) / base : 0;
    matchedText.textContent = "Matched: " + pct.toFixed(1) + "%";
    svg.setAttribute("data-matched", pct.toFixed(2));
    resetSearchBtn.classList.remove("hide");
    return pct;
  }
  function resetSearch() {
    for (var i = 0; i < nodes.length; i++) {
      var r = rectOf(nodes[i]);
      if (r.hasAttribute("data-fill")) r.setAttribute("fill", r.getAttribute("data-fill"));
      nodes[i].removeAttribute("data-match");
    }
    currentSearch = null;
    matchedText.textContent = " ";
    svg.removeAttribute("data-matched");
    resetSearchBtn.classList.add("hide");
  }
  function searchPrompt() {
    var term = window.prompt("Search for (regular expression):", currentSearch || "");
    if (term === null) return;
    if (term === "") resetSearch(); else search(term);
  }
  function frameOf(el) {
    while (el && el !== svg) {
      if (el.parentNode === frames) return el;
      el = el.parentNode;
    }
    return null;
  }
  if (frames) {
    frames.addEventListener("click", function (ev) {
      var g = frameOf(ev.target);
      if (g) zoom(g);
    });
    frames.addEventListener("mouseover", function (ev) {
      var g = frameOf(ev.target);
      if (g) details.textContent = g.getAttribute("data-info");
    });
    frames.addEventListener("mouseout", function (ev) {
      if (frameOf(ev.target)) details.textContent = " ";
    });
  }
  unzoomBtn.addEventListener("click", unzoom);
  searchBtn.addEventListener("click", searchPrompt);
  resetSearchBtn.addEventListener("click", resetSearch);
  window.addEventListener("keydown", function (ev) {
    if ((ev.ctrlKey || ev.metaKey) && (ev.key === "f" || ev.key === "F")) {
      ev.preventDefault();
      searchPrompt();
    } else if (ev.key === "Escape") {
      unzoom(); resetSearch();
    }
  });
  // For scripted use (and tests): flamegraph.zoom(g), .unzoom(), .search(re).
  svg.flamegraph = { zoom: zoom, unzoom: unzoom, search: search, resetSearch: resetSearch };
  svg.setAttribute("data-ready", "1");
})();
"""


def check_width(args: argparse.Namespace) -> None:
    if args.width < 100 or args.width > 100000:
        raise CommandError("--width must be between 100 and 100000")


def run(args: argparse.Namespace, out: TextIO) -> None:
    import os
    check_width(args)
    from .collapse import open_output
    stream, close = open_output(args.output, out)
    opts = CollapseOptions(pid=args.pid_root, tid=args.tid_root, kernel=False,
                           event_filter=args.event_filter)
    builder = FlameGraphBuilder(args.weight, opts, note_stream=sys.stderr)
    run_ = SampleRun(args, "flamegraph")
    jobs = flamegraph_jobs(args, run_.pf)
    if jobs > 1:
        _build_sharded(args, opts, jobs, run_.pf, builder)
    else:
        for sample in run_:
            builder.add(sample)
    if builder.root.value == 0:
        sys.stderr.write("perfdata: note: no samples; writing an empty flame graph\n")
    subtitle = "%s%s" % (os.path.basename(str(args.file)),
                         " - %s" % builder.event_name if builder.event_name else "")
    svg = render_svg(builder, title=args.title, subtitle=subtitle, width=args.width,
                     reverse=args.reverse, colors=args.colors, min_width=args.minwidth)
    try:
        stream.write(svg)
    finally:
        if close:
            stream.close()



# Samples per block of a sharded run (-j).
SHARD_BLOCK = 512


def flamegraph_jobs(args: argparse.Namespace, pf: PerfFile) -> int:
    """Worker processes for a flame graph: -j, but one for a file of several
    events (the graph is of the first one seen: only the whole file's order
    says which)."""
    from .sharded import default_jobs, event_names
    if getattr(args, "stitch", False) or len(event_names(pf)) > 1:
        return 1
    return default_jobs(args.jobs, pf)


def _build_sharded(args: argparse.Namespace, opts: CollapseOptions, jobs: int, pf: PerfFile,
                   builder: FlameGraphBuilder) -> None:
    """The builder's tree from `jobs` workers' shares of the samples, each
    node keeping the kind and dso of the first sample that made it."""
    from functools import partial

    from .sharded import add_up_parts, compute_part

    def fill(wpf: PerfFile, samples: SampleSymbolizer, mine: FlameGraphBuilder) -> None:
        for sample in samples:
            # (made without side events: its items are samples)
            mine.add(sample, samples.ordinal)  # type: ignore[arg-type]

    add_up_parts(pf, jobs, SHARD_BLOCK,
                 partial(compute_part, args, make=lambda _: FlameGraphBuilder(args.weight, opts),
                         fill=fill),
                 builder.merge)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("flamegraph", help="an interactive SVG flame graph")
    add_input_argument(p)
    p.add_argument("-o", "--output", help="write the SVG here (default: standard output)")
    add_flamegraph_options(p)
    add_jobs_argument(p)
    add_symbolize_options(p)
    p.set_defaults(func=run)


def add_flamegraph_options(p: argparse.ArgumentParser) -> None:
    """The drawing options (also those of `perfdata fleet flamegraph`)."""
    p.add_argument("--title", help="title (default: Flame Graph, or Icicle Graph)")
    p.add_argument("--colors", choices=("kind", "dso"), default="kind",
                   help="colour by kind (user, kernel, jit, inlined, unknown) or by dso")
    p.add_argument("--reverse", action="store_true", help="icicle graph: roots on top")
    p.add_argument("--width", type=int, default=1200, help="image width in pixels")
    p.add_argument("--minwidth", type=float, default=MIN_WIDTH_PX, metavar="PX",
                   help="leave out frames narrower than this (default %(default)s px)")
    p.add_argument("--weight", choices=("samples", "period"), default="samples",
                   help="frame width by sample count (default) or by period")
    p.add_argument("--pid-root", "--with-pid", dest="pid_root", action="store_true",
                   help="root stacks at comm-pid")
    p.add_argument("--tid-root", "--with-tid", dest="tid_root", action="store_true",
                   help="root stacks at comm-pid/tid")
    p.add_argument("--event-filter", metavar="EVENT",
                   help="draw this event (default: the first one seen)")
