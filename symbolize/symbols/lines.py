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
of benchmarks/bench_lines.py, against 16 MiB for the index and the sections).

What is done here rather than by pyelftools, because it cannot:
- Section bytes come from `Binary.section_data` (dwarf_sections.py), which
  inflates SHF_COMPRESSED sections compressed with zstd as well as zlib,
  within a size limit; pyelftools 0.33 inflates only zlib, to whatever size
  the header claims. They are handed to pyelftools' `DWARFInfo` as
  `DebugSectionDescriptor`s, and read in parts by the native index's units.
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
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..cachedir import CacheDir
from ..elffile import Binary
from .dwarf_sections import DwarfSections, pyelftools_sections
from .dwarf_units import (Scope, UnitData, UnitWalk, collect_functions, die_ranges,
                          function_at, load_lines, low_pc, unit_file)

if TYPE_CHECKING:
    from collections.abc import Callable

    from elftools.dwarf.dwarfinfo import DWARFInfo

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


# ---------------------------------------------------------------- the index
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
        self._cus: dict[int, UnitData | None] = {}
        self._find_supplementary = supplementary
        self._supplementary: Binary | None | Literal[False] = False     # (False: not looked for)
        self._sup_dwarf: DWARFInfo | None = None
        self.sections = DwarfSections(binary)  # read part by part, or whole
        self._aranges_from_section = False     # _aranges read from .debug_aranges
        self._aranges_alone_tried = False

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
        hold them costs time on every run (libc's are large)."""
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
                    self._native = native.NativeIndex(self.binary, self.cache, self.cache_key,
                                                      units=self)
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

    # ------------------------------------------------------------ for native
    def unit_offset(self, svma: int) -> int | None:
        """Offset in .debug_info of the unit .debug_aranges places svma in;
        None where it places it in none, or where units_by_aranges() is
        False.  Reads .debug_aranges alone: the units' own symcaches need no
        pyelftools section (native.py, unit_symcache.py)."""
        if not self.units_by_aranges():
            return None
        try:
            return self._cu_offset_for(svma)
        except Exception:
            return None

    def units_by_aranges(self) -> bool:
        """Whether units are found through .debug_aranges, read and holding
        ranges (not by walking every unit: a file without aranges)."""
        if self._aranges is None and not self._aranges_alone_tried and self._dwarf is None:
            self._aranges_alone_tried = True
            try:
                alone = self.sections.aranges()
            except Exception:
                alone = None
            if alone:
                self._set_aranges(alone)
                self._aranges_from_section = True
        return self._aranges_from_section

    def listed_units(self) -> set[int] | None:
        """The units .debug_aranges has a set for, where units are found by
        it (units_by_aranges), else None."""
        return self.sections.listed_units() if self.units_by_aranges() else None

    def section_size(self, name: str) -> int | None:
        """The size of a DWARF section, decompressed (DwarfSections.size)."""
        return self.sections.size(name)

    def section_part(self, name: str, offset: int, size: int) -> bytes | None:
        """Bytes of a DWARF section, decompressed (DwarfSections.part)."""
        return self.sections.part(name, offset, size)

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
        # (by part where the native index answers most units: pyelftools then
        # reads a few, the assembler ones, not whole sections; the index as
        # made already, not made here: symbolic's import is not this one's)
        loaded = pyelftools_sections(self.binary, sections=self.sections,
                                     by_part=bool(self._native))
        if loaded is None:
            return False
        self._sections, self._config = loaded
        sup = self.supplementary()
        if sup is not None:
            from elftools.dwarf.dwarfinfo import DWARFInfo
            got = pyelftools_sections(sup, supplementary=True)
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
        if self._aranges is None:
            dwarf = self._dwarfinfo()
            if dwarf is None:
                return None
            ranges = None
            try:
                ranges = self.sections.aranges()
                if ranges is None:
                    ar = dwarf.get_aranges()
                    if ar is not None:
                        ranges = [(e.begin_addr, e.begin_addr + e.length, e.info_offset)
                                  for e in ar.entries if e.length]
            except Exception as e:
                self.binary.warn(f".debug_aranges: {type(e).__name__}: {e}")
            self._set_aranges(ranges)
            self._aranges_from_section = bool(self._aranges)
            if not self._aranges:
                # No aranges: index every CU by its top DIE's ranges, once.
                self._set_aranges(self._index_units())
        # .debug_aranges is authoritative when present: an address it does not
        # cover (padding, hand-written assembly) has no line info.
        i = bisect.bisect_right(self._aranges_starts, addr) - 1
        assert self._aranges is not None    # (set above)
        for j in range(i, max(i - 8, -1), -1):
            lo, hi, off = self._aranges[j]
            if lo <= addr < hi:
                return off
        return None

    def _set_aranges(self, ranges: list[tuple[int, int, int]] | None) -> None:
        self._aranges = sorted(ranges) if ranges else []
        self._aranges_starts = [lo for lo, _, _ in self._aranges]

    def _index_units(self) -> list[tuple[int, int, int]]:
        dwarf = self._new_dwarfinfo()     # its abbreviation tables and DIEs are dropped after
        out = []
        try:
            for cu in dwarf.iter_CUs():
                try:
                    top = cu.get_top_DIE()
                    w = UnitWalk(dwarf, cu, low_pc(top), self._dwarf, self._sup_dwarf)
                    for lo, hi in die_ranges(top, w):
                        out.append((lo, hi, cu.cu_offset))
                except Exception:
                    continue
        except Exception as e:            # a unit header that cannot be read ends the walk
            self.binary.warn(f"DWARF units: {type(e).__name__}: {e}")
        out.sort()
        return out

    def _cu_for(self, addr: int) -> UnitData | None:
        off = self._cu_offset_for(addr)
        if off is None or self._dwarfinfo() is None:   # (aranges may have come alone)
            return None
        if off not in self._cus:
            self._cus[off] = None         # a failure is not retried
            self._cus[off] = self._load_cu(off)
        return self._cus[off]

    def _load_cu(self, offset: int) -> UnitData | None:
        dwarf = self._new_dwarfinfo()
        try:
            cu = dwarf.get_CU_at(offset)
            top = cu.get_top_DIE()
        except Exception as e:
            self.binary.warn(f"DWARF unit at {offset:#x}: {type(e).__name__}: {e}")
            return None
        w = UnitWalk(dwarf, cu, low_pc(top), self._dwarf, self._sup_dwarf)
        data = UnitData(offset)
        funcs: list[Scope] = []
        # The functions and the line table fail apart: a damaged DIE tree
        # keeps the functions read before the damage and all the lines.
        try:
            collect_functions(top, w, funcs, 0)
        except Exception as e:
            self.binary.warn(f"DWARF unit at {offset:#x}: functions: {type(e).__name__}: {e}")
        # One entry per range, sorted, for bisection: a CU may hold thousands
        # of functions.
        flat = sorted(((lo, hi, s) for s in funcs for lo, hi in s.ranges), key=lambda t: t[0])
        data.func_starts = [t[0] for t in flat]
        data.funcs = flat
        return data

    def _ensure_lines(self, data: UnitData) -> None:
        """Decode the line table of a unit loaded without it (once)."""
        if data.lines_loaded:
            return
        data.lines_loaded = True
        offset = data.offset
        try:
            dwarf = self._new_dwarfinfo()
            cu = dwarf.get_CU_at(offset)
            top = cu.get_top_DIE()
            load_lines(data, UnitWalk(dwarf, cu, low_pc(top), self._dwarf, self._sup_dwarf), top)
        except Exception as e:
            self.binary.warn(f"DWARF unit at {offset:#x}: lines: {type(e).__name__}: {e}")

    # ------------------------------------------------------------ answers
    def _line_for(self, cu: UnitData, addr: int) -> tuple[str | None, int] | None:
        self._ensure_lines(cu)
        i = bisect.bisect_right(cu.row_addrs, addr) - 1
        if i < 0:
            return None
        f = cu.row_files[i]
        if f == -1:                           # past the end of a sequence
            return None
        return unit_file(cu, f), cu.row_lines[i]

    def _frames(self, addr: int, lines: bool = True) -> list[InlineFrame]:
        cu = self._cu_for(addr)
        if cu is None:
            return []
        loc = self._line_for(cu, addr) if lines else None
        file, line = loc if loc is not None else (None, None)
        func = function_at(cu, addr)
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
                file, line = unit_file(cu, scope.call_file), scope.call_line
        return out


_NAMES_FORMAT = None
# The modules whose code decides the inline names kept: a change to any of
# them makes the kept names stale, so their text is part of the format tag.
NAMES_MAKERS = ("symbols/lines.py", "symbols/dwarf_units.py", "elffile.py", "elfheader.py",
                "elfcompress.py", "symbols/native.py", "symbols/unit_symcache.py",
                "symbols/dwarf_sections.py")


def _names_format() -> str:
    global _NAMES_FORMAT
    if _NAMES_FORMAT is None:
        from ..cachedir import code_tag
        _NAMES_FORMAT = code_tag("inline-names-1", NAMES_MAKERS)
    return _NAMES_FORMAT
