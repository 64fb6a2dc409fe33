"""The evidence --stitch completes a cut stack from when no sample next to it
in time does: for one thread (one exec of it), every physical frame any of
its samples showed, with the frame just outward of it.

A frame is named by where its return address lies and what it is: the CFA
of the frame it called (the slot just below that CFA holds the return
address) and the return address itself, which lies in the frame's
function.  Two samples that show the same name show the same frame as far
as the stack's addresses can tell, whether or not the thread returned past
it in between (a recursion that returns to its loop and descends again
makes the same frames at the same places).  What lies outward of a frame is
recorded one link at a time (the caller's CFA and the caller's caller's
return address); a cut stack is completed by following the links from its
outermost frame to a stack's bottom, through frames that other samples
showed (deep -> middle -> shallow).  A frame seen with two different
callers (the same recursion reached from two callers at the same depth) is
ambiguous: no stack is completed through it.

Bounded: at most `limit` frames per thread; past that, new frames are not
recorded (stacks needing them stay cut), and those recorded still learn of
contradictions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from .stitch import UserStack

#: frames remembered per thread at most (a few MB)
DEFAULT_LIMIT = 1 << 15
#: the link of the outermost frame of a stack that reached its bottom
BOTTOM = ()
#: the link of a frame seen with two different callers
AMBIGUOUS = None
#: a frame's link: its CFA, its caller's pc, whether that pc is an
#: interrupted pc; or BOTTOM; or AMBIGUOUS
Link = tuple[int, int, bool] | tuple[()] | None
#: what complete() says
COMPLETED, REFUSED, MISSING = "completed", "ambiguous", "missing"


class OutwardLinks:
    """frame (CFA of its callee, return address) -> its caller's link:
    (the frame's CFA, the caller's pc, whether that pc is an interrupted pc
    rather than a return address), BOTTOM, or AMBIGUOUS."""
    __slots__ = ("links", "limit")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.links: dict[tuple[int, int], Link] = {}
        self.limit = limit

    def add(self, stack: UserStack) -> None:
        """Record the links a sample's own stack shows (frames 1 .. own-1)."""
        pcs, cfas, exact = stack.pcs, stack.cfas, stack.exact
        n = min(stack.own, len(pcs))
        links = self.links
        room = self.limit - len(links)
        for j in range(1, min(n, len(cfas) + 1)):
            if j + 1 < n:
                if j >= len(cfas):
                    break
                link: Link = (cfas[j], pcs[j + 1], j + 1 in exact)
            elif stack.bottom and n == len(pcs):
                link = BOTTOM
            else:
                break               # cut here: nothing known beyond
            key = (cfas[j - 1], pcs[j])
            old = links.get(key, links)
            if old is links:
                if room > 0:
                    links[key] = link
                    room -= 1
            elif old != link and old is not AMBIGUOUS:
                links[key] = AMBIGUOUS

    def complete(self, stack: UserStack) -> str:
        """Extend the cut `stack` in place to its bottom along the links
        from its outermost frame; COMPLETED, or REFUSED (an ambiguous frame
        on the way), or MISSING (a frame no sample showed the caller of);
        the stack is left as it was unless COMPLETED."""
        n = len(stack.pcs)
        key = (stack.cfas[n - 2], stack.pcs[n - 1])
        known_cfa = stack.cfas[n - 1] if len(stack.cfas) >= n else None
        pcs: list[int] = []
        cfas: list[int] = []
        exact: list[int] = []
        links = self.links
        while True:
            if key not in links:
                return MISSING
            link = links[key]
            if link is AMBIGUOUS:
                return REFUSED
            if link == BOTTOM:
                break
            cfa, pc, is_exact = cast("tuple[int, int, bool]", link)
            if cfa <= key[0]:
                return MISSING      # not outward (CFAs grow towards the bottom): no loop
            if known_cfa is not None:
                if cfa != known_cfa:
                    return REFUSED  # the cut frame's own CFA says otherwise
                known_cfa = None
            cfas.append(cfa)
            if is_exact:
                exact.append(n + len(pcs))
            pcs.append(pc)
            key = (cfa, pc)
        stack.cfas = stack.cfas[:n - 1] + cfas
        stack.pcs.extend(pcs)
        if exact:
            stack.exact = stack.exact | frozenset(exact)
        stack.bottom = True
        return COMPLETED

    def ambiguous(self, stack: UserStack) -> bool:
        """Was a frame among the stitched ones of `stack` (or the frame they
        were stitched to) seen with two callers?"""
        pcs, cfas, links = stack.pcs, stack.cfas, self.links
        for j in range(max(1, stack.own - 1), min(len(pcs), len(cfas) + 1)):
            if links.get((cfas[j - 1], pcs[j]), links) is AMBIGUOUS:
                return True
        return False
