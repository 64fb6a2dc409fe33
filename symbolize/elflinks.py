"""The links an ELF file has to other files: `.gnu_debuglink` (its debug
file's name and CRC) and the supplementary file its DWARF continues in
(`dwz -m`: .gnu_debugaltlink, or DWARF 5's .debug_sup)."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .elffile import Binary


class SupplementaryLink(NamedTuple):
    """A file's link to the supplementary file its DWARF continues in."""
    name: str                 # as written: absolute, or relative to the file's directory
    identity: str | None      # hex: the file's build-id, or its .debug_sup checksum


def _sup_layouts(little_endian: bool) -> tuple[Any, Any]:
    """The layouts of .gnu_debugaltlink (the supplementary file's name, then
    its build-id) and of DWARF 5's .debug_sup (7.3.6: version, is_supplementary,
    the name, a ULEB128-counted checksum), as construct schemas."""
    from construct import CString, GreedyBytes, Int8ul, Int16ub, Int16ul, Prefixed, Struct, VarInt
    altlink = Struct("name" / CString("utf8"), "identity" / GreedyBytes)
    debug_sup = Struct("version" / (Int16ul if little_endian else Int16ub),
                       "is_supplementary" / Int8ul, "name" / CString("utf8"),
                       "identity" / Prefixed(VarInt, GreedyBytes))
    return altlink, debug_sup


def read_debuglink(binary: Binary) -> tuple[str, int] | None:
    """(file name, CRC32) from .gnu_debuglink, or None."""
    data = binary.section_data(".gnu_debuglink")
    if not data:
        return None
    data = bytes(data)
    nul = data.find(b"\0")
    if nul <= 0:
        return None
    crc_off = (nul + 4) & ~3
    if crc_off + 4 > len(data):
        return None
    (crc,) = struct.unpack_from("<I" if binary.little_endian else ">I", data, crc_off)
    try:
        name = data[:nul].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return name, crc


def read_supplementary(binary: Binary) -> tuple[SupplementaryLink | None, str | None]:
    """(the supplementary file binary's DWARF refers to, the checksum a file
    referring to binary as its supplementary file names it by: its own
    .debug_sup's, is_supplementary 1); None for what is not there."""
    from construct import ConstructError
    altlink, debug_sup = _sup_layouts(binary.little_endian)
    link, identity = None, None
    try:
        data = binary.section_data(".gnu_debugaltlink")
        if data:
            got = altlink.parse(bytes(data))
            if got.name and got.identity:
                link = SupplementaryLink(got.name, got.identity.hex())
        data = binary.section_data(".debug_sup")
        if data and link is None:
            got = debug_sup.parse(bytes(data))
            if got.version in (2, 5) and got.is_supplementary and got.identity:
                identity = got.identity.hex()
            elif got.version in (2, 5) and got.name:
                link = SupplementaryLink(got.name, got.identity.hex() or None)
    except (ConstructError, UnicodeDecodeError):
        pass                  # cut or not UTF-8: no link
    return link, identity
