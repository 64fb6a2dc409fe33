"""`perfdata.profile(path, ...)`: a perf.data file with the commands' options,
defaults and speed, its symbolized samples as data and its views as data.

Each view (`report()`, `folded()`, `flamegraph()`, `to_arrow()`) reads the
file once, as the command of that name does, with the compiled core where
the command uses it; iterating the profile reads it again and yields frozen
`Sample`s.  What a pass warned of is in `Profile.warnings`.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .runtime import as_the_commands

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from symbolize import Symbolizer

    from ..arrow import ArrowTables
    from ..format import EventAttr, PerfFile
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample
    from .samples import Sample
    from ..views.difftable import EventTable
    from .annotations import Annotation
    from .tables import DiffTable, FlameGraph, ReportTable

    from typing import TypeVar

    from ..resolve import ResolveOptions

    PathMaps = Mapping[str, str] | Iterable[tuple[str, str]]
    T = TypeVar("T")
    V = TypeVar("V")
    # (a sample) -> whether it makes a report entry
    HistFilter = Callable[[SymbolizedSample], bool]


def profile(path: str | os.PathLike[str], *,
            debug_dirs: Iterable[str | os.PathLike[str]] = (),
            symfs: str | os.PathLike[str] | None = None,
            path_maps: PathMaps = (),
            archive: str | os.PathLike[str] | None = None,
            buildid_dir: str | os.PathLike[str] | None = None,
            kallsyms: str | os.PathLike[str] | None = None,
            vmlinux: str | os.PathLike[str] | None = None,
            vdso: str | os.PathLike[str] | None = None,
            debuginfod: str | None = None,
            symbol_cache: str | os.PathLike[str] | bool = True,
            demangle: bool = True,
            signatures: bool = False,
            inline: bool | None = None,
            max_stack: int = 127,
            unwind: str = "auto",
            stitch: bool = False,
            time: str | None = None,
            pids: Iterable[int] | None = None,
            tids: Iterable[int] | None = None,
            comms: Iterable[str] | None = None,
            cpus: Iterable[int] | None = None,
            strict: bool = False) -> Profile:
    """A perf.data file (or a `perf record --threads` directory) to read with
    the options of `perfdata script`, `report`, `collapse` and `flamegraph`,
    under their names, with their defaults:

    debug_dirs: directories of debug files and binaries (.build-id layout or
        path layout): --debug-dir.  symfs: look for binaries under this root.
    path_maps: {recorded path: path here} (a directory or a file; longest
        wins): --path-map.  archive: a `perfdata archive` or `perf archive`
        tarball.  buildid_dir: perf's build-id cache (default ~/.debug).
    kallsyms, vmlinux: the kernel's symbols (a kallsyms file; the kernel's
        ELF image).  vdso: the recording machine's vdso image.
    debuginfod: debuginfod servers (space separated; default
        $DEBUGINFOD_URLS).  symbol_cache: True (the commands' cache,
        $PERFDATA_CACHE_DIR or ~/.cache/perfdata), a directory, or False.
    demangle, signatures: C++/Rust names demangled; with parameter lists.
    inline: None (the commands' default: the inline chains of DWARF-unwound
        frames only), True (every inlined frame, --inline), False (none,
        --no-inline).  max_stack: frames per stack (perf's 127).
    unwind: "auto" (DWARF where samples carry registers and stack), "dwarf",
        "fp" or "none".  stitch: complete DWARF stacks cut by the stack
        snapshot from the thread's other samples (--stitch).
    time: perf's --time ("start,stop" in seconds, several ranges, or
        percents: "10%/2").  pids, tids, comms, cpus: only these.
    strict: stop at the first corrupt record (perfdata.CorruptError)
        instead of skipping it.

    Opening checks the file's header (perfdata.PerfDataError when it is not
    one); the samples are read when a view is asked for."""
    with as_the_commands():
        from ..resolve import ResolveOptions
        from ..views.options import time_ranges
        if unwind not in ("auto", "dwarf", "fp", "none"):
            raise ValueError("unwind: one of auto, dwarf, fp, none, not %r" % unwind)
        given = path_maps.items() if isinstance(path_maps, Mapping) else path_maps
        ranges = _parsed(time_ranges, time) if time is not None else None
        options = ResolveOptions(
            debug_dirs=tuple(os.fspath(d) for d in debug_dirs), symfs=_text(symfs),
            path_maps=tuple((os.fspath(old), os.fspath(new)) for old, new in given),
            archive=_text(archive), buildid_dir=_text(buildid_dir), kallsyms=_text(kallsyms),
            vmlinux=_text(vmlinux), vdso=_text(vdso), debuginfod=debuginfod,
            symbol_cache=None if isinstance(symbol_cache, bool) else os.fspath(symbol_cache),
            no_symbol_cache=symbol_cache is False, demangle=demangle, signatures=signatures,
            inline=inline is True, no_inline=inline is False, max_stack=max_stack,
            unwind=unwind, stitch=stitch, pids=_set(pids), tids=_set(tids),
            comms=_set(comms), cpus=_set(cpus),
            time=ranges if ranges is None or isinstance(ranges, tuple) else tuple(ranges),
            strict=strict)
        return Profile(path, options)


def _set(values: Iterable[V] | None) -> frozenset[V] | None:
    return None if values is None else frozenset(values)


def _parsed(parse: Callable[[str], T], text: str) -> T:
    """An option's value as the command line parses it; ValueError (the
    command's message) where it refuses it."""
    import argparse
    try:
        return parse(text)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(str(exc)) from None


