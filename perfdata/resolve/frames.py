"""Frames of an address: the layer that joins the session's maps to
`symbolize/`.  A FrameResolver finds the map of an address in the thread's
address space, the binary behind it (by build-id, the vdso, the kernel, a
JIT's perf map) and turns the symbolizer's answer into StackFrames, with
DWARF inline chains and perf's return-address rules; it owns the caches.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..format.constants import CallchainContext as CC, MISC_GUEST_KERNEL, MISC_HYPERVISOR, MISC_KERNEL
from .hitrate import HitRate
from ..session.machine import KERNEL_DSO, KERNEL_PID
from symbolize.symbols.jitdump import is_jitdump_path

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from symbolize import KernelSymbols, Symbolizer
    from symbolize.unwind.jit import JitUnwindTable
    from symbolize.symbols.lines import InlineFrame

    from ..session.machine import Machine
    from ..session.maps import Map, MapGroup
    from ..session.stream import Sample

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
# Stacks kept (with their frames) for samples that repeat them; cleared when
# full.  A many-process recording (make) repeats few: each process has its
# own address space, so a larger bound only holds dead stacks (52k of them,
# 38 MiB, for 60k samples of make -j2).
STACK_CACHE_SIZE = 16384
# Stack-cache lookups per decision whether -g stacks repeat enough to keep.
STACK_WINDOW = 1024
# Frames kept by address of a mapping (cleared when full; ~0.35 KiB an entry
# with its key and frame).  With ASLR each process maps its libraries at its
# own addresses, so a shell starting 60,000 processes filled 168k entries
# (58 MiB) where a run's working set is a few thousand: at 500,000 the bound
# let memory grow with the number of processes.  A miss is answered by the
# symbolizer's own cache (by file offset).  At 1 << 16 a 510 MB DWARF
# recording of make -j2 builds (PIE compilers: each process its own
# addresses) peaked 14 MiB higher with these three caches, for no speed
# (make -g: 1.00x wall, 11 pairs; forks 1.02x, CPython DWARF 1.03x, 5).
FRAME_CACHE_SIZE = 1 << 14
# Frames of addresses in no map kept (cleared when full): see _no_map_frames.
NO_MAP_FRAMES_KEPT = 16384
# DWARF stacks' frames (with the inline chain from DWARF) kept by the frame
# cache's entry they come from (cleared when full; as FRAME_CACHE_SIZE).
DWARF_FRAMES_KEPT = 1 << 14
_CC_MAX = CC.MAX
_KERNEL_CONTEXTS = (CC.KERNEL, CC.GUEST_KERNEL, CC.HV)
# The context markers a callchain may hold; any other value at or above
# CC.MAX is a garbage word of a frame-pointer walk (often -1), see
# _frames_for_callchain.
_CONTEXTS = frozenset(int(c) for c in CC if c != CC.MAX)
# Kernel addresses (x86_64, aarch64): the upper half.
_KERNEL_HALF = 1 << 63
# Paths whose code perf looks up in a JIT's /tmp/perf-PID.map.
_JIT_PATHS = ("//anon", "[anon]", "/memfd:")
# Frames named by a JIT's own description, not by a binary: no DWARF to
# find inline chains in (asking for the "binary" //anon only warned).
_NO_DWARF_SOURCES = ("perfmap", "jitdump")
# perf record -k 1 (CLOCK_MONOTONIC): the clock a jitdump's timestamps are on
_CLOCK_MONOTONIC = 1


class StackFrame:
    """One printed line of a stack."""
    __slots__ = ("avma", "address", "symbol", "offset", "dso", "dso_path", "build_id",
                 "source", "inlined", "srcline", "kernel", "is_return_address", "note",
                 "stitched", "svma")

    def __init__(self, avma: int | None, address: int, symbol: str | None, offset: int | None,
                 dso: str, dso_path: str | None = None, build_id: str | None = None,
                 source: str | None = None, inlined: bool = False, srcline: str | None = None,
                 kernel: bool = False, is_return_address: bool = False, note: str | None = None,
                 stitched: bool = False, svma: int | None = None) -> None:
        self.avma = avma
        self.address = address          # what perf prints: map-relative for user maps
        self.symbol = symbol            # None: [unknown]
        self.offset = offset
        self.dso = dso                  # display name, as perf prints it
        self.dso_path = dso_path
        self.build_id = build_id
        self.source = source            # symtab dynsym plt minidebuginfo debuginfo kallsyms ...
        self.inlined = inlined
        self.srcline = srcline
        self.kernel = kernel
        self.is_return_address = is_return_address
        # why a frame is unknown, for diagnosis: no-map, no-symbol,
        # no-symbols (its binary has none), kernel-mismatch
        self.note = note
        # taken from the thread's other samples to complete a cut stack (--stitch)
        self.stitched = stitched
        # the address in the binary's own terms (objdump's), where known
        self.svma = svma

    def __repr__(self) -> str:
        return "<%x %s+%s (%s)>" % (self.address, self.symbol, self.offset, self.dso)


class FrameResolver:
    """(address, the thread's maps) -> frames: the map and its binary, the
    symbolizer's answer as StackFrames, the inline chains of DWARF frames,
    kernel and JIT (perf map) addresses; owns the caches of frames by
    address and of whole stacks.  One per run (or per worker process): it
    knows the session's Machine, not the file."""

    def __init__(self, machine: Machine, symbolizer: Symbolizer, build_ids: dict[str, str],
                 warnings: list[str], recorded_release: Callable[[], str | None] = lambda: None,
                 max_stack: int = DEFAULT_MAX_STACK, dwarf_inline: bool = True,
                 counts: dict[str, int] | None = None,
                 build_id_choices: dict[str, list[str]] | None = None) -> None:
        self.machine = machine
        self.symbolizer = symbolizer
        # binary path -> build-id, as recorded (updated as MMAP2 records come)
        self.build_ids = build_ids
        # binary path -> its build-ids, for the paths recorded with several
        self.build_id_choices = build_id_choices or {}
        self.warnings = warnings              # the run's warnings (a list to append to)
        self._recorded_release = recorded_release   # () -> the file's uname -r, or None
        self.max_stack = max_stack
        self.dwarf_inline = dwarf_inline
        self.counts = counts if counts is not None else {}
        # Frames by address (shared by every stack through it), stacks by
        # their addresses and address space, the inline chains added to the
        # frames of an address: bounded, cleared when full.
        # (frames of an address, or its inline chain: a tuple of names)
        self._frame_cache: dict[tuple, tuple] = {}
        self._stack_cache: dict[tuple, tuple] = {}     # key -> (maps, frames, ...)
        # The frame of an address in no map, by (address, kernel, is a
        # return address): what such a frame says does not depend on the
        # maps, only that it is in none; a frame-pointer walk's garbage
        # repeats (make -j2: 155k such frames, 51k addresses, 20k of them 0).
        self._no_map_frames: dict[tuple[int, bool, bool], tuple[StackFrame, ...]] = {}
        # whether -g stacks repeat enough to be worth keeping (decided per
        # STACK_WINDOW lookups)
        self._stack_rate = HitRate(STACK_WINDOW)
        # (id(frames of an address), is_return): (frames, with inlines)
        self._dwarf_cache: dict[tuple[int, bool],
                                tuple[Sequence[StackFrame], Sequence[StackFrame]]] = {}
        self._dso_cache: dict[tuple[str, str | None], tuple[str, str | None]] = {}
        self._perfmap_seen: dict[str, bool] = {}
        self._perfmap_placed: set[int] = set()     # pids _perfmap_of has looked for
        self._memfd_is_jit: dict[int | None, bool] = {}   # pid -> memfd_is_jit's answer
        # pid -> the jitdump its process mapped (perf inject's jit_detect),
        # or (maps, generation) for a process where none was mapped yet
        self._jitdump_of_pid: dict[int, str | tuple[int, int]] = {}
        self._kernel_ok: bool | None = None

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
        maps = sample.thread.maps if sample.thread is not None else None
        user = tuple(user)
        cache = self._stack_cache
        epoch = self.jit_epoch(sample)
        # A stack whose every address lies in a code map is the same stack
        # until a code map leaves (maps.code_generation): data maps arrive
        # by the hundred in a DWARF recording (perf records them; the heap
        # grows), and keyed by maps.generation such stacks were made again
        # after each.  Any other stack is kept per generation.
        if maps is not None:
            code_key = ("dwarf-code", id(maps), maps.code_generation, id(kernel_frames), user,
                        exact, epoch)
            hit = cache.get(code_key)
            if hit is not None and hit[0] is maps and hit[2] is kernel_frames:
                return hit[1]
        key = ("dwarf", id(maps), maps.generation if maps is not None else 0,
               id(kernel_frames), user, exact, epoch)
        hit = cache.get(key)
        if hit is not None and hit[0] is maps and hit[2] is kernel_frames:
            return hit[1]
        frames = list(kernel_frames)
        for i, avma in enumerate(user):
            frames.extend(self.dwarf_frames(sample, avma, i > 0 and i not in exact))
        if len(cache) > STACK_CACHE_SIZE:
            cache.clear()
        if maps is not None and _all_in_code_maps(maps, user):
            key = code_key
        cache[key] = (maps, frames, kernel_frames)
        return frames

    def kernel_symbols(self) -> KernelSymbols | None:
        """The kallsyms table of the profiled kernel, or None."""
        if not self.kernel_symbols_usable():
            return None
        return self.symbolizer.kernel_symbols(self.build_ids.get(KERNEL_DSO))

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
        if m is None and kernel != (addr >= _KERNEL_HALF):
            kernel = not kernel
            m = self.machine.find_map(sample.thread, addr, kernel)
        if m is None:
            return StackFrame(addr, addr, None, None, "[unknown]", kernel=kernel, note="no-map")
        if kernel:
            # (kallsyms holds the kernel's data symbols too: D and B)
            if not self.kernel_symbols_usable():
                return StackFrame(addr, addr, None, None, m.path, kernel=True,
                                  note="kernel-mismatch")
            return self._lookup(KERNEL_DSO, self.build_ids.get(KERNEL_DSO), addr, None, False,
                                addr, m.path, True)[-1]
        path, bid = self.dso_of(m)
        file_offset = addr - m.start + m.pgoff
        if path.startswith(_JIT_PATHS) or path.startswith("["):
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

    def dso_of(self, m: Map) -> tuple[str, str | None]:
        """(path to look the binary up by, build-id) for a map.  The vdso has
        no file: perf's build-id cache may hold its image; else, as perf does,
        this machine's own vdso stands in, used silently only when its
        build-id is the recorded one.  A binary not found under its path
        here (nor by build-id, --symfs, --path-map) is looked for in the
        mount namespace of the process that mapped it, /proc/PID/root/PATH,
        while that process lives (a container's file): taken only with the
        recorded build-id, so a pid now another process's names nothing."""
        key: tuple = (m.path, m.build_id)
        several = m.build_id is None and m.path in self.build_id_choices
        if several:
            # (what is known of the path's other files grows as their maps come)
            key = (m.path, None, m.maj, m.min, m.ino, m.pid,
                   len(self.machine.file_ids.get(m.path, ())))
        hit = self._dso_cache.get(key)
        if hit is None:
            bid = m.build_id or (self._own_build_id(m) if several else
                                 self.build_ids.get(m.path))
            hit = (m.path, bid)
            # (without a build-id no file can be found for "[vdso]")
            if m.path == "[vdso]" and (
                    bid is None or self.symbolizer.binary_for(m.path, bid).status != "found"):
                hit = self._vdso_stand_in(bid) or hit
            elif bid is not None and m.path.startswith("/"):
                inside = in_process_root(m.pid, m.path)
                if inside is not None:
                    hit = (self.symbolizer.first_found((m.path, inside), bid), bid)
            self._dso_cache[key] = hit
        return hit

    def _own_build_id(self, m: Map) -> str:
        """Which of the build-ids recorded under the map's path is its file's
        (perf's header names them by path alone; the host's file and a
        container's have one path): that of the file with the map's device
        and inode, here or in its process's mount namespace; else, where
        the file here is another map's (its device and inode another's of
        this path) and so its build-id that map's, and as many files were
        mapped under the path as build-ids are listed, the one left; else
        the first listed, as perf's header is read for one build-id a path.
        (A stat that names another device than the kernel's records, as
        btrfs subvolumes and overlayfs do, proves nothing either way.)"""
        choices = self.build_id_choices[m.path]
        if not m.ino:
            return choices[0]
        own = (m.maj, m.min, m.ino)
        mapped = self.machine.file_ids.get(m.path, set())
        places = [m.path]
        inside = in_process_root(m.pid, m.path)
        if inside is not None:
            places.append(inside)
        others = list(choices)
        for place in places:
            try:
                st = os.stat(place)
            except OSError:
                continue
            ident = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
            if ident != own and ident not in mapped:
                continue
            bid = _file_build_id(place)
            if bid not in choices:
                continue
            if ident == own:
                return bid
            if bid in others:
                others.remove(bid)            # another map's file
        if len(others) == 1 and len(mapped) == len(choices):
            return others[0]
        return choices[0]

    def _vdso_stand_in(self, bid: str | None) -> tuple[str, str | None] | None:
        """The image that stands in for a vdso not found by its build-id:
        the one the caller gave (--vdso), else this machine's own, where it
        is the recorded one (by build-id; without one, where this machine
        runs the recorded kernel release: perf 6.1 takes its own vdso for any
        file, and names another kernel's vdso code wrongly)."""
        given = self.symbolizer.given_vdso
        if given is not None:
            choice = self.symbolizer.binary_for(given, None)
            given_bid = choice.binary.build_id if choice.binary is not None else None
            if choice.status != "found":
                self.warnings.append("--vdso %s: %s" % (given, choice.reason))
            elif not given_bid:
                self.warnings.append("--vdso %s: no build-id; not used" % given)
            elif bid is not None and given_bid != bid:
                self.warnings.append("--vdso %s: build-id %s, not the profile's vdso (%s); "
                                     "not used" % (given, given_bid, bid))
            else:
                return given, given_bid
        from symbolize.debuginfo.vdso import running_vdso
        own = running_vdso(self.symbolizer.cache)
        if own is None:
            return None
        if bid is not None:
            return own if bid == own[1] else None
        if self._runs_recorded_kernel():
            self.warnings.append("[vdso]: the profile has no build-id for it; assuming this "
                                 "machine's vdso (build-id %s), as perf does" % own[1])
            return own
        self.warnings.append(
            "[vdso]: the profile has no build-id for it and was recorded on kernel %s, whose "
            "vdso may differ: its frames are left unnamed; pass --vdso FILE, the recording "
            "machine's vdso image (perfdata keeps it in its cache directory as "
            "vdso-BUILDID.so)" % self._kernels_named())
        return None

    def dwarf_frames(self, sample: Sample, avma: int, is_return: bool) -> Sequence[StackFrame]:
        """perf's unwind_entry(): the frame at `avma` plus, from DWARF, the
        chain of functions inlined there, each printed with the containing
        symbol's offset.  perf prints an unwound caller at its return address
        - 1 (the call), with the offset of that address.

        The answer is kept for the (cached, so shared) frames of the address:
        every stack through it shares the same frame objects, rather than a
        copy per stack (on a 300 MB DWARF recording those copies were 49 MiB,
        the largest part of the stack caches)."""
        base = self.frames_for_address(sample, avma, False, is_return)
        if type(base) is not tuple:       # not from the frame cache: not shared
            return self._dwarf_frames_of(sample, avma, is_return, base)
        key = (id(base), is_return)
        hit = self._dwarf_cache.get(key)
        if hit is not None and hit[0] is base:
            return hit[1]
        out = self._dwarf_frames_of(sample, avma, is_return, base)
        if len(self._dwarf_cache) > DWARF_FRAMES_KEPT:
            self._dwarf_cache.clear()
        self._dwarf_cache[key] = (base, out)
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
        chain = self._frame_cache.get(key)
        if chain is None:
            chain = ()
            svma = self.symbolizer.svma_of(dso_path, dso_bid, head.address)
            if svma is not None:
                chain = tuple((self._symbol_name(name), None)
                              for name in lines.function_names(svma))
                if with_lines and len(chain) > 1:
                    chain = _chain_lines(chain, lines.frames(svma))
            self._frame_cache[key] = chain
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
        return self._stack_rate.keeping

    def frames_for_callchain(self, sample: Sample, ips: Sequence[int]) -> list[StackFrame]:
        """Frames of a kernel-recorded callchain (-g): context markers switch
        between kernel and user; every frame but the first is a return address.
        The result is shared by every sample with the same stack in the same
        address space (cached until a map of that space changes)."""
        rate = self._stack_rate
        if not rate.keeping and not rate.probe():
            # Few stacks repeat here (make -j2: 12% hits, 18% slower with
            # the cache): see HitRate.
            return self._frames_for_callchain(sample, ips)
        maps = sample.thread.maps if sample.thread is not None else None
        key = (id(maps), maps.generation if maps is not None else 0,
               self.machine.kernel_maps.generation, sample.cpumode, tuple(ips),
               self.jit_epoch(sample))
        hit = self._stack_cache.get(key)
        if hit is not None and hit[0] is maps:
            rate.looked_up(True)
            return hit[1]
        rate.looked_up(False)
        frames = self._frames_for_callchain(sample, ips)
        if len(self._stack_cache) > STACK_CACHE_SIZE:
            self._stack_cache.clear()
        self._stack_cache[key] = (maps, frames)
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
        if m is None and not kernel and avma >= _KERNEL_HALF:
            # perf falls back to the kernel maps for an address without a user map.
            km = machine.kernel_maps.find(avma)
            if km is not None:
                m, kernel = km, True
        if m is None and kernel:
            m = self._kernel_text_map(avma)
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
            no_map = self._no_map_frames.get(no_map_key)
            if no_map is None:
                if len(self._no_map_frames) > NO_MAP_FRAMES_KEPT:
                    self._no_map_frames.clear()
                # (positional: the garbage of a frame-pointer walk comes here
                # by the thousand, and keyword arguments cost a third more)
                no_map = self._no_map_frames[no_map_key] = (StackFrame(
                    avma, avma, None, None, "[unknown]", None, None, None, False, None, kernel,
                    is_return_address, "no-map"),)
            return no_map
        if kernel:
            path = KERNEL_DSO
            # perf prints a module by the path its MMAP record gave.
            dso = m.path
            if not self.kernel_symbols_usable():
                return [StackFrame(avma, avma, None, None, dso, m.path, kernel=True,
                                   is_return_address=is_return_address,
                                   note="kernel-mismatch")]
            key: tuple = (KERNEL_DSO, avma, is_return_address, dso)
            hit = self._frame_cache.get(key)
            if hit is None:
                hit = self._cache_frames(key, self._lookup(
                    path, self.build_ids.get(KERNEL_DSO), avma, None, is_return_address,
                    avma, dso, True), avma)
            return hit
        path, bid = self.dso_of(m)
        file_offset = avma - m.start + m.pgoff        # m.file_offset(avma)
        # perf 6.1 looks a JIT's symbols up in /tmp/perf-PID.map for anonymous
        # memory only; a memfd mapping is a file it cannot open (map-relative
        # addresses, [unknown]): so here too, unless the process wrote a map
        # (a JIT that double-maps its code through a memfd).
        if path.startswith(_JIT_PATHS) and (
                path.startswith("//anon") or path == "[anon]" or (
                    path.startswith("/memfd:") and
                    self._perfmap_exists(self._perfmap_of(sample)))):
            perfmap = self._perfmap_of(sample)
            key = (perfmap, avma, is_return_address)
            hit = self._frame_cache.get(key)
            if hit is None:
                hit = self._cache_frames(key, self._lookup(
                    perfmap, None, avma, None, is_return_address, avma, perfmap, False,
                    display_path=path), avma)
            if hit[0].symbol is None and not path.startswith("/memfd:"):
                dump = self.jitdump_path(sample)
                if dump is not None:
                    return self._jitdump_frames(sample, dump, avma, is_return_address) or hit
            return hit
        # Frames are shared by every sample that hits this address of this
        # mapping (callers never change them).
        key = (path, bid, m.start, file_offset, is_return_address)
        hit = self._frame_cache.get(key)
        if hit is None:
            hit = self._cache_frames(key, self._lookup(
                path, bid, None, file_offset, is_return_address, file_offset, m.path, False),
                avma)
        return hit

    def jitdump_path(self, sample: Sample) -> str | None:
        """The jitdump (jit-PID.dump) the sample's process mapped, as perf
        inject --jit finds it (the JIT maps it so that perf records its
        path), or None."""
        pid = sample.pid
        got = self._jitdump_of_pid.get(pid)
        if type(got) is str:
            return got
        maps = sample.thread.maps if sample.thread is not None else None
        if maps is None:
            return None
        if got == (id(maps), maps.generation):
            return None
        for m in maps:
            if is_jitdump_path(m.path, pid):
                self._jitdump_of_pid[pid] = m.path
                return m.path
        dumps = [m.path for m in maps if is_jitdump_path(m.path)]
        ns = namespace_pid(pid, sample.thread.comm if sample.thread else None) if dumps else None
        if ns is not None and ns != pid:
            # A JIT in a container names its dump by its pid there
            # (jit-NSPID.dump) in its own filesystem, which perf 6.1 takes
            # while the process lives: read through /proc/PID/root, under
            # that name (another container's jit-1.dump is another file).
            for path in dumps:
                inside = in_process_root(pid, path)
                if is_jitdump_path(path, ns) and inside is not None:
                    self._jitdump_of_pid[pid] = inside
                    return inside
        self._jitdump_of_pid[pid] = (id(maps), maps.generation)
        return None

    def jitdump_paths(self) -> list[str]:
        """The jitdumps (recorded paths) the processes met so far mapped."""
        return sorted({p for p in self._jitdump_of_pid.values() if isinstance(p, str)})

    def jit_unwind_table(self, sample: Sample) -> JitUnwindTable | None:
        """The unwinding info of the JIT code in the sample's process at its
        time, from the jitdump it mapped (CODE_UNWINDING_INFO, what perf
        inject --jit makes each jitted .so's .eh_frame of), or None."""
        dump = self.jitdump_path(sample)
        if dump is None:
            return None
        return self.symbolizer.jit_unwind_table(dump, self._jit_time(sample))

    def memfd_is_jit(self, sample: Sample) -> bool:
        """Is a memfd mapping of the sample's process JIT code (the process
        wrote a perf map), as the frames take it, or an ELF image run from
        it (fexecve), whose CFI is out of reach as any missing binary's?
        Asked for every DWARF sample: answered once a process."""
        got = self._memfd_is_jit.get(sample.pid)
        if got is None:
            got = self._memfd_is_jit[sample.pid] = self._perfmap_exists(self._perfmap_of(sample))
        return got

    def jit_epoch(self, sample: Sample) -> int:
        """Which of its jitdump's code loads the sample's process had made
        at the sample's time (0 without a jitdump): a part of the stack
        caches' keys, as a load is an MMAP2 record once perf inject ran."""
        if not self._jitdump_of_pid:
            return 0
        dump = self._jitdump_of_pid.get(sample.pid)
        if type(dump) is not str:
            return 0
        return self.symbolizer.jitdump(dump).epoch(self._jit_time(sample))

    def _jit_time(self, sample: Sample) -> int | None:
        """The sample's time on the jitdump's clock, or None where the
        recording's clock is another (perf record without -k 1)."""
        attr = sample.event.attr
        if attr["flags"].get("use_clockid") and attr.get("clockid") == _CLOCK_MONOTONIC:
            return sample.time
        return None

    def _jitdump_frames(self, sample: Sample, dump: str, avma: int, is_return_address: bool
                        ) -> tuple[StackFrame, ...] | None:
        """The frame of JIT code named by the process's jitdump (a recording
        perf inject --jit never saw), printed as a perf map's frame is: the
        process address, the code's name and offset, the jitdump as dso."""
        found, index = self.symbolizer.lookup_jitdump(dump, avma, self._jit_time(sample),
                                                      is_return_address)
        if index is None:
            return None
        key = ("jitdump", dump, index, avma, is_return_address)
        hit = self._frame_cache.get(key)
        if hit is None:
            hit = self._cache_frames(key, (StackFrame(
                None, avma, found.name, found.offset, dump, dump, None, "jitdump", False,
                None, False, is_return_address, None),), avma)
        return hit

    def _perfmap_of(self, sample: Sample) -> str:
        """The perf map of the sample's process, /tmp/perf-PID.map (the
        name perf prints), and once a process: where a process still
        running in a container wrote it, if not found as it is named."""
        pid = sample.pid
        path = "/tmp/perf-%d.map" % pid
        if pid not in self._perfmap_placed:
            self._perfmap_placed.add(pid)
            if self.symbolizer.jit_file(path) is None:
                place = perfmap_in_namespace(pid, sample.thread.comm if sample.thread else None)
                if place is not None:
                    self.symbolizer.add_jit_file_place(path, place)
        return path

    def _perfmap_exists(self, path: str) -> bool:
        got = self._perfmap_seen.get(path)
        if got is None:
            found = self.symbolizer.jit_file(path)
            got = self._perfmap_seen[path] = found is not None and os.path.isfile(found)
        return got

    def _kernel_text_map(self, avma: int) -> Map | None:
        """The kernel's map for an address past its MMAP's end (_etext) that
        a kernel symbol covers (.init.text: start_kernel): perf's kernel map
        reaches the last kallsyms symbol."""
        if avma < _KERNEL_HALF or not self.kernel_symbols_usable():
            return None
        main = next((x for x in self.machine.kernel_maps if x.path == KERNEL_DSO), None)
        if main is None or avma < main.start:
            return None
        try:
            table = self.symbolizer.kernel_symbols(self.build_ids.get(KERNEL_DSO))
            s = table.lookup(avma)
        except Exception:           # a symbolizer bug must not stop the listing
            return None
        return main if s is not None and s.module is None else None

    def _cache_frames(self, key: tuple, frames: tuple[StackFrame, ...], avma: int
                      ) -> tuple[StackFrame, ...]:
        for f in frames:
            f.avma = avma
        if len(self._frame_cache) > FRAME_CACHE_SIZE:
            self._frame_cache.clear()
        self._frame_cache[key] = frames
        return frames

    def kernel_symbols_usable(self) -> bool:
        """Kernel symbols are looked up only for the kernel that was profiled:
        by build-id when the file has one (the symbolizer checks it), else only
        if this machine runs the release the file names (perf 6.1 uses this
        machine's /proc/kallsyms for any file, and prints wrong names)."""
        if self._kernel_ok is None:
            bid = self.build_ids.get(KERNEL_DSO)
            if bid is not None or self.symbolizer.given_kernel_symbols is not None:
                self._kernel_ok = True
            else:
                self._kernel_ok = self._runs_recorded_kernel()
                if not self._kernel_ok:
                    self.warnings.append(
                        "kernel symbols: the file has no kernel build-id and was recorded on "
                        "kernel %s; pass --kallsyms FILE or --vmlinux" % self._kernels_named())
        return self._kernel_ok

    def _runs_recorded_kernel(self) -> bool:
        """Whether this machine runs the kernel release the file names (what
        stands for the kernel's identity where the file has no build-id: its
        symbols, its vdso)."""
        release = self._recorded_release()
        return bool(release) and release == os.uname().release

    def _kernels_named(self) -> str:
        return "%s, not this one (%s)" % (self._recorded_release() or "unknown",
                                          os.uname().release)

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


def in_process_root(pid: int | None, path: str) -> str | None:
    """A path as a process's mount namespace sees it, /proc/PID/root/PATH,
    for a process's pid (not the kernel's, not none)."""
    if pid is None or not 0 < pid < KERNEL_PID:
        return None
    return "/proc/%d/root%s" % (pid, path)


def namespace_pid(pid: int, comm: str | None) -> int | None:
    """The pid a process that still runs has in its own pid namespace (a
    container's: the last of /proc/PID/status's NStgid; PID itself outside
    any), which names the files a JIT writes for perf there.  None where
    /proc/PID is gone, or is now another program than the recorded comm
    (a pid used again)."""
    if pid <= 0:
        return None
    try:
        with open("/proc/%d/status" % pid) as f:
            status = f.read(8192)
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    name = fields.get("Name", "").strip()
    # (a comm is cut at 15 bytes, /proc's Name too)
    if comm is not None and name[:15] != comm[:15]:
        return None
    nstgid = fields.get("NStgid", "").split()
    if not nstgid or not nstgid[-1].isdigit():
        return None
    return int(nstgid[-1])


def perfmap_in_namespace(pid: int, comm: str | None) -> str | None:
    """Where a process that still runs in its own mount (and pid) namespace,
    a container's, wrote its perf map: /proc/PID/root/tmp/perf-NSPID.map,
    which is where perf 6.1 reads it while the process lives (nsinfo)."""
    ns = namespace_pid(pid, comm)
    return None if ns is None else in_process_root(pid, "/tmp/perf-%d.map" % ns)


def _file_build_id(path: str) -> str | None:
    from symbolize import Binary
    b = Binary(path)
    try:
        return b.build_id if b.ok else None
    finally:
        b.close()


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


def with_avma(frame: StackFrame, avma: int | None) -> StackFrame:
    f = StackFrame.__new__(StackFrame)
    for name in StackFrame.__slots__:
        setattr(f, name, getattr(frame, name))
    f.avma = avma
    return f


def _all_in_code_maps(maps: MapGroup, addresses: Iterable[int]) -> bool:
    """Does every address lie in a map of `maps` that is not a data map?"""
    for avma in addresses:
        m = maps.find(avma)
        if m is None or m.is_data:
            return False
    return True
