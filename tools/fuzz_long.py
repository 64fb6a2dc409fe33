#!/usr/bin/env python3
"""The long fuzz run: the structure-aware mutations of tests/fuzz/harness.py
through the whole pipeline for N minutes, in rounds of hypothesis examples
with a fresh random seed each.

    python3 tools/fuzz_long.py --minutes 30 [--seed 1] [--full-every 5]

Every failing or hanging input is written to tests/regressions/fuzz-<crc>.data
(tests/fuzz/test_fuzz_short.py replays them).  A hang is a run longer than
2 s per MiB of input (2 s at least) in any one stage (reading, script,
stats, dump --json, header) when that is also over 4x the stage's time on
the unmutated seed (dense 1 MiB recordings take 2-4 s in `dump --json`
whole, mutated or not: that is throughput, not a hang).  At the end (and after every round) it
prints: inputs executed, failures, hangs, the slowest input, peak memory.
Every fifth round (--full-every) uses the uncut seed files (up to 1.5 MiB)
so that large inputs are timed too.
"""
import argparse
import json
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))
sys.path.insert(0, str(REPO))

from hypothesis import HealthCheck, given, seed as hseed, settings   # noqa: E402

import harness                                                         # noqa: E402

HANG_SECONDS_PER_MIB = 2.0


class Hang(BaseException):
    """Raised by the alarm; a BaseException so that no except Exception in the
    code under test swallows it."""


def _on_alarm(signum, frame):
    raise Hang()


def budget(size):
    return HANG_SECONDS_PER_MIB * max(1.0, size / (1 << 20))


class Run:
    def __init__(self, out_dir):
        self.out_dir = Path(out_dir)
        self.executions = 0
        self.failures = []          # (file, seed, kinds, error)
        self.hangs = []
        self.slowest = (0.0, 0, None, None)   # seconds, size, seed, kinds
        self.by_outcome = {}
        self.bytes = 0
        self.started = time.monotonic()
        self.baselines = {}
        self.seeds_by_name = {}
        self.harness_errors = 0

    def baseline(self, name):
        """Stage timings of the unmutated seed (measured once)."""
        got = self.baselines.get(name)
        if got is None:
            got = {}
            seed = self.seeds_by_name.get(name)
            if seed is not None:
                base_path = Path(tempfile.mkdtemp(prefix="perfdata-fuzz-base-")) / "seed.data"
                base_path.write_bytes(seed.data)
                try:
                    harness.run_pipeline(base_path, timings=got)
                except Exception:
                    pass
                base_path.unlink()
                base_path.parent.rmdir()
            self.baselines[name] = got
        return got

    def execute(self, case, path):
        name, kinds, data = case
        path.write_bytes(data)
        signal.signal(signal.SIGALRM, _on_alarm)
        # The alarm fires at 3x the hang budget of all five stages; a stage
        # over the budget is counted as a hang but allowed to finish.
        limit = budget(len(data))
        signal.setitimer(signal.ITIMER_REAL, 5 * 3 * limit)
        t0 = time.monotonic()
        error = None
        timings = {}
        try:
            outcome = harness.run_pipeline(path, timings=timings)
        except Hang:
            outcome = "hang"
        except Exception as exc:            # a crash: anything but PerfDataError
            outcome = "failure"
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-400:]
            error += " | " + traceback.format_exc().strip().splitlines()[-3].strip()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        elapsed = time.monotonic() - t0
        base = self.baseline(name)
        # A stage over its budget and over 4x its time on the unmutated seed.
        slow = {k: v for k, v in timings.items() if v > limit and v > 4 * base.get(k, 0)}
        self.executions += 1
        self.bytes += len(data)
        if elapsed > self.slowest[0]:
            self.slowest = (elapsed, len(data), name, kinds)
        if outcome == "hang" or slow:
            saved = harness.save_failure(data, self.out_dir)
            self.hangs.append((str(saved), name, kinds, "%.2f s" % elapsed))
            print("HANG %.2f s %s: %s (%s %s)" % (elapsed, slow, saved, name, kinds), flush=True)
        elif outcome == "failure":
            saved = harness.save_failure(data, self.out_dir)
            self.failures.append((str(saved), name, kinds, error))
            print("FAILURE: %s (%s %s): %s" % (saved, name, kinds, error), flush=True)
        else:
            key = outcome.split()[0]
            self.by_outcome[key] = self.by_outcome.get(key, 0) + 1

    def report(self):
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        elapsed = time.monotonic() - self.started
        return {
            "executions": self.executions,
            "failures": len(self.failures),
            "hangs": len(self.hangs),
            "seconds": round(elapsed, 1),
            "executions_per_second": round(self.executions / elapsed, 1) if elapsed else 0,
            "input_bytes": self.bytes,
            "slowest_seconds": round(self.slowest[0], 3),
            "slowest_input_bytes": self.slowest[1],
            "slowest_seed": self.slowest[2],
            "slowest_mutations": self.slowest[3],
            "peak_rss_mib": round(peak_kib / 1024, 1),
            "harness_errors": self.harness_errors,
            "first_outcome": self.by_outcome,
            "failure_files": [f[0] for f in self.failures] + [h[0] for h in self.hangs],
        }


