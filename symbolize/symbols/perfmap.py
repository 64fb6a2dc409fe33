"""JIT symbol maps: /tmp/perf-PID.map, lines of `START SIZE name`.

START and SIZE are hex with or without 0x; the name is the rest of the line
and may hold spaces. Bad lines are skipped and counted. A JIT may reuse an
address range (V8 puts new code where freed code was): a later line is newer
code, so an address is named by the last line that covers it, and by an
earlier one where only that one does (the older code was longer than the
newer code at the same start).
"""
from __future__ import annotations

import bisect
import heapq
import os
import re
import stat
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

MAX_PERFMAP_SIZE = 512 << 20
_LINE = re.compile(r"\s*(?:0[xX])?([0-9a-fA-F]{1,16})\s+(?:0[xX])?([0-9a-fA-F]{1,16})\s+(.+?)\s*\Z")
_PERFMAP_PATH = re.compile(r"/tmp/perf-\d+\.map\Z")


class MapSymbol(NamedTuple):
    name: str
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size


def is_perfmap_path(path: str) -> bool:
    return isinstance(path, str) and bool(_PERFMAP_PATH.search(path))


def read_regular_file(path: str, max_size: int) -> bytes:
    """The bytes of a file a JIT wrote (a perf map, a jitdump): OSError
    where it is no regular file (a FIFO would block) or larger than
    max_size."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError("not a regular file")
    if st.st_size > max_size:
        raise OSError(f"larger than {max_size} bytes")
    with open(path, "rb") as f:
        return f.read(max_size)


class PerfMap:
    def __init__(self, symbols: Iterable[MapSymbol] = ()) -> None:
        in_order = list(symbols)                 # the file's order: later is newer
        self._syms = sorted(in_order, key=lambda s: s.start)
        self._starts, self._ends, self._owners = _newest_cover(in_order)
        self.warnings: list[str] = []

    @classmethod
    def parse(cls, text: str, *, source: str = "perf map") -> "PerfMap":
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        elif not isinstance(text, str):
            text = ""
        syms = []
        bad = 0
        for line in text.splitlines():
            if not line.strip():
                continue
            m = _LINE.match(line)
            if not m:
                bad += 1
                continue
            start, size = int(m.group(1), 16), int(m.group(2), 16)
            if size == 0:
                bad += 1
                continue
            syms.append(MapSymbol(m.group(3), start, size))
        t = cls(syms)
        if bad:
            t.warnings.append(f"{source}: {bad} malformed lines skipped")
        return t

    @classmethod
    def from_file(cls, path: str) -> "PerfMap":
        try:
            data = read_regular_file(path, MAX_PERFMAP_SIZE)
        except OSError as e:
            t = cls()
            t.warnings.append(f"{path}: {e.strerror or e}")
            return t
        return cls.parse(data.decode("utf-8", "replace"), source=path)

    def __len__(self) -> int:
        return len(self._syms)

    def __iter__(self) -> Iterator[MapSymbol]:
        return iter(self._syms)

    def lookup(self, address: int) -> MapSymbol | None:
        if not isinstance(address, int):
            return None
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and address < self._ends[i]:
            return self._owners[i]
        return None


def _newest_cover(in_order: list[MapSymbol]
                  ) -> tuple[list[int], list[int], list[MapSymbol]]:
    """Disjoint pieces (starts, ends, owners) of the ranges the lines cover,
    each owned by the last line covering it: a sweep over the boundaries
    with a heap of the lines open there, newest on top (lines that ended
    are dropped when they come to the top)."""
    bounds = sorted({s.start for s in in_order} | {s.end for s in in_order})
    opening = sorted(range(len(in_order)), key=lambda i: in_order[i].start)
    open_: list[tuple[int, int]] = []            # (-line number, end)
    starts: list[int] = []
    ends: list[int] = []
    owners: list[MapSymbol] = []
    k = 0
    for lo, hi in zip(bounds, bounds[1:]):
        while k < len(opening) and in_order[opening[k]].start <= lo:
            i = opening[k]
            heapq.heappush(open_, (-i, in_order[i].end))
            k += 1
        while open_ and open_[0][1] <= lo:
            heapq.heappop(open_)
        if not open_:
            continue
        owner = in_order[-open_[0][0]]
        if owners and owners[-1] is owner and ends[-1] == lo:
            ends[-1] = hi
        else:
            starts.append(lo)
            ends.append(hi)
            owners.append(owner)
    return starts, ends, owners
