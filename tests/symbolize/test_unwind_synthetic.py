"""The unwinder on stacks built by hand, whose frames are known by
construction: aarch64 (no aarch64 machine here), and every stop reason.
The CFI is assembled here byte by byte as a compiler would emit it."""

import random
import struct

from symbolize.unwind.arch import AARCH64, X86_64, get_arch
from symbolize.unwind.cfi import CfiTable
from symbolize.unwind.unwinder import (INNERMOST, STOP_REASONS, StackSnapshot, UnwindModule,
                              Unwinder, UnwindStop, unwind_dwarf)
from limits import sleb, uleb

EH_ADDR = 0x100000      # where the synthetic .eh_frame "is loaded"


def pad(body):
    # entries are 4 + len(body) long, padded with DW_CFA_nop to 8 bytes
    return body + b"\0" * (-(len(body) + 4) % 8)


class EhFrame:
    """Assembles a .eh_frame: one CIE ("zR", pcrel|sdata4), then FDEs."""

    def __init__(self, ra_column, code_align, data_align, initial):
        body = (struct.pack("<I", 0) + b"\x01" + b"zR\0" + uleb(code_align)
                + sleb(data_align) + uleb(ra_column) + uleb(1) + b"\x1b" + initial)
        body = pad(body)
        self.data = bytearray(struct.pack("<I", len(body)) + body)

    def fde(self, start, size, instructions=b""):
        offset = len(self.data)
        cie_pointer = offset + 4                    # distance back to the CIE at 0
        loc_field = EH_ADDR + offset + 8
        body = (struct.pack("<I", cie_pointer) + struct.pack("<i", start - loc_field)
                + struct.pack("<I", size) + uleb(0) + instructions)
        body = pad(body)
        self.data += struct.pack("<I", len(body)) + body
        return self

    def table(self):
        return CfiTable.from_sections(bytes(self.data) + b"\0\0\0\0", EH_ADDR)


def stack_from(base, words):
    return StackSnapshot(base, b"".join(struct.pack("<Q", w) for w in words))


def one_module(cfi, lo=0x1000, hi=0x10000):
    mod = UnwindModule(cfi, 0)
    return lambda avma: mod if lo <= avma < hi else None


# DW_CFA opcodes used below
def def_cfa(reg, off):
    return b"\x0c" + uleb(reg) + uleb(off)


def def_cfa_offset(off):
    return b"\x0e" + uleb(off)


def def_cfa_register(reg):
    return b"\x0d" + uleb(reg)


def offset(reg, factored):
    return bytes([0x80 | reg]) + uleb(factored)


def advance(n):
    return bytes([0x40 | n])


def undefined(reg):
    return b"\x07" + uleb(reg)


# --- aarch64 --------------------------------------------------------------------

def aarch64_program():
    """leaf (no frame, returns through x30) <- mid <- outer <- start (x30
    undefined).  mid and outer open with `stp x29, x30, [sp, #-32]!;
    mov x29, sp`."""
    prologue = (advance(1) + def_cfa_offset(32) + offset(29, 4) + offset(30, 3)
                + advance(1) + def_cfa_register(29))
    eh = EhFrame(ra_column=30, code_align=4, data_align=-8, initial=def_cfa(31, 0))
    eh.fde(0x1000, 0x20)                        # leaf
    eh.fde(0x2000, 0x40, prologue)              # mid
    eh.fde(0x3000, 0x40, prologue)              # outer
    eh.fde(0x4000, 0x10, undefined(30))         # start
    return eh.table()


def aarch64_stack(outer_ra=0x3010, start_ra=0x4008):
    # sp = 0x10000: mid's frame record {x29, x30} at its bottom, then outer's
    return stack_from(0x10000, [0x10020, outer_ra, 0, 0,
                                0x0, start_ra, 0, 0])


def test_aarch64_frame_records_and_link_register():
    regs = {"pc": 0x1008, "sp": 0x10000, "x29": 0x10000, "lr": 0x2010, "x19": 7}
    result = unwind_dwarf("aarch64", regs, aarch64_stack(), one_module(aarch64_program()))
    assert result.frames == [0x1008, 0x2010, 0x3010, 0x4008]
    assert result.stop_reason == "outermost"
    assert result.fp_fallback_frames == []


