"""One profile -> a partial result, two partials -> one: the work a fleet
command gives its Dask workers (plain functions and picklable data; no Dask
here, so they can be tested and timed alone).

Each file is read exactly as the single-file command reads it (the same
options, the same view code); its result is kept in a form that adds up:
collapse  {folded stack: count}
flamegraph {(frame, ...): self weight} with each frame's kind and dso, and
           the event drawn
report    per event: samples, event count and the histogram entries with
           their self/children periods and sample counts; lost samples; the
           event groups (GROUP_DESC, --group), by event name
diff      per event name: perf diff's table of the file (views/difftable.py's
           EventTable: each key's period, the event's totals), and the
           event's type and config (matched across the sets by these)
so `fleet collapse` over files is the sum of `collapse` over each.
"""
from __future__ import annotations

import argparse
import io
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Iterable, TextIO

if TYPE_CHECKING:
    from ..format import PerfFile
    from ..resolve.symbolized import SampleSymbolizer
    from ..run.folded import CollapseOptions
    from ..views.flamegraph.tree import Node
    # a flame graph stack: (name, kind, dso) of each frame, outermost first
    FramePath = tuple[tuple[str, str, str | None], ...]


class Partial:
    """What some files added up to, and what went wrong with the others."""
    __slots__ = ("kind", "data", "files", "samples", "errors", "warnings")

    def __init__(self, kind: str, data: dict[str, Any] | None = None, files: int = 0,
                 samples: int = 0, errors: Iterable[tuple[str, str]] = (),
                 warnings: Iterable[tuple[str, str]] = ()) -> None:
        self.kind = kind
        self.data = data
        self.files = files                  # files read
        self.samples = samples              # samples symbolized in them
        self.errors = list(errors)          # [(path, message)] of the files skipped
        self.warnings = list(warnings)      # [(path, message)]

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)


# ------------------------------------------------------------------ per file

def _collapse(pf: PerfFile, samples: SampleSymbolizer, args: argparse.Namespace,
              notes: TextIO) -> dict[str, int]:
    from ..views.collapse import collapse_samples, options_from_args
    # (made without side events: its items are samples)
    return collapse_samples(samples, options_from_args(args), note_stream=notes)  # type: ignore[arg-type]


def flame_options(args: argparse.Namespace) -> CollapseOptions:
    from ..run.folded import CollapseOptions
    return CollapseOptions(pid=args.pid_root, tid=args.tid_root, kernel=False,
                           event_filter=args.event_filter)


def _flamegraph(pf: PerfFile, samples: SampleSymbolizer, args: argparse.Namespace,
                notes: TextIO) -> dict[str, Any]:
    from ..views.flamegraph.tree import FlameGraphBuilder
    builder = FlameGraphBuilder(args.weight, flame_options(args), note_stream=notes)
    for sample in samples:
        builder.add(sample)  # type: ignore[arg-type]  # (made without side events)
    paths: dict[FramePath, int] = {}
    todo: list[tuple[Node, FramePath]] = [(child, ()) for child in builder.root.children.values()]
    while todo:
        node, above = todo.pop()
        path = above + ((node.name, node.kind, node.dso),)
        if node.self_value:
            paths[path] = node.self_value
        todo.extend((child, path) for child in node.children.values())
    return {"paths": paths, "events": [builder.event_name] if builder.event_name else []}


def _report(pf: PerfFile, samples: SampleSymbolizer, args: argparse.Namespace,
            notes: TextIO) -> dict[str, Any]:
    from ..views.report.command import build_report, event_groups
    from ..views.report.sort_keys import parse_sort
    report = build_report(pf, samples, parse_sort(args.sort), children=args.children,
                          progress=False)
    group = getattr(args, "group", None)
    names = {ea.index: ea.name for ea in pf.attrs}
    # by event name, as the tables are: {leader: [group name, members]}
    groups = {names[leader]: [name, [names[m] for m in members]]
              for leader, (name, members) in event_groups(pf, group).items()}
    # the leaders --no-group shows apart (their header says "of events")
    apart = [names[leader] for leader in event_groups(pf, True)] if group is False else []
    events = {}
    for ea in pf.attrs:
        hist = report.hists.get(ea.index)
        if hist is None or hist.event.name in events:
            continue
        entries = {}
        for key, e in hist.entries.items():
            comm = e.thread.comm if e.thread is not None else ""
            entries[key] = [e.self_period, e.children, e.samples, e.unresolved, e.level,
                            e.key, comm]
        events[hist.event.name] = [hist.samples, hist.total_period, entries]
    return {"events": events, "lost": samples.lost_samples, "groups": groups,
            "apart": apart}


def _diff(pf: PerfFile, samples: SampleSymbolizer, args: argparse.Namespace,
          notes: TextIO) -> dict[str, Any]:
    from ..views.diff import file_tables
    from ..views.report.sort_keys import parse_sort
    keys = parse_sort(args.sort)
    tables = file_tables(pf, samples, args, keys, progress=False)
    pf.resolve_event_names()
    events: dict[str, tuple[int, int]] = {}
    by_name = {}
    for ea in pf.attrs:
        if ea.name in events:
            continue
        # (an event of the other set matches by type and config, as
        # perf diff's evsel__match2())
        events[ea.name] = (ea.attr["type"], ea.attr["config"])
        if ea.index in tables:
            by_name[ea.name] = tables[ea.index]
    return {"events": events, "tables": by_name, "keys": keys}


