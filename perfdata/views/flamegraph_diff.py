"""The differential flame graph (`perfdata flamegraph --diff BASE NEW`) and
difffolded.pl's three columns (`perfdata diff --folded BASE NEW`).

Brendan Gregg's FlameGraph draws a comparison in two passes:
`difffolded.pl [-n] folded1 folded2 | flamegraph.pl [--negate]`.  The rules
kept here are theirs, over the folded stacks `perfdata collapse` prints:
* difffolded.pl: one line per stack either file has, `stack count1 count2`
  (0 where a file lacks it); with -n (here the default, `--no-normalize`
  turns it off) each stack's count1 is scaled to file 2's total,
  int(count1 * total2 / total1), stack by stack;
* flamegraph.pl: frames as wide as count2 (file 2 is the one drawn), each
  coloured by the change of the stacks that end in it (count2 - count1:
  red grew, blue shrank, white unchanged), its saturation by the size of
  that change against the largest change of any stack (color_scale());
  `--negate` draws BASE's stacks (difffolded.pl NEW BASE | flamegraph.pl
  --negate: what disappeared is drawn, red still meaning grew).
A frame's counts are the sums over the stacks through it of each column.
Hovering a frame shows both, the change, and the sampling noise of that
change: three standard deviations of the difference of two Poisson counts
(a change inside it is not told apart from chance).
"""
from __future__ import annotations

import argparse
import math
import re
from typing import TYPE_CHECKING, TextIO

from .errors import CommandError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .flamegraph import Node

# (a stack's counts: BASE's, NEW's)
Counts = tuple[int, int]
# The noise shown: this many standard deviations.
NOISE_SIGMAS = 3


def folded_counts(args: argparse.Namespace, path: str, weight: str) -> dict[str, int]:
    """{folded stack: count} of one file, as `perfdata collapse` counts it
    (weight "period", its default) or the flame graph does ("samples")."""
    from ..run.folded import CollapseOptions
    from .flamegraph import FlameGraphBuilder
    from .options import SampleRun
    from .flamegraph.tree import fill_tree
    import sys
    file_args = argparse.Namespace(**vars(args))
    file_args.file = path
    opts = CollapseOptions(pid=getattr(args, "pid_root", False),
                           tid=getattr(args, "tid_root", False),
                           event_filter=getattr(args, "event_filter", None))
    builder = FlameGraphBuilder(weight, opts, note_stream=sys.stderr)
    run_ = SampleRun(file_args, "diff")
    if not fill_tree(run_, builder):
        for sample in run_:
            builder.add(sample)
    counts: dict[str, int] = {}
    todo: list[tuple[Node, str]] = [(child, child.name)
                                    for child in builder.root.children.values()]
    while todo:
        node, stack = todo.pop()
        if node.self_value:
            counts[stack] = node.self_value
        todo.extend((child, stack + ";" + child.name) for child in node.children.values())
    return counts


def diff_stacks(base: dict[str, int], new: dict[str, int], normalize: bool = True,
                negate: bool = False) -> dict[str, Counts]:
    """{stack: (BASE's count, NEW's count)} as difffolded.pl makes them, the
    side not drawn (BASE's, or NEW's with negate) scaled stack by stack to
    the drawn side's total when normalize (its -n)."""
    first, second = (new, base) if negate else (base, new)
    total1, total2 = sum(first.values()), sum(second.values())
    out = {}
    for stack in first.keys() | second.keys():
        c1, c2 = first.get(stack, 0), second.get(stack, 0)
        if normalize and total1 != total2 and total1:
            c1 = perl_scaled(c1, total2, total1)
        out[stack] = (c2, c1) if negate else (c1, c2)
    return out


def perl_scaled(count: int, total2: int, total1: int) -> int:
    """int(count * total2 / total1) as Perl computes it: the product an
    integer while it fits in 64 bits (else a double), the quotient an
    integer where it is one, else the doubles' quotient, truncated."""
    product = count * total2
    if product >= 1 << 64:
        return int(float(count) * float(total2) / float(total1))
    if product % total1 == 0:
        return product // total1
    return int(float(product) / float(total1))


def folded_diff_lines(stacks: dict[str, Counts]) -> list[str]:
    """difffolded.pl's lines (`stack count1 count2`), sorted by stack."""
    return ["%s %d %d\n" % (stack, stacks[stack][0], stacks[stack][1]) for stack in sorted(stacks)]


def write_folded_diff(args: argparse.Namespace, paths: list[str], out: TextIO) -> None:
    """`perfdata diff --folded BASE NEW`: difffolded.pl's output (without -n,
    as difffolded.pl's default) of the files' collapsed stacks."""
    base, new = (folded_counts(args, p, "period") for p in paths)
    out.writelines(folded_diff_lines(diff_stacks(base, new, normalize=False)))