def full_seeds(limit=1_500_000):
    """The seed files uncut (inputs up to ~1.5 MiB)."""
    seeds = []
    for path in harness.seed_files() + sorted(harness.corpus_dir().glob("*")):
        if path.is_file() and path.stat().st_size <= limit and \
                path.name not in [s.name for s in seeds]:
            s = harness.analyse(path.name, path.read_bytes())
            if s is not None and s.records:
                seeds.append(s)
    return seeds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--seed", type=int, default=None, help="seed of the first round")
    p.add_argument("--round", type=int, default=400, help="examples per round")
    p.add_argument("--full-every", type=int, default=5,
                   help="every Nth round uses the uncut seeds (0: never)")
    p.add_argument("--out", default=str(harness.REGRESSIONS), help="where failing inputs go")
    p.add_argument("--json", help="write the final report here too")
    args = p.parse_args(argv)

    rng = random.Random(args.seed)
    small = harness.load_seeds()
    big = full_seeds() if args.full_every else []
    print("seeds: %d cut, %d uncut" % (len(small), len(big)), flush=True)
    run = Run(args.out)
    for s in small:
        run.seeds_by_name.setdefault(s.name, s)
    deadline = time.monotonic() + 60 * args.minutes
    workdir = Path(tempfile.mkdtemp(prefix="perfdata-fuzz-"))
    path = workdir / "input.data"
    round_no = 0
    try:
        while time.monotonic() < deadline:
            round_no += 1
            use_big = args.full_every and round_no % args.full_every == 0
            seeds = big if use_big else small
            if use_big:
                run.seeds_by_name = {s.name: s for s in big}
                run.baselines = {}
            else:
                run.seeds_by_name = {s.name: s for s in small}
                run.baselines = {}
            examples = max(20, args.round // 8) if use_big else args.round

            @hseed(rng.getrandbits(64))
            @settings(max_examples=examples, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(harness.fuzz_input(seeds))
            def one(case):
                if time.monotonic() < deadline:
                    run.execute(case, path)

            try:
                one()
            except Exception as exc:    # the harness itself (input generation) failed
                run.harness_errors += 1
                print("HARNESS ERROR (not perfdata's): %s: %s"
                      % (type(exc).__name__, str(exc).splitlines()[0][:300]), flush=True)
            r = run.report()
            print("round %d (%s): %d inputs, %d failures, %d hangs, slowest %.3f s "
                  "(%d bytes, %s), peak RSS %.1f MiB, %.1f inputs/s"
                  % (round_no, "uncut" if use_big else "cut", r["executions"], r["failures"],
                     r["hangs"], r["slowest_seconds"], r["slowest_input_bytes"],
                     r["slowest_seed"], r["peak_rss_mib"], r["executions_per_second"]),
                  flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        try:
            path.unlink()
            workdir.rmdir()
        except OSError:
            pass
    report = run.report()
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 1 if run.failures or run.hangs else 0


if __name__ == "__main__":
    sys.exit(main())
