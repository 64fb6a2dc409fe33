"""Completing the DWARF stacks that perf's stack snapshot cut, from the same
thread's other samples.

`perf record --call-graph=dwarf` copies a fixed amount of user stack (8 KiB
by default) per sample; a deeper stack's unwind stops at the end of the copy
(`stack-exhausted`).  The outer frames are usually still there in the
thread's other samples: a frame is the same physical frame in two samples
when it lies at the same stack address (its CFA) with the same return
address, as long as the thread did not return past it in between.  Then the
callers above it are the same too, and they can be taken from the other
sample, which may itself have been completed that way (the chain is followed
outward from sample to sample until a stack bottom).

What counts as "did not return past it": every sample of the thread taken
between the two either does not reach that far up the stack (it is deeper
and cut below it), or shows the same frame there.  A sample whose stack
pointer lies above the frame (the thread was shallower), or whose stack
spans that address without that frame (another call chain, another stack),
breaks the link.  Returns and re-entries that no sample saw cannot be seen
from the neighbours in time; what shows them is the thread's other
samples: a frame (CFA, return address) seen with two different callers.

So a second rule, across calls (outward_links.py): every frame the thread's
samples showed, earlier or later (up to the look-ahead's end), with the
frame just outward of it.  A cut stack no neighbour completed is completed
along those links from its outermost frame, sample to sample (deep ->
middle -> shallow); and no stack, however completed, is stitched through a
frame seen with two callers (refused: "ambiguous").  A cut sample is
therefore held back until the look-ahead ends.  Never stitched: across an
exec or a thread's exit (its state is dropped), or at a frame whose return
address or CFA differs.

Streaming, with bounded memory: per thread, its links (a bounded table),
the latest stack as far as it is known (`UserStack`, at most a few hundred words; and up to three older ones
that the samples since lay entirely below: the thread's own stack while it
ran a coroutine on a lower one), and a bounded look-ahead,
a queue of at most `lookahead` items (samples and side events, in their
order) held back while a cut sample at its head waits for a later sample of
its thread that shows its outer frames.

Knows nothing of symbols: a `finish(sample, stack)` callback turns the
frames found into printed ones.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from .outward_links import COMPLETED, REFUSED, OutwardLinks

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Sequence

    from symbolize.unwind.unwinder import UnwindResult

#: stop reasons of an unwind that reached the real end of its stack
BOTTOM_REASONS = frozenset(("outermost",))
#: the stop reason of a stack cut by the snapshot
CUT_REASON = "stack-exhausted"
#: items held back at most, waiting for later samples that complete a cut one
DEFAULT_LOOKAHEAD = 4096
#: why a cut stack was not completed
NOT_COMPLETED_REASONS = (
    "too-short",        # the unwind found no return address to match
    "contradicted",     # the thread returned past the frame, or its stack changed there
    "unmatched",        # no other sample of the thread showed the frame before it ended
    "lookahead",        # the matching sample, if any, came after the look-ahead window
    "thread-end",       # the thread exited or exec'd with the stack still open
    "ambiguous",        # the thread's samples showed a frame on the way with two callers
)

_NO_EXACT: frozenset[int] = frozenset()

# What a comparison of a cut stack with another sample's stack concludes.
_EXTENDED, _CONTRADICTS, _NO_INFO = "extended", "contradicts", "no-info"


class UserStack:
    """A user stack as the stitcher sees it: the raw frame addresses, leaf
    first (the ip, then return addresses), and their CFAs.

    pcs[i] is frame i's address; cfas[i] its CFA (the caller's sp after the
    return); cfas may be one shorter than pcs (the last frame's CFA was not
    computed).  The slot just below cfas[i] holds pcs[i + 1]: (cfas[i],
    pcs[i + 1]) names the physical frame i + 1 is called from.  exact: the
    indices of pcs that are interrupted pcs (after a signal frame), not
    return addresses.  bottom: the stack reaches its real end.  own: how many
    of pcs the sample's own unwind found (the others are stitched)."""
    __slots__ = ("pcs", "cfas", "exact", "sp", "bottom", "own")

    def __init__(self, pcs: Iterable[int], cfas: Sequence[int], sp: int,
                 exact: Iterable[int] = frozenset(), bottom: bool = False) -> None:
        self.pcs = list(pcs)
        self.cfas = list(cfas[:len(self.pcs)])
        self.sp = sp
        self.exact = frozenset(exact)
        self.bottom = bottom
        self.own = len(self.pcs)

    @classmethod
    def of_unwind(cls, result: UnwindResult, max_stack: int) -> UserStack:
        """The UserStack of an unwind (its first max_stack frames), which
        takes the unwind's own lists, not copies (nothing changes them: the
        stitcher copies a stack before it extends it): one is made for
        every sample."""
        s = cls.__new__(cls)
        pcs = s.pcs = result.frames if len(result.frames) <= max_stack else \
            result.frames[:max_stack]
        cfas = result.cfas
        s.cfas = cfas if len(cfas) <= len(pcs) else cfas[:len(pcs)]
        s.sp = result.sp  # type: ignore[assignment]  # (the caller's: not None)
        exact = result.exact_ip_frames
        s.exact = frozenset(exact) if exact else _NO_EXACT
        s.bottom = result.stop_reason in BOTTOM_REASONS
        s.own = len(pcs)
        return s

    def linkable(self) -> bool:
        """Has a return address whose slot's address is known: can be matched."""
        return len(self.pcs) >= 2 and len(self.cfas) >= len(self.pcs) - 1

    def top(self) -> int:
        """The highest stack address the known frames reach."""
        return max(self.cfas, default=self.sp)

    def copy(self) -> UserStack:
        c = UserStack.__new__(UserStack)
        c.pcs, c.cfas, c.sp = list(self.pcs), list(self.cfas), self.sp
        c.exact, c.bottom, c.own = self.exact, self.bottom, self.own
        return c


