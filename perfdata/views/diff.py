"""`perfdata diff BASE NEW [NEW...]`: two or more profiles compared, as `perf
diff` prints them (perf 6.1, --stdio).

The same table and the same options as perf diff's that shape it: the sort
keys (-s, `dso,sym` by default), the computation (-c delta-abs, the default,
delta, ratio, wdiff:W1,W2), the file whose column sorts first (-o), the
periods (-p) and formulas (-F), --baseline-only (-b), --percentage, the
filters (-d, -C, -S, --pid, --tid, --cpu, --time) and -q.  Each file is
symbolized with its own binaries and debug info (found by build-id), so
two builds of a program pair by function name, and frames perf leaves
without a symbol are named here.  `--folded` prints difffolded.pl's three
columns (stack, BASE's count, NEW's count) instead, for FlameGraph's tools.
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from .difftable import DiffOptions, DiffTable, event_tables, matching_event
from .errors import CommandError
from ..resolve import build_sample_symbolizer
from ..run.profile import open_profile, print_warnings
from .options import add_force_argument, add_symbolize_options, name_list, resolve_options

if TYPE_CHECKING:
    from ..format import PerfFile
    from ..resolve.symbolized import SampleSymbolizer
    from .difftable import EventTable

DEFAULT_SORT = "dso,sym"
# perf diff's files when none or one is given
DEFAULT_FILES = ("perf.data.old", "perf.data")
COMPUTE_METHODS = ("delta", "delta-abs", "ratio", "wdiff")


def compute_method(text: str) -> tuple[str, tuple[int, int]]:
    """-c as perf's setup_compute() reads it: a method, `wdiff:W1,W2` with
    two weights strtol reads as non-zero; (method, (w1, w2))."""
    name, colon, extra = text.partition(":")
    if name not in COMPUTE_METHODS:
        if name == "cycles":
            raise argparse.ArgumentTypeError("'cycles' needs branch stacks (perf record -b), "
                                             "which perfdata diff does not read")
        raise argparse.ArgumentTypeError("'%s' is not computation method (use 'delta',"
                                         "'ratio' or 'wdiff')" % text)
    if name != "wdiff":
        if colon:
            raise argparse.ArgumentTypeError("extra option specified '%s'" % extra)
        return name, (1, 1)
    w1, comma, w2 = extra.partition(",")
    weights = (_strtol_prefix(w1), _strtol_prefix(w2))
    if not colon or not comma or not w2 or not all(weights):
        raise argparse.ArgumentTypeError("wrong weight data, use 'wdiff:w1,w2'")
    return name, weights


def _strtol_prefix(text: str) -> int:
    """C's strtol(text, NULL, 10): the leading number, 0 if none."""
    import re
    m = re.match(r"[ \t\n\v\f\r]*([-+]?\d+)", text)
    return int(m.group(1)) if m else 0


def percentage(text: str) -> str:
    """--percentage as perf's parse_filter_percentage() takes it."""
    if text not in ("relative", "absolute"):
        raise argparse.ArgumentTypeError("invalid percentage %r (relative or absolute)" % text)
    return text


def diff_files(files: list[str], order: int) -> list[str]:
    """The files perf diff reads (data_init()): none given, perf.data.old
    and perf.data; one, perf.data.old and it; the order checked."""
    if not files:
        files = list(DEFAULT_FILES)
    elif len(files) == 1:
        files = [DEFAULT_FILES[0], files[0]]
    if order >= len(files):
        raise CommandError("Order option out of limit (-o %d: %d files)" % (order, len(files)))
    return files


def options_from_args(args: argparse.Namespace) -> DiffOptions:
    compute, weights = args.compute
    return DiffOptions(compute=compute, weights=weights, order=args.order,
                       show_period=args.period, show_formula=args.formula,
                       baseline_only=args.baseline_only, quiet=args.quiet,
                       relative=args.percentage == "relative",
                       dso_filtered=args.dsos is not None)


def read_tables(path: str, args: argparse.Namespace, keys: list[str]
                ) -> tuple[PerfFile, dict[int, EventTable]]:
    """One file's events, symbolized with its own binaries: (PerfFile,
    {event index: EventTable})."""
    from .report.command import split_hist_filters
    file_args = argparse.Namespace(**vars(args))
    file_args.file = path
    stream_args, _, _ = split_hist_filters(file_args)
    pf = open_profile(path, getattr(args, "strict", False))
    samples = build_sample_symbolizer(pf, resolve_options(stream_args))
    try:
        tables = file_tables(pf, samples, file_args, keys)
    finally:
        print_warnings(pf, samples.symbolizer.warnings)
    return pf, tables


