"""The SVG text of a flame graph: the page (its size from the legend's rows
and the frames' levels), the style, the title and legend, the controls
(details line, Reset Zoom, Search), one group per drawn frame, and the
embedded script."""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .colors import node_color
from .layout import (FONT_SIZE, FONT_WIDTH, FRAME_HEIGHT, MIN_WIDTH_PX, XPAD, Layout, MinWidth,
                     fit_label, lay_out)
from .legend import LEGEND_ROW, SWATCH_W, legend_entries, legend_items, legend_notes
from .svg_script import SCRIPT

if TYPE_CHECKING:
    from .legend import LegendItem
    from .tree import FlameGraphBuilder

HINT = "hover a frame for its details, click to zoom, Ctrl-F to search"


def escape(text: str) -> str:
    """XML character data: what xml.sax.saxutils.escape does, without its
    import of urllib.request (15 ms, every command's start-up: the help
    lists this command)."""
    return text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")


def escape_attr(text: str) -> str:
    """An XML attribute's value, in double quotes."""
    return escape(text).replace('"', "&quot;").replace("\n", "&#10;")


class Page(NamedTuple):
    """The page's geometry: its size, the top of the legend, the room above
    and below the frames, the details line's baseline, the frames' scale."""
    width: int
    height: int
    legend_top: int
    ypad1: int
    ypad2: int
    details_y: float
    plot_w: float
    scale: float        # pixels per unit of weight
    total: int          # the graph's weight
    flame: bool


def render_svg(builder: FlameGraphBuilder, title: str | None = None,
               subtitle: str | None = None, width: int = 1200, flame: bool = False,
               colors: str = "kind", min_width: float | MinWidth = MIN_WIDTH_PX,
               max_depth: int = 0) -> str:
    """The SVG text of a FlameGraphBuilder's tree: drawn from the top (an
    icicle graph) unless `flame` (roots at the bottom, as flamegraph.pl)."""
    # Why from the top by default: a stack of 127 frames (the kernel's
    # frame-pointer limit, which garbage walks reach) makes a page of 2,150 px
    # whose first screen, drawn as flamegraph.pl does, is blank: the root and
    # the wide frames are at the bottom.  Drawn from the top, the first screen
    # holds the root, the hot paths and the legend wherever the SVG is shown:
    # opened on its own, in an <img> (no script runs there, so scrolling to
    # the root cannot be relied on), inlined in a page, or as a picture.
    title = title if title is not None else "Flame Graph"
    if not isinstance(min_width, MinWidth):
        min_width = MinWidth(float(min_width))
    unit = "samples" if builder.weight == "samples" else "period"
    total = builder.root.value
    plot_w = max(width - 2 * XPAD, 10)
    scale = plot_w / total if total else 0.0
    min_px = min_width.pixels(plot_w)
    layout = lay_out(builder.root, scale, min_px, max_depth) if total else Layout()
    entries, more_dsos = legend_entries(layout.placed, colors)
    notes = legend_notes(layout, more_dsos, total, flame, min_width, max_depth)
    legend, legend_rows = legend_items(entries, notes, width)
    page = _page(width, subtitle, legend_rows, layout.levels, plot_w, scale, total, flame)
    out = _document_head(page, unit, layout.levels, max_depth, min_px)
    out += _gradients(legend)
    out += _titles(page, title, subtitle)
    out += _legend(legend, page.legend_top)
    out += _controls(page)
    out += _frames(layout, page, colors, unit)
    out.append('<script type="text/ecmascript"><![CDATA[\n%s\n]]></script>\n' % SCRIPT)
    out.append('</svg>\n')
    return "".join(out)


def _page(width: int, subtitle: str | None, legend_rows: int, levels: int, plot_w: float,
          scale: float, total: int, flame: bool) -> Page:
    head = FONT_SIZE * 3 + (FONT_SIZE + 4 if subtitle else 0)   # title and subtitle
    ypad1 = head + legend_rows * LEGEND_ROW + (0 if flame else LEGEND_ROW)
    ypad2 = FONT_SIZE * 2 + 10 if flame else 10
    height = ypad1 + ypad2 + levels * FRAME_HEIGHT + (0 if total else 3 * FRAME_HEIGHT)
    details_y = height - ypad2 / 2 + 4 if flame else ypad1 - 6
    return Page(width, height, head, ypad1, ypad2, details_y, plot_w, scale, total, flame)


def _document_head(page: Page, unit: str, levels: int, max_depth: int, min_px: float
                   ) -> list[str]:
    """The XML declaration, the <svg> element (what the script and tests
    read in its data- attributes) and the style sheet."""
    width, height = page.width, page.height
    return [
        '<?xml version="1.0" standalone="no"?>\n',
        '<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" '
        'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'data-total="%d" data-unit="%s" data-plotw="%.2f" data-xpad="%d" data-fontsize="%d" '
        'data-fontwidth="%.2f" data-orientation="%s" data-levels="%d" data-max-depth="%d" '
        'data-min-width-px="%g">\n'
        % (width, height, width, height, page.total, unit, page.plot_w, XPAD, FONT_SIZE,
           FONT_WIDTH, "flame" if page.flame else "icicle", levels, max_depth, min_px),
        '<style type="text/css">\n'
        'text { font-family: Verdana, "DejaVu Sans", Arial, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n'
        '#title { text-anchor: middle; font-size: %dpx; }\n'
        '#subtitle { text-anchor: middle; fill: rgb(100,100,100); }\n'
        '#legend .note, #details.hint { fill: rgb(90,90,90); }\n'
        '.button { cursor: pointer; fill: rgb(40,40,160); }\n'
        '.button:hover { text-decoration: underline; }\n'
        '.hide { display: none; }\n'
        '#frames > g { cursor: pointer; }\n'
        '#frames > g:hover > rect { stroke: black; stroke-width: 0.5; }\n'
        '#frames text { pointer-events: none; }\n'
        '#frames > g[data-kind="cut"] > text { fill: rgb(255,255,255); }\n'
        '</style>\n' % (FONT_SIZE, FONT_SIZE + 5)]


