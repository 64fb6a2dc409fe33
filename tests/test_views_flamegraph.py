"""`perfdata flamegraph`: the SVG's structure, and its behaviour in headless
Chromium (Debian packages `chromium chromium-driver`; skipped without them):
a screenshot shows the frames drawn with their names, a scripted click zooms
so the clicked frame spans the full width, hover shows the details, search
highlights.  Chromium is driven with the stdlib only: `--screenshot`, and
`--dump-dom` of a page that inlines the SVG and scripts the events.
"""
import json
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from conftest import requires_sample_libc_debug, run_cli

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
SVG_NS = "{http://www.w3.org/2000/svg}"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (apt-get install chromium chromium-driver)")


def make_svg(tmp_path, name, *extra):
    out = tmp_path / (name + ".svg")
    rc, _, err = run_cli(["flamegraph", str(SAMPLES / (name + ".data")), "--debug-dir",
                          str(SAMPLES / "buildids"), "-o", str(out)] + list(extra))
    assert rc == 0, err
    return out, err


def frames_of(svg_path):
    root = ET.parse(svg_path).getroot()
    out = []
    for g in root.iter(SVG_NS + "g"):
        if g.get("data-name") is None:
            continue
        rect = g.find(SVG_NS + "rect")
        text = g.find(SVG_NS + "text")
        out.append({"name": g.get("data-name"), "depth": int(g.get("data-d")),
                    "kind": g.get("data-kind"), "x": float(rect.get("x")),
                    "y": float(rect.get("y")), "w": float(rect.get("width")),
                    "fill": rect.get("fill"), "label": text.text or "",
                    "title": g.find(SVG_NS + "title").text})
    return root, out


def test_structure_cpp_inline(tmp_path):
    svg, _ = make_svg(tmp_path, "cpp_inline.fp")
    root, frames = frames_of(svg)
    text = svg.read_text()
    # Self-contained: no external script, stylesheet, font or image.
    assert not re.search(r'(src|href)\s*=\s*"(https?:|//)', text)
    assert "@import" not in text and "url(http" not in text
    assert root.get("data-total") == "333"     # cpp_inline.fp: 333 samples (samples/README.md)
    by_name = {f["name"]: f for f in frames}
    assert by_name["all"]["depth"] == 0 and by_name["cpp_inline"]["depth"] == 1
    # The true stack (samples/README.md): run <- drive <- main, all named.
    for name in ("main", "perfdemo::Mixer<unsigned long>::run"):
        assert name in by_name
        assert by_name[name]["label"] == name      # wide enough to show the whole name
        assert "%" in by_name[name]["title"] and "samples" in by_name[name]["title"]
    # Flame: callees above callers; children within their parent.
    assert by_name["main"]["y"] < by_name["cpp_inline"]["y"]
    for f in frames:
        assert f["x"] >= 10 - 1e-6 and f["x"] + f["w"] <= 1190 + 1e-3


def test_reverse_colors_weight(tmp_path):
    svg, _ = make_svg(tmp_path, "two_events", "--reverse", "--colors", "dso",
                      "--weight", "period", "--width", "800", "--title", "T&<x>")
    root, frames = frames_of(svg)
    assert root.get("width") == "800"
    by = {f["name"]: f for f in frames}
    assert by["main"]["y"] > by["vdso_clock"]["y"]            # icicle: roots on top
    # cpu-clock only (the first event): the sum of its periods in perf's output
    golden = (REPO / "samples" / "expected" / "two_events.script.txt").read_text()
    periods = [int(m.group(1)) for m in re.finditer(r"^\S.*:\s+(\d+)\s+cpu-clock:", golden, re.M)]
    assert len(periods) > 50 and root.get("data-total") == str(sum(periods))
    assert any(t.text == "T&<x>" for t in root.iter(SVG_NS + "text"))
    kinds = {f["kind"] for f in frames}
    assert "kernel" in kinds
    svg2, _ = make_svg(tmp_path, "two_events")
    _, frames2 = frames_of(svg2)
    fill_kind = {f["name"]: f["fill"] for f in frames2}
    assert any(fill_kind.get(f["name"]) != f["fill"] for f in frames if f["kind"] != "root")


