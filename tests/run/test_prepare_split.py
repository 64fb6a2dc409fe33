"""Sharded runs split a first run's builds between the workers (each builds
its part into the cache directory, then reads the others'): the output and
the warnings are those of one process, with an empty cache or a full one;
Symbolizer.prepare() holds its warnings until the binary is first used."""
import pytest

from conftest import SAMPLE_SYMBOL_ARGS, SAMPLES, run_cli
from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions

RECORDINGS = ["plt_loop_ibt.fp.data", "vdso_clock.dwarf.data", "two_events.data",
              "zstd_dwarf.data"]


@pytest.mark.parametrize("name", RECORDINGS)
def test_split_first_run_same_output(name, tmp_path, monkeypatch):
    """-j 3 with an empty cache, then with the one it filled: -j 1's text and
    warnings; every binary of the recording's build-id list (and the kernel)
    is prepared once, by whichever worker was free (a worker that starts
    late may find them all taken)."""
    import os
    import perfdata
    import perfdata.views.script as script_view
    calls = tmp_path / "calls"
    real_prepare, real_kernel = Symbolizer.prepare, Symbolizer.prepare_kernel

    def prepare(self, path, build_id=None, inline_names=False):
        with open(calls, "a") as f:          # (the workers are forked: a file sees them)
            f.write("%d %s\n" % (os.getpid(), path))
        return real_prepare(self, path, build_id, inline_names)

    def prepare_kernel(self, build_id=None):
        with open(calls, "a") as f:
            f.write("%d [kernel.kallsyms]\n" % os.getpid())
        return real_kernel(self, build_id)
    monkeypatch.setattr(Symbolizer, "prepare", prepare)
    monkeypatch.setattr(Symbolizer, "prepare_kernel", prepare_kernel)
    monkeypatch.setattr(script_view, "SHARD_BLOCK", 7)
    path = SAMPLES / name
    base = ["script", str(path)] + SAMPLE_SYMBOL_ARGS
    one = run_cli(base + ["-j", "1", "--symbol-cache", str(tmp_path / "one")])
    assert not calls.exists()
    first = run_cli(base + ["-j", "3", "--symbol-cache", str(tmp_path / "three")])
    made = calls.read_text().splitlines() if calls.exists() else []
    warm = run_cli(base + ["-j", "3", "--symbol-cache", str(tmp_path / "three")])
    assert first[:2] == one[:2] == warm[:2]
    for run in (first, warm):
        assert run[2] == one[2]
    with perfdata.open(str(path)) as pf:
        listed = {p for p, bid in pf.recorded_build_ids().items()
                  if p == "[kernel.kallsyms]" or (p.startswith("/") and bid)}
    items = [line.split(" ", 1)[1] for line in made]
    assert sorted(items) == sorted(listed)          # each once, by one worker
    workers = {line.split(" ", 1)[0] for line in made}
    assert len(workers) <= min(3, len(listed)) and bool(workers) == bool(listed)
    if name == "two_events.data":
        assert len(listed) == 3                     # (the test sees a split)


def test_prepare_holds_its_warnings_until_the_binary_is_used(tmp_path):
    sym = Symbolizer(DebugInfoLocator(), SymbolizerOptions(cache_dir=str(tmp_path)))
    sym.prepare("/nonexistent/libgone.so", "ab" * 20)
    assert sym.warnings == []
    sym.lookup("/nonexistent/libgone.so", "ab" * 20, file_offset=0x1000)
    assert len(sym.warnings) == 1 and "libgone.so" in sym.warnings[0]
    sym.lookup("/nonexistent/libgone.so", "ab" * 20, file_offset=0x2000)
    assert len(sym.warnings) == 1
    # never used: never said
    other = Symbolizer(DebugInfoLocator(), SymbolizerOptions(cache_dir=str(tmp_path)))
    other.prepare("/nonexistent/libgone.so", "ab" * 20)
    other.lookup("/bin/true", None, file_offset=0x10)
    assert not any("libgone" in w for w in other.warnings)


def test_builds_taken_by_the_first_worker_free(monkeypatch):
    """With the run's shared counter each worker takes the next build not
    yet taken, so a worker busy with a long build takes no more while the
    other takes the rest; without one (a worker alone), dealt by size."""
    import multiprocessing
    from perfdata.run import sharded
    work = [(50, "/a", "1"), (30, "/b", "2"), (20, "/c", "3"), (10, "/d", "4")]
    monkeypatch.setattr(sharded, "_builds_taken", multiprocessing.get_context("fork").Value("q", 0))
    first, second = (sharded._taken_builds(work, (512, 2, i)) for i in (0, 1))
    assert next(first) == work[0]               # worker 0 busy with the largest
    assert list(second) == work[1:]             # worker 1 takes all the rest
    assert list(first) == []
    monkeypatch.setattr(sharded, "_builds_taken", None)
    assert list(sharded._taken_builds(work, (512, 2, 0))) == [work[0], work[3]]
    assert list(sharded._taken_builds(work, (512, 2, 1))) == [work[1], work[2]]
