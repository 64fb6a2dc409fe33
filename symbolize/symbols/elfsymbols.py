"""The symbols of an ELF symbol section (.symtab, .dynsym) as read, before
perf's fixups (symtab.py): filtered as perf 6.1 filters them
(tools/perf/util/symbol-elf.c dso__load_sym): STT_FUNC and STT_GNU_IFUNC
symbols, and STT_NOTYPE "labels" in sections whose name contains "text";
with objects, STT_OBJECT too.  The loop over the entries runs in C where
the compiled module is built (compiled.py), in Python otherwise: the same
columns out."""
from __future__ import annotations

import struct
from array import array
from contextlib import contextmanager
from itertools import accumulate
from typing import TYPE_CHECKING, NamedTuple

from ..elffile import SHF_ALLOC
from .compiled import symtab_core

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from types import ModuleType

    from ..elffile import Binary, SectionHeader

STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_GNU_IFUNC = 0, 1, 2, 10
STV_INTERNAL, STV_HIDDEN = 1, 2
SHN_UNDEF, SHN_LORESERVE = 0, 0xFF00


class RawSymbol(NamedTuple):
    """A symbol as read, before perf's fixups."""
    name: str
    start: int
    size: int
    binding: int
    type: int
    source: str


class SymbolColumns(NamedTuple):
    """Symbols as read, before perf's fixups, a column per field: what the
    fixups take (a column costs a C loop where a RawSymbol a symbol costs an
    object each).  The starts and sizes: lists, or arrays of unsigned 64-bit
    values as the compiled reader hands them over (an int object each of
    cc1's 27,000 symbols would be 2 MB made for the fixups to read once)."""
    starts: list[int] | array[int]
    sizes: list[int] | array[int]
    bindings: list[int] | bytearray
    types: list[int] | bytearray
    names: list[str]
    sources: list[str]

    @classmethod
    def of(cls, raw: Iterable[RawSymbol]) -> SymbolColumns:
        rows = list(raw)
        if not rows:
            return cls([], [], [], [], [], [])
        names, starts, sizes, bindings, types, sources = (list(c) for c in zip(*rows))
        return cls(starts, sizes, bindings, types, names, sources)

    def rows(self) -> list[RawSymbol]:
        return list(map(RawSymbol, self.names, self.starts, self.sizes, self.bindings,
                        self.types, self.sources))

    def extend(self, other: SymbolColumns) -> SymbolColumns:
        """These symbols, then other's: each column extended in place (its
        lists or arrays are this reading's own), not copied (cc1's 27,000
        symbols and its PLT's 490), and returned."""
        for mine, theirs in zip(self, other):
            mine.extend(theirs)     # type: ignore[attr-defined, arg-type]
        return self


def read_elf_symbols(binary: Binary, section_name: str, source: str, objects: bool = False
                     ) -> list[RawSymbol]:
    """Function symbols of one symbol section, filtered as perf filters them;
    with objects, its data objects (STT_OBJECT) too, which perf keeps in the
    same table to name the data addresses of page faults."""
    return read_symbol_columns(binary, section_name, source, objects).rows()


def read_symbol_columns(binary: Binary, section_name: str, source: str, objects: bool = False
                        ) -> SymbolColumns:
    """read_elf_symbols, as columns."""
    try:
        return _read_elf_symbols(binary, section_name, source, objects)
    except Exception as e:       # malformed tables: warn and carry on
        binary.warn(f"{section_name}: {type(e).__name__}: {e}")
        return SymbolColumns.of(())


