"""The `perfdata flamegraph` command: its options, and the samples into a
FlameGraphBuilder (in one process, where the compiled core counts the -g
stacks it can, or in -j workers), drawn by render_svg."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from ...run.folded import CollapseOptions
from ..errors import CommandError
from ..options import SampleRun, add_stack_command
from .layout import MIN_WIDTH_PX, MinWidth
from .svg import render_svg
from .tree import FlameGraphBuilder

if TYPE_CHECKING:
    import argparse

    from ...format import PerfFile
    from ...resolve.symbolized import SampleSymbolizer

# --max-depth by default: no limit.  Measured on benchmarks/bench_real.py's
# cc1plus (g++ -O2 -c of a template-heavy file, recorded -g there, and with
# --call-graph=dwarf by hand): the DWARF stacks of
# cc1plus, all real, reach 73 frames (a 1,302 px page); the -g walks of the
# same build, through code without frame pointers, end in garbage at the
# kernel's 127 (2,166 px).  A default low enough to shorten the garbage
# page (64: 1,174 px) would cut the compiler's real stacks in 11 places;
# one that keeps real stacks whole (128 and up) does not shorten it.  So
# every stack is drawn unless asked, and the first screen is right whatever
# the height (drawn from the top); --max-depth and --min-width bound it.
MAX_DEPTH = 0


def check_width(args: argparse.Namespace) -> None:
    if args.width < 100 or args.width > 100000:
        raise CommandError("--width must be between 100 and 100000")


def run(args: argparse.Namespace, out: TextIO) -> None:
    import os
    check_width(args)
    from ..collapse import open_output
    stream, close = open_output(args.output, out)
    opts = CollapseOptions(pid=args.pid_root, tid=args.tid_root, kernel=False,
                           event_filter=args.event_filter)
    builder = FlameGraphBuilder(args.weight, opts, note_stream=sys.stderr)
    run_ = SampleRun(args, "flamegraph")
    jobs = flamegraph_jobs(args, run_.pf)
    if jobs > 1:
        _build_sharded(args, opts, jobs, run_.pf, builder)
    else:
        from .tree import fill_tree
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
    says which), and by default where the compiled core counts or the
    stacks are unwound by DWARF (sharded.default_jobs)."""
    from ...run.sharded import default_jobs, event_names
    if getattr(args, "stitch", False) or len(event_names(pf)) > 1:
        return 1
    if args.jobs is None:
        from ...core.script import takes_most_samples
        if takes_most_samples(args, pf):
            return 1        # (the compiled core counts the samples: see script_jobs)
    return default_jobs(args, pf)


def _build_sharded(args: argparse.Namespace, opts: CollapseOptions, jobs: int, pf: PerfFile,
                   builder: FlameGraphBuilder) -> None:
    """The builder's tree from `jobs` workers' shares of the samples, each
    node keeping the kind and dso of the first sample that made it."""
    from functools import partial

    from ...run.sharded import add_up_parts, compute_part
    from ..options import resolve_options

    def fill(wpf: PerfFile, samples: SampleSymbolizer, mine: FlameGraphBuilder) -> None:
        for sample in samples:
            # (made without side events: its items are samples)
            mine.add(sample, samples.ordinal)  # type: ignore[arg-type]

    add_up_parts(pf, jobs, SHARD_BLOCK,
                 partial(compute_part, args.file, resolve_options(args),
                         make=lambda _: FlameGraphBuilder(args.weight, opts),
                         fill=fill),
                 builder.merge)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_stack_command(subparsers, "flamegraph", "an interactive SVG flame graph",
                      "write the SVG here (default: standard output)", add_flamegraph_options, run)


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
