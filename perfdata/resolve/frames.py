"""Frames of an address: the record of one printed line of a stack
(StackFrame), and the FrameResolver that makes them from the session's maps
and `symbolize/`: it finds the map of an address in the thread's address
space, asks its DsoResolver (dsos.py) for the binary behind it and its
JitSources (jit_sources.py) for a JIT's perf map or jitdump, turns the
symbolizer's answer into StackFrames, with DWARF inline chains and perf's
return-address rules, and keeps them in its StackCaches (stack_caches.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..format.constants import CallchainContext as CC, MISC_GUEST_KERNEL, MISC_HYPERVISOR, MISC_KERNEL
from ..session.machine import KERNEL_DSO
from .dsos import KERNEL_HALF, DsoResolver
from .jit_sources import JIT_PATHS, JitSources
from .stack_caches import StackCaches, all_in_code_maps

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from symbolize import KernelSymbols, Symbolizer
    from symbolize.symbols.lines import InlineFrame

    from ..session.machine import Machine
    from ..session.maps import Map, MapGroup
    from ..session.stream import Sample
    from .dsos import RecordedBinaries

KERNEL_MODES = (MISC_KERNEL, MISC_GUEST_KERNEL, MISC_HYPERVISOR)
# Outermost frames: nothing calls them, so what a frame-pointer walk finds
# past them is garbage (a makecontext coroutine's stack ends at
# __start_context, and perf walks on into unrelated memory).
STACK_BOTTOMS = frozenset(("_start", "__start_context", "clone", "clone3", "__clone",
                           "__clone3", "__GI___clone", "__GI___clone3"))
# Kernel entry points of interrupts and exceptions (x86): the frame after one
# is the interrupted address (pt_regs->ip), not a return address.
INTERRUPT_ENTRIES = ("asm_sysvec_", "asm_common_interrupt", "asm_exc_",
                     "asm_spurious_interrupt", "asm_fred_entry")
# perf's sysctl_perf_event_max_stack default.
DEFAULT_MAX_STACK = 127
_CC_MAX = CC.MAX
_KERNEL_CONTEXTS = (CC.KERNEL, CC.GUEST_KERNEL, CC.HV)
# The context markers a callchain may hold; any other value at or above
# CC.MAX is a garbage word of a frame-pointer walk (often -1), see
# _frames_for_callchain.
_CONTEXTS = frozenset(int(c) for c in CC if c != CC.MAX)
# Frames named by a JIT's own description, not by a binary: no DWARF to
# find inline chains in (asking for the "binary" //anon only warned).
_NO_DWARF_SOURCES = ("perfmap", "jitdump")
# The frames before a stitched stack's tail (FrameResolver.stitched_stack).
_NO_FRAMES: tuple[StackFrame, ...] = ()


@dataclass(slots=True, eq=False, repr=False)
class StackFrame:
    """One printed line of a stack (a record: its fields are its
    constructor's parameters, in this order; a frame equals itself only,
    as frames are shared by the stacks through an address)."""
    avma: int | None
    address: int                    # what perf prints: map-relative for user maps
    symbol: str | None              # None: [unknown]
    offset: int | None
    dso: str                        # display name, as perf prints it
    dso_path: str | None = None
    build_id: str | None = None
    source: str | None = None       # symtab dynsym plt minidebuginfo debuginfo kallsyms ...
    inlined: bool = False
    srcline: str | None = None
    kernel: bool = False
    is_return_address: bool = False
    # why a frame is unknown, for diagnosis: no-map, no-symbol, no-symbols
    # (its binary has none), kernel-mismatch
    note: str | None = None
    # taken from the thread's other samples to complete a cut stack (--stitch)
    stitched: bool = False
    # the address in the binary's own terms (objdump's), where known
    svma: int | None = None

    def __repr__(self) -> str:
        return "<%x %s+%s (%s)>" % (self.address, self.symbol, self.offset, self.dso)


class FrameResolver:
    """(address, the thread's maps) -> frames: the map and its binary, the
    symbolizer's answer as StackFrames, the inline chains of DWARF frames,
    kernel and JIT (perf map, jitdump) addresses; owns the caches of frames
    by address and of whole stacks.  One per run (or per worker process):
    it knows the session's Machine, not the file."""

    def __init__(self, machine: Machine, symbolizer: Symbolizer, recorded: RecordedBinaries,
                 warnings: list[str], max_stack: int = DEFAULT_MAX_STACK,
                 dwarf_inline: bool = True, counts: dict[str, int] | None = None) -> None:
        self.machine = machine
        self.symbolizer = symbolizer
        self.dsos = DsoResolver(machine, symbolizer, recorded, warnings)
        self.jit = JitSources(symbolizer)
        self.caches = StackCaches()
        # binary path -> build-id, as recorded (updated as MMAP2 records come)
        self.build_ids = recorded.build_ids
        # binary path -> its build-ids, for the paths recorded with several
        self.build_id_choices = recorded.build_id_choices
        self.warnings = warnings              # the run's warnings (a list to append to)
        self.max_stack = max_stack
        self.dwarf_inline = dwarf_inline
        self.counts = counts if counts is not None else {}
        # (the DsoResolver's, bound once: asked for every frame of a user map)
        self.dso_of = self.dsos.dso_of

    def leaf_frames(self, sample: Sample) -> Sequence[StackFrame]:
        """The frames of the sample's own ip (perf's machine__resolve()):
        what -S, --dsos look at."""
        if sample.ip is None:
            return ()
        return self.frames_for_address(sample, sample.ip, sample.cpumode in KERNEL_MODES,
                                       False)

    def dwarf_stack(self, sample: Sample, kernel_frames: Sequence[StackFrame],
                    user: Iterable[int], exact: tuple[int, ...]) -> list[StackFrame]:
        """The frames of a DWARF-unwound stack: the kernel part, then each
        user address with its inline chain (callers at address - 1, but the
        exact_ip ones).  Samples with the same unwound stack in the same
        address space share one frame list (and the views their text of it)."""
        user = tuple(user)
        keys = self._stack_keys(sample, ("dwarf", "dwarf-code"), kernel_frames, user, exact)
        hit = self._kept_stack(keys, kernel_frames)
        if hit is not None:
            return hit
        frames = list(kernel_frames)
        if user:
            # (stacks that differ in the leaf only, the sampled instruction,
            # share their callers' frames, kept as a stack is)
            frames.extend(self.dwarf_frames(sample, user[0], False))
            callers = user[1:]
            caller_keys = self._stack_keys(sample, ("dwarf-callers", "dwarf-callers-code"),
                                           _NO_FRAMES, callers, exact)
            kept = self._kept_stack(caller_keys, _NO_FRAMES)
            if kept is None:
                kept = []
                for i, avma in enumerate(callers, 1):
                    kept.extend(self.dwarf_frames(sample, avma, i not in exact))
                self._keep_stack(caller_keys, _NO_FRAMES, callers, kept)
            frames.extend(kept)
        self._keep_stack(keys, kernel_frames, user, frames)
        return frames

    def stitched_stack(self, sample: Sample, own: Sequence[StackFrame],
                       tail: tuple[int, ...], returns: tuple[bool, ...]) -> list[StackFrame]:
        """A cut stack completed (--stitch): its own frames, then those of
        the addresses `tail` taken from the thread's other samples, each
        marked stitched (returns: which of them are return addresses).  A
        thread's completed stacks end alike (the same outer frames after
        own frames that differ, if only by the leaf's ip): the frames of a
        tail are kept as dwarf_stack's stacks are, and the stitched frames
        of an address are shared by every stack through it (their printed
        lines made once)."""
        keys = self._stack_keys(sample, ("stitched", "stitched-code"), _NO_FRAMES, tail, returns)
        frames = self._kept_stack(keys, _NO_FRAMES)
        if frames is None:
            frames = []
            kept = self.caches.stitched
            for avma, is_return in zip(tail, returns):
                base = self.dwarf_frames(sample, avma, is_return)
                entry = kept.get(id(base))
                if entry is None or entry[0] is not base:
                    entry = (base, tuple(_stitched(f) for f in base))
                    self.caches.keep_stitched(id(base), entry)
                frames.extend(entry[1])
            self._keep_stack(keys, _NO_FRAMES, tail, frames)
        return [*own, *frames]

    def _stack_keys(self, sample: Sample, kinds: tuple[str, str], base: Sequence[StackFrame],
                    user: tuple[int, ...], flags: tuple) -> tuple[Any, tuple | None, tuple]:
        """(maps, key while the code maps stay, key while every map stays) of
        the stack of `user` addresses after the frames `base`."""
        maps = sample.thread.maps if sample.thread is not None else None
        epoch = self.jit.jit_epoch(sample)
        # A stack whose every address lies in a code map is the same stack
        # until a code map leaves (maps.code_generation): data maps arrive
        # by the hundred in a DWARF recording (perf records them; the heap
        # grows), and keyed by maps.generation such stacks were made again
        # after each.  Any other stack is kept per generation.
        code_key = None
        if maps is not None:
            code_key = (kinds[1], id(maps), maps.code_generation, id(base), user, flags, epoch)
        key = (kinds[0], id(maps), maps.generation if maps is not None else 0,
               id(base), user, flags, epoch)
        return maps, code_key, key

    def _kept_stack(self, keys: tuple[Any, tuple | None, tuple], base: Sequence[StackFrame]
                    ) -> list[StackFrame] | None:
        maps, code_key, key = keys
        cache = self.caches.stacks
        if code_key is not None:
            hit = cache.get(code_key)
            if hit is not None and hit[0] is maps and hit[2] is base:
                return hit[1]
        hit = cache.get(key)
        if hit is not None and hit[0] is maps and hit[2] is base:
            return hit[1]
        return None

    def _keep_stack(self, keys: tuple[Any, tuple | None, tuple], base: Sequence[StackFrame],
                    user: tuple[int, ...], frames: list[StackFrame]) -> None:
        maps, code_key, key = keys
        if code_key is not None and all_in_code_maps(maps, user):
            key = code_key
        self.caches.keep_stack(key, (maps, frames, base))

    def kernel_symbols(self) -> KernelSymbols | None:
        """The kallsyms table of the profiled kernel, or None."""
        return self.dsos.kernel_symbols()

    def lbr_frames(self, sample: Sample, ips: list[int], entries: list[dict[str, Any]]
                   ) -> list[StackFrame] | None:
        """perf's resolve_lbr_callchain_sample(): with LBR call-stack mode the
        user part of the stack comes from the branch records: where the last
        call went (the current function), then every call site, innermost
        first.  The kernel part stays the recorded callchain."""
        if CC.USER not in ips or not entries:
            return None
        cut = ips.index(CC.USER)
        frames = self.frames_for_callchain(sample, ips[:cut]) if cut else []
        user = [entries[0]["to_ip"]] + [e["from_ip"] for e in entries]
        for avma in user[:self.max_stack]:
            # Branch sources are the call instructions themselves: no -1.
            frames.extend(self.frames_for_address(sample, avma, False, False))
        return frames

    def data_frame(self, sample: Sample, addr: int) -> StackFrame:
        """perf's thread__resolve() of a sample's data address (a page
        fault's): the map of the address among the sample's mode's maps, data
        maps included, else among those of the mode the address belongs to,
        and the symbol there, data objects included.  address: the file
        offset in a file's map (what perf computes the offset from)."""
        kernel = sample.cpumode in KERNEL_MODES
        m = self.machine.find_map(sample.thread, addr, kernel)
        if m is None and kernel != (addr >= KERNEL_HALF):
            kernel = not kernel
            m = self.machine.find_map(sample.thread, addr, kernel)
        if m is None:
            return StackFrame(addr, addr, None, None, "[unknown]", kernel=kernel, note="no-map")
        if kernel:
            # (kallsyms holds the kernel's data symbols too: D and B)
            if not self.dsos.kernel_symbols_usable():
                return StackFrame(addr, addr, None, None, m.path, kernel=True,
                                  note="kernel-mismatch")
            return self._lookup(KERNEL_DSO, self.build_ids.get(KERNEL_DSO), addr, None, False,
                                addr, m.path, True)[-1]
        path, bid = self.dso_of(m)
        file_offset = addr - m.start + m.pgoff
        if path.startswith(JIT_PATHS) or path.startswith("["):
            # anonymous memory, the stack, the heap: no file to name it from
            return StackFrame(addr, file_offset, None, None, m.path, note="no-symbol")
        try:
            found = self.symbolizer.lookup_data(path, bid, file_offset)
        except Exception as exc:   # a symbolizer bug must not stop the listing
            self.warnings.append("symbolizer: %s: %s" % (path, exc))
            return StackFrame(addr, file_offset, None, None, m.path, note="no-symbol")
        return StackFrame(addr, file_offset, found.name, found.offset, m.path, found.dso_path,
                          found.build_id or bid, found.source,
                          note=None if found.name is not None else "no-symbol")

    def dwarf_frames(self, sample: Sample, avma: int, is_return: bool) -> Sequence[StackFrame]:
        """perf's unwind_entry(): the frame at `avma` plus, from DWARF, the
        chain of functions inlined there, each printed with the containing
        symbol's offset.  perf prints an unwound caller at its return address
        - 1 (the call), with the offset of that address.

        The answer is kept for the (cached, so shared) frames of the address:
        every stack through it shares the same frame objects, rather than a
        copy per stack (on a large DWARF recording those copies were the
        largest part of the stack caches)."""
        base = self.frames_for_address(sample, avma, False, is_return)
        if type(base) is not tuple:       # not from the frame cache: not shared
            return self._dwarf_frames_of(sample, avma, is_return, base)
        key = (id(base), is_return)
        hit = self.caches.dwarf.get(key)
        if hit is not None and hit[0] is base:
            return hit[1]
        out = self._dwarf_frames_of(sample, avma, is_return, base)
        self.caches.keep_dwarf(key, (base, out))
        return out

    def _dwarf_frames_of(self, sample: Sample, avma: int, is_return: bool,
                         base: Sequence[StackFrame]) -> Sequence[StackFrame]:
        # (offset 0: the symbolizer named what is at the address itself,
        # address - 1 being padding: a signal trampoline's, __restore_rt,
        # where perf prints address - 1 and [unknown], README's table.)
        if is_return and base and base[-1].offset != 0:
            base = [_at_call(f) for f in base]
        if not self.dwarf_inline or not base or base[0].symbol is None or base[0].kernel \
                or base[0].source in _NO_DWARF_SOURCES:
            return base
        head = base[-1]
        m = self.machine.find_map(sample.thread, avma, False)
        if m is None:
            return base
        dso_path, dso_bid = self.dso_of(m)
        lines = self.symbolizer.line_info(dso_path, dso_bid)
        if lines is None:
            return [head]
        # (source lines, where asked for: each frame's own, below)
        with_lines = head.srcline is not None
        key = ("inline", m.path, head.build_id, head.address, with_lines)
        chain = self.caches.frames.get(key)
        if chain is None:
            chain = ()
            svma = self.symbolizer.svma_of(dso_path, dso_bid, head.address)
            if svma is not None:
                chain = tuple((self._symbol_name(name), None)
                              for name in lines.function_names(svma))
                if with_lines and len(chain) > 1:
                    chain = _chain_lines(chain, lines.frames(svma))
            self.caches.frames[key] = chain
        if not chain:
            return [head]
        out = []
        last = len(chain) - 1
        for i, (name, srcline) in enumerate(chain):
            if name is None and i < last:
                continue          # an inlined call DWARF does not name
            if name == head.symbol or name is None:
                # (the function itself: named by its symbol where DWARF's
                # name is not found, as in a supplementary file not here)
                f = head
            else:
                f = with_avma(head, head.avma)
                f.symbol = name
                f.inlined = True
                f.source = "dwarf-inline"
            if srcline is not None and srcline != f.srcline:
                if f is head:
                    f = with_avma(head, head.avma)
                f.srcline = srcline
            out.append(f)
        return out or [head]

    def _symbol_name(self, name: str | None) -> str | None:
        return self.symbolizer.demangle_name(name)

    @property
    def keeps_stacks(self) -> bool:
        """Whether whole -g stacks are being kept for the samples that repeat
        them (they are while a quarter of the lookups hit)."""
        return self.caches.stack_rate.keeping

    def frames_for_callchain(self, sample: Sample, ips: Sequence[int]) -> list[StackFrame]:
        """Frames of a kernel-recorded callchain (-g): context markers switch
        between kernel and user; every frame but the first is a return address.
        The result is shared by every sample with the same stack in the same
        address space (cached until a map of that space changes)."""
        rate = self.caches.stack_rate
        if not rate.keeping and not rate.probe():
            # Few stacks repeat here (benchmarks/bench_real.py's make: 12%
            # hits, 18% slower with the cache): see HitRate.
            return self._frames_for_callchain(sample, ips)
        maps = sample.thread.maps if sample.thread is not None else None
        key = (id(maps), maps.generation if maps is not None else 0,
               self.machine.kernel_maps.generation, sample.cpumode, tuple(ips),
               self.jit.jit_epoch(sample))
        hit = self.caches.stacks.get(key)
        if hit is not None and hit[0] is maps:
            rate.looked_up(True)
            return hit[1]
        rate.looked_up(False)
        frames = self._frames_for_callchain(sample, ips)
        self.caches.keep_stack(key, (maps, frames))
        return frames

    def _frames_for_callchain(self, sample: Sample, ips: Sequence[int]) -> list[StackFrame]:
        # (the hot loop of frame-pointer recordings: names bound once)
        frames: list[StackFrame] = []
        extend = frames.extend
        frames_for_address = self.frames_for_address
        max_stack = self.max_stack
        kernel = sample.cpumode in KERNEL_MODES
        first = True
        depth = 0
        for index, ip in enumerate(ips):
            if ip >= _CC_MAX:
                if ip not in _CONTEXTS:
                    # Not a context: a frame-pointer walk read garbage (-1,
                    # -0x80...).  perf 6.1 drops the whole chain ("invalid
                    # callchain context") and prints no frame; the frames
                    # before it are the kernel's own, kept; the walk after
                    # it is garbage: the stack ends here.
                    self.counts["invalid_context_samples"] = \
                        self.counts.get("invalid_context_samples", 0) + 1
                    break
                kernel = ip in _KERNEL_CONTEXTS
                if not kernel:
                    # The first user entry is where user space was interrupted
                    # (a syscall or an interrupt), an ip, not a return address.
                    first = True
                continue
            if depth >= max_stack:
                break
            found = frames_for_address(sample, ip, kernel, not first)
            extend(found)
            at_ip = first
            first = False
            depth += 1
            if not found:
                continue
            symbol = found[-1].symbol
            if kernel:
                if symbol is not None and symbol.startswith(INTERRUPT_ENTRIES):
                    first = True
            # A bottom ends the stack where it is a caller (the outermost
            # frame of a new thread or process), not where it is the ip the
            # user stack starts at (clone3 in the parent, mid-syscall).
            elif not at_ip and symbol in STACK_BOTTOMS:
                rest = sum(1 for x in ips[index + 1:] if x < _CC_MAX)
                if rest:
                    self.counts["bottom_garbage_dropped"] = \
                        self.counts.get("bottom_garbage_dropped", 0) + rest
                    self.counts["bottom_garbage_samples"] = \
                        self.counts.get("bottom_garbage_samples", 0) + 1
                break
        return frames

    def frames_for_address(self, sample: Sample, avma: int, kernel: bool,
                           is_return_address: bool) -> Sequence[StackFrame]:
        machine = self.machine
        thread = sample.thread
        m = machine.find_map(thread, avma, kernel)
        if m is None and not kernel and avma >= KERNEL_HALF:
            # perf falls back to the kernel maps for an address without a user map.
            km = machine.kernel_maps.find(avma)
            if km is not None:
                m, kernel = km, True
        if m is None and kernel:
            m = self.dsos.kernel_text_map(avma)
        if m is None:
            if kernel:
                ks = machine.find_ksymbol(avma)
                if ks is not None:
                    return [StackFrame(avma, avma, ks.name, avma - ks.start,
                                       "[bpf_prog]" if ks.kind == 1 else KERNEL_DSO,
                                       source="ksymbol", kernel=True,
                                       is_return_address=is_return_address)]
                # perf prints unmapped kernel addresses against [unknown].
            no_map_key = (avma, kernel, is_return_address)
            no_map = self.caches.no_map.get(no_map_key)
            if no_map is None:
                # (positional: the garbage of a frame-pointer walk comes here
                # by the thousand, and keyword arguments cost a third more)
                no_map = self.caches.keep_no_map(no_map_key, (StackFrame(
                    avma, avma, None, None, "[unknown]", None, None, None, False, None, kernel,
                    is_return_address, "no-map"),))
            return no_map
        if kernel:
            return self.frames_in_kernel_map(m, avma, is_return_address)
        path, bid = self.dso_of(m)
        # perf 6.1 looks a JIT's symbols up in /tmp/perf-PID.map for anonymous
        # memory only; a memfd mapping is a file it cannot open (map-relative
        # addresses, [unknown]): so here too, unless the process wrote a map
        # (a JIT that double-maps its code through a memfd).
        if path.startswith(JIT_PATHS) and (
                path.startswith("//anon") or path == "[anon]" or (
                    path.startswith("/memfd:") and
                    self.jit.perfmap_exists(self.jit.perfmap_of(sample)))):
            perfmap = self.jit.perfmap_of(sample)
            key = (perfmap, avma, is_return_address)
            hit = self.caches.frames.get(key)
            if hit is None:
                hit = self.caches.keep_frames(key, self._lookup(
                    perfmap, None, avma, None, is_return_address, avma, perfmap, False,
                    display_path=path), avma)
            if hit[0].symbol is None and not path.startswith("/memfd:"):
                dump = self.jit.jitdump_path(sample)
                if dump is not None:
                    return self._jitdump_frames(sample, dump, avma, is_return_address) or hit
            return hit
        return self.frames_in_binary(m, path, bid, avma, is_return_address)

    def frames_in_kernel_map(self, m: Map, avma: int, is_return_address: bool
                             ) -> Sequence[StackFrame]:
        """The frames of a kernel address in m, one of the kernel's maps (what
        frames_for_address gives there: no process's state is read)."""
        path = KERNEL_DSO
        # perf prints a module by the path its MMAP record gave.
        dso = m.path
        if not self.dsos.kernel_symbols_usable():
            return [StackFrame(avma, avma, None, None, dso, m.path, kernel=True,
                               is_return_address=is_return_address,
                               note="kernel-mismatch")]
        key: tuple = (KERNEL_DSO, avma, is_return_address, dso)
        hit = self.caches.frames.get(key)
        if hit is None:
            hit = self.caches.keep_frames(key, self._lookup(
                path, self.build_ids.get(KERNEL_DSO), avma, None, is_return_address,
                avma, dso, True), avma)
        return hit

    def frames_in_binary(self, m: Map, path: str, bid: str | None, avma: int,
                         is_return_address: bool) -> Sequence[StackFrame]:
        """The frames of an address in m, a process's map of a binary file
        that is no JIT's, (path, bid) its dso_of(m) (what frames_for_address
        gives there: a function of the binary and the file offset alone)."""
        file_offset = avma - m.start + m.pgoff        # m.file_offset(avma)
        # Frames are shared by every sample that hits this address of this
        # mapping (callers never change them).
        key = (path, bid, m.start, file_offset, is_return_address)
        hit = self.caches.frames.get(key)
        if hit is None:
            hit = self.caches.keep_frames(key, self._lookup(
                path, bid, None, file_offset, is_return_address, file_offset, m.path, False),
                avma)
        return hit

    def _jitdump_frames(self, sample: Sample, dump: str, avma: int, is_return_address: bool
                        ) -> tuple[StackFrame, ...] | None:
        """The frame of JIT code named by the process's jitdump (a recording
        perf inject --jit never saw), printed as a perf map's frame is: the
        process address, the code's name and offset, the jitdump as dso."""
        found, index = self.symbolizer.lookup_jitdump(dump, avma, self.jit.jit_time(sample),

                                                      is_return_address)
        if index is None:
            return None
        key = ("jitdump", dump, index, avma, is_return_address)
        hit = self.caches.frames.get(key)
        if hit is None:
            hit = self.caches.keep_frames(key, (StackFrame(
                None, avma, found.name, found.offset, dump, dump, None, "jitdump", False,
                None, False, is_return_address, None),), avma)
        return hit

    def _lookup(self, path: str, bid: str | None, svma: int | None, file_offset: int | None,
                is_ret: bool, printed: int, dso: str, kernel: bool,
                display_path: str | None = None) -> tuple[StackFrame, ...]:
        try:
            found = self.symbolizer.lookup(path, bid, svma, file_offset=file_offset,
                                           is_return_address=is_ret)
        except Exception as exc:   # a symbolizer bug must not stop the listing
            self.warnings.append("symbolizer: %s: %s" % (path, exc))
            found = []
        frames = []
        for fr in found:
            name = fr.name
            if name is None and kernel is False and display_path:
                dso_shown = display_path
            else:
                dso_shown = dso
            # (positional: a frame is made for every address a run meets)
            frames.append(StackFrame(None, printed, name, fr.offset, dso_shown, fr.dso_path,
                                     fr.build_id or bid, fr.source, fr.inlined, fr.srcline,
                                     kernel, is_ret, None if name is not None else
                                     "no-symbols" if fr.source == "no-symbols" else "no-symbol",
                                     False, fr.svma))
        if not frames:
            frames.append(StackFrame(None, printed, None, None, display_path or dso, path, bid,
                                     kernel=kernel, is_return_address=is_ret,
                                     note="no-symbol"))
        return tuple(frames)


def _chain_lines(chain: tuple[tuple[str | None, None], ...], located: Sequence[InlineFrame]
                 ) -> tuple[tuple[str | None, str | None], ...]:
    """The inline chain's names, each with its own source line: the
    innermost's at the address, each outer one's at the call site of the
    function inlined into it (addr2line -i; perf prints those), from the
    chain of the line tables where it is the same length (the names may
    come from another index, which names the same chain)."""
    if len(located) != len(chain):
        return chain
    return tuple((name, loc.srcline) for (name, _), loc in zip(chain, located))


def _at_call(frame: StackFrame) -> StackFrame:
    """A return-address frame shown at the call instruction (address - 1)."""
    f = with_avma(frame, frame.avma - 1 if frame.avma else frame.avma)
    f.address -= 1
    if f.offset is not None:
        f.offset -= 1
    if f.svma is not None:
        f.svma -= 1
    return f


def _stitched(frame: StackFrame) -> StackFrame:
    """A frame taken from the thread's other samples (--stitch)."""
    f = with_avma(frame, frame.avma)
    f.stitched = True
    return f


def with_avma(frame: StackFrame, avma: int | None) -> StackFrame:
    f = StackFrame.__new__(StackFrame)
    for name in StackFrame.__slots__:
        setattr(f, name, getattr(frame, name))
    f.avma = avma
    return f
