"""Where a flame graph's frames go: the sizes of a frame and its label, the
frames drawn (at least --min-width wide, at most --max-depth below their
process) and the frames that stand for the callees --max-depth cuts."""
from __future__ import annotations

from typing import NamedTuple

from .tree import Node

# A frame's height, the labels' font size and a character's width in ems
# (flamegraph.pl's), the margin left and right of the frames, and
# --min-width's default (flamegraph.pl's --minwidth).
FRAME_HEIGHT = 16
FONT_SIZE = 12
FONT_WIDTH = 0.59
XPAD = 10
MIN_WIDTH_PX = 0.1


class MinWidth(NamedTuple):
    """--min-width: pixels, or (percent) a share of the graph's width."""
    value: float
    percent: bool = False

    def pixels(self, plot_w: float) -> float:
        return plot_w * self.value / 100.0 if self.percent else self.value

    def __str__(self) -> str:
        return "%g%s" % (self.value, "%" if self.percent else " px")


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


def fit_label(name: str, width_px: float) -> str:
    """A frame's label: its name, cut with ".." to the frame's width, or
    none on a frame too narrow for three characters."""
    chars = int((width_px - 6) / (FONT_SIZE * FONT_WIDTH))
    if chars < 3:
        return ""
    if len(name) <= chars:
        return name
    return name[:chars - 2] + ".."
