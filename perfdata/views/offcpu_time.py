"""perf's `offcpu-time` samples (`perf record --off-cpu`, perf 5.20 on):
what each says of a wait, in the two forms perf has written.

perf's BPF program (tools/perf/util/bpf_skel/off_cpu.bpf.c) takes the
time from a thread's switch out in sleep (S or D) to its switch in, keyed
by the thread, its process and the user stack it blocked in; the event is
a software event named `offcpu-time` (PERF_COUNT_SW_BPF_OUTPUT).

* perf 5.20 to 6.13 (tools/perf/util/bpf_off_cpu.c, off_cpu_write): at the
  recording's end, one sample per (thread, stack) of the sum of its waits:
  TID is (pid, tid), PERIOD the nanoseconds waited, CALLCHAIN
  [PERF_CONTEXT_USER, user ips...], TIME no time but OFF_CPU_TIMESTAMP
  (~0 << 32) plus the sample's index, to sort them last.
* perf 6.14 on (the sample type has RAW, not CALLCHAIN): the sample's own
  TID, PERIOD and CALLCHAIN are placeholders; its raw data holds a u64 of
  pid and tid, the period, the callchain (nr, then nr ips, the first
  PERF_CONTEXT_USER) and the cgroup id (util/evsel.c,
  __set_offcpu_sample). A wait over --off-cpu-thresh (500 us by default)
  is its own sample, written by the BPF program at the thread's switch in
  (TIME is then that switch in); the shorter ones are summed at the end,
  as before, with TIME past OFF_CPU_TIMESTAMP. The BPF program writes its
  u64 as tgid << 32 | pid (the thread's id first), off_cpu_write as
  pid << 32 | tgid (the process's first); perf 6.14 reads both as
  (pid, tid). Here the order is the one that names a thread of that
  process where the session knows it, else the writer's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..resolve.symbolized import SymbolizedSample
    from ..session.machine import Machine

# perf's OFF_CPU_TIMESTAMP: the time of the samples written at the end.
OFF_CPU_TIMESTAMP = 0xFFFFFFFF00000000
# PERF_CONTEXT_USER, the first ip of every offcpu-time callchain
CONTEXT_USER = 0xFFFFFFFFFFFFFE00


def timed(time: int) -> bool:
    """Whether a sample's time is a wait's end (not perf's placeholder)."""
    return 0 < time < OFF_CPU_TIMESTAMP


def read_offcpu_sample(s: SymbolizedSample, machine: Machine, little: bool = True
                       ) -> bool | None:
    """Make an offcpu-time sample say its own wait: for perf 6.14's form,
    the pid, tid, period and callchain of its raw data put in their place
    (and its thread looked up as perf does).  True where the sample's time
    ends the wait (so time - period starts it), False for a sum without a
    time, None for raw data too short for what it claims."""
    raw = (s.fields.get("raw") or {}).get("data")
    if raw is None:
        return timed(s.time)
    from ..format import read_offcpu_raw
    fields = read_offcpu_raw(bytes(raw), little)
    if fields is None:
        return None
    first, second, period = fields.pid, fields.tid, fields.period
    nr, ips = fields.callchain.nr, list(fields.callchain.ips)
    is_timed = timed(s.time)
    pid, tid = (second, first) if is_timed else (first, second)
    if not _known(machine, pid, tid) and _known(machine, tid, pid):
        pid, tid = tid, pid
    thread = machine.thread(pid, tid)
    s.pid, s.tid, s.period, s.thread, s.comm = pid, tid, period, thread, thread.comm
    s.fields["callchain"] = {"nr": nr, "ips": ips}
    s.ip = ips[1] if nr > 1 else None
    return is_timed


def _known(machine: Machine, pid: int, tid: int) -> bool:
    """Whether the session knows thread tid as one of process pid."""
    thread = machine.threads.get(tid)
    return thread is not None and thread.pid == pid
