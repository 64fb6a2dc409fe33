"""A binary's function symbols, sorted, deduplicated and sized as perf does.

perf 6.1 (tools/perf/util/symbol-elf.c dso__load_sym, symbol.c) keeps
STT_FUNC / STT_GNU_IFUNC symbols and STT_NOTYPE "labels" in sections whose name
contains "text" (elfsymbols.py reads them); it then gives each size-0 symbol the room up to the next
symbol (`symbols__fixup_end`) and resolves symbols sharing an address with
`choose_best_symbol` (`symbols__fixup_duplicate`). The same rules are applied
here (fixups.py), so names match `perf script`. One deliberate difference: PLT
stubs are added before sizes are fixed up, so a size-0 `_init` no longer
swallows `.plt`.
"""
from __future__ import annotations

import bisect
from array import array
from itertools import accumulate, chain
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple

from .elfsymbols import STT_FUNC, RawSymbol, SymbolColumns, read_symbol_columns
from .fixups import STB_GLOBAL, fixup_columns

if TYPE_CHECKING:
    import mmap
    from collections.abc import Iterable, Iterator, Sequence

    from ..cachedir import CacheDir
    from ..elffile import Binary

SOURCES = ("symtab", "dynsym", "minidebuginfo", "plt", "debuginfo")


class Symbol(NamedTuple):
    name: str
    start: int
    size: int
    source: str

    @property
    def end(self) -> int:
        return self.start + self.size


# A cache file's first line is at most this long (see SymbolTable.to_bytes).
_CACHE_LINE_MAX = 256