def test_aarch64_pointer_authentication_bits_are_stripped():
    regs = {"pc": 0x1008, "sp": 0x10000, "x29": 0x10000, "x30": 0x2010}
    signed_ra = (0x2B << 56) | (0x13 << 48) | 0x3010
    result = unwind_dwarf(AARCH64, regs, aarch64_stack(outer_ra=signed_ra),
                          one_module(aarch64_program()))
    assert result.frames == [0x1008, 0x2010, 0x3010, 0x4008]


def test_aarch64_zero_return_address_ends_the_stack():
    regs = {"pc": 0x1008, "sp": 0x10000, "x29": 0x10000, "x30": 0x2010}
    result = unwind_dwarf("arm64", regs, aarch64_stack(outer_ra=0),
                          one_module(aarch64_program()))
    assert result.frames == [0x1008, 0x2010]
    assert result.stop_reason == "zero-ra"


def test_aarch64_frame_pointer_step_without_cfi():
    regs = {"pc": 0x2010, "sp": 0x10000, "x29": 0x10000, "x30": 0x5555}
    result = unwind_dwarf("aarch64", regs, aarch64_stack(), one_module(None))
    # two steps along the frame records, then x29 = 0
    assert result.frames == [0x2010, 0x3010, 0x4008]
    assert result.fp_fallback_frames == [1, 2]
    assert result.stop_reason == "no-cfi"


def test_arch_tables():
    assert X86_64.name_to_dwarf["rbx"] == 3 and X86_64.name_to_dwarf["r15"] == 15
    assert X86_64.ra_column == 16 and X86_64.dwarf_names[16] == "rip"
    assert AARCH64.sp_column == 31 and AARCH64.fp_column == 29
    assert get_arch("arm64") is AARCH64 and get_arch(X86_64) is X86_64


# --- x86_64 stop reasons --------------------------------------------------------------

def x86_program():
    """f at 0x1000: push rbp (CFA rsp+16, rbp at cfa-16); g at 0x2000: frameless;
    h at 0x3000: CFA = rbp+16 (frame pointer based)."""
    eh = EhFrame(ra_column=16, code_align=1, data_align=-8,
                 initial=def_cfa(7, 8) + offset(16, 1))
    eh.fde(0x1000, 0x100, advance(1) + def_cfa_offset(16) + offset(6, 2))
    eh.fde(0x2000, 0x100)
    eh.fde(0x3000, 0x100, def_cfa(6, 16) + offset(6, 2))
    return eh.table()


def test_x86_stack_exhausted_records_the_address():
    stack = stack_from(0x8000, [0x2010, 0x2010])          # two frames fit, the third not
    result = unwind_dwarf("x86_64", {"rip": 0x2005, "rsp": 0x8000}, stack,
                          one_module(x86_program()))
    assert result.frames == [0x2005, 0x2010, 0x2010]
    assert result.stop_reason == "stack-exhausted"
    assert result.stop_address == 0x8010


def test_x86_callee_saved_register_restored_from_the_stack():
    # in f after push rbp: [rsp] = saved rbp, [rsp+8] = ra into h; h's CFA uses rbp
    stack = stack_from(0x8000, [0x8020, 0x3010, 0, 0, 0xAAAA, 0x2020, 0x0])
    regs = {"rip": 0x1001, "rsp": 0x8000, "rbp": 0x1234}
    result = unwind_dwarf("x86_64", regs, stack, one_module(x86_program()))
    # f -> h (CFA = restored rbp 0x8020 + 16 = 0x8030, ra at 0x8028) -> g -> zero ra
    assert result.frames == [0x1001, 0x3010, 0x2020]
    assert result.stop_reason == "zero-ra"


