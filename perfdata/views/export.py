"""`perfdata export`: the profile in speedscope's JSON format or as pprof
(or, `--format parquet`, as a Parquet dataset: views/parquet.py).

`--format pprof`: pprof's profile.proto (github.com/google/pprof,
proto/profile.proto), gzip-compressed, encoded with the stdlib (no protobuf
package): sample types `samples/count` and `<event>/<unit>` (the period;
`cpu/nanoseconds` for the software clock events), one Sample per distinct
(stack, pid, tid) with labels `pid`, `tid` (numbers) and `comm`, leaf first,
one Location per printed frame (its name and dso) with one Line and Function
(the function's file is the dso), Mappings by dso with their build-ids.

`--format speedscope`:

https://www.speedscope.app/file-format-schema.json (speedscope's
src/lib/file-format-spec.ts): a `shared.frames` table and one `sampled`
profile per thread (per event and thread when the file has several events
with samples).  Each input sample is one entry of `samples` (its stack as
frame indices, outermost call first) with its weight at the same index of
`weights`: the sample's period by default (`unit` nanoseconds for the
software clock events, whose period is in ns, else none), or 1 with
`--weight samples`.  Frame names are the folded-stack names (perf's short
C++ names, `[dso]` for a frame without a symbol), `file` the dso path.
"""
from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from .collapse import open_output
from .errors import CommandError
from .options import SampleRun, add_input_argument, add_symbolize_options
from .pprof import NS_EVENTS, PprofBuilder, profile_classes
from ..run.folded import CollapseOptions, frame_names

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from ..format import EventAttr
    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SymbolizedSample

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def _unit(event: EventAttr, weight: str) -> str:
    if weight == "samples":
        return "none"
    base = event.name.split(":", 1)[0]
    return "nanoseconds" if base in NS_EVENTS else "none"


class SpeedscopeBuilder:
    def __init__(self, weight: str = "period", name: str | None = None) -> None:
        self.weight = weight
        self.name = name
        self.frames: list[dict[str, str]] = []
        self.frame_index: dict[tuple[str, str | None], int] = {}
        # (event index, pid, tid) -> its samples, weights, comm, event, first and last time
        self.profiles: dict[tuple[int, int, int], dict[str, Any]] = {}
        self.order: list[tuple[int, int, int]] = []
        self.events: dict[int, EventAttr] = {}
        self._opts = CollapseOptions()
        self._stack_cache: dict[int, tuple[Sequence[StackFrame], list[int]]] = {}

    def _frame(self, name: str, file: str | None, kernel: bool) -> int:
        key = (name, file)
        idx = self.frame_index.get(key)
        if idx is None:
            idx = self.frame_index[key] = len(self.frames)
            entry = {"name": name}
            if file:
                entry["file"] = file
            self.frames.append(entry)
        return idx

    def _stack(self, frames: Sequence[StackFrame]) -> list[int]:
        hit = self._stack_cache.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        stack = []
        for fr in reversed(frames):
            # The dso as the profile names it (not where its copy was found).
            file = fr.dso if fr.dso and not fr.dso.startswith("[") else None
            for name in frame_names(fr, self._opts):
                stack.append(self._frame(name, file, fr.kernel))
        if len(self._stack_cache) > 100000:
            self._stack_cache.clear()
        self._stack_cache[id(frames)] = (frames, stack)
        return stack

    def add(self, sample: SymbolizedSample) -> None:
        key = (sample.event.index, sample.pid, sample.tid)
        prof = self.profiles.get(key)
        if prof is None:
            prof = self.profiles[key] = {"comm": sample.comm, "event": sample.event,
                                         "samples": [], "weights": [],
                                         "first": sample.time, "last": sample.time}
            self.order.append(key)
            self.events[sample.event.index] = sample.event
        prof["comm"] = sample.comm      # the thread's latest name
        prof["samples"].append(self._stack(sample.frames))
        w = 1 if self.weight == "samples" else (sample.period or 0)
        prof["weights"].append(w)
        prof["last"] = sample.time

    def document(self) -> dict[str, Any]:
        profiles = []
        several_events = len(self.events) > 1
        keys = sorted(self.order, key=lambda k: (k[0], k[1], k[2]))
        for key in keys:
            prof = self.profiles[key]
            event = prof["event"]
            name = "%s (%d/%d)" % (prof["comm"], key[1], key[2])
            if several_events:
                name += " " + event.name
            total = sum(prof["weights"])
            profiles.append({
                "type": "sampled",
                "name": name,
                "unit": _unit(event, self.weight),
                "startValue": 0,
                "endValue": total,
                "samples": prof["samples"],
                "weights": prof["weights"],
            })
        doc = {
            "$schema": SCHEMA,
            "shared": {"frames": self.frames},
            "profiles": profiles,
            "activeProfileIndex": 0,
            "exporter": exporter_name(),
        }
        if self.name:
            doc["name"] = self.name
        return doc


