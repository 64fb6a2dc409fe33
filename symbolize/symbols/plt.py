"""Names for PLT stubs (`puts@plt`), which have no symbol of their own.

Each stub jumps through a GOT slot; the relocation of that slot names the
target. Decoding the stub's jump finds the slot, which is right for every
layout (lazy `.plt`, IBT `.plt.sec`, `.plt.got`, `-z now`); where the jump
cannot be decoded, slots are matched to `.rela.plt` in order, as objdump and
perf do. objdump's `<puts@plt>` labels are the oracle for the tests.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NamedTuple

from ..elffile import Binary, SectionHeader, SHT_NOBITS
from .compiled import symtab_core
from .elfsymbols import symbol_section

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

# Relocation types that name a GOT slot, per machine.
_X86_64 = {"GLOB_DAT": 6, "JUMP_SLOT": 7, "IRELATIVE": 37}
_AARCH64 = {"GLOB_DAT": 1025, "JUMP_SLOT": 1026, "IRELATIVE": 1032}
_I386 = {"GLOB_DAT": 6, "JUMP_SLOT": 7, "IRELATIVE": 42}

SHT_RELA = 4
SHT_REL = 9
ENDBR64 = b"\xf3\x0f\x1e\xfa"
ENDBR32 = b"\xf3\x0f\x1e\xfb"


class PltSymbol(NamedTuple):
    name: str
    start: int
    size: int


class _Reloc(NamedTuple):
    offset: int      # address of the GOT slot
    type: int
    sym_name: str
    addend: int


def _read_relocs(binary: Binary, sec: SectionHeader, wanted: Collection[int]
                 ) -> list[_Reloc] | list[tuple[int, int, str, int]]:
    """The relocations of one section whose type is among `wanted` (a PIE's
    .rela.dyn holds thousands of R_*_RELATIVE ones, of no use here), as
    (offset, type, sym_name, addend)."""
    data = binary.section_data(sec)
    if not data:
        return []
    le = "<" if binary.little_endian else ">"
    if binary.is_64:
        rela = sec.type == SHT_RELA
        fmt, size = (le + "QQq", 24) if rela else (le + "QQ", 16)
        sym_shift, type_mask = 32, 0xFFFFFFFF
    else:
        rela = sec.type == SHT_RELA
        fmt, size = (le + "IIi", 12) if rela else (le + "II", 8)
        sym_shift, type_mask = 8, 0xFF
    with symbol_section(binary, binary.section_by_index(sec.link)) as tables:
        names = _SymbolNames(binary, tables)
        compiled = symtab_core()
        if compiled is not None:
            # (the loop in C: the same entries, types and names)
            return compiled.relocs(data, 8 if binary.is_64 else 4, rela, binary.little_endian,
                                   tuple(wanted), names.data, names.entry_size,
                                   names.name_field, names.strtab)
        return _relocs(data, fmt, size, rela, sym_shift, type_mask, wanted, names)


def _relocs(data: bytes, fmt: str, size: int, rela: bool, sym_shift: int, type_mask: int,
            wanted: Collection[int], names: _SymbolNames) -> list[_Reloc]:
    """_read_relocs' loop in Python (the reference)."""
    out = []
    n = len(data) // size
    for entry in struct.iter_unpack(fmt, bytes(data[:n * size])):
        r_offset, r_info = entry[0], entry[1]
        rtype = r_info & type_mask
        if rtype not in wanted:
            continue
        addend = entry[2] if rela else 0
        out.append(_Reloc(r_offset, rtype, names.name(r_info >> sym_shift), addend))
    return out


