"""`perfdata flamegraph FILE -o out.svg`: an interactive SVG flame graph.

In the spirit of Brendan Gregg's flamegraph.pl, written from scratch: one
self-contained SVG (no external script, font or stylesheet) whose embedded
script gives
* hover: the frame's full name, its samples (or period) and share, in the
  details line and as a tooltip;
* click: zoom, the clicked frame then spans the full width, its callers stay
  full width, its callees scale with it, the rest is hidden;
* search (button, or Ctrl-F): a regular expression, matches in magenta and
  the share they cover; "Reset Zoom" and "Reset Search";
* drawn from the top by default (an icicle graph: the root on top, callees
  below their callers); `--flame` draws roots at the bottom as flamegraph.pl
  does (`--inverted`, and the older `--reverse`, name the default);
* `--colors kind` (default): user code warm (red to yellow), kernel blue, JIT
  green, inlined frames aqua, frames known only from other samples' stacks
  (--stitch: no sample saw that frame there itself) tan, unknown frames grey,
  the process roots lilac, cut stacks dark grey; `--colors dso`: one hue
  per shared object (unknown grey); a legend under the title names the
  families the graph holds;
* `--max-depth N`: at most N frames of a stack below its process frame, the
  rest of each cut stack drawn as one frame `[+K frames]` (K, or its range
  `[+k..K frames]`, the frames cut; its tooltip names the cut stacks' leaves);
* `--min-width W` (`--minwidth`): frames narrower than W pixels (or W% of the
  graph: `0.5%`) are not drawn, nor their callees (flamegraph.pl's --minwidth,
  default 0.1 px); their callers keep their width, the totals are the same;
* `--weight samples|period`, `--width`, `--title`.

The stacks are the folded stacks of `perfdata collapse` (same names, the
comm as root frame), merged by name at each level, siblings in name order.
"""
from __future__ import annotations

import re
import sys
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from .collapse import CollapseOptions, EventFilter, frame_names, root_name, sample_weight
from .errors import CommandError
from .options import SampleRun, add_input_argument, add_symbolize_options
from ..run.sharded import add_jobs_argument

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Sequence

    from ..format import PerfFile
    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample

    # A stack's path from its outermost frame: (name, kind, dso) each.
    Path = list[tuple[str, str, str]]
    Rgb = tuple[int, ...]

FRAME_HEIGHT = 16
FONT_SIZE = 12
FONT_WIDTH = 0.59
XPAD = 10
MIN_WIDTH_PX = 0.1
# --max-depth by default: no limit.  Measured (perf record -g / --call-graph
# dwarf of g++ -O2 -c on a file of <map>, <regex>, ...): the DWARF stacks of
# cc1plus, all real, reach 73 frames (a 1,302 px page); the -g walks of the
# same build, through code without frame pointers, end in garbage at the
# kernel's 127 (2,166 px).  A default low enough to shorten the garbage
# page (64: 1,174 px) would cut the compiler's real stacks in 11 places;
# one that keeps real stacks whole (128 and up) does not shorten it.  So
# every stack is drawn unless asked, and the first screen is right whatever
# the height (drawn from the top); --max-depth and --min-width bound it.
MAX_DEPTH = 0
_JIT_DSO = re.compile(r"(/tmp/perf-\d+\.map|^//anon|^\[anon|^/memfd:|^\[jit|(?:^|/)jit-\d+\.dump\Z)")

