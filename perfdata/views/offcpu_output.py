"""What `perfdata offcpu` prints: the thread table, the stacks by wait time,
folded stacks weighted by wait time (ns) and the flame graph of those.

Times in the tables are milliseconds with three decimals, as perf sched
timehist prints them; folded stacks count nanoseconds."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..session.switches import SHORT_WAITS

if TYPE_CHECKING:
    import argparse
    from types import ModuleType

    from ..session.switches import SwitchTracker, ThreadTimes
    from .flamegraph import FlameGraphBuilder

# The colour family of off-CPU frames in the flame graph (views/flamegraph.py's
# KIND_COLORS): what the kinds of their frames become.
OFFCPU_KIND = "offcpu"
NO_STACK = "[no callchain]"
# The wall-clock view's stack for the run time of a thread no clock sample
# caught (each of its runs shorter than the sampling period): its wall time
# still adds up.
UNSAMPLED = (("[on-CPU, not sampled]", "unknown", ""),)


def ms(ns: int) -> str:
    return "%.3f" % (ns / 1e6)


def thread_lines(tracker: SwitchTracker) -> list[str]:
    """The per-thread table: wall (its first switch to its last, or to its
    exit) = run + wait; the wait split by state."""
    threads = tracker.kept_threads()
    states = sorted({s for t in threads for s in t.waits})
    head = "%-16s %15s %12s %12s %12s %7s" % ("comm", "pid/tid", "wall ms", "run ms",
                                             "wait ms", "waits")
    lines = ["# " + head + "".join(" %12s" % ("%s ms" % s) for s in states)]
    for t in threads:
        lines.append("  %-16s %15s %12s %12s %12s %7d%s" % (
            t.comm, "%d/%d" % (t.pid, t.tid), ms(t.wall), ms(t.run), ms(t.wait),
            t.wait_count, "".join(" %12s" % ms(t.waits.get(s, 0)) for s in states)))
    return lines


def _stacks(tracker: SwitchTracker) -> list[tuple[int, int, ThreadTimes, Any, str, str]]:
    """(ns, waits, thread, stack, state, waker) each, the longest first."""
    threads = tracker.threads
    rows = [(v[0], v[1], threads[tid], stack, state, waker)
            for (tid, stack, state, waker), v in tracker.waits.items()]
    rows.sort(key=lambda r: (-r[0], r[2].tid, r[4], str(r[3])))
    return rows


def stack_lines(tracker: SwitchTracker, percent_limit: float = 0.0) -> list[str]:
    rows = _stacks(tracker)
    total = sum(r[0] for r in rows) or 1
    lines = ["# %12s %7s %6s %-5s %s" % ("wait ms", "share", "waits", "state",
                                         "thread (stack: leaf first)")]
    for ns, count, t, stack, state, waker in rows:
        share = 100.0 * ns / total
        if share < percent_limit:
            continue
        lines.append("  %12s %6.2f%% %6d %-5s %s %d/%d%s" % (
            ms(ns), share, count, state, t.comm, t.pid, t.tid,
            "  (woken by %s)" % waker if waker else ""))
        if stack is None or stack == SHORT_WAITS:
            lines.append("%20s%s" % ("", stack or NO_STACK))
        else:
            for name, _, dso in reversed(stack):
                lines.append("%20s%s (%s)" % ("", name, dso))
        lines.append("")
    return lines


def report_lines(tracker: SwitchTracker, percent_limit: float = 0.0) -> list[str]:
    threads = tracker.kept_threads()
    total = sum(t.wait for t in threads)
    lines = ["# off-CPU time: %d threads waited %s ms in %d waits (%d switches)"
             % (len(threads), ms(total), sum(t.wait_count for t in threads),
                tracker.switches), "#", "# per thread (wall: first switch to last, or to its exit)"]
    lines += thread_lines(tracker)
    lines += ["", "# per stack and state"]
    lines += stack_lines(tracker, percent_limit)
    return lines


def folded(tracker: SwitchTracker, tid_root: bool = False, with_state: bool = False
           ) -> dict[str, int]:
    """{folded stack: ns} (stackcollapse's form: the comm as root); the
    on-CPU samples too where the tracker holds some (--wall), the waits
    then ending in their state."""
    counts: dict[str, int] = {}
    with_state = with_state or bool(tracker.oncpu)
    for (tid, stack, state, _), (ns, _) in tracker.waits.items():
        names = _names(tracker.threads[tid], stack, state, tid_root, with_state)
        text = ";".join(names)
        counts[text] = counts.get(text, 0) + ns
    for (tid, stack), (ns, _) in oncpu_times(tracker).items():
        text = ";".join(_names(tracker.threads[tid], stack, "", tid_root, False))
        counts[text] = counts.get(text, 0) + ns
    return counts


def oncpu_times(tracker: SwitchTracker) -> dict[tuple[int, Any], tuple[int, int]]:
    """{(tid, stack): (ns run there, samples)}: each thread's run time as its
    switches measure it, split over its stacks as its clock samples' periods
    are (a sample's period stops at the last tick before the thread leaves
    the cpu; the switches see the whole slice); the periods as they are for
    a thread without run time from switches; the run time of a thread no
    sample caught under UNSAMPLED."""
    sampled: dict[int, int] = {}
    for (tid, _), (ns, _) in tracker.oncpu.items():
        sampled[tid] = sampled.get(tid, 0) + ns
    out = {}
    for (tid, stack), (ns, count) in tracker.oncpu.items():
        run = tracker.threads[tid].run
        out[(tid, stack)] = (round(ns * run / sampled[tid]) if run and sampled[tid] else ns,
                             count)
    if tracker.oncpu:
        for t in tracker.kept_threads():
            if t.run and not sampled.get(t.tid):
                out[(t.tid, UNSAMPLED)] = (t.run, 0)
    return out


def _root(t: ThreadTimes, tid_root: bool) -> str:
    name = "%s-%d/%d" % (t.comm, t.pid, t.tid) if tid_root else t.comm
    return name.replace(" ", "_")


def _names(t: ThreadTimes, stack: Any, state: str, tid_root: bool, with_state: bool
           ) -> list[str]:
    names = [_root(t, tid_root)]
    if stack is None or stack == SHORT_WAITS:
        names.append(stack or NO_STACK)
    else:
        names += [name for name, _, _ in stack]
    if with_state:
        names.append("[%s]" % state)
    return names


def flamegraph_svg(args: argparse.Namespace, tracker: SwitchTracker) -> str:
    """The flame graph of the waits: width by wait time (ns)."""
    from .flamegraph import FlameGraphBuilder
    builder = FlameGraphBuilder("period")
    stack: Any
    for (tid, stack, state, _), (ns, count) in sorted(tracker.waits.items(), key=str):
        t = tracker.threads[tid]
        path: list[tuple[str, str, str | None]] = []
        if stack is None or stack == SHORT_WAITS:
            path.append((stack or NO_STACK, "unknown", None))
        else:
            path += [(name, kind if kind == "unknown" else OFFCPU_KIND, dso)
                     for name, kind, dso in stack]
        if args.with_state or tracker.oncpu:
            path.append(("[%s]" % state, OFFCPU_KIND, None))
        builder.add_stack(_root(t, args.tid_root), path, ns, count, "off-CPU time (ns)")
    for (tid, stack), (ns, count) in sorted(oncpu_times(tracker).items(), key=str):
        path = [(NO_STACK, "unknown", None)] if stack is None else list(stack)
        builder.add_stack(_root(tracker.threads[tid], args.tid_root), path, ns, count,
                          "off-CPU time (ns)")
    title = args.title if args.title is not None else \
        "Wall-Clock Time Flame Graph" if tracker.oncpu else "Off-CPU Time Flame Graph"
    return render(args, builder, title, "off-CPU time (ns)")


def render(args: argparse.Namespace, builder: FlameGraphBuilder, title: str,
           what: str) -> str:
    """The svg of a flame graph of waits, with the options of the command
    (its subtitle: the file's name, then what the widths are)."""
    import os

    from .flamegraph import MIN_WIDTH_PX, render_svg
    return render_svg(builder, title=title,
                      subtitle="%s - %s" % (os.path.basename(str(args.file)), what),
                      width=args.width, flame=args.flame, colors=args.colors,
                      min_width=args.minwidth if args.minwidth is not None else MIN_WIDTH_PX,
                      max_depth=args.max_depth)


def write(args: argparse.Namespace, tracker: SwitchTracker, out: TextIO,
          view: ModuleType | None = None) -> None:
    """The output of args.format; view: the module whose report_lines,
    folded and flamegraph_svg make it (this one's, or offcpu_wakers')."""
    if view is None:
        view = sys.modules[__name__]
    if args.format == "threads":
        out.writelines(line + "\n" for line in thread_lines(tracker))
    elif args.format == "collapse":
        counts = view.folded(tracker, args.tid_root, args.with_state)
        out.writelines("%s %d\n" % (k, counts[k]) for k in sorted(counts))
    elif args.format == "flamegraph":
        out.write(view.flamegraph_svg(args, tracker))
    else:
        out.writelines(line + "\n" for line in view.report_lines(tracker, args.percent_limit))
