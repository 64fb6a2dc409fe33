"""The `perfdata report` command: its options, the samples into a Report
(in one process, where the compiled core counts the -g samples it can, or
in -j workers), perf report's histogram filters and event groups, and
-T's counter values per thread."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from ...format import RecordType as RT, SampleType
from ...resolve import build_sample_symbolizer
from ...run.profile import open_profile, print_warnings
from ...run.progress import sample_progress
from ...run.sharded import add_jobs_argument
from ..collapse import open_output
from ..options import (add_force_argument, add_input_argument, add_symbolize_options,
                       resolve_options)
from .histogram import Report
from .sort_keys import DEFAULT_SORT, VALID_SORT_KEYS, parse_sort

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ...format import PerfFile
    from ...resolve.symbolized import SampleSymbolizer
    from .histogram import HistFilter


def build_report(pf: PerfFile, samples: SampleSymbolizer, sort_keys: list[str],
                 children: bool = False, progress: bool = True,
                 report: Report | None = None) -> Report:
    """The Report of the samples (added to `report` if given: a fault
    mid-file leaves it holding the samples before the fault)."""
    if report is None:
        report = Report(sort_keys, children, sampler=samples)
    from ...core import compiled
    module = compiled()
    if module is not None:
        # (the compiled core counts the -g samples it can: perfdata/core/report.py)
        from ...core.report import ReportCore
        if ReportCore.applies_to(samples, report):
            core = ReportCore(module, samples, report)
            core.fill(sample_progress(core, pf, "report") if progress else None)
            return report
    it = sample_progress(samples, pf, "report") if progress else samples
    ordered = samples.shard is not None
    for sample in it:
        if ordered:
            report.order = samples.ordinal
        report.add(sample)  # type: ignore[arg-type]  # (made without side events)
    return report


# Samples per block of a sharded run (-j).
SHARD_BLOCK = 512


def report_jobs(args: argparse.Namespace, pf: PerfFile, filtered: bool = False) -> int:
    """Worker processes for the table: -j, but one with --stitch (it needs
    the thread's other samples), and by default one where the compiled core
    counts the samples (filtered: a histogram filter is given, which the
    core leaves to the Python path) or the stacks are unwound by DWARF
    (sharded.default_jobs)."""
    from ...run.sharded import default_jobs
    if getattr(args, "stitch", False):
        return 1
    if args.jobs is None and not args.children and not filtered:
        from ...core.report import takes_most_samples
        if takes_most_samples(args, pf):
            return 1        # (a second worker costs more than it saves: see script_jobs)
    return default_jobs(args, pf)


def _report_sharded(args: argparse.Namespace, keys: list[str], jobs: int, pf: PerfFile,
                    hist_filter: Callable[[SampleSymbolizer], HistFilter | None] = lambda s: None
                    ) -> tuple[Report, int]:
    """(Report, lost samples) from `jobs` workers' shares of the samples."""
    from functools import partial

    from ...run.sharded import add_up_parts, compute_part
    report, lost = Report(keys, args.children), 0

    def fill(wpf: PerfFile, samples: SampleSymbolizer, mine: list[Any]) -> None:
        build_report(wpf, samples, keys, children=args.children, progress=False,
                     report=mine[0])
        # Every worker reads every record: each counts all the lost samples.
        mine[1] = samples.lost_samples

    def merge(part: list[Any]) -> None:
        nonlocal lost
        report.merge(part[0])
        lost = part[1]

    # a worker's part: [its Report, the lost samples]
    add_up_parts(pf, jobs, SHARD_BLOCK,
                 partial(compute_part, args.file, resolve_options(args),
                         make=lambda samples: [Report(keys, args.children, sampler=samples,
                                                      hist_filter=hist_filter(samples)), 0],
                         fill=fill),
                 merge)
    events = {ea.index: ea for ea in pf.attrs}
    for hist in report.hists.values():
        hist.event = events.get(hist.event.index, hist.event)
    return report, lost


_HIST_FILTER_ARGS = ("pid", "tid", "comm", "dsos", "symbols")


def split_hist_filters(args: argparse.Namespace
                       ) -> tuple[argparse.Namespace, Callable[[SampleSymbolizer], HistFilter | None],
                                  dict[str, str]]:
    """perf report's filters by thread, comm, dso and symbol leave a sample
    in its event's totals (HIST_FILTER_*), where -C and --time drop it:
    (the arguments for the sample stream, without the first kind; a
    function of a run's SampleSymbolizer giving the Report's hist_filter,
    or None; {sort key: the one name its filter list gave} for the elided
    columns)."""
    import argparse as _argparse
    from ...resolve.filters import hist_filter_of
    from ..options import name_list, option_value, symbol_list
    stream_args = _argparse.Namespace(**vars(args))
    for name in _HIST_FILTER_ARGS:
        setattr(stream_args, name, None)
    hist_filter = hist_filter_of(resolve_options(args))

    lists: dict[str, set[str]] = {}
    if args.comm is not None:
        lists["comm"] = set(option_value(args.comm, name_list))
    if getattr(args, "dsos", None) is not None:
        lists["dso"] = set(option_value(args.dsos, name_list))
    if getattr(args, "symbols", None) is not None:
        # (-S: names and addresses; an address echoed as perf echoes a
        # hexadecimal entry written without 0x)
        names, addrs = option_value(args.symbols, symbol_list)
        lists["sym"] = set(names) | {"%x" % a for a in addrs}
    elided = {key: next(iter(given)) for key, given in lists.items() if len(given) == 1}
    return stream_args, hist_filter, elided


def event_groups(pf: PerfFile, group: bool | None = None
                 ) -> dict[int, tuple[str | None, list[int]]]:
    """{leader's index: (group name, the members' indexes)} from the
    GROUP_DESC feature, as perf's process_group_desc() rebuilds the groups
    (a leader's next nr_members - 1 events are its members; "{anon_group}"
    is printed "anon group"); groups of one event are none.  group: perf
    report's --group (True: a file without groups has its events put in one
    under the first, evlist__force_leader(), named None) or --no-group
    (False: none)."""
    from ...format import Feature
    attrs = list(pf.attrs)
    if group is False:
        return {}
    try:
        descs = pf.feature(Feature.GROUP_DESC) or []
    except Exception:       # a damaged section: no groups, as perf's reading fails
        descs = []
    groups: dict[int, tuple[str | None, list[int]]] = {}
    for desc in descs:
        try:
            leader, nr = int(desc["leader_idx"]), int(desc["nr_members"])
            name = str(desc["name"])
        except (KeyError, TypeError, ValueError):
            continue
        if nr > 1 and 0 <= leader < len(attrs) and leader + nr <= len(attrs):
            groups[attrs[leader].index] = (
                "anon group" if name == "{anon_group}" else name,
                [attrs[i].index for i in range(leader + 1, leader + nr)])
    if group and not groups and len(attrs) > 1:
        groups[attrs[0].index] = (None, [ea.index for ea in attrs[1:]])
    return groups


def run(args: argparse.Namespace, out: TextIO) -> None:
    keys = parse_sort(args.sort)
    args, hist_filter, elided = split_hist_filters(args)
    stream, close = open_output(args.output, out)
    if args.call_graph != "none":
        sys.stderr.write("perfdata: note: report prints the flat table only (as -g none); "
                         "see perfdata flamegraph for the call graph\n")
    pf = open_profile(args.file, getattr(args, "strict", False))
    if args.children and not any(ea.sample_type & SampleType.CALLCHAIN for ea in pf.attrs):
        # perf's report__setup_sample_type(): --children is silently dropped
        # when no event has callchains (one Overhead column, not two)
        args.children = False
    samples = build_sample_symbolizer(pf, resolve_options(args))
    jobs = report_jobs(args, pf, hist_filter(samples) is not None)
    if jobs > 1:
        pf.resolve_event_names()
        report, lost = _report_sharded(args, keys, jobs, pf, hist_filter)
    else:
        try:
            report = build_report(pf, samples, keys, children=args.children,
                                  report=Report(keys, args.children, sampler=samples,
                                                hist_filter=hist_filter(samples)))
        finally:
            print_warnings(pf, samples.symbolizer.warnings)
        lost = samples.lost_samples
    text = report.describe(pf.attrs, lost=lost, show_nr_samples=args.show_nr_samples,
                           quiet=args.quiet, percent_limit=args.percent_limit, elided=elided,
                           groups=event_groups(pf, args.group),
                           # (--no-group sets perf's group_set: the events are
                           # grouped, a forced leader if need be, but shown
                           # apart, a leader's header saying "of events")
                           leaders=set(event_groups(pf, True)) if args.group is False
                           else None)
    if args.threads:
        text += thread_values(pf)
    try:
        stream.write(text)
    finally:
        if close:
            stream.close()


def thread_values(pf: PerfFile) -> str:
    """perf report -T (--threads): the counter values of the file's READ
    records (perf record -s, inherit_stat: a thread's count when it exits),
    as perf_read_values__display_pretty() prints them after the table: a
    row per pid/tid in the order of their first record (perf's time order),
    a column per event in the order of its first record, values of one
    thread and event added up, 0 where a thread has none; the widths those
    of the longest number or name (at least 3 for PID and TID).  The value
    is the record's first word (perf's event->read.value)."""
    threads: dict[tuple[int, int], dict[int, int]] = {}
    counters: dict[int, str] = {}
    for rec in pf.records(order="time"):
        if rec.type != RT.READ:
            continue
        fields = rec.parse()
        attr = rec.attr or (pf.attrs[0] if pf.attrs else None)
        if attr is None:
            continue
        key = (_pid_t(fields["pid"]), _pid_t(fields["tid"]))
        values = fields["values"]
        value = next(iter(values.values()), 0) if isinstance(values, dict) else 0
        counters.setdefault(attr.index, attr.name)
        row = threads.setdefault(key, {})
        row[attr.index] = (row.get(attr.index, 0) + value) % (1 << 64)
    pid_w = max([3] + [len(str(p)) for p, _ in threads])
    tid_w = max([3] + [len(str(t)) for _, t in threads])
    widths = {i: max([len(name)] + [len(str(row.get(i, 0))) for row in threads.values()])
              for i, name in counters.items()}
    out = ["# %*s  %*s" % (pid_w, "PID", tid_w, "TID")
           + "".join("  %*s" % (widths[i], name) for i, name in counters.items()) + "\n"]
    for (pid, tid), row in threads.items():
        out.append("  %*d  %*d" % (pid_w, pid, tid_w, tid)
                   + "".join("  %*d" % (widths[i], row.get(i, 0)) for i in counters) + "\n")
    return "".join(out)


def _pid_t(value: int) -> int:
    """A u32 pid or tid as perf prints it (%d)."""
    return value - (1 << 32) if value >= 1 << 31 else value



def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("report", help="overhead table, as perf report --stdio")
    add_input_argument(p)
    add_force_argument(p)
    p.add_argument("-o", "--output", help="write here (default: standard output)")
    add_report_options(p)
    p.add_argument("-T", "--threads", action="store_true",
                   help="after the table, the counter values per thread of a file "
                        "recorded with perf record -s (its READ records)")
    add_jobs_argument(p)
    add_symbolize_options(p)
    p.set_defaults(func=run)


def add_report_options(p: argparse.ArgumentParser) -> None:
    """The table's options (also those of `perfdata fleet report`)."""
    p.add_argument("-s", "--sort", default=DEFAULT_SORT,
                   help="sort keys: %s (default %s)" % (",".join(VALID_SORT_KEYS), DEFAULT_SORT))
    # (both may be given, as to perf: the last one wins)
    p.add_argument("--children", action="store_true",
                   help="add inclusive time (perf report --children)")
    p.add_argument("--no-children", dest="children", action="store_false",
                   help="self time only (the default, as --no-children)")
    p.add_argument("-n", "--show-nr-samples", action="store_true",
                   help="a column of each entry's sample count")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="the rows only: no comment lines")
    p.add_argument("--percent-limit", type=_percent, default=0.0, metavar="PCT",
                   help="leave out entries below PCT%% (of the children time with --children)")
    # (perf's OPT_BOOLEAN_SET: without either, a file's own groups are shown
    # together, symbol_conf.event_group's default)
    p.add_argument("--group", action="store_true", default=None,
                   help="show the events of a group together (the default for a file "
                        "with groups; without groups: all events in one table)")
    p.add_argument("--no-group", dest="group", action="store_false",
                   help="a table per event, also for an event group")
    p.add_argument("--stdio", action="store_true", help=argparse_suppress())
    # perf's -g: only the flat table is printed, so only `-g none` is meaningful.
    p.add_argument("-g", "--call-graph", nargs="?", const="graph", default="none",
                   type=call_graph, help=argparse_suppress())


