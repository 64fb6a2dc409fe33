"""The recordings of the stitching tests' programs (tests/progs/stitch_*.c):
each built once, run once per mode under `perf record --call-graph=dwarf`
(the default 8 KiB stack copy), all modes at once."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import PERF


def record_modes(tmp, prog, modes, period_ns, args=()):
    """{mode: perf.data path} of `prog` run as `prog MODE ARGS...`, sampled
    every `period_ns` of the program's own CPU time (cpu-clock:u, -c): the
    same samples whatever the machine's load."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    exe = tmp / prog.stem
    subprocess.run(["gcc", "-O2", "-g", "-fno-optimize-sibling-calls", "-o", str(exe),
                    str(prog), "-lpthread"], check=True, capture_output=True, timeout=120)
    procs = {}
    for mode in modes:
        out = tmp / ("%s.data" % mode)
        procs[mode] = (out, subprocess.Popen(
            [PERF, "record", "-q", "-e", "cpu-clock:u", "-c", str(period_ns),
             "--call-graph=dwarf", "-o", str(out), "--", str(exe), mode, *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    paths = {}
    for mode, (out, proc) in procs.items():
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        paths[mode] = out
    return paths


def user_names(sample):
    return [f.symbol for f in sample.frames if not f.kernel]
