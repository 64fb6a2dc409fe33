"""One DWARF compile unit decoded for naming addresses: its concrete
functions with the calls inlined in them (`Scope` trees, by address), and
its line table, into a `UnitData` that keeps no pyelftools object.

The DIE tree is walked by hand (`children`), each DIE parsed once and not
kept; names follow DW_AT_abstract_origin and DW_AT_specification across
units and into a dwz supplementary file (`die_name`).
"""
from __future__ import annotations

import bisect
import os
from array import array
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from elftools.construct.lib.container import Container
    from elftools.dwarf.compileunit import CompileUnit
    from elftools.dwarf.die import DIE
    from elftools.dwarf.dwarfinfo import DWARFInfo

# References into a supplementary file (dwz -m): GNU's and DWARF 5's.
_SUP_REF_FORMS = frozenset(("DW_FORM_GNU_ref_alt", "DW_FORM_ref_sup4", "DW_FORM_ref_sup8"))

_CONTAINER_TAGS = frozenset(("DW_TAG_namespace", "DW_TAG_class_type", "DW_TAG_structure_type",
                             "DW_TAG_union_type", "DW_TAG_module"))
_ADDR_FORMS = frozenset(("DW_FORM_addr", "DW_FORM_addrx", "DW_FORM_addrx1", "DW_FORM_addrx2",
                         "DW_FORM_addrx3", "DW_FORM_addrx4", "DW_FORM_GNU_addr_index"))
_LOCAL_REF_FORMS = frozenset(("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8",
                              "DW_FORM_ref_udata"))

_MAX_NESTING = 64          # namespaces, lexical blocks, inlined scopes
_MAX_NAME_LINKS = 16       # DW_AT_abstract_origin / DW_AT_specification hops


