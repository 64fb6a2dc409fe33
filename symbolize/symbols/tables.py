"""What is built once per build-id and kept: `SymbolTables` (a binary's
symbol table, in memory and in the cache directory, and the answers of
earlier runs) and `LineInfos` (a binary's DWARF reader, shared by every path
the same file is known under)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .answers import AddressAnswers
from .lines import LineInfo
from .symtab import SymbolTable, build_symbol_table, load_table, save_table

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..cachedir import CacheDir
    from ..elffile import Binary


def table_kinds(binary: Binary | None, debug: Binary | None, minidebug: Binary | None) -> str:
    """Which sources a binary's symbol table is made from (its cache files'
    names: a table built before a debug file was installed is not reused
    after)."""
    return "".join(k for k, on in (
        ("d", debug is not None),
        ("s", binary is not None and binary.has_section(".symtab")),
        ("m", minidebug is not None),
        ("c", binary is not None and binary.has_code)) if on) or "x"


def damaged(*files: Binary | None) -> bool:
    """Whether a file showed a fault while it was read: what was made of it
    (its table, its answers) is a damaged copy's, never kept for the good
    copy of the same build-id."""
    return any(getattr(b, "warnings", None) for b in files)


class SymbolTables:
    """Symbol tables by build-id, in one naming mode ("s" signatures, "p"
    perf's demangled names, "r" the names as read): from memory, else from
    the cache directory where an earlier run left them, else built and left
    there."""

    def __init__(self, cache: CacheDir, mode: str) -> None:
        self.cache = cache
        self.mode = mode
        self._tables: dict[str, SymbolTable] = {}
        # The tables with data objects (lookup_data), by (path, build-id)
        self._object_tables: dict[tuple[str, str | None], SymbolTable] = {}
        self._answers: dict[str, AddressAnswers] = {}   # by file: see answers_for

    def table_for(self, binary: Binary | None, debug: Binary | None, minidebug: Binary | None,
                  bid: str | None, kinds: str, objects: bool = False) -> SymbolTable:
        """A binary's symbol table (with objects, the one with its data
        objects too: lookup_data keeps those)."""
        memo = None if objects else self._tables
        if bid is not None and memo is not None and bid in memo:
            return memo[bid]
        disk = None
        if self.cache.enabled and bid is not None:
            # The name says which sources went in, so a table built before a
            # debug file was installed is not reused after.
            # (and a naming mode other than the default, "p": it chooses
            # between aliases, as perf's)
            mode = "" if self.mode == "p" else "-" + self.mode
            disk = self.cache.path_for("symtab", bid,
                                       f"-{kinds}{mode}{'-objects' if objects else ''}.table")
            # (enabled: path_for gave a path)
            table = load_table(disk, cache=self.cache)  # type: ignore[arg-type]
            if table is not None:
                if memo is not None:
                    memo[bid] = table
                return table
        table = build_symbol_table(binary, debug, minidebug, objects=objects,
                                   demangled="" if self.mode == "r" else self.mode)
        if bid is not None and memo is not None:
            memo[bid] = table
        # A damaged file gives a partial table: never let it stand in for the
        # good copy of the same build-id in later runs.
        if disk is not None and len(table) and not damaged(binary, debug, minidebug):
            save_table(table, disk, self.cache)
        return table

    def object_table(self, key: tuple[str, str | None], binary: Binary | None,
                     debug: Binary | None, minidebug: Binary | None,
                     bid: str | None) -> SymbolTable:
        """The table with data objects of the binary known by `key` (its
        path and build-id), made the first time it is asked for."""
        table = self._object_tables.get(key)
        if table is None:
            table = self._object_tables[key] = self.table_for(
                binary, debug, minidebug, bid, table_kinds(binary, debug, minidebug),
                objects=True)
        return table

    def answers_for(self, bid: str | None, kinds: str, table: SymbolTable,
                    files: Iterable[Binary | None]) -> AddressAnswers | None:
        """The answers of earlier runs for this table (one per cache file:
        every path of the same build-id shares it), in this naming mode;
        None where they are not kept: no cache or build-id, no symbols, a
        damaged file (as its table).  (The caller asks only for plain
        lookups: those that also read DWARF, inline frames and source
        lines, are the LineInfo's to keep.)"""
        if not self.cache.enabled or bid is None or not len(table) or damaged(*files):
            return None
        path = self.cache.path_for("symtab", bid, f"-{kinds}-{self.mode}.answers")
        if path is None:
            return None
        answers = self._answers.get(path)
        if answers is None:
            answers = self._answers[path] = AddressAnswers(self.cache, path)
        return answers


class LineInfos:
    """One LineInfo per build-id (its per-CU caches are shared by every path
    the same file is known under)."""

    def __init__(self, cache: CacheDir, native_lines: bool) -> None:
        self.cache = cache
        self.native_lines = native_lines
        self._by_build_id: dict[str, LineInfo] = {}

    def for_files(self, binary: Binary | None, debug: Binary | None, bid: str | None,
                  supplementary_of: Callable[[Binary], Binary | None]) -> LineInfo | None:
        """The LineInfo of the first of (debug, binary) with DWARF, or None."""
        import functools
        for f in (debug, binary):
            if f is not None and f.ok and f.get_section(".debug_info") is not None:
                lines = self._by_build_id.get(bid) if bid else None
                if lines is None:
                    # (which file the DWARF came from is in the cache's names)
                    lines = LineInfo(f, self.cache, cache_key=(
                        bid, "d" if f is debug else "b") if bid else None,
                                     native_lines=self.native_lines,
                                     supplementary=functools.partial(supplementary_of, f))
                    if bid:
                        self._by_build_id[bid] = lines
                return lines
        return None

    def save_names(self) -> None:
        """Keep the inline names learnt (a no-op without a cache directory)."""
        for lines in self._by_build_id.values():
            if lines is not None:
                lines.save_names()
