"""`perfdata script` against `perf script` (6.1) on the shared corpus of other
people's recordings.

Their binaries are not here, so most user frames are `[unknown]` on both
sides: what is compared is every sample's header line (comm, tid, cpu, time,
period, event) and the address and dso of every user frame.  Kernel frames are
left out: these files come from other kernels, and perf 6.1 names their
addresses with this machine's /proc/kallsyms (wrong names, e.g.
`__entry_text_end+0xa198c`); perfdata refuses to (see docs/differences.md).
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import corpus_dir, run_cli
from script_compare import parse_samples

CORPUS = corpus_dir()
PERF = shutil.which("perf")

# Files whose perf output depends on things perfdata deliberately does not do.
SKIP = {
    "quipper__perf.data.intel_pt-4.14": "perf decodes the Intel PT trace into samples",
    "simpleperf__etm_perf_etm.data": "perf decodes the CoreSight trace",
}


def _readable():
    if not (CORPUS / "perfdata").is_dir():
        return []
    names = []
    for path in sorted((CORPUS / "perfdata").iterdir()):
        if path.name.startswith("quipper-fuzz"):
            continue
        oracle = CORPUS / "oracle" / (path.name + ".stats.txt")
        text = oracle.read_text(errors="replace") if oracle.exists() else ""
        if "Aggregated" in text and "Error" not in text and "failed to process" not in text:
            names.append(path.name)
    return names


def _kernel_frame(frame):
    addr, _, dso = frame
    return dso.startswith("[kernel") or dso.endswith(".ko") or (addr or 0) >= 1 << 63


def _strip_kernel_symbol(header):
    """A stackless sample's header ends in `addr sym (dso)`: for a kernel
    address keep the address only (perf's kernel map and names come from
    this machine's kernel)."""
    m = re.search(r"([0-9a-f]+) \S+ \((.*)\)$", header.rstrip())
    if m and (int(m.group(1), 16) >= 1 << 63 or m.group(2).startswith("[kernel")
              or m.group(2).endswith(".ko")):
        return header[:m.end(1)]
    return header.rstrip()


@pytest.mark.skipif(PERF is None, reason="perf is not installed")
@pytest.mark.skipif(not _readable(), reason="the shared corpus is not here")
@pytest.mark.parametrize("name", _readable())
def test_script_matches_perf(name, tmp_path):
    if name in SKIP:
        pytest.skip(SKIP[name])
    path = CORPUS / "perfdata" / name
    env = dict(os.environ, HOME=str(tmp_path))       # no build-id cache of ours
    theirs = subprocess.run([PERF, "script", "-i", str(path)], capture_output=True,
                            text=True, env=env, timeout=120).stdout
    rc, ours, err = run_cli(["script", str(path), "--buildid-dir", str(tmp_path)])
    assert rc == 0, err
    ours = parse_samples(ours)
    perfs = parse_samples(theirs)
    assert len(ours) == len(perfs)
    frames = equal = 0
    for (h1, f1), (h2, f2) in zip(ours, perfs):
        assert _strip_kernel_symbol(h1) == _strip_kernel_symbol(h2)
        user1 = [f for f in f1 if not _kernel_frame(f)]
        user2 = [f for f in f2 if not _kernel_frame(f)]
        # As many user frames as perf, except one deliberate kind: a DWARF
        # sample in a binary that is not here, where perf prints no frame
        # and perfdata the sample's own ip (docs/differences.md).
        assert len(user1) == len(user2) or (not user2 and len(user1) == 1), (h1, user1, user2)
        for a, b in zip(user1, user2):
            frames += 1
            equal += a == b
    assert equal >= 0.995 * frames - 3, (equal, frames)
