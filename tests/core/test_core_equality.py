"""The compiled core (perfdata.core._core) against the pure-Python path,
which stays the reference: the same bytes out, the same exit code, the same
messages, on every bundled recording and on the corpus, for `script` (the
default fields and -F variants the core handles), `collapse`, `report` and
`flamegraph`.

Each run is made twice in this process: with PERFDATA_CORE=pure and without
(the compiled core where it is built).  Where the extension is not built
(no compiler when it was installed) the tests skip: there is nothing to
compare."""
from __future__ import annotations

from pathlib import Path

import pytest

from perfdata.core import CORE_ENV, compiled

from conftest import (SAMPLE_SYMBOL_ARGS, corpus_dir, corpus_perfdata_names, requires_corpus,
                      run_cli)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BUNDLED = sorted(p.name for p in SAMPLES.glob("*.data"))
FRAME_POINTER = [name for name in BUNDLED if name.endswith(".fp.data")]
# the recordings whose every sample report's core counts (-g and plain
# sampling; not DWARF stacks, not tracepoints)
REPORT_TAKEN = [name for name in BUNDLED if "dwarf" not in name and name != "tracepoint.data"]
# -F variants of the fields the core prints (and two it hands back: srcline
# and addr go through the Python path for the whole event)
FIELD_VARIANTS = [
    [],
    ["-F", "comm,tid,time,ip,sym,dso"],
    ["-F", "+pid"],
    ["-F", "-period"],
    ["-F", "comm,pid,tid,cpu,time,event,ip,sym,symoff"],
    ["-F", "ip,sym"],
    ["-F", "+srcline"],
    ["-F", "+addr"],
    ["--ns"],
]

requires_core = pytest.mark.skipif(compiled() is None,
                                   reason="the compiled core is not built here")


