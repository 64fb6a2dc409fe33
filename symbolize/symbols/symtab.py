"""A binary's function symbols, sorted, deduplicated and sized as perf does.

perf 6.1 (tools/perf/util/symbol-elf.c dso__load_sym, symbol.c) keeps
STT_FUNC / STT_GNU_IFUNC symbols and STT_NOTYPE "labels" in sections whose name
contains "text" (elfsymbols.py reads them); it then gives each size-0 symbol the room up to the next
symbol (`symbols__fixup_end`) and resolves symbols sharing an address with
`choose_best_symbol` (`symbols__fixup_duplicate`). The same rules are applied
here, so names match `perf script`. One deliberate difference: PLT stubs are
added before sizes are fixed up, so a size-0 `_init` no longer swallows `.plt`.
"""
from __future__ import annotations

import bisect
from array import array
from itertools import accumulate, compress, repeat
from operator import add, attrgetter, contains, eq, itemgetter, le, ne, sub
from typing import TYPE_CHECKING, NamedTuple

from .compiled import symtab_core
from .elfsymbols import STT_FUNC, RawSymbol, SymbolColumns, read_symbol_columns, u64_array

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from types import ModuleType

    from ..cachedir import CacheDir
    from ..elffile import Binary

STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2

SOURCES = ("symtab", "dynsym", "minidebuginfo", "plt", "debuginfo")


class Symbol(NamedTuple):
    name: str
    start: int
    size: int
    source: str

    @property
    def end(self) -> int:
        return self.start + self.size


def _underscores(name: str) -> int:
    return len(name) - len(name.lstrip("_"))


def choose_best(a: list, b: list) -> bool:
    """True if a wins over b; perf 6.1's choose_best_symbol on [start, end,
    binding, name, ...] entries."""
    la, lb = a[1] - a[0], b[1] - b[0]
    if lb == 0 and la > 0:
        return True
    if la == 0 and lb > 0:
        return False
    wa, wb = a[2] == STB_WEAK, b[2] == STB_WEAK
    if wb and not wa:
        return True
    if wa and not wb:
        return False
    ga, gb = a[2] == STB_GLOBAL, b[2] == STB_GLOBAL
    if ga and not gb:
        return True
    if gb and not ga:
        return False
    return choose_by_names(a[3], b[3])


def choose_by_names(a: str, b: str) -> bool:
    """choose_best_symbol's last rules, where the sizes and bindings of two
    symbols at one address do not decide: True if a (its name) wins over b."""
    ua, ub = _underscores(a), _underscores(b)
    if ub > ua:
        return True
    if ua > ub:
        return False
    if len(a) != len(b):
        return len(a) > len(b)
    # arch__choose_best_symbol: avoid the kernel's "SyS" syscall aliases.
    return not (a.startswith("SyS") or a.startswith("compat_SyS"))


def fixup_symbols(raw: Iterable[RawSymbol], *, is_kallsyms: bool = False) -> list[list]:
    """perf's symbols__fixup_end then symbols__fixup_duplicate.

    Returns sorted [start, end, binding, name, source] lists, one per address.
    """
    starts, sizes, names, bindings, sources = _fixup_raw(raw, is_kallsyms)
    return [list(e) for e in zip(starts, map(add, starts, sizes), bindings, names, sources)]


def _fixup_raw(raw: Iterable[RawSymbol], is_kallsyms: bool, demangled: str = ""
               ) -> tuple[Sequence[int], Sequence[int], list[str], Sequence[int], list]:
    c = SymbolColumns.of(raw)
    return fixup_columns(c.starts, c.sizes, c.bindings, c.names, c.sources,
                         is_kallsyms=is_kallsyms, demangled=demangled)