COMPUTE = {"collapse": _collapse, "flamegraph": _flamegraph, "report": _report, "diff": _diff}


def _stream_args(kind: str, args: argparse.Namespace) -> argparse.Namespace:
    """The arguments the samples are read with: diff's filters by thread,
    comm, dso and symbol choose its table's entries, the samples they leave
    out still count in the totals (perf diff's hist filters)."""
    if kind != "diff":
        return args
    from ..views.report.command import split_hist_filters
    return split_hist_filters(args)[0]


def _describe(exc: Exception) -> str:
    from ..format import PerfDataError
    if isinstance(exc, PerfDataError):
        return exc.describe()
    if isinstance(exc, OSError):
        return "%s%s" % (exc.strerror or exc, ": " + exc.filename if exc.filename else "")
    return "internal error: %s: %s" % (type(exc).__name__, exc)


def file_partial(path: str, kind: str, options: dict[str, Any]) -> Partial:
    """The Partial of one profile: `options` are the command's parsed
    arguments (a dict).  The archive given by --archive, else FILE.tar.zst
    beside the file, is unpacked for this file and removed after."""
    from ..buildid_archive import extract_archive
    from ..format import PerfFile
    from ..resolve import build_sample_symbolizer
    from ..views.options import resolve_options
    from .paths import archive_beside
    args = argparse.Namespace(**options)
    args.file = path
    archive = args.archive or archive_beside(path)
    args.archive = None
    unpacked = None
    try:
        if archive:
            unpacked = tempfile.mkdtemp(prefix="perfdata-fleet-")
            top = extract_archive(archive, unpacked)
            args.debug_dir = [top] + list(args.debug_dir)
            args.buildid_dir = args.buildid_dir or top
        notes = io.StringIO()
        with PerfFile(path, strict=args.strict) as pf:
            samples = build_sample_symbolizer(pf, resolve_options(_stream_args(kind, args)))
            data = COMPUTE[kind](pf, samples, args, notes)
            messages = list(pf.warnings) + list(samples.symbolizer.warnings)
            count = samples.counts.get("samples", 0)
    except Exception as exc:        # one bad file is reported, the others go on
        return Partial(kind, errors=[(path, _describe(exc))])
    finally:
        if unpacked:
            shutil.rmtree(unpacked, ignore_errors=True)
    messages += [line[len("perfdata: note: "):] if line.startswith("perfdata: note: ")
                 else line for line in notes.getvalue().splitlines()]
    seen = set()
    # (set.add gives None: the test keeps each message's first)
    warnings = [(path, m) for m in messages
                if not (m in seen or seen.add(m))]  # type: ignore[func-returns-value]
    return Partial(kind, data, files=1, samples=count, warnings=warnings)


# ------------------------------------------------------------------ merging

def _add_counts(a: dict[Any, int], b: dict[Any, int]) -> dict[Any, int]:
    if len(a) < len(b):
        a, b = b, a
    out = dict(a)
    for key, n in b.items():
        out[key] = out.get(key, 0) + n
    return out


def _merge_collapse(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return _add_counts(a, b)


def _merge_flamegraph(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    events = list(a["events"]) + [e for e in b["events"] if e not in a["events"]]
    return {"paths": _add_counts(a["paths"], b["paths"]), "events": events}


def _merge_report(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    events = {name: [v[0], v[1], dict(v[2])] for name, v in a["events"].items()}
    for name, (nsamples, total, entries) in b["events"].items():
        mine = events.get(name)
        if mine is None:
            events[name] = [nsamples, total, dict(entries)]
            continue
        mine[0] += nsamples
        mine[1] += total
        table = mine[2]
        for key, e in entries.items():
            have = table.get(key)
            if have is None:
                table[key] = e
            else:
                table[key] = [have[0] + e[0], have[1] + e[1], have[2] + e[2]] + have[3:]
    return {"events": events, "lost": a["lost"] + b["lost"],
            "groups": _merge_groups(a.get("groups", {}), b.get("groups", {})),
            "apart": list(a.get("apart", [])) + [e for e in b.get("apart", [])
                                                  if e not in a.get("apart", [])]}


def _merge_groups(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The groups of two partials, by leader: a leader that two files group
    differently leads no group (None: its events' tables shown apart), one
    grouped in one file only keeps its group (the other file's samples of
    those events count in its columns)."""
    out = dict(a)
    for leader, group in b.items():
        if leader not in out:
            out[leader] = group
        elif out[leader] != group:
            out[leader] = None
    return out


def _merge_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    from ..views.difftable import sym_place
    events = dict(a["events"])
    for name, match in b["events"].items():
        events.setdefault(name, match)
    tables = dict(a["tables"])
    for name, table in b["tables"].items():
        mine = tables.get(name)
        tables[name] = table if mine is None else mine.merged(table, sym_place(a["keys"]))
    return {"events": events, "tables": tables, "keys": a["keys"]}


MERGE = {"collapse": _merge_collapse, "flamegraph": _merge_flamegraph, "report": _merge_report,
         "diff": _merge_diff}


def merge_partials(*parts: Partial) -> Partial:
    """One Partial of several (their files' results added; errors and
    warnings kept in order).  A new object: the inputs are not changed."""
    out = Partial(parts[0].kind)
    for part in parts:
        if part.data is not None:
            out.data = part.data if out.data is None else MERGE[part.kind](out.data, part.data)
        out.files += part.files
        out.samples += part.samples
        out.errors.extend(part.errors)
        out.warnings.extend(part.warnings)
    return out
