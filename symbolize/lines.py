"""Source lines and inlined frames from DWARF (.debug_info / .debug_line).

Lazy: an address is mapped to its compilation unit through .debug_aranges (or,
when that is missing, the CUs' own ranges, read once); a CU's functions and
line rows are decoded the first time an address inside it is asked for, and a
function's inlined scopes the first time an address inside that function is.
Nothing walks every DIE of a large library per lookup.

The DWARF is read here directly, not through pyelftools: pyelftools builds a
construct object per DIE, attribute and opcode, which made the first lookup in
one of libc's compilation units cost 20-50 ms. This reader decodes only the
attributes that name code (ranges, names, call sites) and skips the rest by
size, with sibling links to jump over types. DWARF 2 to 5, 32- and 64-bit.
"""
from __future__ import annotations

import bisect
import os
import struct
from typing import NamedTuple

from .elffile import Binary


class InlineFrame(NamedTuple):
    function: str | None     # linkage (mangled) name when known, else DW_AT_name
    file: str | None
    line: int | None


# ------------------------------------------------------------ DWARF constants
TAG_lexical_block = 0x0B
TAG_compile_unit = 0x11
TAG_inlined_subroutine = 0x1D
TAG_subprogram = 0x2E
TAG_partial_unit = 0x3C
_CONTAINER_TAGS = frozenset((0x39, 0x02, 0x13, 0x17, 0x1E))   # namespace, class, struct, union, module

AT_sibling = 0x01
AT_name = 0x03
AT_stmt_list = 0x10
AT_low_pc = 0x11
AT_high_pc = 0x12
AT_comp_dir = 0x1B
AT_abstract_origin = 0x31
AT_specification = 0x47
AT_ranges = 0x55
AT_call_file = 0x58
AT_call_line = 0x59
AT_linkage_name = 0x6E
AT_str_offsets_base = 0x72
AT_addr_base = 0x73
AT_rnglists_base = 0x74
AT_MIPS_linkage_name = 0x2007
AT_GNU_addr_base = 0x2133
_WANTED = frozenset((AT_sibling, AT_name, AT_stmt_list, AT_low_pc, AT_high_pc, AT_comp_dir,
                     AT_abstract_origin, AT_specification, AT_ranges, AT_call_file, AT_call_line,
                     AT_linkage_name, AT_str_offsets_base, AT_addr_base, AT_rnglists_base,
                     AT_MIPS_linkage_name, AT_GNU_addr_base))

F_addr, F_block2, F_block4, F_data2, F_data4, F_data8, F_string = 0x01, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
F_block, F_block1, F_data1, F_flag, F_sdata, F_strp, F_udata = 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F
F_ref_addr, F_ref1, F_ref2, F_ref4, F_ref8, F_ref_udata, F_indirect = 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16
F_sec_offset, F_exprloc, F_flag_present, F_strx, F_addrx = 0x17, 0x18, 0x19, 0x1A, 0x1B
F_ref_sup4, F_strp_sup, F_data16, F_line_strp, F_ref_sig8, F_implicit_const = 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21
F_loclistx, F_rnglistx, F_ref_sup8 = 0x22, 0x23, 0x24
F_strx1, F_strx2, F_strx3, F_strx4 = 0x25, 0x26, 0x27, 0x28
F_addrx1, F_addrx2, F_addrx3, F_addrx4 = 0x29, 0x2A, 0x2B, 0x2C
F_GNU_addr_index, F_GNU_str_index, F_GNU_ref_alt, F_GNU_strp_alt = 0x1F01, 0x1F02, 0x1F20, 0x1F21

_FIXED = {F_data1: 1, F_ref1: 1, F_flag: 1, F_strx1: 1, F_addrx1: 1,
          F_data2: 2, F_ref2: 2, F_strx2: 2, F_addrx2: 2, F_strx3: 3, F_addrx3: 3,
          F_data4: 4, F_ref4: 4, F_ref_sup4: 4, F_strx4: 4, F_addrx4: 4,
          F_data8: 8, F_ref8: 8, F_ref_sig8: 8, F_ref_sup8: 8, F_data16: 16,
          F_flag_present: 0, F_implicit_const: 0}
_ULEB_FORMS = frozenset((F_udata, F_ref_udata, F_strx, F_addrx, F_loclistx, F_rnglistx,
                         F_GNU_addr_index, F_GNU_str_index))
