"""A recording that lost data says so: perf script warns of every
PERF_RECORD_LOST ("Processed N events and lost K chunks! Check IO/CPU
overload!"), and perfdata's commands warn where perf does, with the number
of times the ring buffer was full, what was lost and the fix; once, whatever
the number of workers."""
import re
import subprocess

import pytest

import perfdata.views.script as script_view
from conftest import PERF, requires_perf_tool, run_cli
from perfdata.format.constants import MISC_USER, RecordType as RT, SampleType as ST
from synth import Attr, Builder, attr_value

TRAILER = ST.TID | ST.TIME | ST.ID | ST.CPU | ST.IDENTIFIER
_OURS = re.compile(r"perfdata: warning: \S+: (\d+) times perf record's ring buffer was full "
                   r"\(PERF_RECORD_LOST\): (\d+) (samples \([\d.]+% of \d+\)|records) lost")


def _file(tmp_path, losses, lost_samples=None, samples=40):
    """`samples` samples, a LOST record of each count in `losses` among them,
    and at the end a LOST_SAMPLES record of `lost_samples` (as perf record
    writes one from the kernel's count)."""
    b = Builder()
    a = Attr(attr_value(128, type=1, config=0, sample_type=ST.IP | TRAILER,
                        sample_period=1000, flags={"sample_id_all": 1}), [11])
    recs, t = [], 10
    every = samples // (len(losses) + 1)
    pending = list(losses)
    for i in range(samples):
        t += 1
        recs.append(b.sample(a, {"ip": 0x1000 + i, "pid": 1, "tid": 1, "time": t, "id": 11,
                                 "cpu": 0, "cpu_res": 0, "identifier": 11}, MISC_USER))
        if pending and i % every == every - 1:
            t += 1
            recs.append(b.kernel_record(RT.LOST, {"id": 11, "lost": pending.pop(0)}, a,
                                        pid=1, tid=1, time=t, id=11, cpu=0, identifier=11))
    if lost_samples is not None:
        recs.append(b.kernel_record(RT.LOST_SAMPLES, {"lost": lost_samples}, a, pid=0, tid=0,
                                    time=0, id=11, cpu=0, identifier=11))
    path = tmp_path / "lost.data"
    path.write_bytes(b.file([a], recs))
    return path


def _perf_lost(path):
    """(chunks lost, "P% of N" samples lost or None) as perf script warns."""
    res = subprocess.run([PERF, "script", "-i", str(path)], capture_output=True, text=True)
    m = re.search(r"Processed (\d+) events and lost (\d+) chunks!", res.stderr)
    rate = re.search(r"Processed (\d+) samples and lost ([\d.]+)%!", res.stderr)
    return (int(m.group(2)) if m else 0,
            "%s%% of %s" % (rate.group(2), rate.group(1)) if rate else None)


@requires_perf_tool
@pytest.mark.parametrize("losses,lost_samples", [([3, 9], 12), ([5], None), ([], None)],
                         ids=["two-with-count", "one", "none"])
def test_lost_chunks_warned_as_perf(tmp_path, losses, lost_samples):
    path = _file(tmp_path, losses, lost_samples)
    chunks, rate = _perf_lost(path)
    assert chunks == len(losses)
    rc, out, err = run_cli(["script", str(path), "-j", "1"])
    assert rc == 0, err
    found = _OURS.findall(err)
    if not chunks:
        assert found == [] and "PERF_RECORD_LOST" not in err
        return
    # the records' counts, as samples when LOST_SAMPLES gives them
    want = ((str(lost_samples), "samples (%s)" % rate) if lost_samples
            else (str(sum(losses)), "records"))
    assert found == [(str(chunks),) + want], err
    assert len(out.splitlines()) == 40      # every sample still printed


@pytest.mark.parametrize("command", ["script", "report", "collapse"])
def test_lost_warning_once_with_workers(tmp_path, monkeypatch, command):
    path = _file(tmp_path, [3, 9, 4], 16)
    monkeypatch.setattr(script_view, "SHARD_BLOCK", 4)
    for module in ("collapse", "report"):
        monkeypatch.setattr("perfdata.views.%s.SHARD_BLOCK" % module, 4, raising=False)
    rc1, out1, err1 = run_cli([command, str(path), "-j", "1"])
    # (16 of 40 + 16 samples lost)
    assert rc1 == 0 and _OURS.findall(err1) == [("3", "16", "samples (28.57% of 56)")], err1
    for jobs in (2, 3):
        assert run_cli([command, str(path), "-j", str(jobs)]) == (rc1, out1, err1)


def test_lost_samples_alone_above_perfs_rate(tmp_path):
    """No LOST record, but LOST_SAMPLES over 5% of the samples (the rate
    above which perf warns): said as a share; at or under it, nothing."""
    rc, _, err = run_cli(["script", str(_file(tmp_path, [], 10))])
    assert rc == 0 and "the kernel lost 10 of 50 samples (20.00%" in err, err
    rc, _, err = run_cli(["script", str(_file(tmp_path, [], 2))])
    assert rc == 0 and "lost" not in err, err


@requires_perf_tool
@pytest.mark.parametrize("lost_samples", [10, 2])
def test_lost_samples_alone_as_perf(tmp_path, lost_samples):
    path = _file(tmp_path, [], lost_samples)
    chunks, rate = _perf_lost(path)
    assert chunks == 0
    rc, _, err = run_cli(["script", str(path)])
    assert rc == 0, err
    if rate is None:
        assert "lost" not in err, err
    else:
        assert "the kernel lost %d of %s samples (%s%%" % (
            lost_samples, rate.split(" of ")[1], rate.split("%")[0]) in err, err
