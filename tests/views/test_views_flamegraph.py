"""`perfdata flamegraph`: the SVG's structure, and its behaviour in headless
Chromium (Debian packages `chromium chromium-driver`; skipped without them):
a screenshot shows the frames drawn with their names, a scripted click zooms
so the clicked frame spans the full width, hover shows the details, search
highlights.  Chromium is driven with the stdlib only: `--screenshot`, and
`--dump-dom` of a page that inlines the SVG and scripts the events.
"""
import collections
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

REPO = Path(__file__).resolve().parents[2]
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
                    "ox": float(rect.get("data-ox")), "ow": float(rect.get("data-ow")),
                    "info": g.get("data-info"),
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
    # Drawn from the top by default: callees below their callers, the root
    # first; children within their parent.
    assert root.get("data-orientation") == "icicle"
    assert by_name["all"]["y"] < by_name["cpp_inline"]["y"] < by_name["main"]["y"]
    # The details line, between the legend and the root, says what the mouse does.
    details = [t for t in root.iter(SVG_NS + "text") if t.get("id") == "details"][0]
    assert "click to zoom" in details.text and float(details.get("y")) < by_name["all"]["y"]
    for f in frames:
        assert f["x"] >= 10 - 1e-6 and f["x"] + f["w"] <= 1190 + 1e-3
    # --flame: flamegraph.pl's way, callees above their callers, the same frames.
    svg2, _ = make_svg(tmp_path, "cpp_inline.fp", "--flame")
    root2, frames2 = frames_of(svg2)
    by_name2 = {f["name"]: f for f in frames2}
    assert root2.get("data-orientation") == "flame"
    assert by_name2["main"]["y"] < by_name2["cpp_inline"]["y"] < by_name2["all"]["y"]
    assert [(f["name"], f["x"], f["w"]) for f in frames2] == [(f["name"], f["x"], f["w"]) for f in frames]


