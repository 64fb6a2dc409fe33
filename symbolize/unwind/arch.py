"""Register models of the architectures the unwinder knows.

Everything architecture-specific the unwinder needs is data in an `Arch`
record: DWARF register numbers and names, which registers are the
instruction pointer, stack pointer, frame pointer and return address, the
pointer size, which registers survive a call (the only ones whose values
carry over to the caller when CFI says nothing), and the frame-pointer step
rule.  A new architecture is a new `Arch(...)` literal, no new code.

Register values reach the unwinder as a dict of lowercase names -> int
('rip', 'rsp', 'rbp', 'rbx', ... on x86_64; 'pc', 'sp', 'x29', 'x30', ... on
aarch64), as perf's REGS_USER names them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    # Arch.perf_columns: (number of u64s, position of the ip or None, a reader
    # of the other registers' values, their DWARF columns).
    PerfColumns = tuple[int, int | None, Callable[[Sequence[int]], tuple[int, ...]],
                        tuple[int, ...]]

__all__ = ["Arch", "X86_64", "AARCH64", "ARCHES", "get_arch"]


@dataclass(frozen=True)
class Arch:
    name: str
    pointer_size: int
    # DWARF register number -> register name, as in the psABI DWARF tables.
    dwarf_names: dict[int, str]
    ip: str                 # name of the program counter in the regs dict
    sp: str
    fp: str
    # DWARF column holding the return address in CFI (16 on x86_64, a virtual
    # column; 30 on aarch64, the real link register).
    ra_column: int
    # Registers preserved across calls by the psABI.  When a row has no rule
    # for one of them it has the "same value" in the caller; the others are
    # clobbered by the call and are dropped rather than carried over wrongly.
    callee_saved: tuple[str, ...]
    # Frame-pointer step: the frame record at fp holds the caller's fp at
    # fp + fp_saved_fp and the return address at fp + fp_saved_ra; the
    # caller's sp is fp + fp_caller_sp.
    fp_saved_fp: int
    fp_saved_ra: int
    fp_caller_sp: int
    # Return addresses are masked with this (aarch64 pointer authentication
    # puts a signature in the high bits).
    ra_mask: int
    # Other spellings of register names (perf's own: 'ip', 'bp', 'lr', ...).
    aliases: dict[str, str] = field(default_factory=dict)
    # Names by the kernel's perf register number (arch/*/include/uapi/asm/
    # perf_regs.h): bit i of sample_regs_user is perf_regs[i]; None for
    # registers the unwinder has no use for (segment registers, flags).
    perf_regs: tuple[str | None, ...] = ()
    # The system-call instruction, where it says where it was: its length,
    # the register it loads with the address after it (x86_64's `syscall`
    # puts it in rcx, and the kernel's saved user registers keep it there),
    # and the register of the call's result.  Code whose CFI ends at such an
    # instruction (glibc's clone and clone3: in the child "the unwind info
    # will be wrong") is unwound from a sample right after it by the row
    # before it; 0 / None: no such rule.
    syscall_length: int = 0
    syscall_next_ip: str | None = None
    syscall_result: str | None = None
    name_to_dwarf: dict[str, int] = field(init=False, repr=False, compare=False)
    register_columns: dict[str, int] = field(init=False, repr=False, compare=False)
    callee_saved_columns: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = {n: num for num, n in self.dwarf_names.items()}
        for alias, real in self.aliases.items():
            names.setdefault(alias, names[real])
        object.__setattr__(self, "name_to_dwarf", names)
        # What the unwinder looks up per sample, worked out once: the DWARF
        # column of each register name (-1 for the ip, in whatever spelling),
        # and the columns of the callee-saved registers.
        columns = {n: (-1 if n == self.ip or self.aliases.get(n) == self.ip else num)
                   for n, num in names.items()}
        columns.setdefault(self.ip, -1)
        for alias, real in self.aliases.items():
            if real == self.ip:
                columns[alias] = -1
        object.__setattr__(self, "register_columns", columns)
        object.__setattr__(self, "callee_saved_columns",
                           tuple(names[n] for n in self.callee_saved))

    @property
    def sp_column(self) -> int:
        return self.name_to_dwarf[self.sp]

    @property
    def fp_column(self) -> int:
        return self.name_to_dwarf[self.fp]

    def regs_from_perf(self, mask: int, values: Sequence[int]) -> dict[str, int]:
        """The regs dict for the unwinder from a sample's REGS_USER: `mask`
        is the attr's sample_regs_user, `values` the u64s in bit order."""
        names = self.perf_reg_names(mask)
        return {name: value for name, value in zip(names, values) if name is not None}

    def perf_columns(self, mask: int) -> PerfColumns:
        """How to read the registers the unwinder uses out of a REGS_USER of
        this mask (callers keep it per mask): (number of u64s, position of
        the ip or None, an itemgetter of the others' positions, their DWARF
        columns) (see Unwinder.walk)."""
        names = self.perf_reg_names(mask)
        ip_index, positions, columns = None, [], []
        for i, name in enumerate(names):
            column = self.register_columns.get(name) if name is not None else None
            if column == -1:
                ip_index = i
            elif column is not None:
                positions.append(i)
                columns.append(column)
        getter = (itemgetter(*positions) if len(positions) > 1 else
                  (lambda values, i=positions[0]: (values[i],)) if positions else
                  (lambda values: ()))
        return len(names), ip_index, getter, tuple(columns)

    def perf_reg_names(self, mask: int) -> tuple[str | None, ...]:
        """The register name of each u64 a REGS_USER of this mask holds, in
        order (None for those the unwinder has no use for); once per mask."""
        names = _REG_NAMES.get((self.name, mask))
        if names is None:
            names = tuple(self.perf_regs[bit] if bit < len(self.perf_regs) else None
                          for bit in range(mask.bit_length()) if mask >> bit & 1)
            _REG_NAMES[(self.name, mask)] = names
        return names


