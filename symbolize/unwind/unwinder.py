"""DWARF CFI unwinder: registers, a stack reader and per-module CFI in,
frame addresses out.

Like framehop, it knows nothing of symbols, perf.data or processes: the
caller gives the registers of the innermost frame, a `read_stack(address)`
callable over its copy of the stack, and a `find_module(avma)` callable that
says which mapping holds an address, with that mapping's CfiTable and bias
(avma - svma).  The result is the list of frame addresses (the ip, then raw
return addresses) and why the walk stopped.

It never raises on bad input: a missing mapping, missing or malformed CFI,
an expression it cannot evaluate or a read beyond the snapshot all end the
walk with a `stop_reason`.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..addresses import address_for_lookup
from .arch import get_arch
from .cfi import (CfiError, StackOutOfRange, evaluate_expression,
                  RULE_UNDEFINED, RULE_SAME_VALUE, RULE_OFFSET, RULE_VAL_OFFSET,
                  RULE_REGISTER, RULE_EXPRESSION, RULE_VAL_EXPRESSION)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol

    from ..elffile import Binary
    from .arch import Arch
    from .cfi import CfiRow, CfiTable

    class ModuleLike(Protocol):
        """What `find_module` returns: an UnwindModule, or any object with
        these attributes (and maybe `frame_pointer_step`)."""
        @property
        def cfi(self) -> CfiTable | None: ...
        @property
        def bias(self) -> int: ...

    # A step's result: (caller's ip, caller's regs, how it was found, this frame's CFA).
    Step = tuple[int, dict[int, int], str, int]

__all__ = ["Unwinder", "UnwindStop", "unwind_dwarf", "UnwindResult",
           "UnwindModule", "StackSnapshot", "address_for_lookup", "STOP_REASONS",
           "INNERMOST", "RETURN_ADDRESS", "FRAME_POINTER", "INTERRUPTED"]

# What row.rules.get gives for a column without a rule (kind, argument).
_NO_RULE = (None, None)

STOP_REASONS = (
    "outermost",            # the return-address rule is undefined (_start, clone3, __start_context)
    "stack-exhausted",      # a needed word lies outside the snapshot (stop_address says which)
    "no-map",               # the address is in no known mapping
    "no-cfi",               # no CFI there and no frame-pointer step possible
    "cfa-not-increasing",   # the caller's sp would not be above ours: a loop or garbage
    "max-depth",
    "bad-cfi",              # CFI we cannot evaluate (unknown register, bad expression)
    "zero-ra",              # a return address of 0 (the aarch64 outermost frame, or garbage)
)


@dataclass
class UnwindResult:
    frames: list[int] = field(default_factory=list)
    stop_reason: str = "max-depth"
    # indices into `frames` of those found by a frame-pointer step (heuristic)
    fp_fallback_frames: list[int] = field(default_factory=list)
    # indices into `frames` that are exact pcs (interrupted by a signal), not
    # return addresses: look them up without subtracting 1
    exact_ip_frames: list[int] = field(default_factory=list)
    stop_address: int | None = None  # the avma/stack address behind the stop
    stop_detail: str = ""
    # cfas[i]: the canonical frame address of frames[i] (the caller's sp
    # after the return): with the return address, what identifies a
    # physical frame on its stack.  One shorter than `frames` when the walk
    # stopped before computing the last frame's CFA.
    cfas: list[int] = field(default_factory=list)
    sp: int | None = None            # the innermost frame's sp (where the walk started)


@dataclass(slots=True)        # read for every frame: slots, not a dict
class UnwindModule:
    """What `find_module` returns for a mapping: its CFI (a CfiTable, or
    None for a binary without any) and its bias, avma - svma.  Any object
    with these attributes will do.  `frame_pointer_step`: where there is no
    CFI, may one frame-pointer step be tried (code without CFI: hand-written
    assembly, JIT code)?  Not for a binary that could not be found: its CFI
    exists but is out of reach, and its code usually keeps no frame pointer."""
    cfi: CfiTable | None
    bias: int
    frame_pointer_step: bool = True
    # x86_64 PLT sections (svma start, end, kind: PLT_JUMPS, PLT_LAZY,
    # PLT_WITH_PLT0), for a pc in a stub the binary gives no CFI for (lld
    # emits none for .plt and .iplt)
    plt: tuple[tuple[int, int, int], ...] = ()


_READ_U64 = struct.Struct("<Q").unpack_from
_READ_U32 = struct.Struct("<I").unpack_from


class StackSnapshot:
    """A `read_stack` over a copy of the stack starting at `base` (the sp at
    sample time): word-size little-endian reads, None outside the copy."""

    __slots__ = ("base", "data", "end", "word", "_unpack")

    def __init__(self, base: int, data: bytes | memoryview, word: int = 8) -> None:
        # Any buffer (bytes, a memoryview of the record): read in place,
        # never copied; one snapshot is 8 KiB or more per sample.
        self.base = base
        self.data = data
        self.end = base + len(data)
        self.word = word
        self._unpack = _READ_U64 if word == 8 else _READ_U32

    def __call__(self, address: int) -> int | None:
        off = address - self.base
        if off < 0 or address + self.word > self.end:
            return None
        return self._unpack(self.data, off)[0]


# How a frame's address was found: what `step` needs to know of the frame it
# starts from, and what it says of the caller it found.
INNERMOST = "innermost"             # the ip of the registers the walk starts from
PLT_JUMPS, PLT_LAZY, PLT_WITH_PLT0 = 0, 1, 2      # UnwindModule.plt kinds
RETURN_ADDRESS = "return-address"   # a return address found by CFI (look up address - 1)
FRAME_POINTER = "frame-pointer"     # a return address found by a frame-pointer step (heuristic)
INTERRUPTED = "interrupted"         # the pc a signal interrupted (after a signal frame): exact


def plt_stub_sections(binary: Binary) -> tuple[tuple[int, int, int], ...]:
    """An x86_64 binary's PLT sections as the unwinder steps over their
    stubs where no CFI covers them (UnwindModule.plt: svma start, end, stub
    layout); () for another machine or a damaged file."""
    layouts = {".plt": PLT_WITH_PLT0, ".iplt": PLT_LAZY, ".plt.sec": PLT_JUMPS,
               ".plt.got": PLT_JUMPS}
    try:
        if binary.machine != "EM_X86_64":
            return ()
        return tuple((s.addr, s.addr + s.size, layouts[s.name]) for s in binary.sections
                     if s.name in layouts and s.size)
    except Exception:       # (a damaged file: no PLT steps)
        return ()


class UnwindStop(Exception):
    """Why `Unwinder.step` found no caller: `reason` (one of STOP_REASONS),
    the avma or stack address behind it (`address`, or None), a `detail`
    text, and the frame's CFA when it was computed before the stop (None
    otherwise)."""

    def __init__(self, reason: str, address: int | None = None, detail: str = "",
                 cfa: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.address = address
        self.detail = detail
        self.cfa = cfa


class Unwinder:
    """DWARF CFI unwinding for one architecture.

    `step` has the shape of framehop's `Unwinder::unwind_frame`: the
    registers of one frame in, its caller's registers out, or an UnwindStop
    saying why there is none; `walk` is the loop over it that builds an
    UnwindResult.  A caller may drive `step` itself, frame by frame.

    Registers are a dict DWARF column -> value (pointer-size ints) without
    the ip, which travels apart: `regs_from_names` makes one from register
    names, `Arch.perf_columns` from a sample's REGS_USER.

    The architecture's constants are slots read by each step.  A step is
    one bound-method call per frame: on benchmarks/bench_real.py's
    python-big (a CPython recording of ~300 MiB, 698k frames) the walk took
    ~1.95 s of CPU against ~1.88 s with the step's body inlined in the loop
    (~0.1 us a frame, within the noise of a shared machine); a closure
    over the constants instead of slots was no faster.
    The first cut, the old loop body moved as it was into a plain function
    (constants worked out per call), cost 0.55 us a frame more.
    """

    __slots__ = ("arch", "ptr_mask", "_sp_column", "_fp_column", "_ra_column", "_ip_column",
                 "_ra_is_ip", "_callee_saved_columns", "_callee_saved_and_sp", "_ra_mask",
                 "_syscall")

    def __init__(self, arch: str | Arch) -> None:
        arch = get_arch(arch)
        self.arch = arch
        self.ptr_mask = (1 << (8 * arch.pointer_size)) - 1
        self._sp_column = arch.sp_column
        self._fp_column = arch.fp_column
        self._ra_column = arch.ra_column
        # When the RA column is a virtual one (x86_64's 16 is "rip"), it holds
        # the frame's pc for expressions (the PLT's CFA uses breg16).
        self._ip_column = arch.name_to_dwarf.get(arch.ip)
        self._ra_is_ip = arch.dwarf_names.get(arch.ra_column) == arch.ip
        self._callee_saved_columns = arch.callee_saved_columns
        self._callee_saved_and_sp = frozenset(arch.callee_saved_columns + (arch.sp_column,))
        self._ra_mask = arch.ra_mask
        # (instruction length, column of the address after it, column of
        # the result) or None: see Arch.syscall_length
        self._syscall = (arch.syscall_length, arch.name_to_dwarf[arch.syscall_next_ip],
                         arch.name_to_dwarf[arch.syscall_result]) \
            if arch.syscall_length and arch.syscall_next_ip and arch.syscall_result else None

    @classmethod
    def for_arch(cls, arch: str | Arch) -> "Unwinder":
        """The shared Unwinder of an architecture (an Arch or its name)."""
        arch = get_arch(arch)
        unwinder = _UNWINDERS.get(arch.name)
        if unwinder is None or unwinder.arch is not arch:
            unwinder = _UNWINDERS[arch.name] = cls(arch)
        return unwinder

    @property
    def ra_is_ip(self) -> bool:
        """The return-address column is the ip's (x86_64's virtual 16)."""
        return self._ra_is_ip

    @property
    def callee_saved_and_sp(self) -> frozenset[int]:
        """The columns a row without rules keeps: the callee-saved and sp."""
        return self._callee_saved_and_sp

    def regs_from_names(self, named: dict) -> tuple[int | None, dict[int, int]]:
        """(ip, regs) from register name -> value (lowercase names of the
        arch, or perf's aliases); values masked to the pointer size."""
        columns = self.arch.register_columns
        ptr_mask = self.ptr_mask
        regs = {}
        ip = None
        for name, value in named.items():
            num = columns.get(name)
            if num is None:
                num = columns.get(name.lower())
                if num is None:
                    continue
            if num == -1:
                ip = value
            elif value is not None:
                regs[num] = value & ptr_mask
        return ip, regs

    def walk(self, ip: int | None, regs: dict, read_stack: Callable[[int], int | None],
             find_module: Callable[[int], ModuleLike | None],
             max_depth: int = 127) -> UnwindResult:
        """The stack from the frame at `ip` with registers `regs` (a dict the
        walk takes over), at most `max_depth` frames: `step` until it stops."""
        result = UnwindResult()
        frames = result.frames
        cfas = result.cfas
        if ip is None or self._sp_column not in regs:
            result.stop_reason = "bad-cfi"
            result.stop_detail = "no %s or %s register" % (self.arch.ip, self.arch.sp)
            return result
        result.sp = regs[self._sp_column]
        step = self.step
        kind = INNERMOST
        try:
            while True:
                frames.append(ip)
                if len(frames) >= max_depth:
                    result.stop_reason = "max-depth"
                    return result
                ip, regs, kind, cfa = step(ip, regs, kind, read_stack, find_module)
                cfas.append(cfa)
                if kind is not RETURN_ADDRESS:
                    if kind is INTERRUPTED:
                        result.exact_ip_frames.append(len(frames))
                    else:
                        result.fp_fallback_frames.append(len(frames))
        except UnwindStop as stop:
            if stop.cfa is not None:
                cfas.append(stop.cfa)
            result.stop_reason = stop.reason
            result.stop_address = stop.address
            result.stop_detail = stop.detail
        return result

    def step(self, ip: int, regs: dict, kind: str, read_stack: Callable[[int], int | None],
             find_module: Callable[[int], ModuleLike | None]) -> Step:
        """The caller of the frame at `ip` with registers `regs` (not
        changed), found as `kind` says (INNERMOST for the registers a walk
        starts from; else what the step that found this frame returned):
        (caller's ip, caller's regs, how it was found, this frame's CFA).
        Raises UnwindStop, and nothing else, when there is no caller."""
        cfa = None
        try:
            # address_for_lookup, inlined: a return address is never 0 here
            is_return_address = kind is RETURN_ADDRESS or kind is FRAME_POINTER
            lookup = ip - 1 if is_return_address else ip
            module = find_module(lookup)
            if module is None:
                raise UnwindStop("no-map", ip)
            cfi = module.cfi
            row = cfi.rows[lookup - module.bias] if cfi is not None else None
            sp_col = self._sp_column
            sp = regs[sp_col]
            if row is None and kind is INNERMOST and cfi is not None and \
                    self._syscall is not None:
                row = self._row_before_syscall(ip, regs, module.bias, cfi)
            if row is None:
                return self._step_without_cfi(ip, regs, sp, is_return_address, module, cfi,
                                              read_stack, find_module)
            ra_col = self._ra_column
            cfa, new, ra_undefined = self._apply_row(row, ip, regs, sp, read_stack)
            if ra_undefined:
                raise UnwindStop("outermost", cfa=cfa)
            ra_is_ip = self._ra_is_ip
            if ra_is_ip:
                ra = new.pop(ra_col, None)
            else:
                ra = new.get(ra_col)
            if ra is None:
                raise UnwindStop("bad-cfi", ip, "no rule for the return address", cfa)
            ra &= self._ra_mask
            if sp_col not in row.rules:
                new[sp_col] = cfa
            new_sp = new[sp_col]
            # The caller's frame lies above ours.  Equal is allowed only for
            # the innermost frame when the return address lives in a register
            # (an aarch64 leaf that does not move sp); on x86_64 the call
            # pushed it, but for code that popped it into a register its CFI
            # names (glibc's vfork keeps it in %rdi across the syscall, where
            # the child's first instant and the parent's return are
            # sampled).  A signal frame may switch stacks (sigaltstack).
            if not row.signal_frame and (
                    new_sp < sp or (new_sp == sp and (
                        kind is not INNERMOST or
                        ra_is_ip and row.rules.get(ra_col, _NO_RULE)[0] is not RULE_REGISTER))):
                raise UnwindStop("cfa-not-increasing", ip, cfa=cfa)
            if ra == 0:
                raise UnwindStop("zero-ra", cfa=cfa)
            # after a signal trampoline the caller's address is the
            # interrupted pc itself, not a return address
            return ra, new, INTERRUPTED if row.signal_frame else RETURN_ADDRESS, cfa
        except UnwindStop:
            raise
        except Exception as exc:    # a callback or a bug: stop, never raise
            raise UnwindStop("bad-cfi", None, "%s: %s" % (type(exc).__name__, exc),
                             cfa) from None

    def _apply_row(self, row: CfiRow, ip: int, regs: dict, sp: int,
                   read_stack: Callable[[int], int | None]) -> tuple[int, dict, bool]:
        """(this frame's CFA, the caller's registers, whether the return
        address is undefined: the outermost frame) by a CFI row; an
        UnwindStop where the row cannot be followed."""
        mask = self.ptr_mask
        cfa = None
        try:
            # the CFA
            if row.cfa_expression is None:
                base = regs.get(row.cfa_register)
                if base is None:
                    raise UnwindStop("bad-cfi", ip, "CFA needs unknown register %s"
                                     % row.cfa_register)
                cfa = (base + row.cfa_offset) & mask
            else:
                cfa = evaluate_expression(row.cfa_expression, self._get_reg(ip, regs),
                                          read_stack, (), self.arch.pointer_size)

            # the caller's registers: the callee-saved ones carry over
            # unless a rule says otherwise
            saved = row.saved_slots
            if saved is not None and regs.keys() <= self._callee_saved_and_sp:
                # a caller's registers as the last step made them: a
                # copy (sp is in it, but a rule or the CFA replaces it
                # below, or the walk stops)
                new = regs.copy()
            else:
                new = {}
                for col in self._callee_saved_columns:
                    v = regs.get(col)
                    if v is not None:
                        new[col] = v
            ra_undefined = False
            if saved is not None and type(read_stack) is StackSnapshot:
                # every rule "saved at CFA + offset", all slots inside
                # the snapshot: read in one call
                columns, first, size, unpack_from = saved
                at = cfa + first
                if read_stack.base <= at and at + size <= read_stack.end:
                    new.update(zip(columns, unpack_from(read_stack.data,
                                                        at - read_stack.base)))
                else:
                    ra_undefined = self._apply_rules(row, ip, regs, new, cfa, sp, read_stack)
            else:
                ra_undefined = self._apply_rules(row, ip, regs, new, cfa, sp, read_stack)
        except StackOutOfRange as exc:
            raise UnwindStop("stack-exhausted", exc.address, cfa=cfa) from None
        except (CfiError, IndexError) as exc:
            raise UnwindStop("bad-cfi", ip, str(exc), cfa) from None
        except UnwindStop:
            raise
        except Exception as exc:    # a callback or a bug: stop, never raise
            raise UnwindStop("bad-cfi", None, "%s: %s" % (type(exc).__name__, exc),
                             cfa) from None
        return cfa, new, ra_undefined

    def _row_before_syscall(self, ip: int, regs: dict[int, int], bias: int,
                            cfi: CfiTable) -> CfiRow | None:
        """The CFI row for an innermost ip without one, right after a
        system-call instruction at which an FDE ends (the register the
        instruction loads says it is one: x86_64's rcx), or None.  glibc's
        clone and clone3 end their CFI there, as the child's state is not
        the parent's: a sample in the call (the kernel's copy_process, a
        pthread_create's or posix_spawn's) or as it returns is the parent's
        where the result is not 0, and the call moved no register the row
        before it reads; in the child (result 0), on a new stack, nothing
        lies above: the stack ends there."""
        length, next_ip_column, result_column = self._syscall  # type: ignore[misc]
        if regs.get(next_ip_column) != ip:
            return None
        at = ip - length - bias         # the instruction, in the file's addresses
        fde_range = cfi.fde_range(at - 1)
        if fde_range is None or fde_range[1] != at:
            return None
        if regs.get(result_column) == 0:
            raise UnwindStop("outermost", detail="a new thread's or process's first instant")
        return cfi.rows[at - 1]

    def _step_without_cfi(self, ip: int, regs: dict[int, int], sp: int, is_return_address: bool,
                          module: ModuleLike, cfi: CfiTable | None,
                          read_stack: Callable[[int], int | None],
                          find_module: Callable[[int], ModuleLike | None]) -> Step:
        if is_return_address and cfi is not None:
            # A "return address" at the first byte of a function with CFI,
            # while the byte before it has none, was pushed, not left by a
            # call: makecontext pushes __start_context's entry this way (glibc
            # 2.36 gives that function no undefined-RA rule).  The words above
            # are the context's arguments, not frames: the stack ends here.
            fde_range = cfi.fde_range(ip - module.bias)
            if fde_range is not None and fde_range[0] == ip - module.bias:
                raise UnwindStop("outermost", detail="pushed return address at a function entry")
        plt = getattr(module, "plt", ())
        if plt and not is_return_address:
            step = self._step_in_plt(ip - module.bias, plt, regs, sp, read_stack, find_module)
            if step is not None:
                return step
        if not getattr(module, "frame_pointer_step", True):
            raise UnwindStop("no-cfi", ip, "the binary is not available")
        # No CFI: one frame-pointer step if the frame pointer points into the
        # snapshot above sp.
        arch = self.arch
        fp_col = self._fp_column
        fp = regs.get(fp_col)
        if fp is None or fp < sp:
            raise UnwindStop("no-cfi", ip)
        saved_fp = read_stack(fp + arch.fp_saved_fp)
        ra = read_stack(fp + arch.fp_saved_ra)
        if saved_fp is None or ra is None:
            raise UnwindStop("no-cfi", ip)
        new_sp = fp + arch.fp_caller_sp
        ra &= self._ra_mask
        if ra == 0:
            raise UnwindStop("zero-ra", cfa=new_sp)
        if new_sp <= sp:
            raise UnwindStop("cfa-not-increasing", ip, cfa=new_sp)
        if find_module(ra - 1) is None:
            # The step is a guess: a "return address" in no mapping says the
            # register was no frame pointer (a JIT leaf that pushes no frame,
            # called from code built without frame pointers), not a caller.
            raise UnwindStop("no-cfi", ip, "the frame-pointer step leads out of mapped code")
        return ra, {self._sp_column: new_sp, fp_col: saved_fp}, FRAME_POINTER, new_sp

    def _step_in_plt(self, svma: int, plt: tuple[tuple[int, int, int], ...],
                     regs: dict[int, int], sp: int,
                     read_stack: Callable[[int], int | None],
                     find_module: Callable[[int], ModuleLike | None]) -> Step | None:
        """A step from a pc in a PLT stub without CFI (x86_64; the stubs of
        `.plt` and `.iplt` are 16 bytes, `jmp *GOT(%rip); push $n; jmp
        PLT0`, PLT0 `push GOT+8; jmp *GOT+16`; those of `.plt.sec` and
        `.plt.got` one jump): the CFA as ld's CFI for `.plt` gives it, sp+8
        until the push, sp+16 after, PLT0 sp+16 then sp+24; the return
        address at CFA-8.  None where no section holds the pc."""
        if self.arch.name != "x86_64":
            return None
        for start, end, kind in plt:
            if start <= svma < end:
                break
        else:
            return None
        off = svma - start
        if kind == PLT_JUMPS:
            cfa = sp + 8
        elif kind == PLT_WITH_PLT0 and off < 16:
            cfa = sp + (16 if off < 6 else 24)
        else:
            cfa = sp + (8 if (off & 15) < 11 else 16)
        ra = read_stack(cfa - 8)
        if ra is None or ra == 0 or find_module(ra - 1) is None:
            return None
        # (a stub changes no callee-saved register)
        new = {col: regs[col] for col in self._callee_saved_columns if col in regs}
        new[self._sp_column] = cfa
        return ra, new, RETURN_ADDRESS, cfa

    def _get_reg(self, ip: int, regs: dict[int, int]) -> Callable[[int], int | None]:
        """A register reader for DWARF expressions over one frame."""
        ip_col, ra_col, ra_is_ip = self._ip_column, self._ra_column, self._ra_is_ip

        def get_reg(num: int) -> int | None:
            if num == ip_col or (ra_is_ip and num == ra_col):
                return ip
            return regs.get(num)
        return get_reg

    def _apply_rules(self, row: CfiRow, ip: int, regs: dict[int, int], new: dict[int, int],
                     cfa: int, sp: int, read_stack: Callable[[int], int | None]) -> bool:
        """Every kind of rule, in the row's order, into `new`; True when the
        return address is undefined (the outermost frame)."""
        mask = self.ptr_mask
        psize = self.arch.pointer_size
        ra_col = self._ra_column
        get_reg = self._get_reg(ip, regs)
        ra_undefined = False
        for col, (kind, arg) in row.rules.items():
            if kind is RULE_OFFSET:
                addr = (cfa + arg) & mask
                v = read_stack(addr)
                if v is None:
                    v = _unreadable_slot(col, addr, sp, regs, ra_col)
            elif kind is RULE_VAL_OFFSET:
                v = (cfa + arg) & mask
            elif kind is RULE_UNDEFINED:
                new.pop(col, None)
                if col == ra_col:
                    ra_undefined = True
                continue
            elif kind is RULE_SAME_VALUE:
                v = get_reg(col)
                if v is None:
                    new.pop(col, None)
                    continue
            elif kind is RULE_REGISTER:
                v = get_reg(arg)
                if v is None:
                    new.pop(col, None)
                    continue
            elif kind is RULE_EXPRESSION:
                addr = evaluate_expression(arg, get_reg, read_stack, (cfa,), psize)
                v = read_stack(addr)
                if v is None:
                    v = _unreadable_slot(col, addr, sp, regs, ra_col)
            elif kind is RULE_VAL_EXPRESSION:
                v = evaluate_expression(arg, get_reg, read_stack, (cfa,), psize)
            else:
                continue
            if v is None:
                new.pop(col, None)
            else:
                new[col] = v
        return ra_undefined


_UNWINDERS: dict[str, Unwinder] = {}     # arch name -> Unwinder


def unwind_dwarf(arch: str | Arch, regs: dict, read_stack: Callable[[int], int | None],
                 find_module: Callable[[int], ModuleLike | None],
                 max_depth: int = 127) -> UnwindResult:
    """Walk the stack from `regs` (register name -> value, lowercase names of
    `arch`) using DWARF CFI.

    `find_module(avma)` returns an object with `.cfi` (a CfiTable or None)
    and `.bias` (avma - svma) for the mapping holding avma, or None; it is
    asked about the lookup address (the ip, then each return address - 1).
    `read_stack(address)` returns the pointer-size word there or None.
    """
    unwinder = Unwinder.for_arch(arch)
    ip, by_column = unwinder.regs_from_names(regs)
    return unwinder.walk(ip, by_column, read_stack, find_module, max_depth)


def _unreadable_slot(col: int, addr: int, sp: int, regs: dict[int, int],
                     ra_col: int) -> int | None:
    """Value for a register whose save slot lies outside the snapshot.

    Only the return address is essential (StackOutOfRange ends the walk).
    A slot below sp was already popped in an epilogue whose CFI still
    names it, so the register holds the caller's value; a slot beyond the
    copy leaves the register unknown (None), as libdw does, and the walk
    goes on as long as nothing needs it."""
    if col == ra_col:
        raise StackOutOfRange(addr)
    if addr < sp:
        return regs.get(col)
    return None