def test_x86_cfa_not_increasing():
    stack = stack_from(0x8000, [0x3010] * 8)
    regs = {"rip": 0x3005, "rsp": 0x8000, "rbp": 0x7000}   # rbp below rsp: garbage
    result = unwind_dwarf("x86_64", regs, stack, one_module(x86_program()))
    assert result.stop_reason in ("cfa-not-increasing", "stack-exhausted")
    regs["rbp"] = 0x7FF0            # CFA = 0x8000: not above rsp
    stack = StackSnapshot(0x7FF0, b"\0" * 8 + struct.pack("<Q", 0x3010) + b"\0" * 64)
    result = unwind_dwarf("x86_64", regs, stack, one_module(x86_program()))
    assert result.frames == [0x3005]
    assert result.stop_reason == "cfa-not-increasing"


def test_x86_max_depth_and_no_map():
    stack = stack_from(0x8000, [0x2010] * 300)
    result = unwind_dwarf("x86_64", {"rip": 0x2005, "rsp": 0x8000}, stack,
                          one_module(x86_program()), max_depth=50)
    assert len(result.frames) == 50 and result.stop_reason == "max-depth"
    stack = stack_from(0x8000, [0x2010, 0x99999])
    result = unwind_dwarf("x86_64", {"rip": 0x2005, "rsp": 0x8000}, stack,
                          one_module(x86_program()))
    assert result.frames == [0x2005, 0x2010, 0x99999]
    assert result.stop_reason == "no-map"
    assert result.stop_address == 0x99999


def test_x86_frame_pointer_chain_without_cfi():
    # three frame records: rbp -> {saved rbp, ra}
    stack = stack_from(0x8000, [0, 0, 0x8020, 0x1111, 0x8030, 0x2222, 0, 0x3333])
    regs = {"rip": 0x1000, "rsp": 0x8000, "rbp": 0x8010}
    result = unwind_dwarf("x86_64", regs, stack, one_module(None, 0, 1 << 20))
    assert result.frames == [0x1000, 0x1111, 0x2222, 0x3333]
    assert result.fp_fallback_frames == [1, 2, 3]
    assert result.stop_reason == "no-cfi"


def test_frame_pointer_guess_into_no_mapping_is_no_frame():
    """JIT code without CFI (tests/progs/jit.c's leaf, which pushes no frame)
    called from code built without frame pointers: rbp is some value of the
    caller's that happens to point into the stack copy, and the "return
    address" above it lies in no mapping.  The stack ends at the leaf (perf's
    libdw prints the leaf alone), not at a garbage frame."""
    stack = stack_from(0x8000, [0, 0, 0x8020, 0x971bee1, 0x8030, 0x2222])
    regs = {"rip": 0x1000, "rsp": 0x8000, "rbp": 0x8010}
    result = unwind_dwarf("x86_64", regs, stack, one_module(None, 0x1000, 0x3000))
    assert result.frames == [0x1000]
    assert result.stop_reason == "no-cfi" and "out of mapped code" in result.stop_detail
    # a frame record whose return address is mapped is still followed
    stack = stack_from(0x8000, [0, 0, 0x8020, 0x2222, 0, 0x2abc])
    result = unwind_dwarf("x86_64", regs, stack, one_module(None, 0x1000, 0x3000))
    assert result.frames == [0x1000, 0x2222, 0x2abc]


def test_no_frame_pointer_guess_in_a_binary_that_is_not_here():
    """The same frame records, in a mapping whose binary could not be found
    (its CFI is out of reach): the walk stops at the ip instead of guessing."""
    stack = stack_from(0x8000, [0, 0, 0x8020, 0x1111, 0x8030, 0x2222, 0, 0x3333])
    regs = {"rip": 0x1000, "rsp": 0x8000, "rbp": 0x8010}
    missing = UnwindModule(None, 0, frame_pointer_step=False)
    result = unwind_dwarf("x86_64", regs, stack,
                          lambda avma: missing if 0 <= avma < 1 << 20 else None)
    assert result.frames == [0x1000]
    assert result.fp_fallback_frames == []
    assert result.stop_reason == "no-cfi" and "not available" in result.stop_detail


