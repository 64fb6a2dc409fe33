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
#: walks from a frame to its stack's bottom kept per thread (cleared when
#: full), and the stacks known to have taught nothing new
WALKS_KEPT = 1024
STACKS_KEPT = 1024
#: the link of the outermost frame of a stack that reached its bottom
BOTTOM = ()
#: the link of a frame seen with two different callers
AMBIGUOUS = None
#: a frame's link: its CFA, its caller's pc, whether that pc is an
#: interrupted pc; or BOTTOM; or AMBIGUOUS
Link = tuple[int, int, bool] | tuple[()] | None
#: what complete() says
COMPLETED, REFUSED, MISSING = "completed", "ambiguous", "missing"
#: a walk along the links from a frame: what complete() says, and the CFAs,
#: pcs and interrupted pcs' positions (among those pcs) met on the way
Walk = tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]]


class OutwardLinks:
    """frame (CFA of its callee, return address) -> its caller's link:
    (the frame's CFA, the caller's pc, whether that pc is an interrupted pc
    rather than a return address), BOTTOM, or AMBIGUOUS."""
    __slots__ = ("links", "limit", "ambiguous_links", "walks", "stacks")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.links: dict[tuple[int, int], Link] = {}
        self.limit = limit
        # Links made AMBIGUOUS so far: a walk that reached a bottom holds
        # while it stays the same (a link once AMBIGUOUS stays so: a walk
        # refused holds for ever; one that stopped at a frame not known, or
        # not outward, is not kept: the frame may come, or turn ambiguous).
        self.ambiguous_links = 0
        # {the frame a walk started from: (ambiguous_links then, the Walk)}:
        # the cut stacks of a thread end at the same frames again and again
        # (a deep recursion: every sample), each walk a hundred links long.
        self.walks: dict[tuple[int, int], tuple[int, Walk]] = {}
        # The stacks added whose every link was known as they showed it
        # (adding one again changes nothing: a sample repeating the stack
        # of an earlier one is most samples of a loop).
        self.stacks: set[tuple] = set()

    def add(self, stack: UserStack) -> None:
        """Record the links a sample's own stack shows (frames 1 .. own-1)."""
        pcs, cfas, exact = stack.pcs, stack.cfas, stack.exact
        n = stack.own
        # (frame 0's pc is in no key or link: the leaf's ip may differ)
        if n == len(pcs):
            # (a sample's own stack, as every one is here: one copy less)
            shown = (tuple(pcs[1:]), tuple(cfas) if len(cfas) <= n else tuple(cfas[:n]),
                     exact, stack.bottom)
        else:
            shown = (tuple(pcs[1:n]), tuple(cfas[:n]), exact, False)
        if shown in self.stacks:
            return
        links = self.links
        room = self.limit - len(links)
        changed = False
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
                changed = True
                if room > 0:
                    links[key] = link
                    room -= 1
            elif old != link and old is not AMBIGUOUS:
                links[key] = AMBIGUOUS
                self.ambiguous_links += 1
                changed = True
        if not changed:
            if len(self.stacks) >= STACKS_KEPT:
                self.stacks.clear()
            self.stacks.add(shown)

    def complete(self, stack: UserStack) -> str:
        """Extend the cut `stack` in place to its bottom along the links
        from its outermost frame; COMPLETED, or REFUSED (an ambiguous frame
        on the way), or MISSING (a frame no sample showed the caller of);
        the stack is left as it was unless COMPLETED."""
        n = len(stack.pcs)
        key = (stack.cfas[n - 2], stack.pcs[n - 1])
        kept = self.walks.get(key)
        if kept is not None and (kept[0] == self.ambiguous_links or kept[1][0] == REFUSED):
            verdict, cfas, pcs, exact = kept[1]
        else:
            verdict, cfas, pcs, exact = walk = self._walk(key)
            if verdict != MISSING:
                if len(self.walks) >= WALKS_KEPT:
                    self.walks.clear()
                self.walks[key] = (self.ambiguous_links, walk)
        if cfas and len(stack.cfas) >= n and cfas[0] != stack.cfas[n - 1]:
            return REFUSED          # the cut frame's own CFA says otherwise
        if verdict != COMPLETED:
            return verdict
        stack.cfas = stack.cfas[:n - 1]
        stack.cfas.extend(cfas)
        stack.pcs.extend(pcs)
        if exact:
            stack.exact = stack.exact | frozenset(n + i for i in exact)
        stack.bottom = True
        return COMPLETED

    def _walk(self, key: tuple[int, int]) -> Walk:
        """Follow the links from the frame `key` to a stack's bottom."""
        pcs: list[int] = []
        cfas: list[int] = []
        exact: list[int] = []
        links = self.links
        verdict = COMPLETED
        while True:
            link = links.get(key, links)
            if link is links:
                verdict = MISSING
                break
            if link is AMBIGUOUS:
                verdict = REFUSED
                break
            if link == BOTTOM:
                break
            cfa, pc, is_exact = cast("tuple[int, int, bool]", link)
            if cfa <= key[0]:
                verdict = MISSING   # not outward (CFAs grow towards the bottom): no loop
                break
            cfas.append(cfa)
            if is_exact:
                exact.append(len(pcs))
            pcs.append(pc)
            key = (cfa, pc)
        return verdict, tuple(cfas), tuple(pcs), tuple(exact)

    def ambiguous(self, stack: UserStack) -> bool:
        """Was a frame among the stitched ones of `stack` (or the frame they
        were stitched to) seen with two callers?"""
        pcs, cfas, links = stack.pcs, stack.cfas, self.links
        for j in range(max(1, stack.own - 1), min(len(pcs), len(cfas) + 1)):
            if links.get((cfas[j - 1], pcs[j]), links) is AMBIGUOUS:
                return True
        return False
