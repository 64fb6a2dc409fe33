"""Shared fixtures of the reader tests: the corpus, perf, and files recorded with perf.

* `corpus_dir()` / `corpus` fixture: /work/shared/corpus (reached from the repo as
  ../shared/corpus) or $PERFDATA_CORPUS; tests that need it skip when absent.
* `requires_perf`: skip marker when `perf` cannot record here (absent, or
  perf_event_paranoid forbids it); `requires_perf_tool`: when perf is absent.
* `recorded` (session scope): a handful of small perf.data files recorded once
  with perf into a tmp dir, by name; a file that perf could not make is missing
  from the dict and the tests using it skip.
"""
import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import skip_gate

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent
# The programs the tests start (`python -m perfdata`, perf's scripts through
# perfdata) import this checkout's code, as the tests themselves do, whatever
# is installed and wherever they run (a worktree beside an editable install
# of another checkout would otherwise test that one).
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                   if p and p != str(REPO)])

# Symbol tables the runs under test build are cached here, not in the user's
# ~/.cache/perfdata: every session starts cold and leaves nothing behind.
os.environ["PERFDATA_CACHE_DIR"] = tempfile.mkdtemp(prefix="perfdata-test-cache.")
atexit.register(shutil.rmtree, os.environ["PERFDATA_CACHE_DIR"], True)

SAMPLES = REPO / "samples"
SAMPLE_BUILDIDS = SAMPLES / "buildids"


def _sample_path_map():
    """(OLD, NEW) pairs that find every binary of the bundled recordings in
    the repository, wherever the clone is: samples/record.sh recorded them
    in its own checkout (an absolute path inside the recordings, which need
    not exist here), and the pipe-mode and some -z recordings carry no
    build-id to find libc by.  Read off samples/buildids/INDEX.txt."""
    entries = []
    for line in (SAMPLE_BUILDIDS / "INDEX.txt").read_text().splitlines():
        bid, _, path = line.partition(" ")
        if path.startswith("/"):
            entries.append((bid, path))
    programs = [p for _, p in entries if os.path.basename(os.path.dirname(p)) == "bin"
                and not p.startswith("/usr/")]
    root = os.path.dirname(os.path.dirname(programs[0]))
    out = [(root, str(SAMPLES))]
    for bid, path in entries:
        if not path.startswith(root + "/"):
            out.append((path, str(SAMPLE_BUILDIDS / ".build-id" / bid[:2] / bid[2:])))
    return out


#: --path-map pairs for the bundled recordings (see _sample_path_map)
SAMPLE_PATH_MAP = _sample_path_map()
#: the options that make a bundled recording symbolize from the repository alone
SAMPLE_SYMBOL_ARGS = ["--debug-dir", str(SAMPLE_BUILDIDS)] + [
    a for old, new in SAMPLE_PATH_MAP for a in ("--path-map", "%s=%s" % (old, new))]



@functools.lru_cache(maxsize=None)
def _sample_vdso_by_release():
    """{kernel release: the path of its vdso image in samples/buildids},
    read off the bundled recordings that name their vdso's build-id."""
    import perfdata
    out = {}
    for data in sorted(SAMPLES.glob("*.data")):
        if not data.is_file():
            continue
        with perfdata.open(str(data)) as pf:
            release = pf.feature(perfdata.Feature.OSRELEASE)
            entries = pf.feature(perfdata.Feature.BUILD_ID) or []
        for e in entries:
            image = SAMPLE_BUILDIDS / ".build-id" / e["build_id"].hex()[:2] / e["build_id"].hex()[2:]
            if e["filename"] == "[vdso]" and release and image.is_file():
                out.setdefault(release, str(image))
    return out


def sample_vdso(data):
    """The vdso image of the kernel a bundled recording was made on, for a
    recording that names no build-id for its vdso (perf record
    --buildid-mmap): the goldens name its vdso code from that image, which
    another recording made on the same kernel names by build-id; None for
    the others (their vdso is found by its build-id)."""
    import perfdata
    with perfdata.open(str(data)) as pf:
        release = pf.feature(perfdata.Feature.OSRELEASE)
        entries = pf.feature(perfdata.Feature.BUILD_ID) or []
    if any(e["filename"] == "[vdso]" for e in entries):
        return None
    return _sample_vdso_by_release().get(release)


# The bundled recordings' goldens name libc's local functions from the debug
# file of the recording machine's libc (libc6-dbg of Debian 12's glibc 2.36),
# found by libc's build-id; tests that compare with them need that file.
SAMPLE_LIBC_BUILD_ID = "93ac61ec5a8eb1396f9fbd350e3169a558528a40"
SAMPLE_LIBC_DEBUG = Path("/usr/lib/debug/.build-id") / SAMPLE_LIBC_BUILD_ID[:2] / (
    SAMPLE_LIBC_BUILD_ID[2:] + ".debug")
