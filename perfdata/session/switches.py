"""Off-CPU time from scheduler switches: when each thread left the CPU, in
which state, with what stack, and when it ran again.

The tracker is fed switches in time order, whatever recorded them:

* `sched:sched_switch` samples: the sample is taken in the context of the
  thread going out (prev_pid), its callchain is that thread's stack where it
  blocked, `prev_state` says why (S sleeping, D uninterruptible, R or R+
  preempted); next_pid is the thread coming in, which ends its wait (a
  system-wide recording: `perf sched record`, `perf record -a`);
* PERF_RECORD_SWITCH / SWITCH_CPU_WIDE records (`--switch-events`): a
  thread's own switch in, which ends its wait where the recording follows
  only some threads (then the thread coming in is not in a sched_switch
  sample: the tracepoint fires in the context of the thread going out);
* `sched:sched_wakeup`, `sched:sched_waking`: who woke a waiting thread
  (the sample is taken in the waker's context: its callchain is the
  waker's stack where it woke the thread; the first wakeup after the
  switch out and before the switch in counts).

A wait is the time from a thread's switch out to its next switch in (perf
sched timehist's "wait time", which holds its "sch delay"); the time from a
switch in to the next switch out is run time, or to the thread's exit
(PERF_RECORD_EXIT) where no switch out follows it: a per-process recording
loses a thread's events in do_exit, before its last switch.  Stacks are opaque here (the
caller's keys); this layer knows nothing of symbols.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from ..format import EventFormat

    # Who woke a wait: (comm, pid, tid, stack) of the waker, as its wakeup
    # sample names it.
    Waker = tuple[str, int, int, Hashable]

SHORT_WAITS = "[short waits]"


class TracepointLayout:
    """Where the fields a switch or a wakeup needs lie in the tracepoint's
    raw data (its format, read from the file's tracing data): each a
    (struct format, offset), so one record costs one unpack_from each."""
    __slots__ = ("fields",)

    def __init__(self, fmt: EventFormat, names: tuple[str, ...], little: bool = True) -> None:
        self.fields: dict[str, tuple[struct.Struct, int, int]] = {}
        order = "<" if little else ">"
        for name in names:
            f = fmt.field(name)
            if f is None:
                raise KeyError(name)
            if f.type.startswith("char") and f.size > 8:
                self.fields[name] = (struct.Struct("%ds" % f.size), f.offset, f.size)
            else:
                code = {1: "b", 2: "h", 4: "i", 8: "q"}[f.size]
                self.fields[name] = (struct.Struct(order + (code if f.signed else code.upper())),
                                     f.offset, f.size)

    def read(self, raw: bytes | memoryview, name: str) -> Any:
        """A field's value (a comm as text), or None past the raw data's end."""
        st, offset, size = self.fields[name]
        if offset + size > len(raw):
            return None
        value = st.unpack_from(raw, offset)[0]
        if isinstance(value, bytes):
            return value.split(b"\0", 1)[0].decode("utf-8", "replace")
        return value


SWITCH_FIELDS = ("prev_comm", "prev_pid", "prev_state", "next_comm", "next_pid")
WAKEUP_FIELDS = ("comm", "pid")


class ThreadTimes:
    """One thread's times: what it ran, what it waited (by state), and the
    span the switches saw (from its first switch to its last, or to its exit
    where it exited running)."""
    __slots__ = ("tid", "pid", "comm", "first", "last", "run", "waits", "wait_count", "switches_out",
                 "out_at", "out_state", "out_stack", "in_at", "exit_at", "woken_by", "waker")

    def __init__(self, tid: int, time: int) -> None:
        self.tid = tid
        self.pid = -1
        self.comm = ":%d" % tid
        self.first = time
        self.last = time
        self.run = 0
        self.waits: dict[str, int] = {}             # state -> ns
        self.wait_count = 0
        self.switches_out = 0
        self.out_at: int | None = None              # its switch out, while it waits
        self.out_state = ""
        self.out_stack: Hashable = None
        self.in_at: int | None = None               # its switch in, while it runs
        self.exit_at: int | None = None             # its exit, if seen
        self.woken_by = ""                          # the comm of its waker, if known
        self.waker: Waker | None = None             # its waker, where wakers are kept

    @property
    def wait(self) -> int:
        return sum(self.waits.values())

    @property
    def wall(self) -> int:
        return self.last - self.first


class SwitchTracker:
    """Waits and run times of threads, from their switches in time order.

    min_wait: waits shorter than this (ns) are added up under the stack
    SHORT_WAITS; window: (start, end) ns, waits and runs clipped to it
    (None: the whole file); keep(tid): whether a thread's waits count;
    wakers: keep the waits by waker too (`wakes`)."""

    def __init__(self, min_wait: int = 0, window: list[tuple[int, int]] | None = None,
                 keep: Callable[[ThreadTimes], bool] | None = None,
                 wakers: bool = False) -> None:
        self.min_wait = min_wait
        self.window = window
        self.keep = keep
        self.threads: dict[int, ThreadTimes] = {}
        # (tid, stack, state, waker comm) -> [ns, count]
        self.waits: dict[tuple[int, Hashable, str, str], list[int]] = {}
        # (tid, stack, state, waker) -> [ns, count]: the waits a recorded
        # wakeup ended, by who woke them and where (None: not kept)
        self.wakes: dict[tuple[int, Hashable, str, Waker], list[int]] | None = \
            {} if wakers else None
        # (tid, stack) -> [ns, samples]: on-CPU samples of a clock event, for
        # the wall-clock view (where the thread ran, beside where it waited)
        self.oncpu: dict[tuple[int, Hashable], list[int]] = {}
        self.switches = 0
        self.switch_ins = 0
        self.inferred_ins = 0
        # cpu -> time of its last switch: where a thread's switch in was not
        # recorded (a lost record), it ran from then (perf sched timehist's rule)
        self.cpu_last: dict[int, int] = {}

    def thread(self, tid: int, time: int) -> ThreadTimes:
        t = self.threads.get(tid)
        if t is None:
            t = self.threads[tid] = ThreadTimes(tid, time)
        return t

    def switch(self, time: int, cpu: int | None, prev: int, pid: int, comm: str, state: str,
               stack: Hashable, nxt: int, next_comm: str | None) -> None:
        """One switch on `cpu` at `time`: thread prev (of process pid, -1 if
        unknown) goes out in `state`, blocked at `stack`; thread nxt comes in
        (named next_comm, if it has no name yet).  A tid of 0 (the idle
        task) is no thread: prev 0 or nxt 0 is only the other half."""
        # (the hot path of a system-wide file: a million calls a minute)
        threads = self.threads
        if prev:
            self.switches += 1
            t = threads.get(prev)
            if t is None:
                t = threads[prev] = ThreadTimes(prev, time)
            if pid >= 0:
                t.pid = pid
            t.comm = comm
            t.switches_out += 1
            if cpu is not None:
                out_at = t.out_at
                if out_at is not None:
                    # (it ran, but its switch in is missing: since the cpu's last switch)
                    self.inferred_ins += 1
                    self._switched_in(t, max(self.cpu_last.get(cpu, out_at), out_at))
                self.cpu_last[cpu] = time
            t.last = time
            in_at = t.in_at
            if in_at is not None:
                t.run += time - in_at if self.window is None else self._clip(in_at, time)
                t.in_at = None
            t.out_at = time
            t.out_state = state
            t.out_stack = stack
            t.woken_by = ""
            t.waker = None
        if nxt:
            t = threads.get(nxt)
            if t is None:
                t = threads[nxt] = ThreadTimes(nxt, time)
                if next_comm is not None:
                    t.comm = next_comm
            if t.out_at is not None:
                self._switched_in(t, time)
            elif t.in_at is None:
                t.in_at = t.last = time
            # (else running already: the sched_switch, then the SWITCH record)

    def switch_out(self, time: int, tid: int, pid: int, comm: str, state: str,
                   stack: Hashable = None, cpu: int | None = None) -> None:
        """Thread tid leaves `cpu` at `time` in `state`, blocked at `stack`."""
        self.switch(time, cpu, tid, pid, comm, state, stack, 0, None)

    def switch_in(self, time: int, tid: int, comm: str | None = None) -> None:
        """Thread tid gets a CPU at `time`: the end of its wait, if it waited."""
        self.switch(time, None, 0, -1, "", "", None, tid, comm)

    def _switched_in(self, t: ThreadTimes, time: int) -> None:
        """The end of t's wait: it runs from `time`."""
        start = t.out_at
        assert start is not None
        t.last = t.in_at = time
        t.out_at = None
        self.switch_ins += 1
        ns = time - start if self.window is None else self._clip(start, time)
        if not ns and self.window is not None:
            return
        state = t.out_state
        waits = t.waits
        waits[state] = waits.get(state, 0) + ns
        t.wait_count += 1
        if self.keep is not None and not self.keep(t):
            return
        stack = t.out_stack if time - start >= self.min_wait else SHORT_WAITS
        key = (t.tid, stack, state, t.woken_by)
        got = self.waits.get(key)
        if got is None:
            self.waits[key] = [ns, 1]
        else:
            got[0] += ns
            got[1] += 1
        if self.wakes is not None and t.waker is not None:
            woke = self.wakes.setdefault((t.tid, stack, state, t.waker), [0, 0])
            woke[0] += ns
            woke[1] += 1

    def exited(self, time: int, tid: int) -> None:
        """Thread tid exits at `time` (its EXIT record): where no switch out
        follows, `finish` ends its last run there."""
        t = self.threads.get(tid)
        if t is not None:
            t.exit_at = time

    def finish(self) -> None:
        """The end of the file: the runs of threads that exited running end
        at their exit (a system-wide recording sees their last switch out
        instead, after the exit, and ends them there)."""
        for t in self.threads.values():
            in_at, exit_at = t.in_at, t.exit_at
            if in_at is not None and exit_at is not None and exit_at >= in_at:
                t.run += exit_at - in_at if self.window is None else self._clip(in_at, exit_at)
                t.last = max(t.last, exit_at)
                t.in_at = None

    def waiting(self, tid: int) -> bool:
        """Whether thread tid waits and no wakeup of this wait was seen yet."""
        t = self.threads.get(tid)
        return t is not None and t.out_at is not None and not t.woken_by

    def wakeup(self, tid: int, waker_tid: int, waker_stack: Hashable,
               waker: tuple[str, int] | None = None) -> None:
        """Thread tid is woken by waker_tid (its first wakeup of a wait counts;
        the waker named as its last switch out named it); waker: its (comm,
        pid) as the wakeup sample names them, for `wakes`."""
        t = self.threads.get(tid)
        if t is not None and t.out_at is not None and not t.woken_by:
            known = self.threads.get(waker_tid)
            t.woken_by = known.comm if known is not None else ":%d" % waker_tid
            if self.wakes is not None and waker is not None:
                t.waker = (waker[0], waker[1], waker_tid, waker_stack)

    def add_wait(self, tid: int, pid: int, comm: str, start: int, end: int, state: str,
                 stack: Hashable) -> None:
        """A whole wait at once (perf's offcpu-time samples: the period is
        the wait, ending at the sample's time)."""
        t = self.thread(tid, start)
        if pid >= 0:
            t.pid = pid
        t.comm = comm
        t.switches_out += 1
        t.first = min(t.first, start)
        t.last = max(t.last, end)
        t.out_state, t.out_stack, t.woken_by, t.waker = state, stack, "", None
        t.out_at = start
        self.switches += 1
        self._switched_in(t, end)
        t.in_at = None

    def add_total(self, tid: int, pid: int, comm: str, ns: int, state: str,
                  stack: Hashable) -> None:
        """Waits of a thread summed elsewhere, without their times (perf's
        offcpu-time samples of the waits it adds up in BPF: they say no
        time): counted whole whatever the window, the thread's span unchanged,
        under their stack whatever --min-wait (a sum of waits, not one)."""
        t = self.threads.get(tid)
        if t is None:
            t = self.threads[tid] = ThreadTimes(tid, 0)
        if pid >= 0:
            t.pid = pid
        t.comm = comm
        t.switches_out += 1
        self.switches += 1
        self.switch_ins += 1
        t.waits[state] = t.waits.get(state, 0) + ns
        t.wait_count += 1
        if self.keep is not None and not self.keep(t):
            return
        got = self.waits.setdefault((tid, stack, state, ""), [0, 0])
        got[0] += ns
        got[1] += 1

    def _clip(self, start: int, end: int) -> int:
        window = self.window
        if window is None:
            return end - start
        return sum(max(0, min(end, hi) - max(start, lo)) for lo, hi in window)

    def ran(self, time: int, tid: int, pid: int, comm: str, ns: int, stack: Hashable) -> None:
        """An on-CPU sample at `time` of a clock event: `ns` of running at `stack`."""
        if self.window is not None and not any(lo <= time <= hi for lo, hi in self.window):
            return
        t = self.threads.get(tid)
        if t is None:
            t = self.threads[tid] = ThreadTimes(tid, time)
            t.comm = comm
        if pid >= 0:
            t.pid = pid
        if self.keep is not None and not self.keep(t):
            return
        got = self.oncpu.setdefault((tid, stack), [0, 0])
        got[0] += ns
        got[1] += 1

    def add_sums(self, tid: int, pid: int, comm: str, first: int, last: int, run: int,
                 switches_out: int, waits: list[tuple[str, bool, str, int, int]]) -> None:
        """A thread's sums made elsewhere (perfdata/core/switches.py, the
        compiled sums of a whole file): its waits (state, short, waker, ns,
        count) each."""
        t = self.threads[tid] = ThreadTimes(tid, first)
        t.pid, t.comm, t.last, t.run, t.switches_out = pid, comm, last, run, switches_out
        for state, short, waker, ns, count in waits:
            t.waits[state] = t.waits.get(state, 0) + ns
            t.wait_count += count
            key = (tid, SHORT_WAITS if short else None, state, waker)
            got = self.waits.setdefault(key, [0, 0])
            got[0] += ns
            got[1] += count

    def kept_threads(self) -> list[ThreadTimes]:
        """The threads that switched out, those `keep` keeps, by tid."""
        return [t for tid, t in sorted(self.threads.items())
                if t.switches_out and (self.keep is None or self.keep(t))]