class DiffFrame:
    """A frame of the differential graph: its counts (BASE's, NEW's) over
    the stacks through it, those of the stack that ends in it, callees."""
    __slots__ = ("name", "base", "new", "self_base", "self_new", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.base = self.new = self.self_base = self.self_new = 0
        self.children: dict[str, DiffFrame] = {}


def diff_tree(stacks: dict[str, Counts]) -> DiffFrame:
    """The frames of every stack ("all" at the root), counts summed."""
    root = DiffFrame("all")
    for stack, (c1, c2) in stacks.items():
        node = root
        node.base += c1
        node.new += c2
        for name in stack.split(";"):
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = DiffFrame(name)
            node = child
            node.base += c1
            node.new += c2
        node.self_base += c1
        node.self_new += c2
    return root


def color_scale(value: int, largest: int) -> tuple[int, int, int]:
    """flamegraph.pl's color_scale(): red for growth, blue for shrinking,
    white for none, the deeper the larger against the largest change."""
    if value > 0:
        g = int(210 * (largest - value) / largest)
        return 255, g, g
    if value < 0:
        r = int(210 * (largest + value) / largest)
        return r, r, 255
    return 255, 255, 255


class DiffGraph:
    """The tree of frames to draw (flamegraph.Node, as wide as the drawn
    side's counts) beside the DiffFrame each stands for."""

    def __init__(self, stacks: dict[str, Counts], negate: bool, weight: str) -> None:
        from .flamegraph import FlameGraphBuilder, Node
        self.negate = negate
        self.root = diff_tree(stacks)
        # flamegraph.pl's maxdelta: the largest change of a stack, at least 1
        self.largest = max([1] + [abs(c2 - c1) for c1, c2 in stacks.values()])
        self.builder = FlameGraphBuilder(weight)
        self.frame_of: dict[int, DiffFrame] = {}
        todo: list[tuple[DiffFrame, Node, int]] = [(self.root, self.builder.root, 0)]
        while todo:
            frame, node, depth = todo.pop()
            node.value = self.drawn(frame)
            node.self_value = frame.self_base if negate else frame.self_new
            self.frame_of[id(node)] = frame
            for name, child in frame.children.items():
                if self.drawn(child):
                    kid = node.children[name] = Node(name, "root" if depth == 0 else "user")
                    todo.append((child, kid, depth + 1))

    def drawn(self, frame: DiffFrame) -> int:
        return frame.base if self.negate else frame.new

    def color(self, frame: DiffFrame) -> tuple[int, int, int]:
        return color_scale(frame.self_new - frame.self_base, self.largest)

    def noise(self, frame: DiffFrame, scale: float) -> float:
        """NOISE_SIGMAS standard deviations of NEW - BASE for a frame whose
        counts are Poisson, the side not drawn scaled by `scale`."""
        drawn, other = (frame.base, frame.new) if self.negate else (frame.new, frame.base)
        return NOISE_SIGMAS * math.sqrt(drawn + other * scale)

    def info(self, frame: DiffFrame, unit: str, scale: float) -> str:
        total = self.drawn(self.root) or 1
        delta = frame.new - frame.base
        return "%s (%s %s new, %s base; %s, %+.2f%%; noise \u00b1%s)" % (
            frame.name, format(frame.new, ","), unit, format(frame.base, ","),
            format(delta, "+,"), 100.0 * delta / total,
            format(round(self.noise(frame, scale)), ","))


_FRAME = re.compile(r'<g data-d="')
_FILL = re.compile(r'fill="rgb\(\d+,\d+,\d+\)"')
_INFO = re.compile(r'data-info="[^"]*"><title>[^<]*</title>')
_LEGEND = re.compile(r'<g id="legend">\n.*?</g>\n(?=<text id="details")', re.S)


def render_diff_svg(graph: DiffGraph, args: argparse.Namespace, subtitle: str,
                    scale: float) -> str:
    """flamegraph.render_svg's drawing of the graph's tree, each frame then
    given its colour by change, its counts and noise (the frames are
    written in lay_out()'s order, by depth then place), and a legend of
    the colours."""
    from .flamegraph import MinWidth, XPAD, escape, lay_out, render_svg
    min_width = args.minwidth if isinstance(args.minwidth, MinWidth) else MinWidth(args.minwidth)
    svg = render_svg(graph.builder, title=args.title or "Differential Flame Graph",
                     subtitle=subtitle, width=args.width, flame=args.flame, colors="kind",
                     min_width=min_width, max_depth=args.max_depth)
    root = graph.builder.root
    plot_w = max(args.width - 2 * XPAD, 10)
    total = root.value
    placed = lay_out(root, plot_w / total, min_width.pixels(plot_w), args.max_depth) \
        if total else None
    nodes = sorted(placed.placed, key=lambda p: (p[1], p[2])) if placed else []
    unit = "samples" if graph.builder.weight == "samples" else "period"
    lines = svg.split("\n")
    at = 0
    for i, line in enumerate(lines):
        if not _FRAME.match(line):
            continue
        node = nodes[at][0]
        at += 1
        frame = graph.frame_of.get(id(node))
        if frame is None:
            continue        # (a --max-depth cut frame keeps its grey)
        info = escape(graph.info(frame, unit, scale)).replace('"', "&quot;")
        line = _FILL.sub('fill="rgb(%d,%d,%d)"' % graph.color(frame), line, count=1)
        line = _INFO.sub('data-info="%s" data-base="%d" data-new="%d" data-noise="%.1f">'
                         '<title>%s</title>' % (info, frame.base, frame.new,
                                                graph.noise(frame, scale), info), line, count=1)
        lines[i] = line
    svg = "\n".join(lines)
    return _LEGEND.sub(lambda m: _legend(m.group(0), graph, scale), svg, count=1)


def _legend(block: str, graph: DiffGraph, scale: float) -> str:
    """The legend in the place of render_svg's (its first row): the colours
    and what the widths are."""
    from .flamegraph import FONT_SIZE, XPAD, escape
    y = re.search(r'y="(\d+)"', block)
    top = int(y.group(1)) - 3 if y else FONT_SIZE * 3
    drawn = "BASE" if graph.negate else "NEW"
    norm = "BASE scaled to NEW's total" if scale != 1.0 and not graph.negate else \
        "NEW scaled to BASE's total" if scale != 1.0 else "counts as recorded"
    items = [("grew", (255, 0, 0)), ("shrank", (0, 0, 255)), ("unchanged", (255, 255, 255))]
    out = ['<g id="legend">\n']
    x = float(XPAD)
    for label, rgb in items:
        out.append('<g class="entry" data-family="%s"><rect x="%.1f" y="%d" width="18" '
                   'height="13" fill="rgb(%d,%d,%d)" stroke="rgb(120,120,120)" '
                   'stroke-width="0.5" rx="2" ry="2"/><text x="%.1f" y="%d">%s</text></g>\n'
                   % ((label, x, top + 3) + rgb + (x + 23, top + FONT_SIZE + 2, label)))
        x += 23 + len(label) * 7.5 + 18
    note = "widths: %s; colour: change of the stacks ending in a frame (%s)" % (drawn, norm)
    out.append('<text class="note" data-note="diff" x="%.1f" y="%d">%s</text>\n'
               % (x, top + FONT_SIZE + 2, escape(note)))
    out.append("</g>\n")
    return "".join(out)


def run_diff(args: argparse.Namespace, out: TextIO) -> None:
    """`perfdata flamegraph --diff BASE NEW`."""
    import os
    import sys
    from .collapse import open_output
    from .flamegraph import check_width
    check_width(args)
    stream, close = open_output(args.output, out)
    base, new = (folded_counts(args, p, args.weight) for p in (args.diff, args.file))
    totals = sum(base.values()), sum(new.values())
    drawn_total, other_total = (totals[0], totals[1]) if args.negate else (totals[1], totals[0])
    scale = drawn_total / other_total if args.normalize and other_total else 1.0
    graph = DiffGraph(diff_stacks(base, new, args.normalize, args.negate), args.negate,
                      args.weight)
    if not graph.builder.root.value:
        sys.stderr.write("perfdata: note: no samples; writing an empty flame graph\n")
    subtitle = "%s vs %s (base)" % (os.path.basename(str(args.file)),
                                    os.path.basename(str(args.diff)))
    try:
        stream.write(render_diff_svg(graph, args, subtitle, scale))
    finally:
        if close:
            stream.close()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`perfdata flamegraph`, with --diff BASE: the flame graph's own
    command (perfdata.views.flamegraph) and the options of the
    differential graph, which its run takes over when --diff is given."""
    from . import flamegraph
    flamegraph.register(subparsers)
    p = subparsers.choices["flamegraph"]
    g = p.add_argument_group("differential flame graph (difffolded.pl, flamegraph.pl)")
    g.add_argument("--diff", metavar="BASE",
                   help="compare FILE (NEW) with BASE: frames as wide as NEW's, coloured by "
                        "the change (red grew, blue shrank)")
    g.add_argument("--negate", action="store_true",
                   help="with --diff: draw BASE's frames (what disappeared shows)")
    g.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="with --diff: compare the counts as recorded (by default the side "
                        "not drawn is scaled to the drawn side's total)")
    plain = p.get_default("func")

    def run(args: argparse.Namespace, out: TextIO) -> None:
        if args.diff is None:
            if args.negate or not args.normalize:
                raise CommandError("--negate and --no-normalize go with --diff BASE")
            plain(args, out)
        else:
            run_diff(args, out)
    p.set_defaults(func=run)


def stacks_of(lines: Iterable[str]) -> dict[str, Counts]:
    """The stacks of difffolded.pl's lines (a reader for tests and tools)."""
    out = {}
    for line in lines:
        stack, c1, c2 = line.rstrip("\n").rsplit(" ", 2)
        out[stack] = (int(c1), int(c2))
    return out
