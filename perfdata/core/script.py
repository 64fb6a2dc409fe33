"""The compiled core's driver for `perfdata script`: frame-pointer (-g)
samples made into text by perfdata.core._core, the others by the Python
path, in the same order.

The core knows no binary and no symbol.  It keeps the text of each frame the
Python path made once, by (binary, file offset, is a return address) for an
address in a user map and by (address, is a return address) for a kernel
one, and walks each sample's callchain as FrameResolver._frames_for_callchain
does.  What it lacks it asks for (SampleText.text returns a tuple), and this
driver answers from the session and the resolver, as the Python path would
have at that sample: the event's header plan, the maps of an address space
at its generation, the binary behind a map (FrameResolver.dso_of), the lines
of a frame (FrameResolver.frames_for_address, ScriptFormatter.frame_lines).
A sample the core does not handle exactly (a JIT's map, a DWARF or LBR
stack, a field the core does not print) it hands back, and the Python path
symbolizes and formats it.  The text is the same bytes as the Python path's
(tests/test_core_equality.py), which stays the reference.
"""
from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any

from ..format.constants import CallchainContext as CC, SampleType as ST
from ..frames import INTERRUPT_ENTRIES, STACK_BOTTOMS
from ..session.stream import BuildId, SideEvent
from ..symbolized import SymbolizedSample

if TYPE_CHECKING:
    import types
    from collections.abc import Iterator

    from ..format.eventattr import EventAttr
    from ..session.maps import Map, MapGroup
    from ..symbolized import SampleSymbolizer
    from ..views.script import ScriptFormatter

# Paths the resolver reads a JIT's perf map or jitdump for (FrameResolver's
# _JIT_PATHS): their frames depend on more than the binary and the offset.
_JIT_PATHS = ("//anon", "[anon]", "/memfd:")
# Binaries get spaces from here (0: kernel addresses, 1: user ones in no map).
_FIRST_BINARY = 2
_KERNEL_CONTEXTS = (CC.KERNEL, CC.GUEST_KERNEL, CC.HV)
_CONTEXTS = tuple(int(c) for c in CC if c != CC.MAX)
# the header fields of a plan (ScriptFormatter._header_for), the core's bits
_HEADER_BITS = {"comm": 1, "pid": 2, "tid": 4, "cpu": 8, "time": 16, "period": 32, "event": 64}
_NANOSECS = 128