_OFFSET_FORMS = frozenset((F_strp, F_line_strp, F_sec_offset, F_strp_sup, F_GNU_ref_alt, F_GNU_strp_alt))
_ADDRX_FORMS = frozenset((F_addrx, F_addrx1, F_addrx2, F_addrx3, F_addrx4, F_GNU_addr_index))
_STRX_FORMS = frozenset((F_strx, F_strx1, F_strx2, F_strx3, F_strx4, F_GNU_str_index))
_REF_FORMS = frozenset((F_ref1, F_ref2, F_ref4, F_ref8, F_ref_udata))


class DwarfError(ValueError):
    pass


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


def _cstr(data: bytes, pos: int) -> str | None:
    if not 0 <= pos < len(data):
        return None
    end = data.find(b"\0", pos)
    return data[pos:end if end >= 0 else len(data)].decode("utf-8", "replace")


class _Unit:
    """One compilation unit's header and the bases its DIEs' forms need."""
    __slots__ = ("offset", "end", "version", "offset_size", "address_size", "specs", "die_start",
                 "top", "str_offsets_base", "addr_base", "rnglists_base", "base", "comp_dir")


class _Reader:
    """Minimal DWARF .debug_info reader over in-memory section bytes."""

    def __init__(self, binary: Binary):
        def sec(name):
            d = binary.section_data(name)
            return bytes(d) if d else b""
        self.info = sec(".debug_info")
        self.abbrev = sec(".debug_abbrev")
        self.str = sec(".debug_str")
        self.line_str = sec(".debug_line_str")
        self.str_offsets = sec(".debug_str_offsets")
        self.addr = sec(".debug_addr")
        self.ranges = sec(".debug_ranges")
        self.rnglists = sec(".debug_rnglists")
        self.line = sec(".debug_line")
        self.aranges = sec(".debug_aranges")
        self.order = "little" if binary.little_endian else "big"
        self._abbrevs: dict[int, dict] = {}
        self._specs: dict[tuple, dict] = {}
        self._units: dict[int, _Unit] = {}
        self._unit_starts: list[int] | None = None

    def uint(self, data: bytes, pos: int, n: int) -> int:
        if pos < 0 or pos + n > len(data):
            raise DwarfError("read past the end of a section")
        return int.from_bytes(data[pos:pos + n], self.order)

    # -- abbreviations
    def abbrev_table(self, offset: int) -> dict:
        t = self._abbrevs.get(offset)
        if t is not None:
            return t
        d = self.abbrev
        t = {}
        pos = offset
        while True:
            code, pos = _uleb(d, pos)
            if code == 0:
                break
            tag, pos = _uleb(d, pos)
            children = d[pos]
            pos += 1
            attrs = []
            while True:
                at, pos = _uleb(d, pos)
                form, pos = _uleb(d, pos)
                if at == 0 and form == 0:
                    break
                implicit = None
                if form == F_implicit_const:
                    implicit, pos = _sleb(d, pos)
                attrs.append((at, form, implicit))
            t[code] = (tag, bool(children), tuple(attrs))
        self._abbrevs[offset] = t
        return t

    def specs_for(self, abbrev_offset: int, unit: _Unit) -> dict:
        """Abbreviations with each attribute's size resolved for this unit's
        address and offset sizes (None where the size is in the data)."""
        key = (abbrev_offset, unit.address_size, unit.offset_size, unit.version >= 3)
        s = self._specs.get(key)
        if s is not None:
            return s
        s = {}
        for code, (tag, children, attrs) in self.abbrev_table(abbrev_offset).items():
            spec = []
            for at, form, implicit in attrs:
                if form in _FIXED:
                    size = _FIXED[form]
                elif form == F_addr:
                    size = unit.address_size
                elif form in _OFFSET_FORMS:
                    size = unit.offset_size
                elif form == F_ref_addr:
                    size = unit.offset_size if unit.version >= 3 else unit.address_size
                else:
                    size = None
                spec.append((at, form, implicit, size, at in _WANTED))
            s[code] = (tag, children, tuple(spec))
        self._specs[key] = s
        return s

    # -- units
    def unit_at(self, offset: int) -> _Unit:
        u = self._units.get(offset)
        if u is not None:
            return u
        d = self.info
        u = _Unit()
        u.offset = offset
        length = self.uint(d, offset, 4)
        pos = offset + 4
        u.offset_size = 4
        if length == 0xFFFFFFFF:
            length = self.uint(d, pos, 8)
            pos += 8
            u.offset_size = 8
        u.end = min(pos + length, len(d))
        u.version = self.uint(d, pos, 2)
        pos += 2
        if not 2 <= u.version <= 5:
            raise DwarfError(f"unsupported DWARF version {u.version}")
        if u.version >= 5:
            unit_type = d[pos]
            u.address_size = d[pos + 1]
            abbrev_off = self.uint(d, pos + 2, u.offset_size)
            pos += 2 + u.offset_size
            if unit_type in (4, 5):          # skeleton, split_compile: dwo_id
                pos += 8
            elif unit_type in (2, 6):        # type units
                pos += 8 + u.offset_size
        else:
            abbrev_off = self.uint(d, pos, u.offset_size)
            u.address_size = d[pos + u.offset_size]
            pos += u.offset_size + 1
        if u.address_size not in (4, 8, 2):
            raise DwarfError(f"address size {u.address_size}")
        u.die_start = pos
        u.str_offsets_base = 8
        u.addr_base = 8
        u.rnglists_base = 0
        u.base = 0
        u.comp_dir = ""
        u.specs = self.specs_for(abbrev_off, u)
        top = self.read_die(u, pos)
        u.top = top
        if top is not None:
            a = top[2]
            if AT_str_offsets_base in a:
                u.str_offsets_base = a[AT_str_offsets_base][1]
            for at in (AT_addr_base, AT_GNU_addr_base):
                if at in a:
                    u.addr_base = a[at][1]
            if AT_rnglists_base in a:
                u.rnglists_base = a[AT_rnglists_base][1]
            if AT_low_pc in a:
                u.base = self.address(u, a[AT_low_pc])
            if AT_comp_dir in a:
                u.comp_dir = self.string(u, a[AT_comp_dir]) or ""
        self._units[offset] = u
        return u

    def unit_starts(self) -> list[int]:
        if self._unit_starts is None:
            out = []
            pos, d = 0, self.info
            while pos + 11 <= len(d):
                out.append(pos)
                length = self.uint(d, pos, 4)
                if length == 0xFFFFFFFF:
                    length = self.uint(d, pos + 4, 8) + 8
                if length == 0:
                    break
                pos += 4 + length
            self._unit_starts = out
        return self._unit_starts

    def unit_containing(self, offset: int) -> _Unit:
        starts = self.unit_starts()
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0:
            raise DwarfError(f"DIE offset {offset:#x} before the first unit")
        return self.unit_at(starts[i])

    # -- DIEs
    def read_die(self, u: _Unit, pos: int):
        """(tag, has_children, {attr: (form, value)}, next_pos, offset), or
        None for the null entry that ends a sibling list."""
        d = self.info
        start = pos
        code, pos = _uleb(d, pos)
        if code == 0:
            return None
        spec = u.specs.get(code)
        if spec is None:
            raise DwarfError(f"unknown abbreviation {code} at {start:#x}")
        tag, children, attrs_spec = spec
        attrs = {}
        order = self.order
        for at, form, implicit, size, wanted in attrs_spec:
            if size is not None:
                if wanted:
                    if form == F_implicit_const:
                        attrs[at] = (form, implicit)
                    elif form == F_flag_present:
                        attrs[at] = (form, 1)
                    else:
                        attrs[at] = (form, int.from_bytes(d[pos:pos + size], order))
                pos += size
                continue
            if form == F_indirect:
                form, pos = _uleb(d, pos)
                value, pos = self._read_var(u, form, pos)
            elif form in _ULEB_FORMS:
                value, pos = _uleb(d, pos)
            elif form == F_sdata:
                value, pos = _sleb(d, pos)
            elif form == F_string:
                end = d.find(b"\0", pos)
                if end < 0:
                    raise DwarfError("unterminated string")
                value = d[pos:end].decode("utf-8", "replace") if wanted else None
                pos = end + 1
            elif form in (F_block, F_exprloc):
                n, pos = _uleb(d, pos)
                pos += n
                value = None
            elif form == F_block1:
                pos += 1 + d[pos]
                value = None
            elif form == F_block2:
                pos += 2 + self.uint(d, pos, 2)
                value = None
            elif form == F_block4:
                pos += 4 + self.uint(d, pos, 4)
                value = None
            else:
                raise DwarfError(f"unknown form {form:#x}")
            if wanted:
                attrs[at] = (form, value)
        if pos > u.end:
            raise DwarfError(f"DIE at {start:#x} runs past its unit")
        return tag, children, attrs, pos, start

    def _read_var(self, u, form, pos):
        """A value of a form known only at run time (DW_FORM_indirect)."""
        d = self.info
        size = _FIXED.get(form)
        if size is None and form == F_addr:
            size = u.address_size
        elif size is None and (form in _OFFSET_FORMS or form == F_ref_addr):
            size = u.offset_size
        if size is not None:
            return int.from_bytes(d[pos:pos + size], self.order), pos + size
        if form in _ULEB_FORMS:
            return _uleb(d, pos)
        if form == F_sdata:
            return _sleb(d, pos)
        if form == F_string:
            end = d.find(b"\0", pos)
            return d[pos:end].decode("utf-8", "replace"), end + 1
        if form in (F_block, F_exprloc):
            n, pos = _uleb(d, pos)
            return None, pos + n
        raise DwarfError(f"unknown indirect form {form:#x}")

    def children(self, u: _Unit, die):
        """The child DIEs of die, each subtree skipped through DW_AT_sibling
        when the producer gave one."""
        if die is None or not die[1]:
            return
        pos = die[3]
        d_end = u.end
        while pos < d_end:
            child = self.read_die(u, pos)
            if child is None:
                return
            yield child
            nxt = child[3]
            if child[1]:
                sib = child[2].get(AT_sibling)
                if sib is not None and sib[0] in _REF_FORMS and u.offset + sib[1] > pos:
                    nxt = u.offset + sib[1]
                else:
                    nxt = self._skip_children(u, nxt)
            if nxt <= pos:
                raise DwarfError("DIE tree does not advance")
            pos = nxt

    def _skip_children(self, u: _Unit, pos: int) -> int:
        depth = 1
        while depth and pos < u.end:
            die = self.read_die(u, pos)
            if die is None:
                depth -= 1
                pos += 1
                continue
            pos = die[3]
            if die[1]:
                depth += 1
        return pos

    def die_at(self, offset: int):
        u = self.unit_containing(offset)
        return u, self.read_die(u, offset)

    # -- attribute values
    def ref(self, u: _Unit, attr) -> int | None:
        form, value = attr
        if form in _REF_FORMS:
            return u.offset + value
        if form == F_ref_addr:
            return value
        return None         # ref_sig8, supplementary files: not followed

    def string(self, u: _Unit, attr) -> str | None:
        form, value = attr
        if form == F_string:
            return value
        if form == F_strp:
            return _cstr(self.str, value)
        if form == F_line_strp:
            return _cstr(self.line_str, value)
        if form in _STRX_FORMS:
            off = self.uint(self.str_offsets, u.str_offsets_base + value * u.offset_size, u.offset_size)
            return _cstr(self.str, off)
        return None

    def address(self, u: _Unit, attr) -> int:
        form, value = attr
        if form in _ADDRX_FORMS:
            return self.uint(self.addr, u.addr_base + value * u.address_size, u.address_size)
        return value

    def die_ranges(self, u: _Unit, attrs) -> list[tuple[int, int]]:
        lo = attrs.get(AT_low_pc)
        hi = attrs.get(AT_high_pc)
        if lo is not None and hi is not None:
            lo_v = self.address(u, lo)
            if hi[0] == F_addr or hi[0] in _ADDRX_FORMS:
                hi_v = self.address(u, hi)
            else:
                hi_v = lo_v + hi[1]          # DWARF 4+: a length
            return [(lo_v, hi_v)] if hi_v > lo_v else []
        r = attrs.get(AT_ranges)
        if r is None:
            return []
        form, value = r
        if u.version >= 5:
            if form == F_rnglistx:
                base = u.rnglists_base
                value = base + self.uint(self.rnglists, base + value * u.offset_size, u.offset_size)
            return self._rnglist(u, value)
        return self._ranges_v4(u, value)

    def _ranges_v4(self, u: _Unit, pos: int) -> list[tuple[int, int]]:
        d, n = self.ranges, u.address_size
        top = (1 << (8 * n)) - 1
        base = u.base
        out = []
        for _ in range(1 << 16):
            a = self.uint(d, pos, n)
            b = self.uint(d, pos + n, n)
            pos += 2 * n
            if a == 0 and b == 0:
                break
            if a == top:
                base = b
                continue
            if b > a:
                out.append((a + base, b + base))
        return out

    def _rnglist(self, u: _Unit, pos: int) -> list[tuple[int, int]]:
        d, n = self.rnglists, u.address_size
        base = u.base
        out = []

        def addrx(i):
            return self.uint(self.addr, u.addr_base + i * n, n)
        for _ in range(1 << 16):
            kind = d[pos]
            pos += 1
            if kind == 0:                      # end_of_list
                break
            if kind == 1:                      # base_addressx
                i, pos = _uleb(d, pos)
                base = addrx(i)
            elif kind == 2:                    # startx_endx
                i, pos = _uleb(d, pos)
                j, pos = _uleb(d, pos)
                out.append((addrx(i), addrx(j)))
            elif kind == 3:                    # startx_length
                i, pos = _uleb(d, pos)
                ln, pos = _uleb(d, pos)
                a = addrx(i)
                out.append((a, a + ln))
            elif kind == 4:                    # offset_pair
                a, pos = _uleb(d, pos)
                b, pos = _uleb(d, pos)
                out.append((base + a, base + b))
            elif kind == 5:                    # base_address
                base = self.uint(d, pos, n)
                pos += n
            elif kind == 6:                    # start_end
                a, b = self.uint(d, pos, n), self.uint(d, pos + n, n)
                pos += 2 * n
                out.append((a, b))
            elif kind == 7:                    # start_length
                a = self.uint(d, pos, n)
                ln, pos = _uleb(d, pos + n)
                out.append((a, a + ln))
            else:
                raise DwarfError(f"unknown range list entry {kind}")
        return [(a, b) for a, b in out if b > a]

    # -- .debug_aranges
    def parse_aranges(self) -> list[tuple[int, int, int]]:
        d = self.aranges
        out = []
        pos = 0
        while pos + 16 <= len(d):
            start = pos
            length = self.uint(d, pos, 4)
            pos += 4
            off_size = 4
            if length == 0xFFFFFFFF:
                length = self.uint(d, pos, 8)
                pos += 8
                off_size = 8
            end = min(pos + length, len(d))
            pos += 2                                   # version
            info_off = self.uint(d, pos, off_size)
            pos += off_size
            n = d[pos]
            pos += 2                                   # address and segment sizes
            if n not in (2, 4, 8):
                break
            tup = 2 * n
            pos = start + ((pos - start + tup - 1) // tup) * tup
            while pos + tup <= end:
                a, ln = self.uint(d, pos, n), self.uint(d, pos + n, n)
                pos += tup
                if a == 0 and ln == 0:
                    break
                if ln:
                    out.append((a, a + ln, info_off))
            if end <= start:
                break
            pos = end
        out.sort()
        return out

    # -- .debug_line
    def line_table(self, u: _Unit) -> tuple[list[str | None], list[tuple]]:
        """(file names by index, rows (address, file, line, end_sequence))."""
        top = u.top
        if top is None or AT_stmt_list not in top[2]:
            return [], []
        d = self.line
        pos = top[2][AT_stmt_list][1]
        length = self.uint(d, pos, 4)
        pos += 4
        osz = 4
        if length == 0xFFFFFFFF:
            length = self.uint(d, pos, 8)
            pos += 8
            osz = 8
        end = min(pos + length, len(d))
        version = self.uint(d, pos, 2)
        pos += 2
        addr_size = u.address_size
        if version >= 5:
            addr_size = d[pos]
            pos += 2
        header_length = self.uint(d, pos, osz)
        pos += osz
        prog_start = pos + header_length
        min_inst = d[pos]
        pos += 1
        max_ops = 1
        if version >= 4:
            max_ops = d[pos]
            pos += 1
        pos += 1                                       # default_is_stmt
        line_base = struct.unpack_from("b", d, pos)[0]
        line_range = d[pos + 1]
        opcode_base = d[pos + 2]
        pos += 3
        std_lengths = list(d[pos:pos + opcode_base - 1])
        pos += opcode_base - 1
        comp_dir = u.comp_dir
        names: list[str | None] = []
        if version >= 5:
            dirs, pos = self._v5_entries(d, pos, osz, u)
            files, pos = self._v5_entries(d, pos, osz, u)
            dir_names = [p or "" for p, _ in dirs]
            for fname, di in files:
                dname = dir_names[di] if di is not None and 0 <= di < len(dir_names) else ""
                # Directory 0 repeats the compilation directory; like any
                # relative one, addr2line (so perf) prefixes DW_AT_comp_dir:
                # "./nscd/./nscd/x.c" when the CU was built in ./nscd.
                if dname and not os.path.isabs(dname) and comp_dir:
                    dname = os.path.join(comp_dir, dname)
                names.append(_join(dname, fname))
        else:
            dir_names = []
            while pos < end and d[pos] != 0:
                e = d.find(b"\0", pos)
                dir_names.append(d[pos:e].decode("utf-8", "replace"))
                pos = e + 1
            pos += 1
            names.append(None)                         # file numbers start at 1
            while pos < end and d[pos] != 0:
                e = d.find(b"\0", pos)
                fname = d[pos:e].decode("utf-8", "replace")
                pos = e + 1
                di, pos = _uleb(d, pos)
                _, pos = _uleb(d, pos)
                _, pos = _uleb(d, pos)
                if di == 0:
                    dname = comp_dir
                else:
                    dname = dir_names[di - 1] if di - 1 < len(dir_names) else ""
                    if dname and not os.path.isabs(dname) and comp_dir:
                        dname = os.path.join(comp_dir, dname)
                names.append(_join(dname, fname))
        if max_ops not in (0, 1) or line_range == 0:
            return names, []
        rows = _decode_rows(d, prog_start, end, min_inst, line_base, line_range, opcode_base,
                            std_lengths, self.order, addr_size)
        return names, rows

    def _v5_entries(self, d, pos, osz, u):
        """Directory or file entries of a DWARF 5 line header: [(path, dir)]."""
        nfmt = d[pos]
        pos += 1
        fmts = []
        for _ in range(nfmt):
            ct, pos = _uleb(d, pos)
            form, pos = _uleb(d, pos)
            fmts.append((ct, form))
        count, pos = _uleb(d, pos)
        out = []
        for _ in range(count):
            path, di = None, None
            for ct, form in fmts:
                if form == F_string:
                    e = d.find(b"\0", pos)
                    val = d[pos:e].decode("utf-8", "replace")
                    pos = e + 1
                elif form in (F_line_strp, F_strp):
                    off = self.uint(d, pos, osz)
                    pos += osz
                    val = _cstr(self.line_str if form == F_line_strp else self.str, off)
                elif form in (F_udata,):
                    val, pos = _uleb(d, pos)
                elif form in _FIXED:
                    n = _FIXED[form]
                    val = self.uint(d, pos, n) if n <= 8 else None
                    pos += n
                elif form in (F_block, F_exprloc):
                    n, pos = _uleb(d, pos)
                    pos += n
                    val = None
                elif form in _STRX_FORMS:
                    if form == F_strx:
                        idx, pos = _uleb(d, pos)
                    else:
                        n = _FIXED[form]
                        idx = self.uint(d, pos, n)
                        pos += n
                    val = self.string(u, (F_strx, idx))
                else:
                    raise DwarfError(f"line header form {form:#x}")
                if ct == 1:
                    path = val
                elif ct == 2:
                    di = val
            out.append((path, di))
        return out, pos


def _join(d: str, name: str | None) -> str | None:
    if name is None:
        return None
    # Joined, not normalized: addr2line and perf print "./a/../b.h".
    return name if os.path.isabs(name) or not d else os.path.join(d, name)


def _decode_rows(d, pos, end, min_inst, line_base, line_range, opcode_base, std_lengths,
                 order, address_size) -> list[tuple]:
    """Rows (address, file, line, end_sequence) of one line program."""
    rows = []
    append = rows.append
    address, file, line = 0, 1, 1
    const_add = ((255 - opcode_base) // line_range) * min_inst
    while pos < end:
        op = d[pos]
        pos += 1
        if op >= opcode_base:
            adj = op - opcode_base
            address += (adj // line_range) * min_inst
            line += line_base + adj % line_range
            append((address, file, line, False))
        elif op == 0:
            length, pos = _uleb(d, pos)
            if length == 0 or pos >= end:
                pos += length
                continue
            sub = d[pos]
            if sub == 1:                      # DW_LNE_end_sequence
                append((address, file, line, True))
                address, file, line = 0, 1, 1
            elif sub == 2:                    # DW_LNE_set_address
                address = int.from_bytes(d[pos + 1:pos + length], order)
            pos += length
        elif op == 1:                         # DW_LNS_copy
            append((address, file, line, False))
        elif op == 2:                         # DW_LNS_advance_pc
            v, pos = _uleb(d, pos)
            address += v * min_inst
        elif op == 3:                         # DW_LNS_advance_line
            v, pos = _sleb(d, pos)
            line += v
        elif op == 4:                         # DW_LNS_set_file
            file, pos = _uleb(d, pos)
        elif op == 8:                         # DW_LNS_const_add_pc
            address += const_add
        elif op == 9:                         # DW_LNS_fixed_advance_pc
            address += int.from_bytes(d[pos:pos + 2], order)
            pos += 2
        else:                                 # column, stmt, isa...: operands skipped
            n = std_lengths[op - 1] if op - 1 < len(std_lengths) else 0
            for _ in range(n):
                _, pos = _uleb(d, pos)
    if address_size < 8:
        mask = (1 << (8 * address_size)) - 1
        rows = [(a & mask, f, ln, e) for a, f, ln, e in rows]
    return rows


# ---------------------------------------------------------------- the index
class _Scope:
    __slots__ = ("ranges", "die_offset", "call_file", "call_line", "children", "is_inline")

    def __init__(self, ranges, die_offset, call_file, call_line, is_inline):
        self.ranges = ranges
        self.die_offset = die_offset
        self.call_file = call_file
        self.call_line = call_line
        self.children: list[_Scope] | None = []
        self.is_inline = is_inline

    def contains(self, addr: int) -> bool:
        for lo, hi in self.ranges:
            if lo <= addr < hi:
                return True
        return False


class _CUData:
    __slots__ = ("unit", "func_starts", "funcs", "row_addrs", "rows", "files")

    def __init__(self, unit):
        self.unit = unit
        self.func_starts: list[int] = []
        self.funcs: list[tuple] = []       # (lo, hi, _Scope), sorted by lo
        self.row_addrs: list[int] = []
        self.rows: list[tuple] = []        # (file_index, line, end_sequence)
        self.files: list[str | None] = []


class LineInfo:
    """DWARF line and inline information of one ELF file (the binary itself or
    its separate debug file). Methods never raise; failures become warnings on
    the binary and None / [] answers."""

    def __init__(self, binary: Binary):
        self.binary = binary
        self._reader: _Reader | None = None
        self._failed = False
        self._aranges: list[tuple[int, int, int]] | None = None
        self._aranges_starts: list[int] = []
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

    # ------------------------------------------------------------ CUs
    def _get_reader(self) -> _Reader | None:
        if self._reader is None and not self._failed:
            if not self.has_dwarf:
                self._failed = True
                return None
            self._reader = _Reader(self.binary)
        return self._reader

    def _cu_offset_for(self, addr: int) -> int | None:
        r = self._get_reader()
        if r is None:
            return None
        if self._aranges is None:
            try:
                self._aranges = r.parse_aranges() if r.aranges else []
            except (DwarfError, IndexError) as e:
                self.binary.warn(f".debug_aranges: {e}")
                self._aranges = []
            if not self._aranges:
                # No aranges: index every CU by its top DIE's ranges, once.
                self._aranges = self._index_units(r)
            self._aranges_starts = [lo for lo, _, _ in self._aranges]
        # .debug_aranges is authoritative when present: an address it does not
        # cover (padding, hand-written assembly) has no line info.
        i = bisect.bisect_right(self._aranges_starts, addr) - 1
        for j in range(i, max(i - 8, -1), -1):
            lo, hi, off = self._aranges[j]
            if lo <= addr < hi:
                return off
        return None

    def _index_units(self, r: _Reader) -> list[tuple[int, int, int]]:
        out = []
        for start in r.unit_starts():
            try:
                u = r.unit_at(start)
                if u.top is not None:
                    for lo, hi in r.die_ranges(u, u.top[2]):
                        out.append((lo, hi, start))
            except (DwarfError, IndexError, ValueError):
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
        r = self._reader
        try:
            u = r.unit_at(offset)
        except (DwarfError, IndexError) as e:
            self.binary.warn(f"DWARF unit at {offset:#x}: {e}")
            return None
        data = _CUData(u)
        funcs: list[_Scope] = []
        self._collect_functions(u, u.top, funcs, 0)
        # One entry per range, sorted, for bisection: a CU may hold thousands
        # of functions.
        flat = sorted(((lo, hi, s) for s in funcs for lo, hi in s.ranges), key=lambda t: t[0])
        data.func_starts = [t[0] for t in flat]
        data.funcs = flat
        names, rows = r.line_table(u)
        data.files = names
        # Sort by address; at one address the end of a sequence comes before
        # the start of the next, and otherwise the last row wins (as addr2line).
        rows.sort(key=lambda row: (row[0], not row[3]))
        data.row_addrs = [row[0] for row in rows]
        data.rows = [(row[1], row[2], row[3]) for row in rows]
        return data

    def _collect_functions(self, u, die, out: list, depth: int) -> None:
        """Concrete functions of a CU. Only the CU level and namespaces/classes
        are walked; a function's body is read when an address falls in it."""
        if depth > 32:
            return
        r = self._reader
        for child in r.children(u, die):
            tag = child[0]
            if tag == TAG_subprogram:
                ranges = r.die_ranges(u, child[2])
                if ranges:
                    s = _Scope(ranges, child[4], None, None, False)
                    s.children = None          # read on demand
                    out.append(s)
            elif tag in _CONTAINER_TAGS:
                self._collect_functions(u, child, out, depth + 1)

    def _expand(self, scope: _Scope, u: _Unit) -> list:
        if scope.children is None:
            scope.children = []
            die = self._reader.read_die(u, scope.die_offset)
            self._collect_scopes(u, die, scope.children, 0)
        return scope.children

    def _collect_scopes(self, u, die, out: list, depth: int) -> None:
        if depth > 64:
            return
        r = self._reader
        for child in r.children(u, die):
            tag = child[0]
            if tag == TAG_lexical_block:
                # Blocks only group; their inlined children belong to the
                # enclosing function.
                self._collect_scopes(u, child, out, depth + 1)
            elif tag == TAG_inlined_subroutine:
                a = child[2]
                ranges = r.die_ranges(u, a)
                if not ranges:
                    continue
                cf = a.get(AT_call_file)
                cl = a.get(AT_call_line)
                s = _Scope(ranges, child[4], cf[1] if cf else None, cl[1] if cl else None, True)
                self._collect_scopes(u, child, s.children, depth + 1)
                out.append(s)

    # ------------------------------------------------------------ answers
    def _file(self, cu: _CUData, index) -> str | None:
        if not isinstance(index, int):
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

    def _name(self, offset: int) -> str | None:
        """Linkage name (else DW_AT_name) of a DIE, following
        DW_AT_abstract_origin and DW_AT_specification, across units."""
        if offset in self._names:
            return self._names[offset]
        r = self._reader
        name = None
        off = offset
        for _ in range(16):
            u, die = r.die_at(off)
            if die is None:
                break
            a = die[2]
            link = a.get(AT_linkage_name) or a.get(AT_MIPS_linkage_name)
            if link is not None:
                name = r.string(u, link) or name
                break
            if name is None and AT_name in a:
                name = r.string(u, a[AT_name])
                # keep looking for a linkage name through the origin chain
            nxt = a.get(AT_abstract_origin) or a.get(AT_specification)
            if nxt is None:
                break
            off = r.ref(u, nxt)
            if off is None:
                break
        self._names[offset] = name
        return name

    def _function_at(self, cu: _CUData, addr: int) -> _Scope | None:
        i = bisect.bisect_right(cu.func_starts, addr) - 1
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
        scopes = self._expand(func, cu.unit)
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
            out.append(InlineFrame(self._name(scope.die_offset), file, line))
            if scope.is_inline:
                file, line = self._file(cu, scope.call_file), scope.call_line
        return out
