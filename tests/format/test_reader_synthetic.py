"""The reader on synthetic files built from its own construct schemas (synth.py).

Every value is chosen here, so what the reader gives back is checked against
known ground truth: each sample_type bit and read_format combination, every
record type, every attr size, both byte orders, both magics, pipe mode from
streams and a real pipe, zstd records that straddle, and perf's round order.
"""
import io
import os
import random
import struct
import subprocess
import sys
import threading

import pytest
import zstandard

import perfdata
from perfdata.format.constants import (BRANCH_SAMPLE_HW_INDEX, MAGIC_V1, CallchainContext,
                                       Feature, ReadFormat as RF, RecordType as RT,
                                       SampleType as ST)
from perfdata.format.features import build_feature
from perfdata.format.records import body_schemas, read_format_schema

from conftest import REPO, run_cli
from synth import Attr, Builder, attr_value, plain

BOTH = pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
ALL_BITS = (1 << 25) - 1
# WEIGHT and WEIGHT_STRUCT are exclusive (the kernel refuses both).
EVERY_BIT = ALL_BITS & ~ST.WEIGHT
X86_REGS = 0xff0fff
ARM64_REGS = 0x1ffffffff


def open_bytes(data):
    return perfdata.open(io.BytesIO(data))


def check_decoders(pf, records):
    """The decoder derived from the schema agrees with schema.parse()."""
    for rec in records:
        if rec.type == RT.SAMPLE and rec.attr is not None:
            assert plain(rec.attr.decode_sample(rec.body)) == \
                plain(rec.attr.schema.parse(bytes(rec.body)))


def read_all(data, order="file", include_compressed=False):
    pf = open_bytes(data)
    recs = list(pf.records(order=order, include_compressed=include_compressed))
    check_decoders(pf, recs)
    return pf, recs


def read_value(rf, seed=1, nr=2):
    if rf & RF.GROUP:
        out = {"nr": nr}
        if rf & RF.TOTAL_TIME_ENABLED:
            out["time_enabled"] = 1000 + seed
        if rf & RF.TOTAL_TIME_RUNNING:
            out["time_running"] = 900 + seed
        values = []
        for i in range(nr):
            v = {"value": 10 * seed + i}
            if rf & RF.ID:
                v["id"] = 100 + i
            if rf & RF.LOST:
                v["lost"] = i
            values.append(v)
        out["values"] = values
        return out
    out = {"value": 7 * seed}
    if rf & RF.TOTAL_TIME_ENABLED:
        out["time_enabled"] = 1000 + seed
    if rf & RF.TOTAL_TIME_RUNNING:
        out["time_running"] = 900 + seed
    if rf & RF.ID:
        out["id"] = 100
    if rf & RF.LOST:
        out["lost"] = 3
    return out


def sample_value(attr, seed=1, ident=None):
    """A value for every field the attr's sample_type asks for."""
    st = attr.get("sample_type")
    ident = attr.ids[0] if ident is None and attr.ids else (ident or 0)
    v = {}
    if st & ST.IDENTIFIER:
        v["identifier"] = ident
    if st & ST.IP:
        v["ip"] = 0x400000 + seed
    if st & ST.TID:
        v["pid"], v["tid"] = 1000 + seed, 2000 + seed
    if st & ST.TIME:
        v["time"] = 10_000 + seed
    if st & ST.ADDR:
        v["addr"] = 0x7fff0000 + seed
    if st & ST.ID:
        v["id"] = ident
    if st & ST.STREAM_ID:
        v["stream_id"] = ident + 1
    if st & ST.CPU:
        v["cpu"], v["cpu_res"] = seed % 4, 0
    if st & ST.PERIOD:
        v["period"] = 500 + seed
    if st & ST.READ:
        v["read"] = read_value(attr.get("read_format"), seed)
    if st & ST.CALLCHAIN:
        v["callchain"] = {"nr": 4, "ips": [CallchainContext.KERNEL, 0xffffffff81000000 + seed,
                                           CallchainContext.USER, 0x401000 + seed]}
    if st & ST.RAW:
        v["raw"] = {"size": 12, "data": bytes(range(seed, seed + 12))}
    if st & ST.BRANCH_STACK:
        bs = {"nr": 2, "entries": [{"from_ip": 0x401000 + i, "to_ip": 0x402000 + i,
                                    "flags": i + 1} for i in range(2)]}
        if attr.get("branch_sample_type") & BRANCH_SAMPLE_HW_INDEX:
            bs["hw_idx"] = 5
        v["branch_stack"] = bs
    if st & ST.REGS_USER:
        mask = attr.get("sample_regs_user")
        v["regs_user"] = {"abi": 2, "regs": list(range(1, bin(mask).count("1") + 1))}
    if st & ST.STACK_USER:
        v["stack_user"] = {"size": 64, "data": bytes(range(64)), "dyn_size": 40}
    if st & ST.WEIGHT_STRUCT:
        v["weight"] = {"var1_dw": 77, "var2_w": 5, "var3_w": 6}
    elif st & ST.WEIGHT:
        v["weight"] = 77
    if st & ST.DATA_SRC:
        v["data_src"] = 0x1234
    if st & ST.TRANSACTION:
        v["transaction"] = 0x55
    if st & ST.REGS_INTR:
        mask = attr.get("sample_regs_intr")
        v["regs_intr"] = {"abi": 2, "regs": list(range(100, 100 + bin(mask).count("1")))}
    if st & ST.PHYS_ADDR:
        v["phys_addr"] = 0x1000_0000
    if st & ST.CGROUP:
        v["cgroup"] = 42
    if st & ST.DATA_PAGE_SIZE:
        v["data_page_size"] = 4096
    if st & ST.CODE_PAGE_SIZE:
        v["code_page_size"] = 2 << 20
    if st & ST.AUX:
        v["aux"] = {"size": 16, "data": b"\xaa" * 16}
    return v


