"""Writes samples/truth/<prog>.json: the call stacks each sample program
really has, written down from its source (samples/src/) and the build flags
in samples/record.sh, not from any tool's output.  The matching rule is in
match.py and samples/README.md.

    python3 samples/truth/build_truth.py
"""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def cxx(name):
    """A C++ function as a tool may print it: with or without a return type
    in front and a parameter list behind."""
    return r"(?:[\w:<>, *&]+ )?" + re.escape(name) + r"(?:\(.*\))?(?: const)?"


def opt(name, **kw):
    return dict(name=name, optional=True, **kw)


def skip(name, **kw):
    """A frame that a frame-pointer walk cannot see (its callee has no frame)."""
    return dict(name=name, fp_may_skip=True, **kw)


# Outer frames of the main thread: __libc_start_call_main calls main;
# __libc_start_main (libc's dynsym name; __libc_start_main_impl in its debug
# info) calls that one (gcc inlined it); _start is the ELF entry point.
# A frame-pointer walk stops at __libc_start_call_main (libc has no frame
# pointers and _start zeroes rbp), so all of them are optional.
MAIN_OUTER = [
    opt(r"__libc_start_call_main"),
    opt(r"__libc_start_main(_impl|_alias_2)?"),
    opt(r"_start"),
]
# Outer frames of a pthread: start_thread is called from clone3's child side.
THREAD_OUTER = [opt(r"start_thread"), opt(r"(__)?clone3?")]

LIBC_STRLEN = r"(__)?strlen(_avx2|_avx2_rtm|_evex|_evex512|_sse2)?"
# libc's clock_gettime: dynsym `clock_gettime`, debug-info names __clock_gettime,
# __GI___clock_gettime, __clock_gettime64.
LIBC_CLOCK_GETTIME = r"(__GI_)?(__)?clock_gettime(64)?"
VDSO_CLOCK_GETTIME = r"(__vdso_)?clock_gettime"
SWAPCONTEXT = r"(__)?swapcontext"

