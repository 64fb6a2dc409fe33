"""The DWARF unwinder's compiled walk (perfdata/core/_unwind.c) under fuzz,
for tools/fuzz_compiled.py: a stack copy cut from an input in a buffer of
exactly its size (the sanitizer's red zone the byte after it), hostile
registers, and compact rows of hostile values and garbage bytes where the
glue (perfdata/resolve/unwinding.py) would give its own; the Python step
the walk falls back to stops it or goes on with hostile registers."""
from __future__ import annotations

import random
from array import array
from typing import Callable

HOSTILE = (0, 1, 2, 7, 8, 9, 15, 16, 63, 64, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
           0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 63, (1 << 64) - 1)
VALUES = HOSTILE + tuple(-v for v in HOSTILE[:12])


def _compact(rng: random.Random, word: Callable[[], int]) -> bytes | None:
    """A compact row: None, garbage bytes, or the glue's layout with
    hostile columns, offsets, spans and counts."""
    pick = rng.random()
    if pick < 0.1:
        return None
    if pick < 0.3:
        return bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 7, 48, 56, 64, 80))))
    n = rng.choice((0, 1, 2, 3, 200)) if rng.random() < 0.9 else rng.choice(VALUES)
    pairs = []
    for _ in range(min(max(n, 0), 8)):
        pairs += [rng.choice((rng.randrange(70), rng.choice(VALUES))),
                  rng.choice((rng.randrange(-64, 64), word()))]
    head = [rng.choice((7, 6, 31, 29, rng.randrange(-2, 70))), rng.choice((8, 16, -8, word())),
            rng.choice((-16, -8, 0, word())), rng.choice((8, 16, 24, word())),
            rng.randrange(4), n]
    return array("q", [(v + (1 << 63)) % (1 << 64) - (1 << 63) for v in head + pairs]).tobytes()


def fuzz_walk(module: object, data: bytes, rng: random.Random,
              exact_buffer: Callable[[bytes], tuple[int, memoryview]],
              free: Callable[[int], None]) -> None:
    """One call of module.walk (perfdata.core._unwind) on a stack copy cut
    from `data`."""
    from perfdata.resolve.unwinding import compiled_walk_consts
    from symbolize.unwind.unwinder import RETURN_ADDRESS, UnwindStop, Unwinder
    consts = compiled_walk_consts(Unwinder.for_arch(rng.choice(("x86_64", "aarch64"))))
    assert consts is not None

    def word() -> int:
        return rng.choice(VALUES) if rng.random() < 0.5 else rng.getrandbits(64)
    rows = {rng.getrandbits(16): _compact(rng, word) for _ in range(rng.randrange(4))}
    regs = {rng.randrange(70) if rng.random() < 0.9 else rng.choice(VALUES): word()
            for _ in range(rng.randrange(20))}
    if rng.random() < 0.8:
        regs[consts[0]] = rng.getrandbits(16)       # (sp, near the copy's base)
    cut = rng.randrange(len(data) + 1)
    n = min(len(data) - cut, rng.choice((0, 8, 16, 64, 4096, 8192)) + rng.randrange(16))
    base = rng.choice((0, rng.getrandbits(16), (1 << 64) - n - 1))

    def fill(lookup: int) -> bytes | None:
        got = _compact(rng, word)
        if rng.random() < 0.5:
            rows[lookup] = got
        return got

    def step(ip: int, regs: dict[int, int], kind: str, read_stack: object,
             find: object) -> tuple[int, dict[int, int], str, int]:
        if rng.random() < 0.6:
            raise UnwindStop("bad-cfi", ip, "fuzz", cfa=rng.choice((None, word())))
        return (rng.choice((word(), 0, -1, 1 << 70)),
                {rng.randrange(70): word() for _ in range(rng.randrange(8))},
                RETURN_ADDRESS, word())
    ptr, stack = exact_buffer(data[cut:cut + n])
    try:
        module.walk(step, None, None, rows, fill,  # type: ignore[attr-defined]
                    rng.choice((word(), 0, 1)), regs, stack, base, rng.choice((1, 2, 127)),
                    [], [], [], [], consts)
    finally:
        stack.release()
        free(ptr)