def make_attr(sample_type, ids, size=128, **fields):
    flags = fields.pop("flags", {"sample_id_all": 1})
    return Attr(attr_value(size, sample_type=sample_type, flags=flags, **fields), ids)


# ------------------------------------------------------------------ samples
@BOTH
@pytest.mark.parametrize("weight", [ST.WEIGHT_STRUCT, ST.WEIGHT], ids=["struct", "u64"])
def test_every_sample_field_at_once(little, weight):
    st = (ALL_BITS & ~(ST.WEIGHT | ST.WEIGHT_STRUCT)) | weight
    rf = RF.GROUP | RF.ID | RF.LOST | RF.TOTAL_TIME_ENABLED | RF.TOTAL_TIME_RUNNING
    a1 = make_attr(st, [11, 12], read_format=rf, branch_sample_type=BRANCH_SAMPLE_HW_INDEX,
                   sample_regs_user=X86_REGS, sample_regs_intr=0xf, sample_stack_user=64)
    a2 = make_attr(st, [21], read_format=rf, branch_sample_type=BRANCH_SAMPLE_HW_INDEX,
                   sample_regs_user=X86_REGS, sample_regs_intr=0xf, sample_stack_user=64)
    b = Builder(little)
    values = [sample_value(a1, 1, 11), sample_value(a2, 2, 21), sample_value(a1, 3, 12)]
    recs = [b.sample(a1, values[0]), b.sample(a2, values[1]), b.sample(a1, values[2])]
    pf, got = read_all(b.file([a1, a2], recs))
    assert [r.type for r in got] == [RT.SAMPLE] * 3
    assert [r.attr.index for r in got] == [0, 1, 0]
    assert [r.time for r in got] == [v["time"] for v in values]
    for rec, value in zip(got, values):
        assert plain(rec.parse()) == plain(value)


@pytest.mark.parametrize("rf", range(32), ids=lambda rf: "rf%#x" % rf)
def test_read_format_combinations(rf):
    for little in (True, False):
        a = make_attr(ST.IP | ST.TID | ST.TIME | ST.ID | ST.READ | ST.PERIOD, [5],
                      read_format=rf)
        b = Builder(little)
        values = [sample_value(a, seed) for seed in (1, 2)]
        pf, got = read_all(b.file([a], [b.sample(a, v) for v in values]))
        assert [plain(r.parse()) for r in got] == plain(values)


@BOTH
@pytest.mark.parametrize("masks", [(X86_REGS, 0), (ARM64_REGS, 0x3), (0x1, 0xff0fff)],
                         ids=["x86", "arm64", "one-reg"])
