"""The walker's fast lane takes the kernel's side records (FORK, COMM, MMAP2,
EXIT...) in recover mode only where the careful path would pass them as
they are: on a sound file, the records of a recover-mode walk (lane) are
those of a strict walk (careful path for every side record), field for
field and byte for byte; and a side record whose size the careful path
doubts still goes there (test_recovery covers what it then finds)."""
import struct
from pathlib import Path

import pytest

import perfdata
from perfdata.format.constants import RecordType as RT

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FILES = sorted(p.name for p in SAMPLES.glob("*.data") if p.is_file())


def _records(path, strict):
    with perfdata.open(str(path), strict=strict) as pf:
        return [(r.type, r.misc, r.size, r.offset, r.time,
                 r.attr.index if r.attr is not None else None, bytes(r.body))
                for r in pf.records("file")], list(pf.warnings)


@pytest.mark.parametrize("name", FILES)
def test_lane_gives_the_careful_paths_records(name):
    lane, lane_warnings = _records(SAMPLES / name, strict=False)
    careful, careful_warnings = _records(SAMPLES / name, strict=True)
    assert lane == careful
    assert lane_warnings == careful_warnings
    # (the files do hold side records the lane takes)
    assert any(r[0] in (RT.MMAP2, RT.COMM, RT.FORK, RT.EXIT) for r in lane)


def test_an_oversized_mmap2_is_left_to_the_careful_path(tmp_path):
    """An MMAP2 whose size runs well past its name and trailer may hide the
    records after it: the careful path looks inside it (resync) and finds
    them, as before the lane."""
    src = SAMPLES / "plt_loop.fp.data"
    data = bytearray(src.read_bytes())
    with perfdata.open(str(src)) as pf:
        recs = list(pf.records("file"))
    i = next(k for k, r in enumerate(recs[:-2]) if r.type == RT.MMAP2
             and recs[k + 1].type != RT.SAMPLE)
    mmap2, after = recs[i], recs[i + 1]
    # its size now swallows the record after it
    struct.pack_into("<H", data, mmap2.offset + 6, mmap2.size + after.size)
    bad = tmp_path / "oversized.data"
    bad.write_bytes(bytes(data))
    with perfdata.open(str(bad)) as pf:
        got = [(r.type, r.offset) for r in pf.records("file")]
        skipped = list(pf.skipped)
    assert (after.type, after.offset) in got
    assert (mmap2.type, mmap2.offset) not in got
    assert [(s[1], s[3]) for s in skipped] == [
        (mmap2.offset, "record size %d overlaps the next records" % (mmap2.size + after.size))]
