"""Register tables against their sources: the GNU assembler's DWARF
register numbers (it writes them into .eh_frame from `.cfi_offset %reg`)
and the kernel's perf register enum (uapi asm/perf_regs.h)."""

import os
import re
import shutil
import subprocess

import pytest

from symbolize.unwind.arch import X86_64
from symbolize.unwind.cfi import RULE_OFFSET, CfiTable

X86_GPRS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp",
            "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (GNU as)")
def test_x86_64_dwarf_numbers_are_the_assemblers(tmp_path):
    # each register saved at its own offset; the assembler picks the column
    lines = [".text", ".globl f", "f:", ".cfi_startproc"]
    for i, reg in enumerate(X86_GPRS):
        lines.append(".cfi_offset %%%s, %d" % (reg, -8 * (i + 2)))
    lines += ["nop", ".cfi_endproc", ""]
    src = tmp_path / "regs.s"
    src.write_text("\n".join(lines))
    lib = tmp_path / "regs.so"
    subprocess.run(["gcc", "-shared", "-nostdlib", str(src), "-o", str(lib)], check=True)
    from elftools.elf.elffile import ELFFile
    with open(lib, "rb") as f:
        (sym,) = ELFFile(f).get_section_by_name(".dynsym").get_symbol_by_name("f")
        address = sym["st_value"]
    row = CfiTable.from_elf(str(lib)).row_for(address)
    assert row is not None
    for i, reg in enumerate(X86_GPRS):
        assert row.rules[X86_64.name_to_dwarf[reg]] == (RULE_OFFSET, -8 * (i + 2)), reg
    # the CIE's return-address column is the one we call rip
    assert row.ra_column == X86_64.ra_column == X86_64.name_to_dwarf["rip"]
    assert (row.cfa_register, row.cfa_offset) == (X86_64.name_to_dwarf["rsp"], 8)


PERF_REGS_H = "/usr/include/x86_64-linux-gnu/asm/perf_regs.h"


@pytest.mark.skipif(not os.path.exists(PERF_REGS_H), reason="no kernel uapi headers")
def test_x86_64_perf_register_numbers_are_the_kernels():
    text = open(PERF_REGS_H).read()
    enum = text[text.index("enum perf_event_x86_regs"):]
    names = re.findall(r"PERF_REG_X86_(\w+),", enum[:enum.index("_MAX")])
    assert names[0] == "AX" and names[-1] == "R15"
    for number, kname in enumerate(names):
        ours = X86_64.perf_regs[number]
        if kname in ("FLAGS", "CS", "SS", "DS", "ES", "FS", "GS"):
            assert ours is None
        elif kname.startswith("R"):
            assert ours == kname.lower()
        else:
            assert ours == "r" + kname.lower()
    # perf's default user mask for --call-graph=dwarf on x86_64
    regs = X86_64.regs_from_perf(0xFF0FFF, range(100, 120))
    assert regs["rip"] == 108 and regs["r8"] == 112 and regs["r15"] == 119
    assert "flags" not in regs and len(regs) == 17
