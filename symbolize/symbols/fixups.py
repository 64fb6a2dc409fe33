"""perf 6.1's fixups of a symbol table (tools/perf/util/symbol.c):
`symbols__fixup_end` gives each size-0 symbol the room up to the next one,
`symbols__fixup_duplicate` keeps one of the symbols sharing an address
(`choose_best_symbol`), on columns of symbols as read, in C where the
compiled module is there (symbolize.symbols._symtab) and here otherwise.
symtab.py's tables and kallsyms.py's kernel table are made with them."""
from __future__ import annotations

from array import array
from itertools import compress, repeat
from operator import add, contains, eq, itemgetter, le, ne, sub
from typing import TYPE_CHECKING

from .compiled import symtab_core
from .elfsymbols import RawSymbol, SymbolColumns, u64_array

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from types import ModuleType

STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2


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