def test_empty_profile(tmp_path):
    out = tmp_path / "empty.svg"
    rc, _, err = run_cli(["flamegraph", str(SAMPLES / "threads.fp.data"), "--comm", "nobody",
                          "-o", str(out)])
    assert rc == 0 and "no samples" in err
    root = ET.parse(out).getroot()
    assert root.tag == SVG_NS + "svg"
    assert root.get("data-total") == "0"


# ------------------------------------------------------------------ chromium
def chromium(*args, timeout=60, want=None):
    """Run headless Chromium; retried (up to 3 runs) while `want(result)` is
    false: on a loaded machine a run now and then ends before the page."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="perfdata-chromium-") as profile:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-extensions", "--mute-audio",
               "--disable-dev-shm-usage", "--user-data-dir=" + profile] + list(args)
        for _ in range(3):
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            if want is None or want(res):
                break
    return res


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG, stdlib only."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


@needs_chromium
def test_screenshot_shows_named_frames(tmp_path):
    svg, _ = make_svg(tmp_path, "cpp_inline.dwarf", "--width", "600")
    root, frames = frames_of(svg)
    width, height = int(root.get("width")), int(root.get("height"))
    png = tmp_path / "shot.png"
    res = chromium("--screenshot=%s" % png, "--window-size=%d,%d" % (width, height),
                   svg.as_uri(), want=lambda r: png.exists())
    assert png.exists(), res.stderr[-2000:]
    w, h, px = read_png(png)
    checked = 0
    for f in frames:
        if f["w"] < 100 or not f["label"]:
            continue
        fill = tuple(int(v) for v in re.findall(r"\d+", f["fill"]))
        y_mid = int(f["y"] + 8)
        # The frame's colour at its right end (past the label) ...
        right = px[y_mid][int(f["x"] + f["w"]) - 4]
        assert all(abs(a - b) <= 12 for a, b in zip(right, fill)), (f["name"], right, fill)
        # ... and dark text pixels where its name is written.
        text_w = min(int(len(f["label"]) * 7), int(f["w"]) - 6)
        dark = sum(1 for y in range(int(f["y"]) + 2, int(f["y"]) + 14)
                   for x in range(int(f["x"]) + 3, int(f["x"]) + 3 + text_w)
                   if sum(px[y][x]) < 250)
        assert dark > 4 * len(f["label"]), (f["name"], dark)
        checked += 1
    assert checked >= 5


_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>%s
<script>
(function () {
  var svg = document.querySelector("svg");
  var gs = Array.prototype.slice.call(document.querySelectorAll("#frames > g"));
  function find(name) { return gs.filter(function (g) { return g.getAttribute("data-name") === name; })[0]; }
  function state() {
    return gs.map(function (g) {
      var r = g.querySelector("rect"), t = g.querySelector("text");
      return {name: g.getAttribute("data-name"), d: +g.getAttribute("data-d"),
              hidden: getComputedStyle(g).display === "none",
              x: +r.getAttribute("x"), w: +r.getAttribute("width"), fill: r.getAttribute("fill"),
              label: t.textContent, textlen: t.getComputedTextLength()};
    });
  }
  var out = {ready: svg.getAttribute("data-ready"), before: state()};
  var target = find(%s);
  target.querySelector("rect").dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
  out.details = document.getElementById("details").textContent;
  out.info = target.getAttribute("data-info");
  target.querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  out.zoomed = state();
  out.unzoomVisible = getComputedStyle(document.getElementById("unzoom")).display !== "none";
  out.matched = svg.flamegraph.search(%s);
  out.searched = state();
  document.getElementById("unzoom").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  out.reset = state();
  var pre = document.createElement("pre");
  pre.id = "result";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script></body></html>
"""


