"""The recordings of the stitching tests' programs (tests/progs/stitch_*.c):
each built once, run once per mode under `perf record --call-graph=dwarf`
(the default 8 KiB stack copy), all modes at once."""
from __future__ import annotations

import collections
import re
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


# a leaf function of the programs: leaf_<path letter>_<number>
LEAF = re.compile(r"^leaf_([abc])_(\d+)$")


def stitched_samples(path):
    """The samples of one recording, symbolized with --stitch (no inlines:
    the programs' names only), the stitcher's counts, and the frames kept
    at most (perf's --max-stack: frames past it are left out)."""
    import perfdata
    from perfdata.resolve.symbolized import SampleSymbolizer, StackOptions
    from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions
    with perfdata.open(str(path)) as pf:
        ss = SampleSymbolizer(pf, Symbolizer(DebugInfoLocator(), SymbolizerOptions(inline=False)),
                              StackOptions(stitch=True))
        samples = list(ss)
        return samples, dict(ss.stitcher.counts), ss.max_stack


def path_roots(samples):
    """{path letter: its root}: what lies beyond entry_<path> in the samples
    the snapshot did not cut (asserted one root per path)."""
    roots = collections.defaultdict(set)
    for s in samples:
        names = user_names(s)
        m = LEAF.match(names[0] or "") if names else None
        if m and s.stop_reason == "outermost":
            entry = "entry_" + m.group(1)
            roots[m.group(1)].add(tuple(names[names.index(entry) + 1:]))
    assert all(len(r) == 1 for r in roots.values()), roots
    return {path: next(iter(r)) for path, r in roots.items()}


def user_names(sample):
    return [f.symbol for f in sample.frames if not f.kernel]