class ScriptCore:
    """The items of a SampleSymbolizer for `perfdata script`'s loop: side
    events as they come, a sample's text (str) where the core made it, else
    the sample itself, symbolized, for ScriptFormatter.format."""

    def __init__(self, module: types.ModuleType, samples: SampleSymbolizer,
                 formatter: ScriptFormatter) -> None:
        self.samples = samples
        self.formatter = formatter
        self.resolver = samples.resolver
        machine = samples.machine
        self.core = module.SampleText(machine.kernel_maps, machine.ksymbols, _CONTEXTS,
                                      tuple(int(c) for c in _KERNEL_CONTEXTS), int(CC.MAX),
                                      samples.max_stack)
        self.need_plan = module.NEED_PLAN
        self.need_maps = module.NEED_MAPS
        self.need_binary = module.NEED_BINARY
        self.need_frame = module.NEED_FRAME
        self.unknown = module.BINARY_UNKNOWN
        self.careful = module.BINARY_CAREFUL
        self.interrupt = module.FRAME_INTERRUPT
        self.bottom = module.FRAME_BOTTOM
        self.careful_frame = module.FRAME_CAREFUL
        # {(path, build-id, shown path): its space}
        self._binaries: dict[tuple[str, str | None, str], int] = {}
        # {id(Map): (the Map, its space)}: a Map is never changed once in a
        # group, and forked processes share them
        self._map_binary: dict[int, tuple[Map, int]] = {}
        self.handled = 0        # samples the core made the text of
        self.handed_back = 0    # samples the Python path made

    @staticmethod
    def applies(samples: SampleSymbolizer, args: Any) -> bool:
        """Whether a run's options leave the samples to the core at all:
        plain text (no --json), no filters, no DWARF unwinder, no stitching,
        no relative times, stacks shown."""
        return not (getattr(args, "json", False) or samples.filters is not None or
                    samples.leaf_filter is not None or samples.unwinder is not None or
                    samples.stitcher is not None or samples.unwind == "none" or
                    getattr(args, "reltime", False) or getattr(args, "deltatime", False) or
                    getattr(args, "hide_call_graph", False))

    def __iter__(self) -> Iterator[SymbolizedSample | SideEvent | str]:
        """SampleSymbolizer.__iter__ and _samples without filters or
        stitching, with the core making the samples' text where it can."""
        samples = self.samples
        stream = samples.stream
        counts = samples.counts
        build_ids = samples.build_ids
        text_of = self.core.text
        resolve = self._resolve
        symbolize = samples.symbolize
        try:
            for event in stream:
                kind = type(event)
                if kind is SymbolizedSample:
                    text = text_of(event)
                    while type(text) is tuple:
                        resolve(event, text)
                        text = text_of(event)
                    counts["samples"] += 1
                    if text is None:
                        self.handed_back += 1
                        symbolize(event)
                        yield event
                    else:
                        self.handled += 1
                        yield text
                elif kind is SideEvent:
                    yield event
                elif kind is BuildId:
                    build_ids.setdefault(event.path, event.build_id)
        finally:
            flush = getattr(samples.symbolizer, "flush", None)
            if flush is not None:
                flush()

    # ------------------------------------------------------- the answers
    def _resolve(self, sample: SymbolizedSample, need: tuple[Any, ...]) -> None:
        kind = need[0]
        if kind == self.need_frame:
            self._add_frame(sample, *need[1:])
        elif kind == self.need_binary:
            self._bind(*need[1:])
        elif kind == self.need_maps:
            self._set_maps(need[1])
        elif kind == self.need_plan:
            self.core.set_plan(need[1], self._plan(need[1]))
        else:
            raise AssertionError("the core asked for %r" % (need,))

    def _plan(self, event: EventAttr) -> tuple[int, bytes] | None:
        """The header of the event's samples as the core prints it, or None
        where ScriptFormatter prints more than the core does."""
        fmt = self.formatter
        if not event.has_callchain or event.lbr_call_stack or event.reads_group or \
                event.sample_type & ST.READ:
            return None
        fields = fmt.fields_for(event)
        if not fields or "ip" not in fields or fmt.reltime is not None:
            return None
        if not set(fields) <= set(_HEADER_BITS) | {"ip", "sym", "symoff", "dso", "srcline"}:
            return None
        flags = 0
        for name, bit in _HEADER_BITS.items():
            if name in fields:
                flags |= bit
        if "cpu" in fields and not event.sample_type & ST.CPU:
            flags &= ~_HEADER_BITS["cpu"]
        if fmt.nanosecs:
            flags |= _NANOSECS
        text = ("%*s: " % (fmt.name_width(), event.name)) if "event" in fields else ""
        try:
            return flags, text.encode("utf-8")
        except UnicodeEncodeError:
            return None

    def _set_maps(self, group: MapGroup) -> None:
        maps = list(group)
        bounds = array("Q")
        binaries = []
        known = self._map_binary
        for m in maps:
            bounds.extend((m.start, m.end, m.pgoff))
            got = known.get(id(m))
            binaries.append(got[1] if got is not None and got[0] is m else self.unknown)
        self.core.set_maps(group, group.generation, bounds.tobytes(), maps, binaries)

    def _bind(self, group: MapGroup, index: int, m: Map) -> None:
        """The binary behind a map, as the resolver names it (dso_of, at the
        first frame in that map: as the Python path, which asks it there)."""
        resolver = self.resolver
        if m.build_id is None and m.path in resolver.build_id_choices:
            # (which of a path's build-ids is this map's changes as its
            # other files' maps come: asked again at every frame)
            space = self.careful
        else:
            path, bid = resolver.dso_of(m)
            if path.startswith(_JIT_PATHS):
                space = self.careful
            else:
                key = (path, bid, m.path)
                space = self._binaries.get(key, -1)
                if space < 0:
                    space = self._binaries[key] = _FIRST_BINARY + len(self._binaries)
        if len(self._map_binary) > (1 << 16):
            self._map_binary.clear()
        self._map_binary[id(m)] = (m, space)
        self.core.bind(group, index, space)

    def _add_frame(self, sample: SymbolizedSample, avma: int, kernel: int, is_ret: int,
                   space: int, key: int) -> None:
        """The lines of the frames of an address (the resolver's, formatted
        by the formatter's own frame_lines) and what the callchain's walk
        reads of their last symbol."""
        found = self.resolver.frames_for_address(sample, avma, bool(kernel), bool(is_ret))
        text = self.formatter.frame_lines(found, sample.event)
        flags = 0
        symbol = found[-1].symbol if found else None
        if symbol is not None:
            if symbol.startswith(INTERRUPT_ENTRIES):
                flags |= self.interrupt
            if symbol in STACK_BOTTOMS:
                flags |= self.bottom
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            # (a name read with surrogateescape: the Python path prints it)
            data, flags = b"", self.careful_frame
        self.core.add_frame(space, key, is_ret, flags, data)