PROGRAMS = {
    "plt_loop": dict(
        source="src/plt_loop.c",
        binaries=["bin/plt_loop", "bin/plt_loop_ibt"],
        recordings={"plt_loop.fp.data": "fp", "plt_loop.dwarf.data": "dwarf",
                    "plt_loop_ibt.fp.data": "fp", "plt_loop_ibt.dwarf.data": "dwarf",
                    "pipe.data": "fp"},
        failure_mode=("calls through a PLT stub: .plt (plt_loop, non-PIE, lazy binding) "
                      "and .plt.sec (plt_loop_ibt, PIE, -fcf-protection=full -z ibtplt). "
                      "A sample in the stub must be named strlen@plt; the stub is a jmp, "
                      "so it is never a caller."),
        stacks=[
            dict(what="in libc's strlen (an IFUNC: __strlen_avx2/evex/sse2)",
                 frames=[LIBC_STRLEN, skip("hot_plt_loop"), "main"] + MAIN_OUTER),
            dict(what="in the PLT stub (.plt or .plt.sec)",
                 frames=[r"strlen@plt", skip("hot_plt_loop"), "main"] + MAIN_OUTER),
        ],
    ),
    "vdso_clock": dict(
        source="src/vdso_clock.c",
        binaries=["bin/vdso_clock"],
        recordings={"vdso_clock.fp.data": "fp", "vdso_clock.dwarf.data": "dwarf",
                    "two_events.data": "fp", "buildid_mmap.data": "fp"},
        failure_mode=("leaf in the vDSO ([vdso] mapping, no file on disk; its image is in "
                      "samples/buildids). libc's clock_gettime has no frame pointer, so fp "
                      "walks skip hot_clock_loop."),
        stacks=[
            dict(what="in the vdso",
                 # (the vdso's function keeps no frame pointer either: a
                 # sample inside it after its prologue-less entry loses libc's
                 # caller frame in an fp walk)
                 frames=[VDSO_CLOCK_GETTIME, skip(LIBC_CLOCK_GETTIME), skip("hot_clock_loop"),
                         "main"] + MAIN_OUTER),
            # each call goes through the program's .plt stub first (a jmp)
            dict(what="in the PLT stub",
                 frames=[r"clock_gettime@plt", skip("hot_clock_loop"), "main"] + MAIN_OUTER),
        ],
    ),
    "exit_atexit": dict(
        source="src/exit_atexit.c",
        binaries=["bin/exit_atexit"],
        recordings={"exit_atexit.fp.data": "fp", "exit_atexit.dwarf.data": "dwarf"},
        failure_mode=("work_then_exit ends in `call exit` (noreturn): its return address is "
                      "the first byte of after_work_then_exit. Look up return address - 1 "
                      "or the caller is misnamed after_work_then_exit. fp walks stop in "
                      "libc's __run_exit_handlers (no frame pointers), so only the DWARF "
                      "recording reaches work_then_exit."),
        # the fp walk really ends in __run_exit_handlers: a tool limit, so a
        # stack cut there counts (as "truncated") for the fp recording
        truncatable=["fp"],
        stacks=[
            dict(what="the atexit handler's hot loop, called from exit()",
                 frames=["hot_atexit_spin", skip("atexit_handler"), r"__run_exit_handlers",
                         r"(__GI_)?exit", "work_then_exit", "main"] + MAIN_OUTER),
        ],
    ),
    "coroutine": dict(
        source="src/coroutine.c",
        binaries=["bin/coroutine"],
        recordings={"coroutine.fp.data": "fp", "coroutine.dwarf.data": "dwarf"},
        failure_mode=("the hot loop runs on a makecontext stack, which really ends at "
                      "libc's __start_context (its return address is __start_context+0, "
                      "so return address - 1 falls outside it). Nothing may follow: perf's "
                      "fp walk goes on into main's frames (garbage)."),
        stacks=[
            dict(what="inside the coroutine (hot work, or yielding)",
                 frames=[r"coro_hot_work|" + SWAPCONTEXT, skip("coro_entry"),
                         opt(r"__start_context")]),
            dict(what="main resuming the coroutine",
                 frames=[SWAPCONTEXT, skip("run_coroutine"), "main"] + MAIN_OUTER),
        ],
    ),
    "cpp_inline": dict(
        source="src/cpp_inline.cpp",
        binaries=["bin/cpp_inline"],
        recordings={"cpp_inline.fp.data": "fp", "cpp_inline.dwarf.data": "dwarf",
                    "zstd.data": "fp", "cpp_inline.fp.pipe.data": "fp"},
        failure_mode=("C++ names to demangle (namespaces, templates); Mixer::step and "
                      "detail::rotate are always_inline, visible only through DWARF "
                      "inline info (DW_TAG_inlined_subroutine)."),
        stacks=[
            dict(what="Mixer::run with its inlined step/rotate",
                 frames=[dict(name=cxx("perfdemo::detail::rotate<unsigned long>"), inline=True),
                         dict(name=cxx("perfdemo::Mixer<unsigned long>::step"), inline=True),
                         cxx("perfdemo::Mixer<unsigned long>::run"),
                         skip(cxx("perfdemo::detail::drive<perfdemo::Mixer<unsigned long> >")),
                         "main"] + MAIN_OUTER),
        ],
    ),
    "threads": dict(
        source="src/threads.c",
        binaries=["bin/threads"],
        recordings={"threads.fp.data": "fp", "threads.dwarf.data": "dwarf",
                    "threads_dir.data": "fp", "zstd_dwarf.data": "dwarf"},
        failure_mode=("two threads (tid != pid) with different hot functions; the hot "
                      "leaves have no frame, so fp walks skip thread_alpha/thread_beta."),
        stacks=[
            dict(what="thread A", frames=["hot_alpha", skip("thread_alpha")] + THREAD_OUTER),
            dict(what="thread B", frames=["hot_beta", skip("thread_beta")] + THREAD_OUTER),
        ],
    ),
    "stripped": dict(
        source="src/stripped.c",
        binaries=["bin/stripped"],
        debug=["debug/stripped.debug", "debug/.build-id/"],
        recordings={"stripped.fp.data": "fp", "stripped.dwarf.data": "dwarf"},
        failure_mode=("the recorded binary has no .symtab; names come only from "
                      "samples/debug/ (by build-id or .gnu_debuglink). Without it the "
                      "frames are [unknown] and must not match."),
        stacks=[
            dict(what="inner loop",
                 frames=["stripped_hot_inner", skip("stripped_hot_outer"), "main"] + MAIN_OUTER),
        ],
    ),
    "deep_recursion": dict(
        source="src/deep_recursion.c",
        binaries=["bin/deep_recursion"],
        recordings={"deep_recursion.fp.data": "fp", "deep_recursion.dwarf.data": "dwarf"},
        failure_mode=("600 frames of ~300 bytes: an 8 KiB DWARF snapshot holds ~27 of them "
                      "and the kernel's fp callchain stops at perf_event_max_stack=127; "
                      "both are truncated, never complete."),
        truncatable=["fp", "dwarf"],
        stacks=[
            dict(what="the leaf at depth 600",
                 frames=["deep_leaf_work", skip("deep_recurse", min=600, max=600),
                         "main"] + MAIN_OUTER),
        ],
    ),
    "writer": dict(
        source="src/writer.c",
        binaries=["bin/writer"],
        recordings={"tracepoint.data": "fp"},
        failure_mode=("tracepoint samples (syscalls:sys_enter_write, sched:sched_switch) "
                      "with kernel callchains; user part only is matched."),
        stacks=[
            dict(what="write(2) from emit_line",
                 frames=[r"(__GI_)?(__libc_)?write", skip("emit_line"), "main"] + MAIN_OUTER),
            dict(what="sleeping in nanosleep",
                 frames=[r"(__GI_)?(__)?(clock_)?nanosleep(64)?",
                         opt(r"(__GI_)?(__)?nanosleep(64)?"), skip("main")] + MAIN_OUTER),
        ],
    ),
}

MIN_FRACTION = {"writer": 0.8}


def main():
    for prog, spec in PROGRAMS.items():
        doc = dict(program=prog)
        doc.update({k: v for k, v in spec.items() if k != "stacks"})
        doc.setdefault("truncatable", [])
        doc["min_fraction"] = MIN_FRACTION.get(prog, 0.9)
        doc["stacks"] = spec["stacks"]
        with open(os.path.join(HERE, prog + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
