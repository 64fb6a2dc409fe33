"""A binary's function symbols, sorted, deduplicated and sized as perf does.

perf 6.1 (tools/perf/util/symbol-elf.c dso__load_sym, symbol.c) keeps
STT_FUNC / STT_GNU_IFUNC symbols and STT_NOTYPE "labels" in sections whose name
contains "text"; it then gives each size-0 symbol the room up to the next
symbol (`symbols__fixup_end`) and resolves symbols sharing an address with
`choose_best_symbol` (`symbols__fixup_duplicate`). The same rules are applied
here, so names match `perf script`. One deliberate difference: PLT stubs are
added before sizes are fixed up, so a size-0 `_init` no longer swallows `.plt`.
"""
from __future__ import annotations

import bisect
import struct
from operator import itemgetter
from typing import TYPE_CHECKING, Iterable, NamedTuple

from .elffile import Binary, SHF_ALLOC

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .cachedir import CacheDir

STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_NOTYPE, STT_FUNC, STT_GNU_IFUNC = 0, 2, 10
STV_INTERNAL, STV_HIDDEN = 1, 2
SHN_UNDEF, SHN_LORESERVE = 0, 0xFF00

SOURCES = ("symtab", "dynsym", "minidebuginfo", "plt", "debuginfo")


class RawSymbol(NamedTuple):
    """A symbol as read, before perf's fixups."""
    name: str
    start: int
    size: int
    binding: int
    type: int
    source: str


class Symbol(NamedTuple):
    name: str
    start: int
    size: int
    source: str

    @property
    def end(self) -> int:
        return self.start + self.size


def read_elf_symbols(binary: Binary, section_name: str, source: str) -> list[RawSymbol]:
    """Function symbols of one symbol section, filtered as perf filters them."""
    try:
        return _read_elf_symbols(binary, section_name, source)
    except Exception as e:       # malformed tables: warn and carry on
        binary.warn(f"{section_name}: {type(e).__name__}: {e}")
        return []


def _read_elf_symbols(binary: Binary, section_name: str, source: str) -> list[RawSymbol]:
    symsec = binary.get_section(section_name)
    if symsec is None:
        return []
    data = binary.section_data(symsec)
    strsec = binary.section_by_index(symsec.link)
    strtab = binary.section_data(strsec) if strsec is not None else None
    if not data or not strtab:
        return []
    strtab = bytes(strtab)
    fmt, names = binary.struct_layout("Elf_Sym")
    size = struct.calcsize(fmt)
    order = tuple(names.index(n) for n in
                  ("st_name", "st_value", "st_size", "st_info", "st_other", "st_shndx"))
    arm = binary.machine in ("EM_ARM", "EM_AARCH64")
    sections = binary.sections
    sec_by_index = {s.index: s for s in sections}
    out: list[RawSymbol] = []
    n = len(data) // size
    i_name, i_value, i_size, i_info, i_other, i_shndx = order
    for ent in struct.iter_unpack(fmt, bytes(data[:n * size])):
        st_info = ent[i_info]
        typ = st_info & 0xF
        st_name = ent[i_name]
        shndx = ent[i_shndx]
        if st_name == 0 or shndx == SHN_UNDEF or shndx >= SHN_LORESERVE:
            continue
        if typ == STT_NOTYPE:
            vis = ent[i_other] & 3
            if vis in (STV_HIDDEN, STV_INTERNAL):
                continue
            is_label = True
        elif typ in (STT_FUNC, STT_GNU_IFUNC):
            is_label = False
        else:
            continue
        sec = sec_by_index.get(shndx)
        # Symbols of sections that are not loaded never match a sample.
        if sec is None or not (sec.flags & SHF_ALLOC):
            continue
        if is_label and "text" not in sec.name:
            continue
        if st_name >= len(strtab):
            continue
        end = strtab.find(b"\0", st_name)
        name = strtab[st_name:end if end >= 0 else len(strtab)].decode("utf-8", "replace")
        # ARM/AArch64 mapping symbols ($a, $d, $t, $x) mark code/data runs,
        # not functions; perf rejects them.
        if arm and name[:1] == "$" and len(name) >= 2 and name[1] in "adtx" and (
                len(name) == 2 or name[2] == "."):
            continue
        out.append(RawSymbol(name, ent[i_value], ent[i_size], st_info >> 4, typ, source))
    return out


