"""`perfdata script -j N`: the samples dealt out to N worker processes in
blocks, printed in order: the same bytes as one process, on every bundled
recording and option set, and the same error after the same text on a
damaged file."""
import pytest

import perfdata.views.script as script_view
from conftest import SAMPLE_SYMBOL_ARGS, SAMPLES, requires_perf, run_cli

RECORDINGS = sorted(p.name for p in SAMPLES.glob("*.data") if p.is_file())
OPTION_SETS = [
    [],
    ["-F", "comm,pid,tid,time,cpu,period,event,ip,sym,symoff,dso"],
    ["--show-mmap-events", "--show-task-events", "--show-lost-events"],
    ["--json"],
    ["-G", "--ns"],
]


@pytest.fixture
def small_blocks(monkeypatch):
    # Blocks of 7 samples: every recording is cut into many blocks, each
    # worker prints several, side events fall inside and between them.
    monkeypatch.setattr(script_view, "SHARD_BLOCK", 7)


def _script(path, jobs, options):
    rc, out, err = run_cli(["script", str(path), "-j", str(jobs)] + SAMPLE_SYMBOL_ARGS
                           + options)
    return rc, out, err


@pytest.mark.parametrize("name", RECORDINGS)
def test_same_bytes_as_one_process(name, small_blocks):
    path = SAMPLES / name
    for options in OPTION_SETS:
        rc1, one, err1 = _script(path, 1, options)
        for jobs in (2, 3):
            rc, out, err = _script(path, jobs, options)
            assert (rc, out) == (rc1, one), (name, options, jobs, err)
            assert err == err1, (name, options, jobs)


@requires_perf
def test_damaged_file_same_text_then_the_same_error(small_blocks, tmp_path):
    """--strict on a record damaged late in a recording: -j 3 prints what
    -j 1 prints (the rounds released before the fault), then the same
    one-line error, exit 2."""
    from conftest import damaged_dwarf_recording
    bad = damaged_dwarf_recording(tmp_path)
    one = run_cli(["--strict", "script", str(bad), "-j", "1"])
    three = run_cli(["--strict", "script", str(bad), "-j", "3"])
    assert one[0] == three[0] == 2
    assert one[1] == three[1] and one[1].count("\n\n") > 10
    assert one[2].strip().splitlines()[-1] == three[2].strip().splitlines()[-1]
    # (the planted fault, or one perf's own file has earlier: the same for both)
    assert "offset 0x" in three[2]


def test_jobs_refused_as_a_bad_number():
    rc, out, err = run_cli(["script", str(SAMPLES / "pipe.data"), "-j", "0"])
    assert rc == 2 and out == "" and "-j" in err


@pytest.mark.parametrize("name", ["threads.dwarf.data", "threads.fp.data"])
def test_workers_text_as_bytes_to_standard_output(name):
    """A run whose standard output writes UTF-8 (a process's, not run_cli's
    StringIO) has its workers' blocks as UTF-8 bytes, written to the
    output's buffer: the same bytes as one process."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=repo, PYTHONIOENCODING="utf-8")
    outs = []
    for jobs in (1, 3):
        res = subprocess.run([sys.executable, "-m", "perfdata", "script", str(SAMPLES / name),
                              "-j", str(jobs), "--header"] + SAMPLE_SYMBOL_ARGS,
                             capture_output=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        outs.append((res.stdout, res.stderr))
    assert outs[0] == outs[1] and outs[0][0].count(b"\n\n") > 10


@pytest.mark.parametrize("name, unwind, jobs", [
    ("threads.dwarf.data", [], 1),
    ("threads.dwarf.data", ["--unwind", "dwarf"], 1),
    # (no unwinding: the ip only, the cores' workers)
    ("threads.dwarf.data", ["--unwind", "none"], 2),
    ("threads.dwarf.data", ["-j", "2"], 2),
    ("tracepoint.data", [], 2),
])
def test_default_jobs_one_process_for_dwarf(monkeypatch, name, unwind, jobs):
    """By default a run that unwinds stacks by DWARF is one process (each
    worker would learn every stack's CFI rows and frames again: 1.3x the
    CPU of one process on benchmarks/bench_real.py's python-runs); -j N
    still shares it out."""
    import perfdata
    from perfdata.cli import build_parser
    from perfdata.run import sharded
    monkeypatch.setattr(sharded, "SHARD_MIN_BYTES", 0)
    monkeypatch.setattr(sharded.os, "cpu_count", lambda: 2)
    args = build_parser("script").parse_args(["script", str(SAMPLES / name)] + unwind)
    with perfdata.open(str(SAMPLES / name)) as pf:
        assert script_view.script_jobs(args, pf) == jobs


@pytest.mark.parametrize("command", ["collapse", "report", "flamegraph"])
@pytest.mark.parametrize("extra, jobs", [([], 1), (["-j", "2"], 2)])
def test_counting_views_one_process_for_dwarf(monkeypatch, command, extra, jobs):
    """collapse, report and flamegraph, as script: one process by default on
    a DWARF recording (sqlite's report: 0.48 s of CPU warm with two workers,
    0.28 s with one, each worker indexing the same DWARF units again); -j N
    still shares it out."""
    import perfdata
    from perfdata.cli import build_parser
    from perfdata.run import sharded
    from perfdata.views.collapse import collapse_jobs
    from perfdata.views.flamegraph.command import flamegraph_jobs
    from perfdata.views.report.command import report_jobs
    monkeypatch.setattr(sharded, "SHARD_MIN_BYTES", 0)
    monkeypatch.setattr(sharded.os, "cpu_count", lambda: 2)
    name = str(SAMPLES / "threads.dwarf.data")
    args = build_parser(command).parse_args([command, name] + extra)
    pick = {"collapse": lambda pf: collapse_jobs(args, pf, "cpu-clock"),
            "report": lambda pf: report_jobs(args, pf), "flamegraph": lambda pf: flamegraph_jobs(args, pf)}
    with perfdata.open(name) as pf:
        assert pick[command](pf) == jobs
    # (and a frame-pointer recording keeps the cores' workers where the
    # compiled core does not count: --children's report)
    if command == "report":
        fp = str(SAMPLES / "threads.fp.data")
        args = build_parser(command).parse_args([command, fp, "--children"])
        with perfdata.open(fp) as pf:
            assert report_jobs(args, pf) == 2


def test_a_tracepoints_dwarf_stacks_count_as_unwound():
    """The default -j asks what SampleSymbolizer does before it unwinds
    (resolve.symbolized.unwinds_by_dwarf): a tracepoint recorded with
    --call-graph=dwarf has its stacks unwound too, so its run is one
    process by default, as a sampling event's."""
    from types import SimpleNamespace

    from perfdata.format import AttrType, SampleType as ST
    from perfdata.resolve.symbolized import unwinds_by_dwarf
    dwarf = ST.REGS_USER | ST.STACK_USER
    for kind, sample_type, unwind, want in (
            (AttrType.TRACEPOINT, dwarf, "auto", True), (AttrType.HARDWARE, dwarf, "dwarf", True),
            (AttrType.TRACEPOINT, dwarf, "fp", False), (AttrType.TRACEPOINT, ST.STACK_USER, "auto",
                                                        False)):
        pf = SimpleNamespace(attrs=[SimpleNamespace(sample_type=sample_type,
                                                    attr={"type": kind})])
        got = unwinds_by_dwarf(pf, unwind)  # type: ignore[arg-type]
        assert got is want, (kind, sample_type, unwind)