def test_regs_and_stack(little, masks):
    st = ST.IP | ST.TID | ST.TIME | ST.REGS_USER | ST.STACK_USER | ST.REGS_INTR
    a = make_attr(st, [], sample_regs_user=masks[0], sample_regs_intr=masks[1],
                  sample_stack_user=64)
    b = Builder(little)
    full = sample_value(a, 1)
    # abi 0 (no user regs: a kernel thread) and a zero-size stack
    empty = dict(sample_value(a, 2), regs_user={"abi": 0, "regs": None},
                 stack_user={"size": 0, "data": b"", "dyn_size": None})
    pf, got = read_all(b.file([a], [b.sample(a, full), b.sample(a, empty)]))
    assert plain(got[0].parse()) == plain(full)
    assert plain(got[1].parse()) == plain(empty)
    assert bytes(got[0].parse()["stack_user"]["data"]) == bytes(range(64))


@BOTH
def test_branch_stack_with_and_without_hw_idx(little):
    b = Builder(little)
    for bst in (0, BRANCH_SAMPLE_HW_INDEX):
        a = make_attr(ST.IP | ST.TID | ST.BRANCH_STACK, [], branch_sample_type=bst)
        value = sample_value(a)
        pf, got = read_all(b.file([a], [b.sample(a, value)]))
        out = got[0].parse()
        assert plain(out) == plain(value)
        assert ("hw_idx" in out["branch_stack"]) == bool(bst)


# -------------------------------------------------------------- record types
TRAILER_ST = ST.TID | ST.TIME | ST.ID | ST.STREAM_ID | ST.CPU | ST.IDENTIFIER


def kernel_values(b):
    """(type, value) of every kernel record 1..21 but SAMPLE and READ."""
    return [
        (RT.MMAP, {"pid": 1, "tid": 2, "start": 0x400000, "len": 0x1000, "pgoff": 0,
                   "filename": "/bin/true"}),
        (RT.LOST, {"id": 11, "lost": 9}),
        (RT.COMM, {"pid": 1, "tid": 2, "comm": "true"}),
        (RT.EXIT, {"pid": 1, "ppid": 0, "tid": 2, "ptid": 0, "time": 5}),
        (RT.THROTTLE, {"time": 6, "id": 11, "stream_id": 12}),
        (RT.UNTHROTTLE, {"time": 7, "id": 11, "stream_id": 12}),
        (RT.FORK, {"pid": 3, "ppid": 1, "tid": 3, "ptid": 2, "time": 8}),
        (RT.AUX, {"aux_offset": 0, "aux_size": 4096, "flags": 1}),
        (RT.ITRACE_START, {"pid": 1, "tid": 2}),
        (RT.LOST_SAMPLES, {"lost": 4}),
        (RT.SWITCH, {}),
        (RT.SWITCH_CPU_WIDE, {"next_prev_pid": 5, "next_prev_tid": 6}),
        (RT.NAMESPACES, {"pid": 1, "tid": 2, "nr_namespaces": 2,
                         "link_info": [{"dev": 1, "ino": 2}, {"dev": 3, "ino": 4}]}),
        (RT.KSYMBOL, {"addr": 0xffffffffc0000000, "len": 64, "ksym_type": 1, "flags": 0,
                      "name": "bpf_prog_x"}),
        (RT.BPF_EVENT, {"type": 1, "flags": 0, "id": 9, "tag": b"12345678"}),
        (RT.CGROUP, {"id": 3, "path": "/sys/fs/cgroup/x"}),
        (RT.TEXT_POKE, {"addr": 0xffffffff81000000, "old_len": 2, "new_len": 3,
                        "old_bytes": b"\x90\x90", "new_bytes": b"\xcc\xcc\xcc"}),
        (RT.AUX_OUTPUT_HW_ID, {"hw_id": 77}),
    ]


def mmap2_body(b, build_id=False):
    """MMAP2 through its schema, in one of the forms of the 24 bytes after pgoff."""
    common = {"pid": 1, "tid": 2, "start": 0x7f0000000000, "len": 0x2000, "pgoff": 0x1000,
              "prot": 5, "flags": 2, "filename": "/lib/libc.so.6"}
    if build_id:
        schema = body_schemas(b.little)["MMAP2_build_id"]
        form = {"build_id_size": 20, "reserved1": 0, "reserved2": 0,
                "build_id": bytes(range(20))}
    else:
        schema = body_schemas(b.little)[RT.MMAP2]
        form = {"maj": 8, "min": 1, "ino": 1234, "ino_generation": 5}
    return Builder.pad8(schema.build({**common, **form}))


