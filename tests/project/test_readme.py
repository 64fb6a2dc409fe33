"""The README: a front page (short, short lines, its links and picture there),
and its set-up commands run as written.  Its console and python examples are
run, their output compared, by tests/project/test_docs.py with the docs pages'."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


FRONT_PAGE_LINES = 150      # "a front page under ~150 lines" (issue 34)
PROSE_WIDTH = 100           # no prose line over ~100 characters


def prose_lines():
    """(number, line) of the README outside code fences and tables."""
    inside = False
    for number, line in enumerate(README.splitlines(), 1):
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside and not line.startswith("|"):
            yield number, line


def test_front_page_is_short():
    assert len(README.splitlines()) <= FRONT_PAGE_LINES
    long = [(n, len(l)) for n, l in prose_lines() if len(l) > PROSE_WIDTH]
    assert not long, "prose lines over %d characters: %s" % (PROSE_WIDTH, long)


def test_front_page_sections():
    """What a newcomer wants on the first screen, in this order: what it is,
    a picture, the set-up, the commands, the library, where the rest lives."""
    headings = [l for l in README.splitlines() if l.startswith("## ")]
    assert headings == ["## Set up", "## Commands", "## The library", "## Where the rest lives"]
    first = README[:README.index("## Set up")]
    assert "build-id" in first and "[unknown]" in first and "diagnose" in first
    assert "docs/images/flamegraph.png" in first


def test_links_resolve():
    """Every relative link and image of the README names a file of the
    repository; every docs page is linked from it, and benchmarks/RESULTS.md
    and samples/README.md are named."""
    targets = re.findall(r"\]\(([^)\s]+)\)", README)
    local = [t.split("#")[0] for t in targets if "://" not in t]
    assert local
    missing = [t for t in local if not (ROOT / t).is_file()]
    assert not missing, missing
    pages = {"docs/" + p.name for p in (ROOT / "docs").glob("*.md")} - {"docs/index.md"}
    assert pages <= set(local), sorted(pages - set(local))
    assert "benchmarks/RESULTS.md" in README and "samples/README.md" in README


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def svg_size(path):
    import xml.etree.ElementTree as ET
    root = ET.parse(path).getroot()
    return int(float(root.get("width"))), int(float(root.get("height")))


def test_picture_is_the_svgs_screenshot():
    """The committed picture is a screenshot of the committed SVG (its size),
    and that SVG is perfdata's flame graph of the recording
    tools/readme-picture.sh names."""
    images = ROOT / "docs" / "images"
    assert png_size(images / "flamegraph.png") == svg_size(images / "flamegraph.svg")
    svg = (images / "flamegraph.svg").read_text()
    tool = (ROOT / "tools" / "readme-picture.sh").read_text()
    recording = re.search(r"^recording=(\S+)$", tool, re.M).group(1)
    assert (ROOT / recording).is_file()
    assert Path(recording).name in svg and "data-total" in svg


def test_picture_can_be_made_again(tmp_path):
    """tools/readme-picture.sh DIR draws the flame graph and takes its
    screenshot with headless chromium: a PNG of the SVG's size, not blank."""
    import shutil
    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")):
        pytest.skip("chromium is not installed")
    env = dict(os.environ, PATH="%s:%s" % (Path(sys.executable).parent, os.environ["PATH"]),
               PYTHONPATH=str(ROOT), HOME=str(tmp_path))
    result = subprocess.run(["bash", str(ROOT / "tools" / "readme-picture.sh"), str(tmp_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    png, svg = tmp_path / "flamegraph.png", tmp_path / "flamegraph.svg"
    assert png_size(png) == svg_size(svg)
    import zlib
    data = png.read_bytes()
    # The image's pixels (IDAT chunks, inflated) hold more than one colour.
    idat, at = b"", 8
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        if data[at + 4:at + 8] == b"IDAT":
            idat += data[at + 8:at + 8 + length]
        at += 12 + length
    assert len(set(zlib.decompress(idat))) > 8


def readme_command(marker):
    """The set-up command of the ```sh block right after `<!-- marker -->`
    (the contract .ci/run and tools/ci-elsewhere.sh read too)."""
    lines = README.splitlines()
    at = lines.index("<!-- %s -->" % marker)
    assert lines[at + 1] == "```sh", "the %s marker is not followed by a sh block" % marker
    block = lines[at + 2:lines.index("```", at + 2)]
    assert block, "the %s block is empty" % marker
    return "\n".join(block)


def test_main_job_command_runs():
    """The perfdata part of the set-up command (after the venv and pip steps,
    before `| head`), run against this checkout the way the installed
    `perfdata` script runs it: the entry point pyproject.toml names."""
    setup = readme_command("setup-command")
    steps = [step.strip() for step in setup.split("&&")]
    assert steps[0].startswith("python3 -m venv ") and "pip install ." in steps
    command = next(step for step in steps if step.startswith("perfdata ")).split("|")[0].split()
    entry = re.search(r'^\[project\.scripts\]\n(?:[^\[].*\n)*?perfdata\s*=\s*"([\w.]+):(\w+)"',
                      (ROOT / "pyproject.toml").read_text(), re.M)
    assert entry, "pyproject.toml names no perfdata script"
    module, function = entry.groups()
    code = ("import importlib, sys; sys.argv = ['perfdata'] + sys.argv[1:]; "
            "sys.exit(getattr(importlib.import_module(%r), %r)())" % (module, function))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code] + command[1:], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "strlen@plt" in result.stdout


def test_ci_runs_the_readme_test_command():
    """.ci/run reads the test command from the README's marker (what it would
    run is the block, character for character) and runs it as written."""
    command = readme_command("test-command")
    assert command.startswith("python3 -m venv ") and "python3 -m pytest" in command
    printed = subprocess.run(["bash", str(ROOT / ".ci" / "run"), "--print-test-command"],
                             capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == command + "\n"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\n" + command + " || status=$?\n" in ci      # run as written
    assert "export PERFDATA_SKIP_GATE=${PERFDATA_SKIP_GATE:-1}\n" in ci   # the skip gate on
