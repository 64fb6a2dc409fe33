"""`perfdata script`, the command: its options, and the run that prints
every sample (script_formatter.py) and side event (script_side_events.py)
as perf script does, in one process or in -j workers (perfdata/run), the
compiled core (perfdata/core) making the samples' text where it can.

-s FILE and -g LANG, perf's scripting, run perfdata/scripting in place of
this: the command line (perfdata/cli.py) adds those options and dispatches
them (a view imports nothing above its floor).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from ..format import PerfDataError, RecordType as RT
from .script_fields import check_output_fields, field_spec, field_warnings
from .script_formatter import ScriptFormatter, ScriptOptions
from .script_side_events import SHOW_EVENTS, side_event_types

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Generator, Iterable

    from ..format import PerfFile
    from ..resolve.frames import StackFrame
    from ..session.stream import SideEvent
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample
    from .header import PipeFeaturePrinter
    from ..run.sharded import ErrorFields, Shard, WorkerWarning


def add_script_options(p: argparse.ArgumentParser) -> None:
    """perf script's own options (perf 6.1's spellings), besides -F, --json
    and the options every symbolizing command shares."""
    p.add_argument("--ns", action="store_true", help="nanosecond timestamps")
    from ..run.sharded import add_jobs_argument
    add_jobs_argument(p)
    p.add_argument("-G", "--hide-call-graph", action="store_true",
                   help="samples on one line, with their own ip only (no stack)")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--reltime", action="store_true",
                      help="times relative to the first line printed")
    when.add_argument("--deltatime", action="store_true",
                      help="times relative to the line printed before")
    p.add_argument("--header", action="store_true",
                   help="print the file's header (as perfdata header) first")
    p.add_argument("--header-only", action="store_true", help="print the header only")
    p.add_argument("-I", "--show-info", action="store_true",
                   help="with --header: topology, caches, pmu caps too")
    p.add_argument("--show-kernel-path", action="store_true",
                   help="name the kernel by the --vmlinux its symbols came from")
    p.add_argument("--full-source-path", action="store_true",
                   help="srcline with the source file's whole path")
    for name, what, _ in SHOW_EVENTS:
        p.add_argument("--show-%s-events" % name, action="store_true",
                       help="also %s records" % what)


def script_header(pf: PerfFile, args: argparse.Namespace
                  ) -> tuple[str, PipeFeaturePrinter | None]:
    """--header, --header-only (-I: the full form): the header as perf
    script prints it first, and for a pipe the printer of the features that
    come in the stream (perf prints them as it meets them; with
    --header-only it stops before)."""
    from .header import PipeFeaturePrinter, describe_header, describe_pipe_header_start
    if not pf.is_pipe:
        return describe_header(pf, full=args.show_info), None
    printer = PipeFeaturePrinter(pf, full=args.show_info)
    printer.record_type = RT.HEADER_FEATURE
    return describe_pipe_header_start(pf), printer



def sample_to_json(sample: SymbolizedSample) -> str:
    import json                 # (--json only: start-up time)
    return json.dumps({
        "comm": sample.comm, "pid": sample.pid, "tid": sample.tid, "time": sample.time,
        "cpu": sample.cpu, "period": sample.period, "event": sample.event.name,
        "ip": sample.ip, "stop_reason": sample.stop_reason,
        "frames": [_frame_json(fr) for fr in sample.frames],
    })


def _frame_json(fr: StackFrame) -> dict[str, Any]:
    out: dict[str, Any] = {"address": fr.avma, "printed_address": fr.address, "symbol": fr.symbol,
           "offset": fr.offset, "dso": fr.dso, "dso_path": fr.dso_path,
           "build_id": fr.build_id, "source": fr.source, "inlined": fr.inlined,
           "srcline": fr.srcline, "kernel": fr.kernel}
    if fr.stitched:
        out["stitched"] = True      # (only then: the default output is unchanged)
    return out


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
             scripting_options: Callable[[argparse.ArgumentParser], None] | None = None
             ) -> argparse.ArgumentParser:
    """The script command's parser; scripting_options(parser) adds perf's
    scripting (-s, -g), which the command line has perfdata/scripting run
    (in perf's --help order: after -F and --json)."""
    from .options import add_force_argument, add_input_argument, add_symbolize_options
    p = subparsers.add_parser("script", help="samples with symbolized stacks, as perf script")
    add_input_argument(p)
    add_force_argument(p)
    p.add_argument("-F", "--fields", type=field_spec, help="fields, with perf's syntax")
    p.add_argument("--json", action="store_true", help="one JSON object per sample")
    if scripting_options is not None:
        scripting_options(p)
    add_script_options(p)
    add_symbolize_options(p, unsigned_max_stack=True)
    p.set_defaults(func=run)
    return p


# Samples per block of a sharded run (-j): big enough that a block's text is
# one write and the workers seldom wait on each other.
SHARD_BLOCK = 512


def script_jobs(args: argparse.Namespace, pf: PerfFile) -> int:
    """How many worker processes print this run: -j (default: the machine's
    cores), but one where the output needs every sample in one process
    (--reltime and --deltatime carry the previous sample's time, --stitch
    the thread's other samples), where the input cannot be read again (a
    pipe) or is too small to gain, and by default where the compiled core
    makes the samples' text (perfdata/core/script.py) or the stacks are
    unwound by DWARF (sharded.default_jobs)."""
    from ..run.sharded import default_jobs
    if args.reltime or args.deltatime or getattr(args, "stitch", False) or \
            args.show_round_events:
        return 1
    if args.jobs is None:
        from ..core.script import takes_most_samples
        if takes_most_samples(args, pf):
            return 1
    return default_jobs(args, pf)


def _script_run(pf: PerfFile, args: argparse.Namespace, side: set[int],
                features: PipeFeaturePrinter | None, shard: Shard | None = None
                ) -> tuple[SampleSymbolizer, ScriptFormatter]:
    """The symbolized samples and their formatter for one process's run."""
    from ..resolve import build_sample_symbolizer
    from .options import resolve_options, shown_kernel_path
    # perf script --show-round-events turns its time ordering off.
    samples = build_sample_symbolizer(pf, resolve_options(args), side_events=side,
                                      order="file" if args.show_round_events else "time",
                                      shard=shard)
    options = ScriptOptions(args.fields, nanosecs=args.ns,
                            hide_call_graph=args.hide_call_graph, reltime=args.reltime,
                            deltatime=args.deltatime, full_source_path=args.full_source_path,
                            kernel_path=shown_kernel_path(samples, args))
    fmt = ScriptFormatter(pf, options, kernel_symbols=samples.kernel_symbols,
                          feature_printer=features, data_frame=samples.data_frame)
    return samples, fmt


def _script_items(samples: SampleSymbolizer, fmt: ScriptFormatter, args: argparse.Namespace,
                  block: int = 0, as_bytes: bool = False
                  ) -> Iterable[SymbolizedSample | SideEvent | tuple[int, str | bytes]]:
    """The run's samples and side events; where the compiled core is built
    (perfdata.core) and the options leave the samples to it, the samples it
    makes the text of come as (ordinal of the last, their text), the same
    bytes as format(), one item a block of `block` samples (0: any number);
    as UTF-8 bytes with as_bytes."""
    from ..core import compiled
    module = compiled()
    if module is None:
        return samples
    from ..core.script import ScriptCore
    if not ScriptCore.applies(samples, args):
        # (the samples the Python path's; their records the C walk's)
        from ..core.walk import deliver_all
        deliver_all(module, samples.stream)
        return samples
    return ScriptCore(module, samples, fmt, block, as_bytes=as_bytes)


def _script_blocks(args: argparse.Namespace, side: set[int],
                   features: PipeFeaturePrinter | None, shard: Shard, errors: str | None = None
                   ) -> Generator[tuple[int, str | bytes], None,
                                  tuple[int, list[WorkerWarning], ErrorFields | None]]:
    """One worker of a sharded run (sharded.run_sharded): (block, text) for
    the blocks of shard; returns (SAMPLE records seen, warnings, error).
    errors: each block's text as UTF-8 bytes, encoded with these errors
    (the output's), for an output that takes them (utf8_buffer): no decode
    and encode again in the printing process; None: as str."""
    from ..session.stream import SideEvent
    from ..run.profile import open_profile
    from ..run.sharded import describe_error, start_shard, worker_warnings
    block = shard[0]
    pf = open_profile(args.file, args.strict)
    samples, fmt = _script_run(pf, args, side, features, shard)
    start_shard(pf, samples, shard)
    current: int | None
    parts: list[str | bytes]
    error: ErrorFields | None
    current, parts, error = None, [], None
    try:
        for item in _script_items(samples, fmt, args, block, as_bytes=errors is not None):
            if type(item) is SideEvent:
                if args.json:
                    continue
                k, text = samples.ordinal // block, fmt.format_side_event(item)
            elif type(item) is tuple:
                # (the text of samples of one block, made by the compiled core)
                k, text = (item[0] - 1) // block, item[1]  # type: ignore[assignment]
            else:
                k = (samples.ordinal - 1) // block
                # (not a side event: a sample)
                text = sample_to_json(item) + "\n" if args.json else fmt.format(item)  # type: ignore[arg-type]
            if k != current:
                if parts:
                    yield current, _joined(parts, errors)  # type: ignore[misc]  # (parts: current is set)
                    parts = []
                current = k
            parts.append(text)
    except PerfDataError as exc:
        error = describe_error(exc)
    if parts:
        yield current, _joined(parts, errors)  # type: ignore[misc]  # (as above)
    return samples.ordinal, worker_warnings(pf, samples), error


def _joined(parts: list[str | bytes], errors: str | None) -> str | bytes:
    """A block's texts as one: str (errors None), or UTF-8 bytes encoded
    with `errors` (the compiled core's texts are UTF-8 bytes already)."""
    if errors is None:
        return "".join(parts)  # type: ignore[arg-type]  # (all str without as_bytes)
    if not any(type(p) is bytes for p in parts):
        return "".join(parts).encode("utf-8", errors)  # type: ignore[arg-type]  # (all str)
    return b"".join(p if type(p) is bytes else p.encode("utf-8", errors)  # type: ignore[union-attr]
                    for p in parts)


def run(args: argparse.Namespace, out: TextIO) -> None:
    """`perfdata script`: every sample as perf script prints it."""
    import sys
    from ..session.stream import SideEvent
    from ..run.profile import open_profile, print_warnings
    from ..run.progress import sample_progress
    pf = open_profile(args.file, args.strict)
    side = side_event_types(args)
    features = None
    if args.header or args.header_only:
        text, features = script_header(pf, args)
        out.write(text)
        if args.header_only:
            print_warnings(pf)
            return
        if features is not None:
            side.add(features.record_type)
    for warning in dict.fromkeys(field_warnings(args.fields)):
        sys.stderr.write("perfdata: warning: %s\n" % warning)
    check_output_fields(pf, args.fields)
    jobs = script_jobs(args, pf)
    if jobs > 1:
        from ..run.sharded import run_sharded
        from ..core.script import utf8_buffer
        # (the workers' texts, where out writes UTF-8, as bytes to its buffer)
        buffer = utf8_buffer(out)
        errors = (getattr(out, "errors", None) or "strict") if buffer is not None else None
        if buffer is not None:
            out.flush()
        try:
            warnings = run_sharded(jobs, SHARD_BLOCK,
                                   lambda shard: _script_blocks(args, side, features, shard,
                                                                errors),
                                   out.write if buffer is None else buffer.write)
        except PerfDataError as exc:
            print_warnings(pf, getattr(exc, "warnings", ()))
            raise
        print_warnings(pf, warnings)
        return
    samples, fmt = _script_run(pf, args, side, features)
    # (the text needs a sample's fields and frames, not its record's bytes)
    samples.let_go_of_stack_copies()
    from ..core.script import utf8_buffer
    # (the compiled core's texts, where out writes UTF-8, go to its buffer)
    buffer = utf8_buffer(out)
    # Text goes out in batches: one write per sample pays the text layer's
    # per-call work once a sample, a batch of 256 once in 256.
    pending: list[str] = []
    add = pending.append
    try:
        for item in sample_progress(_script_items(samples, fmt, args,
                                                  as_bytes=buffer is not None), pf, "script"):
            if type(item) is SideEvent:
                if not args.json:
                    add(fmt.format_side_event(item))
            elif type(item) is tuple:
                # (samples' text, made by the compiled core)
                if type(item[1]) is bytes:
                    out.write("".join(pending))
                    pending.clear()
                    out.flush()
                    buffer.write(item[1])
                else:
                    add(item[1])  # type: ignore[arg-type]
            else:
                # (not a side event: a sample)
                add(sample_to_json(item) + "\n" if args.json else fmt.format(item))  # type: ignore[arg-type]
            if len(pending) >= 256 or type(item) is tuple:
                # (the compiled core's texts come a few hundred KiB at once)
                out.write("".join(pending))
                pending.clear()
    finally:
        # (also before an error: what was decoded before the fault is printed)
        out.write("".join(pending))
        print_warnings(pf, samples.symbolizer.warnings)
