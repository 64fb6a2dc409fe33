"""Writes the synthetic reproducers of this directory (deterministic bytes).

    python3 tests/regressions/make_inputs.py

mmap2_pre316.data: a file-mode perf.data whose MMAP2 records have the layout of
  Linux 3.12-3.15 (no prot/flags: the file name follows ino_generation at body
  offset 56), as RHEL 7's 3.10 kernel writes them (corpus file
  hotspot__perf.data.true.v2).  Records: COMM, MMAP2 '[stack]', MMAP2
  '/usr/bin/true', SAMPLE; sample_type TID|TIME|IP, sample_id_all.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    # Run as a script: tests/synth.py and this checkout's perfdata are not on
    # the path (under pytest, pyproject.toml's pythonpath puts them there).
    sys.path[:0] = [os.path.dirname(HERE), os.path.dirname(os.path.dirname(HERE))]

from synth import Attr, Builder, attr_value  # noqa: E402

from perfdata.format.constants import RecordType as RT, SampleType as ST  # noqa: E402


def old_mmap2(b, attr, pid, start, length, pgoff, name, time):
    # pid, tid, start, len, pgoff, maj, min, ino, ino_generation, filename (8-aligned)
    body = struct.pack(b.u + "IIQQQIIQQ", pid, pid, start, length, pgoff, 8, 1, 1234, 5)
    raw = name.encode() + b"\0"
    body += raw + bytes(-len(raw) % 8)
    body += b.trailer(attr, pid=pid, tid=pid, time=time)
    return b.record(RT.MMAP2, body, misc=2)


def mmap2_pre316():
    b = Builder(True)
    attr = Attr(attr_value(72, sample_type=ST.IP | ST.TID | ST.TIME,
                           flags={"sample_id_all": 1, "mmap2": 1}), [])
    recs = [
        b.kernel_record(RT.COMM, {"pid": 7, "tid": 7, "comm": "true\0\0\0"}, attr, pid=7, tid=7,
                        time=100),
        old_mmap2(b, attr, 7, 0x7fff8c5bb000, 0x22000, 0x7ffffffdd000, "[stack]", 101),
        old_mmap2(b, attr, 7, 0x400000, 0x6000, 0, "/usr/bin/true", 102),
        b.sample(attr, {"ip": 0x401000, "pid": 7, "tid": 7, "time": 103}),
    ]
    return b.file([attr], recs)


INPUTS = {"mmap2_pre316.data": mmap2_pre316}

if __name__ == "__main__":
    for name, make in INPUTS.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(make())
        print("wrote", name)
