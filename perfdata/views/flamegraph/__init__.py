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

    tree         Node, the tree of frames, and FlameGraphBuilder, which
                 merges symbolized samples into it
    colors       each frame's colour: by kind (user, kernel, JIT, ...) or
                 by shared object
    layout       where the frames go: the drawn ones, those too narrow,
                 the stacks --max-depth cuts
    legend       the colour families drawn and the notes, under the title
    svg          the SVG text
    svg_script   the script embedded in it (hover, zoom, search)
    command      the command and its options

The names the other views (the differential and off-CPU graphs) and the
library use are importable from here, each module imported at the first
use of one of its names (as perfdata.format's): the tree and the drawing
do not pay for the command's options.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...faces import import_at_first_use

if TYPE_CHECKING:
    from .colors import KIND_COLORS, KIND_LABELS, dso_color, node_color
    from .command import (MAX_DEPTH, SHARD_BLOCK, add_flamegraph_options, check_width,
                          flamegraph_jobs, parse_max_depth, parse_min_width, register, run)
    from .layout import (FONT_SIZE, FONT_WIDTH, FRAME_HEIGHT, MIN_WIDTH_PX, XPAD, Layout,
                         MinWidth, fit_label, lay_out)
    from .legend import legend_entries
    from .svg import HINT, escape, escape_attr, render_svg
    from .tree import FlameGraphBuilder, Node, frame_kind

_MODULE_OF = {
    **dict.fromkeys(("KIND_COLORS", "KIND_LABELS", "dso_color", "node_color"), "colors"),
    **dict.fromkeys(("MAX_DEPTH", "SHARD_BLOCK", "add_flamegraph_options", "check_width",
                     "flamegraph_jobs", "parse_max_depth", "parse_min_width", "register",
                     "run"), "command"),
    **dict.fromkeys(("FONT_SIZE", "FONT_WIDTH", "FRAME_HEIGHT", "MIN_WIDTH_PX", "XPAD",
                     "Layout", "MinWidth", "fit_label", "lay_out"), "layout"),
    "legend_entries": "legend",
    **dict.fromkeys(("HINT", "escape", "escape_attr", "render_svg"), "svg"),
    **dict.fromkeys(("FlameGraphBuilder", "Node", "frame_kind"), "tree"),
}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    return import_at_first_use(__name__, _MODULE_OF, name)