requires_sample_libc_debug = pytest.mark.skipif(
    not SAMPLE_LIBC_DEBUG.exists(),
    reason="needs the recording machine's exact libc debug file, %s (libc6-dbg of glibc "
           "2.36, Debian 12), which the goldens' libc names come from; "
           "test_script_live.py runs the same checks on recordings made here"
           % SAMPLE_LIBC_DEBUG)



def _libc_debug_here():
    """The debug file (libc6-dbg) of the libc this interpreter runs on, by
    build-id under /usr/lib/debug, or None."""
    try:
        with open("/proc/self/maps") as f:
            libc = next((line.split()[-1] for line in f if "/libc.so" in line), None)
        if libc is None:
            return None
        from symbolize import Binary
        b = Binary(libc)
        try:
            bid = b.build_id
        finally:
            b.close()
    except (OSError, ImportError):
        return None
    if not bid:
        return None
    path = Path("/usr/lib/debug/.build-id") / bid[:2] / (bid[2:] + ".debug")
    return path if path.exists() else None


#: tests on recordings made here whose checks name libc's local functions
#: (__libc_start_call_main, __strlen_evex, __restore_rt, clone3): those names
#: exist only in libc's debug file, for perfdata, perf and gdb alike.
requires_libc_debug_here = pytest.mark.skipif(
    _libc_debug_here() is None,
    reason="libc's local functions are named only from its debug file (Debian: "
           "apt-get install libc6-dbg), not installed here")



def _kernel_symbols_readable():
    """/proc/kallsyms with real addresses (not hidden by kptr_restrict, not
    an empty stand-in)."""
    try:
        with open("/proc/kallsyms") as f:
            for _, line in zip(range(1000), f):
                if line.split(" ", 1)[0].strip("0"):
                    return True
    except OSError:
        pass
    return False


#: tests of kernel names on recordings made here: they need this kernel's symbols
requires_kernel_symbols_here = pytest.mark.skipif(
    not _kernel_symbols_readable(),
    reason="/proc/kallsyms shows no kernel addresses here (kptr_restrict, or hidden)")

PERF = shutil.which("perf")
# A short CPU-bound workload that exists on any box running these tests.
WORKLOAD = [sys.executable, "-c", "sum(i * i for i in range(400000))"]


def corpus_dir():
    env = os.environ.get("PERFDATA_CORPUS")
    if env:
        path = Path(env)
        # Accept both the corpus root and its perfdata/ directory.
        return path.parent if path.name == "perfdata" else path
    return Path(__file__).resolve().parents[2] / "shared" / "corpus"


def have_corpus():
    root = corpus_dir()
    return (root / "perfdata").is_dir() and (root / "MANIFEST.md").is_file()


def corpus_perfdata_names():
    """The names of the corpus's perf.data files, sorted ([] without it)."""
    if not have_corpus():
        return []
    return sorted(p.name for p in (corpus_dir() / "perfdata").iterdir() if p.is_file())


