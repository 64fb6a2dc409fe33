"""The compiled core's driver for `perfdata flamegraph`: the tree of frame-
pointer (-g) samples' stacks counted by perfdata.core._core, the other
samples' by the Python path, into one FlameGraphBuilder.

The core walks and folds each sample as for `perfdata collapse`
(perfdata/core/collapse.py: the same plan, event filter, roots, symbol
tables, and what it hands back).  What it keeps of an address is the
numbers of its tree nodes' (name, kind, dso), root first, each made once by
the Python path (FlameGraphBuilder.stack_path's frame_names and
frame_kind); each sample adds its weight to counts[stack, root], whose
value also holds the first such sample's ordinal and event.  The samples
the Python path makes are added up the same way, by (root, path).  After
the run every stack goes into the builder (FlameGraphBuilder.add_stack) in
the order of its first sample: a node is made by the first sample through
it, and takes that sample's kind and dso, as when the samples are added one
by one.  The graph is the same bytes as the Python path's
(tests/core/test_core_equality.py).  The view hands its builder down
(views/flamegraph/tree.py fill_tree).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..resolve.frames import StackFrame
from ..run.folded import CollapseOptions, frame_kind, frame_names, root_name, sample_weight
from .collapse import CollapseCore

if TYPE_CHECKING:
    import types
    from collections.abc import Iterable, Iterator, Sequence

    from ..format import EventAttr
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample
    from ..run.folded import EventFilter
    from .script import Plan

    # a tree node's (name, kind, dso)
    NodeKey = tuple[str, str, str]

    class FlameGraphBuilder(Protocol):
        """What TreeCore fills: the view's tree (views/flamegraph/tree.py
        FlameGraphBuilder, handed down by the view that draws it)."""
        weight: str

        @property
        def opts(self) -> CollapseOptions: ...

        @property
        def events(self) -> EventFilter: ...

        def stack_path(self, frames: Sequence[StackFrame], java: bool) -> list[NodeKey]: ...

        def add_stack(self, root: str, path: Iterable[tuple[str, str, str | None]], weight: int,
                      samples: int, event_name: str) -> None: ...


class TreeCore(CollapseCore):
    """Fills a FlameGraphBuilder: the samples the core counts into its
    counts, the others by their stacks (see `fill`)."""

    def __init__(self, module: types.ModuleType, samples: SampleSymbolizer,
                 builder: FlameGraphBuilder) -> None:
        self.builder = builder
        o = builder.opts
        # (collapse's options with the graph's weight: the plan's)
        opts = CollapseOptions(pid=o.pid, tid=o.tid, addrs=o.addrs, kernel=o.kernel, jit=o.jit,
                               weight=builder.weight, event_filter=o.event_filter)
        # {stack \0 root: [weight, samples, first ordinal, attr]}: the core's
        self.counted: dict[bytes, list[Any]] = {}
        self._nodes: list[NodeKey] = []
        self._node_number: dict[NodeKey, int] = {}
        super().__init__(module, samples, opts, builder.events,
                         self.counted)  # type: ignore[arg-type]

    def fill(self, items: Iterator[SymbolizedSample] | None = None) -> None:
        """Add every sample of the stream to the builder.  items: this
        driver's own iteration wrapped (a progress display), or None."""
        builder = self.builder
        stream = self.samples.stream
        keep = builder.events.keep
        # {(root, path): [weight, samples, first ordinal, event name]}
        mine: dict[tuple[str, tuple[NodeKey, ...]], list[Any]] = {}
        try:
            for sample in (self if items is None else items):
                if not keep(sample.event):
                    continue
                w = 1 if builder.weight == "samples" else sample_weight(sample, "period")
                root = root_name(sample, builder.opts)
                path = tuple(builder.stack_path(sample.frames, root.startswith("java")))
                got = mine.get((root, path))
                if got is None:
                    mine[root, path] = [w, 1, stream.ordinal, sample.event.name]
                else:
                    got[0] += w
                    got[1] += 1
        finally:
            self._add_stacks(mine)

    def _add_stacks(self, mine: dict[tuple[str, tuple[NodeKey, ...]], list[Any]]) -> None:
        """The core's stacks and the Python path's into the builder, in the
        order of their first samples."""
        nodes = self._nodes
        stacks: list[tuple[int, str, Sequence[NodeKey], int, int, str]] = []
        for (root, path), (w, n, first, name) in mine.items():
            stacks.append((first, root, path, w, n, name))
        for key, (w, n, first, attr) in self.counted.items():
            folded, root_bytes = key.split(b"\0", 1)
            stack = [nodes[int(x)] for x in folded.split(b";")] if folded else []
            stacks.append((first, root_bytes.decode("utf-8"), stack, w, n, attr.name))
        stacks.sort(key=lambda s: s[0])
        add = self.builder.add_stack
        for _, root, path_of, w, n, name in stacks:
            add(root, path_of, w, n, name)

    # ------------------------------------------------------- the answers
    def _plan(self, event: EventAttr) -> Plan | None:
        plan = super()._plan(event)
        if plan is None:
            return None
        return (plan[0] | self.module.H_TREE,) + plan[1:]  # type: ignore[return-value]

    def _node(self, name: str, kind: str, dso: str) -> str:
        key = (name, kind, dso)
        number = self._node_number.get(key)
        if number is None:
            number = self._node_number[key] = len(self._nodes)
            self._nodes.append(key)
        return "%d" % number

    def _frames_text(self, found: Sequence[StackFrame], event: EventAttr) -> str:
        """The numbers of an address's nodes, root first (FlameGraphBuilder.
        stack_path of these frames; java roots are the Python path's)."""
        node = self._node
        return ";".join(node(name, frame_kind(fr), fr.dso or "[unknown]")
                        for fr in reversed(found) for name in frame_names(fr, self.opts))

    def _no_map_parts(self, data: bytes, avma: int) -> tuple[bytes, bytes] | None:
        return (data, b"")      # (a node's number never holds the address: no --addrs)

    def _fold(self, name: str | None, shown: str) -> str:
        # (a frame as the resolver makes one of a tabled binary, as
        # CollapseCore._fold: its name, dso, kind)
        frame = StackFrame(None, 0, name, 0 if name is not None else None, shown)
        kind, dso = frame_kind(frame), frame.dso or "[unknown]"
        return ";".join(self._node(n, kind, dso) for n in frame_names(frame, self.opts))
