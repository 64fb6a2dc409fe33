"""perfdata buildids against `perf buildid-list -i F` and the samples' truth."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import REPO, run_cli
from script_compare import parse_samples

SAMPLES = REPO / "samples"
BUILDIDS = ("--debug-dir", str(SAMPLES / "buildids"))
PERF = shutil.which("perf")
FILES = ["plt_loop.fp.data", "vdso_clock.fp.data", "stripped.fp.data", "two_events.data",
         "threads.dwarf.data", "buildid_mmap.data"]


def _ours(path, *opts):
    rc, out, err = run_cli(["buildids", str(path), "--json", *opts])
    assert rc == 0, err
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.skipif(PERF is None, reason="perf is not installed")
@pytest.mark.parametrize("name", FILES)
def test_every_build_id_perf_lists_is_listed(name):
    path = SAMPLES / name
    if not path.exists():
        pytest.skip("%s missing" % path)
    res = subprocess.run([PERF, "buildid-list", "-i", str(path)], capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    perf = {tuple(line.split(None, 1)[::-1]) for line in res.stdout.splitlines()
            if len(line.split(None, 1)) == 2}
    if not perf:
        pytest.skip("perf buildid-list printed nothing for %s" % name)
    ours = {(r["path"], r["build_id"]) for r in _ours(path)}
    assert perf <= ours, perf - ours
    rc, out, _ = run_cli(["buildids", str(path), "--ids-only"])
    assert {tuple(line.split(None, 1)[::-1]) for line in out.splitlines()} >= perf


def test_vdso_samples_match_perf_script():
    golden = SAMPLES / "expected" / "vdso_clock.fp.script.txt"
    if not golden.exists():
        pytest.skip("golden missing")
    want = sum(1 for _, fr in parse_samples(golden.read_text())
               if any(d == "[vdso]" for _, _, d in fr))
    rows = {r["path"]: r for r in _ours(SAMPLES / "vdso_clock.fp.data", *BUILDIDS)}
    assert rows["[vdso]"]["samples"] == want > 0


def test_stripped_binary_says_what_is_missing_and_then_where_symbols_come_from():
    path = SAMPLES / "stripped.fp.data"
    row = next(r for r in _ours(path, *BUILDIDS) if r["path"].endswith("/stripped"))
    assert any("debug info" in m for m in row["missing"])
    assert ".symtab" not in row["binary"]["sections"]
    row = next(r for r in _ours(path, *BUILDIDS, "--debug-dir", str(SAMPLES / "debug"))
               if r["path"].endswith("/stripped"))
    assert row["missing"] == [] and "debuginfo" in row["symbols"]
    assert os.path.samefile(row["debug"]["path"], SAMPLES / "debug" / ".build-id" / "db" /
                            "742980d08e82ba510d7ecb0d37cd493d473082.debug") or \
        os.path.samefile(row["debug"]["path"], SAMPLES / "debug" / "stripped.debug")
    assert ".symtab" in row["debug"]["sections"]
