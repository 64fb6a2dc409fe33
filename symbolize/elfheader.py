"""`ElfHeader`: an ELF file's header and pyelftools' structs for it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mmap


class ElfHeader:
    """What Binary needs of pyelftools' ELFFile, without importing it (and
    with it the DWARF modules, a fifth of perfdata's start-up): the parsed
    ELF header and pyelftools' structs for this file's class, byte order,
    type and machine, as ELFFile builds them."""

    # pyelftools' structs are descriptions, the same for every file of one
    # class, byte order, type and machine: built once, not for every file.
    _structs: dict[tuple, Any] = {}

    def __init__(self, buf: bytes | mmap.mmap) -> None:
        ident = bytes(buf[:16])
        if len(ident) < 16 or ident[:4] != b"\x7fELF":
            raise ValueError("not an ELF file")
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ValueError("unknown ELF class %d or data encoding %d" % (ident[4], ident[5]))
        self.elfclass = 32 if ident[4] == 1 else 64
        self.little_endian = ident[5] == 1
        basic = self._built(self.little_endian, self.elfclass)
        size = basic.Elf_Ehdr.sizeof()
        if len(buf) < size:
            raise ValueError("ELF header cut short")
        self.header = basic.Elf_Ehdr.parse(bytes(buf[:size]))
        self.structs = self._built(self.little_endian, self.elfclass, self.header["e_type"],
                                   self.header["e_machine"], self.header["e_ident"]["EI_OSABI"])

    @classmethod
    def _built(cls, little_endian: bool, elfclass: int, *advanced: Any) -> Any:
        """ELFStructs with the basic structs, and the advanced ones for
        (e_type, e_machine, EI_OSABI) when given."""
        key = (little_endian, elfclass) + advanced
        structs = cls._structs.get(key)
        if structs is None:
            from elftools.elf.structs import ELFStructs
            structs = ELFStructs(little_endian=little_endian, elfclass=elfclass)
            structs.create_basic_structs()
            if advanced:
                structs.create_advanced_structs(*advanced)
            cls._structs[key] = structs
        return structs
