"""The record walker over a byte range, its one plausibility rule, and the
record decoder that needs no file (perfdata/format/walker.py, decoder.py)."""
import gc
from pathlib import Path

import pytest

import perfdata
from perfdata.format.constants import RecordType as RT
from perfdata.format.decoder import decode_record
from perfdata.format.source import ByteSource
from perfdata.format.errors import WalkLog
from perfdata.format.plausibility import CAREFUL_ONLY, KNOWN_TYPES, MIN_BODY, least_sizes
from perfdata.format.walker import RecordWalker

from test_recovery import corrupt

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PLT = SAMPLES / "plt_loop.fp.data"


@pytest.fixture(scope="module")
def plt():
    if not PLT.is_file():
        pytest.skip("samples/plt_loop.fp.data missing")
    return PLT


def _key(rec):
    return (rec.offset, rec.type, rec.size, rec.time, bytes(rec.body))


def _whole_and_middle(path):
    with perfdata.open(str(path)) as pf:
        whole = [_key(r) for r in pf.records(order="file", include_compressed=True)]
        start, end = pf.data_range
        return whole, start, whole[len(whole) // 2][0], end


def test_data_range(plt, tmp_path):
    """The data section as the header states it; a truncated file's ends
    where the file does; a stream's has no end."""
    import struct
    raw = plt.read_bytes()
    offset, size = struct.unpack_from("<QQ", raw, 40)      # perf_file_header.data
    with perfdata.open(str(plt)) as pf:
        assert pf.data_range == (offset, offset + size) and offset + size < len(raw)
        first = next(iter(pf.records(order="file")))
        assert first.offset == offset
    cut = tmp_path / "cut.data"
    cut.write_bytes(raw[:offset + size // 2])
    with perfdata.open(str(cut)) as pf:
        assert pf.data_range == (offset, offset + size // 2)
    with perfdata.open(str(SAMPLES / "pipe.data")) as pf:
        assert pf.is_pipe and pf.data_range == (16, None)


def test_two_ranges_walk_as_the_whole(plt):
    whole, start, mid, end = _whole_and_middle(plt)
    with perfdata.open(str(plt)) as pf:
        first = [_key(r) for r in pf.walk_range(start, mid)]
        second = [_key(r) for r in pf.walk_range(mid, end)]
        assert pf.warnings == [] and pf.skipped == []
    assert first and second
    assert first + second == whole


def test_recovery_stays_inside_its_range(plt, tmp_path):
    whole, start, mid, end = _whole_and_middle(plt)
    top = [k[:3] for k in whole]
    victim = top[len(top) * 3 // 4]
    path = tmp_path / "damaged.data"
    path.write_bytes(corrupt(plt.read_bytes(), True, victim, "size_too_large", end))
    with perfdata.open(str(path)) as pf:
        first = [_key(r) for r in pf.walk_range(start, mid)]
        assert pf.skipped == []
        second = [_key(r)[:3] for r in pf.walk_range(mid, end)]
        assert [s[1] for s in pf.skipped] == [victim[0]]
    assert first == whole[:len(first)]
    assert second == [k for k in top[len(first):] if k != victim]


def test_a_range_outside_the_data_section_is_refused(plt):
    with perfdata.open(str(plt)) as pf:
        with pytest.raises(ValueError):
            list(pf.walk_range(0, pf.data_range[1]))


def test_records_decode_without_their_file(plt):
    with perfdata.open(str(plt)) as pf:
        recs = list(pf.records(order="file"))[:400]
        fields = [pf.parse_record(r) for r in recs]
    del pf
    gc.collect()
    assert any(r.type == RT.SAMPLE for r in recs) and any(r.type == RT.MMAP2 for r in recs)
    for rec, expected in zip(recs, fields):
        # nothing a record holds leads back to the PerfFile
        assert not any(isinstance(o, perfdata.PerfFile)
                       for o in gc.get_referents(rec) + gc.get_referents(rec.ctx))
        assert rec.parse() == expected
        assert decode_record(rec.type, rec.misc, bytes(rec.body), rec.attr, True) == expected


def test_one_rule_and_its_table(plt):
    least = least_sizes(24)
    assert set(least) == KNOWN_TYPES
    assert least[RT.SAMPLE] == 8
    assert least[RT.MMAP] == 8 + MIN_BODY[RT.MMAP] + 24
    assert least[RT.SWITCH] == 8 + 24
    assert least[RT.FINISHED_ROUND] == 8
    with perfdata.open(str(plt)) as pf:
        walker = RecordWalker(pf.header_records,
                              ByteSource(open(str(plt), "rb"), *pf.data_range, True), WalkLog())
        ok = walker.plausible
        assert ok(RT.SAMPLE, 64, 0, 64) and not ok(RT.SAMPLE, 64, 8, 64)
        assert not ok(RT.SAMPLE, 60, 0, 1 << 20)             # not 8-byte aligned
        assert ok(RT.COMPRESSED, 61, 0, 1 << 20)             # COMPRESSED need not be
        assert ok(RT.FINISHED_ROUND, 8, 0, 64) and not ok(RT.FINISHED_ROUND, 16, 0, 64)
        assert not ok(99, 64, 0, 1 << 20)                    # unknown type
        # the fast lane's inlined checks read the rule's own table
        assert walker.fast_least == {t: s for t, s in walker.least.items()
                                     if t not in CAREFUL_ONLY}
        assert walker.sample_min == walker.least[RT.SAMPLE]
        walker.src.f.close()
