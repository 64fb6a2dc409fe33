"""The `perf_trace_context` module perf builds into its interpreter.

Handlers get a `context` (perf: a capsule of its scripting_context) that
they hand back to these functions; `perf_script_context` is the same
object, set in the module and in the script's namespace.  perf 6.1's
functions: common_pc, common_flags, common_lock_depth (the common_* fields
of the current tracepoint sample; common_lock_depth is 0 where the format
has none, as perf 6.1 gives it),
perf_sample_insn, perf_set_itrace_options, perf_sample_srcline,
perf_sample_srccode.
"""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..format import EventFormat

MODULE_NAME = "perf_trace_context"


class ScriptContext:
    """What perf's scripting_context holds for the functions below: the
    current sample's raw tracepoint data and format, and how to find the
    source line of its ip."""
    __slots__ = ("raw", "format", "little", "srcline")

    def __init__(self) -> None:
        self.raw: bytes = b""
        self.format: EventFormat | None = None
        self.little = True
        # () -> (source file or None, line): the current sample's ip
        self.srcline: Callable[[], tuple[str | None, int]] = lambda: (None, 0)

    def common(self, name: str, missing: int = -1) -> int:
        """A common_* field of the current tracepoint sample, as
        libtraceevent's __parse_common reads it: unsigned, of its size; -1
        where the format has no such field."""
        fmt = self.format
        field = fmt.field(name) if fmt is not None else None
        if field is None or field.size not in (1, 2, 4, 8):
            return missing
        raw = self.raw
        if field.offset + field.size > len(raw):
            return 0
        value = int.from_bytes(raw[field.offset:field.offset + field.size],
                               "little" if self.little else "big")
        # (Py_BuildValue("i") of a C int)
        value &= 0xffffffff
        return value - (1 << 32) if value >= 1 << 31 else value


def _context(args: tuple[Any, ...], name: str) -> ScriptContext:
    if not args or not isinstance(args[0], ScriptContext):
        raise TypeError("%s() takes the context perf passed to the handler" % name)
    return args[0]


def _source_line_text(path: str | None, line: int) -> str | None:
    """The text of line `line` of a source file (perf's find_sourceline), or
    None where the file or the line is not there."""
    if not path or line <= 0:
        return None
    try:
        with open(path, "rb") as src:
            for number, text in enumerate(src, 1):
                if number == line:
                    # (perf's: up to the newline, without it)
                    return text.rstrip(b"\n").decode("utf-8", "replace")
    except OSError:
        return None
    return None


def make_module(context: ScriptContext) -> types.ModuleType:
    """A fresh perf_trace_context module bound to `context`."""
    module = types.ModuleType(MODULE_NAME)

    def common_pc(*args: Any) -> int:
        return _context(args, "common_pc").common("common_preempt_count")

    def common_flags(*args: Any) -> int:
        return _context(args, "common_flags").common("common_flags")

    def common_lock_depth(*args: Any) -> int:
        # (kernels since 2.6.37 have no common_lock_depth: perf 6.1 gives 0)
        return _context(args, "common_lock_depth").common("common_lock_depth", 0)

    def perf_sample_insn(*args: Any) -> bytes | None:
        # perf decodes the instruction at the ip with its x86 decoder (and
        # carries Intel PT's); perfdata has no instruction decoder.
        _context(args, "perf_sample_insn")
        return None

    def perf_set_itrace_options(*args: Any) -> int:
        # No AUX area (Intel PT, CoreSight) decoding: perf's answer for a
        # session without instruction-trace options.
        _context(args, "perf_set_itrace_options")
        return -1

    def perf_sample_srcline(*args: Any) -> tuple[str | None, int]:
        return _context(args, "perf_sample_srcline").srcline()

    def perf_sample_srccode(*args: Any) -> tuple[str | None, int, str | None]:
        path, line = _context(args, "perf_sample_srccode").srcline()
        return path, line, _source_line_text(path, line)

    for fn in (common_pc, common_flags, common_lock_depth, perf_sample_insn,
               perf_set_itrace_options, perf_sample_srcline, perf_sample_srccode):
        fn.__module__ = MODULE_NAME
        setattr(module, fn.__name__, fn)
    module.perf_script_context = context     # type: ignore[attr-defined]
    return module


def install(context: ScriptContext) -> Callable[[], None]:
    """Make `import perf_trace_context` give a module bound to `context`;
    returns what puts the previous one back."""
    previous = sys.modules.get(MODULE_NAME)
    sys.modules[MODULE_NAME] = make_module(context)

    def restore() -> None:
        if previous is None:
            sys.modules.pop(MODULE_NAME, None)
        else:
            sys.modules[MODULE_NAME] = previous
    return restore
