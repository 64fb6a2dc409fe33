"""JIT code named from /tmp/perf-PID.map, as perf does: a program that runs
code from anonymous executable memory and describes it in a perf map."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import requires_perf, run_cli

PROG = Path(__file__).resolve().parent / "progs" / "jit.c"
PERF = shutil.which("perf")
GCC = shutil.which("gcc")


@pytest.mark.skipif(PERF is None or GCC is None, reason="needs perf and gcc")
def test_jit_frames_named_from_perf_map(tmp_path):
    exe = tmp_path / "jit"
    subprocess.run([GCC, "-O2", "-o", str(exe), str(PROG)], check=True)
    data = tmp_path / "jit.data"
    rec = subprocess.run([PERF, "record", "-q", "-e", "cpu-clock:u", "-o", str(data), "--",
                          str(exe), "0.2"], capture_output=True, text=True)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf record is not permitted here: %s" % rec.stderr.strip()[:200])
    theirs = subprocess.run([PERF, "script", "-i", str(data)], capture_output=True,
                            text=True).stdout
    # perf report names the map's dso "[JIT] tid PID" (dso__set_basename)
    their_rows = _rows(subprocess.run([PERF, "report", "-i", str(data), "--stdio",
                                       "--no-children", "-g", "none"],
                                      capture_output=True, text=True).stdout)
    try:
        rc, ours, err = run_cli(["script", str(data)])
        assert rc == 0, err
        rc, report, err = run_cli(["report", str(data)])
        assert rc == 0, err
    finally:
        for line in theirs.splitlines():
            if "/tmp/perf-" in line:
                path = line.rsplit("(", 1)[1].rstrip(")")
                if os.path.exists(path):
                    os.unlink(path)
                break
    assert "jitted_hot_loop+0x" in ours
    assert ours.count("jitted_hot_loop") == theirs.count("jitted_hot_loop") > 10
    assert ours == theirs
    assert any("[JIT] tid " in row and "jitted_hot_loop" in row for row in their_rows)
    assert _rows(report) == their_rows


def _rows(text):
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.skipif(PERF is None or GCC is None, reason="needs perf and gcc")
def test_jit_frames_on_dwarf_stacks(tmp_path):
    """--call-graph=dwarf through the perf-map JIT code: the frame is named
    from the map with no search for DWARF in "//anon" (which warned "no
    candidate file exists"), and the leaf, which pushes no frame, is not
    followed by a frame-pointer guess into no mapping (main keeps no frame
    pointer): the same text as perf's."""
    exe = tmp_path / "jit"
    subprocess.run([GCC, "-O2", "-o", str(exe), str(PROG)], check=True)
    data = tmp_path / "jit.dwarf.data"
    rec = subprocess.run([PERF, "record", "-q", "-e", "cpu-clock:u", "--call-graph=dwarf",
                          "-o", str(data), "--", str(exe), "0.2"],
                         capture_output=True, text=True)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf record is not permitted here: %s" % rec.stderr.strip()[:200])
    theirs = subprocess.run([PERF, "script", "-i", str(data)], capture_output=True,
                            text=True).stdout
    try:
        rc, ours, err = run_cli(["script", str(data)])
    finally:
        _remove_perf_map(theirs)
    assert rc == 0, err
    assert "//anon" not in err, err
    assert theirs.count("jitted_hot_loop+0x") > 10
    assert ours == theirs


def _remove_perf_map(perf_text):
    for line in perf_text.splitlines():
        if "/tmp/perf-" in line:
            path = line.rsplit("(", 1)[1].rstrip(")")
            if os.path.exists(path):
                os.unlink(path)
            return


NODE = shutil.which("node")
_NODE_WORK = """
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function churn() {
  const a = [];
  for (let i = 0; i < 5000; i++) a.push({k: Math.sin(i), s: "x" + i});
  const b = JSON.parse(JSON.stringify(a));
  b.sort((x, y) => x.k - y.k);
  return b.length + fib(18);
}
const t0 = Date.now();
while (Date.now() - t0 < 800) churn();
"""


@requires_perf
@pytest.mark.skipif(NODE is None, reason="needs node")
def test_jitdump_read_without_perf_inject(tmp_path):
    """node --perf-prof writes a jitdump (jit-PID.dump in its working
    directory) and no perf map.  perf script of the recording prints its JIT
    frames `[unknown]`; perfdata reads the jitdump the process mapped and
    names each frame as `perf inject --jit` and perf script of the injected
    file name it (the code at the address at the sample's time): the same
    function and offset on every line, at the process address with the
    jitdump as dso where perf prints the jitted-PID-N.so's."""
    data, injected = tmp_path / "node.data", tmp_path / "node.jit.data"
    rec = subprocess.run([PERF, "record", "-q", "-k", "1", "-g", "-o", str(data), "--", NODE,
                          "--perf-prof", "-e", _NODE_WORK], capture_output=True, text=True,
                         cwd=tmp_path)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf record failed: %s" % rec.stderr.strip()[-200:])
    inj = subprocess.run([PERF, "inject", "--jit", "-i", str(data), "-o", str(injected)],
                         capture_output=True, text=True, cwd=tmp_path)
    if inj.returncode != 0 or not list(tmp_path.glob("jitted-*.so")):
        pytest.skip("perf inject --jit failed: %s" % inj.stderr.strip()[-200:])
    theirs = subprocess.run([PERF, "script", "-i", str(injected)], capture_output=True,
                            text=True).stdout.split("\n")
    rc, ours, err = run_cli(["script", str(data)])
    assert rc == 0, err
    assert "not-elf" not in err, err
    ours = ours.split("\n")
    assert len(ours) == len(theirs)
    jit = 0
    for mine, perf_line in zip(ours, theirs):
        if "jitted-" not in perf_line:
            continue
        where = perf_line.split(None, 1)[1].rsplit(" (", 1)[0]
        if where.startswith(("Builtin:", "BytecodeHandler:")) and "jit-" not in mine:
            continue      # V8's builtins in node's own text: named from its symbols
        jit += 1
        assert mine.split(None, 1)[1] == "%s (%s)" % (where, _dump_path(mine)), (
            mine, perf_line)
    assert jit > 100
    rc, diag, err = run_cli(["diagnose", str(data)])
    assert rc == 0 and "resolved-jitdump" in diag and "jit-no-perfmap" not in diag, diag


def _dump_path(line):
    path = line.rsplit("(", 1)[1].rstrip(")")
    assert os.path.basename(path).startswith("jit-") and path.endswith(".dump"), line
    return path
