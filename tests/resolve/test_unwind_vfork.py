"""DWARF stacks through glibc's vfork, whose return address sits in a
register while the syscall runs (x86_64: `pop %rdi; syscall; push %rdi`, the
CFI rule `ra = rdi` and CFA = sp).  Such a frame's caller has the same sp as
it: the unwinder's guard against loops (the caller's sp must lie above) lets
the innermost frame through when its CFI puts the return address in a
register, and only then.

Oracle: the program's own call chain, spawn_one <- spawn_loop <- main, and
perf 6.1 (libdw), which unwinds these frames so: the same stacks, sample by
sample.  Before, perfdata's unwinder stopped at `__vfork+0x8` (6,724 of 7,741
samples of one recording), and diagnose called them dwarf-bad-unwind.
"""
import os

import pytest

from conftest import PERF, requires_perf, run_cli
from script_compare import parse_samples
from unwind_progs import capture


@pytest.fixture(scope="module")
def vfork_recording(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vfork")
    return capture.build_and_record(
        tmp, "vfork_loop.c", ("-O2", "-g"), PERF,
        ["-e", "cpu-clock", "-F", "20000", "--call-graph=dwarf"], ["3000"], exit_codes=(0, 1))


def _in_vfork(frames):
    """Index of the first user frame, when it is glibc's vfork, else None."""
    for i, (_, sym, dso) in enumerate(frames):
        if dso.startswith("[kernel"):
            continue
        return i if sym.split("+")[0] in ("__libc_vfork", "vfork", "__vfork") else None
    return None


@requires_perf
def test_stacks_through_vfork_reach_main(vfork_recording):
    data, exe = vfork_recording
    ours, theirs = capture.scripts(PERF, data, ["--no-inline"])
    pairs = list(zip(parse_samples(ours), parse_samples(theirs)))
    assert len(pairs) == len(parse_samples(theirs))
    through = [(f1, f2) for (h1, f1), (h2, f2) in pairs
               if h1 == h2 and _in_vfork(f1) is not None]
    if not through:
        pytest.skip("no sample landed in vfork")
    program = os.path.basename(exe)
    for ours_frames, perf_frames in through:
        i = _in_vfork(ours_frames)
        callers = [sym.split("+")[0] for _, sym, dso in ours_frames[i + 1:]
                   if os.path.basename(dso) == program]
        assert callers[:3] == ["spawn_one", "spawn_loop", "main"], ours_frames
    assert [f1 for f1, _ in through] == [f2 for _, f2 in through]


@requires_perf
def test_diagnose_has_no_bad_unwind_in_vfork(vfork_recording):
    """Those samples were `dwarf-bad-unwind` (cfa-not-increasing)."""
    data, _ = vfork_recording
    rc, out, err = run_cli(["diagnose", str(data)])
    assert rc == 0, err
    assert "dwarf-bad-unwind" not in out, out
