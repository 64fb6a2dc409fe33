"""Build-ids: validation and the GNU build-id note.

A build-id becomes part of a path (`.build-id/ab/cdef...debug`), so it is
validated as plain hex before anything joins it to a directory.
"""
from __future__ import annotations

import re
import struct

from .errors import InvalidBuildIdError

_BUILD_ID_RE = re.compile(r"(?:[0-9a-f]{2}){1,32}\Z")

NT_GNU_BUILD_ID = 3


def normalize_build_id(value: str | bytes | None) -> str | None:
    """Lowercase hex str for a str/bytes build-id, or None if it is not valid.

    bytes are the raw note descriptor; a str may be upper case. perf.data pads
    20-byte SHA-1 ids to 24 bytes with zeros in old files; that trimming is the
    caller's business (it knows the recorded size).
    """
    if value is None:
        return None
    if type(value) is str:
        # Asked once per looked-up address with the same few build-ids.
        hit = _NORMALIZED.get(value, _MISSING)
        if hit is _MISSING:
            hit = _normalize(value)
            if len(_NORMALIZED) < 4096:
                _NORMALIZED[value] = hit
        return hit  # type: ignore[return-value]  # (no longer _MISSING: replaced above)
    return _normalize(value)


_NORMALIZED: dict[str, str | None] = {}
_MISSING = object()


def _normalize(value: str | bytes) -> str | None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).hex()
    if not isinstance(value, str):
        return None
    value = value.strip().lower()
    if value.startswith("0x"):
        value = value[2:]
    return value if _BUILD_ID_RE.match(value) else None


def is_valid_build_id(value: str | bytes | None) -> bool:
    return normalize_build_id(value) is not None


def require_build_id(value: str | bytes | None) -> str:
    """Like normalize_build_id but raises InvalidBuildIdError."""
    bid = normalize_build_id(value)
    if bid is None:
        raise InvalidBuildIdError(f"invalid build-id: {value!r}")
    return bid


def build_id_path_parts(build_id: str) -> tuple[str, str]:
    """('ab', 'cdef...') as used by every `.build-id/` directory layout."""
    bid = require_build_id(build_id)
    if len(bid) < 4:
        raise InvalidBuildIdError(f"build-id too short for a path: {bid!r}")
    return bid[:2], bid[2:]


def parse_build_id_notes(data: bytes, little_endian: bool = True) -> str | None:
    """Find NT_GNU_BUILD_ID in the raw bytes of a note section or segment.

    Written by hand rather than through pyelftools' note iterator so that a
    malformed note (sizes running past the end) ends the walk instead of raising.
    """
    fmt = "<III" if little_endian else ">III"
    off = 0
    end = len(data)
    while off + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from(fmt, data, off)
        off += 12
        name_end = off + namesz
        desc_off = off + ((namesz + 3) & ~3)
        desc_end = desc_off + descsz
        if name_end > end or desc_end > end:
            return None
        name = bytes(data[off:name_end]).rstrip(b"\0")
        if ntype == NT_GNU_BUILD_ID and name == b"GNU":
            return normalize_build_id(bytes(data[desc_off:desc_end]))
        off = desc_off + ((descsz + 3) & ~3)
    return None
