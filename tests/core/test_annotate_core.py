"""The compiled leaf counter of `perfdata annotate` (perfdata.core._core
LeafCounter, driven by perfdata/core/annotate.py) against the pure-Python
path (views/annotate_samples.py LeafCounts), which stays the reference: the
same samples and period at every address of every function, and the same
totals per event, on every bundled recording and on a build recorded now
(many processes of one compiler, kernel samples); the same bytes of
`annotate --json`.  Where the extension is not built the tests skip."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfdata.core import CORE_ENV, compiled

from conftest import (PERF, SAMPLE_SYMBOL_ARGS, corpus_dir, corpus_perfdata_names,
                      requires_corpus, requires_perf, run_cli)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BUNDLED = sorted(p.name for p in SAMPLES.glob("*.data"))

requires_core = pytest.mark.skipif(compiled() is None or
                                   not hasattr(compiled(), "LeafCounter"),
                                   reason="the compiled core is not built here")


def _gathered(path: Path, extra: list[str]) -> tuple[dict, dict, dict | None]:
    """({function key: (hits by address, period by address)}, {event:
    (samples, period)}, the compiled counter's counts or None) of one
    annotate run's gathering."""
    from perfdata.cli import build_parser
    from perfdata.core import annotate as core_annotate
    from perfdata.views.annotate_samples import gather
    from perfdata.views.options import SampleRun
    made: list = []
    real = core_annotate.compiled_leaves

    def watched(*a: object) -> object:
        got = real(*a)  # type: ignore[arg-type]
        if got is not None:
            made.append(got)
        return got
    core_annotate_leaves = "perfdata.views.annotate_samples.compiled_leaves"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core_annotate_leaves, watched)
        args = build_parser("annotate").parse_args(["annotate", str(path)] + extra)
        args.hide_call_graph, args.no_inline = True, True
        run = SampleRun(args, "annotate")
        got = gather(run.samples, run, None)
    functions = {key: (dict(fs.hits), dict(fs.period))
                 for key, fs in got.functions.items() if fs.hits}
    return functions, dict(got.totals), made[0].counter.counts() if made else None


def _assert_equal(monkeypatch: pytest.MonkeyPatch, path: Path, extra: list[str]) -> dict:
    monkeypatch.setenv(CORE_ENV, "pure")
    pure_functions, pure_totals, none = _gathered(path, extra)
    assert none is None
    monkeypatch.delenv(CORE_ENV)
    functions, totals, counts = _gathered(path, extra)
    assert counts is not None
    assert totals == pure_totals
    assert functions.keys() == pure_functions.keys()
    for key, got in functions.items():
        assert got == pure_functions[key], key
    return counts