def test_bad_inputs_never_raise():
    def exploding(address):
        raise RuntimeError("reader failed")

    result = unwind_dwarf("x86_64", {"rip": 0x2005, "rsp": 0x8000}, exploding,
                          one_module(x86_program()))
    assert result.stop_reason == "bad-cfi" and result.frames == [0x2005]
    result = unwind_dwarf("x86_64", {"rip": 0x2005}, exploding, one_module(None))
    assert result.stop_reason == "bad-cfi" and result.frames == []

    rng = random.Random(99)
    table = x86_program()
    for _ in range(300):
        words = [rng.choice([0, 0x2010, 0x1005, 0x3020, 0x8008, rng.getrandbits(64)])
                 for _ in range(rng.randrange(0, 40))]
        regs = {"rip": rng.choice([0x1000, 0x1001, 0x2000, 0x3004, 0x7]),
                "rsp": 0x8000, "rbp": rng.choice([0, 0x8000, 0x8010, 0x7000, 1 << 63])}
        result = unwind_dwarf("x86_64", regs, stack_from(0x8000, words), one_module(table))
        assert result.stop_reason in STOP_REASONS
        assert result.frames[0] == regs["rip"]


def x86_program_with_saves():
    """x86_program, and k at 0x4000 that saves r12, rbx and rbp apart (a gap
    between r12 and rbx): CFA = rsp+48, r12 at cfa-40, rbx at cfa-24, rbp at
    cfa-16; a caller in h finds its CFA through the restored rbp."""
    eh = EhFrame(ra_column=16, code_align=1, data_align=-8,
                 initial=def_cfa(7, 8) + offset(16, 1))
    eh.fde(0x1000, 0x100, advance(1) + def_cfa_offset(16) + offset(6, 2))
    eh.fde(0x2000, 0x100)
    eh.fde(0x3000, 0x100, def_cfa(6, 16) + offset(6, 2))
    eh.fde(0x4000, 0x100, def_cfa_offset(48) + offset(12, 5) + offset(3, 3) + offset(6, 2))
    return eh.table()


def _random_walks(seed, count):
    """(regs, stack) pairs over x86_program_with_saves(): good stacks, cut
    ones, garbage."""
    rng = random.Random(seed)
    for _ in range(count):
        words = [rng.choice([0, 0x2010, 0x1005, 0x3010, 0x3020, 0x4010, 0x8008, 0x8020,
                             0x8040, 0x8060, rng.getrandbits(64)])
                 for _ in range(rng.randrange(0, 40))]
        regs = {"rip": rng.choice([0x1000, 0x1001, 0x2005, 0x3004, 0x3010, 0x4010]),
                "rsp": 0x8000, "rbp": rng.choice([0, 0x8000, 0x8010, 0x8020, 0x7000]),
                "rbx": rng.choice([1, 0x8000])}
        yield regs, stack_from(0x8000, words)


def test_step_by_step_equals_walk():
    """A caller driving Unwinder.step frame by frame finds what walk finds."""
    unwinder = Unwinder.for_arch("x86_64")
    find = one_module(x86_program_with_saves())
    for named, stack in _random_walks(7, 300):
        walked = unwinder.walk(*unwinder.regs_from_names(named), stack, find)
        ip, regs = unwinder.regs_from_names(named)
        kind = INNERMOST
        frames, cfas = [ip], []
        while True:
            try:
                ip, regs, kind, cfa = unwinder.step(ip, regs, kind, stack, find)
            except UnwindStop as stop:
                if stop.cfa is not None:
                    cfas.append(stop.cfa)
                reason, address = stop.reason, stop.address
                break
            frames.append(ip)
            cfas.append(cfa)
            if len(frames) >= 127:
                reason, address = "max-depth", None
                break
        assert (frames, cfas, reason, address) == (
            walked.frames, walked.cfas, walked.stop_reason, walked.stop_address)


def test_saved_slots_read_at_once_equal_rule_by_rule():
    """A StackSnapshot lets the step read a row's saved registers in one call
    (CfiRow.saved_slots); any other reader goes rule by rule: the same walk."""
    find = one_module(x86_program_with_saves())
    for named, stack in _random_walks(11, 300):
        fast = unwind_dwarf("x86_64", named, stack, find)
        slow = unwind_dwarf("x86_64", named, lambda address: stack(address), find)
        assert (fast.frames, fast.cfas, fast.stop_reason, fast.stop_address) == (
            slow.frames, slow.cfas, slow.stop_reason, slow.stop_address)


