"""The compiled core's driver for `perfdata collapse`: the folded stacks of
frame-pointer (-g) samples counted by perfdata.core._core, the others by the
Python path (views/collapse.py collapse_samples), into one table.

The core walks each sample as for `perfdata script` (perfdata/core/script.py
says how, and what it hands back); what it keeps of a frame is its folded
name as stackcollapse-perf.pl makes it (run/folded.py frame_names of the frames
the resolver gives), and each sample adds its period (or 1) to
counts["root;...;leaf"].  The event filter is the Python path's own object,
asked once an event at its first sample (its answer does not change after
the first event seen): the events it leaves out, stacks rooted at a java
comm (named otherwise) and --addrs go to the Python path.  The table is the
same as the Python path's (tests/core/test_core_equality.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..format import SampleType as ST
from ..resolve.frames import StackFrame
from ..resolve.symbolized import SymbolizedSample
from ..run.folded import frame_names, shows_period, stack_names
from .script import ScriptCore

if TYPE_CHECKING:
    import types
    from collections.abc import Iterator, Sequence

    from ..format import EventAttr
    from ..resolve.symbolized import SampleSymbolizer
    from ..run.folded import CollapseOptions, EventFilter
    from .script import Plan


class CollapseCore(ScriptCore):
    """The samples of a SampleSymbolizer the Python path counts (the core
    added the others to `counts` itself), symbolized."""

    # (kernel frames asked for: the kernel's table is the script lines')
    _KERNEL_TABLES = False

    def __init__(self, module: types.ModuleType, samples: SampleSymbolizer,
                 opts: CollapseOptions, events: EventFilter, counts: dict[str, int]) -> None:
        self.opts = opts
        self.events = events
        super().__init__(module, samples, None, 0, counts)  # type: ignore[arg-type]

    @staticmethod
    def applies_to(samples: SampleSymbolizer, opts: CollapseOptions) -> bool:
        """Whether the core counts any of the run's samples: no filters, no
        DWARF unwinder, no stitching, no --addrs."""
        return ScriptCore.applies(samples, None) and not opts.addrs

    def __iter__(self) -> Iterator[SymbolizedSample]:  # type: ignore[override]
        return self._handed_back()

    # ------------------------------------------------------- the answers
    def _plan(self, event: EventAttr) -> Plan | None:
        """The folded stacks' plan of the event's samples: their root and
        weight, where their fields are; None for the events the filter
        leaves out (the Python path reads their stacks all the same) and
        what the core does not read."""
        module = self.module
        keep = self.events.keep(event)
        st = event.sample_type
        if not keep or not event.has_callchain or event.lbr_call_stack or \
                event.reads_group or st & ST.READ or not st & ST.TID:
            return None
        flags = module.H_FOLDED | module.H_PLAIN_FRAMES
        if self.opts.tid:
            flags |= module.H_ROOT_TID
        elif self.opts.pid:
            flags |= module.H_ROOT_PID
        if self.opts.weight != "samples" and shows_period(event):
            flags |= module.H_WEIGHT_PERIOD
        offsets = self._offsets(event)
        if offsets is None:
            return None
        return (flags, b"", None, None) + offsets + (event.attr["sample_period"], 0)

    def _format_of(self, event: EventAttr) -> int:
        return 0        # (one way to fold a frame a run)

    def _frames_text(self, found: Sequence[StackFrame], event: EventAttr) -> str:
        """An entry's folded names, root first (collapse.stack_names)."""
        return ";".join(stack_names(found, self.opts))

    def _no_map_parts(self, data: bytes, avma: int) -> tuple[bytes, bytes] | None:
        """A folded name of a frame in no map names no address."""
        return None if (b"%x" % avma) in data else (data, b"")

    def _table_dso(self, shown: str) -> str:
        """What a frame of the binary in no symbol folds to."""
        return self._fold(None, shown)

    def _symbol_text(self, name: str, shown: str) -> str:
        return self._fold(name, shown)

    def _fold(self, name: str | None, shown: str) -> str:
        # (a frame as the resolver makes one of the binary: only its name
        # and dso are read with --addrs off)
        frame = StackFrame(None, 0, name, 0 if name is not None else None, shown)
        return ";".join(frame_names(frame, self.opts))
