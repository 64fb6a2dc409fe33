"""Samples to named stacks: the layer over the session stream.

    pipeline     ResolveOptions (the options of every symbolizing command:
                 where binaries are found, how frames are named, how stacks
                 are walked, which samples are kept) and
                 build_sample_symbolizer(pf, options), the one factory of
                 the pipeline below
    symbolized   SampleSymbolizer: the session's samples, each with its
                 frames named (filters, stop reasons, side events)
    filters      the sample filters (--pid, --tid, --comm, -C, --time,
                 -S, --dsos) made from parsed values
    frames       StackFrame (one line of a stack) and the FrameResolver:
                 an address in a thread's maps to its frames
    dsos         the binary behind a map (DsoResolver), what the recording
                 says of its binaries (RecordedBinaries)
    jit_sources  a JIT's perf map and jitdump, per process (JitSources)
    stack_caches the resolver's caches of frames and stacks, and their bounds
    unwinding    DWARF stacks from REGS_USER and STACK_USER
    stitch       --stitch: cut stacks completed from the thread's samples
    hitrate      when a cache keeps paying for itself

It stands on perfdata.format and perfdata.session, and on symbolize beside
them; nothing here knows of the commands or their views.  The names below
are imported at their first use (the command line's start-up pays nothing
for them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..faces import import_at_first_use

if TYPE_CHECKING:
    from .pipeline import ResolveOptions, build_sample_symbolizer

_MODULE_OF = {"ResolveOptions": "pipeline", "build_sample_symbolizer": "pipeline"}
__all__ = list(_MODULE_OF)


def __getattr__(name: str) -> Any:
    return import_at_first_use(__name__, _MODULE_OF, name)
