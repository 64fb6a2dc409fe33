"""The compiled core's driver for `perfdata script`: frame-pointer (-g)
samples made into text by perfdata.core._core, the others by the Python
path, in the same order.

The session stream (perfdata.session.stream) walks the records in perf's
time order and follows every side record, as for the Python path; it hands
each SAMPLE record first to the core (SessionStream.sample_text), which
reads the sample's fields where the construct schema puts them, asks the
session for the thread (Machine.thread, as the stream would), and makes the
header line and the stack's lines.  The core knows no binary and no symbol:
it keeps the text of each frame the Python path made once, by (binary, file
offset, is a return address) for an address in a user map and by (address,
is a return address) for a kernel one, and walks each callchain as
FrameResolver._frames_for_callchain does.  What it lacks it asks for, and
this driver answers from the session and the resolver as the Python path
would have at that sample: the event's plan (header fields, offsets), the
maps of an address space at its generation, the binary behind a map
(FrameResolver.dso_of), the lines of a frame (FrameResolver.
frames_for_address, ScriptFormatter.frame_lines).  A sample the core does
not handle exactly (a JIT's map, a DWARF or LBR stack, a field the core does
not print, a body the decoder would refuse) it leaves to the stream, and
the Python path decodes, symbolizes and formats it.  The text is the same
bytes as the Python path's (tests/core/test_core_equality.py), which stays the
reference.
"""
from __future__ import annotations

import sys
from array import array
from typing import TYPE_CHECKING, Any, Protocol

from ..format import AttrType, CallchainContext as CC, LayoutError, SampleType as ST
from ..resolve.frames import INTERRUPT_ENTRIES, STACK_BOTTOMS
from ..resolve.jit_sources import JIT_PATHS
from ..session.machine import KERNEL_DSO
from ..session.stream import BuildId, SideEvent, pid_t
from ..resolve.symbolized import SymbolizedSample
from . import walk
from .layout import sample_offsets

if TYPE_CHECKING:
    import types
    from collections.abc import Callable, Iterator, Sequence

    from ..format import PerfFile, Record
    from ..resolve.frames import StackFrame
    from ..format import EventAttr
    from ..session.maps import Map, MapGroup
    from ..session.threads import Thread
    from ..resolve.symbolized import SampleSymbolizer
    from symbolize import KernelSymbols, SymbolTable

    class ScriptFormatter(Protocol):
        """What the driver asks of the view's formatter (views/script_formatter.py
        ScriptFormatter, handed down by views/script.py): an event's fields,
        the header's time and name widths, and the lines of an address's
        frames, which the core keeps."""
        @property
        def nanosecs(self) -> bool: ...

        @property
        def reltime(self) -> object | None: ...

        @property
        def kernel_path(self) -> str | None: ...

        def fields_for(self, event: EventAttr) -> tuple[str, ...]: ...

        def name_width(self) -> int: ...

        def frame_lines(self, frames: Sequence[StackFrame], event: EventAttr) -> str: ...

    # an event's plan as the core takes it (see SampleText.set_plan)
    Plan = tuple[int, bytes, bytes | None, bytes | None, int, int, int, int, int, int, int, int,
                 int]

# Binaries get spaces from here (0: kernel addresses, 1: user ones in no map).
_FIRST_BINARY = 2
# The build-id of a kernel map's binary in _binaries: the kernel's symbols
# (a map's own path is only the dso printed), not a binary of that path.
_KERNEL_MAP = "kernel map"
# Kernel addresses (x86_64, aarch64): the upper half (FrameResolver looks
# a user address there in no user map up in the kernel's maps).
_KERNEL_HALF = 1 << 63
_KERNEL_CONTEXTS = tuple(int(c) for c in (CC.KERNEL, CC.GUEST_KERNEL, CC.HV))
_CONTEXTS = tuple(int(c) for c in CC if c != CC.MAX)
# the header fields of a plan (ScriptFormatter._header_for), the core's bits
_HEADER_BITS = {"comm": 1, "pid": 2, "tid": 4, "cpu": 8, "time": 16, "period": 32, "event": 64}
_NANOSECS = 128
# the fields whose lines the core prints (the header's, and the stack's,
# which the formatter's frame_lines makes)
_CORE_FIELDS = frozenset(_HEADER_BITS) | {"ip", "sym", "symoff", "dso", "srcline"}
_ALL = (1 << 64) - 1


