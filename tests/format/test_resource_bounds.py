"""Limits that hold for any input: time linear in the file size (no re-reads,
no spins), memory bounded by the largest record plus caches (never by a
count field), zstd output per COMPRESSED record bounded, recursion and
nesting bounded in CFI.

Time is measured by counting work (bytes read, headers examined) and by a
loose wall-clock ratio that cannot flake; memory with tracemalloc.
"""
import io
import os
import random
import struct
import sys
import tracemalloc
from types import SimpleNamespace

import pytest
import zstandard

import perfdata
from perfdata.format import walker as walker_mod
from perfdata.format.compression import Decompressor
from perfdata.format.constants import Feature, ReadFormat as RF, RecordType as RT, \
    SampleType as ST
from perfdata.format.errors import PerfDataError

from synth import Builder
from test_reader_synthetic import make_attr, sample_value
from limits import uleb

MiB = 1 << 20


class CountingFile(io.FileIO):
    """A file that counts the bytes read from it."""
    bytes_read = 0

    def read(self, n=-1):
        data = super().read(n)
        CountingFile.bytes_read += len(data)
        return data


def _counted_walk(path, parse=True):
    CountingFile.bytes_read = 0
    f = CountingFile(str(path), "r")
    n = 0
    with perfdata.open(f) as pf:
        for rec in pf.records(order="file"):
            n += 1
            if parse:
                try:
                    rec.parse()
                except PerfDataError:
                    pass
        skipped = list(pf.skipped)
    return n, CountingFile.bytes_read, skipped


def _samples_file(path, n, little=True):
    b = Builder(little)
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.CALLCHAIN | ST.PERIOD, [7])
    recs = []
    for i in range(n):
        v = sample_value(a, i % 50 + 1)
        recs.append(b.sample(a, v))
        if i % 100 == 99:
            recs.append(b.record(RT.FINISHED_ROUND, b""))
    path.write_bytes(b.file([a], recs))
    return path


# Calls a record costs the walk at most, well above what it makes (test_every_
# record_followed_by_a_bad_header_is_linear: 35), far below what a walk
# that scans a body again a record would (thousands).
CALLS_PER_RECORD = 200


def _counted_calls(fn, *args):
    """(Python and C function calls fn made, its result): a measure of work
    that, unlike a time, is the same on a busy machine."""
    calls = [0]

    def count(frame, event, arg):
        if event == "call" or event == "c_call":
            calls[0] += 1
    sys.setprofile(count)
    try:
        out = fn(*args)
    finally:
        sys.setprofile(None)
    return calls[0], out


# ------------------------------------------------------------ linear time
def test_reading_is_linear_and_reads_each_byte_once(tmp_path):
    small = _samples_file(tmp_path / "1x.data", 1000)
    big = _samples_file(tmp_path / "8x.data", 8000)
    c1, (n1, read1, _) = _counted_calls(_counted_walk, small)
    c8, (n8, read8, _) = _counted_calls(_counted_walk, big)
    assert n8 == 8 * n1
    # every byte read once (plus the header, attrs and features read at open)
    for path, nread in ((small, read1), (big, read8)):
        assert nread <= os.path.getsize(path) + 4096, (path, nread)
    # 8x the records for at most 8x the calls (and the opening's, once)
    assert c8 <= 8 * c1, (c1, c8)