USER_VALUES = [
    (RT.HEADER_EVENT_TYPE, {"event_id": 1, "name": "cycles"}),
    (RT.HEADER_BUILD_ID, {"pid": -1, "build_id": bytes(range(20)), "build_id_size": 20,
                          "reserved1": 0, "reserved2": 0, "filename": "/bin/true"}),
    (RT.FINISHED_ROUND, {}),
    (RT.ID_INDEX, {"nr": 2, "entries": [{"id": 11, "idx": 0, "cpu": 0, "tid": 1},
                                        {"id": 22, "idx": 1, "cpu": 1, "tid": 1}],
                   "entries2": []}),
    (RT.AUXTRACE_INFO, {"type": 1, "reserved": 0, "priv": [1, 2, 3]}),
    (RT.AUXTRACE_ERROR, {"type": 1, "code": 2, "cpu": 0, "pid": 1, "tid": 2, "fmt": 1,
                         "ip": 0x401000, "msg": "bad packet", "extra": b""}),
    (RT.THREAD_MAP, {"nr": 2, "entries": [{"pid": 1, "comm": "a"}, {"pid": 2, "comm": "b"}]}),
    (RT.CPU_MAP, {"type": 0, "map": {"nr": 2, "cpu": [0, 1]}}),
    (RT.STAT_CONFIG, {"nr": 1, "data": [{"tag": 1, "val": 2}]}),
    (RT.STAT, {"id": 11, "cpu": 0, "thread": 0, "val": 5, "ena": 6, "run": 7}),
    (RT.STAT_ROUND, {"type": 0, "time": 99}),
    (RT.EVENT_UPDATE, {"type": 2, "id": 11, "data": {"name": "renamed"}}),
    (RT.TIME_CONV, {"time_shift": 10, "time_mult": 20, "time_zero": 30,
                    "ext": {"time_cycles": 1, "time_mask": 2, "cap_user_time_zero": 1,
                            "cap_user_time_short": 0, "reserved": bytes(6)}}),
    (RT.FINISHED_INIT, {}),
]


def everything(little):
    """A pipe file with every record type 1..21 and 64..83, and what each holds."""
    b = Builder(little)
    a1 = make_attr(TRAILER_ST | ST.IP | ST.PERIOD | ST.READ, [11], read_format=RF.ID)
    a2 = make_attr(TRAILER_ST | ST.IP | ST.PERIOD | ST.READ, [22], read_format=RF.ID)
    recs, expect = [], []        # expect: (type, value or None, compressed)
    for i, (rtype, value) in enumerate(kernel_values(b)):
        attr, ident = (a1, 11) if i % 2 == 0 else (a2, 22)
        trailer = {"pid": 1, "tid": 2, "time": 100 + i, "id": ident, "stream_id": ident,
                   "cpu": 1, "cpu_res": 0, "identifier": ident}
        recs.append(b.kernel_record(rtype, value, attr, **trailer))
        expect.append((rtype, value, trailer, attr.ids[0]))
    read_body = struct.pack(b.u + "II", 1, 2) + read_format_schema(RF.ID, little).build(
        {"value": 5, "id": 22})
    trailer = {"pid": 1, "tid": 2, "time": 300, "id": 22, "stream_id": 22, "cpu": 1,
               "cpu_res": 0, "identifier": 22}
    recs.append(b.record(RT.READ, read_body + b.trailer(a2, **trailer)))
    expect.append((RT.READ, {"pid": 1, "tid": 2, "values": {"value": 5, "id": 22}},
                   trailer, 22))
    sv = sample_value(a1, 3, 11)
    recs.append(b.sample(a1, sv))
    expect.append((RT.SAMPLE, sv, None, 11))
    recs.append(b.record(RT.MMAP2, mmap2_body(b) + b.trailer(a1, **trailer)))
    expect.append((RT.MMAP2, {"maj": 8, "min": 1, "ino": 1234, "ino_generation": 5,
                              "prot": 5, "flags": 2, "filename": "/lib/libc.so.6"}, trailer, 22))
    recs.append(b.record(RT.MMAP2, mmap2_body(b, True) + b.trailer(a1, **trailer),
                         misc=1 << 14))
    expect.append((RT.MMAP2, {"build_id": bytes(range(20)).hex()}, trailer, 22))
    for rtype, value in USER_VALUES:
        recs.append(b.record(rtype, b.body(rtype, value)))
        expect.append((rtype, value, None, None))
    # payload-carrying records
    recs.append(b.record(RT.HEADER_TRACING_DATA, b.body(RT.HEADER_TRACING_DATA,
                                                        {"size": 16})) + bytes(16))
    expect.append((RT.HEADER_TRACING_DATA, {"size": 16}, None, None))
    aux = {"size": 24, "offset": 0, "reference": 1, "idx": 0, "tid": 2, "cpu": 0,
           "reserved": 0}
    recs.append(b.record(RT.AUXTRACE, b.body(RT.AUXTRACE, aux)) + b"\x55" * 24)
    expect.append((RT.AUXTRACE, aux, None, None))
    host = build_feature(Feature.HOSTNAME, "synth-host", little)
    recs.append(b.record(RT.HEADER_FEATURE, b.body(RT.HEADER_FEATURE,
                                                   {"feat_id": Feature.HOSTNAME, "data": host})))
    expect.append((RT.HEADER_FEATURE, {"feat_id": Feature.HOSTNAME}, None, None))
    # zstd: COMPRESSED and COMPRESSED2 each holding a COMM
    inner = b.kernel_record(RT.COMM, {"pid": 9, "tid": 9, "comm": "inner"}, a1, **trailer)
    cctx = zstandard.ZstdCompressor().compressobj()
    first = cctx.compress(inner) + cctx.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    second = cctx.compress(inner) + cctx.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    recs.append(b.record(RT.COMPRESSED, b.body(RT.COMPRESSED, {"data": first})))
    expect.append((RT.COMPRESSED, None, None, None))
    expect.append((RT.COMM, {"pid": 9, "tid": 9, "comm": "inner"}, trailer, 22))
    pad = (-len(second)) % 8
    recs.append(b.record(RT.COMPRESSED2, b.body(RT.COMPRESSED2, {
        "data_size": len(second), "data": second + bytes(pad)})))
    expect.append((RT.COMPRESSED2, None, None, None))
    expect.append((RT.COMM, {"pid": 9, "tid": 9, "comm": "inner"}, trailer, 22))
    data = b.pipe([a1, a2], recs)
    return data, [(RT.HEADER_ATTR, None, None, None)] * 2 + expect


