"""The decoders derived from the construct schemas (perfdata/format/fastpath.py)
give what construct's own parse gives, on any bytes, for every layout a
sample can have; and they refuse hostile counts and lengths without reading
or allocating past the record."""
import struct

import construct as cs
import pytest
from hypothesis import given, settings, strategies as st

from perfdata.format.constants import ReadFormat as RF, SampleType as ST
from perfdata.format.fastpath import DecodeError, derive_decoder
from perfdata.format.constructs import to_builtins
from perfdata.format.records import body_schemas
from perfdata.format.sample import sample_id_schema, sample_schema

SAMPLE_BITS = [b for b in ST if b not in (ST.WEIGHT_STRUCT,) and b.bit_count() == 1]


def _both(schema, data):
    """(construct's result or None, the derived decoder's result or None)."""
    try:
        theirs = to_builtins(schema.parse(data))
    except (cs.ConstructError, struct.error, UnicodeDecodeError):
        theirs = None
    try:
        ours, _ = derive_decoder(schema)(data, 0, len(data))
        ours = to_builtins(ours)
    except DecodeError:
        ours = None
    return theirs, ours


@settings(max_examples=300, deadline=None)
@given(bits=st.lists(st.sampled_from(SAMPLE_BITS), unique=True, max_size=12),
       weight_struct=st.booleans(),
       read_format=st.integers(0, 31), regs=st.integers(0, (1 << 24) - 1),
       little=st.booleans(), data=st.binary(max_size=300))
def test_sample_decoder_equals_construct(bits, weight_struct, read_format, regs, little, data):
    sample_type = 0
    for b in bits:
        sample_type |= b
    if weight_struct:
        sample_type |= ST.WEIGHT_STRUCT
    schema = sample_schema(sample_type, read_format, 0, regs, regs >> 3, little)
    theirs, ours = _both(schema, data)
    if theirs is None:
        assert ours is None
    else:
        # construct ignores bytes after the last field, as the decoder does
        assert ours == theirs


@settings(max_examples=100, deadline=None)
@given(sample_type=st.integers(0, (1 << 24) - 1), data=st.binary(max_size=64))
def test_trailer_decoder_equals_construct(sample_type, data):
    theirs, ours = _both(sample_id_schema(sample_type, True), data)
    assert ours == theirs


def _derivable_record_types():
    """Record types whose body schema the deriver handles (the others, such
    as a CPU_MAP with its Switch, are parsed by construct itself)."""
    out = []
    for rtype, schema in body_schemas(True).items():
        if not isinstance(rtype, int):
            continue
        try:
            derive_decoder(schema)
        except Exception:
            continue
        out.append(int(rtype))
    return sorted(out)


@pytest.mark.parametrize("rtype", _derivable_record_types())
def test_record_bodies_equal_construct(rtype):
    schema = body_schemas(True)[rtype]
    for n in (0, 7, 40, 64, 100):
        data = bytes(range(n)) + b"\0" * 8
        theirs, ours = _both(schema, data)
        if theirs is not None:
            assert ours == theirs


def test_hostile_callchain_count_is_refused_before_reading():
    schema = sample_schema(ST.IP | ST.CALLCHAIN)
    body = struct.pack("<QQ", 0x400000, 1 << 60) + b"\0" * 16
    with pytest.raises(DecodeError) as exc:
        derive_decoder(schema)(body, 0, len(body))
    assert exc.value.field == "ips"
    assert "exceeds" in str(exc.value)


def test_hostile_group_read_count_is_refused():
    schema = sample_schema(ST.READ, RF.GROUP | RF.ID)
    body = struct.pack("<QQQ", 1 << 40, 5, 6)
    with pytest.raises(DecodeError) as exc:
        derive_decoder(schema)(body, 0, len(body))
    assert exc.value.field == "values"


def test_stack_copy_is_a_view_of_the_record():
    schema = sample_schema(ST.STACK_USER)
    body = memoryview(struct.pack("<Q", 16) + bytes(range(16)) + struct.pack("<Q", 12))
    out, end = derive_decoder(schema)(body, 0, len(body))
    assert isinstance(out["stack_user"]["data"], memoryview)
    assert bytes(out["stack_user"]["data"]) == bytes(range(16))
    assert out["stack_user"]["dyn_size"] == 12 and end == len(body)


@pytest.mark.parametrize("little", [True, False])
def test_weight_struct_members_in_the_writers_order(little):
    """union perf_sample_weight: var1_dw, var2_w, var3_w on little-endian
    machines; var3_w, var2_w, var1_dw on big-endian ones (bitfield order)."""
    schema = sample_schema(ST.WEIGHT_STRUCT, little=little)
    body = struct.pack("<IHH", 225, 7, 3) if little else struct.pack(">HHI", 3, 7, 225)
    out, _ = derive_decoder(schema)(body, 0, len(body))
    assert out["weight"] == {"var1_dw": 225, "var2_w": 7, "var3_w": 3}


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["MMAP2", "MMAP2_build_id", "MMAP2_pre316", "COMM", "MMAP"]),
       little=st.booleans(),
       head=st.one_of(st.binary(min_size=56, max_size=72), st.binary(max_size=72)),
       name=st.one_of(st.binary(max_size=12), st.sampled_from([b"/usr/bin/ls", b"\xff\xfe",
                                                                b"caf\xc3\xa9"])),
       nul=st.booleans())
def test_side_record_decoders_equal_construct(kind, little, head, name, nul):
    # (names that are not UTF-8 are refused by both)
    from perfdata.format.constants import RecordType as RT
    schema = body_schemas(little)[kind if kind.startswith("MMAP2_") else RT[kind]]
    data = head + name + (b"\0" if nul else b"")
    theirs, ours = _both(schema, data)
    assert ours == theirs


def test_side_records_of_the_samples_decode_as_construct_parses_them():
    """Every non-sample record of the bundled recordings: the reader's
    decoding (derived decoders where they derive) equals construct's."""
    import glob
    import os

    import perfdata
    from perfdata.format import decoder
    from perfdata.format.constants import RecordType as RT
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "samples")
    seen = set()
    for path in sorted(glob.glob(os.path.join(here, "*.data"))):
        pf = perfdata.open(path)
        for rec in pf.records("file"):
            if rec.type == RT.SAMPLE or rec.type >= RT.HEADER_ATTR:
                continue
            ours = rec.parse()
            schemas = body_schemas(pf.little)
            schema = schemas.get(rec.type)
            if schema is None:
                continue
            body = rec.body
            if rec.attr is not None and rec.attr.sample_id_all:
                body = body[:len(body) - rec.attr.trailer_size]
            if rec.type == RT.MMAP2:
                schema = schemas[decoder.mmap2_form(body, rec.misc)]
            theirs = to_builtins(schema.parse(body))
            if rec.type == RT.MMAP2 and "build_id_size" in theirs:
                decoder._build_id_as_hex(theirs)
            ours = {k: v for k, v in ours.items() if k != "sample_id"}
            assert ours == theirs, (path, rec)
            seen.add(rec.type)
    assert {RT.MMAP2, RT.COMM} <= seen
