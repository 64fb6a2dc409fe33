"""`perfdata fleet diff --base PATHS... --new PATHS...`: two sets of profiles
compared (a fleet before and after a deploy), each set summed on the
workers of a Dask cluster.

The output is `perfdata diff BASE NEW`'s, as if BASE held the samples of
every file of --base and NEW those of --new: perf diff's table (the same
options: -s, -c, -o, -p, -F, -b, -q, --percentage, the filters), or with
--folded difffolded.pl's three columns of the sets' summed folded stacks.
Each file is read as `perfdata diff` reads it, with its own binaries; a
set's per-file tables are added by merge tasks on the workers (a key's
periods and each event's totals summed), the two sets at once; the client
receives one table per set and prints their comparison.  An event of
--new matches one of --base by type and config, as perf diff's do.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from . import FleetError

if TYPE_CHECKING:
    import argparse

    from .partials import Partial
    from ..views.difftable import EventTable


def collapse_defaults() -> dict[str, Any]:
    """The folded-stack options of `perfdata collapse` at their defaults (the
    folded stacks `perfdata diff --folded` compares)."""
    import argparse
    from ..views.collapse import add_collapse_options
    p = argparse.ArgumentParser(add_help=False)
    add_collapse_options(p)
    return vars(p.parse_args([]))


def compute_sets(args: argparse.Namespace, kind: str) -> tuple[Partial, Partial]:
    """The merged Partials of --base's and --new's files, both sets reduced
    at once; errors and warnings printed on stderr."""
    from .cluster import dask_client, submit_tree, tree_result
    from .command import file_options, report_problems
    from .paths import expand_paths
    sets = {"base": expand_paths(args.base), "new": expand_paths(args.new)}
    if args.workers is not None and args.workers < 1:
        raise FleetError("--workers must be at least 1")
    options = file_options(args)
    if kind == "collapse":
        options = {**collapse_defaults(), **options}
    with dask_client(args.scheduler, args.workers, args.connect_timeout) as client:
        futures = {name: submit_tree(client, paths, kind, options, name=name)
                   for name, paths in sets.items()}
        results = {name: tree_result(future) for name, future in futures.items()}
    for name, result in results.items():
        report_problems(result, label=name)
    for name, result in results.items():
        if not result.files:
            raise FleetError("--%s: no file could be read (%d skipped)"
                             % (name, len(result.errors)))
    return results["base"], results["new"]


def diff_text(base: dict[str, Any], new: dict[str, Any], args: argparse.Namespace) -> str:
    """perf diff's text of two merged diff Partials' data."""
    from ..views.diff import describe_sections, options_from_args
    from ..views.report.command import split_hist_filters
    keys = base["keys"]
    _, _, elided = split_hist_filters(args)
    shown = [k for k in keys if k not in elided] or keys
    sections: list[tuple[str, list[EventTable | None]]] = []
    for name, match in base["events"].items():
        theirs = next((n for n, m in new["events"].items() if m == match), None)
        sections.append((name, [base["tables"].get(name),
                                new["tables"].get(theirs) if theirs is not None else None]))
    return describe_sections(["base", "new"], sections, keys, shown, options_from_args(args))


def run_diff(args: argparse.Namespace, out: TextIO) -> None:
    from .command import write_output
    from ..views.diff import diff_files
    from ..views.flamegraph_diff import diff_stacks, folded_diff_lines
    diff_files(["base", "new"], args.order)
    if args.folded:
        base, new = compute_sets(args, "collapse")
        write_output(args, out, folded_diff_lines(diff_stacks(
            base.data or {}, new.data or {}, normalize=False)))
        return
    base, new = compute_sets(args, "diff")
    # (compute_sets raised if a set has no file read: there is data)
    write_output(args, out, diff_text(base.data, new.data, args))  # type: ignore[arg-type]


def add_diff_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .command import add_cluster_options
    from ..views.diff import add_diff_options
    from ..views.options import add_symbolize_options
    d = sub.add_parser("diff", help="two sets of files compared, as perf diff (--folded: "
                       "difffolded.pl's three columns)")
    for name, what in (("base", "the baseline (before)"), ("new", "compared with it (after)")):
        d.add_argument("--" + name, nargs="+", required=True, metavar="PATH",
                       help="%s: perf.data files, globs (quoted) or directories" % what)
    d.add_argument("--output", help="write here (default: standard output; -o is perf "
                   "diff's --order)")
    add_cluster_options(d)
    add_diff_options(d)
    add_symbolize_options(d)
    d.set_defaults(func=run_diff)
