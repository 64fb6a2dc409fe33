"""Build the planted programs and record them with perf, for the diagnose,
buildids, archive and debuginfod tests.

Recordings use `--no-buildid-cache` and a private HOME, so neither perf nor
perfdata finds a copy of a binary in ~/.debug: the causes planted (stripped
binary, rebuilt binary) stay planted.
"""
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PERF = shutil.which("perf")
CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]


def have_tools(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    return "not installed: %s" % ", ".join(missing) if missing else None


def build(src, out, *extra, libs=()):
    subprocess.run(["gcc", *CFLAGS, *extra, "-o", str(out), os.path.join(HERE, src), *libs],
                   check=True, capture_output=True, timeout=60)
    return str(out)


def split_debug(exe, debug_out):
    """objcopy --only-keep-debug into debug_out, then strip the binary."""
    subprocess.run(["objcopy", "--only-keep-debug", exe, str(debug_out)], check=True,
                   capture_output=True, timeout=60)
    subprocess.run(["strip", "--strip-all", exe], check=True, capture_output=True, timeout=60)


def build_id(path):
    from symbolize import Binary
    b = Binary(str(path))
    try:
        return b.build_id
    finally:
        b.close()


def env_for(tmp):
    home = os.path.join(str(tmp), "home")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home)
    env.pop("DEBUGINFOD_URLS", None)
    return env


def record(tmp, exe, out, opts=("-g",), seconds="0.3", freq="1000", args=()):
    cmd = [PERF, "record", "-q", "--no-buildid-cache", "-e", "cpu-clock:u", "-F", freq,
           *opts, "-o", str(out), "--", exe, seconds, *args]
    res = subprocess.run(cmd, env=env_for(tmp), capture_output=True, timeout=120)
    if res.returncode != 0 or not os.path.exists(out):
        raise RuntimeError("perf record failed: %s" % res.stderr.decode(errors="replace"))
    return str(out)


def perf_script(tmp, data):
    res = subprocess.run([PERF, "script", "-i", str(data)], env=env_for(tmp),
                         capture_output=True, timeout=120)
    return res.stdout.decode(errors="replace")


def diagnose(data, *opts):
    """perfdata diagnose --json, in-process; (result dict, stderr)."""
    from conftest import run_cli
    rc, out, err = run_cli(["diagnose", str(data), "--json", *opts])
    assert rc == 0, err
    return json.loads(out), err


def cls(result, name):
    for c in result["classes"]:
        if c["class"] == name:
            return c
    return None
