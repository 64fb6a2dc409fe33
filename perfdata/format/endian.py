"""Integer field types for one byte order.

The byte order is read once, from the magic, and every schema of a file is built
from the matching `Ints` (pyelftools' structs work the same way).
"""
from __future__ import annotations

import functools

import construct as cs


class Ints:
    """The construct integer types of one byte order."""

    def __init__(self, little: bool) -> None:
        self.little = little
        self.prefix = "<" if little else ">"
        if little:
            self.u8, self.u16, self.u32, self.u64 = cs.Int8ul, cs.Int16ul, cs.Int32ul, cs.Int64ul
            self.s32, self.s64 = cs.Int32sl, cs.Int64sl
        else:
            self.u8, self.u16, self.u32, self.u64 = cs.Int8ub, cs.Int16ub, cs.Int32ub, cs.Int64ub
            self.s32, self.s64 = cs.Int32sb, cs.Int64sb
        self.s8 = cs.Int8sb
        self.s16 = cs.Int16sl if little else cs.Int16sb


@functools.lru_cache(maxsize=None)
def ints(little: bool = True) -> Ints:
    return Ints(little)