def extend_from(cut: UserStack, other: UserStack) -> str:
    """Compare the cut stack `cut` with `other`, another sample's stack of the
    same thread (taken just before or just after it, with no sample between
    that was not compared): extend `cut` in place with the frames `other`
    knows beyond the outermost return address of `cut`, when `other` shows
    that frame at the same place; say whether `other` contradicts it.

    The link: frame n-1 of `cut` (n = len(cut.pcs)) was called from the
    frame whose CFA is cut.cfas[n-2], with return address cut.pcs[n-1]."""
    n = len(cut.pcs)
    link_cfa = cut.cfas[n - 2]
    link_ra = cut.pcs[n - 1]
    if other.sp >= link_cfa:
        # The other sample's thread was shallower: the frame at link_cfa did
        # not exist then (it was returned from, or not yet made).
        return _CONTRADICTS
    m = len(other.pcs)
    try:
        at = other.cfas.index(link_cfa, 0, m)
    except ValueError:
        if other.top() > link_cfa:
            # Its frames span that address without a frame boundary there.
            return _CONTRADICTS
        # Deeper and cut below it, or another stack (a coroutine's) whose
        # frames all lie below it: says nothing about it.
        return _NO_INFO
    if at == m - 1:
        return _NO_INFO             # cut at the same frame: its return address unknown too
    if other.pcs[at + 1] != link_ra:
        return _CONTRADICTS         # another caller at that place
    if len(cut.cfas) >= n and len(other.cfas) > at + 1 and cut.cfas[n - 1] != other.cfas[at + 1]:
        return _CONTRADICTS         # the caller's frame is not the same size
    # other's frame at+1 is cut's frame n-1: take what lies beyond it.
    shift = (n - 1) - (at + 1)
    cut.cfas = cut.cfas[:n - 1] + other.cfas[at + 1:]
    cut.pcs.extend(other.pcs[at + 2:])
    if other.exact:
        cut.exact = cut.exact | {j + shift for j in other.exact if j >= at + 2}
    cut.bottom = other.bottom
    return _EXTENDED


def _elsewhere(later: UserStack, earlier: UserStack) -> bool:
    """Does the later stack lie on another stack than `earlier`, certainly:
    entirely below it, or entirely above the end of a stack known to its
    bottom?  (Asked of every sample: top()'s max is taken only where a
    frame's CFA does not answer first.)"""
    cfas = later.cfas
    if not (cfas and cfas[-1] >= earlier.sp) and later.top() < earlier.sp:
        return True
    if not earlier.bottom:
        return False
    cfas = earlier.cfas
    return not (cfas and later.sp <= cfas[-1]) and later.sp > earlier.top()


