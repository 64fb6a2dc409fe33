"""The lines of a sample's stack in `perfdata script`: one a frame, a tab,
the address in 16 columns, `sym+0xoff` and `(dso)` (with srcline, inline
frames, --show-kernel-path as perf 6.1's sample__fprintf_callchain prints
them), made once a frame and kept while stacks repeat."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..resolve.hitrate import HitRate
from ..session.machine import KERNEL_DSO
from .dsoname import dso_short_name

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..resolve.frames import StackFrame
    from .script_fields import Fields

# Frame lines kept (with their frames: ~0.4 KiB each) for the stacks that
# share frames; cleared when full.
FRAME_LINES_KEPT = 16384
# Stack texts kept (cleared when full), and the lookups per decision whether
# stacks repeat enough to keep their texts (FrameLines.stack_text).
STACK_TEXTS_KEPT = 16384
# ... and at most this many characters of them: a DWARF stack's text is ~2 KiB
# (a -g one ~0.3), and 16,384 of those, with the frames they keep alive, were
# the largest part of the heap on a large DWARF recording.
STACK_TEXT_CHARS = 8 << 20
STACK_TEXT_WINDOW = 1024


class FrameLines:
    """The text of stacks and of their frames, for one run's formatter.
    kernel_path: the kernel dso's name with --show-kernel-path (the vmlinux
    its symbols came from); full_source_path: srcline with the whole path."""

    def __init__(self, kernel_path: str | None = None, full_source_path: bool = False) -> None:
        self.kernel_path = kernel_path
        self.full_source_path = full_source_path
        # {id(frames): (frames, fields, their text)}, and whether stacks
        # repeat enough to keep their texts (see stack_text)
        self._stacks: dict[int, tuple[Sequence[StackFrame], Fields, str]] = {}
        self._stack_chars = 0       # the length of the texts in _stacks
        self._text_rate = HitRate(STACK_TEXT_WINDOW)
        # {frame: its line} for the field set _frame_lines_for (a frame is
        # its own key: StackFrame hashes by identity)
        self._frame_lines: dict[StackFrame, str] = {}
        self._frame_lines_for: Fields | None = None
        # (the same for the user frames of DWARF stacks, with srcline)
        self._unwound_lines: dict[StackFrame, str] = {}
        # {fields: whether frame lines take the one-format path}
        self._plain_lines: dict[Fields, bool] = {}

    def _plain(self, fields: Fields, has: Callable[[str], bool]) -> bool:
        """Whether the lines of a field set are one format each: the default
        fields, sym, symoff and dso (no srcline, no --show-kernel-path)."""
        plain = self._plain_lines.get(fields)
        if plain is None:
            plain = self._plain_lines[fields] = (
                has("sym") and has("symoff") and has("dso") and not has("srcline") and
                self.kernel_path is None)
        return plain

    def lines(self, frames: Sequence[StackFrame], fields: Fields,
              has: Callable[[str], bool]) -> str:
        """The lines of a -g stack's frames as stack_text makes them (the
        compiled core keeps them by address)."""
        plain = self._plain(fields, has)
        return "".join(self.line(fr, has, "\t", "\n", plain=plain) for fr in frames)

    def stack_text(self, frames: Sequence[StackFrame], fields: Fields,
                   has: Callable[[str], bool], unwound: bool = False) -> str:
        """The callchain lines.  Samples sharing a stack (the resolver's kept
        frame list) share its text, kept while stacks repeat (HitRate: where
        each process has its own address space, make, no later sample read
        the texts kept).  unwound: the user frames are the DWARF unwinder's
        (their srcline where none is known differs: see line)."""
        rate = self._text_rate
        probe = rate.keeping or rate.probe()
        if probe:
            hit = self._stacks.get(id(frames))
            if hit is not None and hit[0] is frames and hit[1] is fields:
                rate.looked_up(True)
                return hit[2]
            rate.looked_up(False)
        # Frames are shared by every stack through their address (the
        # resolver's caches): their lines are made once, kept by frame.
        lines = self._frame_lines
        if self._frame_lines_for is not fields:
            lines.clear()
            self._unwound_lines.clear()
            self._frame_lines_for = fields
        if unwound and has("srcline"):
            lines = self._unwound_lines
        plain = self._plain(fields, has)
        # (the lines met before found by map(), C's own loop, the others made)
        # (str, or None for a line not made yet: none is left at the join)
        parts: list[Any] = list(map(lines.get, frames))
        if None in parts:
            if len(lines) > FRAME_LINES_KEPT:
                lines.clear()
            for i, line in enumerate(parts):
                if line is None:
                    fr = frames[i]
                    line = parts[i] = lines[fr] = self.line(fr, has, "\t", "\n",
                                                            plain=plain, unwound=unwound)
        text = "".join(parts)
        if probe:
            if len(self._stacks) > STACK_TEXTS_KEPT or self._stack_chars > STACK_TEXT_CHARS:
                self._stacks.clear()
                self._stack_chars = 0
            self._stacks[id(frames)] = (frames, fields, text)
            self._stack_chars += len(text)
        return text

    def line(self, fr: StackFrame, has: Callable[[str], bool], lead: str, end: str,
             address: int | None = None, plain: bool = False, unwound: bool = False) -> str:
        """One frame's text.  plain: the fields are sym, symoff and dso (no
        srcline, no --show-kernel-path): then a line is one format.
        unwound: a frame of a DWARF stack (see srcline below)."""
        if plain and address is None and not (fr.inlined or fr.stitched):
            if fr.symbol is None:
                return "%s%16x [unknown] (%s)%s" % (lead, fr.address, fr.dso, end)
            if fr.offset is not None:
                return "%s%16x %s+0x%x (%s)%s" % (lead, fr.address, fr.symbol, fr.offset,
                                                  fr.dso, end)
            return "%s%16x %s (%s)%s" % (lead, fr.address, fr.symbol, fr.dso, end)
        parts = [lead]
        parts.append("%16x" % (fr.address if address is None else address))
        if has("sym"):
            name = fr.symbol if fr.symbol is not None else "[unknown]"
            if has("symoff") and fr.symbol is not None and fr.offset is not None:
                parts.append(" %s+0x%x" % (name, fr.offset))
            else:
                parts.append(" " + name)
        # perf prints "(inlined)" in place of the dso for inline frames,
        # after the source line if there is one.
        inlined_after = fr.inlined and has("srcline") and fr.srcline is not None
        if fr.inlined:
            if not inlined_after:
                parts.append(" (inlined)")
        elif has("dso"):
            if self.kernel_path is not None and fr.kernel and fr.dso == KERNEL_DSO:
                parts.append(" (%s)" % self.kernel_path)
            else:
                parts.append(" (%s)" % fr.dso)
        if fr.stitched:
            # --stitch: not in this sample's own stack copy
            parts.append(" [stitched]")
        if has("srcline"):
            if fr.srcline:
                # perf prints the file's base name, the whole path with
                # --full-source-path.
                path, _, line = fr.srcline.rpartition(":")
                if not self.full_source_path:
                    path = os.path.basename(path)
                parts.append("\n  %s:%s" % (path, line))
            elif fr.note != "no-map":
                # No line known: perf 6.1 prints "dso[address]" (objdump's
                # address) where the dso's short name is bracketed (the
                # kernel without a vmlinux, a module, the vdso, a JIT's
                # "[JIT] tid PID") and for a PLT stub, and nothing for the
                # other code of a binary without line tables (seen in perf's
                # output: of libstdc++ and libgcc_s, only their PLT stubs),
                # nor for an address in no map.
                #   An address of a binary without symbols (but PLT stubs)
                # gets "dso[address]" too (addr2line names no function there;
                # where it names one, perf prints nothing), and in a DWARF
                # stack a user frame in a named function without a line gets
                # "??:0" (perf's, as seen: the unwound stack's frames go
                # through its inline-aware lookup).
                short = dso_short_name(fr)
                if fr.source == "plt" or short.startswith("[") or fr.note == "no-symbols":
                    parts.append("\n  %s[%x]" % (short,
                                                   fr.address if fr.svma is None else fr.svma))
                elif unwound and not fr.kernel and fr.symbol is not None:
                    parts.append("\n  ??:0")
        if inlined_after:
            parts.append(" (inlined)")
        parts.append(end)
        return "".join(parts)
