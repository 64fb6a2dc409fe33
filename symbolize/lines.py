"""Source lines and inlined frames from DWARF (.debug_info / .debug_line).

Lazy: an address is mapped to its compilation unit through .debug_aranges (or,
when that is missing, the CUs' own ranges, read once), and a CU's scopes and
line rows are decoded the first time an address inside it is asked for, then
kept. Nothing walks every DIE of a large library per lookup.
"""
from __future__ import annotations

import bisect
import os
from typing import NamedTuple

from .elffile import Binary


class InlineFrame(NamedTuple):
    function: str | None     # linkage (mangled) name when known, else DW_AT_name
    file: str | None
    line: int | None


class _Scope:
    __slots__ = ("ranges", "name_die", "call_file", "call_line", "children", "is_inline")

    def __init__(self, ranges, name_die, call_file, call_line, is_inline):
        self.ranges = ranges
        self.name_die = name_die
        self.call_file = call_file
        self.call_line = call_line
        self.children: list[_Scope] = []
        self.is_inline = is_inline

    def contains(self, addr: int) -> bool:
        for lo, hi in self.ranges:
            if lo <= addr < hi:
                return True
        return False


class _CUData:
    __slots__ = ("cu", "base", "func_starts", "funcs", "row_addrs", "rows", "files")

    def __init__(self):
        self.cu = None
        self.base = 0
        self.func_starts: list[int] = []
        self.funcs: list[tuple] = []       # (lo, hi, _Scope), sorted by lo
        self.row_addrs: list[int] = []
        self.rows: list[tuple] = []        # (file_index, line, end_sequence)
        self.files: list[str | None] = []


_SCOPE_TAGS = ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine", "DW_TAG_lexical_block")
_CONTAINER_TAGS = ("DW_TAG_namespace", "DW_TAG_class_type", "DW_TAG_structure_type",
                   "DW_TAG_union_type", "DW_TAG_module")