_START = itemgetter(0)


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
    ua, ub = _underscores(a[3]), _underscores(b[3])
    if ub > ua:
        return True
    if ua > ub:
        return False
    if len(a[3]) != len(b[3]):
        return len(a[3]) > len(b[3])
    # arch__choose_best_symbol: avoid the kernel's "SyS" syscall aliases.
    return not (a[3].startswith("SyS") or a[3].startswith("compat_SyS"))


def fixup_symbols(raw: Iterable[RawSymbol], *, is_kallsyms: bool = False) -> list[list]:
    """perf's symbols__fixup_end then symbols__fixup_duplicate.

    Returns sorted [start, end, binding, name, source] lists, one per address.
    """
    return fixup_entries([[r.start, r.start + r.size, r.binding, r.name, r.source]
                          for r in raw], is_kallsyms=is_kallsyms)


def fixup_entries(ents: list[list], *, is_kallsyms: bool = False) -> list[list]:
    """fixup_symbols on [start, end, binding, name, source] lists already
    made (kallsyms makes them straight from its text); sorts them in place."""
    ents.sort(key=_START)               # stable: equal starts keep table order
    if not ents:
        return []
    for prev, curr in zip(ents, ents[1:]):
        if prev[1] == prev[0]:
            if is_kallsyms and (("[" in prev[3]) != ("[" in curr[3])):
                # Last kernel/module symbol: end of its page, not across the gap.
                prev[1] = ((prev[1] + 4096) + 4095) // 4096 * 4096
            else:
                prev[1] = curr[0]
    last = ents[-1]
    if last[1] == last[0]:
        last[1] = (last[0] + 4095) // 4096 * 4096 + 4096
    out = []
    curr = ents[0]
    for nxt in ents[1:]:
        if nxt[0] != curr[0]:
            out.append(curr)
            curr = nxt
        elif not choose_best(curr, nxt):
            curr = nxt
    out.append(curr)
    return out


class SymbolTable:
    """Sorted symbols of one binary; `lookup(svma)` by binary search."""

    def __init__(self, symbols: Iterable[Symbol] = ()) -> None:
        self._syms: list[Symbol] = sorted(symbols, key=lambda s: s.start)
        self._starts = [s.start for s in self._syms]
        self.sources: tuple[str, ...] = tuple(sorted({s.source for s in self._syms}))

    @classmethod
    def from_raw(cls, raw: Iterable[RawSymbol], *, is_kallsyms: bool = False) -> "SymbolTable":
        return cls(Symbol(e[3], e[0], e[1] - e[0], e[4])
                   for e in fixup_symbols(raw, is_kallsyms=is_kallsyms))

    def __len__(self) -> int:
        return len(self._syms)

    def __iter__(self) -> Iterator[Symbol]:
        return iter(self._syms)

    def lookup(self, svma: int) -> Symbol | None:
        if not isinstance(svma, int):
            return None
        i = bisect.bisect_right(self._starts, svma) - 1
        if i < 0:
            return None
        s = self._syms[i]
        if svma < s.start + s.size:
            return s
        # A symbol nested in a larger one (assembler entry points): the
        # enclosing one still covers addresses past the nested one's end.
        for j in range(i - 1, max(i - 4, -1), -1):
            t = self._syms[j]
            if t.start <= svma < t.start + t.size:
                return t
        return None

    def get_symbol_by_name(self, name: str) -> Symbol | None:
        for s in self._syms:
            if s.name == name:
                return s
        return None