def _text(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.fspath(value)


class Profile:
    """A perf.data file with the options it is read with (`perfdata.profile`).

    Iterate it for its samples (frozen `Sample`s, frames leaf first), or ask
    for a view: `report()` (the table of `perfdata report`), `folded()`
    (`perfdata collapse`), `flamegraph()` (`perfdata flamegraph`'s tree),
    `diff(new)` and `diff_folded(new)` (`perfdata diff`'s table and
    --folded columns), `annotate()` (`perfdata annotate`'s instructions and
    lines),
    `to_arrow()` and `to_pandas()` (`perfdata export --format parquet`'s
    tables).  In a notebook it shows its flame graph and the report's first
    rows.  warnings: what the passes so far warned of (each once)."""

    def __init__(self, path: str | os.PathLike[str],
                 options: ResolveOptions | None = None) -> None:
        """path: the file; options: how it is read (perfdata.resolve.
        ResolveOptions, the commands' defaults when None).  The header is
        read now: a file that is not one raises perfdata.PerfDataError."""
        from ..resolve import ResolveOptions
        self.path: str = os.fspath(path)
        if self.path == "-":
            raise ValueError("a profile reads its file once per view: give its path, not "
                             "standard input (perfdata.open('-') reads a pipe's records)")
        self.options: ResolveOptions = options if options is not None else ResolveOptions()
        self.warnings: list[str] = []
        # (kept open for the first pass: opening costs a noticeable part of
        # a small file's report)
        self._opened: PerfFile | None = None
        self._opened = self._open()

    def __repr__(self) -> str:
        return "<perfdata.Profile %r>" % self.path

    # ------------------------------------------------------------ passes
    def _open(self) -> PerfFile:
        opened, self._opened = self._opened, None
        if opened is not None:
            return opened
        from ..format import PerfFile
        return PerfFile(self.path, strict=self.options.strict)

    def _pass(self, fill: Callable[[PerfFile, SampleSymbolizer], T],
              options: ResolveOptions | None = None) -> T:
        """fill(file, its symbolized samples) over a fresh pass, with the
        interpreter set as the commands set it (runtime.py)."""
        from ..resolve import build_sample_symbolizer
        pf = self._open()
        samples = None
        try:
            samples = build_sample_symbolizer(pf, options or self.options)
            return fill(pf, samples)
        finally:
            self._done(pf, samples)
            pf.close()

    def _done(self, pf: PerfFile, samples: SampleSymbolizer | None) -> None:
        extra = samples.symbolizer.warnings if samples is not None else []
        for message in list(pf.warnings) + list(extra):
            if message not in self.warnings:
                self.warnings.append(message)

    def symbolized(self) -> Iterator[SymbolizedSample]:
        """The resolver's own samples (perfdata.resolve.symbolized): faster
        than iterating the profile, but each is valid only until the next
        (its frames are shared and reused)."""
        return self._stream(False)  # type: ignore[return-value]

    def __iter__(self) -> Iterator[Sample]:
        """Every sample in perf's time order, symbolized, as frozen data."""
        return self._stream(True)  # type: ignore[return-value]

    def _stream(self, frozen: bool) -> Iterator[Sample | SymbolizedSample]:
        # (the interpreter as the commands set it while the modules are
        # imported, not between the samples: the program runs there)
        with as_the_commands():
            from ..resolve import build_sample_symbolizer
            from .samples import SampleMaker, SourceLines
            pf = self._open()
        samples = None
        try:
            with as_the_commands():
                samples = build_sample_symbolizer(pf, self.options)
            if frozen:
                maker = SampleMaker(SourceLines(_line_symbolizer(samples.symbolizer)))
                yield from maker.samples(samples)  # type: ignore[arg-type]  # (no side events)
            else:
                yield from samples  # type: ignore[misc]  # (made without side events)
        finally:
            self._done(pf, samples)
            pf.close()

    # ------------------------------------------------------------- views
    def reports(self, *, sort: str = "comm,dso,sym", children: bool = False
                ) -> list[ReportTable]:
        """`perfdata report`'s tables, one per event with samples, in the
        file's order of events.  sort: its --sort keys (comm, dso, sym, pid,
        cpu); children: its --children (an inclusive column).  The pids,
        tids and comms filters act as perf report's: the samples they leave
        out still count in the event's total."""
        from ..format import SampleType
        from ..views.report.command import build_report
        from ..views.report.histogram import Report
        from ..views.report.sort_keys import parse_sort
        keys = parse_sort(sort)
        stream, hist_filter = _hist_filters(self.options)

        def fill(pf: PerfFile, samples: SampleSymbolizer) -> list[ReportTable]:
            inclusive = children and any(ea.sample_type & SampleType.CALLCHAIN
                                         for ea in pf.attrs)   # (as perf report's)
            report = build_report(pf, samples, keys, children=inclusive, progress=False,
                                  report=Report(keys, inclusive, sampler=samples,
                                                hist_filter=hist_filter(samples)))
            return report_tables(report, [ea.index for ea in pf.attrs])
        with as_the_commands():
            from .tables import report_tables
            return self._pass(fill, stream)

    def report(self, *, sort: str = "comm,dso,sym", children: bool = False,
               event: str | None = None) -> ReportTable:
        """One event's table of `perfdata report` (the first event with
        samples, or the one named): rows sorted by overhead, as printed."""
        tables = self.reports(sort=sort, children=children)
        for table in tables:
            if event is None or table.event == event:
                return table
        from .tables import ReportTable
        if event is None:
            return ReportTable("", 0, 0, tuple(sort.split(",")), ())
        raise KeyError("no samples of event %r (events with samples: %s)"
                       % (event, ", ".join(t.event for t in tables) or "none"))

    def annotate(self, *symbols: str, percent_type: str = "local-period",
                 percent_limit: float = 0.5, event: str | None = None, intel: bool = False
                 ) -> list[Annotation]:
        """`perfdata annotate`'s functions (perfdata.Annotation), hottest
        first: those named, else those with at least percent_limit percent
        of their event's period; each instruction's and each source line's
        samples, period and share (percent_type: local-period,
        global-period, local-hits, global-hits); event: that event's
        samples only.  A sample counts for the function its own ip is in,
        as perf annotate counts it.  Needs capstone (the annotate extra)."""
        import dataclasses
        from ..views.annotate import PERCENT_TYPES, AnnotateOptions, annotate, chosen
        from ..views.annotate_samples import gather
        if percent_type not in PERCENT_TYPES:
            raise ValueError("percent_type: one of %s, not %r"
                             % (", ".join(PERCENT_TYPES), percent_type))
        opts = AnnotateOptions(symbols=frozenset(symbols), percent_type=percent_type,
                               percent_limit=percent_limit, event=event, intel=intel)
        # (the leaf alone counts, as the command's: no call chain walked, no
        # inlined frame)
        options = dataclasses.replace(self.options, unwind="none", inline=False,
                                      no_inline=True)

        def fill(pf: PerfFile, samples: SampleSymbolizer) -> list[Annotation]:
            gathered = gather(samples, samples, event)  # type: ignore[arg-type]
            return [annotation(annotate(samples.symbolizer, fs, gathered.totals, opts))
                    for fs in chosen(gathered.functions, gathered.totals, opts)]
        with as_the_commands():
            from .annotations import annotation
            return self._pass(fill, options)

    def folded(self, *, weight: str = "period") -> dict[str, int]:
        """`perfdata collapse`'s folded stacks: {"comm;root;...;leaf":
        count}, sorted by stack; weight "period" (its default) or
        "samples" (--samples).  Only the first event seen is counted, as
        stackcollapse-perf.pl does."""
        from ..run.folded import CollapseOptions, EventFilter
        from ..views.collapse import collapse_samples
        if weight not in ("period", "samples"):
            raise ValueError("weight: period or samples, not %r" % weight)
        opts = CollapseOptions(weight=weight)
        counts: dict[str, int] = {}

        def fill(pf: PerfFile, samples: SampleSymbolizer) -> None:
            from ..core import compiled
            from ..core.collapse import CollapseCore
            events = EventFilter(opts.event_filter, None)
            items: Iterable[SymbolizedSample] = samples  # type: ignore[assignment]
            module = compiled()
            if module is not None and CollapseCore.applies_to(samples, opts):
                items = CollapseCore(module, samples, opts, events, counts)
            collapse_samples(items, opts, counts=counts, events=events)
        with as_the_commands():
            self._pass(fill)
        return {k: counts[k] for k in sorted(counts)}

    def diff_folded(self, new: Profile, *, weight: str = "period", normalize: bool = False
                    ) -> dict[str, tuple[int, int]]:
        """This profile (the base) against `new`, stack by stack, as
        `perfdata diff --folded BASE NEW` prints it (difffolded.pl's
        columns): {stack: (base's count, new's count)}, a stack of one side
        only 0 on the other, sorted by stack; normalize scales the base's
        counts to new's total (difffolded.pl -n, as the differential flame
        graph draws them)."""
        from ..views.flamegraph_diff import diff_stacks
        stacks = diff_stacks(self.folded(weight=weight), new.folded(weight=weight),
                             normalize=normalize)
        return {k: stacks[k] for k in sorted(stacks)}

    def diff(self, new: Profile, *, sort: str = "dso,sym", event: str | None = None
             ) -> DiffTable:
        """This profile (the base) against `new`, as `perfdata diff BASE NEW`
        prints it (perf diff's table, its default `-c delta-abs`): a row per
        function, keyed by its name within the binary's short name, so two
        builds of a program pair; each profile read with its own options
        and binaries.  sort: perf diff's -s keys (dso, sym, comm, pid, cpu);
        event: the base's event compared (default: its first with samples),
        with the new profile's event of the same type and config."""
        from ..views.difftable import DiffOptions
        from ..views.difftable import DiffTable as Table
        from ..views.difftable import matching_event
        from ..views.report.sort_keys import parse_sort
        keys = parse_sort(sort)
        base_events, new_events = self._event_tables(keys), new._event_tables(keys)
        for ea, base in base_events:
            if (event is None and base is not None) or ea.name == event:
                match = matching_event(ea, [attr for attr, _ in new_events])
                theirs = next((t for attr, t in new_events if attr is match), None)
                with as_the_commands():
                    from .tables import diff_table
                return diff_table(Table(keys, [base, theirs], DiffOptions()), ea.name)
        from .tables import DiffTable
        if event is None:
            return DiffTable("", tuple(keys), 0, 0, ())
        raise KeyError("no event %r in %s (events: %s)" % (
            event, self.path, ", ".join(ea.name for ea, _ in base_events) or "none"))

    def _event_tables(self, keys: list[str]) -> list[tuple[EventAttr, EventTable | None]]:
        """Each event of the file with perf diff's table of its samples (None
        for an event without samples)."""
        stream, hist_filter = _hist_filters(self.options)

        def fill(pf: PerfFile, samples: SampleSymbolizer
                 ) -> list[tuple[EventAttr, EventTable | None]]:
            from ..views.difftable import event_tables
            from ..views.report.command import build_report
            from ..views.report.histogram import Report
            report = build_report(pf, samples, keys, progress=False, report=Report(
                keys, False, sampler=samples, hist_filter=hist_filter(samples)))
            tables = event_tables(report)
            pf.resolve_event_names()
            return [(ea, tables.get(ea.index)) for ea in pf.attrs]
        with as_the_commands():
            return self._pass(fill, stream)

    def offcpu_folded(self, *, min_wait_ns: int = 10_000, tid_root: bool = False,
                      with_state: bool = False, wall: bool = False, wakers: bool = False
                      ) -> dict[str, int]:
        """`perfdata offcpu --format collapse`: where the threads waited, as
        {"comm;frame;...;frame": nanoseconds} sorted by stack, from the
        file's scheduler switches (docs/offcpu.md says how to record them);
        waits shorter than min_wait_ns (the command's --min-wait, 10 us)
        grouped; with_state: the state (S, D, R+...) as the last frame;
        wall: the on-CPU time of the clock samples beside the waits;
        wakers: the wakeup chains of --wakers instead (the woken stack, "--",
        the waker's stack leaf first, the waker); the profile's time, pids,
        tids and comms select as the command's --time, --pid, --tid, --comm."""
        from ..session.switches import SwitchTracker
        from ..views import offcpu_output, offcpu_wakers
        from ..views.offcpu import gather, keep_of, window_of
        if wakers and wall:
            raise ValueError("wakers and wall do not go together")
        opts = self.options
        with as_the_commands():
            pf = self._open()
            try:
                # (the waits clipped to time=, their threads chosen by pids=,
                # tids=, comms=: every switch is read, as the command does)
                tracker = SwitchTracker(min_wait_ns, window_of(opts.time, pf),
                                        keep_of(opts.pids, opts.tids, opts.comms), wakers)
                gather(self.options, pf, tracker, wakers=wakers, oncpu=wall)
            finally:
                self._done(pf, None)
                pf.close()
        counts = offcpu_wakers.folded(tracker, tid_root, with_state) if wakers else \
            offcpu_output.folded(tracker, tid_root, with_state)
        return {k: counts[k] for k in sorted(counts)}

    def flamegraph(self, *, weight: str = "samples") -> FlameGraph:
        """`perfdata flamegraph`'s tree of the first event seen (weight
        "samples", its default, or "period"); `.svg()` draws it."""
        from ..run.folded import CollapseOptions
        from ..views.flamegraph import FlameGraphBuilder
        if weight not in ("period", "samples"):
            raise ValueError("weight: period or samples, not %r" % weight)
        builder = FlameGraphBuilder(weight, CollapseOptions(kernel=False))

        def fill(pf: PerfFile, samples: SampleSymbolizer) -> None:
            from ..core import compiled
            from ..core.flamegraph import TreeCore
            module = compiled()
            if module is not None and TreeCore.applies_to(samples, builder.opts):
                TreeCore(module, samples, builder).fill()
            else:
                for sample in samples:
                    builder.add(sample)  # type: ignore[arg-type]  # (no side events)
        with as_the_commands():
            self._pass(fill)
            from .tables import flame_graph
        name = os.path.basename(self.path.rstrip("/"))
        return flame_graph(builder, name + (" - %s" % builder.event_name
                                            if builder.event_name else ""))

    def to_arrow(self) -> ArrowTables:
        """The samples and their stacks as two pyarrow Tables (samples,
        stacks), the columns of perfdata.arrow (needs pyarrow)."""
        with as_the_commands():
            from ..arrow import ArrowTables, record_batches, require_pyarrow, schemas
            require_pyarrow()
            import pyarrow as pa
        got: dict[str, list[Any]] = {"samples": [], "stacks": []}
        for name, batch in record_batches(self.symbolized()):
            got[name].append(batch)
        sample_schema, stack_schema = schemas()
        return ArrowTables(pa.Table.from_batches(got["samples"], sample_schema),
                           pa.Table.from_batches(got["stacks"], stack_schema))

    def to_pandas(self) -> tuple[Any, Any]:
        """(samples, stacks) as pandas DataFrames (needs pyarrow and pandas)."""
        try:
            import pandas  # noqa: F401
        except ImportError as exc:
            raise ImportError("Profile.to_pandas needs pandas: pip install pandas") from exc
        tables = self.to_arrow()
        return tables.samples.to_pandas(), tables.stacks.to_pandas()

    def _repr_html_(self) -> str:
        from .notebook import profile_html
        return profile_html(self)


def _hist_filters(options: ResolveOptions
                  ) -> tuple[ResolveOptions, Callable[[SampleSymbolizer], HistFilter | None]]:
    """perf report's filters by pid, tid, comm, symbol and dso leave a sample
    in its event's total (HIST_FILTER_*), where -C and --time drop it: (the
    options of the sample stream, without the first kind; the Report's
    hist_filter of a pass's SampleSymbolizer), as views/report/command.py's
    split_hist_filters makes them of the command line."""
    import dataclasses

    from ..resolve.filters import hist_filter_of
    stream = dataclasses.replace(options, pids=None, tids=None, comms=None, symbols=None,
                                 dsos=None)
    return stream, hist_filter_of(options)


def _line_symbolizer(symbolizer: Symbolizer) -> Callable[[], Symbolizer]:
    """A maker of the symbolizer that looks source lines up: the pass's
    locator and cache, line tables read, whole paths."""
    def make() -> Symbolizer:
        from symbolize import Symbolizer, SymbolizerOptions
        return Symbolizer(symbolizer.locator, SymbolizerOptions(
            demangle=symbolizer.demangle, inline=False, srcline=True, source_paths=True,
            cache_dir=symbolizer.cache))
    return make
