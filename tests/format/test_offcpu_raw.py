"""perf 6.14's offcpu-time raw data (util/evsel.c, __set_offcpu_sample) read
by its construct schema (format.sample.offcpu_raw_schema): the fields perf
reads, in both byte orders, and None for data too short for what it claims."""
import random
import struct

from perfdata.format import read_offcpu_raw


def _as_perf_reads(data, little):
    """The fields as __set_offcpu_sample takes them, u64 by u64, with its
    overflow checks (None where one fails)."""
    order = "<" if little else ">"
    if len(data) < 24:
        return None
    pid, tid, period, nr = struct.unpack_from(order + "IIQQ", data, 0)
    if nr > (len(data) - 24) // 8:
        return None
    return pid, tid, period, nr, list(struct.unpack_from(order + "%dQ" % nr, data, 24))


def test_offcpu_raw_fields_as_perf_reads_them():
    rng = random.Random(614)
    parsed = 0
    for _ in range(5000):
        little = rng.random() < 0.5
        data = bytearray(rng.randbytes(rng.randrange(80)))
        if len(data) >= 24 and rng.random() < 0.7:
            struct.pack_into("<Q" if little else ">Q", data, 16, rng.randrange(8))
        fields = read_offcpu_raw(bytes(data), little)
        got = None if fields is None else (fields.pid, fields.tid, fields.period,
                                           fields.callchain.nr, list(fields.callchain.ips))
        assert got == _as_perf_reads(bytes(data), little), (bytes(data), little)
        parsed += got is not None
    assert parsed > 1000
