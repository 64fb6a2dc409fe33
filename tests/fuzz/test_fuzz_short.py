"""The short fuzz run: 2,000 structure-aware mutations of the
samples and the corpus through the whole pipeline (tests/fuzz/harness.py),
derandomized so that CI sees the same inputs every time, under 60 s.  Every
input that ever failed is kept under tests/regressions/ and replayed here."""
import time

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings          # noqa: E402

from fuzz import harness                                       # noqa: E402
from limits import time_limit                                  # noqa: E402

# (2,000: 40-55 s, in one worker of the suite's run on every core, which
# ends in ~3.5 minutes on 2 cores; the long run, tools/fuzz_long.py, is where
# the numbers are)
SHORT_EXAMPLES = 2000
# The three CLI commands (stats, dump --json, header -I) run on every
# CLI_EVERY-th input; the library pipeline (records, parse, script) on all.
# A hang: 2 s of CPU for a stage on a 1 MiB input (the inputs here are < 100
# KiB); the wall-clock alarm (_budget) is the outer bound.
HANG_SECONDS = 2.0
CLI_EVERY = 2


def _run_bounded(path, seconds, timings=None, cli=True):
    with time_limit(seconds):
        return harness.run_pipeline(path, cli=cli, timings=timings)


def _budget(size):
    return 5 * HANG_SECONDS * max(1.0, size / (1 << 20)) + 1.0


@pytest.fixture(scope="module")
def seeds():
    got = harness.load_seeds()
    if not got:
        pytest.skip("no seed files")
    return got


def test_seeds_cover_the_structures(seeds):
    """The mutations have something to aim at: counts in samples, strings,
    feature sections, both byte orders, pipe and file mode, zstd."""
    assert sum(len(s.counts) for s in seeds) > 100
    assert sum(len(s.strings) for s in seeds) > 100
    assert any(s.feature_entries for s in seeds)
    assert any(s.pipe for s in seeds) and any(not s.pipe for s in seeds)
    assert any(s.zstd for s in seeds)


def test_fuzz_short(seeds, tmp_path):
    path = tmp_path / "input.data"
    stats = {"n": 0, "kinds": {}, "slowest": 0.0}
    start = time.monotonic()
    cpu_start = time.process_time()

    @settings(max_examples=SHORT_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(harness.fuzz_input(seeds))
    def one(case):
        name, kinds, data = case
        path.write_bytes(data)
        t0 = time.monotonic()
        timings = {}
        try:
            _run_bounded(path, _budget(len(data)), timings,
                         cli=stats["n"] % CLI_EVERY == 0)
            slow = {k: v for k, v in timings.items() if v > HANG_SECONDS}
            assert not slow, "stages over %s s: %s" % (HANG_SECONDS, slow)
        except BaseException:
            saved = harness.save_failure(data)
            print("failing input kept as %s (seed %s, mutations %s)" % (saved, name, kinds))
            raise
        stats["slowest"] = max(stats["slowest"], time.monotonic() - t0)
        stats["n"] += 1
        for k in kinds:
            stats["kinds"][k] = stats["kinds"].get(k, 0) + 1

    one()
    elapsed = time.monotonic() - start
    print("fuzz short: %d inputs in %.1f s (%.1f s CPU), slowest %.3f s, mutations %s"
          % (stats["n"], elapsed, time.process_time() - cpu_start, stats["slowest"],
             stats["kinds"]))
    assert stats["n"] >= SHORT_EXAMPLES * 0.9
    assert len(stats["kinds"]) >= 10


@pytest.mark.parametrize("path", harness.regression_files(), ids=lambda p: p.name)
def test_regression_replay(path):
    """Inputs that once failed (kept by the fuzzers) run clean now."""
    _run_bounded(path, _budget(path.stat().st_size))
