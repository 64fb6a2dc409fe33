"""Compressed ELF sections (SHF_COMPRESSED: zlib or zstd), inflated with a
bound."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .elffacts import SectionHeader
    from .elffile import Binary

MAX_DECOMPRESSED_SECTION = 1 << 30


def _zlib():  # type: ignore[no-untyped-def]
    """python-isal's zlib (ISA-L's inflate: libc6-dbg's compressed DWARF
    sections in 16 ms where zlib takes 47, benchmarks/RESULTS.md), else
    the standard library's; the same bytes out, the same API."""
    try:
        from isal import isal_zlib
        return isal_zlib
    except ImportError:
        import zlib
        return zlib


def decompress_section(binary: Binary, sec: SectionHeader) -> bytes | None:
    """SHF_COMPRESSED contents (zlib or zstd), bounded: the header's
    ch_size is checked against a limit before anything is inflated.  The
    compressed bytes are read through a view of the mapping (Binary.view),
    not copied first (libc's debug file: 3.3 MB of them on a DWARF
    recording's first run), and their pages given back after."""
    raw = binary.view(sec.offset, sec.size)
    if raw is None:
        binary.warn(f"section {sec.name} runs past the end of the file")
        return None
    try:
        return _inflated(binary, sec, raw)
    finally:
        if isinstance(raw, memoryview):
            raw.release()
            binary.let_go(sec.offset, sec.size)


def _inflated(binary: Binary, sec: SectionHeader, raw: memoryview | bytes) -> bytes | None:
    le = "<" if binary.little_endian else ">"
    if binary.is_64:
        if len(raw) < 24:
            return None
        ch_type, _, ch_size, _ = struct.unpack_from(le + "IIQQ", raw, 0)
        at = 24
    else:
        if len(raw) < 12:
            return None
        ch_type, ch_size, _ = struct.unpack_from(le + "III", raw, 0)
        at = 12
    if ch_size > MAX_DECOMPRESSED_SECTION:
        binary.warn(f"section {sec.name}: {ch_size} bytes uncompressed is over the limit")
        return None
    with memoryview(raw)[at:] as body:
        if ch_type == 1:                      # ELFCOMPRESS_ZLIB
            out = _zlib().decompressobj().decompress(body, ch_size)
        elif ch_type == 2:                    # ELFCOMPRESS_ZSTD
            import io
            import zstandard
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body))
            out = reader.read(ch_size)
        else:
            binary.warn(f"section {sec.name}: unknown compression type {ch_type}")
            return None
    if len(out) != ch_size:
        binary.warn(f"section {sec.name}: decompressed to {len(out)} bytes, not {ch_size}")
    return out
