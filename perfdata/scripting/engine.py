"""Run a perf Python script over a recording, as `perf script -s` does.

perf 6.1's order: the script's top level runs (as `__main__`, sys.argv =
[script, args...]), then trace_begin(), then every sample in time order,
then trace_end().  Handlers are looked up in the script's namespace at each
event, as perf does.

A tracepoint sample calls `<system>__<event>(event_name, context,
common_cpu, common_secs, common_nsecs, common_pid, common_comm,
common_callchain, <fields...>)`, with the perf_sample_dict added where the
handler takes exactly one more positional argument (perf counts
`__code__.co_argcount`); without that handler `trace_unhandled(event_name,
context, event_fields_dict)` (+ perf_sample_dict likewise), whose dict holds
common_cpu, common_s, common_ns, common_pid, common_comm, common_callchain
and the fields.  Any other sample calls `process_event(param_dict)`.
PERF_RECORD_SWITCH records call `context_switch(ts, cpu, pid, tid,
np_pid, np_tid, machine_pid, out, out_preempt)` and THROTTLE/UNTHROTTLE
records `throttle`/`unthrottle(time, id, stream_id, cpu, pid, tid)`.

perf 6.1 has no process_comm, process_fork, process_exit, process_mmap or
lost-event handlers for Python: none are called here either.  The
`stat__*` handlers (perf stat record files), the database export tables
(perf_db_export_mode) and auxtrace_error are not supported.

A handler that raises ends the run as in perf (which aborts): the script's
traceback on standard error, then a one-line error, exit 2.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
import types
from typing import TYPE_CHECKING, Any, Callable, TextIO

from ..format import Feature, RecordType as RT, PerfDataError
from ..views.errors import CommandError
from . import context as context_mod
from .exec_path import find_exec_path, helpers_dir
from .fields import FieldReader, define_event_symbols
from .params import ParamBuilder

if TYPE_CHECKING:
    from ..format import PerfFile, EventFormat
    from ..session.stream import SideEvent
    from ..resolve.symbolized import SymbolizedSample

PERF_TYPE_TRACEPOINT = 2
_NS_PER_SEC = 1_000_000_000
_U64 = (1 << 64) - 1


class ScriptError(CommandError):
    """A script that cannot be read, or a handler that raised."""


def argument_count(handler: Any) -> int:
    """perf's get_argument_count(): the handler's __code__.co_argcount (0
    for a callable without one)."""
    code = getattr(handler, "__code__", None)
    count = getattr(code, "co_argcount", 0)
    return count if isinstance(count, int) else 0


class ScriptRun:
    """One script's run over one file."""

    def __init__(self, pf: PerfFile, args: argparse.Namespace, script: str,
                 script_args: list[str]) -> None:
        self.pf = pf
        self.args = args
        self.script = script
        self.script_args = list(script_args)
        self.context = context_mod.ScriptContext()
        self.namespace: dict[str, Any] = {}
        self.formats: dict[int, EventFormat] = {}
        self.readers: dict[int, FieldReader] = {}
        self.defined: set[int] = set()
        self.long_size = 8

    # ------------------------------------------------------------ handlers
    def handler(self, name: str) -> Callable[..., Any] | None:
        """perf's get_handler(): the name in the script's namespace, if callable."""
        found = self.namespace.get(name)
        return found if callable(found) else None

    def call(self, name: str, handler: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            handler(*args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self.fail(name, exc)

    def try_call(self, name: str, args: tuple[Any, ...] = ()) -> None:
        handler = self.handler(name)
        if handler is not None:
            self.call(name, handler, args)

    def fail(self, where: str, exc: BaseException) -> None:
        """The script's traceback (its own frames, not the engine's), then
        the one-line error."""
        sys.stdout.flush()
        tb = exc.__traceback__
        # (the first frame is this module's call into the script)
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
        raise ScriptError("%s: problem in Python handler %s: %s: %s"
                          % (self.script, where, type(exc).__name__, exc)) from None

    # ---------------------------------------------------------------- run
    def run(self) -> None:
        try:
            with open(self.script, "rb") as src:
                source = src.read()
        except OSError as exc:
            raise ScriptError("Can't open python script \"%s\": %s"
                              % (self.script, exc.strerror or exc)) from None
        try:
            code = compile(source, self.script, "exec")
        except (SyntaxError, ValueError) as exc:
            traceback.print_exception(type(exc), exc, None, file=sys.stderr)
            raise ScriptError("Error running python script %s" % self.script) from None
        saved = (sys.argv, list(sys.path), sys.modules.get("__main__"),
                 os.environ.get("PERF_EXEC_PATH"))
        restore_context = context_mod.install(self.context)
        main = types.ModuleType("__main__")
        main.__file__ = self.script
        self.namespace = main.__dict__
        try:
            self._set_paths()
            sys.argv = [self.script] + self.script_args
            sys.modules["__main__"] = main
            try:
                exec(code, self.namespace)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self.fail("(the script's top level)", exc)
            self.namespace["perf_script_context"] = self.context
            self.try_call("trace_begin")
            self._events()
            self.try_call("trace_end")
            sys.stdout.flush()
        finally:
            sys.argv, sys.path[:] = saved[0], saved[1]
            if saved[2] is not None:
                sys.modules["__main__"] = saved[2]
            if saved[3] is None:
                os.environ.pop("PERF_EXEC_PATH", None)
            else:
                os.environ["PERF_EXEC_PATH"] = saved[3]
            restore_context()

    def _set_paths(self) -> None:
        """sys.path[0] is the script's folder (PySys_SetArgv); PERF_EXEC_PATH
        the installed perf's exec folder, whose Perf/Trace helpers are also
        on sys.path."""
        sys.path.insert(0, os.path.dirname(os.path.abspath(self.script)))
        exec_path = find_exec_path()
        if exec_path is None:
            sys.stderr.write("perfdata: warning: perf's Perf-Trace-Util helpers (Core, Util) "
                             "were not found: install linux-perf or set PERF_EXEC_PATH\n")
            return
        os.environ["PERF_EXEC_PATH"] = exec_path
        sys.path.append(helpers_dir(exec_path))

    def _side_events(self) -> set[int]:
        wanted: set[int] = set()
        if self.handler("context_switch") is not None:
            wanted |= {RT.SWITCH, RT.SWITCH_CPU_WIDE}
        if self.handler("throttle") is not None or self.handler("unthrottle") is not None:
            wanted |= {RT.THROTTLE, RT.UNTHROTTLE}
        return wanted

    def _events(self) -> None:
        from ..session.stream import SideEvent
        from ..resolve.symbolized import SymbolizedSample
        from ..resolve import build_sample_symbolizer
        from ..run.profile import print_warnings
        from ..views.options import resolve_options
        from ..views.regs import perf_arch
        pf = self.pf
        self.formats = pf.tracepoint_formats()
        tracing = pf.tracing()
        if tracing is not None:
            from ..tracefmt import trace_long_size
            self.long_size = trace_long_size(tracing)
        arch = None
        try:
            arch = pf.feature(Feature.ARCH)
        except PerfDataError:
            pass
        # (perf_sample_srcline names the file by the whole path addr2line
        # gives, as script's --full-source-path prints it)
        args = argparse.Namespace(**vars(self.args))
        args.full_source_path = True
        samples = build_sample_symbolizer(pf, resolve_options(args),
                                          side_events=self._side_events())
        self.params = ParamBuilder(samples, perf_arch(arch))
        try:
            for item in samples:
                kind = type(item)
                if kind is SymbolizedSample:
                    self._sample(item)   # type: ignore[arg-type]
                elif kind is SideEvent:
                    self._side(item)     # type: ignore[arg-type]
        finally:
            sys.stdout.flush()
            print_warnings(pf, samples.symbolizer.warnings)

    # -------------------------------------------------------------- samples
    def _sample(self, sample: SymbolizedSample) -> None:
        params = self.params
        # (perf_sample_srcline/srccode: the current sample's, asked for)
        self.context.srcline = lambda: params.srcline(sample)
        if sample.event.attr["type"] == PERF_TYPE_TRACEPOINT:
            self._tracepoint(sample)
            return
        handler = self.handler("process_event")
        if handler is not None:
            self.call("process_event", handler, (self.params.param_dict(sample),))

    def _tracepoint(self, sample: SymbolizedSample) -> None:
        config = sample.event.attr["config"]
        fmt = self.formats.get(config)
        if fmt is None:
            return          # (perf dies: "ug! no event found"; a file without its format)
        reader = self.readers.get(config)
        if reader is None:
            reader = self.readers[config] = FieldReader(fmt)
        name = "%s__%s" % (fmt.system, fmt.name)
        if config not in self.defined:
            self.defined.add(config)
            define_event_symbols(fmt, name, self.long_size, self.try_call)
        handler = self.handler(name)
        as_dict = handler is None
        if handler is None:
            handler = self.handler("trace_unhandled")
            if handler is None:
                return
        raw_field = sample.fields.get("raw")
        raw = bytes(raw_field["data"]) if raw_field else b""
        ctx = self.context
        ctx.raw, ctx.format, ctx.little = raw, fmt, fmt.little
        fields = sample.fields
        cpu = fields.get("cpu", -1)
        cpu = cpu - (1 << 32) if cpu >= 1 << 31 else cpu
        time = fields.get("time", _U64)
        secs, nsecs = divmod(time, _NS_PER_SEC)
        pid = reader.pid(raw)
        callchain = self.params.callchain(sample)
        values = reader.values(raw)
        args: list[Any] = [name, ctx]
        if not as_dict:
            args += [cpu, secs, nsecs, pid, sample.comm, callchain]
            args += values
        else:
            event_fields: dict[str, Any] = {
                "common_cpu": cpu, "common_s": secs, "common_ns": nsecs, "common_pid": pid,
                "common_comm": sample.comm, "common_callchain": callchain}
            event_fields.update(zip(reader.names, values))
            args.append(event_fields)
        if argument_count(handler) == len(args) + 1:
            args.append(self.params.param_dict(sample, callchain))
        self.call(name if not as_dict else "trace_unhandled", handler, tuple(args))

    def _side(self, event: SideEvent) -> None:
        rec, f = event.record, event.fields
        sid = f.get("sample_id") or {}
        time = sid.get("time", 0)
        cpu, pid, tid = (_s32(sid.get(k, -1)) for k in ("cpu", "pid", "tid"))
        if rec.type in (RT.SWITCH, RT.SWITCH_CPU_WIDE):
            from ..format import MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT
            out = bool(rec.misc & MISC_SWITCH_OUT)
            preempt = out and bool(rec.misc & MISC_SWITCH_OUT_PREEMPT)
            np_pid = np_tid = -1
            if rec.type == RT.SWITCH_CPU_WIDE:
                np_pid, np_tid = _s32(f.get("next_prev_pid", -1)), _s32(f.get("next_prev_tid", -1))
            # perf 6.1: (ts, cpu, pid, tid, np_pid, np_tid, machine_pid, out, out_preempt)
            self.try_call("context_switch", (time, cpu, pid, tid, np_pid, np_tid, -1, out,
                                             preempt))
        elif rec.type in (RT.THROTTLE, RT.UNTHROTTLE):
            name = "throttle" if rec.type == RT.THROTTLE else "unthrottle"
            self.try_call(name, (f.get("time", 0), f.get("id", 0), f.get("stream_id", 0),
                                 cpu, pid, tid))


def _s32(value: int) -> int:
    value &= 0xffffffff
    return value - (1 << 32) if value >= 1 << 31 else value


def run_script(pf: PerfFile, args: argparse.Namespace, script: str, script_args: list[str],
               out: TextIO) -> None:
    """`perfdata script -s FILE [args]`: run the perf Python script FILE
    over the open file.  The script prints where it prints (its own
    sys.stdout): `out` is flushed first, so the order holds."""
    out.flush()
    ScriptRun(pf, args, script, script_args).run()