def utf8_buffer(out: Any) -> Any:
    """The binary buffer under a text output that writes UTF-8 (its text
    is then the same bytes written there after a flush), or None.  The
    core's texts are UTF-8 made of UTF-8 pieces: writing them as bytes skips
    a decode here and an encode in the text layer (26 MB of text on the make
    recording of benchmarks/bench_real.py)."""
    import codecs
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is None or not isinstance(encoding, str):
        return None
    try:
        return buffer if codecs.lookup(encoding).name == "utf-8" else None
    except LookupError:
        return None


def takes_most_samples(args: Any, pf: PerfFile) -> bool:
    """Whether the compiled core is built and would take a run's samples
    (ScriptCore.applies, read off the options and the file's events: a
    callchain in every event that samples, no DWARF unwinding).  Such a run
    is one process by default: the core makes a -g sample's text in
    microseconds, and a second worker costs more (its own walk of every
    record) than it saves."""
    from . import compiled
    if compiled() is None or getattr(args, "json", False) or \
            getattr(args, "reltime", False) or getattr(args, "deltatime", False) or \
            getattr(args, "hide_call_graph", False) or getattr(args, "unwind", "auto") == "none":
        return False
    dwarf = args.unwind in ("auto", "dwarf") if hasattr(args, "unwind") else True
    sampling = [ea for ea in pf.attrs if ea.attr["type"] != AttrType.TRACEPOINT]
    return bool(sampling) and all(
        ea.has_callchain and not (dwarf and ea.sample_type & ST.REGS_USER and
                                  ea.sample_type & ST.STACK_USER)
        for ea in sampling)


