"""Threads and processes of a recording: names over time, parents, maps."""
from .maps import MapGroup


class Process:
    """What the threads of one pid share: the address space."""
    __slots__ = ("pid", "maps")

    def __init__(self, pid, maps=None):
        self.pid = pid
        self.maps = maps if maps is not None else MapGroup()


class Thread:
    __slots__ = ("pid", "tid", "ppid", "comm", "comm_set", "comms", "process", "exited")

    def __init__(self, pid, tid, process):
        self.pid = pid
        self.tid = tid
        self.ppid = None
        # perf names a thread it never saw a COMM for ":tid", and the idle
        # thread 0 "swapper".
        self.comm = ":%d" % tid if tid != 0 else "swapper"
        self.comm_set = False
        self.comms = []         # (time, comm, exec) history
        self.process = process
        self.exited = None

    def set_comm(self, comm, time, exec_=False):
        self.comm = comm
        self.comm_set = True
        self.comms.append((time, comm, exec_))

    @property
    def maps(self):
        return self.process.maps

    def __repr__(self):
        return "Thread(%d/%d %s)" % (self.pid, self.tid, self.comm)
