"""Whether a cache is worth keeping, from how often its lookups hit.

Caches of whole stacks pay for themselves only where stacks repeat (a hot
loop, DWARF stacks shared by their address space); where they do not (make:
every process its own address space, garbage return addresses) keying and
keeping them costs more than the hits save.  A HitRate decides per window of
lookups: the cache is kept while at least a quarter of them hit; while it is
not, one lookup in 16 still goes through it (a probe), to notice when stacks
start to repeat again.
"""
from __future__ import annotations


class HitRate:
    """keeping: whether the cache is in use now.  A caller looks a key up
    when `keeping or probe()`, then tells looked_up(hit)."""
    __slots__ = ("keeping", "window", "_probes", "_lookups", "_hits")

    def __init__(self, window: int) -> None:
        self.keeping = True
        self.window = window            # lookups per decision
        self._probes = self._lookups = self._hits = 0

    def probe(self) -> bool:
        """Whether a lookup met while the cache is not kept goes through it
        (1 in 16)."""
        self._probes += 1
        return not self._probes & 15

    def looked_up(self, hit: bool) -> None:
        """Count one lookup; at the end of a window, decide."""
        self._lookups += 1
        if hit:
            self._hits += 1
        if self._lookups >= self.window:
            # a quarter of hits pays for the keying of the misses
            self.keeping = self._hits * 4 >= self._lookups
            self._lookups = self._hits = 0