# __parse_callchain_report_opt()'s words, each taken by any prefix of it.
_CALL_GRAPH_WORDS = ("graph", "flat", "fractal", "folded", "callee", "caller", "function",
                     "address", "percent", "period", "count")


def call_graph(text: str) -> str:
    """perf report's -g as perf 6.1 checks it (__parse_callchain_report_opt):
    comma-separated tokens, each a prefix of a mode, order, sort key or value
    word, or a number (the threshold, strtod, then print limits, strtoul:
    whatever follows the number's start is ignored); a prefix of `none`
    ends the list and turns the call graph off ("none" here).  Anything
    else is refused, as perf refuses it (its usage text, exit 129)."""
    import argparse
    import re
    numbers = 0
    for tok in text.split(","):
        if not tok:
            continue
        if "none".startswith(tok):
            return "none"
        if any(word.startswith(tok) for word in _CALL_GRAPH_WORDS):
            continue
        number = r"[ \t\n\v\f\r]*[-+]?(\d|\.\d|inf|nan)" if not numbers else \
            r"[ \t\n\v\f\r]*[-+]?\d"
        if re.match(number, tok, re.IGNORECASE) is None:
            raise argparse.ArgumentTypeError("invalid call graph option %r in %r (perf's: "
                                             "print_type,threshold[,print_limit],order,"
                                             "sort_key[,branch],value)" % (tok, text))
        numbers += 1
    return text


def _percent(text: str) -> float:
    """--percent-limit's value: perf reads it with strtof (a number, or 0)."""
    import re
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(m.group(0)) if m else 0.0


def argparse_suppress() -> str:
    import argparse
    return argparse.SUPPRESS