_REG_NAMES: dict[tuple[str, int], tuple[str | None, ...]] = {}   # per (arch, mask)

X86_64 = Arch(
    name="x86_64",
    pointer_size=8,
    dwarf_names={
        0: "rax", 1: "rdx", 2: "rcx", 3: "rbx", 4: "rsi", 5: "rdi",
        6: "rbp", 7: "rsp",
        8: "r8", 9: "r9", 10: "r10", 11: "r11",
        12: "r12", 13: "r13", 14: "r14", 15: "r15",
        16: "rip",  # the return-address column
    },
    ip="rip", sp="rsp", fp="rbp",
    ra_column=16,
    callee_saved=("rbx", "rbp", "r12", "r13", "r14", "r15"),
    fp_saved_fp=0, fp_saved_ra=8, fp_caller_sp=16,
    ra_mask=(1 << 64) - 1,
    aliases={"ax": "rax", "bx": "rbx", "cx": "rcx", "dx": "rdx", "si": "rsi",
             "di": "rdi", "bp": "rbp", "sp": "rsp", "ip": "rip"},
    perf_regs=("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "rip",
               None, None, None, None, None, None, None,   # flags, cs, ss, ds, es, fs, gs
               "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"),
    syscall_length=2, syscall_next_ip="rcx", syscall_result="rax",
)

AARCH64 = Arch(
    name="aarch64",
    pointer_size=8,
    dwarf_names=dict([(i, "x%d" % i) for i in range(31)] + [(31, "sp"), (32, "pc")]),
    ip="pc", sp="sp", fp="x29",
    ra_column=30,   # x30 is the link register
    callee_saved=tuple("x%d" % i for i in range(19, 31)),
    # AAPCS64 frame record: x29 -> {saved x29, saved x30}; the frame record
    # normally sits at the bottom of the frame, so the caller's sp is only a
    # guess (fp + 16); the CFI of the caller does not depend on it in practice.
    fp_saved_fp=0, fp_saved_ra=8, fp_caller_sp=16,
    # Keep 48 bits of virtual address: strips a pointer-authentication code.
    ra_mask=(1 << 48) - 1,
    aliases={"lr": "x30", "fp": "x29"},
    perf_regs=tuple("x%d" % i for i in range(31)) + ("sp", "pc"),
)

ARCHES = {a.name: a for a in (X86_64, AARCH64)}
# perf and uname spellings
ARCHES["x86-64"] = X86_64
ARCHES["arm64"] = AARCH64


def get_arch(name: str | Arch) -> Arch:
    """An Arch from its name ('x86_64', 'aarch64', 'arm64'), or the Arch itself."""
    if isinstance(name, Arch):
        return name
    return ARCHES[name.lower()]