def _gradients(legend: list[LegendItem]) -> list[str]:
    """The legend swatches' gradients (a family of shades, lo to hi)."""
    gradients = [(i, e) for i, (_, _, e, _, _) in enumerate(legend) if e and e[2] != e[3]]
    if not gradients:
        return []
    out = ['<defs>\n']
    for i, (_, _, lo, hi) in gradients:
        out.append('<linearGradient id="legend-%d"><stop offset="0" stop-color="rgb(%d,%d,%d)"/>'
                   '<stop offset="1" stop-color="rgb(%d,%d,%d)"/></linearGradient>\n'
                   % ((i,) + tuple(lo) + tuple(hi)))
    out.append('</defs>\n')
    return out


def _titles(page: Page, title: str, subtitle: str | None) -> list[str]:
    """The background, the title and the subtitle."""
    width = page.width
    out = ['<rect x="0" y="0" width="%d" height="%d" fill="rgb(245,245,238)"/>\n'
           % (width, page.height),
           '<text id="title" x="%.1f" y="%d">%s</text>\n'
           % (width / 2, FONT_SIZE * 2, escape(title))]
    if subtitle:
        out.append('<text id="subtitle" x="%.1f" y="%d">%s</text>\n'
                   % (width / 2, FONT_SIZE * 3 + 2, escape(subtitle)))
    return out


def _legend(legend: list[LegendItem], legend_top: int) -> list[str]:
    """The legend's group: a swatch and label per entry, then the notes."""
    out = ['<g id="legend">\n']
    for i, (row, x, entry, key, text) in enumerate(legend):
        y = legend_top + row * LEGEND_ROW
        if entry is None:
            out.append('<text class="note" data-note="%s" x="%.1f" y="%d">%s</text>\n'
                       % (key, x, y + FONT_SIZE + 2, escape(text)))
            continue
        family, label, lo, hi = entry
        fill = "url(#legend-%d)" % i if lo != hi else "rgb(%d,%d,%d)" % tuple(lo)
        out.append('<g class="entry" data-family="%s"><rect x="%.1f" y="%d" width="%d" '
                   'height="%d" fill="%s" rx="2" ry="2"/><text x="%.1f" y="%d">%s</text></g>\n'
                   % (escape_attr(family), x, y + 3, SWATCH_W, FRAME_HEIGHT - 3, fill,
                      x + SWATCH_W + 5, y + FONT_SIZE + 2, escape(label)))
    out.append('</g>\n')
    return out


def _controls(page: Page) -> list[str]:
    """The details line, the buttons, the search's share; "No samples" for
    an empty graph."""
    width, details_y = page.width, page.details_y
    # Until a frame is hovered, the details line says what the mouse does.
    hint = HINT if page.total else " "
    out = ['<text id="details" class="hint" x="%d" y="%d" data-hint="%s">%s</text>\n'
           % (XPAD, details_y, escape_attr(hint), escape(hint)),
           '<text id="unzoom" class="button hide" x="%d" y="%d">Reset Zoom</text>\n'
           % (XPAD, FONT_SIZE * 2),
           '<text id="search" class="button" x="%d" y="%d" text-anchor="end">Search</text>\n'
           % (width - XPAD, FONT_SIZE * 2),
           '<text id="resetsearch" class="button hide" x="%d" y="%d" text-anchor="end">'
           'Reset Search</text>\n' % (width - XPAD - 60, FONT_SIZE * 2),
           '<text id="matched" x="%d" y="%d" text-anchor="end"> </text>\n'
           % (width - XPAD, details_y)]
    if not page.total:
        out.append('<text id="empty" x="%.1f" y="%d" text-anchor="middle">No samples</text>\n'
                   % (width / 2, page.ypad1 + FRAME_HEIGHT * 2))
    return out


def _frames(layout: Layout, page: Page, colors: str, unit: str) -> list[str]:
    """The frames' group: per drawn frame, level by level, its rectangle,
    label and tooltip (the data- attributes the script zooms with)."""
    scale, total = page.scale, page.total
    out = ['<g id="frames">\n']
    for node, depth, x in sorted(layout.placed, key=lambda p: (p[1], p[2])):
        px = XPAD + x * scale
        pw = node.value * scale
        if page.flame:
            y = page.height - page.ypad2 - (depth + 1) * FRAME_HEIGHT
        else:
            y = page.ypad1 + depth * FRAME_HEIGHT
        share = 100.0 * node.value / total
        info = "%s (%s %s, %.2f%%)" % (node.name, format(node.value, ","), unit, share)
        tip = info
        if node.kind == "cut":
            tip += "\n" + layout.cut_tips[id(node)]
        elif node.dso and node.kind not in ("root",):
            tip += "\n" + node.dso
        r, g, b = node_color(node, colors)
        out.append('<g data-d="%d" data-kind="%s" data-name="%s" data-info="%s">'
                   '<title>%s</title>'
                   '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="rgb(%d,%d,%d)" '
                   'rx="2" ry="2" data-ox="%.4f" data-ow="%.4f"/>'
                   '<text x="%.2f" y="%.1f">%s</text></g>\n'
                   % (depth, node.kind, escape_attr(node.name), escape_attr(info),
                      escape(tip), px, y, pw, FRAME_HEIGHT - 1, r, g, b, px, pw,
                      px + 3, y + FRAME_HEIGHT - 4.5, escape(fit_label(node.name, pw))))
    out.append('</g>\n')
    return out