def _perf_can_record():
    if PERF is None:
        return False, "perf is not installed"
    try:
        out = subprocess.run([PERF, "record", "-q", "-o", os.devnull, "-e", "task-clock",
                              "--", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, "perf record failed: %s" % exc
    if out.returncode != 0:
        return False, "perf record cannot run here: %s" % out.stderr.decode(
            "utf-8", "replace").strip().splitlines()[-1:]
    return True, ""


_CAN_RECORD, _WHY_NOT = _perf_can_record()
#: perf can record here (the `recorded` fixture needs it and skips without it)
requires_perf = pytest.mark.skipif(not _CAN_RECORD, reason=_WHY_NOT or "perf missing")
#: perf is installed: enough for `perf report` / `perf script` on existing files
requires_perf_tool = pytest.mark.skipif(PERF is None, reason="perf is not installed")
requires_corpus = pytest.mark.skipif(not have_corpus(),
                                     reason="corpus not found at %s (set PERFDATA_CORPUS)"
                                     % corpus_dir())


def perf_version():
    if PERF is None:
        return None
    out = subprocess.run([PERF, "--version"], capture_output=True, text=True)
    return out.stdout.strip()


@pytest.fixture(scope="session")
def corpus():
    if not have_corpus():
        pytest.skip("corpus not found at %s (set PERFDATA_CORPUS)" % corpus_dir())
    return corpus_dir()


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, timeout=120, **kw)


# name -> (perf record options, workload); "-o FILE" is added.
RECORDINGS = {
    "fp": (["-g", "-F", "2000"], WORKLOAD),
    "plain": (["-F", "2000"], WORKLOAD),
    "dwarf": (["--call-graph=dwarf,4096", "-F", "300"], WORKLOAD),
    "zstd": (["-z", "-g", "-F", "2000"], WORKLOAD),
    "twoev": (["-e", "cpu-clock,task-clock", "-F", "2000"], WORKLOAD),
    "tracepoint": (["-e", "sched:sched_switch", "-a"], ["sleep", "0.2"]),
    "threads": (["--threads", "-F", "2000"], WORKLOAD),
    "group": (["-e", "{cpu-clock,task-clock}:S", "-F", "1000"], WORKLOAD),
}


@pytest.fixture(scope="session")
def recorded(tmp_path_factory):
    """{name: path} of small files recorded with perf 6.x (see RECORDINGS), plus
    'pipe' (perf record -o -) and 'fp_inject_pipe', 'zstd_inject_pipe' (perf inject
    of 'fp' and 'zstd' to a pipe)."""
    if not _CAN_RECORD:
        pytest.skip(_WHY_NOT)
    out = {}
    tmp = tmp_path_factory.mktemp("recorded")
    # perf record spends ~1 s of mostly idle start-up and wind-down per run:
    # run them all at once.
    procs = {}
    for name, (opts, workload) in RECORDINGS.items():
        path = tmp / ("%s.data" % name)
        procs[name] = (path, subprocess.Popen(
            [PERF, "record", "-q", "-o", str(path)] + opts + ["--"] + workload,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    pipe_path = tmp / "pipe.data"
    with open(pipe_path, "wb") as f:
        pipe_proc = subprocess.Popen([PERF, "record", "-q", "-g", "-F", "2000", "-o", "-",
                                      "--"] + WORKLOAD, stdout=f, stderr=subprocess.DEVNULL)
    for name, (path, proc) in procs.items():
        if proc.wait(120) == 0 and path.exists():
            out[name] = path
    if pipe_proc.wait(120) == 0 and pipe_path.stat().st_size > 16:
        out["pipe"] = pipe_path
    # The same recordings converted to pipe mode by perf inject (perf 6.1's
    # inject has no -z and passes COMPRESSED records through as they are).
    for name in ("fp", "zstd"):
        if name not in out:
            continue
        path = tmp / ("%s_inject_pipe.data" % name)
        with open(path, "wb") as f:
            res = subprocess.run([PERF, "inject", "-i", str(out[name]), "-o", "-"],
                                 stdout=f, stderr=subprocess.PIPE, timeout=120)
        if res.returncode == 0 and path.stat().st_size > 16:
            out["%s_inject_pipe" % name] = path
    return out


def need(recorded, name):
    if name not in recorded:
        pytest.skip("perf could not record %r here" % name)
    return recorded[name]


def run_cli(args):
    """Run the perfdata CLI in-process; return (rc, stdout, stderr)."""
    import contextlib
    import io

    from perfdata import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(list(args))
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def damaged_dwarf_recording(tmp_path):
    """A DWARF recording made now (many rounds: DWARF samples fill perf's
    buffers fast) with a SAMPLE record after its middle round damaged (its
    size below a header's): the -j tests' file, where what comes before the
    fault is printed and then the fault.  Skips if perf gave too few rounds."""
    import subprocess
    import perfdata
    from perfdata.format.constants import RecordType as RT
    from test_recovery import corrupt, top_records
    src = tmp_path / "dwarf.data"
    # 0.6 s of CPU, not of the clock: on a busy machine (CI on 2 cores) a
    # wall-clock spin got too few samples for 4 rounds.
    spin = "import time\nwhile time.process_time() < 0.6: pass"
    subprocess.run([PERF, "record", "-q", "--call-graph=dwarf,2048", "-F", "2000", "-o",
                    str(src), "--", sys.executable, "-c", spin], capture_output=True, timeout=120)
    recs, little = top_records(src)
    end = perfdata.open(str(src)).data_range[1]
    rounds = [i for i, r in enumerate(recs) if r[1] == RT.FINISHED_ROUND]
    if len(rounds) < 4:
        pytest.skip("the recording has %d rounds" % len(rounds))
    victim = next(r for r in recs[rounds[len(rounds) // 2] + 1:] if r[1] == RT.SAMPLE)
    bad = tmp_path / "bad.data"
    bad.write_bytes(corrupt(src.read_bytes(), little, victim, "size_below_header", end))
    return bad


# The C a test program spins in: leaf() called from mid(), each a frame of
# its own (noinline), the sums kept (sink) so that nothing is optimized away.
SPIN_LEAF_C = r"""volatile long sink;
__attribute__((noinline)) long leaf(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) { s += i * i % 7; sink = s; }
    return s;
}
__attribute__((noinline)) long mid(long n) { long r = leaf(n); sink = r; return r + 1; }
"""


def can_unshare_mount():
    """unshare --pid --mount --fork and a tmpfs mount in it work here (root)."""
    if shutil.which("unshare") is None:
        return False
    res = subprocess.run(["unshare", "--pid", "--mount", "--fork", "sh", "-c",
                          "mount -t tmpfs none /mnt"], capture_output=True, timeout=30)
    return res.returncode == 0


def pytest_configure(config):
    """On CI (.ci/run sets PERFDATA_SKIP_GATE=1) a skip whose reason is not
    listed in tests/ci_allowed_skips.txt fails the run (tests/skip_gate.py)."""
    skip_gate.register(config)