KIND_COLORS = {
    "kernel": ((70, 120, 200), (130, 175, 235)),  # blue
    "jit": ((50, 170, 50), (120, 220, 120)),      # green
    "inlined": ((60, 180, 190), (120, 220, 230)),  # aqua
    "stitched": ((165, 120, 70), (215, 180, 130)),  # tan: taken from another sample
    "unknown": ((160, 160, 160), (195, 195, 195)),  # grey
    "user": ((205, 50, 20), (255, 200, 55)),      # red to yellow ("hot")
    "root": ((170, 170, 210), (190, 190, 230)),   # all, comm: lilac
    "cut": ((95, 95, 95), (95, 95, 95)),          # dark grey: stacks cut by --max-depth
    "offcpu": ((95, 70, 170), (165, 140, 235)),   # violet: where threads wait (offcpu)
}
# The legend's words for each family, in the legend's order.
KIND_LABELS = {
    "user": "user code", "inlined": "inlined", "kernel": "kernel", "jit": "JIT",
    "stitched": "stitched (--stitch)", "unknown": "unknown symbol",
    "cut": "cut (--max-depth)", "offcpu": "off-CPU (waiting)", "root": "all / process",
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
        # as when one process adds every sample in order), or the first that
        # saw the frame itself where those before had it stitched (--stitch)
        self.first = first

    def merge(self, other: Node) -> None:
        """Add another tree of the same root (a worker's share of the samples)."""
        self.value += other.value
        self.self_value += other.self_value
        if (other.kind != "stitched", -other.first) > (self.kind != "stitched", -self.first):
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
    if frame.stitched:
        # (not seen in this sample's stack: the reader should know)
        return "stitched"
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

    def stack_path(self, frames: Sequence[StackFrame], java: bool) -> Path:
        """A sample's stack as the tree's (name, kind, dso), outermost first."""
        return self._path(frames, java)

    def add_stack(self, root: str, path: Iterable[tuple[str, str, str | None]], weight: int,
                  samples: int, event_name: str) -> None:
        """`samples` samples of one root and stack at once (their weights
        summed: weight; the event of the first of them), as add() adds them
        one by one (perfdata/core/flamegraph.py: stacks added in the order
        of their first samples)."""
        if self.event_name is None:
            self.event_name = event_name
        self.samples += samples
        node = self.root.children.get(root)
        if node is None:
            node = self.root.children[root] = Node(root, "root")
        self.root.value += weight
        node.value += weight
        self.add_path(path, weight, node)

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
            elif child.kind == "stitched" and kind != "stitched":
                # drawn as stitched only while no sample has seen it itself
                child.kind, child.dso, child.first = kind, dso, order
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
    if node.kind == "cut":
        return KIND_COLORS["cut"][0]
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


class MinWidth(NamedTuple):
    """--min-width: pixels, or (percent) a share of the graph's width."""
    value: float
    percent: bool = False

    def pixels(self, plot_w: float) -> float:
        return plot_w * self.value / 100.0 if self.percent else self.value

    def __str__(self) -> str:
        return "%g%s" % (self.value, "%" if self.percent else " px")


def parse_min_width(text: str) -> MinWidth:
    """argparse type of --min-width: `0.1`, `2px` or `0.5%`."""
    import argparse
    t = text.strip().lower()
    percent = t.endswith("%")
    t = t[:-1] if percent else t[:-2] if t.endswith("px") else t
    try:
        value = float(t)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf") or (percent and value > 100):
        raise argparse.ArgumentTypeError(
            "%r is not a width: pixels (0.1, 2px) or a share of the graph (0.5%%)" % text)
    return MinWidth(value, percent)


def parse_max_depth(text: str) -> int:
    """argparse type of --max-depth: a count of frames, 0 for no limit."""
    import argparse
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError("%r is not a count of frames (0: no limit)" % text)
    return value


class Layout:
    """Where each drawn frame goes: (node, level, x in weight units), level 0
    the graph's root ("all"), 1 the processes, 2 the outermost frames."""

    def __init__(self) -> None:
        self.placed: list[tuple[Node, int, float]] = []
        self.levels = 0
        self.narrow = 0     # frames left out by the min width (their callees with them)
        self.cut_tips: dict[int, str] = {}   # id(cut frame) -> what it stands for


def lay_out(root: Node, scale: float, min_px: float, max_depth: int = 0) -> Layout:
    """The drawn frames of a tree (iteratively: stacks may be deep): those at
    least `min_px` wide, at most `max_depth` frames below each process (0:
    all), the callees of a frame at that depth drawn as one cut frame."""
    out = Layout()
    last = max_depth + 1 if max_depth else None      # the deepest level of a frame kept
    stack: list[tuple[Node, int, float]] = [(root, 0, 0.0)]
    while stack:
        node, depth, x = stack.pop()
        if node.value * scale < min_px:
            out.narrow += 1
            out.cut_tips.pop(id(node), None)       # (a cut frame too narrow: not a place cut)
            continue
        out.placed.append((node, depth, x))
        out.levels = max(out.levels, depth + 1)
        if depth == last and node.children:
            marker, tip = _cut_frame(node, max_depth)
            stack.append((marker, depth + 1, x))
            out.cut_tips[id(marker)] = tip
            continue
        cx = x
        for name in sorted(node.children):
            child = node.children[name]
            stack.append((child, depth + 1, cx))
            cx += child.value
    return out


def _cut_frame(node: Node, max_depth: int) -> tuple[Node, str]:
    """The frame drawn in place of a frame's callees when --max-depth cuts
    them: `[+K frames]`, K the frames cut from its stacks (a range when they
    differ), and a tooltip naming where those stacks ended."""
    shortest, longest = 0, 0
    leaves: dict[str, int] = {}
    todo = [(child, 1) for child in node.children.values()]
    while todo:
        n, d = todo.pop()
        if n.self_value:
            shortest = d if not shortest else min(shortest, d)
            longest = max(longest, d)
            leaves[n.name] = leaves.get(n.name, 0) + n.self_value
        todo.extend((c, d + 1) for c in n.children.values())
    count = "%d" % longest if shortest == longest else "%d..%d" % (shortest, longest)
    marker = Node("[+%s frame%s]" % (count, "" if longest == 1 else "s"), "cut")
    marker.value = node.value - node.self_value
    marker.self_value = marker.value
    top = sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    tip = ("stacks cut by --max-depth %d: %s more frame%s; where they end: %s%s"
           % (max_depth, count, "" if longest == 1 else "s",
              ", ".join("%s (%.0f%%)" % (name, 100.0 * v / marker.value) for name, v in top),
              ", ..." if len(leaves) > len(top) else ""))
    return marker, tip


def legend_entries(placed: Iterable[tuple[Node, int, float]],
                   colors: str) -> tuple[list[tuple[str, str, Rgb, Rgb]], int]:
    """The colour families the drawn frames use, in the legend's order:
    (family, label, first colour, last colour) each; and, with --colors dso,
    how many shared objects were left out of it (the legend names the
    LEGEND_DSOS widest)."""
    kinds: set[str] = set()
    dsos: dict[str, int] = {}       # shared object -> its widest frame
    for node, _, _ in placed:
        if colors == "dso" and node.kind not in ("root", "unknown", "cut") \
                and node.dso not in ("[unknown]", None):
            dsos[node.dso] = max(dsos.get(node.dso, 0), node.value)  # type: ignore[index]
        elif colors == "dso" and node.kind not in ("root", "cut"):
            kinds.add("unknown")
        else:
            kinds.add(node.kind)
    entries = []
    for dso in sorted(dsos, key=lambda d: (-dsos[d], d))[:LEGEND_DSOS]:
        c = _dso_color(dso)
        entries.append(("dso:" + dso, dso.rsplit("/", 1)[-1] or dso, c, c))
    for kind in KIND_LABELS:
        if kind in kinds:
            lo, hi = KIND_COLORS[kind]
            entries.append((kind, KIND_LABELS[kind], lo, hi))
    return entries, max(0, len(dsos) - LEGEND_DSOS)


HINT = "hover a frame for its details, click to zoom, Ctrl-F to search"
# Shared objects named in the legend of --colors dso (the widest ones).
LEGEND_DSOS = 8
SWATCH_W = 18
LEGEND_ROW = FONT_SIZE + 8


def _text_width(text: str) -> float:
    return len(text) * FONT_SIZE * FONT_WIDTH


def _legend_items(entries: list[tuple[str, str, Rgb, Rgb]], notes: list[tuple[str, str]],
                  width: int) -> tuple[list[tuple[int, float, tuple[str, str, Rgb, Rgb] | None,
                                                  str, str]], int]:
    """Where the legend's entries and notes go: (row, x, entry or None, note
    key, text) each, wrapped to the width; and the rows."""
    out: list[tuple[int, float, tuple[str, str, Rgb, Rgb] | None, str, str]] = []
    row, x = 0, float(XPAD)
    items: list[tuple[tuple[str, str, Rgb, Rgb] | None, str, str]] = \
        [(e, "", e[1]) for e in entries] + [(None, key, text) for key, text in notes]
    for entry, key, text in items:
        w = (SWATCH_W + 5 if entry else 0) + _text_width(text)
        if x > XPAD and x + w > width - XPAD:
            row, x = row + 1, float(XPAD)
        out.append((row, x, entry, key, text))
        x += w + 18
    return out, (row + 1 if out else 0)


def render_svg(builder: FlameGraphBuilder, title: str | None = None,
               subtitle: str | None = None, width: int = 1200, flame: bool = False,
               colors: str = "kind", min_width: float | MinWidth = MIN_WIDTH_PX,
               max_depth: int = 0) -> str:
    """The SVG text of a FlameGraphBuilder's tree: drawn from the top (an
    icicle graph) unless `flame` (roots at the bottom, as flamegraph.pl)."""
    # Why from the top by default: a stack of 127 frames (the kernel's
    # frame-pointer limit, which garbage walks reach) makes a page of 2,150 px
    # whose first screen, drawn as flamegraph.pl does, is blank: the root and
    # the wide frames are at the bottom.  Drawn from the top, the first screen
    # holds the root, the hot paths and the legend wherever the SVG is shown:
    # opened on its own, in an <img> (no script runs there, so scrolling to
    # the root cannot be relied on), inlined in a page, or as a picture.
    title = title if title is not None else "Flame Graph"
    if not isinstance(min_width, MinWidth):
        min_width = MinWidth(float(min_width))
    unit = "samples" if builder.weight == "samples" else "period"
    root = builder.root
    total = root.value
    plot_w = max(width - 2 * XPAD, 10)
    scale = plot_w / total if total else 0.0
    min_px = min_width.pixels(plot_w)
    layout = lay_out(root, scale, min_px, max_depth) if total else Layout()
    entries, more_dsos = legend_entries(layout.placed, colors)
    notes = []
    if more_dsos:
        notes.append(("dsos", "+%d more shared objects (hover a frame for its own)" % more_dsos))
    if total:
        notes.append(("orientation", "callees above their callers" if flame
                      else "callees below their callers"))
    if layout.narrow:
        notes.append(("min-width", "%s frame%s narrower than %s not drawn"
                      % (format(layout.narrow, ","), "" if layout.narrow == 1 else "s",
                         min_width)))
    if layout.cut_tips:
        notes.append(("max-depth", "%d place%s where stacks are cut at %d frames"
                      % (len(layout.cut_tips), "" if len(layout.cut_tips) == 1 else "s",
                         max_depth)))
    legend, legend_rows = _legend_items(entries, notes, width)
    head = FONT_SIZE * 3 + (FONT_SIZE + 4 if subtitle else 0)   # title and subtitle
    legend_top = head
    ypad1 = head + legend_rows * LEGEND_ROW + (0 if flame else LEGEND_ROW)
    ypad2 = FONT_SIZE * 2 + 10 if flame else 10
    levels = layout.levels
    height = ypad1 + ypad2 + levels * FRAME_HEIGHT + (0 if total else 3 * FRAME_HEIGHT)
    details_y = height - ypad2 / 2 + 4 if flame else ypad1 - 6
    out: list[str] = []
    w = out.append
    w('<?xml version="1.0" standalone="no"?>\n')
    w('<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" '
      'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
      'data-total="%d" data-unit="%s" data-plotw="%.2f" data-xpad="%d" data-fontsize="%d" '
      'data-fontwidth="%.2f" data-orientation="%s" data-levels="%d" data-max-depth="%d" '
      'data-min-width-px="%g">\n'
      % (width, height, width, height, total, unit, plot_w, XPAD, FONT_SIZE, FONT_WIDTH,
         "flame" if flame else "icicle", levels, max_depth, min_px))
    w('<style type="text/css">\n'
      'text { font-family: Verdana, "DejaVu Sans", Arial, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n'
      '#title { text-anchor: middle; font-size: %dpx; }\n'
      '#subtitle { text-anchor: middle; fill: rgb(100,100,100); }\n'
      '#legend .note, #details.hint { fill: rgb(90,90,90); }\n'
      '.button { cursor: pointer; fill: rgb(40,40,160); }\n'
      '.button:hover { text-decoration: underline; }\n'
      '.hide { display: none; }\n'
      '#frames > g { cursor: pointer; }\n'
      '#frames > g:hover > rect { stroke: black; stroke-width: 0.5; }\n'
      '#frames text { pointer-events: none; }\n'
      '#frames > g[data-kind="cut"] > text { fill: rgb(255,255,255); }\n'
      '</style>\n' % (FONT_SIZE, FONT_SIZE + 5))
    gradients = [(i, e) for i, (_, _, e, _, _) in enumerate(legend) if e and e[2] != e[3]]
    if gradients:
        w('<defs>\n')
        for i, (_, _, lo, hi) in gradients:
            w('<linearGradient id="legend-%d"><stop offset="0" stop-color="rgb(%d,%d,%d)"/>'
              '<stop offset="1" stop-color="rgb(%d,%d,%d)"/></linearGradient>\n'
              % ((i,) + tuple(lo) + tuple(hi)))
        w('</defs>\n')
    w('<rect x="0" y="0" width="%d" height="%d" fill="rgb(245,245,238)"/>\n' % (width, height))
    w('<text id="title" x="%.1f" y="%d">%s</text>\n' % (width / 2, FONT_SIZE * 2, escape(title)))
    if subtitle:
        w('<text id="subtitle" x="%.1f" y="%d">%s</text>\n'
          % (width / 2, FONT_SIZE * 3 + 2, escape(subtitle)))
    w('<g id="legend">\n')
    for i, (row, x, entry, key, text) in enumerate(legend):
        y = legend_top + row * LEGEND_ROW
        if entry is None:
            w('<text class="note" data-note="%s" x="%.1f" y="%d">%s</text>\n'
              % (key, x, y + FONT_SIZE + 2, escape(text)))
            continue
        family, label, lo, hi = entry
        fill = "url(#legend-%d)" % i if lo != hi else "rgb(%d,%d,%d)" % tuple(lo)
        w('<g class="entry" data-family="%s"><rect x="%.1f" y="%d" width="%d" height="%d" '
          'fill="%s" rx="2" ry="2"/><text x="%.1f" y="%d">%s</text></g>\n'
          % (_attr(family), x, y + 3, SWATCH_W, FRAME_HEIGHT - 3, fill,
             x + SWATCH_W + 5, y + FONT_SIZE + 2, escape(label)))
    w('</g>\n')
    # Until a frame is hovered, the details line says what the mouse does.
    hint = HINT if total else " "
    w('<text id="details" class="hint" x="%d" y="%d" data-hint="%s">%s</text>\n'
      % (XPAD, details_y, _attr(hint), escape(hint)))
    w('<text id="unzoom" class="button hide" x="%d" y="%d">Reset Zoom</text>\n'
      % (XPAD, FONT_SIZE * 2))
    w('<text id="search" class="button" x="%d" y="%d" text-anchor="end">Search</text>\n'
      % (width - XPAD, FONT_SIZE * 2))
    w('<text id="resetsearch" class="button hide" x="%d" y="%d" text-anchor="end">'
      'Reset Search</text>\n' % (width - XPAD - 60, FONT_SIZE * 2))
    w('<text id="matched" x="%d" y="%d" text-anchor="end"> </text>\n'
      % (width - XPAD, details_y))
    if not total:
        w('<text id="empty" x="%.1f" y="%d" text-anchor="middle">No samples</text>\n'
          % (width / 2, ypad1 + FRAME_HEIGHT * 2))
    w('<g id="frames">\n')
    for node, depth, x in sorted(layout.placed, key=lambda p: (p[1], p[2])):
        px = XPAD + x * scale
        pw = node.value * scale
        if flame:
            y = height - ypad2 - (depth + 1) * FRAME_HEIGHT
        else:
            y = ypad1 + depth * FRAME_HEIGHT
        share = 100.0 * node.value / total
        info = "%s (%s %s, %.2f%%)" % (node.name, format(node.value, ","), unit, share)
        tip = info
        if node.kind == "cut":
            tip += "\n" + layout.cut_tips[id(node)]
        elif node.dso and node.kind not in ("root",):
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
      if (!g) return;
      details.textContent = g.getAttribute("data-info");
      details.classList.remove("hint");
    });
    frames.addEventListener("mouseout", function (ev) {
      if (!frameOf(ev.target)) return;
      details.textContent = details.getAttribute("data-hint") || " ";
      details.classList.add("hint");
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
  // --flame, the SVG opened on its own: the root is at the bottom of a page
  // that may be taller than the window; open it scrolled there.  (Inlined in
  // a page, the page's scrolling is the page's.)
  if (svg.getAttribute("data-orientation") === "flame" && document.documentElement === svg) {
    var toRoot = function () {
      window.scrollTo(0, Math.max(0, svg.getBoundingClientRect().height - window.innerHeight));
      svg.setAttribute("data-scrolled", String(Math.round(window.scrollY)));
    };
    if (document.readyState === "complete") toRoot(); else window.addEventListener("load", toRoot);
  }
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
        from ..core.flamegraph import fill_tree
        if not fill_tree(run_, builder):     # (the compiled core's, where it applies)
            for sample in run_:
                builder.add(sample)
    if builder.root.value == 0:
        sys.stderr.write("perfdata: note: no samples; writing an empty flame graph\n")
    subtitle = "%s%s" % (os.path.basename(str(args.file)),
                         " - %s" % builder.event_name if builder.event_name else "")
    svg = render_svg(builder, title=args.title, subtitle=subtitle, width=args.width,
                     flame=args.flame, colors=args.colors, min_width=args.minwidth,
                     max_depth=args.max_depth)
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
    from ..run.sharded import default_jobs, event_names
    if getattr(args, "stitch", False) or len(event_names(pf)) > 1:
        return 1
    if args.jobs is None:
        from ..core.script import takes_most_samples
        if takes_most_samples(args, pf):
            return 1        # (the compiled core counts the samples: see script_jobs)
    return default_jobs(args.jobs, pf)


def _build_sharded(args: argparse.Namespace, opts: CollapseOptions, jobs: int, pf: PerfFile,
                   builder: FlameGraphBuilder) -> None:
    """The builder's tree from `jobs` workers' shares of the samples, each
    node keeping the kind and dso of the first sample that made it."""
    from functools import partial

    from ..run.sharded import add_up_parts, compute_part

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
    p.add_argument("--title", help="title (default: Flame Graph)")
    p.add_argument("--colors", choices=("kind", "dso"), default="kind",
                   help="colour by kind (user, kernel, jit, inlined, stitched, unknown) "
                        "or by dso; the legend names those drawn")
    drawn = p.add_mutually_exclusive_group()
    drawn.add_argument("--inverted", "--reverse", dest="flame", action="store_false",
                       help="draw from the top, callees below their callers (the default: "
                            "the first screen shows the root and the hot paths)")
    drawn.add_argument("--flame", dest="flame", action="store_true",
                       help="draw roots at the bottom, as flamegraph.pl (the SVG opened on "
                            "its own scrolls to them)")
    p.set_defaults(flame=False)
    p.add_argument("--width", type=int, default=1200, help="image width in pixels")
    p.add_argument("--min-width", "--minwidth", dest="minwidth", type=parse_min_width,
                   default=MinWidth(MIN_WIDTH_PX), metavar="PX|PCT%",
                   help="leave out frames narrower than this many pixels, or this share "
                        "of the graph with %%, and their callees (default 0.1 px, as "
                        "flamegraph.pl's --minwidth); the totals stay whole")
    p.add_argument("--max-depth", type=parse_max_depth, default=MAX_DEPTH, metavar="N",
                   help="draw at most N frames of a stack below its process, the rest as one "
                        "frame [+K frames] (default 0: no limit)")
    p.add_argument("--weight", choices=("samples", "period"), default="samples",
                   help="frame width by sample count (default) or by period")
    p.add_argument("--pid-root", "--with-pid", dest="pid_root", action="store_true",
                   help="root stacks at comm-pid")
    p.add_argument("--tid-root", "--with-tid", dest="tid_root", action="store_true",
                   help="root stacks at comm-pid/tid")
    p.add_argument("--event-filter", metavar="EVENT",
                   help="draw this event (default: the first one seen)")
