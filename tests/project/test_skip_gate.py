"""The skip gate (tests/skip_gate.py): with PERFDATA_SKIP_GATE=1 a pytest run
fails when a test skips for a reason not listed, and passes when every reason
is listed, under pytest-xdist as without it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import skip_gate

TESTS_DIR = Path(__file__).resolve().parents[1]

# Two modules, so that with -n 2 the skips come from both workers: a skip in a
# test, a skip from a skipif marker, a whole module skipped at import, an
# xfail (not a skip), and a test that passes.
MODULE_A = '''
import pytest

def test_passes():
    assert 1 + 1 == 2

def test_skips_in_body():
    pytest.skip("no frobnicator here")

@pytest.mark.xfail(reason="not a skip")
def test_xfails():
    assert False
'''
MODULE_B = '''
import pytest

@pytest.mark.skipif(True, reason="the widget is x86_64's")
def test_skips_by_marker():
    pass
'''
MODULE_C = '''
import pytest
pytest.skip("whole module: no gizmo", allow_module_level=True)

def test_never_runs():
    pass
'''


def run_gated(tmp_path: Path, listed: str, *args: str, gate: str = "1") -> subprocess.CompletedProcess:
    (tmp_path / "test_a.py").write_text(MODULE_A)
    (tmp_path / "test_b.py").write_text(MODULE_B)
    (tmp_path / "test_c.py").write_text(MODULE_C)
    (tmp_path / "allowed.txt").write_text(listed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PERFDATA_SKIP_GATE=gate,
               PERFDATA_ALLOWED_SKIPS=str(tmp_path / "allowed.txt"),
               PYTHONPATH=os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "skip_gate",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *args, str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


ALL_LISTED = """
# frobnicators are not packaged
no frobnicator here
# x86_64-only
the widget is .*'s
# gizmos are data
whole module: no gizmo
"""


# each test that runs the gate: once serial, once under pytest-xdist
serial_and_xdist = pytest.mark.parametrize("xdist", [[], ["-n", "2", "--dist", "loadfile"]],
                                           ids=["serial", "xdist"])


def run_failing_without(tmp_path: Path, entry: str, xdist: list[str]) -> str:
    """The gated run's output with one entry (its comment and reason) taken
    out of ALL_LISTED; the run must fail."""
    res = run_gated(tmp_path, ALL_LISTED.replace(entry, ""), *xdist)
    assert res.returncode == 1, res.stdout + res.stderr
    return res.stdout


@serial_and_xdist
def test_unlisted_skip_fails_the_run(tmp_path, xdist):
    out = run_failing_without(tmp_path, "# frobnicators are not packaged\nno frobnicator here\n",
                              xdist)
    assert "skip gate: 1 of 3 skips have a reason not listed" in out, out
    assert "UNLISTED SKIP test_a.py::test_skips_in_body: no frobnicator here" in out
    assert "1 passed, 3 skipped, 1 xfailed" in out


@serial_and_xdist
def test_module_level_skip_is_gated(tmp_path, xdist):
    out = run_failing_without(tmp_path, "# gizmos are data\nwhole module: no gizmo\n", xdist)
    assert "UNLISTED SKIP test_c.py: whole module: no gizmo" in out, out


@serial_and_xdist
def test_listed_skips_pass(tmp_path, xdist):
    res = run_gated(tmp_path, ALL_LISTED, *xdist)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "skip gate: 3 skipped, every reason listed in allowed.txt" in res.stdout, res.stdout
    assert "listed skip test_b.py::test_skips_by_marker: the widget is x86_64's" in res.stdout


def test_gate_off_without_the_variable(tmp_path):
    res = run_gated(tmp_path, "", gate="")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "skip gate" not in res.stdout


def test_a_failing_run_keeps_its_status(tmp_path):
    (tmp_path / "test_d.py").write_text("def test_fails():\n    assert False\n")
    res = run_gated(tmp_path, "")
    assert res.returncode == 1
    assert "UNLISTED SKIP" in res.stdout


def test_a_comment_covers_the_patterns_below_it_up_to_a_blank_line(tmp_path):
    path = tmp_path / "allowed.txt"
    path.write_text("# why one\n# and more\nfirst\nsecond\n# why two\nthird\n")
    assert [(a.pattern, a.why) for a in skip_gate.read_allowed(path)] == [
        ("first", "why one and more"), ("second", "why one and more"), ("third", "why two")]
    path.write_text("# why\nfirst reason\n\nsecond reason\n")
    with pytest.raises(ValueError, match=r"allowed.txt:4: pattern 'second reason' has no comment"):
        skip_gate.read_allowed(path)


def test_the_listed_file_reads_and_each_pattern_says_why():
    allowed = skip_gate.read_allowed(skip_gate.DEFAULT_LIST)
    assert allowed
    for entry in allowed:
        assert len(entry.why) >= 20, "line %d: say why no package can fix it" % entry.line
