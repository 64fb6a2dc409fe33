"""`script -s FILE [ARGS]`: which words are the script's, as perf 6.1
decides.  perf parses its own options after FILE up to the first word that
is none, or up to `--`, and hands the script the rest: a script printing
its sys.argv is run by both tools on each command line, with the same
arguments printed, or both refusing the line (perf exits 129, perfdata 2,
as every bad command line)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import PERF, requires_perf

pytestmark = requires_perf

COMMAND_LINES = [
    "a b",
    "-- -f json",                   # (flamegraph.py's way: `--` ends perf's options)
    "-f json",                      # (-f is perf's --force: the script gets `json`)
    "-i perf.data",
    "--input=perf.data z",
    "-iperf.data y",
    "--inp perf.data x",            # (a long option's unambiguous prefix)
    "-i perf.data -- -x",
    "-F ip -- v",
    "a -i perf.data",               # (after the first script word, all the script's)
    "a -- b",
    "--",
    "--bogus",
    "",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("scripting_args")
    res = subprocess.run([PERF, "record", "-q", "-o", "perf.data", "-e", "cpu-clock", "--",
                          "true"], cwd=path, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        pytest.fail("perf record failed: %s" % res.stderr)
    (path / "argv.py").write_text("import sys\nprint(sys.argv[1:])\n")
    return path


@pytest.mark.parametrize("words", COMMAND_LINES)
def test_script_arguments_as_perf(words, folder):
    line = ["script", "-s", "argv.py"] + words.split()
    perf = subprocess.run([PERF] + line, cwd=folder, capture_output=True, text=True)
    ours = subprocess.run([sys.executable, "-m", "perfdata"] + line, cwd=folder,
                          capture_output=True, text=True)
    if perf.returncode != 0:
        assert ours.returncode == 2, (perf.stderr, ours.stdout, ours.stderr)
        assert ours.stderr.splitlines()[-1].startswith("perfdata script: error: "), ours.stderr
        return
    assert ours.returncode == 0, ours.stderr
    assert perf.stdout.startswith("[")
    assert ours.stdout == perf.stdout


@pytest.mark.parametrize("line", ["--script=argv.py a -i perf.data", "--script argv.py -- -x",
                                  "-i perf.data --script=argv.py -- -f json"])
def test_long_option_as_perf(line, folder):
    """--script FILE and --script=FILE take the words after them as -s does."""
    words = ["script"] + line.split()
    perf = subprocess.run([PERF] + words, cwd=folder, capture_output=True, text=True)
    ours = subprocess.run([sys.executable, "-m", "perfdata"] + words, cwd=folder,
                          capture_output=True, text=True)
    assert perf.returncode == ours.returncode == 0, (perf.stderr, ours.stderr)
    assert perf.stdout.startswith("[")
    assert ours.stdout == perf.stdout


def test_script_file_missing(folder):
    """-s without FILE: refused, as perf refuses it."""
    perf = subprocess.run([PERF, "script", "-s"], cwd=folder, capture_output=True, text=True)
    ours = subprocess.run([sys.executable, "-m", "perfdata", "script", "-s"], cwd=folder,
                          capture_output=True, text=True)
    assert perf.returncode != 0
    assert ours.returncode == 2
    assert ours.stderr.splitlines()[-1] == \
        "perfdata script: error: argument -s/--script: expected one argument"
