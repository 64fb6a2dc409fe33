"""`perfdata offcpu --wakers`: the waits by who woke them, and where.

A wakeup sample (`sched:sched_wakeup`, `sched:sched_waking`) is taken in
the waker's context: its callchain is the waker's stack where it woke the
thread (a write to a pipe, a futex wake, a timer's interrupt).  The first
wakeup of a wait after its switch out (and before its switch in) names
its waker (perfdata/session/switches.py).

Outputs: `report` (the waits by woken thread, stack and state, and by
waker and its stack), `collapse` (folded stacks in the form of Brendan
Gregg's wakeup chain graphs, bcc's offwaketime -f: the woken thread's
comm, its stack root first, `--`, the waker's stack leaf first, the
waker's comm; weighted by wait time in ns) and `flamegraph` (those drawn;
the waker's half upside down above the `--` frame, as in his chain
graphs).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..session.switches import SHORT_WAITS

if TYPE_CHECKING:
    import argparse

    from ..session.switches import SwitchTracker, ThreadTimes, Waker

# The frame between the woken thread's stack and its waker's (offwaketime's).
SEPARATOR = "--"
NO_STACK = "[no callchain]"


def rows(tracker: SwitchTracker) -> list[tuple[int, int, ThreadTimes, Any, str, Waker]]:
    """(ns, waits, woken thread, its stack, state, waker) each, the longest first."""
    wakes = tracker.wakes or {}
    threads = tracker.threads
    out = [(v[0], v[1], threads[tid], stack, state, waker)
           for (tid, stack, state, waker), v in wakes.items()]
    out.sort(key=lambda r: (-r[0], r[2].tid, r[4], str(r[3]), str(r[5])))
    return out


def _stack_lines(stack: Any) -> list[str]:
    """A stack leaf first, a frame a line (name and dso)."""
    if stack is None or stack == SHORT_WAITS:
        return ["%20s%s" % ("", stack or NO_STACK)]
    return ["%20s%s (%s)" % ("", name, dso) for name, _, dso in reversed(stack)]


def report_lines(tracker: SwitchTracker, percent_limit: float = 0.0) -> list[str]:
    from .offcpu_output import ms
    got = rows(tracker)
    woken = sum(r[0] for r in got)
    total = sum(t.wait for t in tracker.kept_threads())
    lines = ["# off-CPU time by waker: %s ms of %s ms of waits ended by a recorded wakeup "
             "(%d waits)" % (ms(woken), ms(total), sum(r[1] for r in got)),
             "# (each: the woken thread's stack, leaf first; %s; its waker's stack where it "
             "woke it, leaf first)" % SEPARATOR, "#",
             "# %12s %7s %6s %-5s %s" % ("wait ms", "share", "waits", "state",
                                         "thread  woken by waker")]
    for ns, count, t, stack, state, (comm, pid, tid, waker_stack) in got:
        share = 100.0 * ns / (woken or 1)
        if share < percent_limit:
            continue
        lines.append("  %12s %6.2f%% %6d %-5s %s %d/%d  woken by %s %d/%d" % (
            ms(ns), share, count, state, t.comm, t.pid, t.tid, comm, pid, tid))
        lines += _stack_lines(stack)
        lines.append("%20s%s" % ("", SEPARATOR))
        lines += _stack_lines(waker_stack)
        lines.append("")
    return lines


def _names(stack: Any) -> list[str]:
    """A stack's names outermost first."""
    if stack is None or stack == SHORT_WAITS:
        return [stack or NO_STACK]
    return [name for name, _, _ in stack]


def _root(comm: str, pid: int, tid: int, tid_root: bool) -> str:
    name = "%s-%d/%d" % (comm, pid, tid) if tid_root else comm
    return name.replace(" ", "_")


def chain(t: ThreadTimes, stack: Any, state: str, waker: Waker, tid_root: bool = False,
          with_state: bool = False) -> list[str]:
    """A wakeup chain's frames as offwaketime folds them: the woken thread,
    its stack root first (its state after it, with_state), `--`, the
    waker's stack leaf first, the waker."""
    comm, pid, tid, waker_stack = waker
    names = [_root(t.comm, t.pid, t.tid, tid_root)] + _names(stack)
    if with_state:
        names.append("[%s]" % state)
    names.append(SEPARATOR)
    names += _names(waker_stack)[::-1]
    names.append(_root(comm, pid, tid, tid_root))
    return names


def folded(tracker: SwitchTracker, tid_root: bool = False, with_state: bool = False
           ) -> dict[str, int]:
    """{folded chain: ns} of the waits a recorded wakeup ended."""
    counts: dict[str, int] = {}
    for ns, _, t, stack, state, waker in rows(tracker):
        text = ";".join(chain(t, stack, state, waker, tid_root, with_state))
        counts[text] = counts.get(text, 0) + ns
    return counts


def flamegraph_svg(args: argparse.Namespace, tracker: SwitchTracker) -> str:
    """The wakeup chains drawn: width by wait time (ns)."""
    from .flamegraph import FlameGraphBuilder
    from .offcpu_output import OFFCPU_KIND, render
    builder = FlameGraphBuilder("period")
    for ns, count, t, stack, state, waker in sorted(rows(tracker), key=str):
        names = chain(t, stack, state, waker, args.tid_root, args.with_state)
        path = [(name, "unknown" if name == SEPARATOR else OFFCPU_KIND, None)
                for name in names[1:]]
        builder.add_stack(names[0], path, ns, count, "off-CPU time (ns)")
    title = args.title if args.title is not None else "Wakeup Chain Flame Graph"
    return render(args, builder, title, "off-CPU time (ns) by waker")
