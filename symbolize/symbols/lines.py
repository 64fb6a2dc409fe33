"""Source lines and inlined frames from DWARF (.debug_info / .debug_line).

pyelftools decodes the DWARF: unit headers, abbreviations, DIEs and their
forms (DWARF 2 to 5, strx / addrx / rnglistx included), .debug_aranges, range
lists and line programs. This module only indexes what it decodes.

Lazy: an address is mapped to its compilation unit through .debug_aranges (or,
when that is missing, the CUs' own ranges, read once); the first time an
address inside a CU is asked for, its DIE tree is walked once (subtrees that
hold no code, such as types, skipped by their sibling links) into sorted
functions with their inlined calls, names resolved, and its line program is
decoded once into sorted rows. Only that compact index is kept: each CU is
decoded through a DWARFInfo of its own, dropped afterwards with the DIEs and
line states pyelftools cached in it (kept, they made 193 MiB for the 180 CUs
of tests/bench_lines.py, against 16 MiB for the index and the sections).

What is done here rather than by pyelftools, because it cannot:
- Section bytes come from `Binary.section_data`, which inflates SHF_COMPRESSED
  sections compressed with zstd as well as zlib, within a size limit;
  pyelftools 0.33 inflates only zlib, to whatever size the header claims.
  They are handed to pyelftools' `DWARFInfo` as `DebugSectionDescriptor`s.
- The walk over a DIE's children (`_children`): pyelftools' `iter_children`
  follows DW_AT_sibling without checking that it moves forward, so one
  corrupt sibling link makes it loop forever. The walk here uses the same
  links and pyelftools' DIEs, but follows only a link that moves forward and
  otherwise finds the subtree's end by a linear scan, always moving forward.
- File names are joined with the compilation directory as addr2line (and so
  perf) joins them; that is presentation, not decoding.
"""
from __future__ import annotations

import bisect
import io
import os
import struct
from array import array
from typing import IO, TYPE_CHECKING, Any, Literal, NamedTuple

from ..cachedir import CacheDir
from ..elffile import Binary

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from elftools.construct.lib.container import Container
    from elftools.dwarf.compileunit import CompileUnit
    from elftools.dwarf.die import DIE
    from elftools.dwarf.dwarfinfo import DWARFInfo
    from elftools.dwarf.structs import DWARFStructs

    from ..cachedir import CacheWhere
    from .native import NativeIndex


class InlineFrame(NamedTuple):
    function: str | None     # linkage (mangled) name when known, else DW_AT_name
    file: str | None
    line: int | None

    @property
    def srcline(self) -> str | None:
        """'file:line', or None where the file is not known."""
        return f"{self.file}:{self.line}" if self.file else None


# Sections pyelftools' DWARFInfo takes, by its keyword. .debug_loc(lists) are
# needed although no location is read: pyelftools resolves DW_FORM_loclistx
# while it parses a DIE.
_SECTIONS = {
    "debug_info_sec": ".debug_info",
    "debug_aranges_sec": ".debug_aranges",
    "debug_abbrev_sec": ".debug_abbrev",
    "debug_str_sec": ".debug_str",
    "debug_line_sec": ".debug_line",
    "debug_line_str_sec": ".debug_line_str",
    "debug_str_offsets_sec": ".debug_str_offsets",
    "debug_addr_sec": ".debug_addr",
    "debug_ranges_sec": ".debug_ranges",
    "debug_rnglists_sec": ".debug_rnglists",
    "debug_loc_sec": ".debug_loc",
    "debug_loclists_sec": ".debug_loclists",
}
_UNUSED_SECTIONS = ("debug_frame_sec", "eh_frame_sec", "debug_pubtypes_sec", "debug_pubnames_sec",
                    "debug_sup_sec", "gnu_debugaltlink_sec", "debug_types_sec")
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


