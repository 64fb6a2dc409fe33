"""The checks of test_script_goldens on recordings made here, now.

The goldens in samples/expected were made on one machine with its libc debug
file; this module builds the same test programs from samples/src, records
them with this machine's perf and compares `perfdata script` with `perf
script` run now on the same file, and with the programs' real stacks
(samples/truth).  So the agreement with perf is checked on any machine where
perf can record, whatever its kernel, libc and debug files.
"""
import importlib.util
import json
import os
import shutil
import subprocess

import pytest

from conftest import PERF, SAMPLES, requires_libc_debug_here, requires_perf, run_cli
from script_compare import agreement, compare

# samples/record.sh's flags (build()): one failure mode each.
CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]
PROGRAMS = {
    "plt_loop": ("gcc", ["-fno-builtin", "-no-pie"], "plt_loop.c"),
    "plt_loop_ibt": ("gcc", ["-fno-builtin", "-fcf-protection=full", "-Wl,-z,ibtplt"],
                     "plt_loop.c"),
    "vdso_clock": ("gcc", [], "vdso_clock.c"),
    "exit_atexit": ("gcc", ["-falign-functions=1"], "exit_atexit.c"),
    "coroutine": ("gcc", [], "coroutine.c"),
    "cpp_inline": ("g++", [], "cpp_inline.cpp"),
    "threads": ("gcc", ["-pthread", "-no-pie"], "threads.c"),
    "deep_recursion": ("gcc", [], "deep_recursion.c"),
}
# (perf record options, the program's scale argument): short runs.
MODES = {
    "fp": (["-e", "cpu-clock:u", "-F", "1000", "-g"], "0.2"),
    "dwarf": (["-e", "cpu-clock:u", "-F", "250", "--call-graph=dwarf"], "0.15"),
}
CASES = [(p, m) for p in PROGRAMS for m in MODES]


def _truth(program):
    path = SAMPLES / "truth" / ("%s.json" % program)
    return json.loads(path.read_text())


def _matcher():
    spec = importlib.util.spec_from_file_location("truth_match", SAMPLES / "truth" / "match.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """{(program, mode): (perf.data, perf script text, buildid dir)}, all
    recorded at once (perf record is mostly idle start-up)."""
    tmp = tmp_path_factory.mktemp("live")
    buildid_dir = tmp / "buildid-cache"
    env = dict(os.environ, HOME=str(tmp))       # no ~/.perfconfig; perf's cache here
    bins = {}
    for name, (cc, flags, src) in PROGRAMS.items():
        if shutil.which(cc) is None:
            continue
        out = tmp / name
        res = subprocess.run([cc] + CFLAGS + flags + ["-o", str(out), str(SAMPLES / "src" / src)],
                             capture_output=True, timeout=120)
        if res.returncode == 0:
            bins[name] = out
    procs = {}
    for name, mode in CASES:
        if name not in bins:
            continue
        opts, scale = MODES[mode]
        data = tmp / ("%s.%s.data" % (name, mode))
        procs[(name, mode)] = (data, subprocess.Popen(
            [PERF, "--buildid-dir", str(buildid_dir), "record", "-q", "--sample-cpu",
             "-o", str(data)] + opts + ["--", str(bins[name]), scale],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    out = {}
    for key, (data, proc) in procs.items():
        if proc.wait(120) != 0 or not data.exists():
            continue
        text = _perf_script(data, buildid_dir, env)
        if _sample_count(text) < MIN_SAMPLES:
            # Sixteen recordings at once on a busy machine: a program may get
            # a handful of samples, and then its one exit sample is a fifth
            # of them (the matcher's min_fraction is 0.9).  Again, alone and
            # four times longer.
            name, mode = key
            opts, scale = MODES[mode]
            subprocess.run([PERF, "--buildid-dir", str(buildid_dir), "record", "-q", "--sample-cpu",
                            "-o", str(data)] + opts + ["--", str(bins[name]), str(4 * float(scale))],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            text = _perf_script(data, buildid_dir, env)
        out[key] = (data, text, buildid_dir)
    return out


# Fewer samples than this and one start-up or exit sample weighs more than
# the matcher's 10% allowance for them.
MIN_SAMPLES = 30


def _perf_script(data, buildid_dir, env):
    return subprocess.run([PERF, "--buildid-dir", str(buildid_dir), "script", "-i", str(data)],
                          env=env, capture_output=True, text=True, timeout=120).stdout


def _sample_count(text):
    """Samples in perf script's default output: their header lines."""
    return sum(1 for line in text.splitlines() if line and not line[0].isspace())


def _ours(data, buildid_dir):
    rc, text, err = run_cli(["script", str(data), "--buildid-dir", str(buildid_dir)])
    assert rc == 0, err
    return text


@requires_perf
@pytest.mark.parametrize("program,mode", CASES, ids=["%s.%s" % c for c in CASES])
def test_frames_agree_with_perf_now(live, program, mode):
    """As test_frames_agree_with_perf on the goldens: every sample and header
    equal, every frame perf resolved equal or one of the deliberate kinds."""
    if (program, mode) not in live:
        pytest.skip("could not build or record %s here" % program)
    data, perf_text, buildid_dir = live[(program, mode)]
    ours = _ours(data, buildid_dir)
    stats = compare(ours, perf_text, include_kernel=True)
    assert stats["samples_ours"] == stats["samples_perf"] > 0
    assert stats["header_diff"] == 0
    assert agreement(stats) >= 0.995, stats["other"][:5]
    assert len(stats["other"]) <= 0.005 * max(1, stats["perf_resolved"]), stats["other"][:5]


@requires_perf
@requires_libc_debug_here
@pytest.mark.parametrize("program,mode", CASES, ids=["%s.%s" % c for c in CASES])
def test_stacks_match_ground_truth_now(live, program, mode):
    """As test_stacks_match_ground_truth: our stacks against the programs'
    real call stacks, on a recording made now."""
    if (program, mode) not in live:
        pytest.skip("could not build or record %s here" % program)
    data, _, buildid_dir = live[(program, mode)]
    truth = _truth(os.path.splitext(PROGRAMS[program][2])[0])   # plt_loop_ibt: plt_loop's
    score = _matcher().score(truth, _ours(data, buildid_dir), mode)
    assert score["fraction"] >= truth["min_fraction"], score["top_unmatched"]
