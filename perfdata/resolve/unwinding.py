"""DWARF unwinding of user stacks: joins a sample's REGS_USER and STACK_USER
and the session's maps to `symbolize.unwind`.

The unwinder starts from the ip/sp pair of REGS_USER: the registers and the
stack copy come from the same moment, so a sample ip corrected by the hardware
(precise_ip skid) is never mixed in; when the two ips differ, the sample ip
stays the printed leaf and the mismatch is counted.
"""
from __future__ import annotations

import sys
from array import array
from functools import partial
from typing import TYPE_CHECKING

from symbolize.unwind.arch import get_arch
from symbolize.unwind.cfi import RULE_EXPRESSION, RULE_UNDEFINED, RULE_VAL_EXPRESSION, CfiTable
from symbolize.unwind.unwinder import (FRAME_POINTER, INNERMOST, INTERRUPTED, RETURN_ADDRESS,
                                       StackSnapshot, UnwindModule, UnwindResult, UnwindStop,
                                       Unwinder, plt_stub_sections)

from .jit_sources import JIT_PATHS

if TYPE_CHECKING:
    import types
    from collections.abc import Callable

    from symbolize import Binary, Symbolizer
    from symbolize.unwind.arch import PerfColumns
    from symbolize.unwind.cfi import CfiRow
    from symbolize.unwind.jit import JitUnwindTable

    from ..session.maps import Map, MapGroup
    from ..session.stream import Sample

    # dso_of(map) -> (path to look the binary up by, build-id)
    DsoOf = Callable[[Map], tuple[str, str | None]]


