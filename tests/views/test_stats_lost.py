"""`perfdata stats` on LOST_SAMPLES records: the aggregated line counts the
records, an event's own line the samples they say were lost (perf 6.1's
count_lost_samples_event adds each record's count), against perf report
--stats on files made here: two events, the records naming theirs by id."""
import subprocess

import pytest

from conftest import PERF, requires_perf_tool, run_cli
from perfdata.format.constants import RecordType as RT, SampleType as ST
from synth import Attr, Builder, attr_value

TRAILER = ST.TID | ST.TIME | ST.ID | ST.CPU | ST.IDENTIFIER


def _attr(ids, config):
    return Attr(attr_value(128, type=1, config=config, sample_type=ST.IP | TRAILER,
                           sample_period=1000, flags={"sample_id_all": 1}), ids)


def _events(text):
    """The per-event part of a --stats text: [(event or type, count)]."""
    out = []
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(" stats:")
                 and not line.startswith("Aggregated"))
    for line in lines[start:]:
        if line.endswith(" stats:"):
            out.append((line.strip(), None))
        elif "events:" in line:
            name, _, count = line.partition("events:")
            out.append((name.strip(), int(count.split()[0])))
    return out


@requires_perf_tool
@pytest.mark.parametrize("losses", [[5, 7, 0], [1], [3, 0x1_0000_0002]],
                         ids=["sum", "one", "u32"])
def test_lost_samples_per_event_as_perf(tmp_path, losses):
    b = Builder()
    a1, a2 = _attr([11], 0), _attr([22], 1)     # (task-clock, cpu-clock: software)
    recs = []
    for i, lost in enumerate(losses):
        recs.append(b.sample(a1, {"ip": 0x1000 + i, "pid": 1, "tid": 1, "time": 10 + 2 * i,
                                  "id": 11, "cpu": 0, "cpu_res": 0, "identifier": 11}))
        recs.append(b.kernel_record(RT.LOST_SAMPLES, {"lost": lost}, a2 if i % 2 else a1,
                                    pid=1, tid=1, time=11 + 2 * i, id=22 if i % 2 else 11,
                                    cpu=0, identifier=22 if i % 2 else 11))
    path = tmp_path / "lost.data"
    path.write_bytes(b.file([a1, a2], recs))
    perf = subprocess.run([PERF, "report", "--stats", "-i", str(path)],
                          capture_output=True, text=True)
    assert "LOST_SAMPLES" in perf.stdout, perf.stderr
    rc, out, err = run_cli(["stats", str(path)])
    assert rc == 0, err
    assert _events(out) == _events(perf.stdout)