class ScriptCore:
    """The items of a SampleSymbolizer for `perfdata script`'s loop: side
    events as they come; the text the core made of the samples since the
    item before, as (ordinal of the last of them, text), one a block of a
    sharded run; the other samples themselves, symbolized, for
    ScriptFormatter.format."""

    def __init__(self, module: types.ModuleType, samples: SampleSymbolizer,
                 formatter: ScriptFormatter, block: int = 0,
                 counts: dict[str, int] | None = None, as_bytes: bool = False) -> None:
        """block: samples per block of a sharded run (0: one process);
        counts: the folded stacks' table (perfdata/core/collapse.py);
        as_bytes: the texts as UTF-8 bytes (for an output that takes them:
        utf8_buffer), not str."""
        self.samples = samples
        self.formatter = formatter
        self.resolver = samples.resolver
        machine = self.machine = samples.machine
        self.core = module.SampleText(machine.thread, self._answer, machine.kernel_maps,
                                      machine.ksymbols, _CONTEXTS, _KERNEL_CONTEXTS,
                                      int(CC.MAX), samples.max_stack, block, counts,
                                      as_bytes, machine.threads)
        self.module = module
        self._answers: dict[int, Callable[..., None]] = {
            module.NEED_BINARY: self._bind,
            module.NEED_FRAME: self._add_frame, module.NEED_NAME: self._name,
            module.NEED_PLAN: self._set_plan}
        # {(path, build-id, shown path): its space}, and the other way
        self._binaries: dict[tuple[str, str | None, str], int] = {}
        self._space_binary: dict[int, tuple[str, str | None, str]] = {}
        # {space: its SymbolTable, or None where the core has none of it}
        self._tables: dict[int, SymbolTable | KernelSymbols | None] = {}
        self._plans: dict[EventAttr, Plan | None] = {}
        # {event: the (before, after) texts of the first user frame in no map
        # the Python path made} (see _learn_no_map)
        self._no_map_seen: dict[EventAttr, tuple[bytes, bytes]] = {}
        self._no_map_avma: dict[EventAttr, int] = {}
        self._formats: dict[tuple[str, ...], int] = {}
        # the sample a frame was last asked for (record, the sample)
        self._asked: tuple[Record | None, SymbolizedSample | None] = (None, None)

    # whether the frames of kernel maps are named by the core from the kernel's
    # symbols (script's lines; a subclass counting other texts: asked for)
    _KERNEL_TABLES = True

    @staticmethod
    def applies(samples: SampleSymbolizer, args: Any) -> bool:
        """Whether a run's options leave the samples to the core at all:
        plain text (no --json), no filters, no DWARF unwinder, no stitching,
        no relative times, stacks shown; a file in the machine's byte order."""
        pf = samples.pf
        return not (getattr(args, "json", False) or samples.filters is not None or
                    samples.leaf_filter is not None or samples.unwinder is not None or
                    samples.stitcher is not None or samples.unwind == "none" or
                    getattr(args, "reltime", False) or getattr(args, "deltatime", False) or
                    getattr(args, "hide_call_graph", False) or
                    pf.ctx.little != (sys.byteorder == "little"))

    def counts(self) -> dict[str, int]:
        """Samples the core made, samples it handed back, frames it keeps."""
        return self.core.counts()  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[SymbolizedSample | SideEvent | tuple[int, str | bytes]]:
        """SampleSymbolizer.__iter__ and _samples without filters or
        stitching, the core taking the samples it can."""
        samples = self.samples
        stream = samples.stream
        counts = samples.counts
        build_ids = samples.build_ids
        take = self.core.take
        symbolize = samples.symbolize
        self._start()
        event: Any      # (told apart by its exact type, kind, below)
        try:
            for event in stream:
                made = event if type(event) is list else take()
                if made:
                    yield from made
                kind = type(event)
                if kind is list:
                    continue        # (the texts made so far: yielded above)
                if kind is SymbolizedSample:
                    counts["samples"] += 1
                    symbolize(event)
                    yield event
                elif kind is SideEvent:
                    yield event
                elif kind is BuildId:
                    build_ids.setdefault(event.path, event.build_id)
            made = take()
            if made:
                yield from made
        finally:
            self._stop()

    def _handed_back(self) -> Iterator[SymbolizedSample]:
        """The samples the core hands back, symbolized, for a core that
        counts the others itself and makes no text (collapse, flamegraph,
        report): the stream's side events are not theirs."""
        samples = self.samples
        stream = samples.stream
        counts = samples.counts
        build_ids = samples.build_ids
        symbolize = samples.symbolize
        self._start()
        event: Any      # (told apart by its exact type, kind, below)
        try:
            for event in stream:
                kind = type(event)
                if kind is SymbolizedSample:
                    counts["samples"] += 1
                    symbolize(event)
                    yield event
                elif kind is BuildId:
                    build_ids.setdefault(event.path, event.build_id)
        finally:
            self._stop()

    def _start(self) -> None:
        """The stream's samples the core's: its records from the compiled
        walk (perfdata/core/walk.py), which gives the core the samples
        without a Python object each, where that applies; else the stream
        offers each SAMPLE record to the core."""
        stream = self.samples.stream
        if walk.why_not(stream.pf, stream, self.module) is None:
            stream.records = walk.RecordDelivery(self.module, self.core, stream)
        else:
            stream.sample_text = self.core.consume

    def _stop(self) -> None:
        """The end of a run (or a fault mid-file): the stream's samples the
        Python path's again, the core's made ones counted, the symbolizer's
        writes flushed."""
        samples = self.samples
        samples.stream.sample_text = None
        samples.stream.records = None
        samples.counts["samples"] += self.core.counts()["made"]
        flush = getattr(samples.symbolizer, "flush", None)
        if flush is not None:
            flush()

    # ------------------------------------------------------- the answers
    def _answer(self, kind: int, *args: Any) -> None:
        # (one dict look-up a question: the core asks twice a process on a
        # recording of many short ones, its maps and its binaries)
        answer = self._answers.get(kind)
        if answer is None:
            raise AssertionError("the core asked for %r" % (args,))
        answer(*args)

    def _set_plan(self, event: EventAttr) -> None:
        plan = self._plans[event] = self._plan(event)
        self.core.set_plan(event, plan)

    def _plan(self, event: EventAttr) -> Plan | None:
        """What the core prints of the event's samples and where their
        fields are (from the sample's construct schema), or None where
        ScriptFormatter or the stream does more than the core does."""
        fmt = self.formatter
        st = event.sample_type
        if not event.has_callchain or event.lbr_call_stack or event.reads_group or \
                st & ST.READ or not st & ST.TID:
            return None
        fields = fmt.fields_for(event)
        if not fields or "ip" not in fields or fmt.reltime is not None or \
                not set(fields) <= _CORE_FIELDS:
            return None
        flags = 0
        for name, bit in _HEADER_BITS.items():
            if name in fields:
                flags |= bit
        if fmt.nanosecs:
            flags |= _NANOSECS
        if {"sym", "symoff", "dso"} <= set(fields) and "srcline" not in fields and \
                fmt.kernel_path is None:
            # (ScriptFormatter._stack_text's plain lines: one format a line)
            flags |= self.module.H_PLAIN_FRAMES
        text = ("%*s: " % (fmt.name_width(), event.name)) if "event" in fields else ""
        offsets = self._offsets(event)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        if offsets is None:
            return None
        return (flags, data, None, None) + offsets + (event.attr["sample_period"],
                                                        self._format_of(event))

    def _format_of(self, event: EventAttr) -> int:
        """The number of the event's field set (frames' lines are kept by
        it: -F for one type of events changes their lines only)."""
        fields = self.formatter.fields_for(event)
        got = self._formats.get(fields)
        if got is None:
            got = self._formats[fields] = len(self._formats)
        return got

    @staticmethod
    def _offsets(event: EventAttr) -> tuple[int, int, int, int, int, int, int] | None:
        try:
            return sample_offsets(event.schema)
        except LayoutError:
            return None

    def _bind(self, group: MapGroup, index: int, m: Map) -> None:
        """The binary behind a map, as the resolver names it (dso_of, at the
        first frame in that map: as the Python path, which asks it there); a
        kernel map's: the kernel's symbols, printed with the map's path
        (FrameResolver.frames_in_kernel_map), one space a path.  The core
        reads the maps of an address space from its MapGroup itself, and
        keeps each Map's binary; where dso_of alone names it (a function of
        the path and build-id: its cache's key), every map of that path and
        build-id's too: a process's binaries are asked for once a run, not
        once a process."""
        resolver = self.resolver
        careful = self.module.BINARY_CAREFUL
        by_path = False
        if group is self.machine.kernel_maps:
            key: tuple[str, str | None, str] = (KERNEL_DSO, _KERNEL_MAP, m.path)
            space = self._binaries.get(key, -1)
            if space < 0:
                space = self._binaries[key] = _FIRST_BINARY + len(self._binaries)
                self._space_binary[space] = key
        elif m.build_id is None and m.path in resolver.build_id_choices:
            # (which of a path's build-ids is this map's changes as its
            # other files' maps come: asked again at every frame)
            space = careful
        else:
            path, bid = resolver.dso_of(m)
            by_path = True
            if path.startswith(JIT_PATHS):    # (frames that depend on more than the offset)
                space = careful
            else:
                key = (path, bid, m.path)
                space = self._binaries.get(key, -1)
                if space < 0:
                    space = self._binaries[key] = _FIRST_BINARY + len(self._binaries)
                    self._space_binary[space] = key
        self.core.bind(group, index, space, by_path)

    def _sample(self, record: Record, thread: Thread) -> SymbolizedSample:
        """The record as the stream makes it a sample (its fields by the
        Python decoder, as the stream's), made only where the resolver
        reads more of it than its thread (see LazySample)."""
        if self._asked[0] is record and self._asked[1] is not None:
            return self._asked[1]
        ea = record.attr
        assert ea is not None   # (the core asks only for samples with a plan)
        fields = ea.decode_sample(record.body)
        pid, tid = fields.get("pid", -1), fields.get("tid", -1)
        if pid > 0x7FFFFFFF or tid > 0x7FFFFFFF:
            fields["pid"], fields["tid"] = pid_t(pid), pid_t(tid)
        sample = SymbolizedSample(record, fields, ea, thread)
        self._asked = (record, sample)
        return sample

    def _add_frame(self, record: Record, thread: Thread, avma: int, kernel: int, is_ret: int,
                   space: int, key: int) -> None:
        """The lines of the frames of an address (the resolver's, formatted
        by the formatter's own frame_lines) and what the callchain's walk
        reads of their last symbol."""
        module = self.module
        sample = LazySample(thread, lambda: self._sample(record, thread))
        found = self.resolver.frames_for_address(
            sample, avma, bool(kernel), bool(is_ret))  # type: ignore[arg-type]
        event = record.attr
        text = self._frames_text(found, event)  # type: ignore[arg-type]
        flags = 0
        symbol = found[-1].symbol if found else None
        if symbol is not None:
            if symbol.startswith(INTERRUPT_ENTRIES):
                flags |= module.FRAME_INTERRUPT
            if symbol in STACK_BOTTOMS:
                flags |= module.FRAME_BOTTOM
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            # (a name read with surrogateescape: the Python path prints it)
            data, flags = b"", module.FRAME_CAREFUL
        self.core.add_frame(space + (self._format_of(event) << 32),  # type: ignore[arg-type]
                            key, is_ret, flags, data)
        if space >= _FIRST_BINARY and (self._KERNEL_TABLES or not kernel):
            self._check_table(space, key, is_ret, data)
        if space == module.SPACE_NO_MAP and avma < _KERNEL_HALF and not kernel and \
                flags == 0:
            self._learn_no_map(event, avma, data)  # type: ignore[arg-type]

    def _frames_text(self, found: Sequence[StackFrame], event: EventAttr) -> str:
        """What the core keeps of the frames of an address: their lines."""
        return self.formatter.frame_lines(found, event)

    def _no_map_parts(self, data: bytes, avma: int) -> tuple[bytes, bytes] | None:
        """The text of a frame in no map before and after its address
        (printed "%16x"), or None."""
        parts = data.split(b"%16x" % avma)
        return (parts[0], parts[1]) if len(parts) == 2 else None

    def _table_dso(self, shown: str) -> str:
        """The dso as a tabled binary's lines print it."""
        return shown

    def _symbol_text(self, name: str, shown: str) -> str:
        """A symbol's name as a tabled binary's lines print it."""
        return name

    # ------------------------------------------------ a binary's symbols
    def _check_table(self, space: int, key: int, is_ret: int, data: bytes) -> None:
        """After the Python path made the lines of a frame of a binary: the
        core is given the binary's symbol table where that is the whole
        answer (_table), and its text of this frame must be the Python
        path's, else it is taken back."""
        if space not in self._tables:
            self._tables[space] = self._table(space)
        if self._tables[space] is None:
            return
        core = self.core
        got = core.table_text(space, key, is_ret)
        while type(got) is tuple:
            self._name(space, *got)
            got = core.table_text(space, key, is_ret)
        if got is not None and got != data:
            core.drop_table(space)
            self._tables[space] = None

    def _table(self, space: int) -> SymbolTable | KernelSymbols | None:
        """Give the core the binary's symbol table, where it alone names
        the binary's addresses (AddressNamer.frames_anew: no DWARF inline
        frames or lines asked for, a file whose segments map offsets): its
        starts and sizes, the load segments, the dso's text."""
        path, bid, shown = self._space_binary[space]
        if bid == _KERNEL_MAP:
            return self._kernel_table(space, shown)
        if not path.startswith("/") or path.startswith("/tmp/perf-"):
            return None         # (the kernel's, a module's, a JIT's: the symbolizer's own)
        symbolizer = self.samples.symbolizer
        if (symbolizer.inline or symbolizer.srcline) and \
                symbolizer.line_info(path, bid) is not None:
            return None
        table = symbolizer.symbol_table(path, bid)
        choice = symbolizer.binary_for(path, bid)
        src = choice.binary or choice.debug
        if table is None or src is None:
            return None
        try:
            dso = self._table_dso(shown).encode("utf-8")
        except UnicodeEncodeError:
            return None
        starts, sizes = (_u64_copy(column) for column in table.bounds())
        segments = array("Q")
        for s in src.load_segments:
            segments.extend((s.offset, s.filesz, s.memsz, s.vaddr, s.page))
        self.core.set_table(space, starts, sizes, segments.tobytes(), dso)
        return table

    def _name(self, space: int, index: int, at: int) -> None:
        """The name of the symbol the core found at an address of a binary
        (the table's own lookup, demangled as the symbolizer prints it)."""
        table = self._tables.get(space)
        sym = table.lookup(at) if table is not None else None
        name = None
        flags = 0
        symbolizer = self.samples.symbolizer
        kernel = self._space_binary[space][1] == _KERNEL_MAP
        if sym is not None and table is not None:
            starts, sizes = table.bounds()
            if sym.start == starts[index] and sym.size == sizes[index]:
                # (a kernel symbol demangled only where the symbolizer would)
                name = symbolizer.demangle_name(sym.name) if not kernel or \
                    symbolizer.demangle_kernel else sym.name
        data = None
        if name is not None:
            try:
                data = self._symbol_text(name, self._space_binary[space][2]).encode("utf-8")
            except UnicodeEncodeError:
                pass
            if name in STACK_BOTTOMS:
                flags = self.module.FRAME_BOTTOM
            if kernel and name.startswith(INTERRUPT_ENTRIES):
                flags = self.module.FRAME_INTERRUPT
        self.core.set_name(space, index, data, flags)

    def _kernel_table(self, space: int, shown: str) -> KernelSymbols | None:
        """Give the core the kernel's symbols for the frames of a kernel map
        (FrameResolver.frames_in_kernel_map: the kernel's table, whatever the
        map, printed with the map's path), where they are usable."""
        resolver = self.resolver
        if not resolver.dsos.kernel_symbols_usable():
            return None
        table = self.samples.symbolizer.kernel_symbols(resolver.build_ids.get(KERNEL_DSO))
        try:
            dso = self._table_dso(shown).encode("utf-8")
        except UnicodeEncodeError:
            return None
        # (copies: the cache file's mapping stays the symbolizer's to close)
        starts, sizes = (_u64_copy(column) for column in table.bounds())
        # (one segment mapping every address to itself: the key is the address)
        self.core.set_table(space, starts, sizes, array("Q", (0, _ALL, _ALL, 0, 0x1000)).tobytes(),
                            dso, True)
        return table

    def _learn_no_map(self, event: EventAttr, avma: int, data: bytes) -> None:
        """A frame-pointer walk's garbage is mostly addresses in no map, each
        met once (52,000 of 88,000 frames asked for on benchmarks/bench_real.py's
        make recording): the core
        prints such a frame itself once two of them, at two addresses, were
        made by the Python path as the same text around "%16x" of the
        address."""
        parts = self._no_map_parts(data, avma)
        if parts is None:
            return
        seen = self._no_map_seen.get(event)
        if seen is None or self._no_map_avma.get(event) == avma:
            self._no_map_seen[event] = parts
            self._no_map_avma[event] = avma
            return
        plan = self._plans.get(event)
        if seen == parts and plan is not None and plan[2] is None:
            plan = self._plans[event] = plan[:2] + parts + plan[4:]
            self.core.set_plan(event, plan)


def _u64_copy(column: Sequence[int]) -> array[int]:
    """A u64 array of a symbol table's column, as the core takes it: its
    bytes copied where it is a buffer of u64 (a mapped cache file's: 0.03 ms
    for a kernel's 120,000 symbols, where array("Q", column) takes 15 ms),
    else its items."""
    try:
        view = memoryview(column)  # type: ignore[arg-type]
    except TypeError:
        return array("Q", column)
    if view.itemsize != 8 or view.format not in ("Q", "L") or not view.c_contiguous:
        return array("Q", column)
    out = array("Q")
    out.frombytes(view.cast("B"))
    return out


class LazySample:
    """A sample as the resolver sees it when it asks for the frames of an
    address: its thread, which is all FrameResolver.frames_for_address
    reads of it outside a JIT's maps (those the core hands back); any other
    attribute is the sample's own, decoded at the first such read."""
    __slots__ = ("thread", "_make", "_made")

    def __init__(self, thread: Thread, make: Callable[[], SymbolizedSample]) -> None:
        self.thread = thread
        self._make = make
        self._made: SymbolizedSample | None = None

    def __getattr__(self, name: str) -> Any:
        if self._made is None:
            self._made = self._make()
        return getattr(self._made, name)
