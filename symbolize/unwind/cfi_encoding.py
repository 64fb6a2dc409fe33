"""How CFI is stored: LEB128 numbers, DW_EH_PE_* pointer encodings, the
fixed part of .eh_frame_hdr, and `CfiSection`, the bytes of one CFI section
with what is needed to read pointers in it.  Also the errors every part of
the CFI reader raises.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Literal

from construct import Struct, Int8ul, Enum, BitStruct, Flag, BitsInteger
from elftools.dwarf.enums import DW_EH_encoding_flags

if TYPE_CHECKING:
    from .cfi_entries import Cie, Fde

MASK64 = (1 << 64) - 1


class CfiError(Exception):
    """Malformed CFI or an expression that cannot be evaluated."""


class StackOutOfRange(CfiError):
    """A memory read fell outside the stack snapshot; `address` is the one wanted."""

    def __init__(self, address: int) -> None:
        super().__init__("memory at 0x%x is outside the stack snapshot" % address)
        self.address = address


# ---------------------------------------------------------------------------
# Layouts.  The fixed part of .eh_frame_hdr and the pointer-encoding byte are
# declarative construct schemas (they are read once per file, speed does not
# matter); the variable-length CIE/FDE bodies and the CFA programs are read by
# the small LEB128/pointer readers below because they sit on the hot path.

# LSB 5.0, "Exception Frame Header"
EH_FRAME_HDR_HEADER = Struct(
    "version" / Int8ul,             # 1
    "eh_frame_ptr_enc" / Int8ul,    # a DW_EH_PE_* byte
    "fde_count_enc" / Int8ul,
    "table_enc" / Int8ul,
    # followed by eh_frame_ptr, fde_count and the (initial_location, fde
    # address) table, each in its encoding
)

# A DW_EH_PE_* byte: how a pointer is stored (low nibble) and what it is
# relative to (bits 4-6); bit 7 says the stored value is the address of the
# pointer.  0xff (DW_EH_PE_omit) means absent.
POINTER_ENCODING = BitStruct(
    "indirect" / Flag,
    "application" / Enum(BitsInteger(3), absptr=0, pcrel=1, textrel=2,
                         datarel=3, funcrel=4, aligned=5),
    "format" / Enum(BitsInteger(4), absptr=0x0, uleb128=0x1, udata2=0x2,
                    udata4=0x3, udata8=0x4, sleb128=0x9, sdata2=0xa,
                    sdata4=0xb, sdata8=0xc),
)

# The byte's values by their DWARF names, as pyelftools lists them.
DW_EH_PE_omit = DW_EH_encoding_flags["DW_EH_PE_omit"]
DW_EH_PE_absptr = DW_EH_encoding_flags["DW_EH_PE_absptr"]
DW_EH_PE_uleb128 = DW_EH_encoding_flags["DW_EH_PE_uleb128"]
DW_EH_PE_sleb128 = DW_EH_encoding_flags["DW_EH_PE_sleb128"]
DW_EH_PE_pcrel = DW_EH_encoding_flags["DW_EH_PE_pcrel"]
DW_EH_PE_datarel = DW_EH_encoding_flags["DW_EH_PE_datarel"]
DW_EH_PE_indirect = DW_EH_encoding_flags["DW_EH_PE_indirect"]
_PE_FORMAT_MASK = 0x0F      # the low nibble: how the pointer is stored
_PE_APPLICATION_MASK = 0x70  # bits 4-6: what it is relative to


def describe_pointer_encoding(enc: int) -> str:
    """'pcrel|sdata4'-style text for a DW_EH_PE_* byte (for messages)."""
    if enc == DW_EH_PE_omit:
        return "omit"
    p = POINTER_ENCODING.parse(bytes([enc]))
    return "%s%s|%s" % ("indirect|" if p.indirect else "", p.application, p.format)


DW_EH_PE_datarel_sdata4 = DW_EH_PE_datarel | DW_EH_encoding_flags["DW_EH_PE_sdata4"]

# Fixed-size pointer formats: struct format letter (little endian added later).
_PE_FIXED = {DW_EH_encoding_flags["DW_EH_PE_" + name]: letter for name, letter in (
    ("udata2", "H"), ("udata4", "I"), ("udata8", "Q"),
    ("sdata2", "h"), ("sdata4", "i"), ("sdata8", "q"))}


def uleb128(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def sleb128(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            if b & 0x40:
                result -= 1 << shift
            return result, pos


class CfiSection:
    """Bytes of one CFI section and what is needed to read pointers in it."""

    def __init__(self, data: bytes, addr: int, is_eh: bool, endian: str, address_size: int,
                 datarel_base: int | None = None) -> None:
        self.data = bytes(data)
        self.addr = addr
        self.is_eh = is_eh
        self.endian = endian
        self.address_size = address_size
        self.datarel_base = datarel_base    # for DW_EH_PE_datarel (the .got on x86 / hdr)
        self.cies: dict[int, Cie | None] = {}   # offset -> Cie or None
        self.fdes: dict[int, Fde | None] = {}   # offset -> Fde or None

    def read_encoded(self, pos: int, enc: int) -> tuple[Any, int]:
        """(value, new_pos) of a DW_EH_PE-encoded pointer at pos."""
        # (the value: an int, or None for DW_EH_PE_omit)
        if enc == DW_EH_PE_omit:
            return None, pos
        fmt = enc & _PE_FORMAT_MASK
        field_addr = self.addr + pos
        if fmt == DW_EH_PE_absptr:
            size = self.address_size
            if len(self.data) < pos + size:
                raise CfiError("pointer beyond section end")
            value = int.from_bytes(self.data[pos:pos + size], self.endian_name)
            pos += size
        elif fmt == DW_EH_PE_uleb128:
            value, pos = uleb128(self.data, pos)
        elif fmt == DW_EH_PE_sleb128:
            value, pos = sleb128(self.data, pos)
        else:
            letter = _PE_FIXED.get(fmt)
            if letter is None:
                raise CfiError("unknown pointer format in %s" % describe_pointer_encoding(enc))
            st = struct.Struct(self.endian + letter)
            (value,) = st.unpack_from(self.data, pos)
            pos += st.size
        app = enc & _PE_APPLICATION_MASK
        if app == DW_EH_PE_pcrel:
            value += field_addr
        elif app == DW_EH_PE_datarel:
            if self.datarel_base is None:
                raise CfiError("datarel pointer without a base")
            value += self.datarel_base
        elif app != DW_EH_PE_absptr:
            # textrel/funcrel/aligned are not used by GCC or LLVM on our targets
            raise CfiError("unsupported pointer encoding %s" % describe_pointer_encoding(enc))
        if enc & DW_EH_PE_indirect:
            raise CfiError("unsupported pointer encoding %s" % describe_pointer_encoding(enc))
        return value & MASK64, pos

    @property
    def endian_name(self) -> Literal["little", "big"]:
        return "little" if self.endian == "<" else "big"
