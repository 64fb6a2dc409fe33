"""The zstd stream of COMPRESSED / COMPRESSED2 records.

perf compresses with one stream for the whole recording; each record holds a
piece of it and the records inside may straddle two pieces.  Output is
bounded: input is fed in small slices, and a piece that expands beyond the
limit is an error (a zstd bomb), never an allocation of the claimed size.
"""
from __future__ import annotations

# Largest input slice per call: a zstd block cannot expand beyond 128 KiB and
# needs at least 3 bytes, so 256 bytes of input yield at most ~11 MiB before
# the limit is checked (2 KiB slices allowed ~85 MiB past it; no measurable
# speed difference on the corpus zstd files).
_SLICE = 256


class Decompressor:
    def __init__(self, limit: int) -> None:
        # (imported here: zstandard's C backend takes 11 ms to load, a
        # fortieth of a short run, and most recordings are not compressed)
        import zstandard
        self._error = zstandard.ZstdError
        self.limit = limit
        self._obj = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
        self._left = b""
        self.total_out = 0

    def feed(self, payload: bytes | memoryview) -> bytes:
        """Decompress one record's payload; return leftover + new bytes."""
        out = [self._left]
        produced = 0
        payload = memoryview(payload)
        try:
            for start in range(0, len(payload), _SLICE):
                chunk = self._obj.decompress(payload[start:start + _SLICE])
                produced += len(chunk)
                if produced > self.limit:
                    raise ValueError("decompressed data exceeds %d bytes for one record"
                                     % self.limit)
                out.append(chunk)
        except self._error as exc:
            raise ValueError(str(exc))
        self.total_out += produced
        self._left = b""
        return b"".join(out)

    def keep(self, rest: bytes | memoryview) -> None:
        """Bytes of a record cut at the end of a piece, for the next one."""
        self._left = bytes(rest)