@contextmanager
def symbol_section(binary: Binary, section: str | SectionHeader | None
                   ) -> Iterator[tuple[memoryview | bytes, memoryview | bytes] | None]:
    """(the entries, the string table they name) of a symbol section (by
    name or header), or None where either is missing or empty: views of the
    binary's mapping where they are stored as they are (Binary.view), for
    the block's time; after it their pages are given back, as a copy's are."""
    symsec = binary.get_section(section) if isinstance(section, str) else section
    strsec = binary.section_by_index(symsec.link) if symsec is not None else None
    data = binary.section_view(symsec) if symsec is not None else None
    strtab = binary.section_view(strsec) if strsec is not None else None
    try:
        yield (data, strtab) if data and strtab else None
    finally:
        for sec, view in ((symsec, data), (strsec, strtab)):
            if isinstance(view, memoryview) and sec is not None:
                view.release()
                binary.let_go(sec.offset, sec.size)


def _read_elf_symbols(binary: Binary, section_name: str, source: str, objects: bool = False
                      ) -> SymbolColumns:
    with symbol_section(binary, section_name) as tables:
        if tables is None:
            return SymbolColumns.of(())
        return _read_symbols(binary, tables, source, objects)


def _read_symbols(binary: Binary, tables: tuple[memoryview | bytes, memoryview | bytes],
                  source: str, objects: bool) -> SymbolColumns:
    data, strtab = tables
    fmt, names = binary.struct_layout("Elf_Sym")
    order = tuple(names.index(n) for n in
                  ("st_name", "st_value", "st_size", "st_info", "st_other", "st_shndx"))
    arm = binary.machine in ("EM_ARM", "EM_AARCH64")
    compiled = symtab_core()
    if compiled is not None:
        return _read_compiled(compiled, binary, tables, (fmt, order), source, objects)
    data, strtab = bytes(data), bytes(strtab)   # (the reference reads copies)
    size = struct.calcsize(fmt)
    sec_by_index = {s.index: s for s in binary.sections}
    starts: list[int] = []
    sizes: list[int] = []
    bindings: list[int] = []
    types: list[int] = []
    kept: list[str] = []
    n = len(data) // size
    i_name, i_value, i_size, i_info, i_other, i_shndx = order
    for ent in struct.iter_unpack(fmt, data[:n * size]):
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
        elif typ in (STT_FUNC, STT_GNU_IFUNC) or (objects and typ == STT_OBJECT):
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
        starts.append(ent[i_value])
        sizes.append(ent[i_size])
        bindings.append(st_info >> 4)
        types.append(typ)
        kept.append(name)
    return SymbolColumns(starts, sizes, bindings, types, kept, [source] * len(kept))


def _read_compiled(compiled: ModuleType, binary: Binary,
                   tables: tuple[memoryview | bytes, memoryview | bytes],
                   layout: tuple[str, tuple[int, ...]], source: str, objects: bool
                   ) -> SymbolColumns:
    """_read_elf_symbols' loop in C: the entries' fields where pyelftools'
    struct puts them (the (offset, width) of each, from its format), each
    section's part in the filters as a byte per section index."""
    fmt, order = layout
    widths = [struct.calcsize(fmt[0] + code) for code in fmt[1:]]
    offsets = list(accumulate(widths, initial=0))
    fields = tuple((offsets[i], widths[i]) for i in order)
    sections = bytearray()
    for sec in binary.sections:
        if 0 <= sec.index < SHN_LORESERVE:
            if sec.index >= len(sections):
                sections.extend(bytes(sec.index + 1 - len(sections)))
            sections[sec.index] = (1 if sec.flags & SHF_ALLOC else 0) | \
                (2 if "text" in sec.name else 0)
    data, strtab = tables
    starts, sizes, bindings, types, names = compiled.read_symbols(
        data, strtab, fields, offsets[-1], fmt[0] == "<", bytes(sections),
        binary.machine in ("EM_ARM", "EM_AARCH64"), objects)
    # (the bindings and types a byte each: bytearrays, which extend() can add to)
    return SymbolColumns(u64_array(starts), u64_array(sizes), bytearray(bindings),
                         bytearray(types), names,
                         [source] * len(names))


def u64_array(data: bytes) -> array[int]:
    """Native unsigned 64-bit values, as the compiled module hands them over."""
    column = array("Q")
    column.frombytes(data)
    return column

