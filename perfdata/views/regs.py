"""Sampled registers (PERF_SAMPLE_REGS_USER / REGS_INTR) as `perf script -F
uregs,iregs` prints them: perf 6.1's perf_sample__fprintf_regs(),
" ABI:<abi> " then "%5s:0x%x " per register of the attr's mask, named by
perf_reg_name() for the recording's arch (the ARCH feature, normalized as
perf_env__arch() does)."""
from __future__ import annotations

from typing import Any

# tools/perf/util/perf_regs_x86.h: the bits of arch/x86's uapi perf_regs.h;
# an XMM register takes two bits, both named after it.
_X86 = dict(enumerate((
    "AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS", "CS", "SS", "DS", "ES",
    "FS", "GS", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15")))
_X86.update({32 + 2 * i + half: "XMM%d" % i for i in range(16) for half in (0, 1)})
# tools/perf/util/perf_regs_arm64.h
_ARM64 = {i: "x%d" % i for i in range(30)}
_ARM64.update({30: "lr", 31: "sp", 32: "pc", 46: "vg"})

_NAMES = {"x86": _X86, "arm64": _ARM64}


def perf_arch(uname_machine: str | None) -> str:
    """perf's normalize_arch() of the recording's `uname -m` (the names this
    module knows; others as given)."""
    m = uname_machine or ""
    if m in ("x86_64", "amd64") or (m.startswith("i") and m.endswith("86")):
        return "x86"
    if m in ("aarch64", "arm64"):
        return "arm64"
    return m


def regs_text(regs: Any, mask: int, arch: str) -> str:
    """The text for one sample's registers ({"abi", "regs"} as decoded), or
    "" where the sample holds none (ABI_NONE: a kernel thread's user regs)."""
    if not regs or not regs.get("abi") or regs.get("regs") is None:
        return ""
    names = _NAMES.get(arch, {})
    out = [" ABI:%d " % regs["abi"]]
    values = iter(regs["regs"])
    bit = 0
    while mask >> bit:
        if mask >> bit & 1:
            value = next(values, None)
            if value is None:
                break
            out.append("%5s:0x%x " % (names.get(bit, "unknown"), value))
        bit += 1
    return "".join(out)
