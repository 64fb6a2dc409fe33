"""Stacks folded as FlameGraph's stackcollapse-perf.pl folds `perf script`'s
(views/collapse.py says its rules), and a frame's kind as the flame graph
colours it: what the Python path and the compiled core's drivers
(perfdata/core/collapse.py, flamegraph.py) both make of a symbolized frame,
so that their tables are the same.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from ..format import AttrType, SampleType as ST

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..format import EventAttr
    from ..resolve.frames import StackFrame
    from ..session.stream import Sample

_GO_METHOD = re.compile(r"\.\(.*\)\.")
_AFTER_PAREN = re.compile(r"\((?!anonymous namespace\)).*", re.S)
_KERNEL_DSO = re.compile(r"(^\[|vmlinux$)")
_PERF_MAP_DSO = re.compile(r"/tmp/perf-\d+\.map|(?:^|/)jit-\d+\.dump\Z")


@dataclass(frozen=True, slots=True)
class CollapseOptions:
    """stackcollapse-perf.pl's options: roots comm-pid (pid) or
    comm-pid/tid (tid), addresses of unnamed frames (addrs), _[k] and _[j]
    marks (kernel, jit); weight "period" or "samples"; the event kept
    (event_filter, None: the first seen)."""
    pid: bool = False
    tid: bool = False
    addrs: bool = False
    kernel: bool = False
    jit: bool = False
    weight: str = "period"
    event_filter: str | None = None


def root_name(sample: Sample, opts: CollapseOptions) -> str:
    comm = sample.comm
    if opts.tid:
        name = "%s-%s/%s" % (comm, sample.pid, sample.tid)
    elif opts.pid:
        name = "%s-%s" % (comm, sample.pid)
    else:
        name = comm
    return name.replace(" ", "_")


def frame_names(frame: StackFrame, opts: CollapseOptions, java: bool = False
                ) -> Sequence[str]:
    """The folded names of one printed frame (one name, except for perf's
    old `a->b` inline notation), as stackcollapse-perf.pl makes them."""
    raw = frame.symbol if frame.symbol is not None else "[unknown]"
    if raw.startswith("("):
        return ()       # the script skips "process name" lines
    mod = "inlined" if frame.inlined else (frame.dso or "[unknown]")
    out = []
    for index, func in enumerate(raw.split("->")):
        if func == "[unknown]":
            if mod != "[unknown]":
                func = mod.rsplit("/", 1)[-1]
            else:
                func = "unknown"
            if opts.addrs:
                func = "[%s <%x>]" % (func, frame.address)
            else:
                func = "[%s]" % func
        func = func.replace(";", ":")
        if not _GO_METHOD.search(func):
            func = _AFTER_PAREN.sub("", func, count=1)
        func = func.replace('"', "").replace("'", "")
        if java and "/" in func and func.startswith("L"):
            func = func[1:]
        if index > 0:
            if "_[i]" not in func:
                func += "_[i]"
        elif opts.kernel and _KERNEL_DSO.search(mod) and "unknown" not in mod:
            func += "_[k]"
        elif opts.jit and _PERF_MAP_DSO.search(mod):
            if "_[j]" not in func:
                func += "_[j]"
        out.append(func)
    return out


def stack_names(frames: Sequence[StackFrame], opts: CollapseOptions, java: bool = False
                ) -> list[str]:
    """Names of a leaf-first frame list, root first."""
    names = []
    for frame in reversed(frames):
        got = frame_names(frame, opts, java)
        if len(got) == 1:
            names.append(got[0])
        elif got:
            # Within one line the script keeps the written order.
            names.extend(got)
    return names


def shows_period(event: EventAttr) -> bool:
    """Whether perf script's default output shows a period for this event
    (then stackcollapse-perf.pl counts it)."""
    return event.attr["type"] != AttrType.TRACEPOINT and bool(event.sample_type & ST.PERIOD)


def sample_weight(sample: Sample, weight: str) -> int:
    if weight == "samples":
        return 1
    if not shows_period(sample.event):
        return 1
    return sample.period or 1


class EventFilter:
    """The script's event filter: the first non-tracepoint event, or a name."""

    def __init__(self, name: str | None = None, stream: TextIO | None = None) -> None:
        self.name = name
        self.defaulted = name is None
        self.warned = False
        self.stream = stream

    def keep(self, event: EventAttr) -> bool:
        if event.attr["type"] == AttrType.TRACEPOINT:
            return True
        if self.name is None:
            self.name = event.name
            return True
        if event.name == self.name:
            return True
        if self.defaulted and not self.warned and self.stream is not None:
            self.stream.write("perfdata: note: only events of type %s are counted "
                              "(--event-filter NAME for another)\n" % self.name)
            self.warned = True
        return False


# the dsos of JIT code (a flame graph's "jit" frames)
_JIT_CODE_DSO = re.compile(r"(/tmp/perf-\d+\.map|^//anon|^\[anon|^/memfd:|^\[jit|(?:^|/)jit-\d+\.dump\Z)")


def frame_kind(frame: StackFrame) -> str:
    if frame.kernel:
        return "kernel"
    if frame.stitched:
        # (not seen in this sample's stack: the reader should know)
        return "stitched"
    dso = frame.dso or ""
    if _JIT_CODE_DSO.search(dso):
        return "jit"
    if frame.symbol is None:
        return "unknown"
    if frame.inlined:
        return "inlined"
    return "user"
