"""perf's Python scripting interface (`perf script -s FILE.py`), run on
perfdata's sessions and names.

A script written for perf runs unmodified: its top level runs as
`__main__` with `sys.argv` = [script, args...], then `trace_begin()`, one
call per sample in perf's time order (`process_event(param_dict)` for
non-tracepoint events, `<system>__<event>(...)` or `trace_unhandled(...)`
for tracepoints), the side-band handlers perf 6.1 calls
(`context_switch`, `throttle`, `unthrottle`) and `trace_end()`.  The
`perf_trace_context` module is importable, and `PERF_EXEC_PATH` names the
installed perf's exec folder, where its GPL-2.0 `Perf-Trace-Util` helpers
(Core, Util, EventClass, SchedGui) live: they are not shipped here.

What perf 6.1 has and perfdata does not: `stat__*` handlers (`perf stat
record` files), the database export tables (`perf_db_export_mode`: the
export-to-sqlite/postgresql scripts), `auxtrace_error` and
`perf_set_itrace_options` (no AUX trace decoding), `perf_sample_insn`
(gives None).

Modules: engine (the run), params (param_dict), fields (tracepoint
arguments as perf passes them), context (perf_trace_context),
exec_path (where perf's helpers are), starter (`-g python`), command (the
`-s`/`-g` options: which arguments are the script's).
"""
from __future__ import annotations

from typing import Any

from ..faces import import_at_first_use

__all__ = ["run_script", "generate_script"]


# (imported when used: `perfdata script` registers -s's argument parsing
# from .command at every start, and the engine is not needed then)
_MODULE_OF = {"run_script": "engine", "generate_script": "starter"}


def __getattr__(name: str) -> Any:
    return import_at_first_use(__name__, _MODULE_OF, name)