class SymbolTable:
    """Sorted symbols of one binary; `lookup(svma)` by binary search.

    Kept as columns, not as one Symbol per entry: starts and sizes (arrays),
    the names as one string with where each ends, and each symbol's source as
    an index into the table's few sources.  A cached table of tens of
    thousands of symbols then loads at once (its columns are views of the
    cache file's bytes, mapped where the file is large, and its names that
    file's UTF-8), while a profile looks up a few hundred of them: the
    Symbol is made, its name decoded, for the entry a lookup returns."""
    __slots__ = ("_starts", "_sizes", "_names", "_name_ends", "_source_of", "_source_names",
                 "_bindings", "_made")

    _starts: Sequence[int]
    _sizes: Sequence[int]
    _names: str | _Utf8Names          # (a loaded table's: _name_ends count bytes)
    _name_ends: Sequence[int]
    _source_of: Sequence[int]         # index into _source_names, per symbol
    _source_names: tuple[str, ...]    # sorted
    _bindings: bytes                  # the ELF binding (STB_*), per symbol
    _made: dict[int, Symbol]          # the Symbols lookup() returned, by index

    def __init__(self, symbols: Iterable[Symbol] = ()) -> None:
        syms = sorted(symbols, key=_START_OF_SYMBOL)
        self._set_columns([s.start for s in syms], [s.size for s in syms],
                          [s.name for s in syms], [s.source for s in syms])

    @classmethod
    def from_raw(cls, raw: Iterable[RawSymbol], *, is_kallsyms: bool = False,
                 demangled: str = "") -> "SymbolTable":
        """demangled "p" or "s": aliases chosen by their demangled names
        (an ELF table's, as perf: fixup_columns); "" by the names read."""
        return cls.from_columns(SymbolColumns.of(raw), is_kallsyms=is_kallsyms,
                                demangled=demangled)

    @classmethod
    def from_columns(cls, c: SymbolColumns, *, is_kallsyms: bool = False,
                     demangled: str = "") -> "SymbolTable":
        """from_raw, of symbols read as columns."""
        starts, sizes, names, bindings, sources = fixup_columns(
            c.starts, c.sizes, c.bindings, c.names, c.sources, is_kallsyms=is_kallsyms,
            demangled=demangled)
        table = cls.__new__(cls)
        table._set_columns(starts, sizes, names, sources, bindings)
        return table

    def _set_columns(self, starts: Sequence[int], sizes: Sequence[int], names: list[str],
                     sources: list[str], bindings: Sequence[int] | None = None) -> None:
        # (a table of Symbols made by hand: STB_GLOBAL, as perf's synthesized ones)
        self._bindings = bytes(bindings) if bindings is not None else \
            bytes([STB_GLOBAL]) * len(starts)
        self._starts = _int_column(starts)
        self._sizes = _int_column(sizes)
        self._names = "".join(names)
        self._name_ends = array("Q", accumulate(map(len, names)))
        self._source_names = tuple(sorted(set(sources)))
        index = {name: i for i, name in enumerate(self._source_names)}
        if len(index) == 1:
            self._source_of = bytes(len(sources))       # (every symbol of one source)
            self._made = {}
            return
        of = [index[s] for s in sources]
        self._source_of = bytes(of) if len(index) <= 256 else of
        self._made = {}

    @property
    def sources(self) -> tuple[str, ...]:
        """The sources its symbols came from (of SOURCES), sorted."""
        return self._source_names

    def __len__(self) -> int:
        return len(self._starts)

    def __iter__(self) -> Iterator[Symbol]:
        return map(self._symbol, range(len(self._starts)))

    def _symbol(self, i: int) -> Symbol:
        ends = self._name_ends
        return Symbol(self._names[ends[i - 1] if i else 0:ends[i]], self._starts[i],
                      self._sizes[i], self._source_names[self._source_of[i]])

    def bounds(self) -> tuple[Sequence[int], Sequence[int]]:
        """The symbols' starts and sizes, sorted by start: what lookup()
        searches (for a caller that searches them in compiled code, as
        perfdata.core does, and asks lookup() for the symbol it found)."""
        return self._starts, self._sizes

    def lookup(self, svma: int) -> Symbol | None:
        if not isinstance(svma, int):
            return None
        starts, sizes = self._starts, self._sizes
        i = bisect.bisect_right(starts, svma) - 1
        if i < 0:
            return None
        if svma >= starts[i] + sizes[i]:
            # A symbol nested in a larger one (assembler entry points): the
            # enclosing one still covers addresses past the nested one's end.
            for i in range(i - 1, max(i - 4, -1), -1):
                if starts[i] <= svma < starts[i] + sizes[i]:
                    break
            else:
                return None
        # (a profile hits the same symbols again and again, at other addresses)
        sym = self._made.get(i)
        if sym is None:
            sym = self._made[i] = self._symbol(i)
        return sym

    def binding(self, start: int) -> int:
        """The ELF binding (STB_LOCAL, STB_GLOBAL, STB_WEAK, ...) of the
        symbol starting at start, as perf 6.1 keeps it (of the alias it
        chose); STB_GLOBAL where no symbol starts there."""
        i = bisect.bisect_left(self._starts, start)
        if i < len(self._starts) and self._starts[i] == start:
            return self._bindings[i]
        return STB_GLOBAL

    def get_symbol_by_name(self, name: str) -> Symbol | None:
        """The first symbol (by address) called `name`."""
        names, ends = self._names, self._name_ends
        if not name:
            return next((s for s in self if not s.name), None)
        # Where the name occurs in the joined names and a symbol's name both
        # starts and ends there.
        width = len(name) if isinstance(names, str) else names.width(name)
        at = names.find(name)
        while at >= 0:
            i = bisect.bisect_left(ends, at + width)
            if i < len(ends) and ends[i] == at + width and (ends[i - 1] if i else 0) == at:
                return self._symbol(i)
            at = names.find(name, at + 1)
        return None

    # A cache file holds one ASCII line, then the table's columns as it keeps
    # them, so that loading one is mapping it:
    #
    #   TAG COUNT NAMES_SIZE CRC32 SOURCE,SOURCE... (spaces)\n
    #                              (spaces to a multiple of 8 bytes: the
    #                              columns below are aligned where mapped)
    #   starts, sizes, name ends   COUNT unsigned 64-bit values each, in this
    #                              machine's byte order (the tag names it)
    #   source of each symbol      COUNT bytes: an index into the line's sources
    #   binding of each symbol     COUNT bytes: its ELF STB_* value
    #   names                      NAMES_SIZE bytes: UTF-8, one after another
    #                              (the name ends count bytes)
    #
    # CRC32 covers everything after the line.  The line's numbers must add up
    # to the file's size before anything is made from them: a damaged or
    # hostile file never makes more than its own size.
    def to_bytes(self) -> bytes | None:
        """The table as a cache file holds it; None for one no file can hold
        (made by hand: a value beyond 64 bits, a source not of SOURCES)."""
        parts = self.file_parts()
        return b"".join(parts) if parts is not None else None

    def file_parts(self) -> list[bytes | bytearray | memoryview] | None:
        """to_bytes(), in the parts it joins (save_table writes them one
        after the other: cc1's table is 2 MB, and a copy joined is memory
        first touched for nothing), the columns as views of the arrays."""
        import zlib
        starts, sizes, name_ends, source_of, bindings = \
            self._starts, self._sizes, self._name_ends, self._source_of, self._bindings
        names, source_names = self._names, self._source_names
        if not all(_u64_view(c) is not None for c in (starts, sizes, name_ends)) \
                or not isinstance(source_of, bytes) or not set(source_names) <= set(SOURCES):
            return None
        if isinstance(names, str):
            try:
                utf8, name_ends = utf8_names(names, name_ends)
            except UnicodeEncodeError:
                return None
        else:
            utf8 = names.encoded()
        body: list[bytes | bytearray | memoryview] = [
            _u64_view(c) for c in (starts, sizes, name_ends)]  # type: ignore[misc]
        body += [source_of, bindings, utf8]
        crc = 0
        for part in body:
            crc = zlib.crc32(part, crc)
        line = "%s %d %d %d %s" % (cache_format(), len(starts), len(utf8), crc,
                                   ",".join(source_names))
        line += " " * (-(len(line) + 1) % 8) + "\n"
        return [line.encode("ascii")] + body

    @classmethod
    def from_bytes(cls, data: bytes | mmap.mmap) -> "SymbolTable | None":
        """The table to_bytes() made (its bytes, or the cache file mapped:
        the table's columns are then views of it, nothing copied but two
        bytes a symbol), or None if the bytes are damaged, cut short, of
        another format or of other code."""
        import zlib
        eol = data.find(b"\n", 0, _CACHE_LINE_MAX)
        if eol < 0 or (eol + 1) % 8:
            return None
        fields = data[:eol].split(b" ")
        if len(fields) < 5 or any(fields[5:]) or fields[0] != cache_format().encode("ascii"):
            return None
        try:
            count, names_size, crc = int(fields[1]), int(fields[2]), int(fields[3])
            source_names = tuple(fields[4].decode("ascii").split(",")) if fields[4] else ()
        except ValueError:
            return None
        body = memoryview(data)[eol + 1:]
        if count < 0 or names_size < 0 or len(body) != 26 * count + names_size \
                or list(source_names) != sorted(set(source_names)) \
                or not set(source_names) <= set(SOURCES) or zlib.crc32(body) != crc:
            return None
        numbers = body[:24 * count].cast("Q")
        starts, sizes, name_ends = (numbers[k * count:(k + 1) * count] for k in range(3))
        source_of = bytes(body[24 * count:25 * count])
        bindings = bytes(body[25 * count:26 * count])
        # (every source index names one of the sources)
        if source_of.translate(None, bytes(range(len(source_names)))):
            return None
        if (name_ends[-1] if count else 0) != names_size:
            return None
        table = cls.__new__(cls)
        table._starts, table._sizes, table._name_ends = starts, sizes, name_ends
        table._source_of, table._source_names = source_of, source_names
        table._names = _Utf8Names(data, eol + 1 + 26 * count, names_size)
        table._bindings = bindings
        table._made = {}
        return table