class SampleUnwinder:
    """A sample's user stack by symbolize.unwind's Unwinder: its registers
    (`regs`, DWARF column -> value, from REGS_USER), its stack copy (a
    StackSnapshot) and the thread's maps as UnwindModules (module_for,
    module_finder)."""

    def __init__(self, symbolizer: Symbolizer, arch_name: str = "x86_64",
                 max_depth: int = 127, compiled: types.ModuleType | None = None) -> None:
        """compiled: perfdata.core._unwind, the walk with its common step in
        C (None: symbolize's walk)."""
        self.symbolizer = symbolizer
        self.arch = get_arch(arch_name)
        self.unwinder = Unwinder.for_arch(self.arch)
        # (the compiled walk's constants: None where it does not apply)
        self._walk_consts = compiled_walk_consts(self.unwinder) if compiled is not None else None
        self.compiled = compiled if self._walk_consts is not None else None
        # perf's registers are u64s: masked to the pointer size on 32-bit arches
        self._narrow = self.arch.pointer_size < 8
        self._sp_column = self.arch.sp_column
        self.max_depth = max_depth
        # (path, build_id) -> (CfiTable or None, Binary or None)
        self._cfi: dict[tuple[str, str | None], tuple[CfiTable | None, Binary | None]] = {}
        # (path, build_id, start, pgoff, memfd_is_jit) -> UnwindModule
        self._modules: dict[tuple[str, str | None, int, int, bool], UnwindModule] = {}
        # (id(map), memfd_is_jit) -> (map, UnwindModule): the same, found faster
        self._by_map: dict[tuple[int, bool], tuple[Map, UnwindModule]] = {}
        # (id(maps), id(JIT table), memfd_is_jit) -> (maps, code_generation, JIT table,
        # _ModulesAt): per address space (and the JIT code in it at the
        # sample's time), the module at each lookup address asked about
        self._modules_at: dict[tuple[int, int, bool], tuple[MapGroup, int, JitUnwindTable | None,
                                                      _ModulesAt]] = {}
        # id(JIT table) -> (table, the UnwindModule of anonymous code under it)
        self._jit_modules: dict[int, tuple[JitUnwindTable, UnwindModule]] = {}
        # sample_regs_user mask -> Arch.perf_columns(mask)
        self._reg_layouts: dict[int, PerfColumns] = {}
        self.counts = {"unwound": 0, "ip_mismatch": 0, "no_regs": 0, "empty_stack": 0}
        self.stop_reasons: dict[str, int] = {}

    def _cfi_for(self, path: str, build_id: str | None
                 ) -> tuple[CfiTable | None, Binary | None]:
        key = (path, build_id)
        if key not in self._cfi:
            table = None
            choice = self.symbolizer.binary_for(path, build_id)
            if choice.binary is not None:
                try:
                    # the Binaries the symbolizer opened: one ELF door
                    table = CfiTable.from_elf(choice.binary, debug_frame_path=choice.debug)
                except Exception:    # malformed CFI: unwinding stops there
                    table = None
            self._cfi[key] = (table, choice.binary)
        return self._cfi[key]

    def module_for(self, m: Map, dso: tuple[str, str | None], memfd_is_jit: bool = True
                   ) -> UnwindModule:
        """`memfd_is_jit`: may the code of a memfd mapping be stepped over by
        frame pointer as JIT code's?  Not where it is an ELF image run from
        the memfd (fexecve): built without frame pointers, its CFI out of
        reach, a step there reads garbage (perf stops at such a leaf)."""
        path, build_id = dso
        key = (path, build_id, m.start, m.pgoff, memfd_is_jit)
        mod = self._modules.get(key)
        if mod is not None:
            return mod
        file_backed = _file_backed(m)
        if file_backed:
            table, binary = self._cfi_for(path, build_id)
        else:
            table, binary = None, None
        if binary is not None:
            bias = binary.mapping_bias(m.start, m.pgoff, m.end - m.start)
            if bias is not None:
                mod = UnwindModule(table, bias, plt=plt_stub_sections(binary))
        if mod is None:
            # JIT code and anonymous maps may keep frame pointers; a binary
            # that is not here has CFI we cannot read (perf stops there too).
            step = not file_backed and (memfd_is_jit or not path.startswith("/memfd:"))
            mod = UnwindModule(None, m.start - m.pgoff, frame_pointer_step=step)
        self._modules[key] = mod
        return mod

    def unwind(self, sample: Sample, dso_of: DsoOf, jit: JitUnwindTable | None = None,
               memfd_is_jit: bool = True) -> UnwindResult | None:
        """UnwindResult for a sample, or None when it has no usable regs/stack.
        `jit`: the unwinding info of the JIT code in the process at the
        sample's time (its jitdump's CODE_UNWINDING_INFO, which perf inject
        --jit turns into the .eh_frame of each jitted .so), used for the
        anonymous memory the code lies in; `memfd_is_jit` as for
        `module_for` (the process wrote a perf map)."""
        fields = sample.fields
        regs_user = fields.get("regs_user")
        stack = fields.get("stack_user")
        if not regs_user or not regs_user.get("abi") or not regs_user.get("regs"):
            self.counts["no_regs"] += 1
            return None
        # Registers by DWARF column straight from the u64s (the layout is
        # worked out once per mask).
        values = regs_user["regs"]
        mask = sample.event.regs_user_mask
        layout = self._reg_layouts.get(mask)
        if layout is None:
            layout = self._reg_layouts[mask] = self.arch.perf_columns(mask)
        count, ip_index, take, column_of = layout
        if len(values) != count or ip_index is None:
            self.counts["no_regs"] += 1
            return None
        ip = values[ip_index]
        regs = dict(zip(column_of, take(values)))
        if self._narrow:                        # registers wider than pointers
            ptr_mask = self.unwinder.ptr_mask
            regs = {c: v & ptr_mask for c, v in regs.items()}
        sp = regs.get(self._sp_column)
        if sp is None or ip is None:
            self.counts["no_regs"] += 1
            return None
        dyn = (stack.get("dyn_size") or 0) if stack and stack.get("size") else 0
        if not dyn:
            # No stack copied (a kernel thread, a fault on the stack page):
            # perf does not unwind then (thread__resolve_callchain_unwind
            # "bails out if nothing was captured"), and prints no user frame.
            self.counts["empty_stack"] += 1
            return None
        data = stack["data"][:min(dyn, len(stack["data"]))]  # type: ignore[index]  # (dyn: a stack)
        read_stack = StackSnapshot(sp, data, self.arch.pointer_size)
        maps = sample.thread.maps if sample.thread is not None else None
        modules = self.modules_at(maps, dso_of, jit, memfd_is_jit)
        find_module = _no_module if modules is None else modules.__getitem__
        consts = self._walk_consts
        if self.compiled is not None and consts is not None and modules is not None and \
                self._sp_column in regs:
            result = compiled_walk(self.compiled, consts, self.unwinder, ip, regs,
                                   read_stack, modules, self.max_depth)
        else:
            result = self.unwinder.walk(ip, regs, read_stack, find_module, self.max_depth)
        self.counts["unwound"] += 1
        self.stop_reasons[result.stop_reason] = self.stop_reasons.get(result.stop_reason, 0) + 1
        return result

    def module_finder(self, maps: MapGroup | None, dso_of: DsoOf,
                      jit: JitUnwindTable | None = None, memfd_is_jit: bool = True
                      ) -> Callable[[int], UnwindModule | None]:
        """`find_module` for Unwinder.step/walk over one address space (a
        MapGroup) with `dso_of(map)` -> (path, build-id), `jit` the
        unwinding info of its JIT code (or None) and `memfd_is_jit` as for
        `module_for`: a dict's own lookup (no
        Python call per frame once an address was seen), kept until a code
        map leaves the space (MapGroup.code_generation)."""
        modules = self.modules_at(maps, dso_of, jit, memfd_is_jit)
        return _no_module if modules is None else modules.__getitem__

    def modules_at(self, maps: MapGroup | None, dso_of: DsoOf, jit: JitUnwindTable | None = None,
                   memfd_is_jit: bool = True) -> _ModulesAt | None:
        """The lookup avma -> UnwindModule of one address space (module_finder's)."""
        if maps is None:
            return None
        key = (id(maps), id(jit), memfd_is_jit)
        entry = self._modules_at.get(key)
        if entry is None or entry[0] is not maps or entry[1] != maps.code_generation or \
                entry[2] is not jit:
            if len(self._modules_at) > 64:
                self._modules_at.clear()
            entry = (maps, maps.code_generation, jit,
                     _ModulesAt(partial(self._module_at, maps, dso_of, jit, memfd_is_jit)))
            self._modules_at[key] = entry
        return entry[3]

    def _module_at(self, maps: MapGroup, dso_of: DsoOf, jit: JitUnwindTable | None,
                   memfd_is_jit: bool, avma: int) -> tuple[UnwindModule | None, bool]:
        """(UnwindModule or None, may it be kept until a code map leaves)."""
        m = maps.find(avma)
        if m is None:
            return None, False
        if jit is not None and (m.path.startswith("//anon") or m.path == "[anon]"):
            # JIT code described by its jitdump: the table takes process
            # addresses (bias 0); where it describes no code, the step
            # falls back to the frame pointer as for any anonymous code
            got = self._jit_modules.get(id(jit))
            if got is None or got[0] is not jit:
                if len(self._jit_modules) > 4096:
                    self._jit_modules.clear()
                got = self._jit_modules[id(jit)] = (jit, UnwindModule(jit, 0))  # type: ignore[arg-type]
            return got[1], not m.is_data
        by_map = self._by_map
        hit = by_map.get((id(m), memfd_is_jit))
        if hit is None or hit[0] is not m:
            hit = (m, self.module_for(m, dso_of(m), memfd_is_jit))
            if len(by_map) > 100000:
                by_map.clear()
            by_map[(id(m), memfd_is_jit)] = hit
        # No map there, or a data map: a map arriving may change the answer
        # without bumping code_generation.
        return hit[1], not m.is_data