def _both(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> tuple[tuple, tuple, list[dict]]:
    """(pure run, compiled run, the compiled core's counts of each of its
    drivers): each run (exit code, stdout, stderr)."""
    from perfdata.core import script as core_script
    drivers: list[core_script.ScriptCore] = []
    init = core_script.ScriptCore.__init__

    def watched(self: core_script.ScriptCore, *a: object, **kw: object) -> None:
        init(self, *a, **kw)  # type: ignore[arg-type]
        drivers.append(self)

    monkeypatch.setenv(CORE_ENV, "pure")
    pure = run_cli(args)
    monkeypatch.delenv(CORE_ENV)
    monkeypatch.setattr(core_script.ScriptCore, "__init__", watched)
    fast = run_cli(args)
    return pure, fast, [d.counts() for d in drivers]


def _assert_same(pure: tuple, fast: tuple) -> None:
    assert fast[0] == pure[0]
    assert fast[2] == pure[2]
    if fast[1] != pure[1]:
        # (the first line that differs, not 10 MB of text)
        a, b = pure[1].splitlines(), fast[1].splitlines()
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail("line %d: pure %r, compiled %r (%d / %d lines)"
                    % (at + 1, a[at] if at < len(a) else None, b[at] if at < len(b) else None,
                       len(a), len(b)))


@requires_core
@pytest.mark.parametrize("name", BUNDLED)
def test_script_bundled(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    pure, fast, counts = _both(monkeypatch, ["script", "-j", "1", str(SAMPLES / name)] +
                               SAMPLE_SYMBOL_ARGS)
    _assert_same(pure, fast)
    if name in FRAME_POINTER:
        # (not vacuous: the core made the frame-pointer samples' text)
        assert counts and counts[0]["made"] > 0 and counts[0]["handed_back"] == 0, counts


@requires_core
@pytest.mark.parametrize("fields", FIELD_VARIANTS[1:], ids=lambda f: " ".join(f))
@pytest.mark.parametrize("name", FRAME_POINTER)
def test_script_fields(monkeypatch: pytest.MonkeyPatch, name: str, fields: list[str]) -> None:
    pure, fast, counts = _both(monkeypatch, ["script", "-j", "1", str(SAMPLES / name)] +
                               fields + SAMPLE_SYMBOL_ARGS)
    _assert_same(pure, fast)
    if fields != ["-F", "+srcline"] and fields != ["-F", "+addr"]:
        assert counts and counts[0]["made"] > 0, counts


@requires_core
@pytest.mark.parametrize("command", [["collapse"], ["report"], ["report", "--children"]],
                         ids=" ".join)
@pytest.mark.parametrize("name", BUNDLED)
def test_collapse_report_bundled(monkeypatch: pytest.MonkeyPatch, name: str,
                                 command: list[str]) -> None:
    pure, fast, counts = _both(monkeypatch, command + ["-j", "1", str(SAMPLES / name)] +
                               SAMPLE_SYMBOL_ARGS)
    _assert_same(pure, fast)
    if name in FRAME_POINTER if command == ["collapse"] else \
            command == ["report"] and name in REPORT_TAKEN:
        # (not vacuous: the core counted the frame-pointer samples, and
        # report's those without a callchain too)
        assert counts and counts[0]["made"] > 0 and counts[0]["handed_back"] == 0, counts


# report's options the core counts for (sort keys, -n, -q, --percent-limit),
# and two it leaves to the Python path (a histogram filter, --children)
REPORT_VARIANTS = [["-s", "pid"], ["-s", "cpu,dso"], ["-s", "sym,comm"], ["-s", "dso"],
                   ["-n"], ["-q", "-n", "-s", "comm,pid,cpu,dso,sym"], ["--percent-limit", "5"],
                   ["--comm", "nonexistent,other"], ["--children", "-n", "-s", "sym"]]


@requires_core
@pytest.mark.parametrize("options", REPORT_VARIANTS, ids=" ".join)
@pytest.mark.parametrize("name", FRAME_POINTER)
def test_report_options(monkeypatch: pytest.MonkeyPatch, name: str,
                        options: list[str]) -> None:
    pure, fast, counts = _both(monkeypatch, ["report", str(SAMPLES / name)] + options +
                               SAMPLE_SYMBOL_ARGS)
    _assert_same(pure, fast)
    if "--comm" not in options and "--children" not in options:
        # (not vacuous: one process by default, the core counted the samples)
        assert counts and counts[0]["made"] > 0 and counts[0]["handed_back"] == 0, counts


# the flame graph's options that change its tree (roots, weight, event)
FLAMEGRAPH_VARIANTS = [[], ["-j", "1"], ["--weight", "period"], ["--pid-root"], ["--tid-root"],
                       ["--colors", "dso", "--max-depth", "3"], ["--event-filter", "cycles"]]


@requires_core
@pytest.mark.parametrize("options", FLAMEGRAPH_VARIANTS, ids=lambda o: " ".join(o) or "default")
@pytest.mark.parametrize("name", BUNDLED)
def test_flamegraph(monkeypatch: pytest.MonkeyPatch, name: str, options: list[str]) -> None:
    pure, fast, counts = _both(monkeypatch, ["flamegraph", str(SAMPLES / name)] + options +
                               SAMPLE_SYMBOL_ARGS)
    _assert_same(pure, fast)
    if name in FRAME_POINTER and options != ["--event-filter", "cycles"]:
        # (not vacuous: one process by default, the core counted the samples)
        assert counts and counts[0]["made"] > 0 and counts[0]["handed_back"] == 0, counts


# collapse's options (stackcollapse-perf.pl's); --addrs goes to the Python path
COLLAPSE_VARIANTS = [["--pid-root"], ["--tid-root"], ["--samples"], ["--kernel"], ["--all"],
                     ["--addrs"], ["--event-filter", "cycles"]]


@requires_core
@pytest.mark.parametrize("options", COLLAPSE_VARIANTS, ids=" ".join)
@pytest.mark.parametrize("name", FRAME_POINTER)
def test_collapse_options(monkeypatch: pytest.MonkeyPatch, name: str,
                          options: list[str]) -> None:
    pure, fast, _ = _both(monkeypatch, ["collapse", "-j", "1", str(SAMPLES / name)] + options +
                          SAMPLE_SYMBOL_ARGS)
    _assert_same(pure, fast)


@requires_core
def test_script_sharded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers, blocks of samples dealt to both: the core's texts come
    back by block, in order (the largest frame-pointer recording here)."""
    name = max(FRAME_POINTER, key=lambda n: (SAMPLES / n).stat().st_size)
    from perfdata.run import sharded
    monkeypatch.setattr(sharded, "SHARD_MIN_BYTES", 0)
    from perfdata.views import script
    monkeypatch.setattr(script, "SHARD_BLOCK", 16)
    pure, fast, _ = _both(monkeypatch, ["script", "-j", "2", str(SAMPLES / name)] +
                          SAMPLE_SYMBOL_ARGS)
    _assert_same(pure, fast)


@requires_core
@requires_corpus
@pytest.mark.parametrize("name", corpus_perfdata_names())
def test_script_corpus(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    path = str(corpus_dir() / "perfdata" / name)
    for args in (["script", "-j", "1", path], ["script", "-j", "1", "-F", "+pid", path],
                 ["collapse", "-j", "1", path], ["report", "-j", "1", path],
                 ["report", "-j", "1", "-n", "-s", "pid,cpu,sym", path],
                 ["flamegraph", "-j", "1", path]):
        pure, fast, _ = _both(monkeypatch, args)
        _assert_same(pure, fast)


@requires_core
@pytest.mark.parametrize("extra", [[], ["--show-task-events", "--show-mmap-events"],
                                   ["--header"]], ids=lambda e: " ".join(e) or "default")
def test_script_process_output(extra: list[str]) -> None:
    """The command as a process, its standard output a file: the core's texts
    go to the binary buffer under the text layer (utf8_buffer), between
    what the text layer writes (side events, the header) in order."""
    import os
    import subprocess
    import sys
    name = max(FRAME_POINTER, key=lambda n: (SAMPLES / n).stat().st_size)
    cmd = [sys.executable, "-m", "perfdata", "script", str(SAMPLES / name)] + extra + \
        SAMPLE_SYMBOL_ARGS
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    env.pop(CORE_ENV, None)
    fast = subprocess.run(cmd, capture_output=True, env=env, timeout=300)
    pure = subprocess.run(cmd, capture_output=True, env=dict(env, **{CORE_ENV: "pure"}),
                          timeout=300)
    assert fast.returncode == pure.returncode == 0
    assert fast.stderr == pure.stderr
    assert fast.stdout == pure.stdout and fast.stdout.count(b"\n") > 1000
