"""By-hand measurement of symbolize.symbols.lines on libc's debug file (not a test).

    python3 benchmarks/bench_lines.py [--n 300] [--seed 2] [--mode text|funcs] [--repeat 3]
                                      [--impl other/lines.py] [--compare other/lines.py]

Picks n random addresses uniformly over .text of libc6-dbg's debug file (fixed
seed: 300 addresses touch 180 CUs; --mode funcs: inside random FUNC symbols
instead), then times the first pass over them on a fresh Binary and LineInfo
(cold: every CU hit is decoded) and a second pass (warm: caches), in CPU
seconds of this process (wall time swings on a shared machine). --impl
measures another copy of lines.py; --compare runs one over the same addresses
and reports every answer that differs.
"""
import argparse
import importlib.util
import os
import random
import sys
import time

# A script run by hand: this checkout's symbolize, not an installed one, and
# tests/symbolize/ (its test_symbolize_util, the GNU tools' answers).
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), *parts)
                for parts in ((os.pardir,), (os.pardir, "tests", "symbolize"))]

from symbolize import Binary  # noqa: E402


def load_impl(path):
    if path is None:
        from symbolize.symbols import lines
        return lines
    name = "symbolize.symbols._bench_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def libc_debug():
    from test_symbolize_util import CAN_FILE, readelf_build_id
    bid = readelf_build_id(CAN_FILE)
    return f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"


def pick(dbg, n, seed, mode="text"):
    rng = random.Random(seed)
    if mode == "text":          # uniform over .text: ~180 CUs for 300 addresses
        text = Binary(dbg).get_section(".text")
        return [text.addr + rng.randrange(text.size) for _ in range(n)]
    import subprocess
    out = subprocess.run(["nm", "-S", "--defined-only", dbg], capture_output=True, text=True).stdout
    funcs = sorted({(int(p[0], 16), int(p[1], 16)) for p in (l.split() for l in out.splitlines())
                    if len(p) == 4 and p[2] in "tT" and int(p[1], 16) > 0})
    return [lo + rng.randrange(size) for lo, size in rng.sample(funcs, n)]


def run(mod, dbg, addrs):
    # CPU time of this process: wall time on a shared 2-core box swings 2x.
    clock = time.process_time
    b = Binary(dbg)
    t0, w0 = clock(), time.perf_counter()
    li = mod.LineInfo(b)
    cold = [(li.frames(a), li.srcline(a)) for a in addrs]
    t1, w1 = clock(), time.perf_counter()
    warm = [(li.frames(a), li.srcline(a)) for a in addrs]
    t2 = clock()
    assert cold == warm
    print(f"  run: cold {t1 - t0:.3f} s CPU, {w1 - w0:.3f} s wall; warm {(t2 - t1) * 1000:.1f} ms CPU")
    return li, cold, t1 - t0, t2 - t1, b.warnings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl")
    ap.add_argument("--compare")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--mode", choices=("text", "funcs"), default="text")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    dbg = libc_debug()
    addrs = pick(dbg, args.n, args.seed, args.mode)
    mod = load_impl(args.impl)
    best = None
    for _ in range(args.repeat):
        li, res, cold, warm, warns = run(mod, dbg, addrs)
        best = (cold, warm) if best is None else (min(best[0], cold), min(best[1], warm))
    print(f"{mod.__name__}: {len(addrs)} addresses, {len(li._cus)} CUs, "
          f"cold {best[0]:.3f} s, warm {best[1] * 1000:.1f} ms CPU (best of {args.repeat}); "
          f"{sum(1 for f, _ in res if f)} with frames, {sum(len(f) > 1 for f, _ in res)} inlined, "
          f"{len(warns)} warnings")
    for w in warns[:5]:
        print("  warning:", w)
    if args.compare:
        other = load_impl(args.compare)
        _, ores, ocold, owarm, _ = run(other, dbg, addrs)
        print(f"{other.__name__}: cold {ocold:.3f} s, warm {owarm * 1000:.1f} ms CPU")
        diff = [(hex(a), r, o) for a, r, o in zip(addrs, res, ores) if r != o]
        print(f"{len(diff)} of {len(addrs)} answers differ")
        for d in diff[:10]:
            print("  ", d)


if __name__ == "__main__":
    main()