def _file_backed(m: Map) -> bool:
    """Is the map's code in a file (whose CFI can be read)?  Not anonymous
    memory, a memfd, or a pseudo-file but the vdso."""
    path = m.path
    return not (path.startswith(JIT_PATHS) or (path.startswith("[") and path != "[vdso]"))


def _no_module(avma: int) -> None:
    return None


class _ModulesAt(dict):
    """lookup avma -> UnwindModule in one address space, each found by
    `find(avma)` (module, keep) on first use, and kept when it says so;
    `rows`: lookup avma -> the compiled walk's compact row there (or None),
    for the kept ones."""
    __slots__ = ("find", "rows")

    LIMIT = 1 << 16

    def __init__(self, find: Callable[[int], tuple[UnwindModule | None, bool]]) -> None:
        super().__init__()
        self.find = find
        self.rows: dict[int, bytes | None] = {}

    def __missing__(self, avma: int) -> UnwindModule | None:
        if len(self) > self.LIMIT:
            self.clear()
            self.rows.clear()
        module, keep = self.find(avma)
        if keep:
            self[avma] = module
        return module


# The compiled walk (perfdata.core._unwind): a step by a row of this shape is
# done in C, any other by Unwinder.step.  A compact row is int64s: the CFA's
# register and offset, the first slot's offset from the CFA and the span of
# the slots (CfiRow.saved_slots), flags (_SP_RULE, _OUTERMOST), the number of
# rules, then (column, offset from the CFA) for each.
_COLUMNS = 64               # the C's register columns (_unwind.c NCOLS)
_SP_RULE, _OUTERMOST = 1, 2  # sp has a rule; the return address is undefined