class LineInfo:
    """DWARF line and inline information of one ELF file (the binary itself or
    its separate debug file). Methods never raise; failures become warnings on
    the binary and None / [] answers."""

    def __init__(self, binary: Binary):
        self.binary = binary
        self._dwarf = None
        self._dwarf_failed = False
        self._aranges = None
        self._cu_index: list[tuple[int, int, int]] | None = None
        self._cu_starts: list[int] = []
        self._cus: dict[int, _CUData | None] = {}
        self._names: dict[int, str | None] = {}

    @property
    def has_dwarf(self) -> bool:
        b = self.binary
        return bool(b.ok and b.get_section(".debug_info") is not None
                    and b.get_section(".debug_line") is not None)

    # ------------------------------------------------------------ public
    def frames(self, svma: int) -> list[InlineFrame]:
        """Innermost first: each inlined function with its location, then the
        function containing them all, located at the outermost call site (or
        at the address itself when nothing is inlined there)."""
        try:
            return self._frames(svma)
        except RecursionError:
            self.binary.warn("DWARF too deeply nested")
        except Exception as e:     # malformed DWARF: warn, answer nothing
            self.binary.warn(f"DWARF at {svma:#x}: {type(e).__name__}: {e}")
        return []

    def srcline(self, svma: int) -> str | None:
        """'file:line' of the address from the line table, or None."""
        try:
            cu = self._cu_for(svma)
            if cu is None:
                return None
            loc = self._line_for(cu, svma)
            if loc is None or loc[0] is None:
                return None
            return f"{loc[0]}:{loc[1]}"
        except Exception as e:
            self.binary.warn(f"DWARF line at {svma:#x}: {type(e).__name__}: {e}")
            return None

    # ------------------------------------------------------------ DWARF
    def _dwarfinfo(self):
        if self._dwarf is None and not self._dwarf_failed:
            if not self.has_dwarf or self.binary.elf is None:
                self._dwarf_failed = True
                return None
            try:
                self._dwarf = self.binary.elf.get_dwarf_info(relocate_dwarf_sections=False)
            except Exception as e:
                self.binary.warn(f"DWARF: {type(e).__name__}: {e}")
                self._dwarf_failed = True
        return self._dwarf

    def _cu_offset_for(self, addr: int) -> int | None:
        dwarf = self._dwarfinfo()
        if dwarf is None:
            return None
        if self._aranges is None:
            try:
                self._aranges = dwarf.get_aranges() or False
            except Exception:
                self._aranges = False
        if self._aranges:
            try:
                off = self._aranges.cu_offset_at_addr(addr)
            except Exception:
                off = None
            # .debug_aranges is authoritative when present: an address it does
            # not cover (padding, hand-written assembly) has no line info, and
            # scanning every CU to be sure would cost seconds on libc.
            return off
        # No aranges: index every CU by its top DIE's ranges, once.
        if self._cu_index is None:
            self._cu_index = self._build_cu_index(dwarf)
            self._cu_starts = [lo for lo, _, _ in self._cu_index]
        i = bisect.bisect_right(self._cu_starts, addr) - 1
        while i >= 0:
            lo, hi, off = self._cu_index[i]
            if lo <= addr < hi:
                return off
            i -= 1
            if i >= 0 and addr - self._cu_index[i][0] > (1 << 32):
                break
        return None

    def _build_cu_index(self, dwarf) -> list[tuple[int, int, int]]:
        out = []
        for cu in dwarf.iter_CUs():
            try:
                top = cu.get_top_DIE()
                for lo, hi in self._die_ranges(top, cu, None):
                    out.append((lo, hi, cu.cu_offset))
            except Exception:
                continue
        out.sort()
        return out

    def _cu_for(self, addr: int) -> _CUData | None:
        off = self._cu_offset_for(addr)
        if off is None:
            return None
        if off not in self._cus:
            self._cus[off] = self._load_cu(off)
        return self._cus[off]

    def _load_cu(self, offset: int) -> _CUData | None:
        dwarf = self._dwarfinfo()
        try:
            cu = dwarf.get_CU_at(offset)
        except Exception as e:
            self.binary.warn(f"DWARF CU at {offset:#x}: {type(e).__name__}: {e}")
            return None
        data = _CUData()
        top = cu.get_top_DIE()
        base = top.attributes.get("DW_AT_low_pc")
        data.base = base.value if base is not None else 0
        data.cu = cu
        funcs = []
        self._collect_functions(top, cu, data.base, funcs, 0)
        # One entry per range, sorted, for bisection: a CU may hold thousands
        # of functions.
        flat = sorted(((lo, hi, s) for s in funcs for lo, hi in s.ranges), key=lambda t: t[0])
        data.func_starts = [t[0] for t in flat]
        data.funcs = flat
        self._load_lines(cu, top, data)
        return data

    def _collect_functions(self, die, cu, base, out: list, depth: int) -> None:
        """Concrete functions of a CU. Only the CU level and namespaces/classes
        are walked; a function's body is read when an address falls in it."""
        if depth > 32:
            return
        for child in die.iter_children():
            tag = child.tag
            if tag == "DW_TAG_subprogram":
                ranges = self._die_ranges(child, cu, base)
                if ranges:
                    s = _Scope(ranges, child, None, None, False)
                    s.children = None          # read on demand
                    out.append(s)
            elif tag in _CONTAINER_TAGS:
                self._collect_functions(child, cu, base, out, depth + 1)

    def _expand(self, scope: _Scope, cu_data: _CUData) -> list:
        if scope.children is None:
            scope.children = []
            self._collect_scopes(scope.name_die, cu_data.cu, cu_data.base, scope.children, 0)
        return scope.children

    def _collect_scopes(self, die, cu, base, out: list, depth: int) -> None:
        if depth > 64:
            return
        for child in die.iter_children():
            tag = child.tag
            if tag == "DW_TAG_lexical_block":
                # Blocks only group; their inlined children belong to the
                # enclosing function.
                self._collect_scopes(child, cu, base, out, depth + 1)
            elif tag == "DW_TAG_inlined_subroutine":
                ranges = self._die_ranges(child, cu, base)
                if not ranges:
                    continue
                a = child.attributes
                cf = a.get("DW_AT_call_file")
                cl = a.get("DW_AT_call_line")
                s = _Scope(ranges, child, cf.value if cf else None, cl.value if cl else None, True)
                self._collect_scopes(child, cu, base, s.children, depth + 1)
                out.append(s)

    def _die_ranges(self, die, cu, base) -> list[tuple[int, int]]:
        a = die.attributes
        lo = a.get("DW_AT_low_pc")
        hi = a.get("DW_AT_high_pc")
        if lo is not None and hi is not None:
            hv = hi.value
            if hi.form not in ("DW_FORM_addr", "DW_FORM_addrx", "DW_FORM_addrx1",
                               "DW_FORM_addrx2", "DW_FORM_addrx3", "DW_FORM_addrx4"):
                hv = lo.value + hv          # DWARF 4+: high_pc is a length
            return [(lo.value, hv)] if hv > lo.value else []
        rng = a.get("DW_AT_ranges")
        if rng is None:
            return []
        rl = self._dwarf.range_lists()
        if rl is None:
            return []
        if base is None:
            base = lo.value if lo is not None else 0
        out = []
        for e in rl.get_range_list_at_offset(rng.value, cu=cu):
            if hasattr(e, "base_address"):
                base = e.base_address
                continue
            b, en = e.begin_offset, e.end_offset
            if not getattr(e, "is_absolute", False):
                b += base
                en += base
            if en > b:
                out.append((b, en))
        return out

    def _load_lines(self, cu, top, data: _CUData) -> None:
        dwarf = self._dwarf
        prog = dwarf.line_program_for_CU(cu)
        if prog is None:
            return
        data.files = self._file_names(prog, top)
        try:
            rows = _decode_line_program(prog, self.binary.little_endian, cu["address_size"])
        except (IndexError, ValueError, KeyError):
            rows = None
        if rows is None:       # fall back on pyelftools' (slower) decoder
            rows = []
            for entry in prog.get_entries():
                st = entry.state
                if st is not None:
                    rows.append((st.address, st.file, st.line, st.end_sequence))
        # Sort by address; at one address the end of a sequence comes before
        # the start of the next, and otherwise the last row wins (as addr2line).
        rows.sort(key=lambda r: (r[0], not r[3]))
        data.row_addrs = [r[0] for r in rows]
        data.rows = [(r[1], r[2], r[3]) for r in rows]

    def _file_names(self, prog, top) -> list[str | None]:
        hdr = prog.header
        version = hdr["version"]
        comp_dir = top.attributes.get("DW_AT_comp_dir")
        comp_dir = _text(comp_dir.value) if comp_dir is not None else ""
        dirs = [_text(d) for d in hdr["include_directory"]]
        names: list[str | None] = []
        if version < 5:
            names.append(None)     # file numbers start at 1 before DWARF 5
        for fe in hdr["file_entry"]:
            name = _text(fe.name)
            di = fe.dir_index
            # Joined, not normalized: addr2line and perf print "./a/../b.h".
            if version < 5:
                d = comp_dir if di == 0 else (dirs[di - 1] if di - 1 < len(dirs) else "")
                if d and not os.path.isabs(d) and di != 0 and comp_dir:
                    d = os.path.join(comp_dir, d)
            else:
                # DWARF 5: directory 0 repeats the compilation directory; like
                # any relative one, addr2line (so perf) prefixes DW_AT_comp_dir
                # to it: "./nscd/./nscd/x.c" when the CU was built in ./nscd.
                d = dirs[di] if di < len(dirs) else ""
                if d and not os.path.isabs(d) and comp_dir:
                    d = os.path.join(comp_dir, d)
            names.append(name if os.path.isabs(name) or not d else os.path.join(d, name))
        return names

    def _file(self, cu: _CUData, index) -> str | None:
        if index is None or not isinstance(index, int):
            return None
        return cu.files[index] if 0 <= index < len(cu.files) else None

    def _line_for(self, cu: _CUData, addr: int) -> tuple[str | None, int] | None:
        i = bisect.bisect_right(cu.row_addrs, addr) - 1
        if i < 0:
            return None
        f, line, end = cu.rows[i]
        if end:
            return None
        return self._file(cu, f), line

    def _name(self, die) -> str | None:
        key = die.offset
        if key in self._names:
            return self._names[key]
        name = None
        seen = 0
        d = die
        while d is not None and seen < 16:
            a = d.attributes
            for attr in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
                if attr in a:
                    name = _text(a[attr].value)
                    break
            if name is not None:
                break
            if "DW_AT_name" in a and name is None:
                name = _text(a["DW_AT_name"].value)
                # keep looking for a linkage name through the origin chain
            nxt = None
            for attr in ("DW_AT_abstract_origin", "DW_AT_specification"):
                if attr in a:
                    nxt = d.get_DIE_from_attribute(attr)
                    break
            if nxt is None:
                break
            d = nxt
            seen += 1
        self._names[key] = name
        return name

    def _function_at(self, cu: _CUData, addr: int) -> _Scope | None:
        i = bisect.bisect_right(cu.func_starts, addr) - 1
        # Ranges may nest (a function's cold part inside another's range is not
        # possible, but overlapping CU-level entries are): look back a little.
        for j in range(i, max(i - 8, -1), -1):
            lo, hi, s = cu.funcs[j]
            if lo <= addr < hi:
                return s
        return None

    def _frames(self, addr: int) -> list[InlineFrame]:
        cu = self._cu_for(addr)
        if cu is None:
            return []
        loc = self._line_for(cu, addr)
        file, line = loc if loc is not None else (None, None)
        func = self._function_at(cu, addr)
        if func is None:
            return [InlineFrame(None, file, line)] if loc is not None else []
        chain = [func]
        scopes = self._expand(func, cu)
        while True:
            found = None
            for s in scopes:
                if s.contains(addr):
                    found = s
                    break
            if found is None:
                break
            chain.append(found)
            scopes = found.children
        out = []
        for scope in reversed(chain):
            out.append(InlineFrame(self._name(scope.name_die), file, line))
            if scope.is_inline:
                file, line = self._file(cu, scope.call_file), scope.call_line
        return out


