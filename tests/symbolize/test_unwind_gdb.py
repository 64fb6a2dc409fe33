"""The unwinder against gdb's backtrace of real stopped programs.

Each case compiles a program from tests/unwind_progs/, stops it under gdb,
and takes what a `perf record --call-graph=dwarf` sample holds: the
registers and 8 KiB of stack from sp.  The unwinder's frames must be gdb's
physical frames (gdb's pc of an outer frame is the return address).
"""

import shutil
import subprocess

import pytest

from unwind_progs import capture

from symbolize.unwind.cfi import CfiTable

from conftest import requires_libc_debug_here

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("gdb") is None,
    reason="needs gcc and gdb")

NO_UNWIND_TABLES = ("-fno-asynchronous-unwind-tables", "-fno-unwind-tables")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("unwind"))


def run(workdir, source, stops, cflags=("-O2",), name=None, strip_eh_frame=False,
        symbols=()):
    exe = capture.build(source, workdir, cflags, strip_eh_frame=strip_eh_frame, name=name)
    return exe, capture.run_gdb(exe, stops, symbols=symbols)


def describe(cap, result):
    lines = ["stop %s %s at %s" % (result.stop_reason, result.stop_detail,
                                     result.stop_address and hex(result.stop_address))]
    for i in range(max(len(result.frames), len(cap.gdb_pcs))):
        ours = result.frames[i] if i < len(result.frames) else None
        gdbs = cap.gdb_pcs[i] if i < len(cap.gdb_pcs) else None
        lines.append("%3d %18s %18s %s" % (i, ours and hex(ours), gdbs and hex(gdbs),
                                           cap.gdb_names[i] if gdbs is not None else ""))
    return "\n".join(lines)


def libc_frames(cap, frames):
    return [f for f in frames if "libc.so" in (cap.map_of(f) or {}).get("path", "")]


@pytest.mark.parametrize("cflags", [("-O2",), ("-O2", "-fno-omit-frame-pointer")],
                         ids=["omit-fp", "with-fp"])
def test_callback_inside_libc_qsort(workdir, cflags):
    _, (cap,) = run(workdir, "qsort_cb.c", [{"break": "compare_ints"}], cflags,
                    name="qsort_" + "_".join(c.strip("-") for c in cflags))
    result = cap.unwind()
    assert result.frames == cap.gdb_pcs, describe(cap, result)
    # _start's CFI marks the return address undefined: the clean end
    assert cap.gdb_names[-1] == "_start"
    assert result.stop_reason == "outermost"
    assert result.fp_fallback_frames == []
    # the walk really went through libc's own .eh_frame (msort, qsort_r, start)
    assert len(libc_frames(cap, result.frames)) >= 4


def test_plt_stub_and_plt_header(workdir):
    # the lazy-binding path: jmp *GOT (+0) goes to push (+6), then jmp to
    # PLT0 (+11, CFA now rsp+16), PLT0's push (+0) and jmp (+6, rsp+24)
    stops = [{"break": "*'puts@plt'"}] + [{"stepi": 1}] * 4
    _, caps = run(workdir, "plt_call.c", stops)
    offsets = []
    for cap in caps:
        result = cap.unwind()
        assert result.frames == cap.gdb_pcs, describe(cap, result)
        assert result.stop_reason == "outermost"
        offsets.append(cap.regs["rip"] & 15)
        assert cap.gdb_names[1] == "say"
    # the stops landed where the CFA expression matters
    assert offsets == [0, 6, 11, 0, 6]


def test_deep_recursion_cut_by_the_window(workdir):
    _, (cap,) = run(workdir, "deep.c", [{"break": "bottom"}])
    result = cap.unwind()
    assert result.stop_reason == "stack-exhausted"
    n = len(result.frames)
    assert n > 20
    assert len(cap.gdb_pcs) > n + 100        # the real stack goes on
    assert result.frames == cap.gdb_pcs[:n], describe(cap, result)
    # the word it wanted lies just beyond the 8 KiB copy
    assert cap.window_end() <= result.stop_address < cap.window_end() + 256
    short = cap.unwind(max_depth=10)
    assert short.stop_reason == "max-depth"
    assert short.frames == cap.gdb_pcs[:10]


def test_makecontext_coroutine_ends_at_start_context(workdir):
    _, (cap,) = run(workdir, "coroutine.c", [{"break": "coro_leaf"}],
                    symbols=["__start_context"])
    result = cap.unwind()
    assert result.stop_reason == "outermost", describe(cap, result)
    assert result.frames == cap.gdb_pcs[:len(result.frames)], describe(cap, result)
    assert cap.gdb_names[:2] == ["coro_leaf", "coro_body"]
    assert len(result.frames) == 3
    start_context = cap.symbols.get("__start_context")
    if start_context is not None:           # needs libc's symbols (libc6-dbg)
        assert result.frames[-1] == start_context


