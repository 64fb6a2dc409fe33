"""DWARF stacks of an ELF executable run from a memfd (fexecve: its code
mapped from `/memfd:NAME (deleted)`, which no tool can open afterwards).

A memfd is also where JIT code may live (double-mapped through one); there,
with the process's perf map, perfdata steps over code without CFI by frame
pointer.  An ELF image's code usually keeps none: such a step from a leaf
reads the frame of whichever caller kept one (here main) and names main's
caller as the leaf's, leaving out every frame between (before the fix:
`leaf <- __libc_start_call_main <- __libc_start_main_impl`, mid, top and
main lost).  Without a perf map the memfd is an image whose CFI is out of
reach, as a missing binary's: the stack is its leaf, as perf 6.1 prints it.
"""
import platform

import pytest

from conftest import PERF, requires_perf
from script_compare import parse_samples
from unwind_progs import capture

MEMFD = "/memfd:memfd-elf"


def _in_memfd(frame):
    # ("(deleted)" splits the dso of parse_samples' frames)
    _, sym, dso = frame
    return MEMFD in sym + dso


@pytest.fixture(scope="module")
def memfd_recording(tmp_path_factory):
    if platform.machine() != "x86_64":
        pytest.skip("the frame layout reasoned about is x86_64's")
    tmp = tmp_path_factory.mktemp("memfd")
    data, _ = capture.build_and_record(
        tmp, "memfd_exec.c", ("-O2", "-g", "-fno-omit-frame-pointer"), PERF,
        ["-e", "cpu-clock:u", "-F", "2000", "--call-graph=dwarf"], ["400"])
    return data


@requires_perf
def test_stack_of_an_image_run_from_a_memfd_is_its_leaf_as_perf(memfd_recording):
    data = memfd_recording
    ours, theirs = capture.scripts(PERF, data)
    mine, perfs = parse_samples(ours), parse_samples(theirs)
    assert len(mine) == len(perfs)
    in_memfd = [(f1, f2) for (h1, f1), (h2, f2) in zip(mine, perfs)
                if f1 and _in_memfd(f1[0])]
    assert len(in_memfd) >= 100, "too few samples in the memfd's code"
    # every one is perf's, frame for frame: the leaf only
    assert [f1 for f1, _ in in_memfd] == [f2 for _, f2 in in_memfd]
    assert all(len(f1) == 1 for f1, _ in in_memfd)