class _Utf8Names:
    """The names of a table loaded from its cache file: the file's UTF-8
    (mapped), each name decoded when a lookup returns its symbol (a profile
    asks for a few hundred of cc1's 27,000), at byte offsets."""
    __slots__ = ("data", "at", "size")

    def __init__(self, data: bytes | mmap.mmap, at: int, size: int) -> None:
        self.data, self.at, self.size = data, at, size

    def __getitem__(self, cut: slice) -> str:
        # ("replace": what a file of the right CRC but not ours may hold)
        return str(self.data[self.at + cut.start:self.at + cut.stop], "utf-8", "replace")

    def find(self, name: str, start: int = 0) -> int:
        """Where name's UTF-8 starts, from byte offset start; -1 if nowhere."""
        at = self.data.find(name.encode("utf-8", "surrogatepass"), self.at + start,
                            self.at + self.size)
        return at - self.at if at >= 0 else -1

    @staticmethod
    def width(name: str) -> int:
        """name's bytes in these names."""
        return len(name.encode("utf-8", "surrogatepass"))

    def encoded(self) -> bytes:
        return bytes(self.data[self.at:self.at + self.size])


def utf8_names(text: str, ends: Sequence[int], errors: str = "strict"
               ) -> tuple[bytes, Sequence[int]]:
    """Names joined in one text, cut at character offsets `ends`, as UTF-8,
    and the byte offsets where each ends (the same offsets where the text
    is ASCII, as symbol names are)."""
    raw = text.encode("utf-8", errors)
    if len(raw) == len(text):
        return raw, ends
    pieces = [text[a:b].encode("utf-8", errors) for a, b in zip(chain((0,), ends), ends)]
    return b"".join(pieces), array("Q", accumulate(map(len, pieces)))


