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

import struct
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from .addresses import address_for_lookup
from .arch import Arch, get_arch
from .cfi import (CfiError, StackOutOfRange, evaluate_expression,
                  RULE_UNDEFINED, RULE_SAME_VALUE, RULE_OFFSET, RULE_VAL_OFFSET,
                  RULE_REGISTER, RULE_EXPRESSION, RULE_VAL_EXPRESSION)

__all__ = ["unwind_dwarf", "unwind_columns", "UnwindResult", "UnwindModule", "StackSnapshot",
           "address_for_lookup", "STOP_REASONS"]

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
    frames: List[int] = field(default_factory=list)
    stop_reason: str = "max-depth"
    # indices into `frames` of those found by a frame-pointer step (heuristic)
    fp_fallback_frames: List[int] = field(default_factory=list)
    # indices into `frames` that are exact pcs (interrupted by a signal), not
    # return addresses: look them up without subtracting 1
    exact_ip_frames: List[int] = field(default_factory=list)
    stop_address: Optional[int] = None  # the avma/stack address behind the stop
    stop_detail: str = ""
    # cfas[i]: the canonical frame address of frames[i] (the caller's sp
    # after the return): with the return address, what identifies a
    # physical frame on its stack.  One shorter than `frames` when the walk
    # stopped before computing the last frame's CFA.
    cfas: List[int] = field(default_factory=list)
    sp: Optional[int] = None            # the innermost frame's sp (where the walk started)


@dataclass(slots=True)        # read for every frame: slots, not a dict
class UnwindModule:
    """What `find_module` returns for a mapping: its CFI (a CfiTable, or
    None for a binary without any) and its bias, avma - svma.  Any object
    with these attributes will do.  `frame_pointer_step`: where there is no
    CFI, may one frame-pointer step be tried (code without CFI: hand-written
    assembly, JIT code)?  Not for a binary that could not be found: its CFI
    exists but is out of reach, and its code usually keeps no frame pointer."""
    cfi: object
    bias: int
    frame_pointer_step: bool = True


class StackSnapshot:
    """A `read_stack` over a copy of the stack starting at `base` (the sp at
    sample time): word-size little-endian reads, None outside the copy."""

    __slots__ = ("base", "data", "end", "word", "_unpack")

    def __init__(self, base: int, data: bytes, word: int = 8):
        # Any buffer (bytes, a memoryview of the record): read in place,
        # never copied; one snapshot is 8 KiB or more per sample.
        self.base = base
        self.data = data
        self.end = base + len(data)
        self.word = word
        self._unpack = struct.Struct("<Q" if word == 8 else "<I").unpack_from

    def __call__(self, address: int) -> Optional[int]:
        off = address - self.base
        if off < 0 or address + self.word > self.end:
            return None
        return self._unpack(self.data, off)[0]


def unwind_dwarf(arch, regs: dict, read_stack: Callable[[int], Optional[int]],
                 find_module: Callable[[int], object], max_depth: int = 127) -> UnwindResult:
    """Walk the stack from `regs` (register name -> value, lowercase names of
    `arch`) using DWARF CFI.

    `find_module(avma)` returns an object with `.cfi` (a CfiTable or None)
    and `.bias` (avma - svma) for the mapping holding avma, or None; it is
    asked about the lookup address (the ip, then each return address - 1).
    `read_stack(address)` returns the pointer-size word there or None.
    """
    arch = get_arch(arch)
    ptr_mask = (1 << (8 * arch.pointer_size)) - 1
    columns = arch.register_columns
    cur = {}
    ip = None
    for name, value in regs.items():
        num = columns.get(name)
        if num is None:
            num = columns.get(name.lower())
            if num is None:
                continue
        if num == -1:
            ip = value
        elif value is not None:
            cur[num] = value & ptr_mask
    return unwind_columns(arch, ip, cur, read_stack, find_module, max_depth)


def unwind_columns(arch, ip: Optional[int], columns: dict,
                   read_stack: Callable[[int], Optional[int]],
                   find_module: Callable[[int], object], max_depth: int = 127) -> UnwindResult:
    """unwind_dwarf with the registers already by DWARF column (a dict the
    walk takes over) and the ip apart: what a caller with many samples of
    one register layout builds straight from them (Arch.perf_columns)."""
    arch = get_arch(arch)
    result = UnwindResult()
    try:
        _walk(arch, ip, columns, read_stack, find_module, max_depth, result)
    except Exception as exc:    # a callback or a bug: stop, never raise
        result.stop_reason = "bad-cfi"
        result.stop_detail = "%s: %s" % (type(exc).__name__, exc)
    return result


