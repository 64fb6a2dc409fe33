"""`ElfHeader`: an ELF file's header and pyelftools' structs for it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mmap


class ElfHeader:
    """What Binary needs of pyelftools' ELFFile, without importing it (and
    with it the DWARF modules, a fifth of perfdata's start-up): the parsed
    ELF header and pyelftools' structs for this file's class, byte order,
    type and machine, as ELFFile builds them.  For a file of a type and
    machine elflayouts.py knows, the header is read and the structs a run
    reads are laid out from there (the same as pyelftools', by test), and
    pyelftools is imported only if another struct is asked for."""

    # pyelftools' structs are descriptions, the same for every file of one
    # class, byte order, type and machine: built once, not for every file.
    _structs: dict[tuple, Any] = {}

    def __init__(self, buf: bytes | mmap.mmap) -> None:
        import struct

        from . import elflayouts
        ident = bytes(buf[:16])
        if len(ident) < 16 or ident[:4] != b"\x7fELF":
            raise ValueError("not an ELF file")
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ValueError("unknown ELF class %d or data encoding %d" % (ident[4], ident[5]))
        self.elfclass = 32 if ident[4] == 1 else 64
        self.little_endian = ident[5] == 1
        known = elflayouts.layout(self.elfclass, self.little_endian, "Elf_Ehdr")
        assert known is not None        # (both classes are there)
        fmt, names = known
        size = 16 + struct.calcsize(fmt)        # (pyelftools' Elf_Ehdr.sizeof())
        if len(buf) < size:
            raise ValueError("ELF header cut short")
        self._head = bytes(buf[:size])
        self._known = True
        header: dict[str, Any] = dict(zip(names, struct.unpack_from(fmt, self._head, 16)))
        e_type = elflayouts.E_TYPE.get(header["e_type"])
        e_machine = elflayouts.E_MACHINE.get(header["e_machine"])
        if e_type is None or e_machine is None:
            # (another type or machine: pyelftools' header and structs)
            self._known = False
            self.header = self._pyelftools_header()
            return
        header["e_type"], header["e_machine"] = e_type, e_machine
        header["e_version"] = elflayouts.E_VERSION.get(header["e_version"], header["e_version"])
        self.header = header

    def _pyelftools_header(self) -> Any:
        basic = self._built(self.little_endian, self.elfclass)
        return basic.Elf_Ehdr.parse(self._head)

    @property
    def structs(self) -> Any:
        """pyelftools' structs for this file's class, byte order, type and
        machine (its OS ABI too), as ELFFile builds them."""
        header = self.header if not self._known else self._pyelftools_header()
        return self._built(self.little_endian, self.elfclass, header["e_type"],
                           header["e_machine"], header["e_ident"]["EI_OSABI"])

    def layout(self, name: str) -> tuple[str, list[str]] | None:
        """(struct format, field names) of a struct elflayouts.py knows, for
        a file of a type and machine it knows; None otherwise."""
        from . import elflayouts
        return elflayouts.layout(self.elfclass, self.little_endian, name) if self._known \
            else None

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