@requires_core
@pytest.mark.parametrize("name", BUNDLED)
def test_counts_equal_pure_on_bundled(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    _assert_equal(monkeypatch, SAMPLES / name, SAMPLE_SYMBOL_ARGS)


@requires_core
@pytest.mark.parametrize("name", BUNDLED)
def test_json_equal_pure_on_bundled(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The command's bytes, its warnings among them (named at the end of
    the stream by the counter, as they come by the Python path)."""
    args = ["annotate", str(SAMPLES / name), "--json", "--percent-limit", "0"] + \
        SAMPLE_SYMBOL_ARGS
    monkeypatch.setenv(CORE_ENV, "pure")
    pure = run_cli(args)
    monkeypatch.delenv(CORE_ENV)
    assert run_cli(args) == pure


@requires_core
@requires_corpus
@pytest.mark.parametrize("name", corpus_perfdata_names())
def test_counts_equal_pure_on_the_corpus(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Other machines' and tools' recordings (simpleperf, quipper, ...): the
    same counts, or the same error, both ways."""
    import perfdata
    path = corpus_dir() / "perfdata" / name
    got = []
    for pure in (True, False):
        if pure:
            monkeypatch.setenv(CORE_ENV, "pure")
        else:
            monkeypatch.delenv(CORE_ENV)
        try:
            got.append(_gathered(path, [])[:2])
        except perfdata.PerfDataError as exc:
            got.append(("error", str(exc)))
    assert got[0] == got[1]


@pytest.fixture(scope="module")
def build_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build of a few C files recorded now, kernel samples and all: many
    short processes of one compiler (cc1), each mapping it anew."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("needs gcc and make")
    d = tmp_path_factory.mktemp("annotate-core")
    for k in range(3):
        body = "".join(" for (int i = 0; i < n; i++) s += a[i] * %d ^ (s >> %d);\n"
                       % (j + 3, j % 7 + 1) for j in range(150))
        (d / ("f%d.c" % k)).write_text("int f%d(int *a, int n) {\n int s = 0;\n%s return s;\n}\n"
                                       % (k, body))
    (d / "Makefile").write_text("all: f0.o f1.o f2.o\n%.o: %.c\n\tgcc -O2 -c $< -o $@\n")
    data = d / "make.data"
    subprocess.run([PERF, "record", "-q", "-F", "5000", "-o", str(data), "--", "make", "-B",
                    "-j2"], cwd=d, check=True, capture_output=True, timeout=300)
    return data


@requires_core
@requires_perf
def test_counts_equal_pure_on_a_build(monkeypatch: pytest.MonkeyPatch,
                                      build_recording: Path) -> None:
    counts = _assert_equal(monkeypatch, build_recording, [])
    # (the counter took most samples: the comparison is of its counts)
    assert counts["made"] > 1000 and counts["made"] > 10 * counts["handed_back"], counts


@requires_core
@requires_perf
def test_json_equal_pure_on_a_build(monkeypatch: pytest.MonkeyPatch,
                                    build_recording: Path) -> None:
    args = ["annotate", str(build_recording), "--json", "--percent-limit", "0.5"]
    monkeypatch.setenv(CORE_ENV, "pure")
    pure = run_cli(args)
    monkeypatch.delenv(CORE_ENV)
    assert run_cli(args) == pure
    assert pure[0] == 0, pure[2]


MANY_EVENTS = ["threads_stat.data", "two_events.data", "tracepoint.data"]


@requires_core
@pytest.mark.parametrize("name", MANY_EVENTS)
def test_each_event_alone_equals_pure(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """-e: the other events' samples are dropped by the counter, as by the
    Python path (recordings of two events)."""
    import perfdata
    path = SAMPLES / name
    with perfdata.open(str(path)) as pf:
        names = [ea.name for ea in pf.attrs]
    assert len(names) > 1
    for event in names:
        args = ["annotate", str(path), "--json", "--percent-limit", "0", "-e", event] + \
            SAMPLE_SYMBOL_ARGS
        monkeypatch.setenv(CORE_ENV, "pure")
        pure = run_cli(args)
        monkeypatch.delenv(CORE_ENV)
        assert run_cli(args) == pure


def _callchains_cut(src: Path, dst: Path, every: int) -> int:
    """dst: src with every `every`-th sample's callchain nr made to run past
    its body's end (the decoder refuses such a sample: 'count N of 8-byte
    items exceeds the bytes left'); the number of samples spoilt."""
    from perfdata.core.annotate import leaf_layout
    from perfdata.format import PerfFile
    data = bytearray(src.read_bytes())
    spoilt = 0
    for n, rec in enumerate(r for r in PerfFile(str(src)).records() if r.type == 9):
        layout = leaf_layout(rec.attr)
        assert layout is not None and layout.callchain >= 0
        if n % every == every - 1:
            at = rec.offset + 8 + layout.callchain     # (after the 8-byte header)
            data[at:at + 8] = ((len(rec.body) - layout.size) // 8 + 1).to_bytes(8, "little")
            spoilt += 1
    dst.write_bytes(bytes(data))
    return spoilt


@requires_core
def test_samples_the_decoder_refuses_are_not_counted(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """A sample whose callchain runs past its end is skipped by the decoder
    with a warning; neither counter may count it by its ip alone, also where
    a good sample at the same address was counted before (a fuzz input
    found the compiled counter doing so)."""
    src = SAMPLES / "plt_loop.fp.data"
    spoilt = _callchains_cut(src, tmp_path / "cut.data", 3)
    assert spoilt > 10
    _, good_totals, _ = _gathered(src, SAMPLE_SYMBOL_ARGS)
    _assert_equal(monkeypatch, tmp_path / "cut.data", SAMPLE_SYMBOL_ARGS)
    _, totals, _ = _gathered(tmp_path / "cut.data", SAMPLE_SYMBOL_ARGS)
    assert sum(n for n, _ in totals.values()) == \
        sum(n for n, _ in good_totals.values()) - spoilt
