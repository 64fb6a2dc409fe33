"""A real Dask cluster for the fleet tests (tests/fleet/test_fleet*.py), and the
fleet commands run as a user runs them.

`dask_scheduler(folder)` starts a `dask scheduler` and `workers` `dask
worker` processes (one thread each) on 127.0.0.1, yields the scheduler's
address and stops them; `fleet(*args)` runs `python3 cli.py fleet ARGS`
(this checkout's code on the workers too: PYTHONPATH)."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def env():
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([out["PYTHONPATH"]]
                                                       if out.get("PYTHONPATH") else []))
    return out


@contextlib.contextmanager
def dask_scheduler(tmp, workers=2):
    """The address of a scheduler with `workers` single-thread workers, all
    separate processes, torn down at exit."""
    sched_file = tmp / "scheduler.json"
    procs = []
    log = open(tmp / "dask.log", "wb")
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(sched_file)],
            stdout=log, stderr=log, env=env(), cwd=tmp, start_new_session=True))
        deadline = time.time() + 60
        while not sched_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert sched_file.exists(), (tmp / "dask.log").read_text()
        for i in range(workers):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", "--scheduler-file", str(sched_file),
                 "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                 "--name", "w%d" % i, "--local-directory", str(tmp / ("w%d" % i))],
                stdout=log, stderr=log, env=env(), cwd=tmp, start_new_session=True))
        from distributed import Client
        address = json.loads(sched_file.read_text())["address"]
        with Client(address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=90)
        yield address
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        log.close()


def fleet(*args):
    """(exit status, stdout, stderr) of `perfdata fleet ARGS`."""
    proc = subprocess.run([sys.executable, str(REPO / "cli.py"), "fleet"] + [str(a) for a in args],
                          capture_output=True, text=True, cwd=REPO, env=env(), timeout=600)
    return proc.returncode, proc.stdout, proc.stderr