def _extend_from_recent(cut: UserStack, recent: list[UserStack]) -> str:
    """Extend a cut stack from the thread's recent stacks, latest first.  One
    that lies on another stack says nothing: entirely below the link, or
    above the end of an older complete stack that holds the link (the
    thread's other stack ran in between; a coroutine's and the main one)."""
    for i, earlier in enumerate(recent):
        verdict = extend_from(cut, earlier)
        if verdict == _NO_INFO:
            continue
        if verdict == _CONTRADICTS and _above_its_stack(cut, earlier, recent[i + 1:]):
            continue
        return verdict
    return _NO_INFO


def _above_its_stack(cut: UserStack, other: UserStack, known: Iterable[UserStack]) -> bool:
    """Does `other` lie above the end of the stack holding the link of
    `cut`, as one of the `known` complete stacks shows that stack's end?
    (A stack's end does not move: the main stack's, a thread's, a
    coroutine's.)"""
    link_cfa = cut.cfas[len(cut.pcs) - 2]
    return any(r.bottom and r.sp < link_cfa <= r.top() < other.sp for r in known)


class _Held:
    """An item in the look-ahead queue: a sample (with its working stack
    while it is cut and open) or a side event."""
    __slots__ = ("item", "thread", "stack", "open", "waiting")

    # item: a sample or anything else of the run, handed back as it is
    def __init__(self, item: Any, thread: Hashable | None = None,
                 stack: UserStack | None = None, open_: bool = False) -> None:
        self.item = item
        self.thread = thread
        # (None only for an item never open: the groups, finish() and the
        # comparisons see open ones only)
        self.stack: UserStack = stack  # type: ignore[assignment]
        self.open = open_
        # Open, but no neighbour in time completes it (why): it waits for
        # its thread's links (outward_links.py).
        self.waiting: str | None = None

    def grouped(self) -> bool:
        """Still compared with the samples that follow."""
        return self.open and self.waiting is None


def _drop_settled(pending: deque[_Held]) -> None:
    """Let the samples settled at the left of a thread's pending ones go:
    they settle in the queue's order, nearly the order they began to wait
    in, and each holds its sample (and the record's buffer) alive; kept
    until the list grew to twice the look-ahead, the threads' lists held
    several times the look-ahead's samples."""
    while pending and not pending[0].open:
        pending.popleft()


#: stacks of one thread remembered at once (its own, a coroutine's ...)
RECENT_STACKS = 4


class _ThreadState:
    __slots__ = ("recent", "open", "links", "pending")

    def __init__(self) -> None:
        # The latest sample's UserStack (as far as known) first, then older
        # ones that every later sample lay entirely below: another stack
        # (a coroutine's) ran in between, and said nothing about them.
        self.recent: list[UserStack] = []
        # The thread's cut samples still open, by their link (_link_key):
        # those with the same link fare alike, compared once per sample (a
        # thread that stays deep has thousands).  Closed ones leave lazily.
        self.open: dict[tuple[int, int, int | None], deque[_Held]] = {}
        # Every frame its samples showed, with what lies outward of it.
        self.links = OutwardLinks()
        # Cut samples no neighbour in time completed, waiting (in the
        # queue) for the links of the samples up to the look-ahead's end;
        # those settled leave from the left (see _wait).
        self.pending: deque[_Held] = deque()


def _link_key(stack: UserStack) -> tuple[int, int, int | None]:
    """What extend_from() looks at in a cut stack: its outermost return
    address, the CFA below which it lies, the caller's CFA if known."""
    n = len(stack.pcs)
    return (stack.cfas[n - 2], stack.pcs[n - 1],
            stack.cfas[n - 1] if len(stack.cfas) >= n else None)


def _remember(state: _ThreadState, latest: UserStack) -> None:
    """The thread's latest stack first in its recent ones; an older one
    stays while `latest` lies on another stack than it (see _elsewhere)."""
    recent = state.recent
    if not recent:
        recent.append(latest)
        return
    if len(recent) == 1:
        # (most threads have one stack: the list is kept, not made anew)
        if _elsewhere(latest, recent[0]):
            recent.insert(0, latest)
        else:
            recent[0] = latest
        return
    state.recent = [latest] + [r for r in recent if _elsewhere(latest, r)][:RECENT_STACKS - 1]


def _extend_like(stack: UserStack, extended: UserStack, before: int) -> None:
    """Give `stack` (same link as `extended` had) what extend_from() added to
    `extended`, which had `before` frames."""
    n = len(stack.pcs)
    stack.cfas = stack.cfas[:n - 1] + extended.cfas[before - 1:]
    stack.pcs.extend(extended.pcs[before:])
    if extended.exact:
        stack.exact = stack.exact | {j - before + n for j in extended.exact if j >= before}
    stack.bottom = extended.bottom


