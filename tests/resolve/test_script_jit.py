"""JIT code named from /tmp/perf-PID.map, as perf does: a program that runs
code from anonymous executable memory and describes it in a perf map."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import requires_perf, run_cli

PROG = Path(__file__).resolve().parents[1] / "progs" / "jit.c"
PERF = shutil.which("perf")
GCC = shutil.which("gcc")


def _record_jit(tmp_path):
    """tests/progs/jit.c built and recorded (it writes /tmp/perf-PID.map):
    the recording and perf script's text of it."""
    exe = tmp_path / "jit"
    subprocess.run([GCC, "-O2", "-o", str(exe), str(PROG)], check=True)
    data = tmp_path / "jit.data"
    rec = subprocess.run([PERF, "record", "-q", "-e", "cpu-clock:u", "-o", str(data), "--",
                          str(exe), "0.2"], capture_output=True, text=True)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf record is not permitted here: %s" % rec.stderr.strip()[:200])
    return data, subprocess.run([PERF, "script", "-i", str(data)], capture_output=True,
                                text=True).stdout


@pytest.mark.skipif(PERF is None or GCC is None, reason="needs perf and gcc")
def test_jit_frames_named_from_perf_map(tmp_path):
    data, theirs = _record_jit(tmp_path)
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



@pytest.mark.skipif(PERF is None or GCC is None, reason="needs perf and gcc")
def test_flamegraph_draws_jit_frames_in_the_jit_family(tmp_path):
    """The frames perf script names from /tmp/perf-PID.map are drawn in the
    flame graph's JIT colours (green), as many samples as perf counts, and
    the legend names the family."""
    import re
    import xml.etree.ElementTree as ET
    from perfdata.views.flamegraph.colors import KIND_COLORS, KIND_LABELS
    data, theirs = _record_jit(tmp_path)
    svg = tmp_path / "jit.svg"
    try:
        rc, _, err = run_cli(["flamegraph", str(data), "-o", str(svg)])
    finally:
        _remove_perf_map(theirs)
    assert rc == 0, err
    perf_jit = sum(1 for line in theirs.splitlines()
                   if re.search(r" jitted_hot_loop\+0x[0-9a-f]+ \(/tmp/perf-\d+\.map\)$", line))
    assert perf_jit > 10
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.parse(svg).getroot()
    drawn = [g for g in root.iter(ns + "g") if g.get("data-name") == "jitted_hot_loop"]
    assert drawn and all(g.get("data-kind") == "jit" for g in drawn)
    samples = sum(int(re.search(r"\(([\d,]+) samples", g.get("data-info")).group(1)
                      .replace(",", "")) for g in drawn)
    assert samples == perf_jit
    lo, hi = KIND_COLORS["jit"]
    for g in drawn:
        fill = tuple(int(v) for v in re.findall(r"\d+", g.find(ns + "rect").get("fill")))
        assert all(min(a, b) - 1 <= c <= max(a, b) + 1 for c, a, b in zip(fill, lo, hi)), fill
    legend = [g for g in root.iter(ns + "g") if g.get("id") == "legend"][0]
    labels = {g.get("data-family"): g.find(ns + "text").text for g in legend.findall(ns + "g")}
    assert labels["jit"] == KIND_LABELS["jit"] == "JIT"