def text_of(value: object) -> str | None:
    """A string attribute's value; None when pyelftools could not resolve it
    (e.g. an offset into a supplementary file it was not given)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def join_path(d: str, name: str | None) -> str | None:
    if name is None:
        return None
    # Joined, not normalized: addr2line and perf print "./a/../b.h".
    return name if os.path.isabs(name) or not d else os.path.join(d, name)


class Scope:
    """A function (DW_TAG_subprogram with code) or an inlined call in it."""
    __slots__ = ("ranges", "name", "call_file", "call_line", "children", "is_inline")

    def __init__(self, ranges: list[tuple[int, int]], name: str | None, call_file: int | None,
                 call_line: int | None, children: list[Scope], is_inline: bool) -> None:
        self.ranges = ranges
        self.name = name
        self.call_file = call_file
        self.call_line = call_line
        self.children = children          # inlined calls directly inside
        self.is_inline = is_inline

    def contains(self, addr: int) -> bool:
        for lo, hi in self.ranges:
            if lo <= addr < hi:
                return True
        return False


class UnitData:
    """What one CU answers with, decoded once and kept; no pyelftools object
    is held, so the DIEs and line states it parsed are freed."""
    __slots__ = ("func_starts", "funcs", "row_addrs", "row_files", "row_lines", "files",
                 "offset", "lines_loaded")

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset
        # The line table is decoded on first need (srcline, file:line of
        # inlined calls): the function tree alone names inlined frames, and
        # decoding a large unit's line program costs more than its DIEs.
        self.lines_loaded = False
        self.func_starts: list[int] = []
        self.funcs: list[tuple] = []       # (lo, hi, Scope), sorted by lo
        self.row_addrs = array("Q")        # line rows sorted by address;
        self.row_files = array("l")        # file index, -1 for an end of sequence
        self.row_lines = array("q")
        self.files: list[str | None] = []


class UnitWalk:
    """The state of decoding one CU: its own pyelftools DWARFInfo (dropped
    afterwards with every DIE it cached), the unit, its base address."""
    __slots__ = ("dwarf", "cu", "base", "ranges", "names", "main_dwarf", "sup_dwarf")

    def __init__(self, dwarf: DWARFInfo, cu: CompileUnit, base: int,
                 main_dwarf: DWARFInfo | None = None, sup_dwarf: DWARFInfo | None = None
                 ) -> None:
        self.dwarf = dwarf
        self.cu = cu
        self.base = base
        # the file's long-lived DWARFInfo and its supplementary file's (the
        # DIEs of other units, or of the supplementary file, that names refer to)
        self.main_dwarf = main_dwarf
        self.sup_dwarf = sup_dwarf
        self.ranges = dwarf.range_lists()
        self.names: dict[int, str | None] = {}


def children(die: DIE, cu: CompileUnit) -> Iterator[DIE]:
    """The child DIEs of die, as pyelftools parses them. A child's subtree
    is skipped through DW_AT_sibling when it points forward, else by a
    linear scan to the null entry that ends it; both stop at the unit's
    end. (pyelftools' own iter_children loops forever on a sibling link
    that points back.)"""
    from elftools.dwarf.die import DIE
    if not die.has_children:
        return
    end = cu.cu_offset + cu.size
    pos = die.offset + die.size
    stream = die.stream
    while pos < end:
        # Parsed, not looked up in the unit's DIE cache: each DIE of the
        # walk is read once, and not kept.
        child = DIE(cu, stream, pos)
        if child.is_null():
            return
        yield child
        nxt = pos + child.size
        if child.has_children:
            sib = child.attributes.get("DW_AT_sibling")
            if sib is not None and sib.form in _LOCAL_REF_FORMS and cu.cu_offset + sib.raw_value > pos:
                nxt = cu.cu_offset + sib.raw_value
            else:
                nxt = skip_subtree(cu, stream, nxt, end)
        pos = nxt                         # always forward: a DIE is at least one byte


def skip_subtree(cu: CompileUnit, stream: IO[bytes], pos: int, end: int) -> int:
    from elftools.dwarf.die import DIE
    depth = 1
    while depth and pos < end:
        d = DIE(cu, stream, pos)
        pos += d.size
        if d.is_null():
            depth -= 1
        elif d.has_children:
            depth += 1
    return pos


def collect_functions(die: DIE, w: UnitWalk, out: list, depth: int) -> None:
    """Concrete functions of a CU (at its top level and in namespaces and
    classes), each with the inlined calls in its body."""
    if depth > 32:
        return
    for child in children(die, w.cu):
        tag = child.tag
        if tag == "DW_TAG_subprogram":
            ranges = die_ranges(child, w)
            if ranges:
                inlined: list[Scope] = []
                collect_scopes(child, w, inlined, 0)
                out.append(Scope(ranges, die_name(child, w), None, None, inlined, False))
        elif tag in _CONTAINER_TAGS:
            collect_functions(child, w, out, depth + 1)


def collect_scopes(die: DIE, w: UnitWalk, out: list, depth: int) -> None:
    if depth > _MAX_NESTING:
        return
    for child in children(die, w.cu):
        tag = child.tag
        if tag == "DW_TAG_lexical_block":
            # Blocks only group; their inlined children belong to the
            # enclosing function.
            collect_scopes(child, w, out, depth + 1)
        elif tag == "DW_TAG_inlined_subroutine":
            ranges = die_ranges(child, w)
            if not ranges:
                continue
            a = child.attributes
            cf = a.get("DW_AT_call_file")
            cl = a.get("DW_AT_call_line")
            s = Scope(ranges, die_name(child, w), cf.value if cf else None,
                       cl.value if cl else None, [], True)
            collect_scopes(child, w, s.children, depth + 1)
            out.append(s)


def die_ranges(die: DIE, w: UnitWalk) -> list[tuple[int, int]]:
    a = die.attributes
    lo = a.get("DW_AT_low_pc")
    hi = a.get("DW_AT_high_pc")
    if lo is not None and hi is not None:
        lo_v, hi_v = lo.value, hi.value
        if not isinstance(lo_v, int) or not isinstance(hi_v, int):
            return []
        if hi.form not in _ADDR_FORMS:
            hi_v += lo_v                  # DWARF 4+: high_pc is a length
        return [(lo_v, hi_v)] if hi_v > lo_v else []
    rng = a.get("DW_AT_ranges")
    if rng is None or w.ranges is None or not isinstance(rng.value, int):
        return []
    # A rnglistx value is already an offset: pyelftools resolves it
    # through the unit's DW_AT_rnglists_base.
    base = w.base
    out = []
    for e in w.ranges.get_range_list_at_offset(rng.value, cu=w.cu):
        if hasattr(e, "base_address"):
            base = e.base_address  # type: ignore[union-attr]  # (hasattr above)
            continue
        b, en = e.begin_offset, e.end_offset
        if not e.is_absolute:
            b += base
            en += base
        if en > b:
            out.append((b, en))
    return out


def die_name(die: DIE, w: UnitWalk) -> str | None:
    """Linkage name (else DW_AT_name) of a DIE, following
    DW_AT_abstract_origin and DW_AT_specification, across units."""
    key = die.offset
    if key in w.names:
        return w.names[key]
    name = None
    for _ in range(_MAX_NAME_LINKS):
        a = die.attributes
        link = a.get("DW_AT_linkage_name") or a.get("DW_AT_MIPS_linkage_name")
        if link is not None:
            name = text_of(link.value) or name
            break
        if name is None and "DW_AT_name" in a:
            name = text_of(a["DW_AT_name"].value)
            # keep looking for a linkage name through the origin chain
        ref = a.get("DW_AT_abstract_origin") or a.get("DW_AT_specification")
        if ref is None:
            break
        if ref.form in _LOCAL_REF_FORMS:
            die = die.get_DIE_from_attribute(ref.name)
        elif ref.form == "DW_FORM_ref_addr":
            # Through the long-lived DWARFInfo of the DIE's file, which
            # keeps the unit headers it has read: another unit's DIE is
            # parsed alone.  (walks run after _dwarfinfo() made it)
            sup = w.sup_dwarf
            owner = sup if sup is not None and die.dwarfinfo is sup else w.main_dwarf
            die = owner.get_DIE_from_refaddr(ref.raw_value)  # type: ignore[union-attr]
        elif ref.form in _SUP_REF_FORMS and w.sup_dwarf is not None:
            # An abstract instance dwz moved to the supplementary file
            # (an inline function several files share).
            die = w.sup_dwarf.get_DIE_from_refaddr(ref.raw_value)
        else:
            break                         # ref_sig8; a supplementary file not found
    w.names[key] = name
    return name


def load_lines(data: UnitData, w: UnitWalk, top: DIE) -> None:
    prog = w.dwarf.line_program_for_CU(w.cu)
    if prog is None:
        return
    hdr = prog.header
    rows = []
    # pyelftools divides by these; a zero is malformed: keep the file
    # names, drop the rows.
    if hdr["line_range"] and hdr["maximum_operations_per_instruction"]:
        rows = [(st.address, -1 if st.end_sequence else st.file, st.line)
                for st in (e.state for e in prog.get_entries()) if st is not None]
    # After the program: DW_LNE_define_file appends to the header's files.
    data.files = file_names(hdr, top)
    # Addresses wrap at the unit's address size, as the line program's
    # arithmetic does on the target.
    mask = (1 << (8 * min(w.cu.header["address_size"], 8))) - 1
    rows = [(a & mask, f, ln) for a, f, ln in rows]
    # Sort by address; at one address the end of a sequence comes before
    # the start of the next, and otherwise the last row wins (as addr2line).
    rows.sort(key=lambda row: (row[0], row[1] != -1))
    data.row_addrs = array("Q", [r[0] for r in rows])
    data.row_files = array("l", [r[1] if 0 <= r[1] < (1 << 31) else -2 for r in rows])
    data.row_lines = array("q", [r[2] if -(1 << 63) <= r[2] < (1 << 63) else 0 for r in rows])


def file_names(hdr: Container, top: DIE) -> list[str | None]:
    """File names by the index the line rows use, joined as addr2line
    joins them."""
    comp_dir = top.attributes.get("DW_AT_comp_dir")
    comp_dir = (text_of(comp_dir.value) or "") if comp_dir is not None else ""
    dir_names = [text_of(d) or "" for d in hdr["include_directory"]]
    names: list[str | None] = []
    if hdr["version"] >= 5:
        for fe in hdr["file_entry"]:
            di = fe.dir_index
            dname = dir_names[di] if isinstance(di, int) and 0 <= di < len(dir_names) else ""
            # Directory 0 repeats the compilation directory; like any
            # relative one, addr2line (so perf) prefixes DW_AT_comp_dir:
            # "./nscd/./nscd/x.c" when the CU was built in ./nscd.
            if dname and not os.path.isabs(dname) and comp_dir:
                dname = os.path.join(comp_dir, dname)
            names.append(join_path(dname, text_of(fe.name)))
    else:
        names.append(None)                         # file numbers start at 1
        for fe in hdr["file_entry"]:
            di = fe.dir_index
            if di == 0:
                dname = comp_dir
            else:
                dname = dir_names[di - 1] if 0 < di <= len(dir_names) else ""
                if dname and not os.path.isabs(dname) and comp_dir:
                    dname = os.path.join(comp_dir, dname)
            names.append(join_path(dname, text_of(fe.name)))
    return names


def unit_file(cu: UnitData, index: int | None) -> str | None:
    if not isinstance(index, int):
        return None
    return cu.files[index] if 0 <= index < len(cu.files) else None


def function_at(cu: UnitData, addr: int) -> Scope | None:
    i = bisect.bisect_right(cu.func_starts, addr) - 1
    for j in range(i, max(i - 8, -1), -1):
        lo, hi, s = cu.funcs[j]
        if lo <= addr < hi:
            return s
    return None


def low_pc(top: DIE) -> int:
    """The unit's base address for its range lists (DW_AT_low_pc, else 0)."""
    lo = top.attributes.get("DW_AT_low_pc")
    return lo.value if lo is not None and isinstance(lo.value, int) else 0