def exporter_name() -> str:
    """speedscope's recommended "name@version"."""
    try:
        from importlib.metadata import version
        return "perfdata@" + version("perfdata")
    except Exception:
        return "perfdata"


def run(args: argparse.Namespace, out: TextIO) -> None:
    import os
    if args.offcpu:
        from . import offcpu_export
        return offcpu_export.run(args, out)
    if args.wall:
        raise CommandError("export: --wall goes with --offcpu")
    if args.format == "pprof":
        return run_pprof(args, out)
    if args.format == "parquet":
        return run_parquet(args, out)
    stream, close = open_output(args.output, out)
    builder = SpeedscopeBuilder(args.weight, name=os.path.basename(str(args.file)))
    for sample in SampleRun(args, "export"):
        builder.add(sample)
    doc = builder.document()
    if not doc["profiles"]:
        sys.stderr.write("perfdata: note: no samples; the profile is empty\n")
    try:
        json.dump(doc, stream, separators=(",", ":"))
        stream.write("\n")
    finally:
        if close:
            stream.close()



def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("export", help="the profile for other tools: speedscope, pprof "
                              "or parquet")
    add_input_argument(p)
    p.add_argument("-o", "--output", help="write here (default: standard output)")
    p.add_argument("--format", default="speedscope", choices=("speedscope", "pprof", "parquet"),
                   help="output format: speedscope (JSON), pprof (gzipped profile.proto) "
                        "or parquet (-o DIR: samples.parquet and stacks.parquet)")
    p.add_argument("--weight", choices=("period", "samples"), default="period",
                   help="sample weight: its period (default) or 1")
    g = p.add_argument_group("off-CPU time (perfdata offcpu's waits; docs/offcpu.md)")
    g.add_argument("--offcpu", action="store_true",
                   help="export where the threads waited, from the scheduler switches, "
                        "weighted by wait time (ns): speedscope or pprof")
    g.add_argument("--min-wait", type=_duration, default=10000, metavar="TIME",
                   help="--offcpu: waits shorter than this added up per thread and state "
                        "(default 10us, as perfdata offcpu's)")
    g.add_argument("--wall", action="store_true",
                   help="--offcpu: the time on the cpu (cpu-clock or task-clock samples) "
                        "beside the waits")
    add_symbolize_options(p)
    p.set_defaults(func=run)


def _duration(text: str) -> int:
    from .offcpu import parse_duration     # (the off-CPU view's module: when asked)
    return parse_duration(text)


def pprof_stream(args: argparse.Namespace, out: TextIO) -> tuple[Any, bool]:
    """(the binary stream pprof output goes to, whether to close it); the
    protobuf package checked for."""
    stream: Any
    if args.output is None or args.output == "-":
        stream = getattr(out, "buffer", None)
        close = False
        if stream is None:
            raise CommandError("pprof output is binary: give -o FILE")
    else:
        try:
            stream = open(args.output, "wb")
        except OSError as exc:
            raise CommandError("%s: %s" % (args.output, exc.strerror or exc))
        close = True
    try:
        profile_classes()
    except ImportError:
        from ..extras import install_hint
        raise CommandError("pprof output needs the protobuf package (%s)"
                           % install_hint("pprof"))
    return stream, close


def run_pprof(args: argparse.Namespace, out: TextIO) -> None:
    import gzip
    stream, close = pprof_stream(args, out)
    builder = PprofBuilder()
    skipped = 0
    for sample in SampleRun(args, "export"):
        if not builder.add(sample):
            skipped += 1
    if skipped:
        # (a sample was skipped: the builder holds another event)
        sys.stderr.write("perfdata: note: pprof holds one event (%s); %d samples of other "
                         "events left out\n"
                         % (builder.event.name, skipped))  # type: ignore[union-attr]
    if not builder.samples:
        sys.stderr.write("perfdata: note: no samples; the profile is empty\n")
    try:
        stream.write(gzip.compress(builder.encode()))
    finally:
        if close:
            stream.close()


def run_parquet(args: argparse.Namespace, out: TextIO) -> None:
    from .parquet import output_dir, require_pyarrow, write_dataset
    require_pyarrow()
    directory = output_dir(args.output)
    rows = write_dataset(SampleRun(args, "export"), directory)
    if not rows["samples"]:
        sys.stderr.write("perfdata: note: no samples; the tables are empty\n")