def _u64_view(column: Sequence[int]) -> memoryview | None:
    """A column's bytes, where it is unsigned 64-bit values (an array made
    for the table, or a view of a mapped file); None where it is not."""
    if isinstance(column, array) and column.typecode == "Q" or \
            isinstance(column, memoryview) and column.format == "Q":
        return memoryview(column).cast("B")  # type: ignore[arg-type]
    return None


_START_OF_SYMBOL = attrgetter("start")


def _int_column(values: Sequence[int]) -> Sequence[int]:
    """An array of unsigned 64-bit values (what a cache file holds); a list
    when a value does not fit (a table made by hand)."""
    if isinstance(values, array) and values.typecode == "Q":
        return values                   # (made for this table: fixup_columns')
    try:
        return array("Q", values)
    except OverflowError:
        return values


def build_symbol_table(binary: Binary | None, debug: Binary | None = None,
                       minidebuginfo: Binary | None = None, *, plt: bool = True,
                       objects: bool = False, demangled: str = "p") -> SymbolTable:
    """(demangled: the naming mode, "p", "s" or "" for none, whose names
    choose between symbols sharing an address, as perf's: fixup_columns.)
    Best source first, as perf and Fedora's gdb/elfutils choose (with
    objects, the data objects of each source are in too: the table perf
    names page-fault addresses from):

    1. the separate debug file's .symtab ('debuginfo'), else
    2. the binary's own .symtab ('symtab'), else
    3. .dynsym ('dynsym') merged with the MiniDebugInfo .symtab
       ('minidebuginfo'), which holds just the symbols .dynsym lacks;
    plus `name@plt` stubs ('plt') synthesized from the binary's code.
    """
    raw = SymbolColumns.of(())
    if debug is not None and debug.ok:
        raw = read_symbol_columns(debug, ".symtab", "debuginfo", objects)
    if not raw.starts and binary is not None and binary.ok:
        raw = read_symbol_columns(binary, ".symtab", "symtab", objects)
    if not raw.starts:
        if binary is not None and binary.ok:
            raw = read_symbol_columns(binary, ".dynsym", "dynsym", objects)
        elif debug is not None and debug.ok:
            raw = read_symbol_columns(debug, ".dynsym", "dynsym", objects)
        if minidebuginfo is not None and minidebuginfo.ok:
            raw = raw.extend(read_symbol_columns(minidebuginfo, ".symtab", "minidebuginfo",
                                                 objects))
    if plt and binary is not None and binary.ok and binary.has_code:
        from .plt import plt_columns
        # perf's get_ifunc_name: the symbol the table without the stubs
        # keeps at an IRELATIVE slot's addend names the slot (libc's)
        stubs = plt_columns(binary, _AliasChosen(raw, demangled).name_at)
        n = len(stubs.names)
        if n:
            raw = raw.extend(SymbolColumns(stubs.starts, stubs.sizes, [STB_GLOBAL] * n,
                                           [STT_FUNC] * n, stubs.names, ["plt"] * n))
    return SymbolTable.from_columns(raw, demangled=demangled)


