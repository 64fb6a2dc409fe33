"""Compressed ELF sections (SHF_COMPRESSED: zlib or zstd), inflated with a
bound."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

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


def _header(binary: Binary, sec: SectionHeader, raw: memoryview | bytes
            ) -> tuple[int, int, int] | None:
    """(ch_type, ch_size, where the compressed bytes start) of a compressed
    section's Elf_Chdr, or None (cut short, or over the size limit: warned)."""
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
    if ch_type not in (1, 2):                 # ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD
        binary.warn(f"section {sec.name}: unknown compression type {ch_type}")
        return None
    return ch_type, ch_size, at


def _inflated(binary: Binary, sec: SectionHeader, raw: memoryview | bytes) -> bytes | None:
    header = _header(binary, sec, raw)
    if header is None:
        return None
    ch_type, ch_size, at = header
    with memoryview(raw)[at:] as body:
        if ch_type == 1:
            out = _zlib().decompressobj().decompress(body, ch_size)
        else:
            import io
            import zstandard
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body))
            out = reader.read(ch_size)
    if len(out) != ch_size:
        binary.warn(f"section {sec.name}: decompressed to {len(out)} bytes, not {ch_size}")
    return out


class Inflater:
    """A compressed section inflated as far as it is read: its start, up to
    the furthest byte asked for (`upto`), kept.  A reader of some units of a
    large .debug_info (libc6-dbg's: 2.3 MB, 5.8 MB inflated) then makes only
    the pages before its last unit, and none of a section it never reads.
    `size` is the header's (ch_size), known before anything is inflated;
    the bytes made are never more than the compressed bytes give, nor a
    step's more than the section can still hold (zlib's max_length; zstd
    in pieces of CHUNK): a bomb allocates no more than its header says.  `whole`
    makes bytes of it (inflated at once where nothing was read before: no
    copy), which later reads share."""

    CHUNK = 1 << 16       # compressed bytes a step: its output stays small

    def __init__(self, binary: Binary, sec: SectionHeader) -> None:
        self.binary = binary
        self.sec = sec
        self.out: bytearray | bytes = bytearray()
        self._fed = 0               # where the compressed bytes not yet inflated start
        self._engine: Any = None
        self.size = 0
        self.done = True
        self.ok = False             # its header read
        head = binary.read(sec.offset, min(sec.size, 24))
        got = _header(binary, sec, head) if head is not None else None
        if got is None:
            return
        ch_type, self.size, self._fed = got
        self.ok = True
        self._zlib = ch_type == 1
        self.done = False

    def whole(self) -> bytes | None:
        """All of the section's bytes (fewer where the compressed bytes stop
        making any), or None where its header is bad."""
        if not self.ok:
            return None
        if not self.out and not self.done:
            self.out = decompress_section(self.binary, self.sec) or b""
            self.done, self._engine = True, None
        elif not isinstance(self.out, bytes):
            self.out = bytes(self.upto(self.size))
        return self.out  # type: ignore[return-value]

    def upto(self, end: int) -> bytearray | bytes:
        """The section's bytes from its start to `end` at least (fewer at its
        end, or where the compressed bytes stop making any)."""
        out, sec = self.out, self.sec
        if len(out) >= min(end, self.size) or self.done:
            return out
        assert isinstance(out, bytearray)
        raw = self.binary.view(sec.offset, sec.size)
        if raw is None:
            self.binary.warn(f"section {sec.name} runs past the end of the file")
            self.done, self._engine = True, None
            return out
        start, stop = self._fed, len(raw)
        if self._engine is None:
            if self._zlib:
                self._engine = _zlib().decompressobj()
            else:
                # (zstd's decompressobj cannot bound its output: read_to_iter
                # makes pieces of CHUNK at most, from the compressed bytes)
                import zstandard
                self._engine = zstandard.ZstdDecompressor().read_to_iter(
                    bytes(raw[start:]), write_size=self.CHUNK)
        try:
            while len(out) < end and self._fed < stop:
                if self._zlib:
                    step = raw[self._fed:self._fed + self.CHUNK]
                    self._fed += len(step)
                    # (no more than the section can still hold: a step of a
                    # bomb makes no more than the header's size)
                    out += self._engine.decompress(step, self.size - len(out))
                else:
                    piece = next(self._engine, None)
                    if piece is None:
                        self._fed = stop
                    out += piece or b""
                if len(out) >= self.size:
                    # (all of it: what follows the stream is not fed)
                    del out[self.size:]
                    self._fed = stop
        except Exception as e:      # zlib.error, zstd.ZstdError: the bytes are bad
            self.binary.warn(f"section {sec.name}: {type(e).__name__}: {e}")
            self._fed = stop
        finally:
            if isinstance(raw, memoryview):
                raw.release()
                self.binary.let_go(sec.offset + start, min(self._fed, stop) - start)
        if self._fed >= stop:
            self._finish(stop)
        return out

    def _finish(self, fed: int) -> None:
        self.done = True
        self._engine = None
        self._fed = fed
        if len(self.out) != self.size:
            self.binary.warn(f"section {self.sec.name}: decompressed to {len(self.out)} bytes, "
                             f"not {self.size}")