def _garbage_file(path, garbage_bytes, seed=1):
    """Good records, then a run of random garbage, then good records."""
    rng = random.Random(seed)
    b = Builder(True)
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.ID, [7, 8])
    good = [b.sample(a, sample_value(a, i + 1, ident=7)) for i in range(50)]
    junk = bytes(rng.getrandbits(8) for _ in range(garbage_bytes))
    junk = junk[:len(junk) // 8 * 8]
    # the garbage starts where a record header should be: type 0 size 3
    junk = struct.pack("<IHH", 0, 0, 3) + junk[8:]
    path.write_bytes(b.file([a], good + [junk] + good))
    return path, len(good)


def test_resync_over_garbage_is_linear(tmp_path, monkeypatch):
    calls = {"n": 0}
    real = walker_mod.RecordWalker.plausible

    def counting(self, *args):
        calls["n"] += 1
        return real(self, *args)
    monkeypatch.setattr(walker_mod.RecordWalker, "plausible", counting)
    figures = []
    for size in (128 << 10, 1 << 20):
        path, ngood = _garbage_file(tmp_path / ("g%d.data" % size), size)
        calls["n"] = 0
        _, (n, nread, skipped) = _counted_calls(_counted_walk, path, False)
        # nothing but the good records (a rare false header in random data at most)
        assert 2 * ngood <= n <= 2 * ngood + 3, n
        assert skipped and sum(s[2] for s in skipped) >= size * 0.9
        # every byte read from the file once
        assert nread <= os.path.getsize(path) + 4096, nread
        figures.append((size, calls["n"]))
    (s1, c1), (s8, c8) = figures
    assert c8 <= 8 * c1 * 1.5 + 1000, figures


def test_every_record_followed_by_a_bad_header_is_linear(tmp_path):
    """The look-ahead scans a record's body for a resync point when the next
    header is bad; with every second header bad, no byte is scanned twice."""
    b = Builder(True)
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.CALLCHAIN, [7])
    recs = []
    for i in range(6000):
        recs.append(b.sample(a, sample_value(a, i % 40 + 1)))
        if i % 3 == 2:
            recs.append(struct.pack("<IHH", 0xFFFFFFFF, 0, 2) + bytes(8))
    path = tmp_path / "bad.data"
    path.write_bytes(b.file([a], recs))
    calls, (n, nread, skipped) = _counted_calls(_counted_walk, path, False)
    # a sample with no event id needs two sane headers after it to be trusted:
    # the first of each three is lost
    assert n >= 3900, n
    assert len(skipped) >= 1900
    assert nread <= os.path.getsize(path) + 2 * MiB, nread
    # linear: a bounded number of calls a record (CALLS_PER_RECORD)
    assert calls <= CALLS_PER_RECORD * 8000, calls