def test_no_unwind_tables_falls_back_to_frame_pointers(workdir):
    exe, (cap,) = run(workdir, "fp_chain.c", [{"break": "getppid"}],
                      ("-O2", "-fno-omit-frame-pointer") + NO_UNWIND_TABLES,
                      strip_eh_frame=True)
    sections = subprocess.run(["readelf", "-SW", exe], capture_output=True,
                              text=True).stdout if shutil.which("readelf") else ""
    assert ".eh_frame" not in sections
    result = cap.unwind()
    # getppid (libc CFI) -> fp_leaf, then fp steps from fp_leaf, fp_middle,
    # fp_outer and main into __libc_start_call_main (libc CFI again)
    assert result.frames == cap.gdb_pcs[:len(result.frames)], describe(cap, result)
    names = cap.gdb_names[:len(result.frames)]
    assert names[:5] == ["__GI_getppid", "fp_leaf", "fp_middle", "fp_outer", "main"] \
        or names[1:5] == ["fp_leaf", "fp_middle", "fp_outer", "main"]
    assert names[-1] == "_start"
    assert result.fp_fallback_frames == [2, 3, 4, 5]
    # _start has lost its CFI too, and its rbp is 0: no step possible
    assert result.stop_reason == "no-cfi"


def test_debug_frame_in_binary_and_in_separate_file(workdir):
    if shutil.which("objcopy") is None:
        pytest.skip("needs objcopy")
    # without unwind tables but with -g, gcc writes .debug_frame only
    exe, (cap,) = run(workdir, "fp_chain.c", [{"break": "getppid"}],
                      ("-O2", "-g") + NO_UNWIND_TABLES, name="fp_chain_dbg",
                      strip_eh_frame=True)
    result = cap.unwind()
    # gdb goes on past _start by prologue analysis into garbage; we stop
    assert result.frames == cap.gdb_pcs[:len(result.frames)], describe(cap, result)
    assert cap.gdb_names[len(result.frames) - 1] == "_start"
    assert cap.gdb_names[1:5] == ["fp_leaf", "fp_middle", "fp_outer", "main"]
    assert result.fp_fallback_frames == []      # no frame pointers to use anyway
    assert result.stop_reason == "no-cfi"       # _start's CFI was stripped with .eh_frame

    debug = exe + ".debug"
    stripped = exe + ".stripped"
    subprocess.run(["objcopy", "--only-keep-debug", exe, debug], check=True)
    subprocess.run(["objcopy", "--strip-debug", exe, stripped], check=True)
    assert not CfiTable.from_elf(stripped).has_cfi()
    cap.use_cfi(exe, CfiTable.from_elf(stripped, debug_frame_path=debug))
    again = cap.unwind()
    assert again.frames == result.frames
    # debug files often carry zlib-compressed sections (SHF_COMPRESSED)
    zdebug = exe + ".zdebug"
    subprocess.run(["objcopy", "--compress-debug-sections=zlib", debug, zdebug], check=True)
    with open(zdebug, "rb") as f:
        cap.use_cfi(exe, CfiTable.from_elf(stripped, debug_frame_path=f))
    assert cap.unwind().frames == result.frames


@requires_libc_debug_here
def test_signal_handler_through_restore_rt(workdir):
    _, (cap,) = run(workdir, "signal_vdso.c", [{"break": "in_handler"}])
    result = cap.unwind()
    assert result.frames == cap.gdb_pcs, describe(cap, result)
    assert result.stop_reason == "outermost"
    i = cap.gdb_names.index("__restore_rt")
    # the frame above the signal frame is an interrupted pc, not a return address
    assert result.exact_ip_frames == [i + 1]


def test_vdso_cfi_from_process_memory(workdir):
    _, (cap,) = run(workdir, "signal_vdso.c", [{"break": "__vdso_clock_gettime"}])
    result = cap.unwind()
    assert cap.map_of(result.frames[0])["path"] == "[vdso]"
    assert result.frames == cap.gdb_pcs, describe(cap, result)
    assert result.stop_reason == "outermost"


@requires_libc_debug_here
def test_thread_stack_ends_at_clone3(workdir):
    _, (cap,) = run(workdir, "thread.c", [{"break": "thread_leaf"}], ("-O2", "-pthread"))
    result = cap.unwind()
    assert result.frames == cap.gdb_pcs, describe(cap, result)
    assert cap.gdb_names[-1] == "clone3"
    assert result.stop_reason == "outermost"
    # the thread's stack is not the [stack] mapping: the window is the thread's
    assert cap.map_of(cap.regs["rsp"])["path"] != "[stack]"