def _uleb(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _sleb(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            if b & 0x40:
                result -= 1 << shift
            return result, pos


def _decode_line_program(prog, little_endian: bool, address_size: int) -> list[tuple] | None:
    """Rows (address, file, line, end_sequence) of one line program.

    pyelftools' own decoder builds an object per opcode (about half of the
    cost of a first lookup in a libc CU); this walks the bytes directly. The
    header still comes from pyelftools. None for what it does not handle
    (VLIW op_index), so the caller falls back on pyelftools.
    """
    h = prog.header
    if h.get("maximum_operations_per_instruction", 1) not in (0, 1):
        return None
    min_inst = h["minimum_instruction_length"]
    line_base = h["line_base"]
    line_range = h["line_range"]
    opcode_base = h["opcode_base"]
    std_lengths = list(h["standard_opcode_lengths"])
    if line_range == 0:
        return None
    stream = prog.stream
    stream.seek(prog.program_start_offset)
    data = stream.read(prog.program_end_offset - prog.program_start_offset)
    order = "little" if little_endian else "big"
    rows = []
    append = rows.append
    address, file, line = 0, 1, 1
    pos, end = 0, len(data)
    const_add = ((255 - opcode_base) // line_range) * min_inst
    while pos < end:
        op = data[pos]
        pos += 1
        if op >= opcode_base:
            adj = op - opcode_base
            address += (adj // line_range) * min_inst
            line += line_base + adj % line_range
            append((address, file, line, False))
        elif op == 0:
            length, pos = _uleb(data, pos)
            if length == 0 or pos >= end:
                pos += length
                continue
            sub = data[pos]
            if sub == 1:                      # DW_LNE_end_sequence
                append((address, file, line, True))
                address, file, line = 0, 1, 1
            elif sub == 2:                    # DW_LNE_set_address
                address = int.from_bytes(data[pos + 1:pos + length], order)
            pos += length
        elif op == 1:                         # DW_LNS_copy
            append((address, file, line, False))
        elif op == 2:                         # DW_LNS_advance_pc
            v, pos = _uleb(data, pos)
            address += v * min_inst
        elif op == 3:                         # DW_LNS_advance_line
            v, pos = _sleb(data, pos)
            line += v
        elif op == 4:                         # DW_LNS_set_file
            file, pos = _uleb(data, pos)
        elif op == 8:                         # DW_LNS_const_add_pc
            address += const_add
        elif op == 9:                         # DW_LNS_fixed_advance_pc
            address += int.from_bytes(data[pos:pos + 2], order)
            pos += 2
        else:                                 # column, stmt, isa...: operands skipped
            n = std_lengths[op - 1] if op - 1 < len(std_lengths) else 0
            for _ in range(n):
                _, pos = _uleb(data, pos)
    if address_size < 8:
        mask = (1 << (8 * address_size)) - 1
        rows = [(a & mask, f, l, e) for a, f, l, e in rows]
    return rows


def _text(v) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v) if v is not None else ""
