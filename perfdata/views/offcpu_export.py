"""`perfdata export --offcpu`: off-CPU time (perfdata offcpu's waits) for
speedscope and pprof, weighted by time.

Each (thread, stack, state) of the waits is one weighted sample, its weight
the nanoseconds waited there, as `perfdata offcpu --format collapse
--tid-root --with-state` counts them (--min-wait groups the short ones as
there); with --wall the thread's on-CPU time (its clock samples' stacks,
scaled to its run time as offcpu --wall does) is beside them.

* speedscope: one `sampled` profile per thread, unit `nanoseconds`; a
  sample is a stack's frames (outermost first) and, for a wait, its state
  as the leaf frame (`[S]`, `[D]`, `[R+]` ...: speedscope has no labels).
* pprof: sample types `waits/count` and `off-cpu/nanoseconds`
  (`wall/nanoseconds` with --wall), the default; labels `pid`, `tid`,
  `comm` and, for a wait, `state`; locations leaf first, one function per
  (name, dso), mappings by dso.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..session.switches import SHORT_WAITS

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from ..session.switches import SwitchTracker, ThreadTimes

NO_STACK = "[no callchain]"


def weighted_stacks(tracker: SwitchTracker) -> list[tuple[ThreadTimes, list[tuple[str, str]],
                                                          str | None, int, int]]:
    """(thread, frames outermost first as (name, dso), state or None for
    time on the cpu, ns, count) each, by thread, stack and state."""
    from .offcpu_output import oncpu_times
    rows: dict[tuple[int, tuple[tuple[str, str], ...], str | None], list[int]] = {}
    for (tid, stack, state, _), (ns, count) in tracker.waits.items():
        got = rows.setdefault((tid, _frames(stack), state), [0, 0])
        got[0] += ns
        got[1] += count
    for (tid, stack), (ns, count) in oncpu_times(tracker).items():
        got = rows.setdefault((tid, _frames(stack), None), [0, 0])
        got[0] += ns
        got[1] += count
    return [(tracker.threads[tid], list(frames), state, ns, count)
            for (tid, frames, state), (ns, count) in sorted(rows.items(), key=str)]


def _frames(stack: Any) -> tuple[tuple[str, str], ...]:
    if stack is None or stack == SHORT_WAITS:
        return ((stack or NO_STACK, ""),)
    return tuple((name, dso) for name, _, dso in stack)


def speedscope_document(tracker: SwitchTracker, name: str) -> dict[str, Any]:
    """The speedscope file of the waits (views/export.py's format)."""
    from .export import SCHEMA, exporter_name
    frames: list[dict[str, str]] = []
    index: dict[tuple[str, str], int] = {}

    def frame(name: str, dso: str) -> int:
        at = index.get((name, dso))
        if at is None:
            at = index[(name, dso)] = len(frames)
            frames.append({"name": name, "file": dso} if dso and not dso.startswith("[")
                          else {"name": name})
        return at

    per_thread: dict[int, tuple[ThreadTimes, list[list[int]], list[int]]] = {}
    for t, path, state, ns, _ in weighted_stacks(tracker):
        _, samples, weights = per_thread.setdefault(t.tid, (t, [], []))
        stack = [frame(n, dso) for n, dso in path]
        if state is not None:
            stack.append(frame("[%s]" % state, ""))
        samples.append(stack)
        weights.append(ns)
    profiles = [{"type": "sampled", "name": "%s (%d/%d)" % (t.comm, t.pid, t.tid),
                 "unit": "nanoseconds", "startValue": 0, "endValue": sum(weights),
                 "samples": samples, "weights": weights}
                for _, (t, samples, weights) in sorted(per_thread.items())]
    return {"$schema": SCHEMA, "shared": {"frames": frames}, "profiles": profiles,
            "activeProfileIndex": 0, "exporter": exporter_name(), "name": name}


def pprof_profile(tracker: SwitchTracker, wall: bool = False) -> Message:
    """The pprof Profile of the waits (and, wall, the time on the cpu)."""
    from .pprof import profile_classes
    P = profile_classes()
    strings: dict[str, int] = {"": 0}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    prof = P["Profile"]()
    kind = "wall" if wall else "off-cpu"
    for value_type, unit in (("waits", "count"), (kind, "nanoseconds")):
        prof.sample_type.add(type=s(value_type), unit=s(unit))
    mappings: dict[str, int] = {}
    locations: dict[tuple[str, str], int] = {}
    for t, path, state, ns, count in weighted_stacks(tracker):
        ids = []
        for name, dso in reversed(path):           # leaf first, as pprof wants
            lid = locations.get((name, dso))
            if lid is None:
                lid = locations[(name, dso)] = len(locations) + 1
                mid = mappings.setdefault(dso, len(mappings) + 1) if dso else 0
                loc = prof.location.add(id=lid, mapping_id=mid)
                loc.line.add(function_id=lid)
                prof.function.add(id=lid, name=s(name), system_name=s(name),
                                  filename=s(dso))
            ids.append(lid)
        sample = prof.sample.add(location_id=ids, value=(count, ns))
        sample.label.add(key=s("pid"), num=t.pid)
        sample.label.add(key=s("tid"), num=t.tid)
        sample.label.add(key=s("comm"), str=s(t.comm))
        if state is not None:
            sample.label.add(key=s("state"), str=s(state))
    for dso, mid in mappings.items():
        prof.mapping.add(id=mid, filename=s(dso), has_functions=True)
    prof.period_type.type = s(kind)
    prof.period_type.unit = s("nanoseconds")
    prof.default_sample_type = s(kind)
    prof.string_table.extend(strings)               # insertion order = index order
    return prof


def run(args: Any, out: Any) -> None:
    """`perfdata export --offcpu`: the waits of args.file as args.format."""
    import gzip
    import json

    from ..run.profile import open_profile
    from ..session.switches import SwitchTracker
    from .collapse import open_output
    from .offcpu import gather, refuse_options, thread_filter, time_window
    from .options import resolve_options
    refuse_options(args)
    if args.format == "parquet":
        from .errors import CommandError
        raise CommandError("export --offcpu: speedscope or pprof, not parquet")
    if args.format == "pprof":
        from .export import pprof_stream
        stream, close = pprof_stream(args, out)
    pf = open_profile(args.file, getattr(args, "strict", False))
    tracker = SwitchTracker(args.min_wait, time_window(args, pf), thread_filter(args))
    gather(resolve_options(args), pf, tracker, wakers=False, oncpu=args.wall)
    if args.format == "pprof":
        try:
            stream.write(gzip.compress(pprof_profile(tracker, args.wall).SerializeToString()))
        finally:
            if close:
                stream.close()
        return
    stream, close = open_output(args.output, out)
    try:
        json.dump(speedscope_document(tracker, os.path.basename(str(args.file))), stream,
                  separators=(",", ":"))
        stream.write("\n")
    finally:
        if close:
            stream.close()