def test_reverse_colors_weight(tmp_path):
    svg, _ = make_svg(tmp_path, "two_events", "--reverse", "--colors", "dso",
                      "--weight", "period", "--width", "800", "--title", "T&<x>")
    root, frames = frames_of(svg)
    assert root.get("width") == "800"
    by = {f["name"]: f for f in frames}
    assert by["main"]["y"] > by["vdso_clock"]["y"]            # icicle: roots on top
    assert root.get("data-orientation") == "icicle"           # (--reverse: the older name)
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
def chromium(*args, timeout=120, want=None):
    """Run headless Chromium; retried (up to 3 runs) while `want(result)` is
    false or the run times out: on a loaded machine a run now and then ends
    before the page, or takes minutes to start."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="perfdata-chromium-") as profile:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-extensions", "--mute-audio",
               "--disable-dev-shm-usage", "--user-data-dir=" + profile] + list(args)
        for attempt in range(3):
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                if attempt == 2:
                    raise
                continue
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


# ------------------------------------------------ first screen, legend, bounds
# The tall case of issue 34: frame-pointer walks that run into garbage (long,
# deep, unique chains), made now by tests/progs/garbage_fp.c, and the same
# shape built by hand (no perf needed).  Ground truth: `perfdata collapse`'s
# folded stacks (the tests of collapse hold them to stackcollapse-perf's), or
# the stacks given.

def frame_paths(frames):
    """Each frame's path of names from the process (depth 1) down to it, and
    its weight, from the SVG's geometry: a frame's caller is the frame one
    level up whose first layout spans its middle."""
    import bisect
    by_depth = {}
    for f in frames:
        by_depth.setdefault(f["depth"], []).append(f)
    for row in by_depth.values():
        row.sort(key=lambda f: f["ox"])
    out = []
    for f in sorted(frames, key=lambda f: f["depth"]):
        if f["depth"] == 0:
            f["path"] = ()
        else:
            row = by_depth[f["depth"] - 1]
            mid = f["ox"] + f["ow"] / 2
            i = bisect.bisect_right([g["ox"] for g in row], mid) - 1
            parent = row[i]
            assert parent["ox"] <= mid <= parent["ox"] + parent["ow"], (f, parent)
            f["path"] = parent["path"] + (f["name"],)
        out.append(f)
    return {f["path"]: f for f in out}


def with_values(frames):
    for f in frames:
        name, value = re.match(r"(.*) \(([\d,]+) \w+, [\d.]+%\)$", f["info"]).groups()
        f["value"] = int(value.replace(",", ""))
    return frames


def prefix_weights(stacks):
    """{path prefix: weight} of (path, weight) stacks: what each frame drawn
    from them must weigh."""
    out = collections.Counter()
    for path, weight in stacks:
        for i in range(1, len(path) + 1):
            out[tuple(path[:i])] += weight
    return out


def folded_stacks(text):
    """(path, weight) of `perfdata collapse` output."""
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        out.append((tuple(stack.split(";")), int(count)))
    return out


def expected_cuts(stacks, max_depth):
    """{path of the cut frame: (weight, label)}: stacks with more than
    max_depth frames below their process, cut after them."""
    cuts = {}
    for path, weight in stacks:
        if len(path) - 1 > max_depth:
            key = tuple(path[:max_depth + 1])
            w, lo, hi = cuts.get(key, (0, 10 ** 9, 0))
            extra = len(path) - 1 - max_depth
            cuts[key] = (w + weight, min(lo, extra), max(hi, extra))
    out = {}
    for key, (w, lo, hi) in cuts.items():
        label = "[+%d frame%s]" % (hi, "" if hi == 1 else "s") if lo == hi \
            else "[+%d..%d frames]" % (lo, hi)
        out[key + (label,)] = (w, label)
    return out


def check_drawing_against(svg_path, stacks, max_depth=0):
    """Every frame drawn weighs what the stacks say; the cut frames stand
    for exactly the stacks deeper than max_depth.  Returns the SVG root, its
    frames by path."""
    root, frames = frames_of(svg_path)
    by_path = frame_paths(with_values(frames))
    truth = prefix_weights(stacks)
    assert by_path[()]["value"] == sum(w for _, w in stacks) == int(root.get("data-total"))
    cuts = expected_cuts(stacks, max_depth) if max_depth else {}
    for path, f in by_path.items():
        if f["kind"] == "cut":
            assert cuts[path] == (f["value"], f["name"]), (path, f)
        elif path:
            assert truth[path] == f["value"], path
            assert len(path) - 1 <= (max_depth or 10 ** 9)
    drawn_cuts = {p for p, f in by_path.items() if f["kind"] == "cut"}
    assert drawn_cuts <= set(cuts)
    return root, by_path


def legend_of(svg_path):
    """{family: (label, first colour, last colour)} of the legend, and its notes."""
    root = ET.parse(svg_path).getroot()
    stops = {}
    for grad in root.iter(SVG_NS + "linearGradient"):
        stops[grad.get("id")] = [s.get("stop-color") for s in grad.iter(SVG_NS + "stop")]
    legend = [g for g in root.iter(SVG_NS + "g") if g.get("id") == "legend"][0]
    entries, notes = {}, {}
    for el in legend:
        if el.tag == SVG_NS + "g":
            fill = el.find(SVG_NS + "rect").get("fill")
            m = re.match(r"url\(#(.*)\)$", fill)
            lo, hi = stops[m.group(1)] if m else (fill, fill)
            entries[el.get("data-family")] = (el.find(SVG_NS + "text").text, rgb(lo), rgb(hi))
        else:
            notes[el.get("data-note")] = el.text
    return entries, notes


def rgb(text):
    return tuple(int(v) for v in re.findall(r"\d+", text))


def within(colour, lo, hi, slack=1):
    return all(min(a, b) - slack <= c <= max(a, b) + slack for c, a, b in zip(colour, lo, hi))


GARBAGE_PROG = REPO / "tests" / "progs" / "garbage_fp.c"


@pytest.fixture(scope="module")
def garbage_recording(tmp_path_factory):
    """A -g recording of garbage_fp, and its folded stacks (samples)."""
    import platform
    from conftest import PERF, _CAN_RECORD, _WHY_NOT
    if platform.machine() != "x86_64":
        pytest.skip("garbage_fp aims rbp at its chain: x86-64 only")
    if not _CAN_RECORD:
        pytest.skip(_WHY_NOT)
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    tmp = tmp_path_factory.mktemp("garbage")
    exe = tmp / "garbage_fp"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(GARBAGE_PROG)], check=True, capture_output=True, timeout=120)
    data = tmp / "garbage.data"
    # every 250 us of the program's own CPU time: ~600 samples whatever the load
    subprocess.run([PERF, "record", "-q", "-e", "cpu-clock:u", "-c", "250000", "-g",
                    "-o", str(data), "--", str(exe)], check=True, capture_output=True,
                   timeout=300)
    rc, out, err = run_cli(["collapse", "--samples", str(data)])
    assert rc == 0, err
    stacks = folded_stacks(out)
    # What the case is: the walks ran into the chains, deep and unique.
    deep = sum(w for path, w in stacks if len(path) > 100)
    total = sum(w for _, w in stacks)
    assert total > 300 and deep > total / 3, (total, deep)
    assert len(stacks) > 0.9 * total
    ends = collections.Counter(path[-1] for path, w in stacks if len(path) > 100)
    assert ends["spin_on_garbage"] >= 0.99 * sum(ends.values()), ends
    return data, stacks


def draw(tmp_path, data, name, *extra):
    out = tmp_path / (name + ".svg")
    rc, _, err = run_cli(["flamegraph", str(data), "-o", str(out)] + list(extra))
    assert rc == 0, err
    return out


def svg_size(root):
    return int(root.get("width")), int(root.get("height"))


def test_garbage_chains_max_depth_bounds_the_height(tmp_path, garbage_recording):
    data, stacks = garbage_recording
    deepest = max(len(path) for path, _ in stacks)       # frames + the process
    # Default: every frame drawn (real stacks are never cut unasked) ...
    full = draw(tmp_path, data, "full")
    root, by_path = check_drawing_against(full, stacks)
    assert int(root.get("data-levels")) == deepest + 1
    tall = svg_size(root)[1]
    assert tall > 1900          # the complaint: 2,150 px (127-frame walks)
    # ... --max-depth 30: 30 frames below the process, then one frame saying
    # how many were cut; the page is bounded by it.
    cut = draw(tmp_path, data, "cut", "--max-depth", "30")
    root, by_path = check_drawing_against(cut, stacks, max_depth=30)
    assert int(root.get("data-levels")) == 30 + 3          # all, process, 30, the cut
    height = svg_size(root)[1]
    assert height <= 33 * 16 + 140 and height < tall / 3
    cuts = [f for f in by_path.values() if f["kind"] == "cut"]
    assert len(cuts) == len(expected_cuts(stacks, 30))     # none lost to min-width here
    assert all(re.fullmatch(r"\[\+\d+(\.\.\d+)? frames?\]", f["name"]) for f in cuts)
    # Their tooltips say where the cut stacks end (the hot loop): the leaf
    # of most of their samples first, with its share.
    for f in cuts:
        leaves = collections.Counter()
        for path, w in stacks:
            if path[:len(f["path"]) - 1] == f["path"][:-1] and len(path) > len(f["path"]) - 1:
                leaves[path[-1]] += w
        name, weight = sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        assert "--max-depth 30: " in f["title"]
        assert "where they end: %s (%.0f%%)" % (name, 100.0 * weight / f["value"]) in f["title"]
    _, notes = legend_of(cut)
    assert notes["max-depth"] == "%d places where stacks are cut at 30 frames" % len(cuts)


def test_garbage_chains_min_width_bounds_the_height(tmp_path, garbage_recording):
    """--min-width 1%: the unique chains are one sample each (under 1% of
    the graph), so past their first frames they are not drawn; what is drawn
    weighs what it did."""
    data, stacks = garbage_recording
    svg = draw(tmp_path, data, "narrow", "--min-width", "1%")
    root, by_path = check_drawing_against(svg, stacks)
    truth = prefix_weights(stacks)
    total = sum(w for _, w in stacks)
    plotw = float(root.get("data-plotw"))
    wide = {p for p, w in truth.items() if w * plotw / total >= plotw / 100}
    # drawn: exactly the frames at least 1% wide whose callers are drawn
    expect = {p for p in wide if all(p[:i] in wide for i in range(1, len(p)))}
    assert set(by_path) - {()} == expect
    assert int(root.get("data-levels")) == max(len(p) for p in expect) + 1
    assert svg_size(root)[1] < 400
    dropped = {p for p in truth if p not in wide and (len(p) == 1 or p[:-1] in expect)}
    _, notes = legend_of(svg)
    assert notes["min-width"] == "%s frames narrower than 1%% not drawn" % format(len(dropped), ",")


@needs_chromium
def test_garbage_chains_first_screen_shows_the_graph(tmp_path, garbage_recording):
    """The tall page (default options) in a browser window of 1200 x 800:
    the first screen holds the root, the wide frames and the legend."""
    data, stacks = garbage_recording
    svg = draw(tmp_path, data, "first")
    root, frames = frames_of(svg)
    assert svg_size(root)[1] > 1900
    png = tmp_path / "first.png"
    res = chromium("--screenshot=%s" % png, "--window-size=1200,800", svg.as_uri(),
                   want=lambda r: png.exists())
    assert png.exists(), res.stderr[-2000:]
    w, h, px = read_png(png)
    assert (w, h) == (1200, 800)
    background = (245, 245, 238)
    seen = 0
    for f in frames:
        if f["y"] + 16 > 790 or f["w"] < 30:
            continue
        fill = rgb(f["fill"])
        # The colour most of the column near the frame's right end shows: a
        # label sized with flamegraph.pl's 0.59 em a character can reach the
        # end by a pixel or two where the font's digits are wider (DejaVu
        # Sans: 0.64 em), so one pixel may be a glyph's.
        column = collections.Counter(px[int(f["y"]) + dy][int(f["x"] + f["w"]) - 4] for dy in range(1, 15))
        right = column.most_common(1)[0][0]
        assert all(abs(a - b) <= 12 for a, b in zip(right, fill)), (f["name"], right, fill)
        seen += 1
    assert seen >= 10
    by_name = {f["name"]: f for f in frames}
    assert by_name["all"]["y"] < 150 and by_name["garbage_fp"]["y"] < 150
    # The graph fills the window's width, row after row, down to its bottom:
    # frames at least at every 100 px of height below the legend.
    for y in range(150, 800, 100):
        painted = sum(1 for x in range(10, 1190) if px[y][x] != background)
        assert painted > 600, (y, painted)
    # The legend, in the first screen: each family's swatch in its colours,
    # its name written beside it.
    entries, _ = legend_of(svg)
    assert set(entries) == {f["kind"] for f in frames} == {"root", "user", "unknown"}
    legend = [g for g in ET.parse(svg).getroot().iter(SVG_NS + "g") if g.get("id") == "legend"][0]
    for g in legend.findall(SVG_NS + "g"):
        rect, text = g.find(SVG_NS + "rect"), g.find(SVG_NS + "text")
        label, lo, hi = entries[g.get("data-family")]
        x, y = float(rect.get("x")), float(rect.get("y"))
        assert y + 16 < 800
        for dx in (3, 9, 15):
            assert within(px[int(y + 6)][int(x + dx)], lo, hi, slack=12), (label, dx)
        tx = float(text.get("x"))
        dark = sum(1 for yy in range(int(y), int(y) + 14)
                   for xx in range(int(tx), int(tx + 7 * len(label))) if sum(px[yy][xx]) < 250)
        assert dark > 4 * len(label), (label, dark)


@needs_chromium
def test_flame_orientation_opens_scrolled_to_the_root(tmp_path, garbage_recording):
    """--flame, the SVG opened on its own in a window shorter than it: the
    window shows its bottom, where the root is (a check run after the SVG's
    own script, appended to a copy of it)."""
    data, _ = garbage_recording
    svg = draw(tmp_path, data, "flame", "--flame")
    root, frames = frames_of(svg)
    height = svg_size(root)[1]
    check = """<script type="text/ecmascript"><![CDATA[
window.addEventListener("load", function () { setTimeout(function () {
  var svg = document.documentElement, probe = [];
  for (var y = 4; y < window.innerHeight; y += 8) {
    var el = document.elementFromPoint(600, y);
    var g = el && el.parentNode && el.parentNode.getAttribute ? el.parentNode : null;
    probe.push(g && g.getAttribute("data-name") !== null ? g.getAttribute("data-d") : "-");
  }
  svg.setAttribute("data-check", JSON.stringify({inner: window.innerHeight,
    scrollY: window.scrollY, probe: probe}));
}, 0); });
]]></script>
</svg>"""
    page = tmp_path / "flame-check.svg"
    page.write_text(svg.read_text().replace("</svg>", check))
    res = chromium("--dump-dom", "--virtual-time-budget=2000", "--window-size=1200,800",
                   page.as_uri(), want=lambda r: "data-check=" in r.stdout)
    import html
    m = re.search(r'data-check="([^"]*)"', res.stdout)
    assert m, res.stderr[-2000:]
    got = json.loads(html.unescape(m.group(1)))
    assert 0 < got["inner"] < height
    assert got["scrollY"] == height - got["inner"]
    # From the window's bottom up: the details line, then all, the process,
    # the outermost frames.
    depths = [int(d) for d in got["probe"] if d != "-"]
    assert {0, 1, 2} <= set(depths), got["probe"]


def synthetic_garbage(seed=7):
    """(path, weight) stacks of a process "prog": ten real stacks of 50
    samples and 200 garbage walks of one sample each, 40 to 127 frames of
    decoys and [unknown] then the hot loop (what garbage_fp gives)."""
    import random
    rnd = random.Random(seed)
    stacks = [(("prog", "_start", "main", "work", "leaf%d" % i), 50) for i in range(10)]
    names = ["decoy%d" % i for i in range(32)] + ["[unknown]"]
    for _ in range(200):
        chain = tuple(rnd.choice(names) for _ in range(rnd.randint(39, 126)))
        stacks.append((("prog",) + chain + ("spin_on_garbage",), 1))
    return stacks


def synthetic_builder(stacks, kinds=None):
    from perfdata.views.flamegraph.tree import FlameGraphBuilder
    builder = FlameGraphBuilder()
    for path, weight in stacks:
        builder.add_path([(name, "root" if i == 0 else (kinds or {}).get(name, "user"),
                           None if i == 0 else "/bin/prog") for i, name in enumerate(path)],
                         weight)
    return builder


def write_svg(tmp_path, name, text):
    path = tmp_path / (name + ".svg")
    path.write_text(text)
    return path


@pytest.mark.parametrize("max_depth", [1, 5, 40, 100, 126, 127])
def test_max_depth_cuts_and_says_so(tmp_path, max_depth):
    from perfdata.views.flamegraph.svg import render_svg
    stacks = synthetic_garbage()
    svg = write_svg(tmp_path, "d", render_svg(synthetic_builder(stacks), max_depth=max_depth))
    root, by_path = check_drawing_against(svg, stacks, max_depth=max_depth)
    cuts = {p for p, f in by_path.items() if f["kind"] == "cut"}
    assert cuts == set(expected_cuts(stacks, max_depth))     # none too narrow to draw here
    deepest = max(len(p) for p, _ in stacks)
    levels = max_depth + 3 if max_depth < deepest - 1 else deepest + 1
    assert int(root.get("data-levels")) == levels
    assert (len(cuts) > 0) == (max_depth < deepest - 1)


def test_min_width_leaves_out_narrow_frames_totals_whole(tmp_path):
    from perfdata.views.flamegraph.layout import MinWidth
    from perfdata.views.flamegraph.svg import render_svg
    stacks = synthetic_garbage()
    total = sum(w for _, w in stacks)
    truth = prefix_weights(stacks)
    # default 0.1 px: one sample of 700 is 1.7 px, all drawn: 129 levels
    svg = write_svg(tmp_path, "all", render_svg(synthetic_builder(stacks)))
    root, by_path = check_drawing_against(svg, stacks)
    assert set(by_path) - {()} == set(truth)
    assert int(root.get("data-levels")) == max(len(p) for p, _ in stacks) + 1
    # 2 px: the one-sample chains go; the real stacks and the garbage's
    # shared first frames stay, and weigh what they did.
    for width, px in ((MinWidth(2.0), 2.0), (MinWidth(0.3, percent=True), 1180 * 0.003)):
        svg = write_svg(tmp_path, "narrow", render_svg(synthetic_builder(stacks), min_width=width))
        root, by_path = check_drawing_against(svg, stacks)
        keep = {p for p, w in truth.items() if w * 1180 / total >= px}
        keep = {p for p in keep if all(p[:i] in keep for i in range(1, len(p)))}
        assert set(by_path) - {()} == keep
        assert all(f["w"] >= px - 0.01 for f in by_path.values())
        assert int(root.get("data-levels")) == max(len(p) for p in keep) + 1 < 10
        assert int(root.get("data-total")) == total == by_path[()]["value"]
        assert by_path[("prog",)]["value"] == total


def test_legend_names_the_families_drawn(tmp_path):
    """Each frame's colour lies in its family's range as the legend draws it;
    the legend lists the families drawn, no other."""
    from perfdata.views.flamegraph.colors import KIND_COLORS
    svg, _ = make_svg(tmp_path, "two_events")
    root, frames = frames_of(svg)
    entries, notes = legend_of(svg)
    kinds = {f["kind"] for f in frames}
    assert set(entries) == kinds
    # (libc's local functions are unknown where this machine has no libc
    # debug file, as in a minimal Debian root: then the legend has them too)
    assert {"root", "user", "kernel"} <= kinds <= {"root", "user", "kernel", "unknown"}
    for f in frames:
        label, lo, hi = entries[f["kind"]]
        assert within(rgb(f["fill"]), lo, hi), (f, lo, hi)
    for kind, (label, lo, hi) in entries.items():
        assert (lo, hi) == KIND_COLORS[kind]
    assert entries["kernel"][0] == "kernel" and entries["user"][0] == "user code"
    assert notes == {"orientation": "callees below their callers"}


def test_legend_inlined(tmp_path):
    """cpp_inline.dwarf: the frames drawn as inlined are ones perf 6.1's
    script prints `(inlined)` (samples/expected), Mixer::step among them;
    each is drawn in the aqua family and the legend names it."""
    from perfdata.views.flamegraph.colors import KIND_COLORS
    svg, _ = make_svg(tmp_path, "cpp_inline.dwarf")
    _, frames = frames_of(svg)
    perf = (SAMPLES / "expected" / "cpp_inline.dwarf.script.txt").read_text()
    perf_inlined = set(re.findall(r"^\s+[0-9a-f]+ (.+)\+0x[0-9a-f]+ \(inlined\)$", perf, re.M))
    inlined = {f["name"] for f in frames if f["kind"] == "inlined"}
    assert "perfdemo::Mixer<unsigned long>::step" in inlined <= perf_inlined
    entries, _ = legend_of(svg)
    assert entries["inlined"] == ("inlined",) + KIND_COLORS["inlined"]
    for f in frames:
        if f["kind"] == "inlined":
            assert within(rgb(f["fill"]), *KIND_COLORS["inlined"]), f


def test_legend_stitched_unknown_cut(tmp_path):
    """Frames known only from other samples' stacks (--stitch) are tan; one
    seen by a sample itself is not; unknown grey, cut dark grey."""
    from perfdata.resolve.frames import StackFrame
    from perfdata.views.flamegraph.svg import render_svg
    from perfdata.views.flamegraph.tree import FlameGraphBuilder, frame_kind
    assert frame_kind(StackFrame(0x1000, 0x1000, "f", 0, "/bin/prog", stitched=True)) == "stitched"
    assert frame_kind(StackFrame(0x1000, 0x1000, "f", 0, "/bin/prog")) == "user"
    assert frame_kind(StackFrame(0x1000, 0x1000, None, None, "/bin/prog")) == "unknown"

    def stack(*frames):
        return [("prog", "root", None)] + [(n, k, "/bin/prog") for n, k in frames]
    samples = [stack(("main", "stitched"), ("a", "stitched"), ("leaf", "user")),
               stack(("main", "user"), ("b", "user"), ("[unknown]", "unknown")),
               stack(("main", "stitched"), ("a", "stitched"), ("c", "user"), ("d", "user"))]
    builder = FlameGraphBuilder()
    for i, s in enumerate(samples):
        builder.add_path(s, 1, order=i)
    svg = write_svg(tmp_path, "k", render_svg(builder, max_depth=3))
    _, frames = frames_of(svg)
    kind = {f["name"]: f["kind"] for f in frames}
    assert kind["main"] == "user"            # the second sample saw it itself
    assert kind["a"] == "stitched" and kind["[unknown]"] == "unknown"
    assert kind["[+1 frame]"] == "cut"       # d, below c
    entries, _ = legend_of(svg)
    assert set(entries) == {"root", "user", "stitched", "unknown", "cut"}
    assert entries["stitched"][0] == "stitched (--stitch)"
    # Workers' shares merged (-j): the same kinds whatever the split.
    for split in (1, 2):
        a, b = FlameGraphBuilder(), FlameGraphBuilder()
        for i, s in enumerate(samples):
            (a if i < split else b).add_path(s, 1, order=i)
        b.merge(a)
        again = write_svg(tmp_path, "m", render_svg(b, max_depth=3))
        assert sorted((f["name"], f["kind"]) for f in frames_of(again)[1]) == \
            sorted((f["name"], f["kind"]) for f in frames)


def test_legend_dso_colours(tmp_path):
    svg, _ = make_svg(tmp_path, "two_events", "--colors", "dso")
    root, frames = frames_of(svg)
    entries, _ = legend_of(svg)
    dsos = {f["title"].split("\n")[1] for f in frames if f["kind"] not in ("root", "unknown")}
    assert {k for k in entries if k.startswith("dso:")} == {"dso:" + d for d in dsos}
    for f in frames:
        if f["kind"] in ("root", "unknown"):
            assert f["kind"] in entries
            continue
        label, lo, hi = entries["dso:" + f["title"].split("\n")[1]]
        assert rgb(f["fill"]) == lo == hi


@pytest.mark.parametrize("args,words", [
    (["--max-depth", "x"], "--max-depth"), (["--max-depth", "-3"], "--max-depth"),
    (["--min-width", "abc"], "--min-width"), (["--min-width", "150%"], "--min-width"),
    (["--flame", "--inverted"], "not allowed with"),
])
def test_bad_bounds_refused(args, words):
    rc, out, err = run_cli(["flamegraph", str(SAMPLES / "threads.fp.data")] + args)
    assert rc == 2 and words in err and "Traceback" not in err


def test_max_depth_with_min_width_counts_the_cuts_drawn(tmp_path):
    """Cut frames narrower than --min-width are not drawn, nor counted as
    places cut."""
    from perfdata.views.flamegraph.layout import MinWidth
    from perfdata.views.flamegraph.svg import render_svg
    # idle is wide, the one stack cut below it is not
    stacks = synthetic_garbage() + [(("prog", "_start", "main", "idle"), 100),
                                    (("prog", "_start", "main", "idle", "a", "b"), 1)]
    svg = write_svg(tmp_path, "both", render_svg(synthetic_builder(stacks), max_depth=3,
                                                 min_width=MinWidth(2.0)))
    root, by_path = check_drawing_against(svg, stacks, max_depth=3)
    truth = prefix_weights(stacks)
    total = sum(w for _, w in stacks)
    cuts = expected_cuts(stacks, 3)
    wide = {p for p, (w, _) in cuts.items() if w * 1180 / total >= 2.0
            and all(truth[p[:i]] * 1180 / total >= 2.0 for i in range(1, len(p)))}
    drawn = {p for p, f in by_path.items() if f["kind"] == "cut"}
    assert drawn == wide and 0 < len(drawn) < len(cuts)
    assert ("prog", "_start", "main", "idle") in by_path
    assert ("prog", "_start", "main", "idle", "[+2 frames]") not in by_path
    _, notes = legend_of(svg)
    assert notes["max-depth"] == "%d place%s where stacks are cut at 3 frames" % (
        len(drawn), "" if len(drawn) == 1 else "s")