class _SymbolNames:
    """Names of the entries of a symbol section by index, each decoded when
    first asked for (the relocations name a few of .dynsym's thousands)."""

    def __init__(self, binary: Binary,
                 tables: tuple[memoryview | bytes, memoryview | bytes] | None) -> None:
        """tables: symbol_section's (views of the binary's mapping, not
        copies: .dynsym and its names are 2 MB in cc1, and only a few hundred
        entries are named), used while its block lasts."""
        self._data: memoryview | bytes = b""
        self._strtab: memoryview | bytes = b""
        self._count = 0
        self._names: dict[int, str] = {}
        # (for the compiled loop: an entry's size and st_name's offset,
        # width and byte order)
        self.entry_size, self.name_field = 1, (0, 1, True)
        if tables is None:
            return
        data, strtab = tables
        # (the entry's layout from pyelftools' Elf_Sym, as symtab reads it)
        fmt, fields = binary.struct_layout("Elf_Sym")
        self._entry = struct.Struct(fmt)
        self._name_field = fields.index("st_name")
        self._data, self._strtab = data, strtab
        self._count = len(data) // self._entry.size
        self.entry_size = self._entry.size
        self.name_field = (struct.calcsize(fmt[0] + fmt[1:1 + self._name_field]),
                           struct.calcsize(fmt[0] + fmt[1 + self._name_field]), fmt[0] == "<")

    @property
    def data(self) -> memoryview | bytes:
        """The section's entries (b"" where it has none or no names)."""
        return self._data if self._count else b""

    @property
    def strtab(self) -> memoryview | bytes:
        return self._strtab

    def name(self, index: int) -> str:
        """The name of entry `index`; "" for entry 0 or one past the end."""
        if not 0 < index < self._count:
            return ""
        got = self._names.get(index)
        if got is None:
            entry = self._entry
            st_name = entry.unpack_from(self._data, index * entry.size)[self._name_field]
            strtab = self._strtab
            if isinstance(strtab, memoryview):     # (the Python loop's: a copy, once)
                strtab = self._strtab = bytes(strtab)
            end = strtab.find(b"\0", st_name)
            got = (strtab[st_name:end if end >= 0 else len(strtab)].decode("utf-8", "replace")
                   if st_name < len(strtab) else "")
            self._names[index] = got
        return got


def _i386_got_slot(code: bytes, stub_addr: int, got_base: int) -> int | None:
    """GOT address of `jmp *abs32` (ff 25, non-PIC) or `jmp *disp32(%ebx)`
    (ff a3, PIC: %ebx holds the address of .got.plt)."""
    i = 4 if code.startswith(ENDBR32) else 0
    if i < len(code) and code[i] == 0xF2:
        i += 1
    if len(code) < i + 6 or code[i] != 0xFF:
        return None
    if code[i + 1] == 0x25:
        return struct.unpack_from("<I", code, i + 2)[0]
    if code[i + 1] == 0xA3:
        return got_base + struct.unpack_from("<i", code, i + 2)[0]
    return None


def _x86_64_got_slot(code: bytes, stub_addr: int) -> int | None:
    """GOT address of the first `jmp *disp32(%rip)` (ff 25) in a stub."""
    i = 0
    if code.startswith(ENDBR64):
        i = 4
    while i < len(code) - 5:
        if code[i] == 0xF2:           # bnd prefix (MPX-era IBT stubs)
            i += 1
            continue
        if code[i] == 0xFF and code[i + 1] == 0x25:
            (disp,) = struct.unpack_from("<i", code, i + 2)
            return stub_addr + i + 6 + disp
        return None
    return None


def _aarch64_got_slot(code: bytes, stub_addr: int) -> int | None:
    """GOT address from `adrp x16, page; ldr x17, [x16, #off]`."""
    if len(code) >= 4 and struct.unpack_from("<I", code, 0)[0] == 0xD503245F:
        code, stub_addr = code[4:], stub_addr + 4      # `bti c` of BTI-enabled stubs
    if len(code) < 8:
        return None
    adrp, ldr = struct.unpack_from("<II", code, 0)
    if adrp & 0x9F00001F != 0x90000010:            # adrp x16
        return None
    if ldr & 0xFFC003FF != 0xF9400211:             # ldr x17, [x16, #imm]
        return None
    imm = (((adrp >> 5) & 0x7FFFF) << 2) | ((adrp >> 29) & 3)
    if imm & (1 << 20):
        imm -= 1 << 21
    page = (stub_addr & ~0xFFF) + (imm << 12)
    return page + ((ldr >> 10) & 0xFFF) * 8


class PltColumns(NamedTuple):
    """The stubs' symbols as columns (a symbol table's build takes them so)."""
    names: list[str]
    starts: list[int]
    sizes: list[int]


def synthesize_plt_symbols(binary: Binary,
                           name_for_address: Callable[[int], str | None] | None = None
                           ) -> list[PltSymbol]:
    """`name@plt` symbols for the stubs of .plt, .plt.sec and .plt.got.

    name_for_address resolves IRELATIVE slots (whose relocation names no
    symbol but the address of an IFUNC resolver), as perf's get_ifunc_name does.
    Never raises for a malformed file; answers [] instead.
    """
    return list(map(PltSymbol, *plt_columns(binary, name_for_address)))


