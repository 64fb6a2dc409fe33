"""`perfdata diff`'s command lines: those perf 6.1's `perf diff` refuses are
refused (one line, exit 2), those it takes are taken; bad input files give
one line and exit 2.  The verdicts below are perf 6.1's on the bundled
samples/threads.fp.data and threads.dwarf.data; where perf is installed it
is asked again and must still give them."""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import PERF, run_cli

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
FILES = [str(SAMPLES / "threads.fp.data"), str(SAMPLES / "threads.dwarf.data")]

# (arguments after the two files, perf 6.1's verdict)
CASES = [
    (["-c", "foo"], "refused"), (["-c", "DELTA"], "refused"), (["-c", "delta:"], "refused"),
    (["-c", "ratio:1"], "refused"), (["-c", "wdiff"], "refused"), (["-c", "wdiff:1"], "refused"),
    (["-c", "wdiff:0,1"], "refused"), (["-c", "wdiff:1,"], "refused"),
    (["-c", "wdiff:,2"], "refused"), (["-c", "wdiff:a,2"], "refused"),
    (["-c", "cycles"], "refused"),      # (no branch stacks)
    (["-c", "wdiff:2,3x"], "taken"), (["-c", "wdiff:1,2"], "taken"), (["-c", "delta"], "taken"),
    (["-c", "delta-abs"], "taken"), (["-c", "ratio"], "taken"),
    (["-o", "2"], "refused"), (["-o", "-1"], "refused"), (["-o", "x"], "refused"),
    (["-o", "1x"], "refused"), (["-o", "0"], "taken"), (["-o", "+1"], "taken"),
    (["-s", "foo"], "refused"), (["-s", "dso,foo"], "refused"), (["-s"], "refused"),
    (["-s", ""], "taken"), (["-s", "Sym"], "taken"), (["-s", ","], "taken"),
    (["-s", "comm,dso,sym"], "taken"),
    (["--percentage", "rel"], "refused"), (["--percentage"], "refused"),
    (["--percentage", "relative"], "taken"), (["--percentage", "absolute"], "taken"),
    (["-b"], "taken"), (["-p"], "taken"), (["-F"], "taken"), (["-q"], "taken"),
    (["-x"], "refused"), (["-C"], "refused"), (["-d"], "refused"), (["-S"], "refused"),
    (["-C", "threads"], "taken"), (["-d", "threads"], "taken"), (["-S", "main"], "taken"),
    (["--pid", "abc"], "refused"), (["--time", "abc"], "refused"), (["--cpu", "99"], "refused"),
    ([FILES[0], "-o", "2"], "taken"), ([FILES[0], "-o", "3"], "refused"),
]


def case_id(case):
    return " ".join(case[0]).replace(str(SAMPLES) + "/", "") or "(none)"


@pytest.mark.parametrize("args,verdict", CASES, ids=[case_id(c) for c in CASES])
def test_command_line_verdict(args, verdict, tmp_path):
    rc, out, err = run_cli(["diff", "--buildid-dir", str(SAMPLES / "buildids"),
                            "--no-symbol-cache"] + FILES + args)
    if verdict == "refused":
        assert rc == 2 and out == "", (rc, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    else:
        assert rc == 0, err
    if PERF is not None:
        res = subprocess.run([PERF, "--buildid-dir", str(SAMPLES / "buildids"), "diff"]
                             + FILES + args, capture_output=True, text=True, cwd=SAMPLES,
                             env=dict(os.environ, HOME=str(tmp_path)), timeout=120)
        assert ("refused" if res.returncode else "taken") == verdict, res.stderr


def test_default_files_are_perf_data_old_and_perf_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run_cli(["diff"])
    assert rc == 2 and "perf.data.old" in err and len(err.splitlines()) == 1
    rc, _, err = run_cli(["diff", FILES[0]])
    assert rc == 2 and "perf.data.old" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("content", [b"", b"garbage\n", b"PERFILE2" + b"\xff" * 200])
def test_bad_input_is_one_line_and_exit_2(tmp_path, content):
    bad = tmp_path / "bad.data"
    bad.write_bytes(content)
    # (the good file's binaries by build-id: the checkout's own path is not
    # where they were recorded, and a missing one is a warning line)
    found = ["--debug-dir", str(SAMPLES / "buildids")]
    for files in ([str(bad), FILES[0]], [FILES[0], str(bad)]):
        rc, out, err = run_cli(["diff", "--no-symbol-cache"] + found + files)
        assert rc == 2 and out == "", err
        assert len(err.splitlines()) == 1 and str(bad) in err and "Traceback" not in err
    rc, _, err = run_cli(["flamegraph", "--diff", str(bad), FILES[0], "-o",
                          str(tmp_path / "out.svg")] + found)
    assert rc == 2 and len(err.splitlines()) == 1 and str(bad) in err


def test_folded_takes_two_files():
    rc, _, err = run_cli(["diff", "--folded"] + FILES + [FILES[0]])
    assert rc == 2 and len(err.splitlines()) == 1
