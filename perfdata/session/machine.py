"""Session state: the machine as the records describe it over time.

Feed it every record in delivery (time) order; it keeps threads, processes,
their maps, the kernel's maps and the KSYMBOL/BPF symbols, as perf's
machine.c does.  It knows nothing of symbols or binaries.
"""
from __future__ import annotations

from sys import intern
from typing import Any

from ..format.constants import (MISC_COMM_EXEC, MISC_CPUMODE_MASK, MISC_GUEST_KERNEL,
                                MISC_KERNEL, MISC_MMAP_DATA, RecordType as RT)
from .maps import Map, MapGroup
from .threads import Process, Thread

# (bound once: RT.X on the enum class costs ~100 ns, and apply() runs for
# every side record, 140,000 of them for a shell starting 20,000 processes)
_COMM, _FORK, _EXIT, _MMAP, _MMAP2, _KSYMBOL = (RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2,
                                                 RT.KSYMBOL)

KERNEL_PID = 0xFFFFFFFF     # pid -1 as u32: the kernel's own maps
KERNEL_DSO = "[kernel.kallsyms]"


class KernelSymbol:
    __slots__ = ("start", "end", "name", "kind")

    def __init__(self, start: int, length: int, name: str, kind: int) -> None:
        self.start, self.end, self.name, self.kind = start, start + length, name, kind


