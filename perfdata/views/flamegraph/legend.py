"""The legend under a flame graph's title: the colour families its drawn
frames use (with --colors dso, the widest shared objects), then notes on
what is not drawn, placed in rows that wrap at the graph's width."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .colors import KIND_COLORS, KIND_LABELS, dso_color
from .layout import FONT_SIZE, FONT_WIDTH, XPAD, Layout, MinWidth

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .colors import Rgb
    from .tree import Node

    # (family, label, first colour, last colour)
    LegendEntry = tuple[str, str, Rgb, Rgb]
    # (row, x, entry or None for a note, note key, text)
    LegendItem = tuple[int, float, LegendEntry | None, str, str]

# Shared objects named in the legend of --colors dso (the widest ones).
LEGEND_DSOS = 8
SWATCH_W = 18
LEGEND_ROW = FONT_SIZE + 8


def legend_entries(placed: Iterable[tuple[Node, int, float]],
                   colors: str) -> tuple[list[LegendEntry], int]:
    """The colour families the drawn frames use, in the legend's order:
    (family, label, first colour, last colour) each; and, with --colors dso,
    how many shared objects were left out of it (the legend names the
    LEGEND_DSOS widest)."""
    kinds: set[str] = set()
    dsos: dict[str, int] = {}       # shared object -> its widest frame
    for node, _, _ in placed:
        if colors == "dso" and node.kind not in ("root", "unknown", "cut") \
                and node.dso not in ("[unknown]", None):
            dsos[node.dso] = max(dsos.get(node.dso, 0), node.value)  # type: ignore[index]
        elif colors == "dso" and node.kind not in ("root", "cut"):
            kinds.add("unknown")
        else:
            kinds.add(node.kind)
    entries = []
    for dso in sorted(dsos, key=lambda d: (-dsos[d], d))[:LEGEND_DSOS]:
        c = dso_color(dso)
        entries.append(("dso:" + dso, dso.rsplit("/", 1)[-1] or dso, c, c))
    for kind in KIND_LABELS:
        if kind in kinds:
            lo, hi = KIND_COLORS[kind]
            entries.append((kind, KIND_LABELS[kind], lo, hi))
    return entries, max(0, len(dsos) - LEGEND_DSOS)


def legend_notes(layout: Layout, more_dsos: int, total: int, flame: bool,
                 min_width: MinWidth, max_depth: int) -> list[tuple[str, str]]:
    """The legend's notes after its entries: (key, text) each."""
    notes = []
    if more_dsos:
        notes.append(("dsos", "+%d more shared objects (hover a frame for its own)" % more_dsos))
    if total:
        notes.append(("orientation", "callees above their callers" if flame
                      else "callees below their callers"))
    if layout.narrow:
        notes.append(("min-width", "%s frame%s narrower than %s not drawn"
                      % (format(layout.narrow, ","), "" if layout.narrow == 1 else "s",
                         min_width)))
    if layout.cut_tips:
        notes.append(("max-depth", "%d place%s where stacks are cut at %d frames"
                      % (len(layout.cut_tips), "" if len(layout.cut_tips) == 1 else "s",
                         max_depth)))
    return notes


def text_width(text: str) -> float:
    return len(text) * FONT_SIZE * FONT_WIDTH


def legend_items(entries: list[LegendEntry], notes: list[tuple[str, str]],
                 width: int) -> tuple[list[LegendItem], int]:
    """Where the legend's entries and notes go: (row, x, entry or None, note
    key, text) each, wrapped to the width; and the rows."""
    out: list[LegendItem] = []
    row, x = 0, float(XPAD)
    items: list[tuple[LegendEntry | None, str, str]] = \
        [(e, "", e[1]) for e in entries] + [(None, key, text) for key, text in notes]
    for entry, key, text in items:
        w = (SWATCH_W + 5 if entry else 0) + text_width(text)
        if x > XPAD and x + w > width - XPAD:
            row, x = row + 1, float(XPAD)
        out.append((row, x, entry, key, text))
        x += w + 18
    return out, (row + 1 if out else 0)
