"""Command lines perf 6.1 refuses are refused, and those it takes taken, on a
bundled recording (samples/threads.fp.data: cpu-clock:u, software events
only, 2 cpus, samples at 726.26-726.93 s).

Each case's verdict (refused or taken) and perf's first line about it are
in tests/expected/command_lines.txt, written from perf 6.1 with
tools/command_lines_golden.py; perfdata must give that verdict, refusing in
one line with exit status 2 (perf's own status is 129 for a usage error,
255 or 234 for a failed check, and 0 for some refusals: `--pid abc` prints
"problems parsing pid list" and nothing else).  Where perf is installed it
is run too and must still say what the golden says, and for `script`,
where both take the command line, both print the same text."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from command_lines import COMMAND_LINES
from conftest import PERF, run_cli

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
BUILDIDS = SAMPLES / "buildids"
GOLDEN = Path(__file__).resolve().parents[1] / "expected" / "command_lines.txt"
SAMPLE = "threads.fp.data"
# perf's words for a refusal it exits 0 after (its exit codes can lie)
_ZERO_EXIT_REFUSALS = ("problems parsing", "Unknown --sort key", "Invalid --sort key",
                       "Invalid cpu_list", "Invalid time string", "too large")


def case_id(command, args):
    return json.dumps([command] + args)


def golden():
    out = {}
    for line in GOLDEN.read_text().splitlines():
        key, verdict, message = line.split("\t")
        out[key] = (verdict, message)
    return out


def run_perf(command, args, home):
    """perf's verdict on a command line, its first line of complaint, its
    output."""
    extra = ["--stdio"] if command == "report" else []
    res = subprocess.run([PERF, "--buildid-dir", str(BUILDIDS), command, "-i", SAMPLE]
                         + extra + args, cwd=SAMPLES, capture_output=True, text=True,
                         errors="replace", env=dict(os.environ, HOME=str(home)), timeout=120)
    lines = [l.strip() for l in res.stderr.splitlines()
             if l.strip() and not l.endswith("Ignoring.")]
    refused = res.returncode != 0 or any(r in res.stderr for r in _ZERO_EXIT_REFUSALS)
    message = next((l for l in lines if l not in ("Error:",) and not l.startswith("Usage:")),
                   "") if refused else ""
    return ("refused" if refused else "taken"), message, res.stdout


@pytest.mark.parametrize("command,args", COMMAND_LINES,
                         ids=[" ".join([c] + a) for c, a in COMMAND_LINES])
def test_refused_as_perf_refuses(command, args, tmp_path):
    verdict, message = golden()[case_id(command, args)]
    rc, out, err = run_cli([command, str(SAMPLES / SAMPLE), "--buildid-dir", str(BUILDIDS),
                            "--debug-dir", str(BUILDIDS)] + args)
    assert "Traceback" not in err and "internal error" not in err, err
    if verdict == "refused":
        assert (rc, out) == (2, ""), (rc, err)
        errors = [l for l in err.splitlines() if "error:" in l]
        assert len(errors) == 1, err
    else:
        assert rc == 0, err
    if PERF is None:
        return
    perf_verdict, perf_message, perf_out = run_perf(command, args, tmp_path)
    assert (perf_verdict, perf_message) == (verdict, message), "the golden is stale"
    if verdict == "taken" and command == "script":
        assert out == perf_out
