"""The resolving pipeline built from options: where binaries and debug files
are found, how frames are named, how stacks are walked and which samples are
kept (ResolveOptions, the options every symbolizing command takes, with
their defaults), and the SampleSymbolizer they make (build_sample_symbolizer).
The commands' parsers fill a ResolveOptions (perfdata.views.options); a
program builds one itself."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .frames import DEFAULT_MAX_STACK
from .filters import (PercentRanges, check_cpu_filter, first_sample_time, leaf_filter,
                      sample_filter, sample_span, time_spans)

if TYPE_CHECKING:
    import types
    from collections.abc import Iterable

    from symbolize import CacheDir, KernelSymbols

    from ..format.container import PerfFile
    from .filters import TimeRanges
    from .symbolized import SampleSymbolizer

@dataclass(frozen=True, slots=True)
class ResolveOptions:
    """The options of a symbolizing command (script, report, collapse,
    flamegraph, export, diagnose, archive, buildids), with the command's
    defaults; the command-line spelling of each is in its comment.  Filters
    are parsed values: None selects everything, an empty collection
    nothing (perf's empty strlist)."""
    # where binaries and debug files are found
    debug_dirs: tuple[str, ...] = ()            # --debug-dir, in order
    symfs: str | None = None                    # --symfs
    path_maps: tuple[tuple[str, str], ...] = ()  # --path-map OLD=NEW: (OLD, NEW)
    archive: str | None = None                  # --archive (perfdata's or perf archive's)
    buildid_dir: str | None = None              # --buildid-dir (None: ~/.debug)
    kallsyms: str | None = None                 # --kallsyms
    vmlinux: str | None = None                  # -k/--vmlinux
    vdso: str | None = None                     # --vdso
    debuginfod: str | None = None               # --debuginfod (None: $DEBUGINFOD_URLS)
    symbol_cache: str | None = None             # --symbol-cache (None: the default's)
    no_symbol_cache: bool = False               # --no-symbol-cache
    # how frames are named
    demangle: bool = True                       # --no-demangle: False
    demangle_kernel: bool = False               # --demangle-kernel
    signatures: bool = False                    # --signatures
    inline: bool = False                        # --inline: inlined frames shown
    no_inline: bool = False                     # --no-inline: never looked up
    srcline: bool = False                       # source lines wanted (script -F srcline)
    full_source_path: bool = False              # whole source paths (--full-source-path)
    # how stacks are walked
    max_stack: int = DEFAULT_MAX_STACK          # --max-stack
    unwind: str = "auto"                        # --unwind: auto, dwarf, fp or none
    stitch: bool = False                        # --stitch
    # which samples (see filters.py)
    pids: frozenset[int] | None = None          # --pid
    tids: frozenset[int] | None = None          # --tid
    comms: frozenset[str] | None = None         # --comm
    cpus: frozenset[int] | None = None          # -C/--cpu
    symbols: tuple[frozenset[str], frozenset[int]] | None = None  # -S: (names, addresses)
    dsos: frozenset[str] | None = None          # --dsos
    time: TimeRanges | PercentRanges | None = None  # --time
    reltime: bool = False                       # --reltime: --time from the first sample
    strict: bool = False                        # perfdata --strict: stop at the first fault
    # perfdata.core._unwind, the DWARF walk's common step in C (the
    # commands give perfdata.core.compiled_unwind(); None: Python's)
    compiled_unwind: types.ModuleType | None = None


def symbol_cache_of(options: ResolveOptions) -> CacheDir:
    """The one CacheDir every cache of the run uses: --symbol-cache DIR,
    else $PERFDATA_CACHE_DIR or ~/.cache/perfdata; disabled by
    --no-symbol-cache (nothing is read from it or written to it)."""
    from symbolize import CacheDir
    if options.no_symbol_cache:
        return CacheDir(None)
    return CacheDir(options.symbol_cache) if options.symbol_cache else CacheDir.default()


def kernel_symbols_of(pf: PerfFile, options: ResolveOptions) -> KernelSymbols | str | None:
    """--vmlinux (checked against the file's kernel build-id) or --kallsyms."""
    if options.vmlinux:
        from symbolize import KernelSymbols

        from ..session.machine import KERNEL_DSO
        from ..session.stream import recorded_build_ids
        table = KernelSymbols.from_vmlinux(options.vmlinux,
                                           recorded_build_ids(pf).get(KERNEL_DSO))
        pf.warnings.extend(table.warnings)
        return table
    return options.kallsyms


def _written_at(path: object) -> float | None:
    """When the profile at path was last written (perf record writes its
    header last), or None for standard input."""
    if not path or path == "-":
        return None
    try:
        return os.stat(path).st_mtime      # type: ignore[arg-type]  # (else TypeError)
    except (OSError, ValueError, TypeError):
        return None


def _kept_time(pf: PerfFile, options: ResolveOptions) -> list[tuple[int, int]] | None:
    """--time's ranges for this file: perf script --reltime reads them
    relative to the first sample (perf_time__parse_for_ranges_reltime(),
    which refuses a file that does not say when that was); in percent, of
    the span of its sample times."""
    if not options.time:
        return None
    from ..format.errors import PerfDataError
    base = 0
    span = None
    if options.reltime:
        base = first_sample_time(pf)
        if not base:
            raise PerfDataError("--reltime --time: the file has no first sample time "
                                "(HEADER_SAMPLE_TIME); give absolute times without --reltime")
    if isinstance(options.time, PercentRanges):
        span = sample_span(pf)
        if span == (0, 0):
            raise PerfDataError("--time in percent: the file has no first/last sample time "
                             "(HEADER_SAMPLE_TIME)")
    return time_spans(options.time, base, span)


def build_sample_symbolizer(pf: PerfFile, options: ResolveOptions = ResolveOptions(),
                            side_events: Iterable[int] = (), order: str = "time",
                            shard: tuple[int, int, int] | None = None) -> SampleSymbolizer:
    """The SampleSymbolizer of an open file the options describe.
    side_events: the record types handed out beside the samples (as
    SideEvent); order='file' for perf script's --show-round-events, which
    turns perf's time ordering off; shard: (block, jobs, index) of a sharded
    run's worker."""
    from symbolize import Symbolizer, SymbolizerOptions, make_locator

    from .symbolized import SampleSymbolizer, StackOptions, StreamOptions
    debug_dirs = list(options.debug_dirs)
    buildid_dir = options.buildid_dir
    vdso = options.vdso
    if options.archive:
        # An archive made by `perfdata archive`: unpacked once, then searched
        # like a --debug-dir (and as perf's build-id cache, for kallsyms);
        # its vdso image is the recording machine's.
        from ..buildid_archive import archived_vdso, open_archive
        unpacked = open_archive(options.archive)
        debug_dirs.insert(0, unpacked)
        buildid_dir = buildid_dir or unpacked
        vdso = vdso or archived_vdso(unpacked)
    # A DebuginfodLocator when --debuginfod or $DEBUGINFOD_URLS names a server.
    locator = make_locator(options.debuginfod, debug_dirs=debug_dirs, symfs=options.symfs,
                           path_map=options.path_maps,
                           **({"buildid_dir": buildid_dir} if buildid_dir else {}))
    symbolizer = Symbolizer(locator, SymbolizerOptions(
        demangle=options.demangle, cache_dir=symbol_cache_of(options),
        signatures=options.signatures, inline=options.inline and not options.no_inline,
        srcline=options.srcline,
        # whole source paths as addr2line gives them only where they are printed
        source_paths=options.full_source_path,
        vdso=vdso, demangle_kernel=options.demangle_kernel,
        recorded_at=_written_at(pf.path_arg), kallsyms=kernel_symbols_of(pf, options)))
    check_cpu_filter(pf, options.cpus)
    return SampleSymbolizer(
        pf, symbolizer,
        StackOptions(max_stack=options.max_stack, unwind=options.unwind,
                     dwarf_inline=not options.no_inline, stitch=options.stitch,
                     compiled_unwind=options.compiled_unwind),
        StreamOptions(side_events=frozenset(side_events), side_cpus=options.cpus, order=order,
                      strict=options.strict),
        filters=sample_filter(options.pids, options.tids, options.comms, options.cpus,
                              _kept_time(pf, options)),
        leaf_filter=leaf_filter(options.symbols, options.dsos), shard=shard)
