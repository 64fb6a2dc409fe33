"""The caches a FrameResolver keeps: frames by address of a mapping (and
the inline chains of DWARF frames), whole stacks by their addresses and
address space, the DWARF frames of a frame-cache entry, the frames of
addresses in no map.  Each is bounded and cleared when full; the bounds
say why they are what they are."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .hitrate import HitRate

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..session.maps import MapGroup
    from .frames import StackFrame

# Stacks kept (with their frames) for samples that repeat them; cleared when
# full.  A many-process recording (make) repeats few: each process has its
# own address space, so a larger bound only holds dead stacks (52k of them,
# 38 MiB, for the 60k samples of benchmarks/bench_real.py's make).
STACK_CACHE_SIZE = 16384
# Stack-cache lookups per decision whether -g stacks repeat enough to keep.
STACK_WINDOW = 1024
# Frames kept by address of a mapping (cleared when full; ~0.35 KiB an entry
# with its key and frame).  With ASLR each process maps its libraries at its
# own addresses, so a shell starting many processes fills an entry per
# process and library where a run's working set is a few thousand: a large
# bound lets memory grow with the number of processes.  A miss is answered
# by the symbolizer's own cache (by file offset).  A larger bound (1 << 16)
# peaks higher on a DWARF recording of builds (PIE compilers: each process
# its own addresses), for no speed (benchmarks/bench_core.py --before on
# benchmarks/bench_real.py's make, forks and python: 1.00x, 1.02x, 1.03x
# wall).
FRAME_CACHE_SIZE = 1 << 14
# Frames of addresses in no map kept (cleared when full): see StackCaches.no_map.
NO_MAP_FRAMES_KEPT = 16384
# DWARF stacks' frames (with the inline chain from DWARF) kept by the frame
# cache's entry they come from (cleared when full; as FRAME_CACHE_SIZE).
DWARF_FRAMES_KEPT = 1 << 14
# The stitched copies (--stitch) of those, kept by the same entry (as above).
STITCHED_FRAMES_KEPT = 1 << 14


class StackCaches:
    """The resolver's caches, and their rule: a cache that is full is
    cleared before an entry is added."""
    __slots__ = ("frames", "stacks", "no_map", "dwarf", "stitched", "stack_rate")

    def __init__(self) -> None:
        # Frames by address (shared by every stack through it), and the
        # inline chains added to the frames of an address (a tuple of names)
        self.frames: dict[tuple, tuple] = {}
        self.stacks: dict[tuple, tuple] = {}     # key -> (maps, frames, ...)
        # The frame of an address in no map, by (address, kernel, is a
        # return address): what such a frame says does not depend on the
        # maps, only that it is in none; a frame-pointer walk's garbage
        # repeats (benchmarks/bench_real.py's make: 155k such frames, 51k
        # addresses, 20k of them 0).
        self.no_map: dict[tuple[int, bool, bool], tuple[StackFrame, ...]] = {}
        # (id(frames of an address), is_return): (frames, with inlines)
        self.dwarf: dict[tuple[int, bool],
                         tuple[Sequence[StackFrame], Sequence[StackFrame]]] = {}
        # id(DWARF frames of an address): (those frames, their stitched
        # copies): a completed stack's frames taken from other samples
        self.stitched: dict[int, tuple[Sequence[StackFrame], tuple[StackFrame, ...]]] = {}
        # whether -g stacks repeat enough to be worth keeping (decided per
        # STACK_WINDOW lookups)
        self.stack_rate = HitRate(STACK_WINDOW)

    def keep_frames(self, key: tuple, frames: tuple[StackFrame, ...], avma: int
                    ) -> tuple[StackFrame, ...]:
        """The frames of an address, kept under key (their avma set: every
        stack through the address shares them)."""
        for f in frames:
            f.avma = avma
        if len(self.frames) > FRAME_CACHE_SIZE:
            self.frames.clear()
        self.frames[key] = frames
        return frames

    def keep_stack(self, key: tuple, entry: tuple) -> None:
        """A whole stack kept under key: (maps, frames, ...)."""
        if len(self.stacks) > STACK_CACHE_SIZE:
            self.stacks.clear()
        self.stacks[key] = entry

    def keep_no_map(self, key: tuple[int, bool, bool], frames: tuple[StackFrame, ...]
                    ) -> tuple[StackFrame, ...]:
        if len(self.no_map) > NO_MAP_FRAMES_KEPT:
            self.no_map.clear()
        self.no_map[key] = frames
        return frames

    def keep_dwarf(self, key: tuple[int, bool],
                   entry: tuple[Sequence[StackFrame], Sequence[StackFrame]]) -> None:
        if len(self.dwarf) > DWARF_FRAMES_KEPT:
            self.dwarf.clear()
        self.dwarf[key] = entry

    def keep_stitched(self, key: int,
                      entry: tuple[Sequence[StackFrame], tuple[StackFrame, ...]]) -> None:
        if len(self.stitched) > STITCHED_FRAMES_KEPT:
            self.stitched.clear()
        self.stitched[key] = entry


def all_in_code_maps(maps: MapGroup, addresses: Iterable[int]) -> bool:
    """Does every address lie in a map of `maps` that is not a data map?
    (Such a stack is kept until a code map leaves: maps.code_generation.)"""
    for avma in addresses:
        m = maps.find(avma)
        if m is None or m.is_data:
            return False
    return True
