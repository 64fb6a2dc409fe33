"""What a plausible record header looks like: the tables of the one rule.

"Is a record header plausible here?" is one rule (`RecordWalker.plausible`)
over one table of least sizes (`least_sizes`): a known type, at least its
least size, 8-byte aligned where records are.  Recovery (resync, the
look-ahead after a suspect record) asks it; the walk's fast path inlines the
same test on a copy of the table (walker.py), and the compiled core reads
the same tables (perfdata/core/records.py).
"""
from __future__ import annotations

import re

import construct as cs

from .constants import RecordType as RT, USER_TYPE_START
from .records import body_schemas

# Recovery (strict=False): what a plausible record header looks like.
KNOWN_TYPES = frozenset(int(t) for t in RT)
# Fixed body bytes of the kernel records (before strings and the trailer).
MIN_BODY: dict[int, int] = {RT.MMAP: 32, RT.LOST: 16, RT.COMM: 8, RT.EXIT: 24, RT.THROTTLE: 24,
                            RT.UNTHROTTLE: 24, RT.FORK: 24, RT.READ: 16, RT.MMAP2: 64, RT.AUX: 24,
                            RT.ITRACE_START: 8, RT.LOST_SAMPLES: 8, RT.SWITCH_CPU_WIDE: 8,
                            RT.NAMESPACES: 16, RT.KSYMBOL: 16, RT.BPF_EVENT: 16, RT.CGROUP: 8,
                            RT.TEXT_POKE: 12, RT.AUX_OUTPUT_HW_ID: 8}
# Types the inlined checks leave to the slow path, which asks `plausible`:
# COMPRESSED records may have any size (the inlined checks test the 8-byte
# alignment of every size), AUXTRACE and HEADER_TRACING_DATA carry a payload
# after them.
CAREFUL_ONLY = frozenset((RT.COMPRESSED, RT.COMPRESSED2, RT.AUXTRACE,
                          RT.HEADER_TRACING_DATA))


def _name_offsets() -> dict[int, int]:
    """Where the name starts in the body of the records that end with one
    (MMAP, MMAP2, COMM): the size of the fields before it, by their schemas."""
    schemas = body_schemas(True)
    out = {}
    for rtype, name in ((RT.MMAP, "filename"), (RT.MMAP2, "filename"), (RT.COMM, "comm")):
        fields = schemas[rtype].subcons
        before = next(i for i, sub in enumerate(fields) if sub.name == name)
        out[int(rtype)] = cs.Struct(*fields[:before]).sizeof()
    return out


# {MMAP, MMAP2, COMM: where the name starts in the body}
NAME_OFFSETS: dict[int, int] = _name_offsets()


def _type_pattern(little: bool) -> re.Pattern[bytes]:
    """A regex matching the u32 type field of every known record type: resync
    tests only its matches (C speed over garbage; the same positions)."""
    types = sorted(KNOWN_TYPES)
    if types[-1] > 0xFF:
        return re.compile(b"(?s)....")
    cls = b"[" + b"".join(re.escape(bytes([t])) for t in types) + b"]"
    return re.compile(cls + b"\0\0\0" if little else b"\0\0\0" + cls)


# {little endian: the pattern}
TYPE_PATTERNS = {True: _type_pattern(True), False: _type_pattern(False)}


def named_size(buf: bytes, start: int, rtype: int, size: int, trailer: int) -> int | None:
    """The size an MMAP, MMAP2 or COMM record of `size` bytes at buf[start]
    accounts for: its header and body up to its name, the name padded to 8
    bytes, and the sample_id trailer of `trailer` bytes; None when the name
    has no terminator in the record (a size well past it may hide the next
    records: see RecordWalker._check_string_record)."""
    at = 8 + NAME_OFFSETS[rtype]
    nul = buf.find(b"\0", start + at, start + min(size, at + 4104))
    if nul < 0:
        return None
    return at + (nul - start - at + 8) // 8 * 8 + trailer


def least_sizes(trailer: int) -> dict[int, int]:
    """{known type: least plausible record size}: the header, plus for kernel
    records their fixed body and (but for SAMPLE) the sample_id trailer of
    `trailer` bytes."""
    out = {}
    for rtype in KNOWN_TYPES:
        least = 8
        if rtype < USER_TYPE_START:
            least += MIN_BODY.get(rtype, 0) + (trailer if rtype != RT.SAMPLE else 0)
        out[rtype] = least
    return out
