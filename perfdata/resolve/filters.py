"""The filters a sample passes, made from parsed option values: perf's
--pid, --tid, --comm, -C and --time before it is symbolized (sample_filter),
-S and --dsos on its own ip once that is resolved (leaf_filter); and what
they need of the file (its first and last sample times, whether its samples
carry their cpu)."""
from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Sequence

    from ..format.container import PerfFile
    from ..session.stream import Sample
    from .frames import StackFrame
    from .pipeline import ResolveOptions
    from .symbolized import SampleSymbolizer, SymbolizedSample

    # --time: [(start_ns or None, stop_ns or None)]
    TimeRanges = Sequence[tuple[int | None, int | None]]


class PercentRanges(tuple):
    """perf's --time in percent of the profile's span ('10%/2', '0%-10%,30%-40%',
    '50%'): (start, end) fractions, made times once the file's first and last
    sample times are known (resolve)."""

    def resolve(self, first: int, last: int) -> list[tuple[int, int]]:
        """[(start_ns, end_ns)] as perf's set_percent_time() computes them."""
        total = last - first
        out = []
        for lo, hi in self:
            start = first + math.floor(lo * total + 0.5)     # C's round()
            end = first + math.floor(hi * total + 0.5)
            if end > start and end != last:
                end -= 1
            out.append((start, end))
        return out


def sample_filter(pids: Collection[int] | None = None, tids: Collection[int] | None = None,
                  comms: Collection[str] | None = None, cpus: Collection[int] | None = None,
                  ranges: Iterable[tuple[int, int]] | None = None
                  ) -> Callable[[Sample], bool] | None:
    """keep(sample) for the filters a sample passes before it is symbolized
    (pid, tid, comm, cpu, time ranges [(start_ns, stop_ns)], both included):
    None when none is given, so that they cost nothing.  An empty
    collection selects nothing, as perf's empty strlist."""
    if pids is None and tids is None and comms is None and ranges is None and cpus is None:
        return None
    spans = list(ranges) if ranges is not None else None

    def keep(sample: Sample) -> bool:
        if pids is not None and sample.pid not in pids:
            return False
        if tids is not None and sample.tid not in tids:
            return False
        if comms is not None and sample.comm not in comms:
            return False
        # perf's filter_cpu(): a sample without a cpu passes.
        if cpus is not None and sample.cpu is not None and sample.cpu not in cpus:
            return False
        if spans is not None and not any(lo <= sample.time <= hi for lo, hi in spans):
            return False
        return True
    return keep


def time_spans(parsed: TimeRanges | PercentRanges, first_sample_time: int = 0,
               sample_span: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """--time's ranges as [(start_ns, stop_ns)], open bounds closed: with
    --reltime perf reads them relative to first_sample_time; sample_span:
    (first, last) sample time, for --time in percent."""
    if isinstance(parsed, PercentRanges):
        # (with --reltime perf shifts these by the first sample time too)
        parsed = parsed.resolve(*(sample_span or (0, 0)))
    return [(first_sample_time + lo if lo is not None else 0,
             first_sample_time + hi if hi is not None else 1 << 64)
            for lo, hi in parsed]


def leaf_filter(symbols: tuple[Collection[str], Collection[int]] | None = None,
                dsos: Collection[str] | None = None
                ) -> Callable[[Sample, Sequence[StackFrame]], bool] | None:
    """perf's -S (symbols: (names, addresses)) and --dsos (machine__resolve):
    they look at the sample's own ip only: the dso of its map (by full path
    or base name) and the function there (not an inlined one), or for -S a
    hexadecimal entry equal to the ip.  keep(sample, leaf_frames), or None
    when neither is given."""
    if symbols is None and dsos is None:
        return None
    names, addrs = symbols if symbols is not None else (None, None)

    def keep(sample: Sample, leaf: Sequence[StackFrame]) -> bool:
        frame = next((f for f in leaf if not f.inlined), None)
        mapped = frame is not None and frame.note != "no-map"
        if dsos is not None:
            if not mapped:
                return False
            dso = frame.dso  # type: ignore[union-attr]  # (mapped: a frame)
            if dso not in dsos and os.path.basename(dso) not in dsos and \
                    _module_name(dso) not in dsos:
                return False
        if names is not None:
            if frame is not None and frame.symbol is not None and \
                    frame.symbol in names:
                return True
            return mapped and sample.ip in addrs  # type: ignore[operator]  # (-S: addrs too)
        return True
    return keep


def hist_filter_of(options: ResolveOptions
                   ) -> Callable[[SampleSymbolizer], Callable[[SymbolizedSample], bool] | None]:
    """perf report's filters by pid, tid, comm, symbol and dso
    (HIST_FILTER_*), which leave a sample in its event's total where -C and
    --time drop it: of a pass's SampleSymbolizer, the keep(sample) of the
    options' pids, tids, comms, symbols and dsos, or None where none is
    given."""
    thread_keep = sample_filter(options.pids, options.tids, options.comms)
    leaf_keep = leaf_filter(options.symbols, options.dsos)

    def hist_filter(sampler: SampleSymbolizer) -> Callable[[SymbolizedSample], bool] | None:
        if thread_keep is None and leaf_keep is None:
            return None

        def keep(sample: SymbolizedSample) -> bool:
            if thread_keep is not None and not thread_keep(sample):
                return False
            return leaf_keep is None or leaf_keep(sample, sampler.leaf_frames(sample))
        return keep
    return hist_filter


def _module_name(path: str) -> str | None:
    """A kernel module's perf short name: /lib/modules/.../nf_nat.ko -> [nf_nat]."""
    if not path.endswith((".ko", ".ko.xz", ".ko.gz", ".ko.zst")):
        return None
    base = os.path.basename(path).split(".ko")[0]
    return "[%s]" % base.replace("-", "_")


def sample_span(pf: PerfFile) -> tuple[int, int]:
    """The file's (first, last) sample time (HEADER_SAMPLE_TIME), or (0, 0)."""
    from ..format.constants import Feature
    from ..format.errors import PerfDataError
    try:
        got = pf.feature(Feature.SAMPLE_TIME) or {}
    except PerfDataError:
        return 0, 0
    return got.get("first_sample_time", 0) or 0, got.get("last_sample_time", 0) or 0


def first_sample_time(pf: PerfFile) -> int:
    """The file's first sample time (HEADER_SAMPLE_TIME), or 0."""
    return sample_span(pf)[0]


def check_cpu_filter(pf: PerfFile, cpus: Collection[int] | None) -> None:
    """perf_session__cpu_bitmap(): -C needs samples that carry their cpu."""
    if cpus is None:
        return
    from ..format.constants import Feature, SampleType as ST
    from ..format.errors import PerfDataError
    first: dict[int, Any] = {}
    for ea in pf.attrs:
        if ea.attr["type"] < 6:         # PERF_TYPE_MAX: not the dynamic PMUs
            first.setdefault(ea.attr["type"], ea)
    if any(not ea.sample_type & ST.CPU for ea in first.values()):
        raise PerfDataError("the file does not contain CPU events (record with "
                            "--sample-cpu or -a): remove -C to proceed")
    try:
        nr = (pf.feature(Feature.NRCPUS) or {}).get("nr_cpus_available")
    except PerfDataError:
        nr = None
    if nr and cpus and max(cpus) >= nr:
        # perf_session__cpu_bitmap(): "Requested CPU %d too large".
        raise PerfDataError("-C: cpu %d is not one of the recording machine's %d cpus"
                            % (max(cpus), nr))