def _walk(arch: Arch, ip, cur, read_stack, find_module, max_depth, result):
    frames = result.frames
    cfas = result.cfas
    ptr_mask = (1 << (8 * arch.pointer_size)) - 1
    psize = arch.pointer_size
    sp_col = arch.sp_column
    fp_col = arch.fp_column
    ra_col = arch.ra_column
    # When the RA column is a virtual one (x86_64's 16 is "rip"), it holds
    # the frame's pc for expressions (the PLT's CFA uses breg16).
    ip_col = arch.name_to_dwarf.get(arch.ip)
    ra_is_ip = arch.dwarf_names.get(ra_col) == arch.ip
    keep_cols = arch.callee_saved_columns

    if ip is None or sp_col not in cur:
        result.stop_reason = "bad-cfi"
        result.stop_detail = "no %s or %s register" % (arch.ip, arch.sp)
        return
    result.sp = cur[sp_col]

    def get_reg(num):
        # (sees the current frame's ip and cur: closures read the latest binding)
        if num == ip_col or (ra_is_ip and num == ra_col):
            return ip
        return cur.get(num)

    is_return_address = False
    while True:
        frames.append(ip)
        if len(frames) >= max_depth:
            result.stop_reason = "max-depth"
            return
        lookup = ip - 1 if is_return_address else ip
        module = find_module(lookup)
        if module is None:
            result.stop_reason = "no-map"
            result.stop_address = ip
            return
        cfi = getattr(module, "cfi", None)
        row = cfi.row_for(lookup - module.bias) if cfi is not None else None
        sp = cur[sp_col]

        if row is None and is_return_address and cfi is not None:
            # A "return address" at the first byte of a function with CFI,
            # while the byte before it has none, was pushed, not left by a
            # call: makecontext pushes __start_context's entry this way (glibc
            # 2.36 gives that function no undefined-RA rule).  The words above
            # are the context's arguments, not frames: the stack ends here.
            fde_range = cfi.fde_range(ip - module.bias)
            if fde_range is not None and fde_range[0] == ip - module.bias:
                result.stop_reason = "outermost"
                result.stop_detail = "pushed return address at a function entry"
                return

        if row is None and not getattr(module, "frame_pointer_step", True):
            result.stop_reason = "no-cfi"
            result.stop_detail = "the binary is not available"
            result.stop_address = ip
            return

        if row is None:
            # No CFI: one frame-pointer step if the frame pointer points into
            # the snapshot above sp.
            fp = cur.get(fp_col)
            saved_fp = ra = None
            if fp is not None and fp >= sp:
                saved_fp = read_stack(fp + arch.fp_saved_fp)
                ra = read_stack(fp + arch.fp_saved_ra)
            if saved_fp is None or ra is None:
                result.stop_reason = "no-cfi"
                result.stop_address = ip
                return
            new_sp = fp + arch.fp_caller_sp
            cfas.append(new_sp)
            ra &= arch.ra_mask
            if ra == 0:
                result.stop_reason = "zero-ra"
                return
            if new_sp <= sp:
                result.stop_reason = "cfa-not-increasing"
                result.stop_address = ip
                return
            cur = {sp_col: new_sp, fp_col: saved_fp}
            result.fp_fallback_frames.append(len(frames))
            ip = ra
            is_return_address = True
            continue

        try:
            # the CFA
            if row.cfa_expression is None:
                base = cur.get(row.cfa_register)
                if base is None:
                    result.stop_reason = "bad-cfi"
                    result.stop_detail = "CFA needs unknown register %s" % row.cfa_register
                    result.stop_address = ip
                    return
                cfa = (base + row.cfa_offset) & ptr_mask
            else:
                cfa = evaluate_expression(row.cfa_expression, get_reg, read_stack, (),
                                          psize)
            cfas.append(cfa)

            # the caller's registers
            new = {}
            for col in keep_cols:
                v = cur.get(col)
                if v is not None:
                    new[col] = v
            ra_undefined = False
            for col, (kind, arg) in row.rules.items():
                if kind is RULE_OFFSET:
                    addr = (cfa + arg) & ptr_mask
                    v = read_stack(addr)
                    if v is None:
                        v = _unreadable_slot(col, addr, sp, cur, ra_col)
                elif kind is RULE_VAL_OFFSET:
                    v = (cfa + arg) & ptr_mask
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
                        v = _unreadable_slot(col, addr, sp, cur, ra_col)
                elif kind is RULE_VAL_EXPRESSION:
                    v = evaluate_expression(arg, get_reg, read_stack, (cfa,), psize)
                else:
                    continue
                if v is None:
                    new.pop(col, None)
                else:
                    new[col] = v
        except StackOutOfRange as exc:
            result.stop_reason = "stack-exhausted"
            result.stop_address = exc.address
            return
        except (CfiError, IndexError) as exc:
            result.stop_reason = "bad-cfi"
            result.stop_detail = str(exc)
            result.stop_address = ip
            return

        if ra_undefined:
            result.stop_reason = "outermost"
            return
        if ra_is_ip:
            ra = new.pop(ra_col, None)
        else:
            ra = new.get(ra_col)
        if ra is None:
            result.stop_reason = "bad-cfi"
            result.stop_detail = "no rule for the return address"
            result.stop_address = ip
            return
        ra &= arch.ra_mask
        if sp_col not in row.rules:
            new[sp_col] = cfa
        new_sp = new[sp_col]
        # The caller's frame lies above ours.  Equal is allowed only for the
        # innermost frame when the return address lives in a register (an
        # aarch64 leaf that does not move sp); on x86_64 the call pushed it.
        # A signal frame may switch stacks (sigaltstack).
        if not row.signal_frame and (
                new_sp < sp or (new_sp == sp and (ra_is_ip or len(frames) > 1))):
            result.stop_reason = "cfa-not-increasing"
            result.stop_address = ip
            return
        if ra == 0:
            result.stop_reason = "zero-ra"
            return
        cur = new
        ip = ra
        # after a signal trampoline the caller's address is the interrupted
        # pc itself, not a return address
        is_return_address = not row.signal_frame
        if row.signal_frame:
            result.exact_ip_frames.append(len(frames))


def _unreadable_slot(col, addr, sp, cur, ra_col):
    """Value for a register whose save slot lies outside the snapshot.

    Only the return address is essential (StackOutOfRange ends the walk).
    A slot below sp was already popped in an epilogue whose CFI still
    names it, so the register holds the caller's value; a slot beyond the
    copy leaves the register unknown (None), as libdw does, and the walk
    goes on as long as nothing needs it."""
    if col == ra_col:
        raise StackOutOfRange(addr)
    if addr < sp:
        return cur.get(col)
    return None
