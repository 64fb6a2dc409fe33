"""`perfdata collapse|flamegraph|report -j N`: workers each symbolize a
share of the samples (blocks taken by the first worker to reach them), the
parts are added up: the same bytes as one process on every bundled
recording, the same text then the same error on a damaged file."""
import pytest

import perfdata.views.collapse as collapse_view
import perfdata.views.flamegraph.command as flamegraph_view
import perfdata.views.report.command as report_view
import perfdata.run.sharded as sharded
from conftest import SAMPLE_SYMBOL_ARGS, SAMPLES, requires_perf, run_cli

RECORDINGS = sorted(p.name for p in SAMPLES.glob("*.data") if p.is_file())
COLLAPSE_OPTIONS = [[], ["--tid-root", "--addrs", "--all"], ["--samples", "--pid-root"]]
FLAME_OPTIONS = [[], ["--colors", "dso", "--weight", "period", "--reverse"]]
REPORT_OPTIONS = [[], ["--children"], ["-s", "pid,sym"], ["-s", "dso,comm"]]


@pytest.fixture
def shards(monkeypatch):
    """Blocks of 7 samples (many blocks per worker on every recording); counts
    the sharded runs, so a test knows the workers did run."""
    monkeypatch.setattr(collapse_view, "SHARD_BLOCK", 7)
    monkeypatch.setattr(flamegraph_view, "SHARD_BLOCK", 7)
    monkeypatch.setattr(report_view, "SHARD_BLOCK", 7)
    runs = []
    real = sharded.gather_sharded

    def counted(jobs, block, compute):
        runs.append(jobs)
        return real(jobs, block, compute)
    monkeypatch.setattr(sharded, "gather_sharded", counted)
    return runs


def _run(command, path, jobs, options):
    return run_cli([command, str(path), "-j", str(jobs)] + SAMPLE_SYMBOL_ARGS + options)


OPTIONS = {"collapse": COLLAPSE_OPTIONS, "flamegraph": FLAME_OPTIONS, "report": REPORT_OPTIONS}


@pytest.mark.parametrize("command", sorted(OPTIONS))
@pytest.mark.parametrize("name", RECORDINGS)
def test_same_bytes_as_one_process(name, command, shards):
    import perfdata
    path = SAMPLES / name
    for options in OPTIONS[command]:
        before = len(shards)
        rc1, one, err1 = _run(command, path, 1, options)
        assert len(shards) == before           # -j 1: no workers
        for jobs in (2, 3):
            rc, out, err = _run(command, path, jobs, options)
            assert (rc, out) == (rc1, one), (name, options, jobs, err)
            assert err == err1, (name, options, jobs)
    if command == "report":                     # (every event in its own table)
        with perfdata.open(str(path)) as pf:
            sharded_here = not pf.is_pipe
        assert len(shards) == (2 * len(REPORT_OPTIONS) if sharded_here else 0)


def test_most_recordings_are_sharded(shards):
    """The rule keeps one process only for files of several events (the
    first one seen is the one counted): the other recordings do shard."""
    import perfdata
    single = []
    for name in RECORDINGS:
        with perfdata.open(str(SAMPLES / name)) as pf:
            if len(sharded.event_names(pf)) == 1 and not pf.is_pipe:
                single.append(name)
    for name in single:
        _run("flamegraph", SAMPLES / name, 2, [])
        _run("collapse", SAMPLES / name, 2, [])
    assert len(single) >= len(RECORDINGS) // 2
    assert shards == [2] * (2 * len(single))


@requires_perf
def test_damaged_file_same_text_then_the_same_error(shards, tmp_path):
    """--strict on a record damaged late in a recording: collapse -j 3 writes
    the stacks -j 1 writes (those before the fault), then the same one-line
    error, exit 2; flamegraph gives the same error."""
    from conftest import damaged_dwarf_recording
    bad = damaged_dwarf_recording(tmp_path)
    for command in ("collapse", "flamegraph", "report"):
        one = run_cli(["--strict", command, str(bad), "-j", "1"])
        three = run_cli(["--strict", command, str(bad), "-j", "3"])
        assert one[0] == three[0] == 2
        assert one[1] == three[1]
        assert one[2].strip().splitlines()[-1] == three[2].strip().splitlines()[-1]
        assert "offset 0x" in three[2]
        if command == "collapse":
            assert one[1].count("\n") > 3      # the stacks before the fault
    assert shards == [3, 3, 3]
