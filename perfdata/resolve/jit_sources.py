"""What JIT code says of itself, found per process: the perf map it writes
(/tmp/perf-PID.map) and the jitdump it maps (jit-PID.dump, perf inject
--jit's input), also where the process runs in a container (its own pid
and mount namespaces, reached through /proc/PID/root while it lives)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .dsos import in_process_root

if TYPE_CHECKING:
    from symbolize import Symbolizer
    from symbolize.unwind.jit import JitUnwindTable

    from ..session.stream import Sample

# Paths of code without a file (anonymous memory, a memfd), whose code perf
# looks up in a JIT's /tmp/perf-PID.map.
JIT_PATHS = ("//anon", "[anon]", "/memfd:")
# perf record -k 1 (CLOCK_MONOTONIC): the clock a jitdump's timestamps are on
_CLOCK_MONOTONIC = 1


class JitSources:
    """The perf maps and jitdumps of the processes a run meets, each looked
    for once a process (or once its maps change, for a jitdump not mapped
    yet)."""

    def __init__(self, symbolizer: Symbolizer) -> None:
        self.symbolizer = symbolizer
        self._perfmap_seen: dict[str, bool] = {}
        self._perfmap_placed: set[int] = set()     # pids perfmap_of has looked for
        self._memfd_is_jit: dict[int | None, bool] = {}   # pid -> memfd_is_jit's answer
        # pid -> the jitdump its process mapped (perf inject's jit_detect),
        # or (maps, generation) for a process where none was mapped yet
        self._jitdump_of_pid: dict[int, str | tuple[int, int]] = {}

    def jitdump_path(self, sample: Sample) -> str | None:
        """The jitdump (jit-PID.dump) the sample's process mapped, as perf
        inject --jit finds it (the JIT maps it so that perf records its
        path), or None."""
        pid = sample.pid
        got = self._jitdump_of_pid.get(pid)
        if type(got) is str:
            return got
        maps = sample.thread.maps if sample.thread is not None else None
        if maps is None:
            return None
        if got == (id(maps), maps.generation):
            return None
        # (here, for JIT code's frames only: its module, symbolize's jitdump
        # reader, is not imported by a run that meets none)
        from symbolize import is_jitdump_path
        for m in maps:
            if is_jitdump_path(m.path, pid):
                self._jitdump_of_pid[pid] = m.path
                return m.path
        dumps = [m.path for m in maps if is_jitdump_path(m.path)]
        ns = namespace_pid(pid, sample.thread.comm if sample.thread else None) if dumps else None
        if ns is not None and ns != pid:
            # A JIT in a container names its dump by its pid there
            # (jit-NSPID.dump) in its own filesystem, which perf 6.1 takes
            # while the process lives: read through /proc/PID/root, under
            # that name (another container's jit-1.dump is another file).
            for path in dumps:
                inside = in_process_root(pid, path)
                if is_jitdump_path(path, ns) and inside is not None:
                    self._jitdump_of_pid[pid] = inside
                    return inside
        self._jitdump_of_pid[pid] = (id(maps), maps.generation)
        return None

    def jitdump_paths(self) -> list[str]:
        """The jitdumps (recorded paths) the processes met so far mapped."""
        return sorted({p for p in self._jitdump_of_pid.values() if isinstance(p, str)})

    def jit_unwind_table(self, sample: Sample) -> JitUnwindTable | None:
        """The unwinding info of the JIT code in the sample's process at its
        time, from the jitdump it mapped (CODE_UNWINDING_INFO, what perf
        inject --jit makes each jitted .so's .eh_frame of), or None."""
        dump = self.jitdump_path(sample)
        if dump is None:
            return None
        return self.symbolizer.jit_unwind_table(dump, self.jit_time(sample))

    def memfd_is_jit(self, sample: Sample) -> bool:
        """Is a memfd mapping of the sample's process JIT code (the process
        wrote a perf map), as the frames take it, or an ELF image run from
        it (fexecve), whose CFI is out of reach as any missing binary's?
        Asked for every DWARF sample: answered once a process."""
        got = self._memfd_is_jit.get(sample.pid)
        if got is None:
            got = self._memfd_is_jit[sample.pid] = self.perfmap_exists(self.perfmap_of(sample))
        return got

    def jit_epoch(self, sample: Sample) -> int:
        """Which of its jitdump's code loads the sample's process had made
        at the sample's time (0 without a jitdump): a part of the stack
        caches' keys, as a load is an MMAP2 record once perf inject ran."""
        if not self._jitdump_of_pid:
            return 0
        dump = self._jitdump_of_pid.get(sample.pid)
        if type(dump) is not str:
            return 0
        return self.symbolizer.jitdump(dump).epoch(self.jit_time(sample))

    def jit_time(self, sample: Sample) -> int | None:
        """The sample's time on the jitdump's clock, or None where the
        recording's clock is another (perf record without -k 1)."""
        attr = sample.event.attr
        if attr["flags"].get("use_clockid") and attr.get("clockid") == _CLOCK_MONOTONIC:
            return sample.time
        return None

    def perfmap_of(self, sample: Sample) -> str:
        """The perf map of the sample's process, /tmp/perf-PID.map (the
        name perf prints), and once a process: where a process still
        running in a container wrote it, if not found as it is named."""
        pid = sample.pid
        path = "/tmp/perf-%d.map" % pid
        if pid not in self._perfmap_placed:
            self._perfmap_placed.add(pid)
            if self.symbolizer.jit_file(path) is None:
                place = perfmap_in_namespace(pid, sample.thread.comm if sample.thread else None)
                if place is not None:
                    self.symbolizer.add_jit_file_place(path, place)
        return path

    def perfmap_exists(self, path: str) -> bool:
        got = self._perfmap_seen.get(path)
        if got is None:
            found = self.symbolizer.jit_file(path)
            got = self._perfmap_seen[path] = found is not None and os.path.isfile(found)
        return got


def namespace_pid(pid: int, comm: str | None) -> int | None:
    """The pid a process that still runs has in its own pid namespace (a
    container's: the last of /proc/PID/status's NStgid; PID itself outside
    any), which names the files a JIT writes for perf there.  None where
    /proc/PID is gone, or is now another program than the recorded comm
    (a pid used again)."""
    if pid <= 0:
        return None
    try:
        with open("/proc/%d/status" % pid) as f:
            status = f.read(8192)
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    name = fields.get("Name", "").strip()
    # (a comm is cut at 15 bytes, /proc's Name too)
    if comm is not None and name[:15] != comm[:15]:
        return None
    nstgid = fields.get("NStgid", "").split()
    if not nstgid or not nstgid[-1].isdigit():
        return None
    return int(nstgid[-1])


def perfmap_in_namespace(pid: int, comm: str | None) -> str | None:
    """Where a process that still runs in its own mount (and pid) namespace,
    a container's, wrote its perf map: /proc/PID/root/tmp/perf-NSPID.map,
    which is where perf 6.1 reads it while the process lives (nsinfo)."""
    ns = namespace_pid(pid, comm)
    return None if ns is None else in_process_root(pid, "/tmp/perf-%d.map" % ns)
