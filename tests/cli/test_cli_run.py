"""The perfdata command (perfdata.cli.run, as `python -m perfdata` runs it): main(), then the process ends without
tearing the interpreter down.  What the run wrote still all arrives, its
exit code is main()'s, and the exit handlers still run."""
import os
import subprocess
import sys

from conftest import REPO, SAMPLES, run_cli
from test_archive import _tar_zst

def _command(args, env=None):
    return subprocess.run([sys.executable, "-m", "perfdata"] + list(args),
                          capture_output=True, text=True, cwd=REPO, timeout=300,
                          env=dict(os.environ, **(env or {})))


def test_whole_output_arrives_through_a_pipe():
    """Output larger than a pipe's buffer, with -j workers and without:
    every byte main() printed, the same as in-process."""
    data = str(SAMPLES / "threads.fp.data")
    rc, want, _ = run_cli(["script", data])
    assert rc == 0 and len(want) > 1 << 16
    for jobs in ("1", "2"):
        got = _command(["script", "-j", jobs, data])
        assert got.returncode == 0, got.stderr
        assert got.stdout == want


def test_exit_code_and_message_of_bad_input(tmp_path):
    bad = tmp_path / "bad.data"
    bad.write_bytes(b"PERFILE2" + b"\xff" * 200)
    got = _command(["script", str(bad)])
    assert got.returncode == 2
    assert got.stderr.startswith("perfdata: error: ") and got.stderr.count("\n") == 1, got.stderr


def test_exit_handlers_run(tmp_path):
    """--archive unpacks into a temporary folder an exit handler removes."""
    arc = tmp_path / "a.tar.zst"
    _tar_zst(arc, [(".build-id/ab/cdef0123.debug", "file", b"not elf")])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    got = _command(["script", str(SAMPLES / "threads.fp.data"), "--archive", str(arc)],
                   env={"TMPDIR": str(tmp)})
    assert got.returncode == 0, got.stderr
    assert os.listdir(tmp) == []


def test_names_an_ascii_stream_cannot_encode_are_written_escaped(tmp_path):
    """A comm perf prints as its bytes ("thréad") on an output whose
    encoding lacks it (PYTHONIOENCODING=ascii): written escaped, exit 0, the
    same lines as a UTF-8 output's otherwise; not an internal error."""
    data = (SAMPLES / "threads.fp.data").read_bytes()
    assert data.count(b"threads\0")
    renamed = tmp_path / "thread_e.data"
    renamed.write_bytes(data.replace(b"threads\0", "thréad".encode() + b"\0"))   # (same length)
    utf8 = _command(["script", str(renamed)], env={"PYTHONIOENCODING": "utf-8"})
    assert utf8.returncode == 0 and "thréad " in utf8.stdout, utf8.stderr
    for jobs in ("1", "3"):
        got = _command(["script", "-j", jobs, str(renamed)], env={"PYTHONIOENCODING": "ascii"})
        assert got.returncode == 0, got.stderr
        assert got.stdout == utf8.stdout.replace("é", "\\xe9")


def test_a_low_limit_on_open_files_is_raised():
    """Each binary a run names addresses in stays mapped, a descriptor each:
    started with a soft limit of 6 open files (the hard one 4096 or less), the run
    raises it and reads every binary (before: the program and libc
    "unreadable: ... Too many open files", 1,338 more frames [unknown]);
    its output is the unlimited run's."""
    import resource
    data = str(SAMPLES / "threads.fp.data")
    rc, want, _ = run_cli(["script", data])
    assert rc == 0

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (6, hard))
    got = subprocess.run([sys.executable, "-m", "perfdata", "script", data], capture_output=True,
                         text=True, cwd=REPO, timeout=300, preexec_fn=low_limit)
    assert got.returncode == 0 and "Too many open files" not in got.stderr, got.stderr
    assert got.stdout == want
