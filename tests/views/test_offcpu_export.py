"""`perfdata export --offcpu`: off-CPU time for speedscope and pprof,
weighted by time.

A program with known waits (tests/progs/offcpu_wakeups.c) is recorded now
with its switches, wakeups and cpu-clock samples.  The speedscope file is
checked against speedscope's file format (test_views_export's field by field
check) and the pprof profile decoded with the protobuf library; both must
hold exactly the waits `perfdata offcpu --format collapse --tid-root
--with-state` counts, stack by stack and thread by thread (and with --wall,
what `perfdata offcpu --wall` counts).
"""
import gzip
import json
import re
import shutil
import subprocess
from collections import Counter

import pytest

from conftest import PERF, TESTS_DIR, requires_perf, run_cli
from test_views_export import check_file_format
from perfdata.views.offcpu_output import UNSAMPLED

PROG = TESTS_DIR / "progs" / "offcpu_wakeups.c"


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    tmp = tmp_path_factory.mktemp("offcpu_export")
    exe = tmp / "offcpu_wakeups"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe),
                    str(PROG)], check=True)
    data = tmp / "wakeups.data"
    res = subprocess.run([PERF, "record", "-q", "-o", str(data), "-e", "cpu-clock", "-e",
                          "sched:sched_switch", "-e", "sched:sched_wakeup", "--switch-events",
                          "--call-graph", "dwarf,16384", "--", str(exe)],
                         capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        pytest.skip("perf could not record the scheduler tracepoints here: %s"
                    % res.stderr.strip().splitlines()[-1:])
    return data


def offcpu_collapse(data, *args):
    """`perfdata offcpu DATA --format collapse --tid-root ARGS` as {stack: ns}."""
    rc, out, err = run_cli(["offcpu", str(data), "--format", "collapse", "--tid-root", *args])
    assert rc == 0, err
    got = {}
    for line in out.splitlines():
        stack, ns = line.rsplit(" ", 1)
        got[stack] = int(ns)
    return got


def _export(data, tmp_path, fmt, *args):
    out = tmp_path / ("off." + fmt)
    rc, _, err = run_cli(["export", str(data), "--offcpu", "--format", fmt, "-o", str(out),
                          *args])
    assert rc == 0, err
    return out


def _speedscope_stacks(doc):
    frames = [f["name"] for f in doc["shared"]["frames"]]
    got = Counter()
    for p in doc["profiles"]:
        comm, pid, tid = re.fullmatch(r"(.*) \((-?\d+)/(-?\d+)\)", p["name"]).groups()
        assert p["unit"] == "nanoseconds" and p["endValue"] == sum(p["weights"])
        for stack, weight in zip(p["samples"], p["weights"]):
            got[";".join(["%s-%s/%s" % (comm, pid, tid)] + [frames[i] for i in stack])] += \
                weight
    return dict(got)


@requires_perf
@pytest.mark.parametrize("args", [[], ["--min-wait", "0"], ["--wall"]],
                         ids=["default", "min-wait-0", "wall"])
def test_speedscope_weights_are_the_waits(recording, tmp_path, args):
    doc = json.loads(_export(recording, tmp_path, "speedscope", *args).read_text())
    check_file_format(doc)
    want = offcpu_collapse(recording, "--with-state", *args)
    assert _speedscope_stacks(doc) == want and len(want) > 3
    if "--wall" in args:        # (the time on the cpu is there too, without a state)
        assert any(not k.endswith("]") for k in want)


def _pprof_stacks(path):
    from perfdata.views.pprof import profile_classes
    prof = profile_classes()["Profile"]()
    prof.ParseFromString(gzip.decompress(path.read_bytes()))
    strings = list(prof.string_table)
    assert strings[0] == ""
    types = [(strings[t.type], strings[t.unit]) for t in prof.sample_type]
    functions = {f.id: strings[f.name] for f in prof.function}
    locations = {loc.id: loc for loc in prof.location}
    mappings = {m.id for m in prof.mapping}
    got = Counter()
    for sm in prof.sample:
        labels = {strings[lb.key]: lb for lb in sm.label}
        root = "%s-%d/%d" % (strings[labels["comm"].str], labels["pid"].num,
                             labels["tid"].num)
        names = []
        for lid in sm.location_id:
            loc = locations[lid]
            assert loc.mapping_id == 0 or loc.mapping_id in mappings
            names.append(functions[loc.line[0].function_id])
        state = ["[%s]" % strings[labels["state"].str]] if "state" in labels else []
        count, ns = sm.value
        # (the run time no clock sample caught: a stack of no sample)
        assert count >= 1 or names == [UNSAMPLED[0][0]], (names, count)
        got[";".join([root] + names[::-1] + state)] += ns     # leaf first in pprof
    return types, strings[prof.default_sample_type], dict(got)


@requires_perf
@pytest.mark.parametrize("args", [[], ["--wall"]], ids=["waits", "wall"])
def test_pprof_values_are_the_waits(recording, tmp_path, args):
    pytest.importorskip("google.protobuf")
    types, default, got = _pprof_stacks(_export(recording, tmp_path, "pprof", *args))
    kind = "wall" if args else "off-cpu"
    assert types == [("waits", "count"), (kind, "nanoseconds")] and default == kind
    want = offcpu_collapse(recording, "--with-state", *args)
    assert got == want and len(want) > 3


@requires_perf
def test_export_filters_as_offcpu(recording, tmp_path):
    """--tid and --time select as perfdata offcpu's do."""
    want = offcpu_collapse(recording, "--with-state", "--comm", "piper")
    doc = json.loads(_export(recording, tmp_path, "speedscope", "--comm", "piper").read_text())
    assert _speedscope_stacks(doc) == want and want
    assert all(k.startswith("piper-") for k in want)


def test_export_offcpu_refusals(tmp_path):
    for args, message in ((["--wall"], "--wall goes with --offcpu"),
                          (["--offcpu", "--format", "parquet"], "not parquet")):
        rc, _, err = run_cli(["export", str(tmp_path / "x.data"), *args])
        assert rc == 2 and message in err, err


@requires_perf
def test_library_selects_as_the_command(recording):
    """perfdata.profile(..., comms=, time=).offcpu_folded() is the command's
    --comm, --time selection of the waits."""
    import perfdata
    got = perfdata.profile(recording, comms=["piper", "condwaiter"]).offcpu_folded(
        tid_root=True, with_state=True)
    assert got == offcpu_collapse(recording, "--with-state", "--comm", "piper,condwaiter") and got
    half = perfdata.profile(recording, time="50%/2").offcpu_folded(tid_root=True)
    assert half == offcpu_collapse(recording, "--time", "50%/2") and half
    assert sum(half.values()) < sum(offcpu_collapse(recording).values())