def build_symbol_table(binary: Binary | None, debug: Binary | None = None,
                       minidebuginfo: Binary | None = None, *, plt: bool = True
                       ) -> SymbolTable:
    """Best source first, as perf and Fedora's gdb/elfutils choose:

    1. the separate debug file's .symtab ('debuginfo'), else
    2. the binary's own .symtab ('symtab'), else
    3. .dynsym ('dynsym') merged with the MiniDebugInfo .symtab
       ('minidebuginfo'), which holds just the symbols .dynsym lacks;
    plus `name@plt` stubs ('plt') synthesized from the binary's code.
    """
    raw: list[RawSymbol] = []
    if debug is not None and debug.ok:
        raw = read_elf_symbols(debug, ".symtab", "debuginfo")
    if not raw and binary is not None and binary.ok:
        raw = read_elf_symbols(binary, ".symtab", "symtab")
    if not raw:
        if binary is not None and binary.ok:
            raw = read_elf_symbols(binary, ".dynsym", "dynsym")
        elif debug is not None and debug.ok:
            raw = read_elf_symbols(debug, ".dynsym", "dynsym")
        if minidebuginfo is not None and minidebuginfo.ok:
            raw += read_elf_symbols(minidebuginfo, ".symtab", "minidebuginfo")
    if plt and binary is not None and binary.ok and binary.has_code:
        from .plt import synthesize_plt_symbols
        first = SymbolTable.from_raw(raw)

        def ifunc_name(addr: int) -> str | None:
            # perf's get_ifunc_name: the symbol (after alias choice) at the
            # IRELATIVE addend names the slot.
            s = first.lookup(addr)
            return s.name if s is not None and s.start == addr else None
        plt_syms = synthesize_plt_symbols(binary, ifunc_name)
        if not plt_syms:
            return first
        raw += [RawSymbol(p.name, p.start, p.size, STB_GLOBAL, STT_FUNC, "plt")
                for p in plt_syms]
    return SymbolTable.from_raw(raw)


# ------------------------------------------------------------ on-disk cache
_CACHE_FORMAT = None
# The modules whose code decides what a table holds: a change to any of them
# makes every cached table stale, so their text is part of the format tag.
_TABLE_MAKERS = ("symtab.py", "plt.py", "minidebuginfo.py", "elffile.py")


def cache_format() -> str:
    """The tag a cached table must carry to be used."""
    global _CACHE_FORMAT
    if _CACHE_FORMAT is None:
        from .cachedir import code_tag
        _CACHE_FORMAT = code_tag("symtab-2", _TABLE_MAKERS)
    return _CACHE_FORMAT


def save_table(table: SymbolTable, path: str, cache: CacheDir | None = None) -> bool:
    """Write a table as JSON (atomically: a reader never sees half a file);
    cache: the CacheDir the file belongs to (its bound then applies)."""
    doc = {"format": cache_format(),
           "symbols": [[s.name, s.start, s.size, s.source] for s in table]}
    if cache is not None:
        return cache.write_json(path, doc)
    from .cachedir import write_json
    return write_json(path, doc)


def load_table(path: str, max_size: int = 512 << 20, cache: CacheDir | None = None
               ) -> SymbolTable | None:
    """A table saved by save_table, or None if absent, damaged or foreign;
    cache: the CacheDir the file belongs to (it counts as used)."""
    if cache is not None:
        doc = cache.read_json(path, max_size)
    else:
        from .cachedir import read_json
        doc = read_json(path, max_size)
    try:
        if not isinstance(doc, dict) or doc.get("format") != cache_format():
            return None
        syms = []
        for e in doc["symbols"]:
            name, start, size, source = e
            if not (isinstance(name, str) and isinstance(start, int) and isinstance(size, int)
                    and source in SOURCES and start >= 0 and size >= 0):
                return None
            syms.append(Symbol(name, start, size, source))
        return SymbolTable(syms)
    except (OSError, ValueError, TypeError, KeyError):
        return None
