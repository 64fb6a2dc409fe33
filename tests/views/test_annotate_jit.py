"""`perfdata annotate` of JIT code from the jitdump the JIT wrote (node
--perf-prof), on a recording `perf inject --jit` never saw: each
instruction's share of the 5 hottest JIT functions equals `perf annotate
--stdio`'s of the injected recording (perf annotates the ELF file perf
inject made of each code load; perfdata the load's bytes in the jitdump:
the code at the address at the sample's time), instruction by instruction
from the function's start; and the compiled leaf counter counts them as the
pure path does."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from perfdata.core import CORE_ENV
from symbolize.symbols.jitdump import JitDump

from conftest import PERF, requires_perf, run_cli
from test_annotate import _INSTRUCTION, _SECTION
from test_script_jit import _NODE_WORK

NODE = shutil.which("node")
pytestmark = [requires_perf, pytest.mark.skipif(NODE is None, reason="needs node")]
pytest.importorskip("capstone")


@pytest.fixture(scope="module")
def node_recording(tmp_path_factory):
    """(node's recording, the recording perf inject --jit made of it)."""
    d = tmp_path_factory.mktemp("annotate-jit")
    data, injected = d / "node.data", d / "node.jit.data"
    rec = subprocess.run([PERF, "record", "-q", "-k", "1", "-e", "cpu-clock:u", "-F", "4000",
                          "-o", str(data), "--", NODE, "--perf-prof", "-e", _NODE_WORK],
                         capture_output=True, text=True, cwd=d, timeout=300)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf record failed: %s" % rec.stderr.strip()[-200:])
    inj = subprocess.run([PERF, "inject", "--jit", "-i", str(data), "-o", str(injected)],
                         capture_output=True, text=True, cwd=d, timeout=300)
    if inj.returncode != 0 or not list(d.glob("jitted-*.so")):
        pytest.skip("perf inject --jit failed: %s" % inj.stderr.strip()[-200:])
    return data, injected


def _perf_jit_functions(injected):
    """perf's 5 hottest JavaScript functions of the injected recording: [(name,
    samples, the jitted-PID-N.so's N (the load's code_index), {offset from the
    function's start: 'percent'})]."""
    report = subprocess.run([PERF, "report", "-i", str(injected), "--stdio", "-q", "--sort",
                             "dso,sym", "--percent-limit", "0"], capture_output=True,
                            text=True, check=True).stdout
    dsos = []
    for line in report.splitlines():
        # (JavaScript's code; not V8's builtins, which are in node's own
        # text too, where perfdata names them from node's symbols:
        # test_script_jit.test_jitdump_read_without_perf_inject; V8 names
        # them JS:, V8 before 11 (Debian 12's node 18) LazyCompile: or Function:)
        m = re.match(r"^\s+[\d.]+%\s+(jitted-\d+-\d+\.so)\s+\[\.\] (?:JS|LazyCompile|Function):",
                     line)
        if m and m.group(1) not in dsos:
            dsos.append(m.group(1))
    res = subprocess.run([PERF, "annotate", "-i", str(injected), "--stdio", "--dsos",
                          ",".join(dsos[:5])], capture_output=True, text=True,
                         errors="replace", timeout=300)
    assert res.returncode == 0, res.stderr[-1000:]
    out, samples, rows = [], 0, None
    for line in res.stdout.splitlines():
        m = _SECTION.match(line)
        if m:
            samples, rows = int(m.group(3)), None
            code_index = int(re.search(r"-(\d+)\.so$", m.group(1)).group(1))
            continue
        m = re.match(r"^\s+:\s+\d+\s+([0-9a-f]+) <(.+)>:$", line)
        if m and rows is None:
            start, rows = int(m.group(1), 16), {}
            out.append((m.group(2), samples, code_index, rows))
            continue
        m = _INSTRUCTION.match(line)
        if m and rows is not None:
            rows[int(m.group(2), 16) - start] = m.group(1)
    return out


def test_jit_instruction_percents_equal_perf_on_the_injected_file(node_recording):
    data, injected = node_recording
    theirs = _perf_jit_functions(injected)
    assert len(theirs) >= 2 and sum(samples for _, samples, _, _ in theirs) > 50, theirs
    rc, out, err = run_cli(["annotate", str(data), "--json"] + sorted({n for n, _, _, _ in theirs}))
    assert rc == 0, err
    mine = json.loads(out)
    # Each of perf's functions is one code load (perf inject's file N is the
    # load's code_index; a CODE_MOVE keeps it): V8 loads a function again
    # after a deoptimization (every recording has two `churn`s), so the name
    # and the sample count alone can pick the other load's annotation.
    starts = {}
    for code in JitDump.from_file(str(next(data.parent.glob("jit-*.dump")))).codes:
        starts.setdefault(code.code_index, set()).add(code.start)
    for name, samples, code_index, rows in theirs:
        found = [a for a in mine if a["function"] == name and a["samples"] == samples
                 and a["start"] in starts.get(code_index, ())]
        assert found, (name, samples, [(a["function"], a["samples"]) for a in mine])
        a = found[0]
        assert a["dso"].endswith(".dump") and a["problem"] is None, a["dso"]
        got = {i["address"] - a["start"]: "%.2f" % i["percent"] for i in a["instructions"]}
        assert got == rows, name


def test_jit_counts_equal_pure(node_recording, monkeypatch):
    data, _ = node_recording
    args = ["annotate", str(data), "--json", "--percent-limit", "0.2"]
    monkeypatch.setenv(CORE_ENV, "pure")
    pure = run_cli(args)
    monkeypatch.delenv(CORE_ENV)
    assert run_cli(args) == pure
    assert pure[0] == 0 and any(a["dso"].endswith(".dump") for a in json.loads(pure[1]))
