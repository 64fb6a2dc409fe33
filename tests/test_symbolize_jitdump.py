"""symbolize/jitdump.py on jitdumps built here byte by byte (the layout of
perf's tools/perf/util/jitdump.h), whose code loads are known by
construction: code space reused in time, a move, a record cut by the end,
both byte orders."""
import struct

from symbolize.jitdump import JitDump, is_jitdump_path


def _dump(records, order="<", flags=0):
    out = [struct.pack(order + "IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, 1234, 1, flags)]
    for kind, ts, body in records:
        out.append(struct.pack(order + "IIQ", kind, 16 + len(body), ts) + body)
    return b"".join(out)


def _load(order, ts, addr, size, index, name):
    body = struct.pack(order + "IIQQQQ", 1234, 1234, addr, addr, size, index) + \
        name.encode() + b"\0" + b"\x90" * size
    return (0, ts, body)


def _move(order, ts, old, new, size, index):
    return (1, ts, struct.pack(order + "IIQQQQQ", 1234, 1234, new, old, new, size, index))


def _records(order):
    return [_load(order, 100, 0x7f0000001000, 0xc58, 1, "JS:*churn"),
            (2, 150, b"\0" * 24),                               # debug info: skipped
            _load(order, 200, 0x7f0000001000, 0x160, 2, "JS:* cmp"),
            _load(order, 300, 0x7f0000004000, 0x40, 3, "py::f:x.py"),
            _move(order, 400, 0x7f0000004000, 0x7f0000005000, 0x40, 3)]


def test_code_at_a_time_and_without_one():
    for order in "<>":
        dump = JitDump.parse(_dump(_records(order), order))
        assert dump.warnings == [] and dump.pid == 1234 and len(dump) == 4
        # the address held churn, then the comparator from time 200 on
        assert dump.lookup(0x7f0000001050, 150).name == "JS:*churn"
        assert dump.lookup(0x7f0000001050, 200).name == "JS:* cmp"
        assert dump.lookup(0x7f0000001050, 99) is None
        # past the comparator's end the older code is still there
        assert dump.lookup(0x7f0000001200, 250).name == "JS:*churn"
        # no time: the last code placed there
        assert dump.lookup(0x7f0000001050).name == "JS:* cmp"
        # the move: the code is at its new address from time 400 on
        moved = dump.lookup(0x7f0000005008, 400)
        assert moved.name == "py::f:x.py" and moved.start == 0x7f0000005000
        assert dump.lookup(0x7f0000005008, 399) is None
        assert dump.lookup(0x7f0000004008, 300).start == 0x7f0000004000
        assert [dump.epoch(t) for t in (50, 100, 250, 400, None)] == [0, 1, 2, 4, 4]


def test_cut_and_bad_input():
    data = _dump(_records("<"))
    cut = JitDump.parse(data[:-5])      # the move record cut by the end
    assert len(cut) == 3 and cut.warnings and "cut" in cut.warnings[0]
    assert len(JitDump.parse(b"JiTD" * 3)) == 0
    assert JitDump.parse(b"\0" * 64).warnings[0].endswith("bad magic)")
    tsc = JitDump.parse(_dump(_records("<"), flags=1))
    assert tsc.arch_timestamps and tsc.lookup(0x7f0000001050, 150).name == "JS:* cmp"


def test_from_file_and_path_rule(tmp_path):
    path = tmp_path / "jit-1234.dump"
    path.write_bytes(_dump(_records("<")))
    assert len(JitDump.from_file(str(path))) == 4
    assert JitDump.from_file(str(tmp_path / "absent")).warnings
    assert is_jitdump_path("/tmp/jit-1234.dump", 1234) and is_jitdump_path("/x/jit-5.dump")
    assert not is_jitdump_path("/tmp/jit-1234.dump", 99)
    assert not is_jitdump_path("/tmp/jit-x.dump") and not is_jitdump_path("/tmp/perf-1.map")


def test_overlapping_loads_bounded():
    """Loads of absurd sizes (a damaged or hostile dump) would cover every
    piece of the address space each: n squared.  Past a budget linear in
    the loads they are left out, with a warning; the others still answer."""
    records = [_load("<", 1, 0x1000, 0x10, 1, "real")]
    for i in range(20000):
        body = struct.pack("<IIQQQQ", 1234, 1234, 0, 0x2000 + 16 * i, 1 << 40, 2 + i) + b"x\0"
        records.append((0, 10 + i, body))
    dump = JitDump.parse(_dump(records), source="hostile.dump")
    assert dump.lookup(0x1008, 5).name == "real"
    assert len(dump.warnings) == 1 and dump.warnings[0].startswith("hostile.dump: ")
    assert "left out" in dump.warnings[0]
    left_out = int(dump.warnings[0].split()[1])
    assert 19000 < left_out < 20000 and len(dump) == 20001
