"""The classes a frame (or a sample) falls in, each with its kind, title
and general fix, and what is counted of each."""
from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Any

from ...resolve.frames import STACK_BOTTOMS

if TYPE_CHECKING:
    from ...resolve.symbolized import SymbolizedSample
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


class ClassStats:
    """What is counted of one class: its frames and samples, the binaries
    involved, one example sample and the details its fix says."""
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


def describe_sample(sample: SymbolizedSample) -> dict[str, Any]:
    """A class's example: the sample's thread, time and innermost frames."""
    fr = sample.frames
    stack = []
    for f in fr[:6]:
        stack.append("%s%s" % (f.symbol or "[unknown]",
                               " (%s)" % os.path.basename(f.dso or "?")))
    return {"comm": sample.comm, "pid": sample.pid, "tid": sample.tid, "time": sample.time,
            "stack": stack + (["..."] if len(fr) > 6 else [])}
