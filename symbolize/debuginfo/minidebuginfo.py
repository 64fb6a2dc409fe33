"""MiniDebugInfo: the `.gnu_debugdata` section (Fedora, RHEL, CentOS).

It is an xz-compressed ELF file holding a .symtab with the local function
symbols that .dynsym lacks; gdb and elfutils add those symbols to .dynsym's.
Decompression is bounded, so a hostile section cannot exhaust memory.
"""
from __future__ import annotations

from ..elffile import Binary

MAX_DECOMPRESSED = 256 << 20


def load_minidebuginfo(binary: Binary, *, max_size: int = MAX_DECOMPRESSED) -> Binary | None:
    """The embedded ELF of `.gnu_debugdata` as a Binary, or None (with a
    warning on `binary` when the section exists but cannot be used)."""
    if binary is None or not binary.ok:
        return None
    sec = binary.get_section(".gnu_debugdata")
    if sec is None:
        return None
    data = binary.section_data(sec)
    if not data:
        return None
    import lzma     # (here: most binaries have no such section; start-up time)
    try:
        dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        out = dec.decompress(bytes(data), max_length=max_size)
        if not dec.eof:
            binary.warn(".gnu_debugdata: truncated or larger than the limit")
            return None
    except lzma.LZMAError as e:
        binary.warn(f".gnu_debugdata: {e}")
        return None
    inner = Binary(f"{binary.path}[.gnu_debugdata]", data=out)
    if not inner.ok:
        binary.warn(f".gnu_debugdata: {inner.error}")
        return None
    return inner
