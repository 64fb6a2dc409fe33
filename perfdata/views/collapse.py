"""`perfdata collapse`: Brendan Gregg's folded stacks (`comm;root;...;leaf count`).

The output is what FlameGraph's stackcollapse-perf.pl prints when it reads
`perf script` output of the same stacks, with its default options:

* the root of each stack is the comm (spaces as `_`), or `comm-pid` with
  `--pid`, `comm-pid/tid` with `--tid`;
* a frame is the symbol as perf prints it (C++ without parameters), offsets
  dropped, `;` turned into `:`, everything from the first `(` on dropped
  (unless it opens `(anonymous namespace)` or the name looks like a Go method
  `pkg.(*T).M`), quotes removed;
* a frame without a symbol is `[dso basename]`, or `[unknown]` when the dso
  is unknown too; `--addrs` adds the address: `[libc.so.6 <7fa3c2>]`;
* `--kernel` appends `_[k]` to frames whose dso starts with `[` (which, as in
  the script, includes `[vdso]`) or ends in `vmlinux`; `--jit` appends `_[j]`
  to frames of `/tmp/perf-PID.map`;
* the count is the sum of the samples' periods, because `perf script` prints
  the period by default and the script sums what it finds there (1 for a
  sample without a period, and for tracepoints); `--samples` counts samples;
* only the first event seen is kept (the script's default event filter),
  `--event-filter NAME` picks another; tracepoint samples are never filtered
  (their header line has no period field, so the script does not see their
  event);
* lines are sorted as strings.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from .errors import CommandError
from .options import SampleRun, add_stack_command
from ..run.folded import CollapseOptions, EventFilter, root_name, sample_weight, stack_names

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Iterator, Sequence

    from ..format import PerfFile
    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample


def collapse_samples(samples: Iterable[SymbolizedSample], opts: CollapseOptions,
                     note_stream: TextIO | None = None, counts: dict[str, int] | None = None,
                     events: EventFilter | None = None) -> dict[str, int]:
    """{folded stack: count} of an iterable of SymbolizedSamples (added to
    `counts` as they come, so a fault mid-file keeps what went before).
    events: the event filter, where another counter (the compiled core)
    shares it."""
    if counts is None:
        counts = {}
    cache: dict[tuple[int, str], tuple[Sequence[StackFrame], str]] = {}
    if events is None:
        events = EventFilter(opts.event_filter, note_stream)
    for sample in samples:
        if not events.keep(sample.event):
            continue
        frames = sample.frames
        root = root_name(sample, opts)
        key = (id(frames), root)
        hit = cache.get(key)
        if hit is not None and hit[0] is frames:
            text = hit[1]
        else:
            names = stack_names(frames, opts, java=root.startswith("java"))
            text = ";".join([root] + names)
            if len(cache) > 100000:
                cache.clear()
            cache[key] = (frames, text)
        counts[text] = counts.get(text, 0) + sample_weight(sample, opts.weight)
    return counts


def folded_lines(counts: dict[str, int]) -> list[str]:
    return ["%s %d\n" % (k, counts[k]) for k in sorted(counts)]


def options_from_args(args: argparse.Namespace) -> CollapseOptions:
    return CollapseOptions(pid=args.pid_root, tid=args.tid_root, addrs=args.addrs,
                           kernel=args.kernel or args.all, jit=args.jit or args.all,
                           weight="samples" if args.samples else "period",
                           event_filter=args.event_filter)


def open_output(path: str | None, out: TextIO) -> tuple[TextIO, bool]:
    """(stream, whether to close it): `out` for None or '-', else the file;
    CommandError when it cannot be written."""
    if path is None or path == "-":
        return out, False
    try:
        return open(path, "w", encoding="utf-8", errors="replace"), True
    except OSError as exc:
        raise CommandError("%s: %s" % (path, exc.strerror or exc))


def run(args: argparse.Namespace, out: TextIO) -> None:
    from .collapse import open_output
    stream, close = open_output(args.output, out)
    opts = options_from_args(args)
    counts: dict[str, int] = {}
    try:
        run_ = SampleRun(args, "collapse")
        jobs = collapse_jobs(args, run_.pf, opts.event_filter)
        if jobs > 1:
            _collapse_sharded(args, opts, jobs, run_.pf, counts)
        else:
            events = EventFilter(opts.event_filter, sys.stderr)
            collapse_samples(_collapse_items(run_, opts, events, counts), opts,
                             note_stream=sys.stderr, counts=counts, events=events)
    finally:
        # What was decoded before a fault is written too.
        try:
            stream.writelines(folded_lines(counts))
        finally:
            if close:
                stream.close()


def _collapse_items(run_: SampleRun, opts: CollapseOptions, events: EventFilter,
                    counts: dict[str, int]) -> Iterable[SymbolizedSample]:
    """The run's samples; where the compiled core is built (perfdata.core)
    and the options leave samples to it, it counts those into `counts`
    itself and these are the others."""
    from ..core import compiled
    module = compiled()
    if module is None:
        return run_
    from ..core.collapse import CollapseCore
    if not CollapseCore.applies_to(run_.samples, opts):
        return run_
    core = CollapseCore(module, run_.samples, opts, events, counts)

    def items() -> Iterator[SymbolizedSample]:
        from ..run.profile import print_warnings
        from ..run.progress import sample_progress
        try:
            yield from sample_progress(core, run_.pf, run_.label)
        finally:
            print_warnings(run_.pf, run_.samples.symbolizer.warnings)
    return items()


# Samples per block of a sharded run (-j).
SHARD_BLOCK = 512


def collapse_jobs(args: argparse.Namespace, pf: PerfFile, event_filter: str | None) -> int:
    """Worker processes for collapse (and flamegraph): -j, but one where the
    counted event is the first one seen (no --event-filter and several
    non-tracepoint events: only the whole file's order says which), and by
    default where the compiled core counts or the stacks are unwound by
    DWARF (sharded.default_jobs)."""
    from ..run.sharded import default_jobs, event_names
    if getattr(args, "stitch", False):
        return 1
    if args.jobs is None and not getattr(args, "addrs", False):
        from ..core.script import takes_most_samples
        if takes_most_samples(args, pf):
            return 1        # (the compiled core counts the samples: see script_jobs)
    if event_filter is None and len(event_names(pf, tracepoints=False)) > 1:
        return 1
    return default_jobs(args, pf)


def _collapse_sharded(args: argparse.Namespace, opts: CollapseOptions, jobs: int,
                      pf: PerfFile, counts: dict[str, int]) -> None:
    """collapse_samples over `jobs` workers' shares of the samples, added up
    into counts (the folded lines are sorted: the sum is the same text)."""
    from functools import partial

    from ..run.sharded import add_up_parts, compute_part
    from .options import resolve_options

    def fill(wpf: PerfFile, samples: SampleSymbolizer, mine: dict[str, int]) -> None:
        # (made without side events: its items are samples)
        collapse_samples(samples, opts, counts=mine)  # type: ignore[arg-type]

    def merge(part: dict[str, int]) -> None:
        for key, n in part.items():
            counts[key] = counts.get(key, 0) + n

    add_up_parts(pf, jobs, SHARD_BLOCK, partial(compute_part, args.file, resolve_options(args),
                                              make=lambda _: {}, fill=fill),
                 merge)


def add_collapse_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("folded stacks (stackcollapse-perf.pl's options)")
    # --pid/--tid are the shared sample filters; the script's root flags are these.
    g.add_argument("--pid-root", "--with-pid", dest="pid_root", action="store_true",
                   help="root each stack at comm-pid (stackcollapse-perf.pl --pid)")
    g.add_argument("--tid-root", "--with-tid", dest="tid_root", action="store_true",
                   help="root each stack at comm-pid/tid (stackcollapse-perf.pl --tid)")
    g.add_argument("--addrs", action="store_true",
                   help="add the address to frames without a symbol")
    g.add_argument("--kernel", action="store_true", help="annotate kernel frames with _[k]")
    g.add_argument("--jit", action="store_true", help="annotate JIT frames with _[j]")
    g.add_argument("--all", action="store_true", help="--kernel and --jit")
    g.add_argument("--event-filter", metavar="EVENT",
                   help="count this event (default: the first one seen)")
    g.add_argument("--samples", action="store_true",
                   help="count samples (default: sum of periods, as the script does)")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_stack_command(subparsers, "collapse", "folded stacks, as stackcollapse-perf.pl",
                      "write here (default: standard output)", add_collapse_options, run)