@needs_chromium
@pytest.mark.parametrize("recording,target,descendants", [
    ("cpp_inline.dwarf", "perfdemo::Mixer<unsigned long>::step", 0),
    # clock_gettime (276 of 279 samples) has __vdso_clock_gettime (270) above it.
    ("vdso_clock.fp", "clock_gettime@@GLIBC_2.17", 1),
])
@requires_sample_libc_debug
def test_click_zooms_to_full_width(tmp_path, recording, target, descendants):
    import html
    svg, _ = make_svg(tmp_path, recording)
    root, _ = frames_of(svg)
    plotw, xpad = float(root.get("data-plotw")), float(root.get("data-xpad"))
    body = re.sub(r"^<\?xml[^>]*\?>\s*", "", svg.read_text())
    page = tmp_path / "page.html"
    page.write_text(_PAGE % (body, json.dumps(target), json.dumps("Mixer" if "Mixer" in target else "vdso")))
    res = chromium("--dump-dom", "--virtual-time-budget=2000", page.as_uri(),
                   want=lambda r: '<pre id="result">' in r.stdout)
    m = re.search(r'<pre id="result">(.*?)</pre>', res.stdout, re.S)
    assert m, res.stderr[-2000:]
    out = json.loads(html.unescape(m.group(1)))
    assert out["ready"] == "1"
    before = out["before"]
    t_index = [i for i, f in enumerate(before) if f["name"] == target][0]
    t0 = before[t_index]
    assert t0["w"] < plotw - 1            # not full width before the click
    # Names fit their frames as drawn.
    for f in before:
        assert f["textlen"] <= f["w"] + 0.5, f
    assert [f for f in before if f["name"] == "main"][0]["label"] == "main"
    # Hover: the details line.
    assert out["details"] == out["info"] and target in out["details"] and "%" in out["details"]
    # Click: the frame spans the full width, its callers too, its callees
    # scale with it, everything else hides.
    zoomed = out["zoomed"]
    z = zoomed[t_index]
    assert not z["hidden"]
    assert abs(z["x"] - xpad) < 0.01 and abs(z["w"] - plotw) < 0.01
    assert z["label"] == target
    ratio = plotw / t0["w"]
    seen_desc = 0
    for b, a in zip(before, zoomed):
        if b["d"] < t0["d"] and b["x"] <= t0["x"] + 0.01 and b["x"] + b["w"] >= t0["x"] + t0["w"] - 0.01:
            assert not a["hidden"] and abs(a["w"] - plotw) < 0.01, a     # a caller
        elif b["d"] > t0["d"] and b["x"] >= t0["x"] - 0.01 and b["x"] + b["w"] <= t0["x"] + t0["w"] + 0.01:
            assert not a["hidden"], a                                      # a callee
            assert abs(a["w"] - b["w"] * ratio) < 0.05, (a, b, ratio)
            assert abs(a["x"] - (xpad + (b["x"] - t0["x"]) * ratio)) < 0.05
            seen_desc += 1
        elif b is not t0:
            assert a["hidden"], a
    assert seen_desc >= descendants
    assert out["unzoomVisible"]
    # Search highlights matching frames.
    assert out["matched"] > 0
    term = "Mixer" if "Mixer" in target else "vdso"
    hits = [f for f in out["searched"] if f["fill"] == "rgb(230,0,230)"]
    assert hits and all(term in f["name"] for f in hits)
    if "Mixer" in target:
        assert out["matched"] > 99.0     # the whole zoomed frame matches
    # Reset zoom: back to the first layout.
    for a, b in zip(out["reset"], before):
        assert not a["hidden"] and abs(a["x"] - b["x"]) < 0.01 and abs(a["w"] - b["w"]) < 0.01


@needs_chromium
def test_standalone_svg_script_runs(tmp_path):
    svg, _ = make_svg(tmp_path, "threads.fp")
    res = chromium("--dump-dom", "--virtual-time-budget=1000", svg.as_uri(),
                   want=lambda r: 'data-ready="1"' in r.stdout)
    assert 'data-ready="1"' in res.stdout, res.stderr[-2000:]


@requires_sample_libc_debug
def test_minwidth_leaves_out_narrow_frames(tmp_path):
    svg, _ = make_svg(tmp_path, "vdso_clock.fp", "--minwidth", "500")
    _, frames = frames_of(svg)
    assert frames and all(f["w"] >= 500 for f in frames)
    # hot_clock_loop (2 of 279 samples) is gone, clock_gettime (276) stays.
    names = {f["name"] for f in frames}
    assert "clock_gettime@@GLIBC_2.17" in names and "hot_clock_loop" not in names