@BOTH
def test_every_record_type(little):
    data, expect = everything(little)
    pf, got = read_all(data, include_compressed=True)
    assert [r.type for r in got] == [e[0] for e in expect]
    types = {r.type for r in got}
    assert types == set(range(1, 22)) | set(range(64, 84))
    for rec, (rtype, value, trailer, ident) in zip(got, expect):
        if value is None:
            continue
        out = rec.parse()
        for key, want in value.items():
            assert plain(out[key]) == plain(want), (rec, key)
        if trailer is not None:
            assert plain(out["sample_id"]) == trailer, rec
        if ident is not None:
            assert ident in rec.attr.ids, rec
    assert [r.compressed for r in got].count(True) == 2
    assert pf.feature(Feature.HOSTNAME) == "synth-host"
    aux = [r for r in got if r.type == RT.AUXTRACE][0]
    assert aux.payload_size == 24 and data[aux.payload_offset:aux.payload_offset + 24] == \
        b"\x55" * 24


def test_big_endian_reads_as_little_endian():
    le, _ = everything(True)
    be, _ = everything(False)

    def summary(data):
        pf, got = read_all(data, include_compressed=True)
        out = []
        for r in got:
            if r.type in (RT.COMPRESSED, RT.COMPRESSED2):
                continue        # zstd bytes of a BE stream differ
            parsed = plain(r.parse())
            if r.type == RT.HEADER_FEATURE:
                parsed["data"] = pf.feature(parsed["feat_id"])
            out.append((r.type, r.misc, r.size, r.time, parsed))
        return out
    assert summary(le) == summary(be)


