"""Memory maps of a process (or of the kernel), from MMAP and MMAP2 records."""
from __future__ import annotations

import bisect
from dataclasses import InitVar, dataclass, field
from typing import Iterator

PROT_EXEC = 4


@dataclass(slots=True, eq=False, repr=False)
class Map:
    """One mapping: [start, end) of the address space backed by `path` at
    `pgoff`, made with its length as an MMAP record gives it.  Not changed
    once inserted in a MapGroup (groups share them)."""
    start: int
    length: InitVar[int]
    pgoff: int
    path: str
    build_id: str | None = None
    prot: int = PROT_EXEC
    flags: int = 0
    maj: int = 0
    min: int = 0
    ino: int = 0
    time: int = 0
    is_data: bool = False
    # the process whose MMAP record made it (a fork's copies keep it): its
    # mount namespace held the path (/proc/PID/root, while it lives)
    pid: int | None = None
    end: int = field(init=False)

    def __post_init__(self, length: int) -> None:
        self.end = self.start + length

    def file_offset(self, avma: int) -> int:
        """Offset in the mapped file of a process address (perf's map__map_ip)."""
        return avma - self.start + self.pgoff

    def copy(self) -> Map:
        m = Map.__new__(Map)
        for name in Map.__slots__:
            setattr(m, name, getattr(self, name))
        return m

    def __contains__(self, avma: int) -> bool:
        return self.start <= avma < self.end

    def __repr__(self) -> str:
        return "Map(%#x-%#x %#x %s)" % (self.start, self.end, self.pgoff, self.path)


class MapGroup:
    """The maps of one address space, sorted by start; a new map replaces what it
    overlaps (as perf's maps__fixup_overlappings does, keeping the parts of an
    old map that stick out on either side)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._maps: list[Map] = []
        # Bumped on every change, so that callers may cache per (group, generation).
        self.generation = 0
        # Bumped when a map that is not a data map (MISC_MMAP_DATA) leaves
        # the group (replaced, split or cleared): until then, every address
        # found in such a map is still found in it (a data map arriving, the
        # heap growing, do not bump it; perf record --call-graph=dwarf
        # records data maps, a few hundred a second in a Python program).
        self.code_generation = 0

    def __len__(self) -> int:
        return len(self._maps)

    def __iter__(self) -> Iterator[Map]:
        return iter(self._maps)

    def in_order(self) -> list[Map]:
        """The maps by start, in a new list (list(group) asks __len__ and
        __iter__ first: two calls more, at each address space the compiled
        core is told of)."""
        return self._maps[:]

    def clone(self) -> MapGroup:
        """A forked process's maps: the same Map objects in new lists.  A
        Map is never changed once in a group (insert puts copies of what an
        overlap leaves of an old one), so the two groups share them: a copy
        of each cost 11 us a FORK on benchmarks/bench_real.py's forks (20,000
        forks: 0.22 s)."""
        group = MapGroup()
        group._starts = list(self._starts)
        group._maps = list(self._maps)
        return group

    def clear(self) -> None:
        self._starts.clear()
        self._maps.clear()
        self.generation += 1
        self.code_generation += 1

    def insert(self, new: Map) -> None:
        if new.end <= new.start:
            return
        self.generation += 1
        starts, maps = self._starts, self._maps
        k = bisect.bisect_right(starts, new.start)
        if (k == 0 or maps[k - 1].end <= new.start) and (k == len(maps) or
                                                          starts[k] >= new.end):
            # Nothing overlapped (the maps never overlap one another, so only
            # the one before can reach in, and only those after can start
            # inside): the usual case, a new mapping in free space.
            starts.insert(k, new.start)
            maps.insert(k, new)
            return
        i = k - 1
        if i < 0:
            i = 0
        keep_before, keep_after = [], []
        j = i
        while j < len(maps) and maps[j].start < new.end:
            old = maps[j]
            if old.end <= new.start:
                j += 1
                continue
            if old.start < new.start:
                head = old.copy()
                head.end = new.start
                keep_before.append(head)
            if old.end > new.end:
                tail = old.copy()
                tail.pgoff += new.end - old.start
                tail.start = new.end
                keep_after.append(tail)
            if not old.is_data:
                self.code_generation += 1
            del maps[j]
            del starts[j]
        for m in keep_before + [new] + keep_after:
            k = bisect.bisect_right(starts, m.start)
            starts.insert(k, m.start)
            maps.insert(k, m)

    def find(self, avma: int) -> Map | None:
        i = bisect.bisect_right(self._starts, avma) - 1
        if i >= 0:
            m = self._maps[i]
            if avma < m.end:
                return m
        return None
