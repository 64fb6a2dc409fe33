"""`JitMaps`: the files JITs write for perf, read once each: perf maps
(/tmp/perf-PID.map) and jitdumps (jit-PID.dump), and the frames of an
address in them."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..addresses import address_for_lookup
from .frame import Frame
from .jitdump import JitCode, JitDump
from .perfmap import PerfMap

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..warninglog import WarningLog


class JitMaps:
    """find_file(path): where the JIT file recorded at `path` is here, or
    None; what reading a file had to say goes to `log`."""

    def __init__(self, find_file: Callable[[str], str | None], log: WarningLog) -> None:
        self.find_file = find_file
        self.log = log
        self._perfmaps: dict[str, PerfMap] = {}
        self._jitdumps: dict[str, JitDump] = {}
        self._jitdump_files: dict[str, str | None] = {}

    def jitdump(self, path: str) -> JitDump:
        """The jitdump recorded at `path`, read once (empty where absent or
        unreadable: its fault said once)."""
        dump = self._jitdumps.get(path)
        if dump is None:
            found = self._jitdump_files[path] = self.find_file(path)
            dump = JitDump.from_file(found) if found is not None else JitDump()
            self.log.drain(dump)
            self._jitdumps[path] = dump
        return dump

    def jitdump_code(self, path: str, code_index: int) -> tuple[JitCode, bytes] | None:
        """The code load `code_index` of the jitdump recorded at `path` and
        its bytes as the JIT wrote them, or None (no such load, no bytes,
        the file changed since it was read)."""
        dump = self.jitdump(path)
        code = next((c for c in dump.codes if c.code_index == code_index and
                     c.code_at is not None), None)
        found = self._jitdump_files.get(path)
        if code is None or code.code_at is None or found is None:
            return None
        try:
            with open(found, "rb") as f:
                f.seek(code.code_at)
                data = f.read(code.size)
        except OSError:
            return None
        return (code, data) if len(data) == code.size else None

    def perfmap(self, path: str) -> PerfMap:
        """The perf map recorded at `path`, read once."""
        pm = self._perfmaps.get(path)
        if pm is None:
            # No map file is no fault: anonymous executable memory promises
            # none (perf is silent too); a map that is there but unreadable is.
            # (perf 6.1 reads /tmp/perf-PID.map only: a recording read on
            # another machine or after a container is gone needs the map
            # where --path-map, --symfs or an archive put it.)
            found = self.find_file(path)
            pm = PerfMap.from_file(found) if found is not None else PerfMap()
            self.log.drain(pm)
            self._perfmaps[path] = pm
        return pm

    def jitdump_frame(self, path: str, address: int, time: int | None, is_ret: bool,
                      name: Callable[[str], str | None]) -> tuple[Frame, int | None]:
        """(the frame of the JIT code at `address` at `time` in the jitdump
        at `path`, the code's index in the dump)."""
        code = self.jitdump(path).lookup(address_for_lookup(address, is_ret), time)
        if code is None:
            return Frame(None, None, address, path, None, None), None
        return (Frame(name(code.name), address - code.start, address, path, None, "jitdump"),
                code.code_index)

    def perfmap_frames(self, path: str, address: int | None, is_ret: bool,
                       name: Callable[[str], str | None]) -> list[Frame]:
        """The frame of `address` in the perf map at `path`."""
        if address is None:
            return [Frame(None, None, None, path, None, None)]
        s = self.perfmap(path).lookup(address_for_lookup(address, is_ret))
        if s is None:
            return [Frame(None, None, address, path, None, None)]
        return [Frame(name(s.name), address - s.start, address, path, None, "perfmap")]