def file_tables(pf: PerfFile, samples: SampleSymbolizer, args: argparse.Namespace,
                keys: list[str], progress: bool = True) -> dict[int, EventTable]:
    """{event index: EventTable} of a file's samples (`samples` made with
    the stream's arguments split_hist_filters gives: perf's filters by
    thread, comm, dso and symbol leave a sample in its event's total)."""
    from .report.command import build_report, split_hist_filters
    from .report.histogram import Report
    _, hist_filter, _ = split_hist_filters(args)
    report = build_report(pf, samples, keys, progress=progress, report=Report(
        keys, False, sampler=samples, hist_filter=hist_filter(samples)))
    return event_tables(report)


def describe_diff(paths: list[str], files: list[tuple[PerfFile, dict[int, EventTable]]],
                  keys: list[str], shown: list[str], opts: DiffOptions) -> str:
    """perf diff's text: a section per event of the baseline (data_process())."""
    sections = []
    base_pf = files[0][0]
    for ea in base_pf.attrs:
        tables: list[EventTable | None] = [files[0][1].get(ea.index)]
        for pf, by_index in files[1:]:
            match = matching_event(ea, list(pf.attrs))
            tables.append(by_index.get(match.index) if match is not None else None)
        sections.append((ea.name, tables))
    return describe_sections(paths, sections, keys, shown, opts)


def describe_sections(paths: list[str], sections: list[tuple[str, list[EventTable | None]]],
                      keys: list[str], shown: list[str], opts: DiffOptions) -> str:
    """perf diff's text of (event name, [its table in each file]) sections."""
    out: list[str] = []
    for name, tables in sections:
        if not opts.quiet:
            out.append("%s# Event '%s'\n#\n" % ("\n" if out else "", name))
            if len(paths) > 2:
                out.append("# Data files:\n")
                out.extend("#  [%d] %s %s\n" % (i, p, "(Baseline)" if i == 0 else "")
                           for i, p in enumerate(paths))
                out.append("#\n")
        out.extend(DiffTable(keys, tables, opts).describe(shown))
    return "".join(out)


def run(args: argparse.Namespace, out: TextIO) -> None:
    from .report.command import split_hist_filters
    from .report.sort_keys import parse_sort
    paths = diff_files(args.files, args.order)
    if args.folded:
        from .flamegraph_diff import write_folded_diff
        if len(paths) != 2:
            raise CommandError("--folded compares two files (BASE NEW), not %d" % len(paths))
        write_folded_diff(args, paths, out)
        return
    keys = parse_sort(args.sort or DEFAULT_SORT)
    opts = options_from_args(args)
    _, _, elided = split_hist_filters(args)
    shown = [k for k in keys if k not in elided] or keys
    files = [read_tables(path, args, keys) for path in paths]
    for pf, _ in files:
        pf.resolve_event_names()
    out.write(describe_diff(paths, files, keys, shown, opts))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("diff", help="profiles compared, as perf diff (--folded: "
                              "difffolded.pl's three columns)")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="BASE NEW [NEW...] (default: perf.data.old perf.data; one FILE: "
                        "perf.data.old and FILE)")
    add_diff_options(p)
    add_symbolize_options(p)
    p.set_defaults(func=run)


def add_diff_options(p: argparse.ArgumentParser) -> None:
    """perf diff's options that shape the table, and --folded (`perfdata
    diff` and `perfdata fleet diff`)."""
    add_force_argument(p)
    p.add_argument("-c", "--compute", type=compute_method, default=("delta-abs", (1, 1)),
                   metavar="delta|delta-abs|ratio|wdiff:W1,W2",
                   help="the column computed for each NEW file (default delta-abs: the "
                        "change of share, sorted by its size)")
    p.add_argument("-o", "--order", type=_order, default=1, metavar="N",
                   help="sort by the computed column of file N first (0: by the baseline)")
    p.add_argument("-p", "--period", action="store_true", help="the period columns too")
    p.add_argument("-F", "--formula", action="store_true", help="the formula of each value")
    p.add_argument("-b", "--baseline-only", action="store_true",
                   help="only the entries the baseline has and a NEW file has too")
    p.add_argument("-q", "--quiet", action="store_true", help="the rows only")
    p.add_argument("-s", "--sort", default=DEFAULT_SORT,
                   help="sort keys: dso, sym, comm, pid, cpu (default %s)" % DEFAULT_SORT)
    p.add_argument("--percentage", type=percentage, default="absolute",
                   metavar="relative|absolute",
                   help="with filters: shares of what the filters keep (relative) or of "
                        "every sample (absolute, the default)")
    p.add_argument("-C", "--comms", dest="comm", type=name_list, metavar="COMM[,COMM]",
                   help="only these comms")
    p.add_argument("-d", dest="dsos", type=name_list, metavar="DSO[,DSO]",
                   help="only these dsos (as --dsos)")
    p.add_argument("--folded", action="store_true",
                   help="print difffolded.pl's three columns (stack, BASE's count, NEW's "
                        "count) of the folded stacks of `perfdata collapse`")


def _order(text: str) -> int:
    """-o as perf's OPT_UINTEGER reads it."""
    from .options import perf_uinteger
    return perf_uinteger(text)
