"""The file header of perf.data (file and pipe mode) and the feature section table."""
from __future__ import annotations

import functools

import construct as cs

from .endian import ints

FILE_HEADER_SIZE = 104
PIPE_HEADER_SIZE = 16
#: Header size of the oldest files, which had no feature bitmap.
FILE_HEADER_SIZE_NO_FEATURES = 72


@functools.lru_cache(maxsize=None)
def file_section_schema(little: bool = True) -> cs.Struct:
    i = ints(little)
    return cs.Struct("offset" / i.u64, "size" / i.u64)


@functools.lru_cache(maxsize=None)
def file_header_schema(little: bool = True) -> cs.Struct:
    """struct perf_file_header (tools/perf/util/header.h)."""
    i = ints(little)
    section = file_section_schema(little)
    return cs.Struct(
        "magic" / cs.Bytes(8),
        "size" / i.u64,
        "attr_size" / i.u64,
        "attrs" / section,
        "data" / section,
        "event_types" / section,
        # The feature bitmap is kept as raw bytes: how to read it from a file of
        # the other byte order is a guess perf makes (see feature_bits()).
        "adds_features" / cs.Bytes(32),
    )


@functools.lru_cache(maxsize=None)
def pipe_header_schema(little: bool = True) -> cs.Struct:
    i = ints(little)
    return cs.Struct("magic" / cs.Bytes(8), "size" / i.u64)


@functools.lru_cache(maxsize=None)
def feature_table_schema(count: int, little: bool = True) -> cs.Array:
    """The array of perf_file_section after the data, one per set feature bit."""
    return cs.Array(count, file_section_schema(little))


@functools.lru_cache(maxsize=None)
def _bitmap_words(little: bool, width: int) -> cs.Array:
    i = ints(little)
    word = i.u64 if width == 64 else i.u32
    return cs.Array(256 // width, word)


def feature_bits(bitmap: bytes, little: bool = True) -> list[int]:
    """The set feature numbers of the header bitmap, read as perf reads it.

    The bitmap is an array of unsigned longs of the recording machine.  For a
    file of our byte order that is plain; for the other byte order perf tries
    64-bit words, then 32-bit words, and keeps the one where HOSTNAME (always
    set since 2012) is set; else it assumes only BUILD_ID.
    """
    def bits_of(width: int) -> list[int]:
        words = _bitmap_words(little, width).parse(bitmap)
        return [w * width + b for w, value in enumerate(words)
                for b in range(width) if value >> b & 1]

    if little:
        return bits_of(64)
    for width in (64, 32):
        bits = bits_of(width)
        if 3 in bits:
            return bits
    return [2]
