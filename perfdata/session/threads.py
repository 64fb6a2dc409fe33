"""Threads and processes of a recording: names over time, parents, maps."""
from __future__ import annotations

from .maps import MapGroup


class Process:
    """What the threads of one pid share: the address space."""
    __slots__ = ("pid", "maps")

    def __init__(self, pid: int, maps: MapGroup | None = None) -> None:
        self.pid = pid
        self.maps = maps if maps is not None else MapGroup()


class Thread:
    __slots__ = ("pid", "tid", "ppid", "comm", "comm_set", "comms", "process", "exited")

    def __init__(self, pid: int, tid: int, process: Process) -> None:
        self.pid = pid
        self.tid = tid
        self.ppid: int | None = None
        # perf names a thread it never saw a COMM for ":tid", and the idle
        # thread 0 "swapper".
        self.comm = ":%d" % tid if tid != 0 else "swapper"
        self.comm_set = False
        self.comms: list[tuple[int, str, bool]] = []     # (time, comm, exec) history
        self.process = process
        self.exited: int | None = None

    def set_comm(self, comm: str, time: int, exec_: bool = False) -> None:
        self.comm = comm
        self.comm_set = True
        self.comms.append((time, comm, exec_))

    @property
    def maps(self) -> MapGroup:
        return self.process.maps

    def __repr__(self) -> str:
        return "Thread(%d/%d %s)" % (self.pid, self.tid, self.comm)
