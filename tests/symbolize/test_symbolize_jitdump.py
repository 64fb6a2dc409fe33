"""symbolize/symbols/jitdump.py on jitdumps built here byte by byte (the layout of
perf's tools/perf/util/jitdump.h), whose code loads are known by
construction: code space reused in time, a move, a record cut by the end,
both byte orders."""
import struct

from symbolize.symbols.jitdump import JitDump, is_jitdump_path
from symbolize.unwind.jit import JitUnwinding


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


def _unwinding(order, ts, code_start, code_size):
    """A CODE_UNWINDING_INFO record as CPython 3.13's perf_jit writes it for
    a trampoline `push rbp; ...; pop rbp; ret`: one CIE, one FDE (pc_begin
    pcrel sdata4) and an .eh_frame_hdr (pcrel eh_frame_ptr, datarel table),
    all relative to the place perf inject's ELF file gives them: .eh_frame at
    ALIGN_8(the code's end), the header right after."""
    cie_body = (struct.pack(order + "IB", 0, 1) + b"zR\0" + bytes([1, 0x78, 16, 1, 0x1b]) +
                bytes([0x0c, 7, 8, 0x90, 1]))                 # def_cfa r7+8; r16 at cfa-8
    cie_body += b"\0" * (-(len(cie_body) + 4) % 8)
    cie = struct.pack(order + "I", len(cie_body)) + cie_body
    eh_at = code_start + -(-code_size // 8) * 8
    fde_at = eh_at + len(cie)
    insns = bytes([0x44, 0x0e, 16, 0x46, 0x0e, 8])            # +4: cfa+16; +6: cfa+8
    fde_body = struct.pack(order + "IiIB", len(cie) + 4, code_start - (fde_at + 8), code_size,
                           0) + insns
    fde_body += b"\0" * (-(len(fde_body) + 4) % 8)
    eh_frame = cie + struct.pack(order + "I", len(fde_body)) + fde_body
    hdr_at = eh_at + len(eh_frame)
    hdr = bytes([1, 0x1b, 0x03, 0x3b]) + struct.pack(
        order + "iIii", eh_at - (hdr_at + 4), 1, code_start - hdr_at, fde_at - hdr_at)
    data = eh_frame + hdr
    body = struct.pack(order + "QQQ", len(data), len(hdr), -(-len(data) // 16) * 16) + data
    return (4, ts, body)


def test_unwinding_info_of_each_load():
    """CODE_UNWINDING_INFO goes with the next load, as perf inject puts it
    into that load's ELF file; a move keeps its load's; code without any
    has none; the rows are those of the FDE, at process addresses."""
    for order in "<>":
        records = [_unwinding(order, 90, 0x7f0000001000, 11),
                   _load(order, 100, 0x7f0000001000, 11, 1, "py::f:x.py"),
                   _load(order, 110, 0x7f0000002000, 16, 2, "py::g:x.py"),   # none
                   _unwinding(order, 120, 0x7f0000003008, 11),
                   _load(order, 130, 0x7f0000003008, 11, 3, "py::h:x.py"),
                   _move(order, 140, 0x7f0000003008, 0x7f0000005008, 11, 3)]
        dump = JitDump.parse(_dump(records, order))
        assert dump.warnings == [] and dump.has_unwinding
        table = JitUnwinding(dump).table(None)
        cfa = [(r.cfa_register, r.cfa_offset) if r else None
               for r in (table.rows[0x7f0000001000 + i] for i in range(12))]
        assert cfa == [(7, 8)] * 4 + [(7, 16)] * 6 + [(7, 8), None]
        assert table.fde_range(0x7f0000001003) == (0x7f0000001000, 0x7f000000100b)
        assert table.rows[0x7f0000002004] is None          # the load without info
        # the moved code: its load's info, at the new address from time 140 on
        assert JitUnwinding(dump).table(135).rows[0x7f0000003008 + 5].cfa_offset == 16
        assert JitUnwinding(dump).table(135).rows[0x7f0000005008 + 5] is None
        assert JitUnwinding(dump).table(140).rows[0x7f0000005008 + 5].cfa_offset == 16
        # before the first load nothing is described
        assert JitUnwinding(dump).table(50).rows[0x7f0000001005] is None
        assert JitUnwinding(JitDump.parse(_dump(_records(order), order))).table(None) is None


def test_unwinding_info_walked_through():
    """symbolize.unwind steps out of the JIT code with the dump's table (bias
    0): the trampoline's saved rbp and return address are found."""
    from symbolize.unwind.unwinder import StackSnapshot, UnwindModule, Unwinder
    dump = JitDump.parse(_dump([_unwinding("<", 90, 0x7f0000001000, 11),
                                _load("<", 100, 0x7f0000001000, 11, 1, "py::f:x.py")]))
    module = UnwindModule(JitUnwinding(dump).table(None), 0)
    sp = 0x7ffd0000
    stack = StackSnapshot(sp, struct.pack("<QQ", 0x1234, 0x401005))  # rbp, return address
    step = Unwinder.for_arch("x86_64").step
    ra, regs, _, cfa = step(0x7f0000001005, {7: sp, 6: 0}, "innermost", stack,
                            lambda a: module if 0x7f0000001000 <= a < 0x7f0000001010 else None)
    assert (ra, cfa, regs[7]) == (0x401005, sp + 16, sp + 16)


def test_unwinding_info_bad_sizes():
    """Sizes beyond the record (a damaged dump): the info is not used, the
    record is counted as damaged, and nothing reads past it."""
    bad = (4, 90, struct.pack("<QQQ", 1 << 40, 20, 0) + b"\0" * 40)
    worse = (4, 91, struct.pack("<QQQ", 20, 40, 0) + b"\0" * 40)
    for record in (bad, worse):
        dump = JitDump.parse(_dump([record, _load("<", 100, 0x7f0000001000, 11, 1, "f")]),
                             source="bad.dump")
        assert dump.codes[0].unwind is None and not dump.has_unwinding
        assert dump.warnings and dump.warnings[0].startswith("bad.dump: 1 damaged")
    # an .eh_frame that is garbage: rows are None, never an exception
    junk = (4, 90, struct.pack("<QQQ", 40, 0, 48) + b"\xff" * 40)
    dump = JitDump.parse(_dump([junk, _load("<", 100, 0x7f0000001000, 11, 1, "f")]))
    assert dump.has_unwinding and JitUnwinding(dump).table(None).rows[0x7f0000001004] is None


def test_jitdump_located_as_binaries(tmp_path):
    """Symbolizer.jitdump finds a dump not at its recorded path under
    --debug-dir's path tree, --path-map's NEW or the --symfs root; the
    recorded path is not read when a path-map or symfs covers it."""
    from symbolize import Symbolizer
    from symbolize.debuginfo.locate import DebugInfoLocator
    recorded = "/rec/dir/jit-1234.dump"
    data = _dump(_records("<"))
    for layout in ("dbg", "new", "root"):
        (tmp_path / layout / "rec" / "dir").mkdir(parents=True)
    (tmp_path / "dbg" / "rec" / "dir" / "jit-1234.dump").write_bytes(data)
    (tmp_path / "new" / "jit-1234.dump").write_bytes(data)
    (tmp_path / "root" / "rec" / "dir" / "jit-1234.dump").write_bytes(data)
    for locator in (DebugInfoLocator(debug_dirs=[str(tmp_path / "dbg")]),
                    DebugInfoLocator(path_map=["/rec/dir=%s" % (tmp_path / "new")]),
                    DebugInfoLocator(symfs=str(tmp_path / "root"))):
        sym = Symbolizer(locator)
        assert sym.jit_file(recorded) is not None and len(sym.jitdump(recorded)) == 4
    sym = Symbolizer(DebugInfoLocator(symfs=str(tmp_path / "dbg" / "nothing")))
    assert sym.jit_file(str(tmp_path / "new" / "jit-1234.dump")) is None
    assert Symbolizer(DebugInfoLocator()).jit_file(recorded) is None


def test_code_bytes_of_each_load(tmp_path):
    """Symbolizer.jitdump_code: a load's bytes as the JIT wrote them (after
    its name), a moved code's those of its load, the header's e_machine;
    None for a load the dump does not have."""
    from symbolize import Symbolizer
    from symbolize.debuginfo.locate import DebugInfoLocator
    records = [(0, 100, struct.pack("<IIQQQQ", 1234, 1234, 0x1000, 0x1000, 4, 7) +
                b"f\0" + b"\x55\x48\x89\xe5"),
               _move("<", 200, 0x1000, 0x3000, 4, 7),
               _load("<", 300, 0x2000, 3, 8, "a longer name")]
    path = tmp_path / "jit-1234.dump"
    path.write_bytes(_dump(records))
    sym = Symbolizer(DebugInfoLocator())
    _, index = sym.lookup_jitdump(str(path), 0x3001, 250)
    assert index == 7 and sym.jitdump_code(str(path), 7) == (62, 0x1000, b"\x55\x48\x89\xe5")
    assert sym.jitdump_code(str(path), 8) == (62, 0x2000, b"\x90" * 3)
    assert sym.jitdump_code(str(path), 9) is None
    assert sym.jitdump_code(str(tmp_path / "jit-1.dump"), 7) is None