# ----------------------------------------------------------------- attr sizes
@BOTH
@pytest.mark.parametrize("size", [64, 72, 80, 96, 104, 112, 120, 128, 136, 144, 152])
def test_attr_sizes(little, size):
    fields = {"config": 3, "sample_period": 4000}
    if size >= 80:
        fields["branch_sample_type"] = 0
    if size >= 96:
        fields["sample_regs_user"] = X86_REGS
    if size >= 136:
        fields["config3"] = 0x33
    if size == 152:
        fields["unknown_tail"] = b"\x01\x02\x03\x04\x05\x06\x07\x08"
    st = ST.IP | ST.TID | ST.TIME | ST.PERIOD | (ST.REGS_USER if size >= 96 else 0)
    a = make_attr(st, [7], size=size, type=1, **fields)
    b = Builder(little)
    value = sample_value(a)
    for data in (b.file([a], [b.sample(a, value)]), b.pipe([a], [b.sample(a, value)])):
        pf, got = read_all(data)
        ea = pf.attrs[0]
        assert ea.attr["size"] == size
        assert ea.attr["config"] == 3 and ea.attr["sample_period"] == 4000
        assert ea.sample_type == st and ea.ids == [7]
        assert ea.attr["sample_regs_user"] == (X86_REGS if size >= 96 else 0)
        assert ea.attr.get("config3", 0) == (0x33 if size >= 136 else 0)
        if size == 152:
            assert bytes(ea.unknown_tail) == fields["unknown_tail"]
        assert plain(got[-1].parse()) == plain(value)


@BOTH
def test_attr_size_field_zero_means_64(little):
    a = make_attr(ST.IP | ST.TID, [], size=64)
    a.value["size"] = 0
    b = Builder(little)
    value = sample_value(Attr(dict(a.value, size=64)))
    pf, got = read_all(b.file([a], [b.sample(a, value)], attr_size=64 + 16))
    assert pf.attrs[0].sample_type == ST.IP | ST.TID
    assert plain(got[0].parse()) == plain(value)


@BOTH
def test_old_perffile_magic(little):
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD, [1])
    b = Builder(little)
    recs = [b.sample(a, sample_value(a, i)) for i in range(5)]
    host = {Feature.HOSTNAME: build_feature(Feature.HOSTNAME, "old", little)}
    v2 = read_all(b.file([a], recs, host))[1]
    pf, v1 = read_all(b.file([a], recs, host, magic=MAGIC_V1))
    assert pf.little == little
    assert [plain(r.parse()) for r in v1] == [plain(r.parse()) for r in v2]
    assert pf.feature(Feature.HOSTNAME) == "old"


@BOTH
def test_features_in_both_byte_orders(little):
    a = make_attr(ST.IP | ST.TID, [1])
    b = Builder(little)
    feats = {Feature.HOSTNAME: build_feature(Feature.HOSTNAME, "h", little),
             Feature.OSRELEASE: build_feature(Feature.OSRELEASE, "6.1.0", little),
             Feature.NRCPUS: build_feature(Feature.NRCPUS, {"nr_cpus_online": 2,
                                                            "nr_cpus_available": 4}, little)}
    pf = open_bytes(b.file([a], [b.sample(a, sample_value(a))], feats))
    assert pf.feature(Feature.HOSTNAME) == "h"
    assert pf.feature(Feature.OSRELEASE) == "6.1.0"
    assert plain(pf.feature(Feature.NRCPUS)) == {"nr_cpus_online": 2, "nr_cpus_available": 4}
    assert pf.feature(Feature.CMDLINE) is None


# ----------------------------------------------------------------- pipe mode
def pipe_file(little=True, n=50):
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD, [1])
    b = Builder(little)
    recs = [b.kernel_record(RT.COMM, {"pid": 1, "tid": 1, "comm": "x"}, a, time=1)]
    recs += [b.sample(a, sample_value(a, i)) for i in range(n)]
    return b.pipe([a], recs)


class _Unseekable(io.RawIOBase):
    def __init__(self, data):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buf):
        chunk = self._data.read(min(len(buf), 7))     # short reads, as a pipe gives
        buf[:len(chunk)] = chunk
        return len(chunk)


@BOTH
def test_pipe_from_streams(little):
    data = pipe_file(little)
    expected = [plain(r.parse()) for r in read_all(data)[1]]
    assert len(expected) == 52      # HEADER_ATTR, COMM, 50 SAMPLEs
    for stream in (io.BytesIO(data), io.BufferedReader(_Unseekable(data))):
        pf = perfdata.open(stream)
        assert pf.is_pipe
        assert [plain(r.parse()) for r in pf.records(order="file")] == expected
    r, w = os.pipe()

    def writer():
        with os.fdopen(w, "wb") as f:
            f.write(data)
    t = threading.Thread(target=writer)
    t.start()
    with os.fdopen(r, "rb") as f:
        pf = perfdata.open(f)
        assert [plain(x.parse()) for x in pf.records(order="file")] == expected
    t.join()