class StackStitcher:
    """Feed it every item of a run in order (`add_sample`, `add_other`,
    `end_thread`), take back the items ready to go out (`ready`), and at the
    end `close()` then `ready()` for the rest.  finish(sample, stack) is
    called for each cut sample completed (stack.pcs beyond stack.own are the
    stitched frames)."""

    def __init__(self, finish: Callable[[Any, UserStack], object],
                 lookahead: int = DEFAULT_LOOKAHEAD) -> None:
        self.finish = finish
        self.lookahead = max(1, lookahead)
        self._queue: deque[_Held] = deque()
        self._threads: dict[Hashable, _ThreadState] = {}
        # completed-from-later: of the completed, those a later sample completed
        # completed-from-links: of the completed, those the links of the
        # thread's samples completed (no neighbour in time did)
        self.counts = {"cut": 0, "completed": 0, "completed-from-later": 0,
                       "completed-from-links": 0}
        for reason in NOT_COMPLETED_REASONS:
            self.counts["not-completed:" + reason] = 0

    def not_completed(self) -> int:
        return sum(v for k, v in self.counts.items() if k.startswith("not-completed:"))

    # ------------------------------------------------------------ input
    def add_other(self, item: Any) -> None:
        self._queue.append(_Held(item))
        self._bound()

    def add_sample(self, sample: Any, thread: Hashable, stack: UserStack | None,
                   stop_reason: str | None, shown: bool = True) -> None:
        """thread: a key naming the thread (pid, tid); stack: the sample's
        UserStack, or None when it has no unwound user stack.  shown=False:
        a sample the filters (--time, --cpu, -S ...) leave out, which still
        says what the thread's stack was then (it is not handed back)."""
        if self.take_sample(sample, thread, stack, stop_reason, shown):
            self._queue.append(_Held(sample))

    def take_sample(self, sample: Any, thread: Hashable, stack: UserStack | None,
                    stop_reason: str | None, shown: bool = True) -> bool:
        """add_sample(), but a sample that nothing holds back (none before
        it in the queue, itself not cut) is not queued: True says so, and
        that the caller hands it out now (most samples, most of the time:
        they skip the queue's work)."""
        if stack is None:
            return self._out_or_held(sample, thread, shown)
        state = self._threads.get(thread)
        if state is None:
            state = self._threads[thread] = _ThreadState()
        state.links.add(stack)      # (before `stack` names a working copy)
        if stop_reason == CUT_REASON:
            self._add_cut(_Held(sample, thread), stack, shown, state)
            return False
        # This sample is the "just after" of the thread's open cut samples.
        if state.open:
            self._compare_open(state, stack)
        recent = state.recent
        if len(recent) == 1 and not _elsewhere(stack, recent[0]):
            recent[0] = stack       # (_remember's commonest case, inline)
        else:
            _remember(state, stack)
        return self._out_or_held(sample, thread, shown)

    def _out_or_held(self, sample: Any, thread: Hashable, shown: bool) -> bool:
        """take_sample()'s answer for a sample that is not cut: handed out
        now (True) where nothing before it is held, else queued behind."""
        if not shown:
            return False
        if not self._queue:
            return True
        self._queue.append(_Held(sample, thread))
        self._bound()
        return False

    def _add_cut(self, held: _Held, stack: UserStack, shown: bool, state: _ThreadState) -> None:
        """take_sample() of a sample whose stack the snapshot cut."""
        if not shown:
            if stack.linkable():
                stack = stack.copy()
                _extend_from_recent(stack, state.recent)
                held.stack = stack
        else:
            self._queue.append(held)
            self.counts["cut"] += 1
            if not stack.linkable():
                self._close(held, "too-short")
            else:
                stack = stack.copy()
                _extend_from_recent(stack, state.recent)
                held.stack = stack
                held.open = True
                if stack.bottom:
                    self._wait(held, "completed", state)
        # This sample is the "just after" of the thread's open cut samples.
        if state.open:
            self._compare_open(state, stack)
        if held.open:
            self._add_open(state, deque((held,)))
        _remember(state, held.stack if held.stack is not None else stack)
        self._bound()

    def _compare_open(self, state: _ThreadState, stack: UserStack) -> None:
        """Extend the thread's open cut samples from `stack`, the sample
        just after them, or learn that it contradicts them.  A group that
        `stack` says nothing of stays where it is (most do, the sample
        being deeper); one whose link changed is filed again afterwards."""
        moved = []
        for key, members in list(state.open.items()):
            while members and not members[0].grouped():
                members.popleft()
            if not members:
                del state.open[key]
                continue
            first = members[0].stack
            before = len(first.pcs)
            verdict = extend_from(first, stack)
            if verdict == _NO_INFO:
                continue
            del state.open[key]
            if verdict == _EXTENDED and len(first.pcs) == before and not first.bottom:
                moved.append(members)       # (its caller's CFA learnt, at most)
                continue
            for other in members:
                if not other.grouped():
                    continue
                if verdict == _CONTRADICTS:
                    self._wait(other, "contradicted", state)
                    continue
                if other.stack is not first:
                    _extend_like(other.stack, first, before)
                if first.bottom:
                    self._wait(other, "completed-from-later", state)
            if verdict == _EXTENDED and not first.bottom:
                moved.append(members)
        for members in moved:
            self._add_open(state, members)

    def end_thread(self, thread: Hashable) -> None:
        """The thread exited or exec'd: its open stacks stay cut, its state
        goes (a new thread or image with the same tid starts afresh)."""
        state = self._threads.pop(thread, None)
        if state is not None:
            self._settle_all(state, "thread-end")

    def close(self) -> None:
        """The end of the input: what is still open stays cut."""
        for state in self._threads.values():
            self._settle_all(state, "unmatched")

    # ----------------------------------------------------------- output
    def ready(self) -> list[Any]:
        """The items at the head of the queue no longer waited for, in order."""
        queue = self._queue
        out = []
        while queue and not queue[0].open:
            out.append(queue.popleft().item)
        return out

    # ---------------------------------------------------------- helpers
    def _bound(self) -> None:
        # The look-ahead is full: the oldest open sample stays cut.
        while len(self._queue) > self.lookahead:
            head = self._queue[0]
            if not head.open:
                return      # ready() takes it
            # (its group drops it lazily)
            state = self._threads.get(head.thread)
            self._settle(head, head.waiting or "lookahead", state)
            if state is not None:
                _drop_settled(state.pending)

    @staticmethod
    def _add_open(state: _ThreadState, members: deque[_Held]) -> None:
        """File open cut samples (a deque, the same link) under their link."""
        key = _link_key(members[0].stack)
        group = state.open.get(key)
        if group is None:
            state.open[key] = members
        else:
            group.extend(m for m in members if m.grouped())

    def _wait(self, held: _Held, reason: str, state: _ThreadState) -> None:
        held.waiting = reason
        state.pending.append(held)
        if len(state.pending) > 2 * self.lookahead:
            # (those settled leave; at most `lookahead` are open)
            state.pending = deque(h for h in state.pending if h.open)

    def _settle(self, held: _Held, reason: str, state: _ThreadState | None) -> None:
        """No more samples for `held` to wait for: complete it from its
        thread's links, or it stays cut (for `reason`, or as ambiguous).
        One a neighbour in time completed stands unless a frame on the
        way had two callers in the thread's samples (a return and a call
        from elsewhere between two samples looks like no return)."""
        if held.stack.bottom:
            if state is not None and state.links.ambiguous(held.stack):
                self._close(held, "ambiguous")
                return
            if reason == "completed-from-later":
                self.counts[reason] += 1
            self._complete(held)
            return
        verdict = state.links.complete(held.stack) if state is not None else None
        if verdict == COMPLETED:
            self.counts["completed-from-links"] += 1
            self._complete(held)
        else:
            self._close(held, "ambiguous" if verdict == REFUSED else reason)

    def _settle_all(self, state: _ThreadState, reason: str) -> None:
        for members in state.open.values():
            for held in members:
                if held.grouped():
                    self._settle(held, reason, state)
        for held in state.pending:
            if held.open:
                self._settle(held, held.waiting or reason, state)
        state.open, state.pending = {}, deque()

    def _complete(self, held: _Held) -> None:
        held.open = False
        self.counts["completed"] += 1
        self.finish(held.item, held.stack)

    def _close(self, held: _Held, reason: str) -> None:
        held.open = False
        self.counts["not-completed:" + reason] += 1
