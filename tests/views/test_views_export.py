"""`perfdata export --format speedscope`: checked structurally against
speedscope's published file format (src/lib/file-format-spec.ts, the source
of https://www.speedscope.app/file-format-schema.json), and against perf 6.1's
goldens: one sampled profile per thread, the same number of samples per
thread, the same weights (periods), and the same stacks as
stackcollapse-perf.pl's folded file.
"""
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import requires_sample_libc_debug, run_cli

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
GOLDEN = SAMPLES / "expected"
FOLDED = REPO / "tests" / "expected" / "collapse"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
_HEADER = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+\[\d+\]\s+[\d.]+:\s+(\d+)\s+(\S+):\s*$")


def export(tmp_path, name, *extra):
    out = tmp_path / (name + ".json")
    rc, _, err = run_cli(["export", str(SAMPLES / (name + ".data")), "--format", "speedscope",
                          "--debug-dir", str(SAMPLES / "buildids"), "-o", str(out)] + list(extra))
    assert rc == 0, err
    return json.loads(out.read_text())


def check_file_format(doc):
    """The speedscope file format, field by field."""
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert set(doc) <= {"$schema", "shared", "profiles", "name", "activeProfileIndex",
                        "exporter"}
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list)
    for f in frames:
        assert isinstance(f["name"], str) and f["name"]
        assert set(f) <= {"name", "file", "line", "col"}
        assert isinstance(f.get("file", ""), str)
        for k in ("line", "col"):
            assert isinstance(f.get(k, 0), (int, float))
    assert isinstance(doc["profiles"], list)
    if "activeProfileIndex" in doc:
        assert 0 <= doc["activeProfileIndex"] < max(1, len(doc["profiles"]))
    for p in doc["profiles"]:
        assert p["type"] == "sampled"
        assert set(p) == {"type", "name", "unit", "startValue", "endValue", "samples",
                          "weights"}
        assert isinstance(p["name"], str)
        assert p["unit"] in UNITS
        assert p["endValue"] >= p["startValue"]
        assert len(p["samples"]) == len(p["weights"])
        for stack in p["samples"]:
            assert all(isinstance(i, int) and 0 <= i < len(frames) for i in stack)
        assert all(isinstance(w, (int, float)) and w >= 0 for w in p["weights"])


def golden_threads(name):
    """{(event, tid): [periods]} from perf 6.1's `-F comm,pid,tid,...,period,event` golden."""
    out = {}
    for line in (GOLDEN / (name + ".script-F.txt")).read_text().splitlines():
        m = _HEADER.match(line)
        if m:
            out.setdefault((m.group(5), int(m.group(3))), []).append(int(m.group(4)))
    return out


@pytest.mark.parametrize("name", ["threads.fp", "two_events", "cpp_inline.dwarf"])
def test_profiles_per_thread_match_perf(tmp_path, name):
    doc = export(tmp_path, name)
    check_file_format(doc)
    truth = golden_threads(name)
    assert len(doc["profiles"]) == len(truth)
    events = {ev for ev, _ in truth}
    got = {}
    for p in doc["profiles"]:
        m = re.match(r"^(.*) \((\d+)/(\d+)\)(?: (\S+))?$", p["name"])
        assert m, p["name"]
        ev = m.group(4) or next(iter(events))
        got[(ev, int(m.group(3)))] = p
    assert set(got) == set(truth)
    for key, periods in truth.items():
        p = got[key]
        assert len(p["samples"]) == len(periods)
        assert sorted(p["weights"]) == sorted(periods)
        assert p["endValue"] - p["startValue"] == sum(periods)
        assert p["unit"] == "nanoseconds"        # cpu-clock/task-clock periods are ns


@requires_sample_libc_debug
def test_stacks_equal_stackcollapse(tmp_path):
    doc = export(tmp_path, "threads.fp")
    frames = doc["shared"]["frames"]
    folded = Counter()
    for p in doc["profiles"]:
        comm = p["name"].split(" (")[0]
        for stack, w in zip(p["samples"], p["weights"]):
            folded[";".join([comm] + [frames[i]["name"] for i in stack])] += w
    expected = {}
    for line in (FOLDED / "threads.fp.folded").read_text().splitlines():
        k, _, v = line.rpartition(" ")
        expected[k] = int(v)
    assert dict(folded) == expected
    # Outermost call first: every stack starts at start_thread (samples/README.md).
    assert all(frames[s[0]]["name"] == "start_thread"
               for p in doc["profiles"] for s in p["samples"])
    assert {f.get("file") for f in frames} == {"/usr/lib/x86_64-linux-gnu/libc.so.6",
                                               "/work/main/samples/bin/threads"}


def test_weight_samples_and_empty(tmp_path):
    doc = export(tmp_path, "threads.fp", "--weight", "samples")
    check_file_format(doc)
    assert sum(len(p["samples"]) for p in doc["profiles"]) == 669   # samples/README.md
    assert all(w == 1 for p in doc["profiles"] for w in p["weights"])
    assert all(p["unit"] == "none" for p in doc["profiles"])
    out = tmp_path / "e.json"
    rc, _, err = run_cli(["export", str(SAMPLES / "threads.fp.data"), "--comm", "nobody",
                          "-o", str(out)])
    assert rc == 0 and "no samples" in err
    check_file_format(json.loads(out.read_text()))


# ------------------------------------------------------------------- pprof
@requires_sample_libc_debug
def test_pprof_profile_matches_stackcollapse(tmp_path):
    """The profile, read back with the protobuf library, holds the same stacks
    and periods as stackcollapse-perf.pl's folded output of perf's golden."""
    import gzip
    pytest.importorskip("google.protobuf")
    from perfdata.views.pprof import profile_classes
    out = tmp_path / "p.pb.gz"
    rc, _, err = run_cli(["export", str(SAMPLES / "threads.fp.data"), "--format", "pprof",
                          "--debug-dir", str(SAMPLES / "buildids"), "-o", str(out)])
    assert rc == 0, err
    prof = profile_classes()["Profile"]()
    prof.ParseFromString(gzip.decompress(out.read_bytes()))
    strings = list(prof.string_table)
    assert strings[0] == ""
    types = [(strings[t.type], strings[t.unit]) for t in prof.sample_type]
    assert types == [("samples", "count"), ("cpu", "nanoseconds")]
    functions = {f.id: f for f in prof.function}
    locations = {loc.id: loc for loc in prof.location}
    mappings = {m.id: m for m in prof.mapping}
    assert all(i > 0 for i in list(functions) + list(locations) + list(mappings))
    folded = Counter()
    counts = 0
    tids = set()
    for sm in prof.sample:
        labels = {strings[lb.key]: lb for lb in sm.label}
        comm = strings[labels["comm"].str]
        tids.add(labels["tid"].num)
        names = []
        for lid in sm.location_id:
            loc = locations[lid]
            assert loc.mapping_id in mappings
            names.append(strings[functions[loc.line[0].function_id].name])
        count, period = sm.value
        counts += count
        folded[";".join([comm] + names[::-1])] += period      # leaf first in pprof
    assert counts == 669 and tids == {19301, 19302}           # samples/README.md; perf's golden
    expected = {}
    for line in (FOLDED / "threads.fp.folded").read_text().splitlines():
        k, _, v = line.rpartition(" ")
        expected[k] = int(v)
    assert dict(folded) == expected
    files = {strings[m.filename] for m in mappings.values()}
    assert files == {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/work/main/samples/bin/threads"}