class Machine:
    def __init__(self) -> None:
        self.threads: dict[int, Thread] = {}
        self.processes: dict[int, Process] = {}
        self.kernel_maps = MapGroup()
        self.ksymbols: list[KernelSymbol] = []  # KernelSymbol from KSYMBOL records (bpf, ool)
        # path -> the files (device major, minor, inode) mapped under it so
        # far: a host's library and a container's share a path
        self.file_ids: dict[str, set[tuple[int, int, int]]] = {}
        self.counts = {"comm_exec": 0, "fork": 0, "exit": 0, "mmap": 0}

    # --------------------------------------------------------------- threads
    def process(self, pid: int) -> Process:
        proc = self.processes.get(pid)
        if proc is None:
            proc = self.processes[pid] = Process(pid)
        return proc

    def thread(self, pid: int | None, tid: int) -> Thread:
        """The thread, created as perf's machine__findnew_thread does if unseen."""
        th = self.threads.get(tid)
        # (the usual case, a known thread of the same pid, decided first: a
        # sample's thread is looked up here)
        if th is None or (th.pid != pid and th.pid in (-1, None)
                          and pid not in (None, -1, KERNEL_PID)):
            proc = self.process(pid if pid not in (None, -1) else tid)
            th = Thread(pid if pid is not None else -1, tid, proc)
            self.threads[tid] = th
        return th

    # ----------------------------------------------------------- processing
    def apply(self, rtype: int, fields: dict[str, Any], misc: int = 0, time: int = 0) -> None:
        """Update the state with one parsed record."""
        f = fields
        if rtype == _MMAP2 or rtype == _MMAP:
            get = f.get
            self._mmap(misc, time, f["pid"], f["start"], f["len"], f["pgoff"], f["filename"],
                       get("build_id"), get("prot"), get("flags", 0), get("maj", 0),
                       get("min", 0), get("ino", 0))
        elif rtype == _COMM:
            self.apply_comm(misc, time, f["pid"], f["tid"], f["comm"])
        elif rtype == _FORK:
            self._fork(f["pid"], f["ppid"], f["tid"], f["ptid"], time)
        elif rtype == _EXIT:
            self._exit(f["tid"], time)
        elif rtype == _KSYMBOL:
            self.ksymbols.append(KernelSymbol(f["addr"], f["len"], f["name"], f["ksym_type"]))

    # The records of a type as apply() takes them, from the fields of the
    # record's body given in its construct schema's order (the parameters
    # after misc and the record's time are named as the schema's fields:
    # perfdata/core/walk.py checks them), for the compiled walk, which
    # makes no dict of them (80,000 MMAP2 records in a shell's 20,000
    # children).
    def apply_mmap(self, misc: int, at: int, pid: int, tid: int, start: int, len: int,
                   pgoff: int, filename: str) -> None:
        self._mmap(misc, at, pid, start, len, pgoff, filename, None, None, 0, 0, 0, 0)

    def apply_mmap2(self, misc: int, at: int, pid: int, tid: int, start: int, len: int,
                    pgoff: int, maj: int, min: int, ino: int, ino_generation: int, prot: int,
                    flags: int, filename: str) -> None:
        self._mmap(misc, at, pid, start, len, pgoff, filename, None, prot, flags, maj, min, ino)

    def apply_comm(self, misc: int, at: int, pid: int, tid: int, comm: str) -> None:
        th = self.threads.get(tid)
        if th is None or th.pid != pid:
            th = self.thread(pid, tid)
        exec_ = bool(misc & MISC_COMM_EXEC)
        if exec_:
            # perf keeps the old maps across exec (the new image's MMAPs
            # replace what they overlap): samples taken inside execve after
            # the COMM still point into the old image's libc.
            self.counts["comm_exec"] += 1
        th.set_comm(comm, at, exec_)

    def apply_fork(self, misc: int, at: int, pid: int, ppid: int, tid: int, ptid: int,
                   time: int) -> None:
        self._fork(pid, ppid, tid, ptid, at)

    def apply_exit(self, misc: int, at: int, pid: int, ppid: int, tid: int, ptid: int,
                   time: int) -> None:
        self._exit(tid, at)

    def _exit(self, tid: int, time: int) -> None:
        th = self.threads.get(tid)
        if th is not None:
            th.exited = time
        self.counts["exit"] += 1

    def _fork(self, pid: int, ppid: int, tid: int, ptid: int, time: int) -> None:
        self.counts["fork"] += 1
        threads = self.threads
        parent = threads.get(ptid)
        if parent is None or parent.pid != ppid:
            parent = self.thread(ppid, ptid)
        old = threads.pop(tid, None)
        proc = self.processes.get(pid) if pid == ppid else None
        if proc is None:
            maps = parent.process.maps.clone()       # a new process: a copy
            proc = self.processes[pid] = Process(pid, maps)
        # (else a new thread: shared maps)
        th = Thread(pid, tid, proc)
        th.ppid = ppid
        if parent.comm_set:
            th.set_comm(parent.comm, time)
        elif old is not None and old.comm_set:
            th.set_comm(old.comm, time)
        threads[tid] = th

    def _mmap(self, misc: int, time: int, pid: int, start: int, length: int, pgoff: int,
              filename: str, build_id: str | None, prot: int | None, flags: int, maj: int,
              min_: int, ino: int) -> None:
        """An MMAP or MMAP2 record's map (prot None: an MMAP, which has none)."""
        self.counts["mmap"] += 1
        # (one string a path, not one a map: each of a shell's children maps
        # libc, ld.so and its own binary)
        filename = intern(filename)
        is_data = bool(misc & MISC_MMAP_DATA)
        if prot is None:
            prot = 1 if is_data else 4
        # (positional: a shell's every child maps four files, and keyword
        # arguments cost a third more)
        m = Map(start, length, pgoff, filename, build_id, prot, flags, maj, min_, ino, time,
                is_data, pid)
        cpumode = misc & MISC_CPUMODE_MASK
        if pid == KERNEL_PID or cpumode == MISC_KERNEL or cpumode == MISC_GUEST_KERNEL:
            if filename.startswith(KERNEL_DSO) or filename.startswith("[guest.kernel"):
                # perf's kernel map: "[kernel.kallsyms]_text" from _text to the end.
                m.path = KERNEL_DSO
                m.pgoff = m.start if m.pgoff == 0 or m.pgoff == m.start else m.pgoff
                if m.end <= m.start or m.end < m.start:
                    m.end = (1 << 64) - 1
            self.kernel_maps.insert(m)
            return
        proc = self.processes.get(pid)
        if proc is None:
            proc = self.process(pid)
        proc.maps.insert(m)
        ino = m.ino
        if ino and filename[:1] == "/":
            ids = self.file_ids.get(filename)
            if ids is None:
                ids = self.file_ids[filename] = set()
            ids.add((m.maj, m.min, ino))

    def find_map(self, thread: Thread | None, avma: int, kernel: bool) -> Map | None:
        if kernel:
            return self.kernel_maps.find(avma)
        # (the process's maps, not Thread.maps: a property call less, and this
        # is asked once a frame)
        return thread.process.maps.find(avma) if thread is not None else None

    def find_ksymbol(self, avma: int) -> KernelSymbol | None:
        for sym in self.ksymbols:
            if sym.start <= avma < sym.end:
                return sym
        return None
