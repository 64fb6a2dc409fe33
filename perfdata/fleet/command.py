"""`perfdata fleet collapse|report|flamegraph PATHS...`: one view of many
profiles, computed on a Dask cluster (perfdata/fleet/); `fleet diff` is
in diff.py.

The output is the single-file command's, over all the files: `fleet
collapse` prints the sum of each file's `collapse` (line by line), `fleet
report` the table of all their samples (per event name, percentages of the
summed event count), `fleet flamegraph` one graph of all their stacks.  Each
file is read with the same options as the single-file command, and its
`perfdata archive` (FILE.tar.zst beside it) is used when present.  A file
that cannot be read is named on stderr and left out; the run fails (exit 2)
only when no file can be read, or the cluster cannot be reached.
"""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any, Iterable, TextIO

from . import FleetError
from ..views.collapse import add_collapse_options, folded_lines, open_output
from ..views.options import add_symbolize_options

if TYPE_CHECKING:
    import argparse

    from .partials import Partial
    from ..views.flamegraph.tree import FlameGraphBuilder

# Arguments of the run itself, not of each file's reading.
_RUN_ONLY = ("func", "paths", "base", "new", "scheduler", "workers", "connect_timeout",
             "command", "fleet_command", "output", "traceback")


def file_options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed arguments each file is read with (a picklable dict)."""
    return {k: v for k, v in vars(args).items() if k not in _RUN_ONLY}


def compute(args: argparse.Namespace, kind: str) -> Partial:
    """The merged Partial of the files args.paths names, from the cluster;
    errors and warnings printed on stderr."""
    from .cluster import dask_client, tree_reduce
    from .paths import expand_paths
    paths = expand_paths(args.paths)
    if args.workers is not None and args.workers < 1:
        raise FleetError("--workers must be at least 1")
    with dask_client(args.scheduler, args.workers, args.connect_timeout) as client:
        result = tree_reduce(client, paths, kind, file_options(args))
    report_problems(result)
    if not result.files:
        raise FleetError("no file could be read (%d skipped)" % len(result.errors))
    return result


def report_problems(result: Partial, stream: TextIO | None = None, label: str = "") -> None:
    """The skipped files, the warnings (each once, with the files it is of)
    and a summary on stderr; label: the set they are of (fleet diff's)."""
    stream = stream or sys.stderr

    def _own(path: str, message: str) -> str:        # the reader's messages name the file already
        return message[len(path) + 2:] if message.startswith(path + ": ") else message
    for path, message in result.errors:
        message = _own(path, message)
        stream.write("perfdata: warning: %s: skipped: %s\n" % (path, message))
    by_message: dict[str, list[str]] = {}
    for path, message in result.warnings:
        message = _own(path, message)
        by_message.setdefault(message, []).append(path)
    for message, paths in by_message.items():
        where = paths[0] if len(paths) == 1 else "%d files" % len(paths)
        stream.write("perfdata: warning: %s: %s\n" % (where, message))
    stream.write("perfdata: fleet: %s%d file%s read, %d samples%s\n"
                 % (label + ": " if label else "", result.files,
                    "" if result.files == 1 else "s", result.samples,
                    "; %d skipped" % len(result.errors) if result.errors else ""))


def write_output(args: argparse.Namespace, out: TextIO,
                 text_or_lines: str | Iterable[str]) -> None:
    stream, close = open_output(args.output, out)
    try:
        if isinstance(text_or_lines, str):
            stream.write(text_or_lines)
        else:
            stream.writelines(text_or_lines)
    finally:
        if close:
            stream.close()


def run_collapse(args: argparse.Namespace, out: TextIO) -> None:
    result = compute(args, "collapse")
    write_output(args, out, folded_lines(result.data or {}))


def report_text(data: dict[str, Any], sort_keys: list[str], children: bool,
                **shown: Any) -> str:
    """perf report's table of a merged report Partial's data; shown: what
    Report.describe takes of how it is shown (-n, -q, --percent-limit)."""
    from ..views.report.entries import Entry, EventHistogram
    from ..views.report.histogram import Report
    report = Report(sort_keys, children)
    attrs = []
    for index, (name, (nsamples, total, entries)) in enumerate(data["events"].items()):
        # (stand-ins with the attributes Report reads)
        hist = EventHistogram(types.SimpleNamespace(name=name, index=index))  # type: ignore[arg-type]
        hist.samples = nsamples
        hist.total_period = total
        for key, (self_period, kids, count, unresolved, level, values, comm) in \
                entries.items():
            # (a stand-in, as above)
            entry = Entry(values, level, unresolved, types.SimpleNamespace(comm=comm))  # type: ignore[arg-type]
            entry.self_period = self_period
            entry.children = kids
            entry.samples = count
            hist.entries[key] = entry
        report.hists[index] = hist
        attrs.append(types.SimpleNamespace(index=index, name=name))
    index_of = {name: index for index, name in enumerate(data["events"])}
    groups = {}
    for leader, group in data.get("groups", {}).items():
        if group is None or leader not in index_of:
            continue
        name, members = group
        for member in members:
            if member not in index_of:
                # a member no file sampled: its columns are zeros, as in
                # the report of one file (an event without a histogram)
                index_of[member] = len(attrs)
                attrs.append(types.SimpleNamespace(index=len(attrs), name=member))
        groups[index_of[leader]] = (name, [index_of[m] for m in members])
    leaders = {index_of[e] for e in data.get("apart", []) if e in index_of}
    return report.describe(attrs, lost=data["lost"], groups=groups,  # type: ignore[arg-type]
                           leaders=leaders, **shown)  # (attrs: stand-ins, as above)


def run_report(args: argparse.Namespace, out: TextIO) -> None:
    from ..views.report.sort_keys import parse_sort
    keys = parse_sort(args.sort)
    result = compute(args, "report")
    # (compute() raised if no file was read: there is data)
    write_output(args, out, report_text(result.data, keys,  # type: ignore[arg-type]
                                        args.children, show_nr_samples=args.show_nr_samples,
                                        quiet=args.quiet, percent_limit=args.percent_limit))


def flame_builder(data: dict[str, Any], args: argparse.Namespace) -> FlameGraphBuilder:
    """A FlameGraphBuilder holding a merged flamegraph Partial's stacks."""
    from .partials import flame_options
    from ..views.flamegraph.tree import FlameGraphBuilder
    builder = FlameGraphBuilder(args.weight, flame_options(args))
    for path, weight in sorted(data["paths"].items()):
        builder.add_path(path, weight)
    builder.event_name = ", ".join(data["events"]) or None
    return builder


def run_flamegraph(args: argparse.Namespace, out: TextIO) -> None:
    from ..views.flamegraph.command import check_width
    from ..views.flamegraph.svg import render_svg
    check_width(args)
    result = compute(args, "flamegraph")
    builder = flame_builder(result.data, args)  # type: ignore[arg-type]  # (as in run_report)
    subtitle = "%d profiles%s" % (result.files, " - %s" % builder.event_name
                                  if builder.event_name else "")
    write_output(args, out, render_svg(builder, title=args.title, subtitle=subtitle,
                                       width=args.width, flame=args.flame, colors=args.colors,
                                       min_width=args.minwidth, max_depth=args.max_depth))


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="perf.data files, globs (quoted) or directories (their *.data "
                        "and perf.data* files)")
    p.add_argument("-o", "--output", help="write here (default: standard output)")
    add_cluster_options(p)


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="an existing Dask cluster's scheduler (tcp://HOST:PORT); default: "
                        "a local cluster, one worker process per core")
    g.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local cluster (default: the cores)")
    g.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up reaching --scheduler after this long (default 10)")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("fleet", help="collapse, report, flamegraph or diff over "
                              "many files, on Dask (the fleet extra)")
    sub = p.add_subparsers(dest="fleet_command", required=True)

    c = sub.add_parser("collapse", help="folded stacks of all the files (the sum of collapse)")
    _add_run_options(c)
    add_collapse_options(c)
    add_symbolize_options(c)
    c.set_defaults(func=run_collapse)

    from ..views.report.command import add_report_options
    r = sub.add_parser("report", help="one overhead table of all the files' samples")
    _add_run_options(r)
    add_report_options(r)
    add_symbolize_options(r)
    r.set_defaults(func=run_report)

    from ..views.flamegraph.command import add_flamegraph_options
    f = sub.add_parser("flamegraph", help="one SVG flame graph of all the files")
    _add_run_options(f)
    add_flamegraph_options(f)
    add_symbolize_options(f)
    f.set_defaults(func=run_flamegraph)

    from .diff import add_diff_command
    add_diff_command(sub)