def fixup_columns(starts: Sequence[int], sizes: Sequence[int], bindings: Sequence[int],
                  names: list[str],
                  sources: list | None = None, *, is_kallsyms: bool = False,
                  demangled: str = ""
                  ) -> tuple[Sequence[int], Sequence[int], list[str], Sequence[int], list]:
    """perf 6.1's symbols__fixup_end then symbols__fixup_duplicate on a
    table as columns (a column costs a C loop where a list per symbol costs
    a Python step): (starts, sizes, names, bindings, sources) sorted by
    start, one symbol per address.  A size of 0 is perf's zero-size symbol,
    which runs to the next one; with is_kallsyms the last symbol of the
    kernel or of a module (a name holding perf's in-band "[module]" marker)
    ends at the end of the page after its start, not across the gap; the
    very last symbol a page past its own.  sources (any values) follow
    their symbols; None gives an empty list.  With demangled ("p": perf's
    form, no parameters; "s": with them, perf -v's), symbols sharing an
    address are compared by their demangled names, as perf 6.1 compares an
    ELF table's: dso__load_sym
    demangles each name before symbol__new, so choose_best_symbol's
    underscore count and "longest name" rule see `<usize as
    core::fmt::Display>::fmt`, not its mangled name (the same length as the
    `u64` alias's, folded to the same code)."""
    n = len(starts)
    if sources is None:
        sources = []
    if not n:
        return [], [], [], [], sources
    compiled = None if is_kallsyms else symtab_core()
    if compiled is not None:
        fixed = _fixup_compiled(compiled, (starts, sizes, bindings, names, sources), demangled)
        if fixed is not None:
            return fixed
    # (slices, not islice: a copy costs less than an iterator's steps)
    # Stable, as perf's rbtree insertion leaves equal starts in table order;
    # a table in address order already (kallsyms, mostly) is left as it is.
    if n > 1 and not all(map(le, starts, starts[1:])):
        pick = itemgetter(*sorted(range(n), key=starts.__getitem__))
        starts, sizes, bindings = list(pick(starts)), list(pick(sizes)), list(pick(bindings))
        names = list(pick(names))
        if sources:
            sources = list(pick(sources))
    if any(sizes):
        ends = [start + size if size else nxt
                for start, size, nxt in zip(starts, sizes, starts[1:])]
    else:
        ends = list(starts[1:])        # (kallsyms: no symbol has a size)
    last = starts[-1]
    ends.append(last + sizes[-1] if sizes[-1] else (last + 4095) // 4096 * 4096 + 4096)
    if is_kallsyms:
        in_module = list(map(contains, names, repeat("[")))
        for i in compress(range(n - 1), map(ne, in_module, in_module[1:])):
            if not sizes[i]:
                ends[i] = (starts[i] + 4096 + 4095) // 4096 * 4096
    # Symbols sharing an address: choose_best_symbol keeps one.
    keep = [True] * n
    winner = None
    name_of = _compared_names(names, demangled)
    for i in compress(range(n - 1), map(eq, starts, starts[1:])):
        if winner is None or starts[winner] != starts[i]:
            winner = i
        nxt = i + 1
        if choose_best([starts[winner], ends[winner], bindings[winner], name_of(winner)],
                       [starts[nxt], ends[nxt], bindings[nxt], name_of(nxt)]):
            keep[nxt] = False
        else:
            keep[winner] = False
            winner = nxt
    sizes = list(map(sub, ends, starts))
    if not all(keep):
        starts, sizes = list(compress(starts, keep)), list(compress(sizes, keep))
        names, bindings = list(compress(names, keep)), list(compress(bindings, keep))
        if sources:
            sources = list(compress(sources, keep))
    return starts, sizes, names, bindings, sources


def _compared_names(names: list[str], demangled: str) -> Callable[[int], str]:
    """The name choose_best compares of the symbol at an index: as read, or
    demangled (each once, and only those compared)."""
    if not demangled:
        return names.__getitem__
    shown: dict[int, str] = {}
    from .demangle import demangle

    def name_of(k: int) -> str:
        out = shown.get(k)
        if out is None:
            out = shown[k] = demangle(names[k], params=demangled == "s")
        return out
    return name_of


def _fixup_compiled(compiled: ModuleType,
                    columns: tuple[Sequence[int], Sequence[int], Sequence[int], list[str], list],
                    demangled: str
                    ) -> tuple[Sequence[int], Sequence[int], list[str], Sequence[int], list] | None:
    """fixup_columns in C: the order, the sizes and the aliases chosen there,
    the names compared here where they decide; None for a table C does not
    take (a value beyond 64 bits or a binding beyond a byte: made by hand).
    The starts and sizes come back as arrays, the bindings as bytes."""
    starts, sizes, bindings, names, sources = columns
    name_of = _compared_names(names, demangled)
    flags = -1
    if demangled:
        # (C demangles the names it compares with demangle.py's library;
        # Rust names and those with a version suffix are compared here)
        from .demangle import demangle_flags, load_into
        load_into(compiled)
        flags = demangle_flags(demangled == "s")
    try:
        order, fixed, kept_starts, kept_bindings = compiled.fixup(
            _u64_buffer(starts), _u64_buffer(sizes), bytes(bindings),
            lambda a, b: choose_by_names(name_of(a), name_of(b)),
            names if isinstance(names, list) else list(names), flags)
    except (OverflowError, ValueError, TypeError):
        return None
    kept = u64_array(order)
    if sources and sources.count(sources[0]) == len(sources):
        sources = [sources[0]] * len(kept)          # (one section's symbols)
    elif sources:
        sources = list(map(sources.__getitem__, kept))
    return (u64_array(kept_starts), u64_array(fixed), list(map(names.__getitem__, kept)),
            kept_bindings, sources)


def _u64_buffer(column: Sequence[int]) -> array[int]:
    """A column as the compiled fixup reads it: native unsigned 64-bit
    values (an array the reader made is that already, and is not copied)."""
    if isinstance(column, array) and column.typecode == "Q":
        return column
    return array("Q", column)


# A cache file's first line is at most this long (see SymbolTable.to_bytes).
_CACHE_LINE_MAX = 256


class SymbolTable:
    """Sorted symbols of one binary; `lookup(svma)` by binary search.

    Kept as columns, not as one Symbol per entry: starts and sizes (arrays),
    the names as one string with where each ends, and each symbol's source as
    an index into the table's few sources.  A cached table of tens of
    thousands of symbols then loads at once (its columns are the file's
    bytes), while a profile looks up a few hundred of them: the Symbol is
    made for the entry a lookup returns."""
    __slots__ = ("_starts", "_sizes", "_names", "_name_ends", "_source_of", "_source_names",
                 "_bindings", "_made")

    _starts: Sequence[int]
    _sizes: Sequence[int]
    _names: str
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
        at = names.find(name)
        while at >= 0:
            i = bisect.bisect_left(ends, at + len(name))
            if i < len(ends) and ends[i] == at + len(name) and (ends[i - 1] if i else 0) == at:
                return self._symbol(i)
            at = names.find(name, at + 1)
        return None

    # A cache file holds one ASCII line, then the table's columns as it keeps
    # them, so that loading one is a few copies:
    #
    #   TAG COUNT NAMES_SIZE CRC32 SOURCE,SOURCE...\n
    #   starts, sizes, name ends   COUNT unsigned 64-bit values each, in this
    #                              machine's byte order (the tag names it)
    #   source of each symbol      COUNT bytes: an index into the line's sources
    #   binding of each symbol     COUNT bytes: its ELF STB_* value
    #   names                      NAMES_SIZE bytes: UTF-8, one after another
    #                              (the name ends count characters)
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
        if not all(isinstance(c, array) and c.typecode == "Q" for c in (starts, sizes, name_ends)) \
                or not isinstance(source_of, bytes) or not set(source_names) <= set(SOURCES):
            return None
        try:
            utf8 = names.encode("utf-8")
        except UnicodeEncodeError:
            return None
        body: list[bytes | bytearray | memoryview] = [
            memoryview(c).cast("B") for c in (starts, sizes, name_ends)  # type: ignore[arg-type]
        ]
        body += [source_of, bindings, utf8]
        crc = 0
        for part in body:
            crc = zlib.crc32(part, crc)
        line = "%s %d %d %d %s\n" % (cache_format(), len(starts), len(utf8), crc,
                                     ",".join(source_names))
        return [line.encode("ascii")] + body

    @classmethod
    def from_bytes(cls, data: bytes) -> "SymbolTable | None":
        """The table to_bytes() made, or None if the bytes are damaged, cut
        short, of another format or of other code."""
        import zlib
        eol = data.find(b"\n", 0, _CACHE_LINE_MAX)
        if eol < 0:
            return None
        fields = data[:eol].split(b" ")
        if len(fields) != 5 or fields[0] != cache_format().encode("ascii"):
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
        columns = []
        for k in range(3):
            column = array("Q")
            column.frombytes(body[8 * count * k:8 * count * (k + 1)])
            columns.append(column)
        starts, sizes, name_ends = columns
        source_of = bytes(body[24 * count:25 * count])
        bindings = bytes(body[25 * count:26 * count])
        # (every source index names one of the sources)
        if source_of.translate(None, bytes(range(len(source_names)))):
            return None
        try:
            names = str(body[26 * count:], "utf-8")
        except UnicodeDecodeError:
            return None
        if (name_ends[-1] if count else 0) != len(names):
            return None
        table = cls.__new__(cls)
        table._starts, table._sizes, table._name_ends = starts, sizes, name_ends
        table._source_of, table._names, table._source_names = source_of, names, source_names
        table._bindings = bindings
        table._made = {}
        return table


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
_TABLE_MAKERS = ("symbols/symtab.py", "symbols/elfsymbols.py", "symbols/plt.py",
                 "debuginfo/minidebuginfo.py", "elffile.py", "elfheader.py", "elfcompress.py",
                 "symbols/demangle.py", "symbols/rust_demangle.py")


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
    cache: the CacheDir the file belongs to (it counts as used)."""
    if cache is not None:
        data = cache.read(path, max_size)
    else:
        from ..cachedir import read_file
        data = read_file(path, max_size)
    return SymbolTable.from_bytes(data) if data is not None else None
