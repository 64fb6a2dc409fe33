"""A frame's colour: by its kind (user code warm, kernel blue, JIT green,
...), or by its shared object; each frame's own shade from its name's hash,
so one function keeps its colour across graphs."""
from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tree import Node

    Rgb = tuple[int, ...]

KIND_COLORS = {
    "kernel": ((70, 120, 200), (130, 175, 235)),  # blue
    "jit": ((50, 170, 50), (120, 220, 120)),      # green
    "inlined": ((60, 180, 190), (120, 220, 230)),  # aqua
    "stitched": ((165, 120, 70), (215, 180, 130)),  # tan: taken from another sample
    "unknown": ((160, 160, 160), (195, 195, 195)),  # grey
    "user": ((205, 50, 20), (255, 200, 55)),      # red to yellow ("hot")
    "root": ((170, 170, 210), (190, 190, 230)),   # all, comm: lilac
    "cut": ((95, 95, 95), (95, 95, 95)),          # dark grey: stacks cut by --max-depth
    "offcpu": ((95, 70, 170), (165, 140, 235)),   # violet: where threads wait (offcpu)
}
# The legend's words for each family, in the legend's order.
KIND_LABELS = {
    "user": "user code", "inlined": "inlined", "kernel": "kernel", "jit": "JIT",
    "stitched": "stitched (--stitch)", "unknown": "unknown symbol",
    "cut": "cut (--max-depth)", "offcpu": "off-CPU (waiting)", "root": "all / process",
}


def _hash_name(name: str) -> tuple[float, float]:
    """Two stable numbers in [0, 1) from a name (flamegraph.pl hashes the
    name too, so one function keeps its colour across graphs)."""
    h = zlib.crc32(name.encode("utf-8", "replace"))
    return (h & 0xffff) / 65536.0, ((h >> 16) & 0xffff) / 65536.0


def _mix(lo: Rgb, hi: Rgb, t: float) -> Rgb:
    return tuple(int(a + (b - a) * t) for a, b in zip(lo, hi))


def dso_color(dso: str | None) -> Rgb:
    if dso in ("[unknown]", None):
        return KIND_COLORS["unknown"][0]
    import colorsys
    a, b = _hash_name(dso)
    r, g, bl = colorsys.hls_to_rgb(a, 0.55 + 0.15 * b, 0.65)
    return int(r * 255), int(g * 255), int(bl * 255)


def node_color(node: Node, scheme: str) -> Rgb:
    if node.kind == "cut":
        return KIND_COLORS["cut"][0]
    if node.kind == "root":
        lo, hi = KIND_COLORS["root"]
        return _mix(lo, hi, _hash_name(node.name)[0])
    if node.kind == "unknown":
        lo, hi = KIND_COLORS["unknown"]
        return _mix(lo, hi, _hash_name(node.name)[0])
    if scheme == "dso":
        return dso_color(node.dso)
    lo, hi = KIND_COLORS.get(node.kind, KIND_COLORS["user"])
    return _mix(lo, hi, _hash_name(node.name)[0])
