"""The tree of a flame graph: a Node per frame, merged by name at each
level below its caller, and FlameGraphBuilder, which adds symbolized
samples to it (or stacks counted elsewhere: the compiled core, a fleet)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from ...run.folded import (CollapseOptions, EventFilter, frame_kind, frame_names, root_name,
                           sample_weight)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ...resolve.frames import StackFrame
    from ...resolve.symbolized import SymbolizedSample
    from ..options import SampleRun

    # A stack's path from its outermost frame: (name, kind, dso) each.
    Path = list[tuple[str, str, str]]


class Node:
    __slots__ = ("name", "value", "self_value", "children", "kind", "dso", "first")

    def __init__(self, name: str, kind: str = "user", dso: str | None = None,
                 first: int = 0) -> None:
        self.name = name
        self.value = 0
        self.self_value = 0
        self.children: dict[str, Node] = {}
        self.kind = kind
        self.dso = dso
        # the sample that made it (its kind and dso are that sample's frame's,
        # as when one process adds every sample in order), or the first that
        # saw the frame itself where those before had it stitched (--stitch)
        self.first = first

    def merge(self, other: Node) -> None:
        """Add another tree of the same root (a worker's share of the samples)."""
        self.value += other.value
        self.self_value += other.self_value
        if (other.kind != "stitched", -other.first) > (self.kind != "stitched", -self.first):
            self.kind, self.dso, self.first = other.kind, other.dso, other.first
        for name, theirs in other.children.items():
            mine = self.children.get(name)
            if mine is None:
                self.children[name] = theirs
            else:
                mine.merge(theirs)


class FlameGraphBuilder:
    """Merges symbolized samples into a tree of frames."""

    def __init__(self, weight: str = "samples", collapse_options: CollapseOptions | None = None,
                 note_stream: TextIO | None = None) -> None:
        self.weight = weight
        self.opts = collapse_options or CollapseOptions()
        self.root = Node("all", "root")
        self.events = EventFilter(self.opts.event_filter, note_stream)
        self.samples = 0
        self._cache: dict[int, tuple[Sequence[StackFrame], Path]] = {}
        self.event_name: str | None = None

    def _path(self, frames: Sequence[StackFrame], java: bool) -> Path:
        hit = self._cache.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        path = []
        for fr in reversed(frames):
            kind = frame_kind(fr)
            dso = fr.dso or "[unknown]"
            for name in frame_names(fr, self.opts, java):
                path.append((name, kind, dso))
        if len(self._cache) > 100000:
            self._cache.clear()
        self._cache[id(frames)] = (frames, path)
        return path

    def add(self, sample: SymbolizedSample, order: int = 0) -> None:
        """One sample; `order`: its place in the file's samples, where workers
        each add a share of them (see merge)."""
        if not self.events.keep(sample.event):
            return
        if self.event_name is None:
            self.event_name = sample.event.name
        w = 1 if self.weight == "samples" else sample_weight(sample, "period")
        self.samples += 1
        root = root_name(sample, self.opts)
        node = self.root.children.get(root)
        if node is None:
            node = self.root.children[root] = Node(root, "root", first=order)
        self.root.value += w
        node.value += w
        self.add_path(self._path(sample.frames, root.startswith("java")), w, node, order)

    def stack_path(self, frames: Sequence[StackFrame], java: bool) -> Path:
        """A sample's stack as the tree's (name, kind, dso), outermost first."""
        return self._path(frames, java)

    def add_stack(self, root: str, path: Iterable[tuple[str, str, str | None]], weight: int,
                  samples: int, event_name: str) -> None:
        """`samples` samples of one root and stack at once (their weights
        summed: weight; the event of the first of them), as add() adds them
        one by one (perfdata/core/flamegraph.py: stacks added in the order
        of their first samples)."""
        if self.event_name is None:
            self.event_name = event_name
        self.samples += samples
        node = self.root.children.get(root)
        if node is None:
            node = self.root.children[root] = Node(root, "root")
        self.root.value += weight
        node.value += weight
        self.add_path(path, weight, node)

    def add_path(self, path: Iterable[tuple[str, str, str | None]], weight: int,
                 node: Node | None = None, order: int = 0) -> None:
        """weight for one stack, path (name, kind, dso) from the outermost
        frame, below node (by default the graph's root, which counts it too)."""
        if node is None:
            node = self.root
            node.value += weight
        for name, kind, dso in path:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = Node(name, kind, dso, order)
            elif child.kind == "stitched" and kind != "stitched":
                # drawn as stitched only while no sample has seen it itself
                child.kind, child.dso, child.first = kind, dso, order
            node = child
            node.value += weight
        node.self_value += weight

    def merge(self, other: FlameGraphBuilder) -> None:
        """Add the samples another builder of the same options added (a
        worker's share, each added with its order in the file)."""
        self.root.merge(other.root)
        self.samples += other.samples
        if self.event_name is None:
            self.event_name = other.event_name

    def __getstate__(self) -> dict[str, Any]:  # what crosses from a worker: no caches
        return {"weight": self.weight, "opts": self.opts, "root": self.root,
                "samples": self.samples, "event_name": self.event_name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._cache = {}
        self.events = EventFilter(self.opts.event_filter)


def fill_tree(run_: SampleRun, builder: FlameGraphBuilder) -> bool:
    """Build the run's tree with the compiled core where it is built and the
    options leave samples to it; False where it is not used (the caller
    adds the samples itself)."""
    from ...core import compiled
    from ...core.flamegraph import TreeCore
    module = compiled()
    if module is None or not TreeCore.applies_to(run_.samples, builder.opts):
        return False
    from ...run.profile import print_warnings
    from ...run.progress import sample_progress
    core = TreeCore(module, run_.samples, builder)
    try:
        core.fill(sample_progress(core, run_.pf, run_.label))
    finally:
        print_warnings(run_.pf, run_.samples.symbolizer.warnings)
    return True