def _text(value: object) -> str | None:
    """A string attribute's value; None when pyelftools could not resolve it
    (e.g. an offset into a supplementary file it was not given)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _join(d: str, name: str | None) -> str | None:
    if name is None:
        return None
    # Joined, not normalized: addr2line and perf print "./a/../b.h".
    return name if os.path.isabs(name) or not d else os.path.join(d, name)


# ---------------------------------------------------------------- the index
class _Scope:
    """A function (DW_TAG_subprogram with code) or an inlined call in it."""
    __slots__ = ("ranges", "name", "call_file", "call_line", "children", "is_inline")

    def __init__(self, ranges: list[tuple[int, int]], name: str | None, call_file: int | None,
                 call_line: int | None, children: list[_Scope], is_inline: bool) -> None:
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


class _CUData:
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
        self.funcs: list[tuple] = []       # (lo, hi, _Scope), sorted by lo
        self.row_addrs = array("Q")        # line rows sorted by address;
        self.row_files = array("l")        # file index, -1 for an end of sequence
        self.row_lines = array("q")
        self.files: list[str | None] = []


class _Walk:
    """The state of decoding one CU: its own pyelftools DWARFInfo (dropped
    afterwards with every DIE it cached), the unit, its base address."""
    __slots__ = ("dwarf", "cu", "base", "ranges", "names")

    def __init__(self, dwarf: DWARFInfo, cu: CompileUnit, base: int) -> None:
        self.dwarf = dwarf
        self.cu = cu
        self.base = base
        self.ranges = dwarf.range_lists()
        self.names: dict[int, str | None] = {}


class LineInfo:
    """DWARF line and inline information of one ELF file (the binary itself or
    its separate debug file). Methods never raise; failures become warnings on
    the binary and None / [] answers."""

    def __init__(self, binary: Binary, cache: CacheWhere = None, native: bool = True, *,
                 cache_key: tuple[str, str] | None = None, native_lines: bool = False,
                 supplementary: Callable[[], Binary | None] | None = None) -> None:
        """cache, cache_key: a CacheDir (or a directory's path) and the
        (build-id, which) under which function_names() keeps its answers
        across runs, and the native index its symcache; `which` tells a
        binary's own DWARF ("b") from its debug file's ("d").  native: answer
        function_names() from symbolic's index (native.py) where it is
        installed.  native_lines: frames() and srcline() from it too, where
        it answers (its file paths are normalized: for callers that print
        base names).  supplementary: finds the supplementary file the
        DWARF refers to (binary.supplementary_link: `dwz -m` moved shared
        DIEs and strings there, inlined functions' names among them), asked
        once, at the first lookup that needs it; None where the file is
        not found (those names are then unknown, and no answer is kept
        across runs)."""
        self.binary = binary
        self.cache = CacheDir.of(cache if cache_key else None)
        self.cache_key = cache_key
        self.names_cache = self.cache.path_for(
            "inline", cache_key[0], "-%s.json" % cache_key[1]) if cache_key else None
        self._native_arg = native
        self.native_lines = native_lines
        self._native: NativeIndex | Literal[False] | None = None
        self._names: dict[int, tuple] | None = None
        self._names_added = False
        self._sections: dict | None = None
        self._config: Any = None          # pyelftools' DwarfConfig
        self._dwarf: DWARFInfo | None = None  # long-lived: aranges, cross-unit references
        self._failed = False
        self._aranges: list[tuple[int, int, int]] | None = None
        self._aranges_starts: list[int] = []
        self._cus: dict[int, _CUData | None] = {}
        self._find_supplementary = supplementary
        self._supplementary: Binary | None | Literal[False] = False     # (False: not looked for)
        self._sup_dwarf: DWARFInfo | None = None

    @property
    def has_dwarf(self) -> bool:
        b = self.binary
        return bool(b.ok and b.get_section(".debug_info") is not None
                    and b.get_section(".debug_line") is not None)

    # ------------------------------------------------------------ public
    def frames(self, svma: int, lines: bool = True) -> list[InlineFrame]:
        """Innermost first: each inlined function with its location, then the
        function containing them all, located at the outermost call site (or
        at the address itself when nothing is inlined there).  With
        lines=False only the names are wanted: file and line stay None and
        the unit's line table is not decoded."""
        if lines and self.native_lines:
            located = self._native_locations(svma)
            if located is not None:
                return located
        try:
            return self._frames(svma, lines)
        except RecursionError:
            self.binary.warn("DWARF too deeply nested")
        except Exception as e:     # malformed DWARF: warn, answer nothing
            self.binary.warn(f"DWARF at {svma:#x}: {type(e).__name__}: {e}")
        return []

    def function_names(self, svma: int) -> tuple:
        """The function of each frame(svma, lines=False), innermost first
        (None where DWARF names none).  Kept in `names_cache` across runs:
        a profile touches a few hundred addresses, and reading the units that
        hold them costs a tenth of a second per run for libc."""
        names = self._names
        if names is None:
            names = self._names = self._load_names()
        got = names.get(svma)
        if got is None:
            native = self._native_index()
            got = native.names(svma) if native is not None else None
            if got is not None and None in got and self.supplementary() is not None:
                # (symbolic reads no supplementary file: its names are
                # pyelftools' to find, through it)
                got = None
            if got is None:
                got = tuple(f.function for f in self.frames(svma, lines=False))
            names[svma] = got
            self._names_added = True
        return got

    def prepare(self) -> None:
        """Build (or read) the native index now rather than at the first
        function_names() that needs it."""
        native = self._native_index()
        if native is not None:
            native.prepare()

    def _native_index(self) -> NativeIndex | None:
        """native.NativeIndex of the file, or None (off, or no wheel)."""
        if self._native is None:
            self._native = False
            if self._native_arg and self.has_dwarf:
                from . import native
                if native.available():
                    self._native = native.NativeIndex(self.binary, self.cache, self.cache_key)
        return self._native or None

    def _native_locations(self, svma: int) -> list[InlineFrame] | None:
        native = self._native_index()
        got = native.locations(svma) if native is not None else None
        if got is None or (any(loc[0] is None for loc in got) and
                           self.supplementary() is not None):
            return None
        return [InlineFrame(*loc) for loc in got]

    def supplementary(self) -> Binary | None:
        """The supplementary file of this file's DWARF, found (once), or
        None: there is none, or it was not found."""
        if self._supplementary is False:
            self._supplementary = None
            if self._find_supplementary is not None and \
                    self.binary.supplementary_link is not None:
                self._supplementary = self._find_supplementary()
        return self._supplementary

    @property
    def supplementary_missing(self) -> bool:
        """Whether the DWARF refers to a supplementary file not found."""
        return self.binary.supplementary_link is not None and self.supplementary() is None

    def _load_names(self) -> dict:
        doc = self.cache.read_json(self.names_cache)
        if not isinstance(doc, dict) or doc.get("format") != _names_format():
            return {}
        out = {}
        try:
            for svma, names in doc["names"]:
                if not (isinstance(svma, int) and isinstance(names, list) and
                        all(n is None or isinstance(n, str) for n in names)):
                    return {}
                out[svma] = tuple(names)
        except (KeyError, TypeError, ValueError):
            return {}
        return out

    def save_names(self) -> bool:
        """Write function_names()'s answers to `names_cache` if it learnt
        new ones, unless the file had faults (a partial answer is not kept)."""
        if not (self.names_cache and self._names_added) or self.binary.warnings or \
                self.supplementary_missing:
            return False
        self._names_added = False
        return self.cache.write_json(self.names_cache, {
            "format": _names_format(),
            # (names learnt: _names was loaded)
            "names": [[svma, list(names)] for svma, names in sorted(self._names.items())]})  # type: ignore[union-attr]

    def srcline(self, svma: int) -> str | None:
        """'file:line' of the address from the line table, or None."""
        if self.native_lines:
            located = self._native_locations(svma)
            if located is not None:
                return located[0].srcline
        try:
            cu = self._cu_for(svma)
            if cu is None:
                return None
            loc = self._line_for(cu, svma)
            if loc is None or loc[0] is None:
                return None
            return f"{loc[0]}:{loc[1]}"
        except RecursionError:
            self.binary.warn("DWARF too deeply nested")
        except Exception as e:
            self.binary.warn(f"DWARF line at {svma:#x}: {type(e).__name__}: {e}")
        return None

    # ------------------------------------------------------------ DWARFInfo
    def _dwarfinfo(self) -> DWARFInfo | None:
        """The long-lived DWARFInfo (aranges, unit headers, other units' DIEs
        that names refer to), or None when there is no usable DWARF."""
        if self._dwarf is None and not self._failed:
            self._failed = True
            if not self.has_dwarf:
                return None
            try:
                if self._load_sections():
                    self._dwarf = self._new_dwarfinfo()
            except Exception as e:
                self.binary.warn(f"DWARF: {type(e).__name__}: {e}")
                return None
            self._failed = self._dwarf is None
        return self._dwarf

    def _load_sections(self) -> bool:
        """Read (and decompress) the DWARF sections once, as pyelftools'
        section descriptors; and the supplementary file's, where the DWARF
        refers to one that is found."""
        loaded = _dwarf_sections(self.binary)
        if loaded is None:
            return False
        self._sections, self._config = loaded
        sup = self.supplementary()
        if sup is not None:
            from elftools.dwarf.dwarfinfo import DWARFInfo
            got = _dwarf_sections(sup, supplementary=True)
            if got is not None:
                # Long-lived: its DIEs are read by offset, its strings by
                # offset, from every unit of this file.
                self._sup_dwarf = DWARFInfo(config=got[1], **got[0])
        return True

    def _new_dwarfinfo(self) -> DWARFInfo:
        """A pyelftools DWARFInfo over the loaded sections. Making one parses
        nothing, so each CU is decoded through a new one, which goes away with
        the abbreviations, DIEs and line states it cached. The section streams
        are shared: pyelftools seeks before it reads."""
        from elftools.dwarf.dwarfinfo import DWARFInfo
        # (called after _load_sections set them)
        dwarf = DWARFInfo(config=self._config, **self._sections)  # type: ignore[arg-type]
        # pyelftools resolves DW_FORM_GNU_strp_alt / strp_sup through it
        dwarf.supplementary_dwarfinfo = self._sup_dwarf
        return dwarf

    # ------------------------------------------------------------ CUs
    def _cu_offset_for(self, addr: int) -> int | None:
        dwarf = self._dwarfinfo()
        if dwarf is None:
            return None
        if self._aranges is None:
            self._aranges = []
            try:
                sec = self._sections.get("debug_aranges_sec") if self._sections else None
                fast = _read_aranges(sec.stream.getvalue(), dwarf.structs) \
                    if sec is not None else None
                if fast is not None:
                    self._aranges = sorted(fast)
                else:
                    ar = dwarf.get_aranges()
                    if ar is not None:
                        self._aranges = sorted(
                            (e.begin_addr, e.begin_addr + e.length, e.info_offset)
                            for e in ar.entries if e.length)
            except Exception as e:
                self.binary.warn(f".debug_aranges: {type(e).__name__}: {e}")
            if not self._aranges:
                # No aranges: index every CU by its top DIE's ranges, once.
                self._aranges = self._index_units()
            self._aranges_starts = [lo for lo, _, _ in self._aranges]
        # .debug_aranges is authoritative when present: an address it does not
        # cover (padding, hand-written assembly) has no line info.
        i = bisect.bisect_right(self._aranges_starts, addr) - 1
        for j in range(i, max(i - 8, -1), -1):
            lo, hi, off = self._aranges[j]
            if lo <= addr < hi:
                return off
        return None

    def _index_units(self) -> list[tuple[int, int, int]]:
        dwarf = self._new_dwarfinfo()     # its abbreviation tables and DIEs are dropped after
        out = []
        try:
            for cu in dwarf.iter_CUs():
                try:
                    top = cu.get_top_DIE()
                    w = _Walk(dwarf, cu, _low_pc(top))
                    for lo, hi in self._die_ranges(top, w):
                        out.append((lo, hi, cu.cu_offset))
                except Exception:
                    continue
        except Exception as e:            # a unit header that cannot be read ends the walk
            self.binary.warn(f"DWARF units: {type(e).__name__}: {e}")
        out.sort()
        return out

    def _cu_for(self, addr: int) -> _CUData | None:
        off = self._cu_offset_for(addr)
        if off is None:
            return None
        if off not in self._cus:
            self._cus[off] = None         # a failure is not retried
            self._cus[off] = self._load_cu(off)
        return self._cus[off]

    def _load_cu(self, offset: int) -> _CUData | None:
        dwarf = self._new_dwarfinfo()
        try:
            cu = dwarf.get_CU_at(offset)
            top = cu.get_top_DIE()
        except Exception as e:
            self.binary.warn(f"DWARF unit at {offset:#x}: {type(e).__name__}: {e}")
            return None
        w = _Walk(dwarf, cu, _low_pc(top))
        data = _CUData(offset)
        funcs: list[_Scope] = []
        # The functions and the line table fail apart: a damaged DIE tree
        # keeps the functions read before the damage and all the lines.
        try:
            self._collect_functions(top, w, funcs, 0)
        except Exception as e:
            self.binary.warn(f"DWARF unit at {offset:#x}: functions: {type(e).__name__}: {e}")
        # One entry per range, sorted, for bisection: a CU may hold thousands
        # of functions.
        flat = sorted(((lo, hi, s) for s in funcs for lo, hi in s.ranges), key=lambda t: t[0])
        data.func_starts = [t[0] for t in flat]
        data.funcs = flat
        return data

    def _ensure_lines(self, data: _CUData) -> None:
        """Decode the line table of a unit loaded without it (once)."""
        if data.lines_loaded:
            return
        data.lines_loaded = True
        offset = data.offset
        try:
            dwarf = self._new_dwarfinfo()
            cu = dwarf.get_CU_at(offset)
            top = cu.get_top_DIE()
            self._load_lines(data, _Walk(dwarf, cu, _low_pc(top)), top)
        except Exception as e:
            self.binary.warn(f"DWARF unit at {offset:#x}: lines: {type(e).__name__}: {e}")

    def _children(self, die: DIE, cu: CompileUnit) -> Iterator[DIE]:
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
                    nxt = self._skip_subtree(cu, stream, nxt, end)
            pos = nxt                         # always forward: a DIE is at least one byte

    @staticmethod
    def _skip_subtree(cu: CompileUnit, stream: IO[bytes], pos: int, end: int) -> int:
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

    def _collect_functions(self, die: DIE, w: _Walk, out: list, depth: int) -> None:
        """Concrete functions of a CU (at its top level and in namespaces and
        classes), each with the inlined calls in its body."""
        if depth > 32:
            return
        for child in self._children(die, w.cu):
            tag = child.tag
            if tag == "DW_TAG_subprogram":
                ranges = self._die_ranges(child, w)
                if ranges:
                    inlined: list[_Scope] = []
                    self._collect_scopes(child, w, inlined, 0)
                    out.append(_Scope(ranges, self._name(child, w), None, None, inlined, False))
            elif tag in _CONTAINER_TAGS:
                self._collect_functions(child, w, out, depth + 1)

    def _collect_scopes(self, die: DIE, w: _Walk, out: list, depth: int) -> None:
        if depth > _MAX_NESTING:
            return
        for child in self._children(die, w.cu):
            tag = child.tag
            if tag == "DW_TAG_lexical_block":
                # Blocks only group; their inlined children belong to the
                # enclosing function.
                self._collect_scopes(child, w, out, depth + 1)
            elif tag == "DW_TAG_inlined_subroutine":
                ranges = self._die_ranges(child, w)
                if not ranges:
                    continue
                a = child.attributes
                cf = a.get("DW_AT_call_file")
                cl = a.get("DW_AT_call_line")
                s = _Scope(ranges, self._name(child, w), cf.value if cf else None,
                           cl.value if cl else None, [], True)
                self._collect_scopes(child, w, s.children, depth + 1)
                out.append(s)

    def _die_ranges(self, die: DIE, w: _Walk) -> list[tuple[int, int]]:
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

    def _name(self, die: DIE, w: _Walk) -> str | None:
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
                name = _text(link.value) or name
                break
            if name is None and "DW_AT_name" in a:
                name = _text(a["DW_AT_name"].value)
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
                sup = self._sup_dwarf
                owner = sup if sup is not None and die.dwarfinfo is sup else self._dwarf
                die = owner.get_DIE_from_refaddr(ref.raw_value)  # type: ignore[union-attr]
            elif ref.form in _SUP_REF_FORMS and self._sup_dwarf is not None:
                # An abstract instance dwz moved to the supplementary file
                # (an inline function several files share).
                die = self._sup_dwarf.get_DIE_from_refaddr(ref.raw_value)
            else:
                break                         # ref_sig8; a supplementary file not found
        w.names[key] = name
        return name

    # ------------------------------------------------------------ lines
    def _load_lines(self, data: _CUData, w: _Walk, top: DIE) -> None:
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
        data.files = self._file_names(hdr, top)
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

    @staticmethod
    def _file_names(hdr: Container, top: DIE) -> list[str | None]:
        """File names by the index the line rows use, joined as addr2line
        joins them."""
        comp_dir = top.attributes.get("DW_AT_comp_dir")
        comp_dir = (_text(comp_dir.value) or "") if comp_dir is not None else ""
        dir_names = [_text(d) or "" for d in hdr["include_directory"]]
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
                names.append(_join(dname, _text(fe.name)))
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
                names.append(_join(dname, _text(fe.name)))
        return names

    # ------------------------------------------------------------ answers
    @staticmethod
    def _file(cu: _CUData, index: int | None) -> str | None:
        if not isinstance(index, int):
            return None
        return cu.files[index] if 0 <= index < len(cu.files) else None

    def _line_for(self, cu: _CUData, addr: int) -> tuple[str | None, int] | None:
        self._ensure_lines(cu)
        i = bisect.bisect_right(cu.row_addrs, addr) - 1
        if i < 0:
            return None
        f = cu.row_files[i]
        if f == -1:                           # past the end of a sequence
            return None
        return self._file(cu, f), cu.row_lines[i]

    @staticmethod
    def _function_at(cu: _CUData, addr: int) -> _Scope | None:
        i = bisect.bisect_right(cu.func_starts, addr) - 1
        for j in range(i, max(i - 8, -1), -1):
            lo, hi, s = cu.funcs[j]
            if lo <= addr < hi:
                return s
        return None

    def _frames(self, addr: int, lines: bool = True) -> list[InlineFrame]:
        cu = self._cu_for(addr)
        if cu is None:
            return []
        loc = self._line_for(cu, addr) if lines else None
        file, line = loc if loc is not None else (None, None)
        func = self._function_at(cu, addr)
        if func is None:
            return [InlineFrame(None, file, line)] if loc is not None else []
        chain = [func]
        scopes = func.children
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
            out.append(InlineFrame(scope.name, file, line))
            if scope.is_inline and lines:
                file, line = self._file(cu, scope.call_file), scope.call_line
        return out


def _dwarf_sections(b: Binary, supplementary: bool = False) -> tuple[dict, Any] | None:
    """The DWARF sections of a file, read (and decompressed) as pyelftools'
    section descriptors, with its DwarfConfig; None without .debug_info and
    .debug_abbrev (a supplementary file: without .debug_str and them; dwz
    moves strings alone there where no DIE is shared)."""
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor, DwarfConfig
    secs: dict = dict.fromkeys(_UNUSED_SECTIONS)
    for key, name in _SECTIONS.items():
        sec = b.get_section(name)
        data = b.section_data(sec) if sec is not None else None
        if data is None:
            secs[key] = None          # absent, or unreadable (already warned)
            continue
        data = bytes(data)
        # (data: the section is there)
        secs[key] = DebugSectionDescriptor(io.BytesIO(data), name, sec.offset, len(data), sec.addr)  # type: ignore[union-attr]
    has_units = secs["debug_info_sec"] is not None and secs["debug_abbrev_sec"] is not None
    if not (has_units or (supplementary and secs["debug_str_sec"] is not None)):
        return None
    return secs, DwarfConfig(little_endian=b.little_endian, machine_arch=b.machine or "",
                             default_address_size=8 if b.is_64 else 4)


def _fixed_layout(construct: Any) -> tuple[str, list[str]] | None:
    """(struct format, names) of a pyelftools struct of numbers: for each
    field the first fixed-size number found in it (for the initial length,
    its 32-bit form); None when a field has none."""
    fmt, names = "", []
    for sub in construct.subcons:
        inner = sub
        while not hasattr(inner, "packer"):
            if hasattr(inner, "subcon"):
                inner = inner.subcon
            elif getattr(inner, "subcons", None):
                inner = inner.subcons[0]
            else:
                return None
        fmt += inner.packer.format[-1:] if fmt else inner.packer.format
        names.append(sub.name)
    return fmt, names


def _read_aranges(data: bytes, structs: DWARFStructs) -> list[tuple[int, int, int]] | None:
    """(begin, end, CU offset) of every range of .debug_aranges, read as
    pyelftools' ARanges reads them but with struct: its construct parse of
    each address costs 80 ms on libc's 2,000 ranges.  The set header layout
    is derived from pyelftools' Dwarf_aranges_header.  None (pyelftools then
    reads it) for 64-bit DWARF or segmented addresses."""
    layout = _fixed_layout(structs.Dwarf_aranges_header)
    if layout is None:
        return None
    header = struct.Struct(layout[0])
    names = layout[1]
    endian = layout[0][0]
    out = []
    offset = 0
    while offset + header.size <= len(data):
        h = dict(zip(names, header.unpack_from(data, offset)))
        if h["unit_length"] >= 0xFFFFFFF0 or h["segment_size"] != 0 or \
                h["address_size"] not in (4, 8):
            return None
        end = offset + 4 + h["unit_length"]
        pair = struct.Struct(endian + ("II" if h["address_size"] == 4 else "QQ"))
        pos = offset + header.size
        pos = -(-pos // pair.size) * pair.size      # tuples align to their size
        while pos + pair.size <= min(end, len(data)):
            addr, length = pair.unpack_from(data, pos)
            pos += pair.size
            if addr == 0 and length == 0:
                break
            if length:
                out.append((addr, addr + length, h["debug_info_offset"]))
        if end <= offset:
            return None
        offset = end
    return out


_NAMES_FORMAT = None


def _names_format() -> str:
    global _NAMES_FORMAT
    if _NAMES_FORMAT is None:
        from ..cachedir import code_tag
        _NAMES_FORMAT = code_tag("inline-names-1", ("symbols/lines.py", "elffile.py",
                                                      "symbols/native.py"))
    return _NAMES_FORMAT


def _low_pc(top: DIE) -> int:
    """The unit's base address for its range lists (DW_AT_low_pc, else 0)."""
    lo = top.attributes.get("DW_AT_low_pc")
    return lo.value if lo is not None and isinstance(lo.value, int) else 0