# ------------------------------------------------------------ memory
def _peak(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


HOSTILE_SAMPLES = {
    # name: (sample_type, extra attr fields, body after the header)
    "callchain_nr": (ST.CALLCHAIN, {}, struct.pack("<QQQ", 1 << 60, 1, 2)),
    "branch_nr": (ST.BRANCH_STACK, {}, struct.pack("<QQQ", 1 << 59, 1, 2)),
    "read_group_nr": (ST.READ, {"read_format": RF.GROUP | RF.ID},
                      struct.pack("<QQQ", 1 << 58, 1, 2)),
    "stack_size": (ST.STACK_USER, {"sample_stack_user": 8192},
                   struct.pack("<QQQ", 1 << 62, 1, 2)),
    "raw_size": (ST.RAW, {}, struct.pack("<IIQ", 0xFFFFFFF0, 1, 2)),
    "regs_all_bits": (ST.REGS_USER, {"sample_regs_user": (1 << 64) - 1},
                      struct.pack("<QQQ", 2, 1, 2)),
    "aux_size": (ST.AUX, {}, struct.pack("<QQQ", 1 << 61, 1, 2)),
}


@pytest.mark.parametrize("what", sorted(HOSTILE_SAMPLES))
def test_hostile_count_costs_no_memory(what, tmp_path):
    sample_type, fields, body = HOSTILE_SAMPLES[what]
    b = Builder(True)
    a = make_attr(sample_type, [1], **fields)
    path = tmp_path / "hostile.data"
    path.write_bytes(b.file([a], [b.record(RT.SAMPLE, body)] * 3))
    errors = []

    def run():
        with perfdata.open(str(path)) as pf:
            for rec in pf.records():
                try:
                    rec.parse()
                except PerfDataError as exc:
                    errors.append(exc)
    peak = _peak(run)
    assert peak < 4 * MiB, (what, peak)
    assert errors, "a count that runs past the record must be an error"


HOSTILE_FEATURES = {
    Feature.HOSTNAME: struct.pack("<I", 0xFFFFFFF0) + b"abc",
    Feature.CMDLINE: struct.pack("<II", 0x7FFFFFFF, 64) + b"x" * 8,
    Feature.NRCPUS: b"\x01",
    Feature.CPU_TOPOLOGY: struct.pack("<II", 0xFFFFFFFF, 8) + b"0-1\0" * 2,
    Feature.EVENT_DESC: struct.pack("<II", 0x0FFFFFFF, 0x7FFFFFFF) + bytes(64),
    Feature.NUMA_TOPOLOGY: struct.pack("<I", 0xFFFFFFFF) + bytes(32),
    Feature.PMU_MAPPINGS: struct.pack("<I", 0xFFFFFFFF) + bytes(32),
    Feature.GROUP_DESC: struct.pack("<I", 0xFFFFFFFF) + bytes(32),
    Feature.CACHE: struct.pack("<II", 1, 0xFFFFFFFF) + bytes(32),
    Feature.MEM_TOPOLOGY: struct.pack("<QQQ", 1, 1, 1 << 60) + bytes(32),
    Feature.BUILD_ID: struct.pack("<IHH", 0, 0, 0xFFFF) + bytes(24),
}


@pytest.mark.parametrize("fid", sorted(HOSTILE_FEATURES), ids=lambda f: Feature(f).name)
def test_hostile_feature_counts_cost_no_memory(fid, tmp_path):
    b = Builder(True)
    a = make_attr(ST.IP | ST.TID, [1])
    path = tmp_path / "feature.data"
    path.write_bytes(b.file([a], [b.sample(a, sample_value(a, 1))],
                            features={fid: HOSTILE_FEATURES[fid]}))

    def run():
        with perfdata.open(str(path)) as pf:
            try:
                pf.feature(fid)
            except PerfDataError:
                pass
    peak = _peak(run)
    assert peak < 4 * MiB, (Feature(fid).name, peak)


def test_hostile_attr_ids_section(tmp_path):
    b = Builder(True)
    a = make_attr(ST.IP, [1])
    data = bytearray(b.file([a], [b.sample(a, sample_value(a, 1))]))
    attrs_off, = struct.unpack_from("<Q", data, 24)
    stride, = struct.unpack_from("<Q", data, 16)
    struct.pack_into("<QQ", data, attrs_off + stride - 16, 104, 8 << 24)   # 128 MiB of ids
    path = tmp_path / "ids.data"
    path.write_bytes(bytes(data))

    def run():
        with pytest.raises(PerfDataError):
            perfdata.open(str(path))
    assert _peak(run) < 4 * MiB


# ------------------------------------------------------------ zstd
def _bomb(total):
    c = zstandard.ZstdCompressor(level=19).compressobj()
    parts = [c.compress(bytes(MiB)) for _ in range(total // MiB)]
    parts.append(c.flush())
    return b"".join(parts)


def test_zstd_output_per_record_is_bounded():
    """A record that expands past the limit is an error, and the memory used
    is a small multiple of the limit (256-byte input slices: at most ~11 MiB
    decompressed per call before the check)."""
    bomb = _bomb(512 * MiB)
    assert len(bomb) < 65_000
    limit = 1 * MiB

    def run():
        with pytest.raises(ValueError):
            Decompressor(limit).feed(bomb)
    peak = _peak(run)
    assert peak < 2 * limit + 16 * MiB, peak


def test_zstd_default_limit(tmp_path):
    b = Builder(True)
    a = make_attr(ST.IP, [1])
    path = tmp_path / "z.data"
    path.write_bytes(b.file([a], [b.sample(a, sample_value(a, 1))]))
    with perfdata.open(str(path)) as pf:
        assert pf.decompress_limit() == 64 * MiB
    with perfdata.open(str(path), max_decompressed=MiB) as pf:
        assert pf.decompress_limit() == MiB


# ------------------------------------------------------------ CFI
def _cfi_run(program):
    from symbolize.unwind import cfi_rows
    cie = SimpleNamespace(code_align=1, data_align=-8, initial_rules={}, ra_column=16,
                          signal_frame=False, fde_encoding=0, address_size=8)
    sec = SimpleNamespace(data=bytes(program), endian="<", endian_name="little", is_eh=True)
    return cfi_rows.run_program(cie, sec, 0, len(program), 0x1000, (7, 8), {}, cie)


def test_cfi_remember_state_depth_is_bounded():
    """20,000 nested DW_CFA_remember_state with 60 rules each: an error, not
    1.2 million copied rules."""
    from symbolize.unwind.cfi import CfiError
    program = bytearray()
    for reg in range(60):
        program += bytes([0x80 | reg, 2])          # DW_CFA_offset reg, 2
    program += b"\x0a" * 20000                     # DW_CFA_remember_state

    def run():
        with pytest.raises(CfiError):
            _cfi_run(program)
    assert _peak(run) < 4 * MiB


def test_cfi_rows_times_rules_is_bounded():
    """3000 registers described, then 3000 rows: an error (no CFI for that
    FDE), not 9 million copied rules."""
    from symbolize.unwind.cfi import CfiError
    program = bytearray()
    for reg in range(3000):
        program += b"\x05" + uleb(reg + 64) + uleb(1)   # DW_CFA_offset_extended
    program += b"\x41" * 3000                              # advance_loc 1

    def run():
        with pytest.raises(CfiError):
            _cfi_run(program)
    peak = _peak(run)
    assert peak < 64 * MiB, peak


def test_stack_cache_bound_keeps_output(monkeypatch):
    """The stack caches are bounded by entries (cleared when full): with a
    bound of 2, far below the recording's distinct stacks, every sample is
    printed as with the default bound, and the cache never holds more.
    (The Python path's caches: the compiled core, which keeps frames of its
    own, is turned off.)"""
    from conftest import run_cli
    import perfdata.resolve.frames as frames
    import perfdata.resolve.stack_caches as stack_caches
    monkeypatch.setenv("PERFDATA_CORE", "pure")
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "samples", "threads.fp.data")
    rc, want, _ = run_cli(["script", path])
    assert rc == 0
    sizes = []
    orig = frames.FrameResolver.frames_for_callchain

    def spy(self, sample, ips):
        out = orig(self, sample, ips)
        sizes.append(len(self.caches.stacks))
        return out
    monkeypatch.setattr(stack_caches, "STACK_CACHE_SIZE", 2)
    monkeypatch.setattr(frames.FrameResolver, "frames_for_callchain", spy)
    rc, got, _ = run_cli(["script", path])
    assert rc == 0 and got == want
    assert len(sizes) > 100 and max(sizes) <= 3


def test_dwarf_stacks_share_frame_objects():
    """Different DWARF stacks through one return address hold the same frame
    objects for it, not a copy per stack (the copies were most of the memory
    of a large DWARF recording)."""
    from perfdata.resolve.symbolized import SampleSymbolizer
    from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from conftest import SAMPLE_BUILDIDS, SAMPLE_PATH_MAP
    pf = perfdata.open(os.path.join(repo, "samples", "threads.dwarf.data"))
    locator = DebugInfoLocator(debug_dirs=[str(SAMPLE_BUILDIDS)], path_map=SAMPLE_PATH_MAP)
    samples = SampleSymbolizer(pf, Symbolizer(locator, SymbolizerOptions(inline=False)))
    objects, in_stacks, keep = {}, {}, []
    for s in samples:
        keep.append(s.frames)             # (ids stay unique while kept)
        for f in s.frames:
            if f.is_return_address and not f.kernel:
                key = (f.dso, f.address, f.symbol, f.inlined)
                objects.setdefault(key, set()).add(id(f))
                in_stacks.setdefault(key, set()).add(id(s.frames))
    # the case arises: return addresses on several distinct stacks
    assert sum(1 for st in in_stacks.values() if len(st) > 1) >= 3
    assert all(len(ids) == 1 for ids in objects.values()), \
        [k for k, ids in objects.items() if len(ids) > 1][:5]
