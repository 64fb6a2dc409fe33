"""JIT symbol maps: /tmp/perf-PID.map, lines of `START SIZE name`.

START and SIZE are hex with or without 0x; the name is the rest of the line
and may hold spaces. Bad lines are skipped and counted. A JIT may reuse an
address range: for one start address the later line wins.
"""
from __future__ import annotations

import bisect
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


class PerfMap:
    def __init__(self, symbols: Iterable[MapSymbol] = ()) -> None:
        by_start: dict[int, MapSymbol] = {}
        for s in symbols:
            by_start[s.start] = s
        self._syms = sorted(by_start.values(), key=lambda s: s.start)
        self._starts = [s.start for s in self._syms]
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
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise OSError("not a regular file")
            if st.st_size > MAX_PERFMAP_SIZE:
                raise OSError(f"larger than {MAX_PERFMAP_SIZE} bytes")
            with open(path, "rb") as f:
                data = f.read(MAX_PERFMAP_SIZE)
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
        # Entries can overlap (JIT code replaced in place): look back a little
        # for one that still covers the address.
        for j in range(i, max(i - 4, -1), -1):
            s = self._syms[j]
            if s.start <= address < s.start + s.size:
                return s
        return None