def _rows(text):
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.skipif(PERF is None or GCC is None, reason="needs perf and gcc")
def test_perf_map_found_by_path_map_symfs_and_archive(tmp_path):
    """A perf map the JIT wrote (/tmp/perf-PID.map) is found as the
    binaries are when it is no longer there (a recording read on another
    machine, or a container's /tmp): under --path-map's NEW, under the
    --symfs root, and in the tree `perfdata archive` packs (which holds it)
    unpacked as a --debug-dir.  Each run names the JIT frames as perf script
    names them with the map in place; without any of them they are not
    named.  (perf 6.1 reads the map at its recorded path only.)"""
    data, theirs = _record_jit(tmp_path)
    maps = sorted({line.rsplit("(", 1)[1].rstrip(")") for line in theirs.splitlines()
                   if "(/tmp/perf-" in line})
    assert len(maps) == 1, maps
    recorded = maps[0]
    moved = tmp_path / "moved" / os.path.basename(recorded)
    moved.parent.mkdir()
    try:
        rc, here, err = run_cli(["script", str(data)])
        assert rc == 0 and here == theirs, err
        archive = tmp_path / "jit.tar.zst"
        rc, listing, err = run_cli(["archive", str(data), "-o", str(archive)])
        assert rc == 0, err
        assert "perfmap %s" % recorded.lstrip("/") in listing, listing
    finally:
        shutil.move(recorded, moved)
    named = [line for line in here.splitlines() if "jitted_hot_loop+0x" in line]
    assert len(named) > 10
    rc, bare, err = run_cli(["script", str(data)])
    assert rc == 0 and "jitted_hot_loop" not in bare, err
    rc, mapped, err = run_cli(["script", str(data), "--path-map", "%s=%s" % (recorded, moved)])
    assert rc == 0 and mapped == here, err
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    shutil.copy(moved, root / recorded.lstrip("/"))
    rc, rooted, err = run_cli(["script", str(data), "--symfs", str(root)])
    assert rc == 0, err
    assert [line for line in rooted.splitlines() if "jitted_hot_loop+0x" in line] == named
    unpacked = tmp_path / "unpacked"
    rc, _, err = run_cli(["archive", "-x", str(archive), "-C", str(unpacked)])
    assert rc == 0, err
    rc, there, err = run_cli(["script", str(data), "--debug-dir", str(unpacked)])
    assert rc == 0 and there == here, err


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
    jitdump as dso where perf prints the jitted-PID-N.so's (but for a chain
    perf discards whole: _discarded_chain_times)."""
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
    discarded = _discarded_chain_times(data)
    ours, theirs = _without_discarded_chains(ours, theirs, discarded)
    assert len(ours) == len(theirs), _first_difference(ours, theirs)
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


def _discarded_chain_times(data):
    """(tid, perf script's time) of each sample whose -g chain holds a word at
    or above PERF_CONTEXT_MAX that is no context marker: the kernel's
    frame-pointer walk read garbage (node's own C++ code, V8's compiler
    threads among it, keeps no frame pointers: whether a walk meets such a
    word depends on where the sample lands, hence once in some runs).  perf 6.1 discards such a chain
    whole and prints no frame (machine.c add_callchain_ip, "invalid
    callchain context"); perfdata prints the frames before the word: a
    deliberate difference (docs/differences.md)."""
    from perfdata.format import CallchainContext, PerfFile
    contexts = {int(c) for c in CallchainContext if c != CallchainContext.MAX}
    out = set()
    with PerfFile(str(data)) as pf:
        for rec in pf.samples():
            sample = pf.parse_record(rec)
            ips = (sample.get("callchain") or {}).get("ips") or []
            if any(ip >= CallchainContext.MAX and ip not in contexts for ip in ips):
                out.add((sample["tid"], "%d.%06d:" % divmod(sample["time"] // 1000, 10 ** 6)))
    return out


def _without_discarded_chains(ours, theirs, discarded):
    """Both texts (lists of lines) with the samples `discarded` names left
    out where perf printed no frame for them (only there: any other
    difference of those samples still fails), for a line-by-line compare."""
    if not discarded:
        return ours, theirs
    def blocks(lines):
        out, cur = [], []
        for line in lines:
            cur.append(line)
            if not line:
                out.append(cur)
                cur = []
        return out + ([cur] if cur else [])
    def key(header):      # "comm tid time:", comm may hold spaces
        m = re.search(r" (\d+) +(\d+\.\d{6}):", header)
        return (int(m.group(1)), m.group(2) + ":") if m else None
    a, b = blocks(ours), blocks(theirs)
    if len(a) != len(b):
        return ours, theirs
    keep_a, keep_b = [], []
    for x, y in zip(a, b):
        if ([line for line in y if line] == y[:1] and x[0] == y[0]
                and key(y[0]) in discarded):
            continue
        keep_a += x
        keep_b += y
    return keep_a, keep_b


def _first_difference(ours, theirs):
    """The first sample whose line count differs between the two texts
    (lists of lines), both sides, for a failure message: which frame one
    side has and the other lacks is what tells a real difference from a
    recording's race."""
    def samples(lines):
        out, cur = [], []
        for line in lines:
            if line:
                cur.append(line)
            elif cur:
                out.append(cur)
                cur = []
        return out + ([cur] if cur else [])
    a, b = samples(ours), samples(theirs)
    for i, (x, y) in enumerate(zip(a, b)):
        if len(x) != len(y):
            return "sample %d of %d/%d:\nperfdata:\n%s\nperf (injected):\n%s" % (
                i, len(a), len(b), "\n".join(x), "\n".join(y))
    return "%d samples against perf's %d" % (len(a), len(b))


def _dump_path(line):
    path = line.rsplit("(", 1)[1].rstrip(")")
    assert os.path.basename(path).startswith("jit-") and path.endswith(".dump"), line
    return path


def _python313():
    """A CPython 3.13 or later that runs (a pyenv shim on PATH may not): on
    PATH, else a pyenv build."""
    import glob
    candidates = [shutil.which(name) for name in ("python3.13", "python3.14")]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[3-9]*/bin/python3.1?")))
    for exe in filter(None, candidates):
        try:
            ok = subprocess.run([exe, "-c", "import sys; sys.exit(sys.version_info < (3, 13))"],
                                capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return exe
    return None


PYTHON313 = _python313()
_PY_WORK = """
import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def churn():
    a = sorted(str(i) for i in range(2000))
    return fib(14) + len(a)
t0 = time.time()
while time.time() - t0 < 0.4:
    churn()
"""
_BOGUS = "\tffffffffffffffff [unknown] ([unknown])"


def _jit_neutral(line):
    """A frame line with the JIT code's address and file left out: perfdata
    prints the process address and the jitdump, perf on the injected file
    the jitted-PID-N.so's offset and path."""
    import re
    if re.search(r"\((\S*/)?(jit-\d+\.dump|jitted-\d+-\d+\.so)\)$", line):
        return "\tJIT " + line.split(None, 1)[1].rsplit(" (", 1)[0]
    return line


def _plt_neutral(mine, perfs):
    """perfdata's line with a PLT stub named as perf names it ([unknown] for
    .plt.sec; _init+off, or @plt+off for libc's IRELATIVE slots, as
    script_compare tells them: a deliberate difference, see docs/differences.md)."""
    import re
    from script_compare import _is_plt_misname
    if mine != perfs and "@plt+0x" in mine:
        m, p = re.match(r"(\s+\w+) \S+ (\(.*)", mine), re.match(r"(\s+\w+) (\S+) (\(.*)", perfs)
        if m and p and m.group(1) == p.group(1) and m.group(2) == p.group(3) and (
                p.group(2) == "[unknown]" or _is_plt_misname(p.group(2))):
            return perfs
    return mine


def _samples(text):
    return [[_jit_neutral(line) for line in block.split("\n") if line]
            for block in text.split("\n\n") if block.strip()]


@requires_perf
@pytest.mark.skipif(PYTHON313 is None, reason="needs python3.13")
def test_python_perf_jit_dwarf_stacks_without_perf_inject(tmp_path):
    """python3.13 -X perf_jit writes /tmp/jit-PID.dump with a
    CODE_UNWINDING_INFO record before each trampoline's load; perf inject
    --jit makes them the .eh_frame of the jitted .so's, through which perf
    unwinds --call-graph=dwarf stacks.  perfdata on the recording perf inject
    never saw unwinds through the trampolines with the dump's own unwinding
    info: every sample through JIT code has the frames perf script of the
    injected file prints (without perf's bogus last frame of a stack cut by
    the snapshot, which stands after, or where perfdata prints, the last
    address it found; see docs/differences.md)."""
    probe = subprocess.run([PYTHON313, "-X", "perf_jit", "-c", "import os, sys; "
                            "print(os.getpid()); "
                            "sys.exit(0 if sys.is_stack_trampoline_active() else 3)"],
                           capture_output=True, text=True)
    if probe.stdout.strip().isdigit():      # the probe wrote a jitdump too
        _remove_jit_files("/tmp/jit-%s.dump" % probe.stdout.strip())
    if probe.returncode != 0:
        pytest.skip("-X perf_jit is not supported here: %s" % probe.stderr.strip()[-200:])
    data, injected = tmp_path / "py.data", tmp_path / "py.jit.data"
    rec = subprocess.run([PERF, "record", "-q", "-k", "1", "--call-graph=dwarf", "-o", str(data),
                          "--", PYTHON313, "-X", "perf_jit", "-c", _PY_WORK],
                         capture_output=True, text=True, cwd=tmp_path)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf record failed: %s" % rec.stderr.strip()[-200:])
    dump = None
    try:
        rc, ours, err = run_cli(["script", str(data)])
        assert rc == 0, err
        for line in ours.splitlines():
            if line.endswith(".dump)") and "/jit-" in line:
                dump = line.rsplit("(", 1)[1].rstrip(")")
                break
        assert dump is not None, "no frame named from the jitdump"
        inj = subprocess.run([PERF, "inject", "--jit", "-i", str(data), "-o", str(injected)],
                             capture_output=True, text=True, cwd=tmp_path)
        if inj.returncode != 0:
            pytest.skip("perf inject --jit failed: %s" % inj.stderr.strip()[-200:])
        theirs = subprocess.run([PERF, "script", "-i", str(injected)], capture_output=True,
                                text=True).stdout
    finally:
        _remove_jit_files(dump)
    assert "jitted-" in theirs, "perf inject made no jitted .so"
    mine, perf_samples = _samples(ours), _samples(theirs)
    assert len(mine) == len(perf_samples)
    through = 0
    for m, p in zip(mine, perf_samples):
        if not any(line.startswith("\tJIT ") for line in m + p):
            continue      # no JIT code: what other tests compare
        m = [_plt_neutral(a, b) for a, b in zip(m, p)] + m[len(p):]
        if p[-1] == _BOGUS:
            # cut by the snapshot: perf's -1 frame after, or in place of,
            # the last address perfdata found (the lines of its inline chain)
            extra = m[len(p) - 1:]
            assert m[:len(p) - 1] == p[:-1], (m[-6:], p[-6:])
            assert len({line.split()[0] for line in extra}) <= 1, (extra, p[-3:])
        else:
            assert m == p, (m, p)
        # a trampoline with callers after it: unwound through the JIT code
        through += any(line.startswith("\tJIT py::") for line in m[1:-1])
    assert through > 20
    assert sum("\tJIT py::" in "\n".join(m) for m in mine) == \
        sum("\tJIT py::" in "\n".join(p) for p in perf_samples)


def _remove_jit_files(dump):
    """The jitdump the JIT wrote and the .so files perf inject made next to it."""
    import glob
    if dump is None:
        return
    pid = os.path.basename(dump)[4:-5]
    for path in [dump] + glob.glob(os.path.join(os.path.dirname(dump), "jitted-%s-*.so" % pid)):
        if os.path.exists(path):
            os.unlink(path)


def _jit_lines(text):
    return [line for line in text.splitlines() if line.endswith(".dump)")]


@requires_perf
@pytest.mark.skipif(NODE is None, reason="needs node")
def test_jitdump_found_by_path_map_symfs_and_archive(tmp_path):
    """The jitdump is found as the binaries are, when it is not at its
    recorded path (a recording brought from another machine or container):
    under --path-map's NEW, under the --symfs root, and in the tree `perfdata
    archive` packs (which now holds it) unpacked as a --debug-dir.  Each run
    names the JIT frames as the run with the dump in place (whose names are
    perf inject --jit's: test_jitdump_read_without_perf_inject); without
    any of them they are not named."""
    work = tmp_path / "rec"
    work.mkdir()
    data = tmp_path / "node.data"
    rec = subprocess.run([PERF, "record", "-q", "-k", "1", "-g", "-o", str(data), "--", NODE,
                          "--perf-prof", "-e", _NODE_WORK], capture_output=True, text=True,
                         cwd=work)
    dumps = list(work.glob("jit-*.dump"))
    if rec.returncode != 0 or not data.exists() or not dumps:
        pytest.skip("perf record of node --perf-prof failed: %s" % rec.stderr.strip()[-200:])
    rc, here, err = run_cli(["script", str(data)])
    assert rc == 0, err
    named = _jit_lines(here)
    assert len(named) > 50 and all(str(dumps[0]) in line for line in named[:5])
    archive = tmp_path / "node.tar.zst"
    rc, listing, err = run_cli(["archive", str(data), "-o", str(archive)])
    assert rc == 0, err
    rel = os.path.relpath(dumps[0], "/")
    assert "jitdump %s" % rel in listing, listing

    # the dump leaves its recorded path
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(str(dumps[0]), moved / dumps[0].name)
    rc, bare, err = run_cli(["script", str(data)])
    assert rc == 0 and _jit_lines(bare) == [], err
    rc, mapped, err = run_cli(["script", str(data), "--path-map", "%s=%s" % (work, moved)])
    assert rc == 0 and mapped == here, err
    root = tmp_path / "root"
    (root / os.path.dirname(rel)).mkdir(parents=True)
    shutil.copy(moved / dumps[0].name, root / rel)
    rc, rooted, err = run_cli(["script", str(data), "--symfs", str(root)])
    assert rc == 0 and _jit_lines(rooted) == named, err
    unpacked = tmp_path / "unpacked"
    rc, _, err = run_cli(["archive", "-x", str(archive), "-C", str(unpacked)])
    assert rc == 0, err
    rc, there, err = run_cli(["script", str(data), "--debug-dir", str(unpacked)])
    assert rc == 0 and there == here, err
