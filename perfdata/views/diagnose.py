"""`perfdata diagnose FILE`: why frames are [unknown] or wrong, and the fix.

Every frame of every sample gets one class: resolved (and how), or the
problem that spoiled it.  Some problems belong to a whole sample rather than
to a frame (a DWARF stack cut by the snapshot, a register/ip mismatch, the
garbage dropped below a coroutine's bottom); those count samples, and the
frames they cost where that is known.  Each class is printed with its
frames, samples, share of the samples, the binaries involved (top 5), one
example sample and the fix.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence, TextIO

from perfdata.format import CallchainContext as CC
from perfdata.resolve.frames import KERNEL_MODES, STACK_BOTTOMS
from symbolize import injected_jit_group, is_jitdump_path, NO_FILE_MAPPINGS

if TYPE_CHECKING:
    import argparse

    from perfdata.format import EventAttr
    from perfdata.resolve.frames import StackFrame
    from perfdata.session.maps import Map, MapGroup
    from perfdata.resolve.symbolized import SampleSymbolizer, SymbolizedSample
    # (path, build-id) of a binary
    BinaryKey = tuple[str, str | None]

# class -> (kind, title, fix); kind: "resolved", "problem" or "note"
CLASSES = {
    "resolved-symtab": ("resolved", "resolved from the binary's .symtab", ""),
    "resolved-dynsym": ("resolved", "resolved from .dynsym only",
                        "static functions are named after the nearest exported one; "
                        "install the binary's debug info for exact names"),
    "resolved-minidebuginfo": ("resolved", "resolved from MiniDebugInfo (.gnu_debugdata)", ""),
    "resolved-debuginfo": ("resolved", "resolved from a separate debug file", ""),
    "resolved-plt": ("resolved", "PLT stub, name synthesized", ""),
    "resolved-vdso": ("resolved", "vdso, from its image", ""),
    "resolved-kallsyms": ("resolved", "kernel, from kallsyms", ""),
    "resolved-ksymbol": ("resolved", "kernel BPF/JIT, from KSYMBOL records", ""),
    "resolved-perfmap": ("resolved", "JIT code, from /tmp/perf-PID.map", ""),
    "resolved-jitdump": ("resolved", "JIT code, from the process's jitdump (jit-PID.dump)", ""),
    "resolved-ra-adjusted": ("resolved", "return address looked up at address - 1 "
                             "(the raw address names another function)", ""),
    "no-debuginfo": ("problem", "binary without symbols for the address and no debug file", ""),
    "inline-unnamed": ("problem", "function resolved, but the functions inlined in it at the "
                       "address are left out: its DWARF names them in a supplementary file "
                       "(made by dwz) that is not here",
                       "install the supplementary file the warning names (a package's debug "
                       "files put it under /usr/lib/debug/.dwz), or pass --debug-dir DIR where "
                       "it is DIR/.build-id/xx/rest.debug or at its path, or --debuginfod URL"),
    "no-symbol": ("problem", "address covered by no symbol of a binary that has symbols",
                  "an address outside any function: usually a garbage return address"),
    "binary-missing": ("problem", "binary not found here",
                       "on the recording machine run `perf archive FILE` (or `perfdata archive "
                       "FILE -o OUT.tar.zst`) and pass the unpacked archive with --debug-dir; "
                       "or --symfs ROOT / --debuginfod URL"),
    "buildid-mismatch": ("problem", "binary here has another build-id than at record time "
                         "(rebuilt or upgraded since)",
                         "keep a copy of the recorded binary before it is replaced: "
                         "`perfdata archive FILE -o OUT.tar.zst` (then --archive OUT.tar.zst) "
                         "or `perf archive FILE` (unpacked, then --debug-dir) on the recording "
                         "machine; perf's build-id cache (~/.debug) keeps it only while the "
                         "binary is replaced by a new file, not written over in place; or "
                         "--debuginfod URL for the executable"),
    "binary-modified": ("problem", "from a binary modified after the recording that the "
                        "profile has no build-id for (perf record writes those of the "
                        "binaries its samples' own ips hit): the names may be another build's",
                        "keep the recorded binary with the profile (`perfdata archive FILE -o "
                        "OUT.tar.zst` before rebuilding, then --archive) and record with `perf "
                        "record --buildid-all`: every binary's build-id recorded, a rebuilt "
                        "one is refused rather than misread"),
    "vdso-missing": ("problem", "vdso image not available",
                     "record with perf's build-id cache on (no --no-buildid-cache), or run "
                     "`perfdata archive FILE` on the recording machine; a profile that names "
                     "no build-id for its vdso (perf record --buildid-mmap): --vdso FILE, "
                     "the recording machine's image"),
    "kernel-skid": ("note", "kernel entry address in a user-only (:u) event",
                    "nothing to fix: the sample landed on the kernel entry (skid); drop :u to "
                    "see kernel stacks"),
    "kernel-no-kallsyms": ("problem", "kernel addresses without symbols: no kallsyms",
                           "record with kernel.kptr_restrict=0 (sysctl) as root, keep "
                           "/proc/kallsyms (`perf archive`), then --kallsyms FILE"),
    "kernel-kptr-restrict": ("problem", "kernel addresses without symbols: /proc/kallsyms "
                             "addresses hidden (kptr_restrict)",
                             "`sysctl kernel.kptr_restrict=0` (or run as root), or "
                             "--kallsyms FILE saved on the recording machine"),
    "kernel-no-symbol": ("problem", "kernel address outside kallsyms (module or another kernel)",
                         "--kallsyms FILE of the recorded kernel"),
    "fp-broken": ("problem", "frame-pointer chain broken: frames after a function built "
                  "without frame pointers (its caller is missing or wrong)",
                  "rebuild with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer, or "
                  "record with --call-graph=dwarf"),
    "jit-no-perfmap": ("problem", "JIT code without a perf map or jitdump that names it",
                       "make the JIT write /tmp/perf-PID.map (node --perf-basic-prof, "
                       "python3.12 -X perf, java with perf-map-agent) or a jitdump "
                       "(node --perf-prof, python3.13 -X perf_jit; record with -k 1) and "
                       "keep it with the profile"),
    "no-map": ("problem", "address in no mapping of code (JIT without MMAP records, or "
               "garbage: a return address in no mapping, in the heap or the stack)",
               "for JIT code write a perf map; else see the frame-pointer class"),
    "bottom-garbage-dropped": ("note", "frames past a stack bottom (coroutine's "
                               "__start_context, clone, _start) dropped",
                               "nothing to fix: perf 6.1 shows these garbage frames, "
                               "perfdata ends the stack at its bottom"),
    "dwarf-stack-exhausted": ("problem", "DWARF unwind stopped at the end of the stack "
                              "snapshot", ""),
    "dwarf-no-cfi": ("problem", "DWARF unwind: no CFI for an address (the unwind stopped "
                     "there, or went on by one frame-pointer step: those frames counted)",
                     "rebuild with -fasynchronous-unwind-tables (the default), or supply the "
                     "debug file (.debug_frame), or record with frame pointers"),
    "dwarf-no-binary": ("problem", "DWARF unwind stopped in a binary that is not here, or "
                        "not the recorded build: no CFI to find its callers with",
                        "the fix of the binary's class (binary-missing, buildid-mismatch): "
                        "the recorded binary's CFI continues the stacks"),
    "dwarf-no-map": ("problem", "DWARF unwind stopped at an address in no mapping",
                     "JIT code cannot be unwound with DWARF: use frame pointers in the JIT"),
    "dwarf-max-depth": ("note", "DWARF unwind stopped at --max-stack", "raise --max-stack"),
    "dwarf-bad-unwind": ("problem", "DWARF unwind went astray: bad CFI, a bad return address "
                         "or a read outside the recorded stack although all of it was there "
                         "(cfa-not-increasing, bad-cfi, zero-ra, read-outside-stack)",
                         "check the binary's CFI (hand-written assembly?)"),
    "ip-mismatch": ("note", "REGS_USER ip differs from the sample ip (precise_ip skid)",
                    "nothing to fix: the leaf is the sample ip, the unwind starts from "
                    "REGS_USER"),
}
ORDER = list(CLASSES)
# Where a frame-pointer walk ends by itself: %rbp is 0 there (set by _start,
# clone, makecontext), or the function is the thread's or process's first.
NATURAL_ENDS = frozenset(STACK_BOTTOMS | {
    "__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl",
    "__libc_start_main_alias_2", "start_thread", "thread_start", "_dl_start_user",
    "_dl_start", "__GI___clone3_internal"})
MAX_DWARF_STACK = 65528          # perf's limit: u16, multiple of 8
_BAD_UNWIND = ("cfa-not-increasing", "bad-cfi", "zero-ra")


class ClassStats:
    __slots__ = ("name", "frames", "samples", "binaries", "bin_samples", "example",
                 "detail", "last_sample", "detail_bins")

    def __init__(self, name: str) -> None:
        self.name = name
        self.frames = 0
        self.samples = 0
        self.binaries: Counter[BinaryKey] = Counter()      # (path, build_id) -> frames
        self.bin_samples: Counter[BinaryKey] = Counter()   # (path, build_id) -> samples
        self.example: dict[str, Any] | None = None
        self.detail: dict[str, Any] = {}
        self.last_sample: int | None = None      # the last sample counted
        self.detail_bins: set[BinaryKey] = set()      # binaries counted for the current sample


class Diagnosis:
    """Classify the frames of a SampleSymbolizer's samples."""

    def __init__(self, samples: SampleSymbolizer) -> None:
        self.ss = samples
        self.symbolizer = samples.symbolizer
        self.classes: dict[str, ClassStats] = {}
        self.total_samples = 0
        self.total_frames = 0
        self.inlined_frames = 0        # frames of inlined functions, of total_frames
        # (path, build-id, function start) -> it sets up no frame pointer
        self._fp_cache: dict[tuple[str | None, str | None, int], bool] = {}
        # (path, build-id, address[, "raw"]) -> the names differ
        self._ra_cache: dict[tuple[Any, ...], bool] = {}
        # (path, build-id) -> {symbol start: size, "binary": the Binary}
        self._dynsym_sizes: dict[tuple[str | None, str | None], dict[Any, Any]] = {}
        self._stretched_frames = 0     # resolved-dynsym frames past their symbol's size
        self._kernel_state: str | None = None
        self._stack_need: dict[str, Any] = {}          # class detail for dwarf-stack-exhausted
        # (path, build-id) -> the LineInfo whose supplementary file is missing, or None
        self._unnamed_lines: dict[tuple[str | None, str | None], Any] = {}

    # ------------------------------------------------------------ counting
    def _hit(self, cls: str, sample: SymbolizedSample, frames: int = 1,
             binary: BinaryKey | None = None) -> ClassStats:
        st = self.classes.get(cls)
        if st is None:
            st = self.classes[cls] = ClassStats(cls)
        st.frames += frames
        key = self.total_samples      # the sample being added (ids are reused)
        if st.last_sample != key:
            st.last_sample = key
            st.samples += 1
            if st.example is None:
                st.example = describe_sample(sample)
            st.detail_bins = set()
        if binary is not None:
            st.binaries[binary] += frames
            if binary not in st.detail_bins:
                st.detail_bins.add(binary)
                st.bin_samples[binary] += 1
        return st

    def run(self) -> Diagnosis:
        for sample in self.ss:
            self.add(sample)  # type: ignore[arg-type]  # (made without side events)
        return self

    def add(self, sample: SymbolizedSample) -> None:
        self.total_samples += 1
        frames = sample.frames
        if frames and frames[-1].stitched:
            # What the recording holds is diagnosed; the frames stitched from
            # other samples are counted apart (result()).
            frames = [f for f in frames if not f.stitched]
        self.total_frames += len(frames)
        self.inlined_frames += sum(1 for f in frames if f.inlined)
        exclude_kernel = _excludes_kernel(sample.event)
        broken_after = None
        if sample.stop_reason is None:
            broken_after = self._fp_break(sample, frames)
            if broken_after is None:
                self._fp_truncated(sample, frames)
        b: BinaryKey | None
        for i, f in enumerate(frames):
            if broken_after is not None and i > broken_after and not f.kernel and \
                    not self._modified(f):
                # (a frame named from a binary modified since is that first:
                # its names are suspect whatever the chain)
                cls, b = "fp-broken", broken_binary(frames[broken_after])
                if i == broken_after + 1:
                    fn = self._hit(cls, sample, 0).detail.setdefault("functions", Counter())
                    fn[frames[broken_after].symbol] += 1
            else:
                cls, b = self._classify(sample, f, exclude_kernel)
            self._hit(cls, sample, 1, b)
        if sample.stop_reason is None:
            self._bottom_garbage(sample, frames)
        else:
            self._dwarf(sample, frames)

    # -------------------------------------------------------- frame classes
    def _classify(self, sample: SymbolizedSample, f: StackFrame,
                  exclude_kernel: bool) -> tuple[str, BinaryKey | None]:
        binary = (f.dso_path or f.dso, f.build_id)
        if self._modified(f):
            return "binary-modified", binary
        if f.symbol is not None:
            src = f.source
            if f.kernel:
                return ("resolved-ksymbol" if src == "ksymbol" else "resolved-kallsyms"), \
                    (f.dso, f.build_id)
            if f.dso == "[vdso]":
                return "resolved-vdso", binary
            if src == "plt":
                return "resolved-plt", binary
            if src == "perfmap":
                return "resolved-perfmap", (f.dso, None)
            if src == "jitdump":
                return "resolved-jitdump", (f.dso, None)
            if f.is_return_address and self._ra_adjusted(f):
                return "resolved-ra-adjusted", binary
            if src == "minidebuginfo":
                return "resolved-minidebuginfo", binary
            if src == "dynsym":
                if self._stretched(f):
                    self._stretched_frames += 1
                return "resolved-dynsym", binary
            if not f.inlined and self._inline_unnamed(f):
                return "inline-unnamed", binary
            if src in ("debuginfo", "dwarf-inline"):
                choice = self.symbolizer.binary_for(*binary)
                return ("resolved-debuginfo" if choice.debug is not None
                        else "resolved-symtab"), binary
            return "resolved-symtab", binary
        if f.kernel:
            if exclude_kernel:
                return "kernel-skid", (f.dso, f.build_id)
            return self._kernel_class(f), (f.dso, f.build_id)
        path = f.dso_path or f.dso
        if f.dso.startswith("//anon") or f.dso.startswith("/memfd:") or f.dso == "[anon]" \
                or (path or "").startswith("/tmp/perf-"):
            return "jit-no-perfmap", (f.dso, None)
        if f.note == "no-map" or f.dso in NO_FILE_MAPPINGS:
            return "no-map", None
        if f.dso == "[vdso]":
            return "vdso-missing", binary
        choice = self.symbolizer.binary_for(*binary)
        if choice.status == "buildid-mismatch":
            return "buildid-mismatch", binary
        if choice.status in ("missing", "not-elf"):
            return "binary-missing", binary
        b = choice.binary
        if choice.debug is None and (b is None or not b.has_section(".symtab")):
            return "no-debuginfo", binary
        return "no-symbol", binary

    def _inline_unnamed(self, f: StackFrame) -> bool:
        """Does the DWARF of the frame's binary hold inlined calls at its
        address that it cannot name (their names are in a supplementary
        file not found)?"""
        if f.kernel or f.address is None or not f.dso_path:
            return False
        key = (f.dso_path, f.build_id)
        if key not in self._unnamed_lines:
            lines = self.symbolizer.line_info(f.dso_path, f.build_id)
            self._unnamed_lines[key] = lines if lines is not None and \
                lines.supplementary_missing else None
        lines = self._unnamed_lines[key]
        if lines is None:
            return False
        svma = self.symbolizer.svma_of(f.dso_path, f.build_id, f.address)
        # (innermost first: the last is the function itself, which its
        # symbol names)
        return svma is not None and None in lines.function_names(svma)[:-1]

    def _modified(self, f: StackFrame) -> bool:
        """Is the frame from a binary taken unverified (no build-id
        recorded) at its path, modified after the recording?"""
        return not f.kernel and bool(f.dso_path) and \
            self.symbolizer.modified_after_recording(f.dso_path)  # type: ignore[arg-type]

    def _stretched(self, f: StackFrame) -> bool:
        """Is a .dynsym-named frame past its symbol's own size (a symbol of
        size 0 stretched to the next one, as perf does): then the address may
        be in a static function .dynsym does not list."""
        if f.offset is None or f.address is None:
            return False
        key = (f.dso_path, f.build_id)
        sizes = self._dynsym_sizes.get(key)
        if sizes is None:
            sizes = {}
            try:
                from symbolize import read_elf_symbols
                b = self.symbolizer.binary_for(f.dso_path or f.dso, f.build_id).binary
                if b is not None and b.ok:
                    for r in read_elf_symbols(b, ".dynsym", "dynsym"):
                        sizes[r.start] = max(sizes.get(r.start, 0), r.size)
                    sizes["binary"] = b
            except Exception:     # a reader bug must not stop the diagnosis
                sizes = {}
            self._dynsym_sizes[key] = sizes
        b = sizes.get("binary")
        if b is None:
            return False
        start = b.file_offset_to_svma(f.address - f.offset)
        size = sizes.get(start)
        return size is not None and f.offset >= size

    def _ra_adjusted(self, f: StackFrame) -> bool:
        """Does the raw return address name another function than address - 1?"""
        key = (f.dso_path, f.build_id, f.address)
        hit = self._ra_cache.get(key)
        if hit is None:
            hit = False
            try:
                raw = self.symbolizer.lookup(f.dso_path, f.build_id, file_offset=f.address,
                                             is_return_address=False)
                names = [x.name for x in raw if not x.inlined]
                hit = bool(names) and names[-1] != f.symbol and not f.inlined
            except Exception:     # a symbolizer bug must not stop the diagnosis
                hit = False
            self._ra_cache[key] = hit
        return hit

    def _kernel_class(self, f: StackFrame) -> str:
        if self._kernel_state is None:
            state = "kernel-no-symbol"
            table = None
            try:
                table = self.symbolizer.kernel_symbols(f.build_id)
            except Exception:
                table = None
            if table is None or len(table) == 0:
                state = "kernel-no-kallsyms"
                try:
                    with open("/proc/kallsyms") as ks:
                        first = [ks.readline() for _ in range(50)]
                    if first and first[0] and all(line.startswith("0000000000000000 ")
                                                  for line in first if line):
                        state = "kernel-kptr-restrict"
                except OSError:
                    pass
            self._kernel_state = state
        return self._kernel_state

    # ------------------------------------------------------ frame pointers
    def _fp_break(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> int | None:
        """Index of the first user frame (leaf first) in a function built
        without frame pointers that has frames after it, or None."""
        user = [i for i, f in enumerate(frames) if not f.kernel and not f.inlined]
        for n, i in enumerate(user[:-1]):
            f = frames[i]
            if f.symbol in STACK_BOTTOMS:
                return None
            if self._has_no_frame_pointer(f):
                return i
        return None

    def _fp_truncated(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> None:
        """A -g chain that ends before any function that starts a stack: the
        walk lost the frame-pointer chain (a function without frame pointers
        left another value in %rbp).  Counted as a sample of fp-broken, blamed
        on the innermost function known to lack frame pointers."""
        user = [f for f in frames if not f.kernel and not f.inlined]
        if not user or len(user) >= self.ss.max_stack:
            return
        last = user[-1]
        if last.symbol is None or last.symbol in NATURAL_ENDS:
            return
        blame = next((f for f in user if self._has_no_frame_pointer(f)), None)
        if blame is None:
            return
        st = self._hit("fp-broken", sample, 0, broken_binary(blame))
        st.detail["truncated"] = st.detail.get("truncated", 0) + 1
        fn = st.detail.setdefault("functions", Counter())
        fn[blame.symbol] += 1

    def _has_no_frame_pointer(self, f: StackFrame) -> bool:
        """True when the function's code is known and sets up no frame pointer
        (x86_64: no push %rbp; mov %rsp,%rbp in its first bytes).  PLT stubs
        never do."""
        if f.symbol is None or f.offset is None or f.kernel:
            return False
        if f.source == "plt":
            return True
        if f.source in ("perfmap", "jitdump", "ksymbol") or \
                f.dso == "[vdso]" and f.source is None:
            return False          # code we have no bytes of
        start = f.address - f.offset
        key = (f.dso_path, f.build_id, start)
        hit = self._fp_cache.get(key)
        if hit is None:
            hit = False
            choice = self.symbolizer.binary_for(f.dso_path or f.dso, f.build_id)
            b = choice.binary
            if b is not None and b.ok and b.machine == "EM_X86_64" and start >= 0:
                code = b.read(start, 48)
                if code:
                    hit = not _x86_sets_frame_pointer(code)
            self._fp_cache[key] = hit
        return hit

    def _bottom_garbage(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> None:
        user = [f for f in frames if not f.kernel and not f.inlined]
        if not user or user[-1].symbol not in STACK_BOTTOMS:
            return
        chain = (sample.fields.get("callchain") or {}).get("ips") or ()
        raw = 0
        in_user = sample.cpumode not in (1, 3, 4)
        for ip in chain:
            if ip >= CC.MAX:
                in_user = ip == CC.USER or ip == CC.GUEST_USER
                continue
            if in_user:
                raw += 1
        dropped = raw - len(user)
        if dropped > 0 and len(user) < self.ss.max_stack:
            self._hit("bottom-garbage-dropped", sample, dropped,
                      (user[-1].dso_path or user[-1].dso, user[-1].build_id))
            self.classes["bottom-garbage-dropped"].detail["bottom"] = user[-1].symbol

    # --------------------------------------------------------------- DWARF
    def _dwarf(self, sample: SymbolizedSample, frames: Sequence[StackFrame]) -> None:
        unwound = sample.unwind
        if unwound is not None and unwound.frames and sample.ip is not None and \
                unwound.frames[0] != sample.ip and sample.cpumode not in KERNEL_MODES:
            # (the symbolizer printed the sample ip as the leaf instead)
            self._hit("ip-mismatch", sample, 0)
        fallback = self._unwind_of(sample, "fp_fallback_frames") or ()
        raw = self._unwind_of(sample, "frames") or ()
        self._dwarf_ra_adjusted(sample, frames, raw)
        for idx in fallback:
            if 0 < idx <= len(raw):
                st = self._hit("dwarf-no-cfi", sample, 1, self._binary_at(sample, raw[idx - 1]))
                st.detail["fp-fallback"] = st.detail.get("fp-fallback", 0) + 1
        reason = sample.stop_reason
        user = [f for f in frames if not f.kernel]
        last = user[-1] if user else None
        lastbin = (last.dso_path or last.dso, last.build_id) if last is not None else None
        if reason == "stack-exhausted":
            need = self._stack_needed(sample)
            dyn = (sample.fields.get("stack_user") or {}).get("dyn_size")
            if need is not None and dyn and need <= dyn:
                # The whole stack was there: the unwind went astray (a
                # register the CFI trusts held another value).
                st = self._hit("dwarf-bad-unwind", sample, 0, lastbin)
                st.detail["read-outside-stack"] = st.detail.get("read-outside-stack", 0) + 1
                return
            st = self._hit("dwarf-stack-exhausted", sample, 0, lastbin)
            d = st.detail
            d["recorded"] = max(d.get("recorded", 0), _stack_size(sample))
            if need is None:
                d["unknown"] = d.get("unknown", 0) + 1
            else:
                d["needed"] = max(d.get("needed", 0), need)
        elif reason == "no-cfi":
            if last is not None and last.symbol in NATURAL_ENDS:
                # _start, __libc_start_main, ...: the stack's own end, where
                # glibc marks the return address undefined (no CFI to want)
                return
            where = self._binary_at(sample, self._unwind_of(sample, "stop_address")) or lastbin
            if where is not None and self._absent(where):
                # (no CFI because no binary: the binary's own class says why)
                self._hit("dwarf-no-binary", sample, 0, where)
                return
            st = self._hit("dwarf-no-cfi", sample, 0, where)
            st.detail["stopped"] = st.detail.get("stopped", 0) + 1
        elif reason == "no-map":
            self._hit("dwarf-no-map", sample, 0, lastbin)
        elif reason == "max-depth":
            self._hit("dwarf-max-depth", sample, 0, lastbin)
        elif reason in _BAD_UNWIND:
            st = self._hit("dwarf-bad-unwind", sample, 0, lastbin)
            st.detail[reason] = st.detail.get(reason, 0) + 1

    def _absent(self, binary: BinaryKey) -> bool:
        """Is this a file binary (not JIT code, the vdso) that was not found
        here, or only in another build?"""
        path, bid = binary
        if not path or not path.startswith("/") or path.startswith("//") or \
                path.startswith("/memfd:") or path.startswith("/tmp/perf-"):
            return False
        return self.symbolizer.binary_for(path, bid).status in (
            "missing", "buildid-mismatch", "not-elf")

    def _dwarf_ra_adjusted(self, sample: SymbolizedSample, frames: Sequence[StackFrame],
                           raw: Sequence[int]) -> None:
        """DWARF callers are printed at return address - 1: count those whose
        raw return address names another function (a call at a function's
        end, e.g. to a noreturn function), moving one frame of each from its
        resolved class to resolved-ra-adjusted."""
        if not raw:
            return
        exact = set(self._unwind_of(sample, "exact_ip_frames") or ())
        by_avma: dict[int | None, StackFrame] = {}
        f: StackFrame | None
        for f in frames:
            if not f.kernel:
                by_avma[f.avma] = f        # the last (outermost) of an inline group
        for i, ra in enumerate(raw[:self.ss.max_stack]):
            if i == 0 or i in exact:
                continue
            f = by_avma.get(ra - 1)
            if f is None or f.symbol is None or f.source in ("perfmap", "jitdump", "ksymbol"):
                continue
            if self._names_differ(f.dso_path, f.build_id, f.address + 1):
                old_cls, b = self._classify(sample, f, False)
                st = self.classes.get(old_cls)
                if st is not None and st.frames > 0:
                    st.frames -= 1
                    if b is not None and st.binaries.get(b):
                        st.binaries[b] -= 1
                self._hit("resolved-ra-adjusted", sample, 1, b)

    def _names_differ(self, path: str | None, bid: str | None, file_offset: int) -> bool:
        """Do file_offset and file_offset - 1 lie in different functions?"""
        key = (path, bid, file_offset, "raw")
        hit = self._ra_cache.get(key)
        if hit is None:
            hit = False
            try:
                names = []
                for off in (file_offset, file_offset - 1):
                    got = self.symbolizer.lookup(path, bid, file_offset=off)
                    names.append([x.name for x in got if not x.inlined][-1:])
                hit = bool(names[1] and names[1][0]) and names[0] != names[1]
            except Exception:     # a symbolizer bug must not stop the diagnosis
                hit = False
            self._ra_cache[key] = hit
        return hit

    def _unwind_of(self, sample: SymbolizedSample, attr: str) -> Any:
        return getattr(sample.unwind, attr, None)

    def _binary_at(self, sample: SymbolizedSample, avma: int | None) -> BinaryKey | None:
        """(path, build-id) of the mapping holding avma, or None."""
        if avma is None or sample.thread is None or sample.thread.maps is None:
            return None
        m = sample.thread.maps.find(avma)
        if m is None:
            return None
        try:
            return self.ss.dso_of(m)
        except Exception:
            return (m.path, m.build_id)

    def _stack_needed(self, sample: SymbolizedSample) -> int | None:
        """Bytes from sp to the end of the stack mapping holding it: a
        snapshot that size holds the whole stack."""
        regs = (sample.fields.get("regs_user") or {})
        unwinder = self.ss.unwinder
        try:
            # (stack-exhausted: a DWARF unwind, so an unwinder)
            named = unwinder.arch.regs_from_perf(sample.event.attr["sample_regs_user"],  # type: ignore[union-attr]
                                                 regs.get("regs") or ())
            sp = named.get(unwinder.arch.sp)  # type: ignore[union-attr]  # (as above)
        except Exception:
            return None
        if sp is None or sample.thread is None:
            return None
        maps = sample.thread.maps
        m = maps.find(sp) if maps is not None else None
        if m is None:
            # The main stack grows below the start its MMAP record gave.
            for cand in _iter_maps(maps):
                if cand.path == "[stack]" and cand.end > sp and cand.start - sp < (64 << 20):
                    m = cand
                    break
        if m is None:
            return None
        return m.end - sp

    # -------------------------------------------------------------- report
    def result(self) -> dict[str, Any]:
        from symbolize import prefetch
        # the package manager asked once about every binary a fix may name
        prefetch(path for st in self.classes.values() for (path, _) in st.binaries
                 if path and path.startswith("/"))
        classes = []
        problems = 0
        for name in sorted(self.classes, key=lambda n: (ORDER.index(n) if n in ORDER else 99)):
            st = self.classes[name]
            kind, title, fix = CLASSES.get(name, ("problem", name, ""))
            if kind == "problem":
                problems += 1
            binaries: list[dict[str, Any]] = []
            for (path, bid), frames in st.binaries.most_common(5):
                entry: dict[str, Any] = {"path": path, "build_id": bid, "frames": frames,
                         "samples": st.bin_samples.get((path, bid), 0)}
                found = self._found_instead(name, path, bid)
                if found:
                    entry["found"] = found
                bfix = self._binary_fix(name, path, bid)
                if bfix:
                    entry["fix"] = bfix
                binaries.append(entry)
            custom = self._class_fix(name, st)
            fix = fix if custom is None else custom
            classes.append({"class": name, "kind": kind, "title": title,
                            "frames": st.frames, "samples": st.samples,
                            "share": st.samples / self.total_samples if self.total_samples else 0,
                            "binaries": binaries, "example": st.example, "fix": fix,
                            **({"detail": st.detail} if st.detail else {})})
        out = {"samples": self.total_samples, "frames": self.total_frames,
               "inlined_frames": self.inlined_frames,
               "problems": problems, "classes": classes}
        stitcher = self.ss.stitcher
        if stitcher is not None and stitcher.counts["cut"]:
            out["stitch"] = {"cut": stitcher.counts["cut"],
                             "completed": stitcher.counts["completed"],
                             "completed_from_later": stitcher.counts["completed-from-later"],
                             "not_completed": stitcher.not_completed(),
                             "why_not": {k.split(":", 1)[1]: v
                                         for k, v in stitcher.counts.items()
                                         if k.startswith("not-completed:") and v}}
        return out

    def _class_fix(self, name: str, st: ClassStats) -> str | None:
        if name == "resolved-dynsym":
            # said only where measured: frames named by a .dynsym symbol of
            # size 0 stretched over the code after it
            if not self._stretched_frames:
                return ""
            st.detail["past-symbol-size"] = self._stretched_frames
            return ("%d frames lie past their .dynsym symbol's size: static functions "
                    "there are named after the nearest exported one; install the "
                    "binary's debug info for exact names" % self._stretched_frames)
        if name == "dwarf-stack-exhausted":
            d = st.detail
            need = d.get("needed")
            rec = d.get("recorded") or 0
            if need is None:
                return ("the stack is deeper than the %d bytes recorded and its end is not "
                        "known: try --call-graph=dwarf,%d, or frame pointers (-g)"
                        % (rec, MAX_DWARF_STACK))
            size = min(MAX_DWARF_STACK, (need + 1023) // 1024 * 1024)
            if need > MAX_DWARF_STACK:
                return ("the stack needs %d bytes, more than perf's limit of %d: build with "
                        "-fno-omit-frame-pointer and record with -g (frame pointers)"
                        % (need, MAX_DWARF_STACK))
            d["suggested"] = size
            return ("perf record --call-graph=dwarf,%d (the deepest stack needs %d bytes, "
                    "%d were recorded)" % (size, need, rec))
        return None

    def _found_instead(self, name: str, path: str, bid: str | None) -> list[str]:
        """What the files looked at for a binary of these classes hold
        instead of it: another build-id (and where perf's build-id cache
        entry is the same file as the binary: overwritten in place), or
        damage."""
        if name not in ("buildid-mismatch", "binary-missing") or not path:
            return []
        tried = self.symbolizer.binary_for(path, bid).tried
        recorded = os.path.normpath(path)
        out = []
        linked = []
        for p, outcome, detail in tried:
            if outcome == "buildid-mismatch":
                if p != recorded and _same_file(p, recorded):
                    linked.append(p)
                    continue
                out.append("%s has build-id %s%s" % (
                    p, detail or "none", ", not the recorded %s" % bid if bid else ""))
            elif outcome in ("not-elf", "no-code", "no-debug-sections") and detail:
                out.append("%s is damaged: %s" % (p, detail))
        if linked:
            # perf record (and perf buildid-cache -a) link the binary into
            # the cache where they can: one file under two names
            out.append("%s: perf's build-id cache copy is the same file as %s (a hard link "
                       "perf made), so writing over the binary in place (cp onto it) changed "
                       "the copy too; a new file (install, mv, a linker's output) leaves it"
                       % (", ".join(linked), recorded))
        return out

    def _binary_fix(self, name: str, path: str, bid: str | None) -> str | None:
        from symbolize import package_of
        if name == "binary-missing" and path and path.endswith(" (deleted)"):
            # (perf record -p / -a of a process whose binary was deleted:
            # nothing on the recording machine to archive any more)
            return ("deleted while the process ran, so no build-id was recorded and no archive "
                    "can hold it: give a copy of the same build with --path-map %s=COPY or "
                    "under --symfs ROOT" % path[:-len(" (deleted)")])
        if name == "binary-missing":
            return _missing_binary_fix(path, bid)
        if name == "fp-broken":
            if path and (injected_jit_group(path) or is_jitdump_path(path)):
                # Code a JIT wrote cannot be rebuilt: its stacks need the
                # JIT's own unwinding info (CPython's perf trampolines set up
                # no frame pointer).
                return ("JIT code without frame pointers: record with --call-graph=dwarf "
                        "and the JIT's unwinding info (python3.13 -X perf_jit, node "
                        "--perf-prof --perf-prof-unwinding-info; -k 1)")
            pkg = package_of(path) if path and path.startswith("/") else None
            if pkg is not None:
                return ("from package %s, built without frame pointers: record with "
                        "--call-graph=dwarf" % pkg.name)
            return None
        if name not in ("no-debuginfo", "resolved-dynsym"):
            return None
        parts: list[str | None] = []
        pkg = package_of(path) if path and path.startswith("/") else None
        if pkg is not None:
            # (a command where the package manager has the package; else
            # where to find it, with its commands quoted)
            parts.append(pkg.install if pkg.installable is False else "`%s`" % pkg.install)
        parts.append("--debuginfod URL (or DEBUGINFOD_URLS)" if bid else None)
        if bid:
            parts.append("--debug-dir DIR holding .build-id/%s/%s.debug" % (bid[:2], bid[2:]))
        else:
            parts.append("--debug-dir DIR holding %s.debug" % path)
        if pkg is None:
            parts.append("or rebuild with -g and keep the debug file "
                         "(objcopy --only-keep-debug)")
        return "; ".join(p for p in parts if p)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _missing_binary_fix(path: str, bid: str | None) -> str | None:
    """Where to point perfdata for a binary whose recorded path does not
    exist here: a container's file (a path of its own mount namespace), or
    another machine's.  perf record reads the build-ids at its end, through
    the process's mount namespace while it lives: of a container that had
    exited by then the recording holds none, and a file given for the path
    is taken unchecked."""
    if not path or not path.startswith("/") or os.path.lexists(path):
        return None          # (a file that is there but unusable: the class's fix)
    parts = ["%s does not exist here (a container's file, or another machine's): "
             "--path-map %s=COPY (a copy of the file; or --path-map %s=DIR for its "
             "directory), or --symfs ROOT (the container's root filesystem: its image "
             "unpacked, or /proc/PID/root while it runs)"
             % (path, path, os.path.dirname(path) or "/")]
    if bid:
        parts.append("or --debug-dir DIR holding .build-id/%s/%s" % (bid[:2], bid[2:]))
    else:
        parts.append("the profile holds no build-id for it (perf record writes those of "
                     "the binaries its samples' own ips hit, read at its end through the "
                     "mount namespace of a process still alive; none in a pipe-mode "
                     "recording), so the file given is not checked, and `perf archive` "
                     "leaves it out: `perfdata archive FILE -o OUT.tar.zst` on the recording "
                     "machine takes it by its path (then --archive)")
    return "; ".join(parts)


def broken_binary(f: StackFrame) -> BinaryKey:
    """The binary blamed for a broken chain; the code a JIT wrote, which perf
    inject --jit puts in a file per load (thousands), as one."""
    path = f.dso_path or f.dso
    group = injected_jit_group(path) if path else None
    return (group, None) if group is not None else (path, f.build_id)


def _iter_maps(maps: MapGroup | None) -> Sequence[Map]:
    return list(maps) if maps is not None else ()


def _excludes_kernel(event: EventAttr) -> bool:
    try:
        return bool(event.attr["flags"]["exclude_kernel"])
    except (AttributeError, KeyError, TypeError):
        return False


def _stack_size(sample: SymbolizedSample) -> int:
    st = sample.fields.get("stack_user") or {}
    return st.get("size") or 0


def _x86_sets_frame_pointer(code: bytes) -> bool:
    """push %rbp; mov %rsp,%rbp within the first instructions (after an
    optional endbr64)."""
    i = 4 if code[:4] == b"\xf3\x0f\x1e\xfa" else 0
    if code[i:i + 1] != b"\x55" and code[i:i + 2] != b"\x41\x57" and \
            code[i:i + 2] != b"\x41\x56" and code[i:i + 2] != b"\x41\x55" and \
            code[i:i + 2] != b"\x41\x54" and code[i:i + 1] != b"\x53":
        return False
    window = code[i:i + 40]
    # gcc may schedule other instructions between the push and the mov.
    for mov in (b"\x48\x89\xe5", b"\x48\x8b\xec"):
        at = window.find(mov)
        if at > 0 and b"\x55" in window[:at]:
            return True
    return False


def describe_sample(sample: SymbolizedSample) -> dict[str, Any]:
    fr = sample.frames
    stack = []
    for f in fr[:6]:
        stack.append("%s%s" % (f.symbol or "[unknown]",
                               " (%s)" % os.path.basename(f.dso or "?")))
    return {"comm": sample.comm, "pid": sample.pid, "tid": sample.tid, "time": sample.time,
            "stack": stack + (["..."] if len(fr) > 6 else [])}


# ------------------------------------------------------------------ text
def describe(result: dict[str, Any], path: str) -> str:
    lines = []
    n = result["samples"]
    inl = result.get("inlined_frames") or 0
    # (as script prints them: with the inlined functions, which script
    # --no-inline leaves out, so its count is smaller)
    lines.append("%s: %d samples, %d frames%s" % (
        path, n, result["frames"],
        " as script prints them, %d of them inlined functions (script "
        "--no-inline prints fewer)" % inl if inl else ""))
    if n == 0:
        lines.append("no samples: nothing to diagnose")
        return "\n".join(lines) + "\n"
    lines.append("")
    lines.append("%-24s %9s %8s %7s  %s" % ("class", "frames", "samples", "share", "what"))
    for c in result["classes"]:
        lines.append("%-24s %9d %8d %6.1f%%  %s" % (c["class"], c["frames"], c["samples"],
                                                   100.0 * c["share"], c["title"]))
    problems = [c for c in result["classes"] if c["kind"] != "resolved" or c["fix"]]
    if not any(c["kind"] == "problem" for c in problems):
        lines.append("")
        lines.append("no problem found: every frame resolved")
    for c in problems:
        lines.append("")
        lines.append("%s: %d frames, %d samples (%.1f%%): %s" % (
            c["class"], c["frames"], c["samples"], 100.0 * c["share"], c["title"]))
        for b in c["binaries"]:
            lines.append("  binary: %s%s  (%d frames, %d samples)" % (
                b["path"], " build-id %s" % b["build_id"] if b["build_id"] else "",
                b["frames"], b["samples"]))
            for found in b.get("found") or ():
                lines.append("    found: %s" % found)
            if b.get("fix"):
                lines.append("    fix: %s" % b["fix"])
        ex = c["example"]
        if ex:
            t = ex["time"] if isinstance(ex["time"], int) else 0
            lines.append("  example: %s %s/%s %d.%09d: %s" % (
                ex["comm"], ex["pid"], ex["tid"], t // 10**9, t % 10**9,
                " <- ".join(ex["stack"])))
        fns = (c.get("detail") or {}).get("functions")
        if fns:
            lines.append("  functions: %s" % ", ".join(
                "%s (%d)" % (name, n) for name, n in Counter(fns).most_common(5)))
        if c["fix"]:
            lines.append("  fix: %s" % c["fix"])
    st = result.get("stitch")
    if st:
        lines.append("")
        lines.append("stack stitching: %d of %d cut DWARF stacks completed from their thread's "
                     "other samples (perfdata ... --stitch), %d not%s" % (
                         st["completed"], st["cut"], st["not_completed"],
                         " (%s)" % ", ".join("%s %d" % kv for kv in st["why_not"].items())
                         if st["why_not"] else ""))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------- CLI
def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .options import add_input_argument, add_symbolize_options
    p = subparsers.add_parser("diagnose", help="why frames are [unknown] or wrong, and the fix")
    add_input_argument(p)
    p.add_argument("--json", action="store_true", help="the table as one JSON object")
    add_symbolize_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO) -> None:
    import sys
    from .options import make_sample_symbolizer, open_profile
    pf = open_profile(args.file, getattr(args, "strict", False))
    # Stitching always: the report says how many cut stacks --stitch completes.
    samples = make_sample_symbolizer(pf, args, stitch=True)
    diag = Diagnosis(samples)
    try:
        diag.run()
    finally:
        seen = set()
        for message in list(pf.warnings) + list(samples.symbolizer.warnings):
            if message not in seen:
                seen.add(message)
                sys.stderr.write("perfdata: warning: %s\n" % message)
    result = diag.result()
    result["file"] = str(args.file)
    if args.json:
        out.write(json.dumps(result, indent=1, default=str) + "\n")
    else:
        out.write(describe(result, args.file))