def test_pipe_from_raw_stream_with_short_reads():
    data = pipe_file(True)
    pf = perfdata.open(_Unseekable(data))
    assert len(list(pf.records(order="file"))) == 52


def test_pipe_attrs_known_after_open():
    pf = perfdata.open(io.BytesIO(pipe_file()))
    assert len(pf.attrs) == 1 and pf.attrs[0].ids == [1]


def test_pipe_from_stdin_subprocess():
    data = pipe_file(True, 200)
    rc, want, _ = run_cli(["stats", _write_tmp(data)])
    assert rc == 0
    res = subprocess.run([sys.executable, "-c", "import sys, cli; sys.exit(cli.main())",
                          "stats", "-"], input=data, capture_output=True, cwd=str(REPO),
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode() == want
    assert "SAMPLE events:        200" in want


def _write_tmp(data):
    import tempfile
    f = tempfile.NamedTemporaryFile(suffix=".data", delete=False)
    f.write(data)
    f.close()
    return f.name


# ----------------------------------------------------------------- zstd
@BOTH
@pytest.mark.parametrize("cut", [3, 8, 13, 29])
def test_compressed_records_straddle(little, cut):
    """perf keeps one zstd stream; a record may start in one COMPRESSED record
    and end in the next.  Split the stream `cut` bytes into the 6th record."""
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD | ST.CALLCHAIN, [1])
    b = Builder(little)
    values = [sample_value(a, i) for i in range(20)]
    inner = [b.sample(a, v) for v in values]
    stream = b"".join(inner)
    split = sum(len(r) for r in inner[:5]) + cut
    cctx = zstandard.ZstdCompressor(level=3).compressobj()
    chunks = []
    for piece in (stream[:split], stream[split:split + 100], stream[split + 100:]):
        chunks.append(cctx.compress(piece) + cctx.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
    recs = [b.record(RT.COMPRESSED, b.body(RT.COMPRESSED, {"data": c})) for c in chunks]
    pf, got = read_all(b.file([a], recs))
    assert [plain(r.parse()) for r in got] == plain(values)
    assert all(r.compressed for r in got)
    pf, got = read_all(b.file([a], recs), include_compressed=True)
    assert [r.type for r in got].count(RT.COMPRESSED) == 3


# ------------------------------------------------------------- round order
def perf_round_order(events):
    """perf 6.1's ordered_events (tools/perf/util/ordered-events.c): at each
    FINISHED_ROUND deliver the queued events with time <= next_flush, then set
    next_flush = max_timestamp; the rest at the end.  max_timestamp is the time
    of the last event that went to the tail of the queue (queue_event()), so
    after a round empties the queue it can go down.  Equal times keep arrival
    order.  events: list of time or 'ROUND'; returns positions in delivery order."""
    queue, out = [], []
    next_flush, max_timestamp = 0, 0
    for seq, ev in enumerate(events):
        if ev == "ROUND":
            ready = sorted((t, s) for t, s in queue if t <= next_flush)
            out += [s for _, s in ready]
            queue = [(t, s) for t, s in queue if t > next_flush]
            next_flush = max_timestamp
        else:
            if not queue or ev >= max(t for t, _ in queue):
                max_timestamp = ev
            queue.append((ev, seq))
    out += [s for _, s in sorted(queue)]
    return out


def _timed_file(events):
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD, [1])
    b = Builder(True)
    recs = []
    for seq, ev in enumerate(events):
        if ev == "ROUND":
            recs.append(b.record(RT.FINISHED_ROUND, b""))
        else:
            value = sample_value(a, 1)
            value.update(time=ev, period=seq)
            recs.append(b.sample(a, value))
    return b.file([a], recs)


# checked against perf 6.1 in test_reader_perf.test_round_order_equals_perf
ROUND_CASES = {
    "limit-goes-down": [1000, "ROUND", 5000, "ROUND", "ROUND", 3000, 4000, "ROUND", 4500,
                        4200, "ROUND", 4100],
    "equal-times": [10, 10, 20, "ROUND", 10, 20, 20, "ROUND", 15, "ROUND", 20, 10],
}


@pytest.mark.parametrize("case", ROUND_CASES)
def test_time_order_cases(case):
    events = ROUND_CASES[case]
    pf = open_bytes(_timed_file(events))
    got = [r.parse()["period"] for r in pf.records(order="time") if r.type == RT.SAMPLE]
    assert got == perf_round_order(events)