def compiled_walk_consts(unwinder: Unwinder) -> tuple[object, ...] | None:
    """The compiled walk's constants of an unwinder's architecture, or None
    where it does not apply (pointers not of 64 bits, a big-endian host,
    register columns beyond _COLUMNS)."""
    arch = unwinder.arch
    columns = set(unwinder.callee_saved_and_sp) | {arch.ra_column, arch.sp_column}
    if unwinder.ptr_mask != (1 << 64) - 1 or sys.byteorder != "little" or \
            arch.pointer_size != 8 or not all(0 <= c < _COLUMNS for c in columns):
        return None
    return (arch.sp_column, arch.ra_column, int(unwinder.ra_is_ip),
            arch.ra_mask & ((1 << 64) - 1),
            sum(1 << c for c in set(arch.callee_saved_columns)),
            sum(1 << c for c in unwinder.callee_saved_and_sp),
            INNERMOST, RETURN_ADDRESS, FRAME_POINTER, INTERRUPTED, UnwindStop)


def compact_row(row: CfiRow | None, sp_column: int, ra_column: int) -> bytes | None:
    """A row as the compiled walk takes it, or None where its step is
    Unwinder.step's: not a register + offset CFA, a signal frame, a rule
    not "saved at CFA + N" (saved_slots), slots not of little-endian u64s;
    but for the outermost frame's row (the return address undefined, no
    expression among the other rules: nothing there raises), where the
    walk stops."""
    if row is None or row.cfa_expression is not None or row.signal_frame or \
            type(row.cfa_register) is not int:
        return None
    rules = row.rules
    if rules.get(ra_column, (None,))[0] is RULE_UNDEFINED:
        if any(kind is RULE_EXPRESSION or kind is RULE_VAL_EXPRESSION
               for kind, _ in rules.values()) or \
                not -(1 << 63) <= row.cfa_offset < (1 << 63):
            return None
        return array("q", [row.cfa_register, row.cfa_offset, 0, 0, _OUTERMOST, 0]).tobytes()
    if row.saved_slots is None:
        return None
    columns, first, size, unpack_from = row.saved_slots
    fmt = getattr(getattr(unpack_from, "__self__", None), "format", "")
    if not fmt.startswith("<") or fmt.strip("<0123456789xQ"):
        return None
    values = [row.cfa_register, row.cfa_offset, first, size,
              _SP_RULE if sp_column in rules else 0, len(columns)]
    for column in columns:
        values += (column, rules[column][1])
    if not all(type(v) is int and -(1 << 63) <= v < (1 << 63) for v in values):
        return None
    return array("q", values).tobytes()


def _fill(modules: _ModulesAt, sp_column: int, ra_column: int, lookup: int) -> bytes | None:
    """The compact row at a lookup address (the compiled walk's miss),
    kept in modules.rows where the module there is kept."""
    try:
        module = modules[lookup]
        cfi = module.cfi if module is not None else None
        row = cfi.rows[lookup - module.bias] if type(cfi) is CfiTable else None  # type: ignore[union-attr]
    except Exception:       # (the Python step meets it again, and stops there)
        return None
    compact = compact_row(row, sp_column, ra_column)
    if lookup in modules:
        modules.rows[lookup] = compact
    return compact


def compiled_walk(module: types.ModuleType, consts: tuple[object, ...], unwinder: Unwinder,
                  ip: int, regs: dict[int, int], read_stack: StackSnapshot, modules: _ModulesAt,
                  max_depth: int) -> UnwindResult:
    """unwinder.walk(ip, regs, read_stack, modules.__getitem__, max_depth),
    its common step in C (perfdata/core/_unwind.c): the same result.
    consts: compiled_walk_consts(unwinder)."""
    result = UnwindResult()
    data = read_stack.data
    if type(read_stack) is not StackSnapshot or read_stack.word != 8 or \
            (type(data) is memoryview and data.itemsize != 1):
        return unwinder.walk(ip, regs, read_stack, modules.__getitem__, max_depth)
    sp_column, ra_column = unwinder.arch.sp_column, unwinder.arch.ra_column
    result.sp = regs[sp_column]
    stop = module.walk(unwinder.step, read_stack, modules.__getitem__, modules.rows,
                       partial(_fill, modules, sp_column, ra_column), ip,
                       regs, data, read_stack.base, max_depth, result.frames, result.cfas,
                       result.exact_ip_frames, result.fp_fallback_frames, consts)
    if stop is not None:
        if stop.cfa is not None:
            result.cfas.append(stop.cfa)
        result.stop_reason = stop.reason
        result.stop_address = stop.address
        result.stop_detail = stop.detail
    return result
