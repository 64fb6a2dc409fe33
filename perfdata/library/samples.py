"""The samples of a profile as plain data: `Sample` and `Frame`, frozen and
slotted, made from the resolver's SymbolizedSample and StackFrame (which
the resolver reuses from sample to sample and may change: these do not).

A frame's source line costs a DWARF line-table read, so it is looked up
when asked for (`Frame.srcline()`), by a symbolizer of its own that the
profile's frames share (`SourceLines`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from symbolize import Symbolizer

    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SymbolizedSample

# The kinds of frame, as the flame graph colours them.
FRAME_KINDS = ("user", "kernel", "jit", "inlined", "stitched", "unknown")


class SourceLines:
    """file:line of frames (the whole path), looked up on demand with a
    symbolizer that reads line tables (the profile's own does not, as the
    commands' do not unless they print source lines), at the frame's
    address: an inlined frame gets the line of the code inlined there.
    The answers are kept."""

    def __init__(self, make_symbolizer: Callable[[], Symbolizer]) -> None:
        self._make = make_symbolizer
        self._symbolizer: Symbolizer | None = None
        self._known: dict[tuple[str, str | None, int, bool], str | None] = {}

    def of(self, frame: Frame) -> str | None:
        """The frame's `file:line`, or None (no debug information; kernel,
        JIT and unknown frames)."""
        if frame.dso_path is None or frame.svma is None or frame.kind in ("kernel", "jit"):
            return None
        key = (frame.dso_path, frame.build_id, frame.svma, frame.is_return_address)
        if key in self._known:
            return self._known[key]
        if self._symbolizer is None:
            # (the first lookup imports the line tables' readers)
            from .runtime import as_the_commands
            with as_the_commands():
                self._symbolizer = self._make()
                found = self._symbolizer.lookup(frame.dso_path, frame.build_id, frame.svma,
                                                is_return_address=frame.is_return_address)
        else:
            found = self._symbolizer.lookup(frame.dso_path, frame.build_id, frame.svma,
                                            is_return_address=frame.is_return_address)
        line = found[0].srcline
        self._known[key] = line
        return line


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a stack, as `perfdata script` prints it.

    function: the symbol's name as perf prints it (C++ without parameters),
        None where perf prints `[unknown]`.
    offset: the address's offset into the function, None when unknown.
    dso: the binary as perf names it (a path, `[kernel.kallsyms]`, `[vdso]`).
    address: the address perf prints (relative to the binary for user maps).
    avma: the address in the process, None for a frame without one.
    build_id: the binary's build-id (hex), None when unknown.
    kind: "user", "kernel", "jit", "inlined", "stitched" or "unknown" (the
        flame graph's colour families).
    inlined: a function inlined at this address (its caller follows it).
    stitched: taken from the thread's other samples (`stitch=True`).
    dso_path, svma, is_return_address: where the binary was found, the
        address in the binary's own terms, and whether it is a return
        address (looked up at address - 1), for `srcline()`.
    """
    function: str | None
    offset: int | None
    dso: str
    address: int
    avma: int | None
    build_id: str | None
    kind: str
    inlined: bool
    stitched: bool
    dso_path: str | None
    svma: int | None
    is_return_address: bool
    _lines: SourceLines | None = field(default=None, repr=False, compare=False)

    def srcline(self, full_path: bool = False) -> str | None:
        """`file:line` of this frame, looked up now (None without debug
        information): the file's base name, as `perfdata script -F +srcline`
        prints it, or with full_path its whole path (--full-source-path)."""
        line = self._lines.of(self) if self._lines is not None else None
        if line is None or full_path:
            return line
        path, _, number = line.rpartition(":")
        return "%s:%s" % (os.path.basename(path), number)

    def __str__(self) -> str:
        name = self.function if self.function is not None else "[unknown]"
        return "%s+0x%x (%s)" % (name, self.offset or 0, self.dso)


@dataclass(frozen=True, slots=True)
class Sample:
    """One symbolized sample.

    event: the event's name as perf prints it (`cpu-clock:u`).
    time: nanoseconds, perf's clock (0 without PERF_SAMPLE_TIME).
    cpu: None when the sample does not carry it.
    comm: the thread's name when the sample was taken.
    period: the sample's period (the event's sample_period without PERIOD).
    ip: the sample's own address.
    frames: the stack, leaf first.
    """
    event: str
    time: int
    cpu: int | None
    pid: int
    tid: int
    comm: str
    period: int
    ip: int | None
    frames: tuple[Frame, ...]

    @property
    def leaf(self) -> Frame | None:
        """The sample's own frame (frames[0]), None for an empty stack."""
        return self.frames[0] if self.frames else None


class SampleMaker:
    """Makes the Samples of SymbolizedSamples, each distinct frame once: the
    resolver hands out the same StackFrame for an address every stack
    through it holds (and the same frame list to the samples of one
    stack), so Frames are kept by the StackFrame they were made of."""

    def __init__(self, lines: SourceLines | None) -> None:
        from ..run.folded import frame_kind as kind
        self._kind = kind
        self._lines = lines
        self._stacks: dict[int, tuple[Sequence[StackFrame], tuple[Frame, ...]]] = {}
        self._frames: dict[int, tuple[StackFrame, Frame]] = {}

    def frames(self, frames: Sequence[StackFrame]) -> tuple[Frame, ...]:
        hit = self._stacks.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        known = self._frames
        made = []
        for f in frames:
            got = known.get(id(f))
            if got is None or got[0] is not f:
                got = known[id(f)] = (f, self._frame(f))
            made.append(got[1])
        if len(self._stacks) > 100000:
            self._stacks.clear()
        if len(known) > 100000:
            known.clear()
        stack = tuple(made)
        self._stacks[id(frames)] = (frames, stack)
        return stack

    def _frame(self, f: StackFrame) -> Frame:
        return Frame(f.symbol, f.offset, f.dso, f.address, f.avma, f.build_id, self._kind(f),
                     f.inlined, f.stitched, f.dso_path, f.svma, f.is_return_address,
                     self._lines)

    def sample(self, s: SymbolizedSample) -> Sample:
        return Sample(s.event.name, s.time or 0, s.cpu, s.pid, s.tid, s.comm, s.period or 0,
                      s.ip, self.frames(s.frames))

    def samples(self, items: Iterable[SymbolizedSample]) -> Iterator[Sample]:
        make = self.sample
        for s in items:
            yield make(s)
