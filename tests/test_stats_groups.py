"""`perfdata stats` on a recording whose samples read a whole group
(`perf record -e '{a,b}:S'`), made now: the per-event SAMPLE counts are
perf's, whose deliver_sample_value() counts a member only where its counter
grew since its last sample (page-faults grow in fewer samples than the
cpu-clock that leads)."""
import re
import subprocess
import sys

import pytest

from conftest import PERF, requires_perf, run_cli

LOAD = "x = [bytearray(4096) for i in range(20000)]; sum(range(3000000))"


def _sections(text):
    """{event: {record type: count}} of the "<event> stats:" sections."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"(\S.*) stats:$", line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        m = re.match(r"\s+(\S+) events:\s+(\d+)", line)
        if m and current is not None:
            current[m.group(1)] = int(m.group(2))
    return out


@requires_perf
def test_group_read_counts_as_perf(tmp_path):
    data = tmp_path / "group.data"
    rec = subprocess.run([PERF, "record", "-q", "-e", "{cpu-clock,page-faults}:S", "-o", str(data),
                          "--", sys.executable, "-c", LOAD], capture_output=True, text=True,
                         timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record a group: %s" % rec.stderr.strip()[-200:])
    theirs = subprocess.run([PERF, "report", "--stats", "-i", str(data)], capture_output=True,
                            text=True, timeout=120).stdout
    rc, ours, err = run_cli(["stats", str(data)])
    assert rc == 0, err
    want, got = _sections(theirs), _sections(ours)
    assert got == want
    clock, faults = want["cpu-clock"]["SAMPLE"], want["page-faults"]["SAMPLE"]
    assert 0 < faults < clock           # (the case this is about: members that did not grow)