class _AliasChosen:
    """The name of the symbol perf's fixups keep at an address of a table
    (symbols as read): the fixups of the symbols there and of the next one
    (what a size of 0 runs to), which choose it as the whole table's would,
    rather than the whole table's (libc's ~70 IRELATIVE slots in 3,700
    symbols).  The index sorted once, at the first address asked for."""

    def __init__(self, raw: SymbolColumns, demangled: str) -> None:
        self.raw, self.demangled = raw, demangled
        self.order: list[int] | None = None
        self.starts: list[int] = []

    def name_at(self, addr: int) -> str | None:
        raw = self.raw
        if self.order is None:
            # (stable: symbols at one address in table order, as fixup_columns)
            self.order = sorted(range(len(raw.starts)), key=raw.starts.__getitem__)
            self.starts = list(map(raw.starts.__getitem__, self.order))
        lo = bisect.bisect_left(self.starts, addr)
        hi = bisect.bisect_right(self.starts, addr)
        if lo == hi:
            return None
        if hi == lo + 1:
            return raw.names[self.order[lo]]     # (no alias: the fixups keep it)
        pick = self.order[lo:hi + 1]
        starts, sizes, names, _, _ = fixup_columns(
            [raw.starts[i] for i in pick], [raw.sizes[i] for i in pick],
            [raw.bindings[i] for i in pick], [raw.names[i] for i in pick],
            demangled=self.demangled)
        return names[0] if starts[0] == addr else None


# ------------------------------------------------------------ on-disk cache
_CACHE_FORMAT = None
# The modules whose code decides what a table holds: a change to any of them
# makes every cached table stale, so their text is part of the format tag.
# (The demangler among them: which of two aliases a table keeps is decided
# by their demangled names.)
_TABLE_MAKERS = ("symbols/symtab.py", "symbols/fixups.py", "symbols/elfsymbols.py",
                 "symbols/plt.py", "debuginfo/minidebuginfo.py", "elffile.py", "elfheader.py",
                 "elfcompress.py", "symbols/demangle.py", "symbols/rust_demangle.py")


def cache_format() -> str:
    """The tag a cached table must carry to be used."""
    global _CACHE_FORMAT
    if _CACHE_FORMAT is None:
        import sys
        from ..cachedir import code_tag
        _CACHE_FORMAT = code_tag("symtab-4-" + sys.byteorder, _TABLE_MAKERS)
    return _CACHE_FORMAT


def save_table(table: SymbolTable, path: str, cache: CacheDir | None = None) -> bool:
    """Write a table in the cache's format (atomically: a reader never sees
    half a file); cache: the CacheDir the file belongs to (its bound then
    applies)."""
    parts = table.file_parts()
    if parts is None:
        return False
    if cache is not None:
        return cache.write(path, parts)
    from ..cachedir import write_atomic
    return write_atomic(path, parts)


def load_table(path: str, max_size: int = 512 << 20, cache: CacheDir | None = None
               ) -> SymbolTable | None:
    """A table saved by save_table, or None if absent, damaged or foreign;
    cache: the CacheDir the file belongs to (it counts as used).  A file of
    MAPPED_FROM bytes or more is mapped, a smaller one read: a mapping
    holds a file descriptor while its table lives, and a profile of
    thousands of binaries would run out of them (each table a view of its
    bytes either way: nothing copied)."""
    if cache is not None:
        data = cache.read(path, max_size, MAPPED_FROM)
    else:
        from ..cachedir import read_file
        data = read_file(path, max_size, MAPPED_FROM)
    return SymbolTable.from_bytes(data) if data is not None else None


# (cc1's table is 1.9 MB, libc's 160 KB: the large ones, a few in a profile)
MAPPED_FROM = 256 << 10
