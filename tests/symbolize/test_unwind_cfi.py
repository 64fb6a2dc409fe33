"""CFI tables against independent readers of the same bytes.

Oracles: GNU readelf's interpreted frame tables (`readelf -wF`, every row of
every FDE of libc, including the one with DW_CFA_GNU_args_size that
pyelftools cannot decode), pyelftools' `get_decoded()` (exact rule kinds,
on the dynamic loader), the x86-64 psABI's PLT layout, and hand-computed
DWARF expressions.
"""

import random
import re
import struct
import shutil
import subprocess

import pytest

from symbolize.unwind.arch import X86_64
from symbolize.unwind.cfi import (CfiError, CfiTable, StackOutOfRange, evaluate_expression,
                           RULE_EXPRESSION, RULE_OFFSET, RULE_REGISTER, RULE_SAME_VALUE,
                           RULE_UNDEFINED, RULE_VAL_EXPRESSION, RULE_VAL_OFFSET)
from limits import sleb

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LD_SO = "/lib64/ld-linux-x86-64.so.2"


def need(path):
    import os
    if not os.path.exists(path):
        pytest.skip("%s is absent" % path)


# --- readelf -wF --------------------------------------------------------------

_FDE_LINE = re.compile(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")


def readelf_rows(path):
    """[(fde_start, fde_end, [(loc, cfa_text, {column: text})])] from readelf -wF."""
    text = subprocess.run(["readelf", "-wF", path], capture_output=True, text=True).stdout
    fdes = []
    cur = None
    cols = None
    for line in text.splitlines():
        m = _FDE_LINE.search(line)
        if m:
            cur = (int(m.group(1), 16), int(m.group(2), 16), [])
            fdes.append(cur)
            cols = None
            continue
        if " CIE " in line:
            cur = None
            continue
        # a register rule prints as "r9 (r9)": keep it one token
        parts = re.findall(r"r\d+ \([a-z0-9]+\)|\S+", line)
        if cur is None or not parts:
            continue
        if parts[0] == "LOC":
            cols = parts[2:]
            continue
        if cols is not None and re.fullmatch(r"[0-9a-f]{8,16}", parts[0]):
            cur[2].append((int(parts[0], 16), parts[1], dict(zip(cols, parts[2:]))))
    return fdes


def _column(name):
    return 16 if name == "ra" else X86_64.name_to_dwarf.get(name)


def _same(row, cfa_text, regs):
    if cfa_text == "exp":
        if row.cfa_expression is None:
            return False
    else:
        m = re.fullmatch(r"([a-z0-9]+)([+-]\d+)", cfa_text)
        if (row.cfa_register, row.cfa_offset) != (_column(m.group(1)), int(m.group(2))):
            return False
    for name, text in regs.items():
        kind, arg = row.rules.get(_column(name), (None, None))
        if text == "u":
            ok = kind in (None, RULE_UNDEFINED)
        elif text.startswith("c"):
            ok = kind == RULE_OFFSET and arg == int(text[1:])
        elif text.startswith("v") and text[1:2] in "+-" and text[1:]:
            ok = kind == RULE_VAL_OFFSET and arg == int(text[1:])
        elif text == "s":
            ok = kind == RULE_SAME_VALUE
        elif text == "exp":
            ok = kind == RULE_EXPRESSION
        elif text == "vexp":
            ok = kind == RULE_VAL_EXPRESSION
        else:
            ok = kind == RULE_REGISTER and arg == int(re.match(r"r(\d+)", text).group(1))
        if not ok:
            return False
    return True


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs GNU readelf")
def test_every_libc_row_matches_readelf():
    need(LIBC)
    table = CfiTable.from_elf(LIBC)
    fdes = readelf_rows(LIBC)
    assert len(fdes) > 1000
    checked = 0
    bad = []
    for start, end, rows in fdes:
        for i, (loc, cfa, regs) in enumerate(rows):
            last = rows[i + 1][0] - 1 if i + 1 < len(rows) else end - 1
            for address in (loc, last):
                row = table.row_for(address)
                checked += 1
                if row is None or not _same(row, cfa, regs):
                    bad.append((hex(address), row, cfa, regs))
    assert not bad[:5], "%d of %d rows differ" % (len(bad), checked)
    # the FDE with DW_CFA_GNU_args_size (pyelftools 0.33 raises on it) is in there
    assert checked > 30000


def test_rules_match_pyelftools_on_the_loader():
    need(LD_SO)
    from elftools.dwarf.callframe import FDE
    from elftools.elf.elffile import ELFFile

    kinds = {"UNDEFINED": RULE_UNDEFINED, "SAME_VALUE": RULE_SAME_VALUE,
             "OFFSET": RULE_OFFSET, "VAL_OFFSET": RULE_VAL_OFFSET,
             "REGISTER": RULE_REGISTER, "EXPRESSION": RULE_EXPRESSION,
             "VAL_EXPRESSION": RULE_VAL_EXPRESSION}
    table = CfiTable.from_elf(LD_SO)
    with open(LD_SO, "rb") as f:
        entries = ELFFile(f).get_dwarf_info().EH_CFI_entries()
        checked = 0
        for entry in entries:
            if not isinstance(entry, FDE):
                continue
            try:
                decoded = entry.get_decoded().table
            except Exception:
                continue
            for line in decoded:
                row = table.row_for(line["pc"])
                cfa = line["cfa"]
                if cfa.expr is not None:
                    assert row.cfa_expression == bytes(cfa.expr)
                else:
                    assert (row.cfa_register, row.cfa_offset) == (cfa.reg, cfa.offset)
                theirs = {reg: (kinds[rule.type],
                                bytes(rule.arg) if isinstance(rule.arg, list) else rule.arg)
                          for reg, rule in line.items() if reg not in ("pc", "cfa")}
                assert row.rules == theirs, hex(line["pc"])
                checked += 1
    assert checked > 1000


# --- the PLT --------------------------------------------------------------------

def test_plt_cfa_expression_follows_the_psabi_layout():
    """x86-64 lazy PLT: a 16-byte stub `jmp *GOT; push index; jmp PLT0`; from
    offset 11 on (after the push) the return address is 16 bytes up."""
    need(LIBC)
    from elftools.elf.elffile import ELFFile
    with open(LIBC, "rb") as f:
        plt = ELFFile(f).get_section_by_name(".plt")
        start, size = plt["sh_addr"], plt["sh_size"]
    table = CfiTable.from_elf(LIBC)
    rsp = 0x7FFC0000
    for address in range(start + 16, start + size):
        row = table.row_for(address)
        assert row.cfa_expression is not None
        regs = {7: rsp, 16: address}
        cfa = evaluate_expression(row.cfa_expression, regs.get, lambda a: None)
        assert cfa == rsp + (16 if (address & 15) >= 11 else 8), hex(address)
    # PLT0: push GOT[1] (+0), jmp *GOT[2] (+6) after it
    assert (table.row_for(start).cfa_register, table.row_for(start).cfa_offset) == (7, 16)
    assert table.row_for(start + 6).cfa_offset == 24


# --- expressions ----------------------------------------------------------------

def ev(expr, regs=None, memory=None, initial=()):
    regs = regs or {}
    memory = memory or {}
    return evaluate_expression(bytes(expr), regs.get, memory.get, initial)


def test_expression_arithmetic_and_stack_ops():
    M = (1 << 64) - 1
    lit = lambda n: 0x30 + n  # noqa: E731
    assert ev([lit(5), lit(7), 0x22]) == 12                       # plus
    assert ev([lit(5), lit(7), 0x1C]) == (5 - 7) & M              # minus wraps
    assert ev([0x11] + list(sleb(-20)) + [lit(3), 0x1B]) == (-6) & M   # signed div truncates
    assert ev([0x11] + list(sleb(-20)) + [lit(1), 0x26]) == (-10) & M  # shra keeps the sign
    assert ev([0x11] + list(sleb(-20)) + [lit(1), 0x25]) == ((-20) & M) >> 1
    assert ev([0x11] + list(sleb(-3)), ) == (-3) & M
    assert ev([0x11] + list(sleb(-3)) + [0x19]) == 3              # abs
    assert ev([lit(3), 0x1F]) == (-3) & M                         # neg
    assert ev([0x0A, 0x34, 0x12, lit(4), 0x24]) == 0x12340        # const2u, shl
    assert ev([0x0D, 0xFF, 0xFF, 0xFF, 0xFF]) == M                # const4s -1
    assert ev([lit(1), lit(2), lit(3), 0x17]) == 2                # rot: 3 1 2 -> top 2
    assert ev([lit(1), lit(2), 0x14, 0x22, 0x22]) == 4            # over
    assert ev([lit(1), lit(2), lit(3), 0x15, 2]) == 1             # pick 2
    assert ev([lit(1), lit(2), 0x16, 0x1C]) == 1                  # swap
    assert ev([lit(9), 0x12, 0x1E]) == 81                         # dup mul
    assert ev([lit(9), lit(4), 0x13]) == 9                        # drop
    assert ev([0x11] + list(sleb(-1)) + [lit(0), 0x2D]) == 1      # lt is signed
    assert ev([0x11] + list(sleb(-1)) + [lit(0), 0x2A]) == 0      # ge is signed
    assert ev([lit(6), 0x23, 100]) == 106                          # plus_uconst


def test_expression_registers_memory_and_branches():
    regs = {7: 0x1000, 6: 0x2000, 20: 0x50}
    memory = {0x1010: 0xDEADBEEFCAFEF00D}
    assert ev([0x77] + list(sleb(0x10)) + [0x06], regs, memory) == 0xDEADBEEFCAFEF00D
    assert ev([0x77] + list(sleb(0x10)) + [0x94, 2], regs, memory) == 0xF00D
    assert ev([0x92, 20] + list(sleb(-0x10)), regs) == 0x40         # bregx
    # bra: if (rbp != 0) 1 else 2
    prog = [0x76, 0, 0x28, 4, 0, 0x32, 0x2F, 1, 0, 0x31]
    assert ev(prog, regs) == 1
    assert ev(prog, {6: 0, 7: 1}) == 2
    # the CFA is pushed first for register rules
    assert ev([0x23, 8], initial=(0x3000,)) == 0x3008
    with pytest.raises(StackOutOfRange) as exc:
        ev([0x77] + list(sleb(0x40)) + [0x06], regs, memory)
    assert exc.value.address == 0x1040
    # unknown op, stack underflow, unknown register, branch out, division by zero
    for bad in ([0xE0], [0x22], [0x75, 0], [0x32, 0x2F, 0x7F, 0x7F], [0x31, 0x30, 0x1B]):
        with pytest.raises((CfiError, IndexError)):
            ev(bad, regs)


# --- laziness and bad input ---------------------------------------------------------

def test_opening_libc_is_lazy():
    need(LIBC)
    table = CfiTable.from_elf(LIBC)
    row = table.row_for(0x28000 + 0x100)
    assert table.stats_fdes_decoded == 1
    assert row is not None


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs GNU readelf")
def test_decoded_rows_are_bounded_and_answers_unchanged(monkeypatch):
    """A table lets go of what it decoded past CFI_ROWS_KEPT rows (a big
    binary's whole CFI would not fit in memory) and decodes again what it
    is asked for after: every libc row still as readelf says, with at most
    the bound held at any time."""
    import symbolize.unwind.cfi as cfi
    need(LIBC)
    monkeypatch.setattr(cfi, "CFI_ROWS_KEPT", 2000)
    monkeypatch.setattr(cfi, "CFI_ADDRESSES_KEPT", 1000)
    table = CfiTable.from_elf(LIBC)
    fdes = readelf_rows(LIBC)
    bad, most_rows, most_addresses = [], 0, 0
    for start, end, rows in fdes:
        for i, (loc, cfa, regs) in enumerate(rows):
            last = rows[i + 1][0] - 1 if i + 1 < len(rows) else end - 1
            for address in (loc, last):
                row = table.row_for(address)
                if row is None or not _same(row, cfa, regs):
                    bad.append((hex(address), row, cfa, regs))
        held = sum(len(f.rows) for entry in table._sections
                   for f in entry[0].fdes.values() if f is not None)
        most_rows = max(most_rows, held)
        most_addresses = max(most_addresses, len(table.rows))
    assert not bad[:5], "%d rows differ" % len(bad)
    assert table.stats_forgotten >= 10
    # (the bound, plus the one FDE that crossed it)
    assert most_rows <= 2000 + max(len(rows) for _, _, rows in fdes)
    assert most_addresses <= 1000


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs GNU readelf")
@pytest.mark.parametrize("kept", [1 << 14, 10])
def test_equal_rows_are_one_object_and_answers_unchanged(monkeypatch, kept):
    """Rows equal in every field are one CfiRow (a binary repeats a few
    hundred rows over tens of thousands of addresses); with the shared rows
    cleared often (kept=10) every libc row is still as readelf says."""
    import symbolize.unwind.cfi_rows as cfi_rows
    need(LIBC)
    monkeypatch.setattr(cfi_rows, "SHARED_ROWS_KEPT", kept)
    cfi_rows._SHARED_ROWS.clear()
    table = CfiTable.from_elf(LIBC)
    by_value, rows, bad = {}, 0, []
    for start, end, fde_rows in readelf_rows(LIBC):
        for i, (loc, cfa, regs) in enumerate(fde_rows):
            row = table.row_for(loc)
            if row is None or not _same(row, cfa, regs):
                bad.append((hex(loc), row, cfa, regs))
                continue
            rows += 1
            by_value.setdefault(repr(row) + repr((row.ra_column, row.signal_frame)),
                                set()).add(id(row))
    assert not bad[:5], "%d rows differ" % len(bad)
    assert rows > 20000
    if kept > 10:
        # every value once, and far fewer values than rows
        assert all(len(ids) == 1 for ids in by_value.values())
        assert len(by_value) * 20 < rows, (len(by_value), rows)


def _libc_sections():
    from elftools.elf.elffile import ELFFile
    with open(LIBC, "rb") as f:
        elf = ELFFile(f)
        eh = elf.get_section_by_name(".eh_frame")
        hdr = elf.get_section_by_name(".eh_frame_hdr")
        return eh.data(), eh["sh_addr"], hdr.data(), hdr["sh_addr"]


def test_malformed_eh_frame_never_raises():
    need(LIBC)
    eh, eh_addr, hdr, hdr_addr = _libc_sections()
    good = CfiTable.from_sections(eh, eh_addr, hdr, hdr_addr)
    rng = random.Random(1234)
    probes = [rng.randrange(0x26000, 0x1A0000) for _ in range(400)]

    # cut in half: FDEs in the first half still give the same rows
    half = CfiTable.from_sections(eh[:len(eh) // 2], eh_addr, hdr, hdr_addr)
    kept = 0
    for a in probes:
        row = half.row_for(a)
        if row is not None:
            kept += 1
            assert repr(row) == repr(good.row_for(a))
    assert kept > 50

    for trial in range(5):
        data = bytearray(eh)
        for _ in range(300):
            data[rng.randrange(len(data))] = rng.randrange(256)
        table = CfiTable.from_sections(bytes(data), eh_addr, hdr, hdr_addr)
        for a in probes:
            table.row_for(a)                        # must not raise
        bad_hdr = bytearray(hdr)
        for _ in range(50):
            bad_hdr[rng.randrange(len(bad_hdr))] = rng.randrange(256)
        table = CfiTable.from_sections(eh, eh_addr, bytes(bad_hdr), hdr_addr)
        for a in probes:
            table.row_for(a)

    for junk in (b"", b"\x7fELF" + b"\0" * 60, bytes(range(256)) * 8):
        table = CfiTable.from_elf(junk)
        assert not table.has_cfi()
        assert table.row_for(0x1000) is None
    assert CfiTable.from_elf("/nonexistent/file").row_for(0) is None


def _eh_entry(body):
    """A length-prefixed .eh_frame entry, padded to 8 bytes with DW_CFA_nop."""
    body = bytes(body)
    while (len(body) + 4) % 8:
        body += b"\0"
    return struct.pack("<I", len(body)) + body


def _eh_cie(fde_encoding):
    # version 1, "zR", code align 1, data align -8, RA column 16, one byte of
    # augmentation data (the FDE encoding); def_cfa rsp+8; offset(ra) cfa-8
    return _eh_entry(struct.pack("<I", 0) + b"\x01zR\x00\x01\x78\x10\x01" +
                     bytes([fde_encoding]) + b"\x0c\x07\x08\x90\x01")


def _eh_fde(at, cie_at, begin, size, section_addr):
    # the CIE pointer: distance back from its own field; pc-relative sdata4 begin
    pointer = at + 4 - cie_at
    field = section_addr + at + 8
    return _eh_entry(struct.pack("<Iii", pointer, begin - field, size) + b"\x00")


def test_fde_of_a_cie_that_omits_its_encoding_is_skipped_not_the_section():
    """A CIE whose FDE encoding is DW_EH_PE_omit (0xff) makes its FDEs
    unreadable: they are skipped (a CfiError on the range's format), and the
    other FDEs of the section still give their rows."""
    addr = 0x2000
    data = bytearray()
    bad_cie = len(data)
    data += _eh_cie(0xFF)
    data += _eh_fde(len(data), bad_cie, 0x1000, 0x100, addr)
    good_cie = len(data)
    data += _eh_cie(0x1B)                     # DW_EH_PE_pcrel | DW_EH_PE_sdata4
    data += _eh_fde(len(data), good_cie, 0x3000, 0x100, addr)
    data += b"\0\0\0\0"                       # the terminator
    table = CfiTable.from_sections(bytes(data), addr)
    row = table.row_for(0x3050)
    assert row is not None
    assert table.row_for(0x1050) is None
    assert table.row_for(0x3150) is None


def test_dwarf_opcodes_are_pyelftools_names():
    """Every DW_OP_* the expression evaluator names has pyelftools' value
    for that name (they are written out there to keep pyelftools' DWARF
    expression module out of start-up)."""
    from elftools.dwarf.dwarf_expr import DW_OP_name2opcode
    from symbolize.unwind import dwarf_expr
    named = {k: v for k, v in vars(dwarf_expr).items() if k.startswith("DW_OP_")}
    assert len(named) > 40
    assert {k: DW_OP_name2opcode[k] for k in named} == named
