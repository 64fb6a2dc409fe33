"""Repeated unwinds of a real stack (12 frames through libc's qsort, an
8 KiB stack window, rows cached) give the same frames every time, and
opening libc's CFI decodes only the FDE asked for.  The rates are printed
(`pytest -s`) for information; speed is measured by benchmarks/, not
asserted here (a busy machine must not fail a test)."""

import os
import shutil
import time

import pytest

from unwind_progs import capture

from symbolize.unwind.cfi import CfiTable
from symbolize.unwind.unwinder import unwind_dwarf

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("gdb") is None,
                    reason="needs gcc and gdb")
def test_warm_unwinds_per_second(tmp_path):
    exe = capture.build("qsort_cb.c", str(tmp_path))
    (cap,) = capture.run_gdb(exe, [{"break": "compare_ints"}])
    # resolve modules once, as a session would: the timing is the unwinder's
    modules = {}

    def find_module(avma):
        key = avma >> 12
        if key not in modules:
            modules[key] = cap.find_module(avma)
        return modules[key]

    first = unwind_dwarf("x86_64", cap.regs, cap.read_stack, find_module)
    assert first.frames == cap.gdb_pcs and len(first.frames) >= 10
    n = 1000
    t0 = time.perf_counter()
    for _ in range(n):
        result = unwind_dwarf("x86_64", cap.regs, cap.read_stack, find_module)
    rate = n / (time.perf_counter() - t0)
    assert result.frames == first.frames
    print("warm: %.0f unwinds/s of %d frames" % (rate, len(first.frames)))


@pytest.mark.skipif(not os.path.exists(LIBC), reason="no libc.so.6 at the Debian path")
def test_cold_libc_table_is_cheap():
    best = 1.0
    for _ in range(3):
        t0 = time.perf_counter()
        table = CfiTable.from_elf(LIBC)
        table.row_for(0x28100)
        best = min(best, time.perf_counter() - t0)
    print("cold: libc CfiTable open + first row %.1f ms" % (best * 1e3))
    assert table.stats_fdes_decoded == 1      # lazy: one FDE of libc's 3,700