def plt_columns(binary: Binary, name_for_address: Callable[[int], str | None] | None = None
                ) -> PltColumns:
    """synthesize_plt_symbols, as columns."""
    try:
        return _synthesize(binary, name_for_address)
    except Exception as e:      # malformed sections: a warning, not a failure
        binary.warn(f"PLT synthesis: {type(e).__name__}: {e}")
        return PltColumns([], [], [])


def _synthesize(binary: Binary, name_for_address: Callable[[int], str | None] | None
                ) -> PltColumns:
    machine = binary.machine
    got_base = 0
    if machine == "EM_X86_64":
        types, decode, header, default_slot = _X86_64, _x86_64_got_slot, 16, 16
        kind = 0
    elif machine == "EM_AARCH64":
        types, decode, header, default_slot = _AARCH64, _aarch64_got_slot, 32, 16
        kind = 1
    elif machine == "EM_386":
        gotplt = binary.get_section(".got.plt") or binary.get_section(".got")
        base = got_base = gotplt.addr if gotplt is not None else 0
        types, header, default_slot = _I386, 16, 16
        kind = 2

        # (its parameter named otherwise: called positionally, as the others)
        def decode(code: bytes, addr: int) -> int | None:  # type: ignore[misc]
            return _i386_got_slot(code, addr, base)
    else:
        return PltColumns([], [], [])
    jump_names: list[str] = []        # the names of .rela.plt's slots, in order
    by_slot: dict[int, str] = {}
    irelative, named = types["IRELATIVE"], (types["JUMP_SLOT"], types["GLOB_DAT"])
    wanted = frozenset((irelative,) + named)
    for sec in binary.sections:
        if sec.type not in (SHT_RELA, SHT_REL):
            continue
        jumps = sec.name in (".rela.plt", ".rel.plt")
        for offset, rtype, name, addend in _read_relocs(binary, sec, wanted):
            if rtype == irelative and not name and name_for_address:
                name = name_for_address(addend) or ""
            elif rtype not in named:
                continue
            if jumps:
                jump_names.append(name)
            if name:
                by_slot.setdefault(offset, name)

    out = PltColumns([], [], [])
    plt = binary.get_section(".plt")
    plt_sec = binary.get_section(".plt.sec")
    plt_got = binary.get_section(".plt.got")
    compiled = symtab_core()

    def stubs(sec: SectionHeader, first: int, slot: int, ordered: list[str]) -> None:
        data = binary.section_data(sec)
        if not data or sec.type == SHT_NOBITS:
            return
        data = bytes(data)
        base, get = sec.addr, by_slot.get
        if compiled is not None:
            # (the jumps decoded in C: the same slots, -1 for one past 64 bits)
            gots = compiled.plt_slots(data, base, first, slot, kind, got_base)
        else:
            gots = [decode(data[off:off + slot], base + off)
                    for off in range(first, len(data) - slot + 1, slot)]
        # (the slot's name where the jump was decoded, else .rela.plt's in order)
        names = list(map(get, gots))
        for index in range(min(len(ordered), len(gots))):
            if gots[index] is None:
                names[index] = ordered[index]
        kept = [index for index, name in enumerate(names) if name]
        out.names.extend(_unversioned(names[index] or "") + "@plt" for index in kept)
        out.starts.extend(base + first + index * slot for index in kept)
        out.sizes.extend([slot] * len(kept))

    if plt_sec is not None:
        # IBT: .plt holds only the lazy-binding trampolines; callers go through
        # .plt.sec, whose slots follow .rela.plt in order.
        stubs(plt_sec, 0, _slot_size(plt_sec, 16), jump_names)
    elif plt is not None:
        stubs(plt, header, _slot_size(plt, default_slot), jump_names)
    if plt_got is not None:
        data = binary.section_data(plt_got) or b""
        slot = plt_got.entsize if plt_got.entsize in (8, 16) else (
            16 if bytes(data[:4]) in (ENDBR64, ENDBR32) else 8)
        stubs(plt_got, 0, slot, [])
    return out


def _unversioned(name: str) -> str:
    """A PLT stub is named after its symbol without the version a .symtab
    name carries (an IFUNC resolver's `memcpy@@GLIBC_2.14`): `memcpy@plt`,
    as perf names the stubs from the dynamic relocations' names."""
    at = name.find("@", 1)
    return name[:at] if at > 0 else name


def _slot_size(sec: SectionHeader, default: int) -> int:
    return sec.entsize if sec.entsize in (8, 16, 32) else default