def test_out_of_order_records_are_counted_once():
    """perf's count of records queued below the last time a round delivered
    (checked against perf in test_reader_perf): 10 after 200 was delivered,
    5 after 10; said once however often the records are read."""
    pf = open_bytes(_timed_file([100, 200, "ROUND", 50, 60, "ROUND", 10, "ROUND", 5]))
    for _ in range(2):
        assert len(list(pf.records())) == 9
    assert pf.warnings == ["2 out of order events recorded."]
    pf = open_bytes(_timed_file([10, 20, "ROUND", 20, 30, "ROUND", 25, "ROUND", 40]))
    list(pf.records())
    assert not pf.warnings


@pytest.mark.parametrize("seed", range(8))
def test_time_order_across_rounds(seed):
    rnd = random.Random(seed)
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD, [1])
    b = Builder(True)
    events, recs = [], []
    base = 5000
    for round_no in range(6):
        if rnd.random() < 0.3:
            base -= 900          # a late CPU buffer: times below those delivered
        for _ in range(rnd.randint(0, 12)):
            # times overlap the previous round's, as two CPUs' buffers do
            t = max(1, base + rnd.randint(-300, 500))
            events.append(t)
        base += 400
        events.append("ROUND")
    for seq, ev in enumerate(events):
        if ev == "ROUND":
            recs.append(b.record(RT.FINISHED_ROUND, b""))
        else:
            value = sample_value(a, 1)
            value.update(time=ev, period=seq)
            recs.append(b.sample(a, value))
    pf = open_bytes(b.file([a], recs))
    got = [r.parse()["period"] for r in pf.records(order="time") if r.type == RT.SAMPLE]
    assert got == perf_round_order(events)


# -------------------------------------------------------------- regressions
REGRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "regressions")


def test_regression_inputs_are_reproducible():
    from regressions import make_inputs
    for name, make in make_inputs.INPUTS.items():
        with open(os.path.join(REGRESSIONS, name), "rb") as f:
            assert f.read() == make(), name


def test_regression_mmap2_without_prot_flags():
    pf = perfdata.open(os.path.join(REGRESSIONS, "mmap2_pre316.data"))
    names = [r.parse()["filename"] for r in pf.records(order="file") if r.type == RT.MMAP2]
    assert names == ["[stack]", "/usr/bin/true"]


@BOTH
def test_pipe_build_id_records_read_as_the_feature(little):
    """Pipe mode's HEADER_BUILD_ID records carry the BUILD_ID feature's layout:
    both forms give the same {file: build-id}."""
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD, [1])
    b = Builder(little)
    ids = {"/usr/bin/true": bytes(range(20)), "[kernel.kallsyms]": bytes(range(20, 40))}
    recs = [b.record(RT.HEADER_BUILD_ID, b.body(RT.HEADER_BUILD_ID, {
        "pid": -1, "build_id": bid, "build_id_size": 20, "reserved1": 0, "reserved2": 0,
        "filename": name}), misc=1 << 15) for name, bid in ids.items()]
    recs += [b.sample(a, sample_value(a, i)) for i in range(3)]
    pf = perfdata.open(io.BytesIO(b.pipe([a], recs)))
    list(pf.records())
    assert pf.recorded_build_ids() == {name: bid.hex() for name, bid in ids.items()}


def test_feature_read_while_records_stream(tmp_path):
    """A feature section read in the middle of the record walk (the
    symbolizer asks for OSRELEASE lazily) must not move the walk: the file
    object is shared, and the data section's next 1 MiB chunk is read from
    where the walk left off.  (It read from the feature's offset: zeros, a
    'record size 0' error in strict mode, lost records otherwise.)"""
    import struct
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD, [])
    b = Builder()
    values = [sample_value(a, seed) for seed in range(60000)]       # ~2.4 MiB of records
    release = b"6.1.0-test\0\0\0\0\0\0"        # perf's string: u32 length, padded text
    data = b.file([a], [b.sample(a, v) for v in values],
                  features={Feature.OSRELEASE: struct.pack("<I", len(release)) + release})
    path = tmp_path / "big.data"
    path.write_bytes(data)
    assert len(data) > 2 << 20
    with perfdata.open(str(path), strict=True) as pf:
        times = []
        for i, rec in enumerate(pf.records(order="file")):
            if i == 1000:
                pf.feature(Feature.OSRELEASE)           # mid-walk, before the first refill
            times.append(rec.time)
    assert times == [v["time"] for v in values]