def test_fde_lookup_without_eh_frame_hdr_and_bounds():
    table = x86_program()           # no .eh_frame_hdr: the index comes from a scan
    assert table.row_for(0x0FFF) is None
    assert table.row_for(0x1100) is None        # past f's end, before g
    assert table.row_for(0x1000).cfa_offset == 8
    assert table.row_for(0x1001).cfa_offset == 16
    assert table.row_for(0x10FF).cfa_offset == 16
    assert table.fde_range(0x2050) == (0x2000, 0x2100)


def test_x86_saved_register_slots_outside_the_snapshot():
    eh = EhFrame(ra_column=16, code_align=1, data_align=-8,
                 initial=def_cfa(7, 8) + offset(16, 1))
    eh.fde(0x2000, 0x100)                               # g: frameless
    eh.fde(0x5000, 0x100, offset(3, 2))                 # epilogue: rbx at cfa-16, popped
    eh.fde(0x6000, 0x100, def_cfa(3, 8))                # k: CFA = rbx + 8
    eh.fde(0x7000, 0x100, offset(3, 0))                 # rbx saved at the CFA itself
    table = eh.table()
    # after `pop rbx` the slot is below sp: rbx already holds the caller's value
    stack = stack_from(0x8000, [0x6010, 0, 0x2020, 0])
    result = unwind_dwarf("x86_64", {"rip": 0x5005, "rsp": 0x8000, "rbx": 0x8010},
                          stack, one_module(table))
    assert result.frames == [0x5005, 0x6010, 0x2020]
    assert result.stop_reason == "zero-ra"
    # a slot beyond the copy leaves rbx unknown; the walk goes on while the
    # return addresses are readable (as perf's libdw does)
    stack = stack_from(0x8000, [0x2010])
    result = unwind_dwarf("x86_64", {"rip": 0x7005, "rsp": 0x8000, "rbx": 1},
                          stack, one_module(table))
    assert result.frames == [0x7005, 0x2010]
    assert result.stop_reason == "stack-exhausted" and result.stop_address == 0x8008


def test_empty_stack_copy_is_not_unwound(tmp_path):
    """A DWARF-mode sample whose stack copy is empty (dyn_size 0): perf does
    not unwind it (thread__resolve_callchain_unwind bails out) and prints
    its kernel frames only; perfdata the same, counted as empty_stack."""
    import perfdata
    from perfdata.format.constants import CallchainContext as CC, SampleType as ST
    from perfdata.resolve.symbolized import SampleSymbolizer
    from symbolize import Symbolizer, SymbolizerOptions
    from synth import Attr, Builder, attr_value
    st = ST.IP | ST.TID | ST.TIME | ST.CALLCHAIN | ST.REGS_USER | ST.STACK_USER
    attr = Attr(attr_value(sample_type=st, sample_regs_user=0xff0fff, sample_stack_user=16,
                           flags={"sample_id_all": 1}))
    b = Builder()
    kernel = [CC.KERNEL, 0xffffffff81000010, 0xffffffff81000020]
    regs = {"abi": 2, "regs": list(range(1, 21))}
    records = [b.sample(attr, {"ip": 0xffffffff81000010, "pid": 1, "tid": 1, "time": t,
                               "callchain": {"nr": 3, "ips": kernel},
                               "regs_user": regs,
                               "stack_user": {"size": 16, "data": bytes(16), "dyn_size": 0}},
                        misc=1) for t in (1, 2)]
    path = tmp_path / "empty_stack.data"
    path.write_bytes(b.file([attr], records))
    samples = SampleSymbolizer(perfdata.open(str(path)),
                               Symbolizer(options=SymbolizerOptions(inline=False)))
    got = [[f.avma for f in s.frames] for s in samples]
    assert got == [kernel[1:], kernel[1:]]
    assert samples.unwinder.counts["empty_stack"] == 2
