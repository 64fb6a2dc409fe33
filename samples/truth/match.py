"""Reference matcher for the ground-truth files samples/truth/<prog>.json.

The rule (also in samples/README.md, "Ground truth"):

1. A sample's stack is its list of frames, leaf first, as (address, name, dso).
   Kernel frames are dropped (dso ``[kernel.kallsyms]`` or address >=
   0xffff800000000000; this also drops perf's ``ffffffffffffffff`` marker of a
   DWARF stack cut by the end of the stack snapshot).
2. A name is normalised: ``+0x..`` offset removed, a symbol version
   (``@@GLIBC_2.17``, ``@GLIBC_2.2.5``) removed; ``@plt`` is kept.
3. A truth stack is a list of frame items, leaf first, down to the outermost
   frame a correct unwinder reaches (``_start``, ``clone3``, or the
   coroutine's ``__start_context``). An item is a name (Python regular
   expression, matched with ``re.fullmatch``) or an object
   ``{"name": RE, "optional": bool, "inline": bool, "fp_may_skip": bool,
   "min": int, "max": int}``:
   - ``optional``: the frame may be absent;
   - ``inline``: the frame exists only in DWARF inline info; treated as
     optional (a tool may or may not expand inlined calls);
   - ``fp_may_skip``: in a frame-pointer (``-g``) recording the frame may be
     absent, because its callee (a leaf without a frame of its own: a libc or
     vdso function, a PLT stub, or a gcc leaf that never touches the stack)
     hides it from a frame-pointer walk; with ``min``/``max`` it lowers
     ``min`` by one;
   - ``min``/``max``: the frame repeats (recursion), default 1..1.
4. A sample matches a truth stack if its normalised names equal the items
   from some position k to the end (a sample can be taken in any frame of the
   stack, so the leaf may be any item; when it is a repeated item any count
   from 1 to ``max`` is allowed there), skipping absent optional items. No
   frame may follow the outermost item: frames a tool invents past the real
   end of a stack make the sample fail.
5. If the recording's kind (fp or dwarf) is listed in the program's
   ``"truncatable"`` (deep_recursion: both; exit_atexit: fp, whose walk ends
   in libc), a sample may also stop early, before its outer items: it
   matches as "truncated". Otherwise an early stop is a failure.
6. A recording passes if at least ``min_fraction`` of its samples match
   (the rest are start-up and exit samples: ld.so, printf, ...).

Usage:
    python3 samples/truth/match.py TRUTH.json SCRIPT.txt KIND   # KIND: fp|dwarf
    python3 samples/truth/match.py --check     # every golden: perf 6.1's score

SCRIPT.txt is `perf script` text (default fields or -F ...,ip,sym,symoff,dso).
"""
from __future__ import annotations

import json
import os
import re
import sys

KERNEL_START = 0xFFFF800000000000
_FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
_VERSION = re.compile(r"@@?(?!plt$)[A-Za-z_][A-Za-z0-9_.]*$")


def parse_perf_script(text: str) -> list[tuple[str, list[tuple[int, str, str]]]]:
    """Samples of `perf script` text as (header line, [(addr, sym, dso)])."""
    samples = []
    header = None
    frames: list[tuple[int, str, str]] = []
    for line in text.splitlines():
        if not line.strip():
            if header is not None:
                samples.append((header, frames))
            header, frames = None, []
            continue
        if not line[0].isspace():
            if header is not None:
                samples.append((header, frames))
            header, frames = line, []
            continue
        m = _FRAME.match(line)
        if m and header is not None:
            frames.append((int(m.group(1), 16), m.group(2), m.group(3)))
    if header is not None:
        samples.append((header, frames))
    return samples


def normalize_name(sym: str) -> str:
    sym = _OFFSET.sub("", sym.strip())
    return _VERSION.sub("", sym)


def user_names(frames: list[tuple[int, str, str]]) -> list[str]:
    return [normalize_name(sym) for addr, sym, dso in frames
            if dso != "[kernel.kallsyms]" and addr < KERNEL_START]


def _items(stack: list, kind: str) -> list[tuple[re.Pattern, int, int]]:
    out = []
    for item in stack:
        if isinstance(item, str):
            item = {"name": item}
        lo = item.get("min", 1)
        hi = item.get("max", 1)
        if item.get("optional") or item.get("inline"):
            lo = 0
        if kind == "fp" and item.get("fp_may_skip"):
            lo = max(0, lo - 1)
        out.append((re.compile(item["name"]), lo, hi))
    return out


def match_stack(names: list[str], stack: list, kind: str,
                truncatable: bool = False) -> str | None:
    """'complete', 'truncated' or None (no match)."""
    items = _items(stack, kind)
    n = len(names)
    memo: dict = {}

    def run_length(i: int, pat: re.Pattern, limit: int) -> int:
        k = 0
        while i + k < n and k < limit and pat.fullmatch(names[i + k]):
            k += 1
        return k

    def go(i: int, j: int, first: bool) -> str | None:
        key = (i, j, first)
        if key in memo:
            return memo[key]
        result = None
        if i == n:
            if all(lo == 0 for _, lo, _ in items[j:]):
                result = "complete"
            elif truncatable and not first:
                result = "truncated"
        elif j < len(items):
            pat, lo, hi = items[j]
            if first:
                lo = 1
            k = run_length(i, pat, hi)
            if k < lo and i + k == n and truncatable and k > 0:
                lo = k          # the stack is cut inside a repeated frame
            for take in range(k, lo - 1, -1):
                if take == 0 and first:
                    break
                r = go(i + take, j + 1, False)
                if r == "complete" or (r and result is None):
                    result = r
                    if r == "complete":
                        break
        memo[key] = result
        return result

    if not names:
        return None
    best = None
    for j0 in range(len(items)):
        r = go(0, j0, True)
        if r == "complete":
            return r
        best = best or r
    return best


def score(truth: dict, text: str, kind: str) -> dict:
    """Counts of complete / truncated / unmatched samples, and the fraction."""
    counts = {"complete": 0, "truncated": 0, "unmatched": 0}
    unmatched = {}
    for _, frames in parse_perf_script(text):
        names = user_names(frames)
        result = None
        for stack in truth["stacks"]:
            r = match_stack(names, stack["frames"], kind, kind in truth.get("truncatable", []))
            if r == "complete":
                result = r
                break
            result = result or r
        counts[result or "unmatched"] += 1
        if result is None:
            key = " <- ".join(names[:12])
            unmatched[key] = unmatched.get(key, 0) + 1
    total = sum(counts.values())
    counts["fraction"] = (counts["complete"] + counts["truncated"]) / total if total else 0.0
    counts["top_unmatched"] = sorted(unmatched.items(), key=lambda kv: -kv[1])[:3]
    return counts


def check_all(samples_dir: str) -> int:
    truth_dir = os.path.join(samples_dir, "truth")
    exp = os.path.join(samples_dir, "expected")
    print(f"{'golden':44} {'kind':5} {'samples':>7} {'complete':>8} {'trunc':>5} "
          f"{'frac':>5} {'min':>4}  perf ok?")
    for fn in sorted(os.listdir(truth_dir)):
        if not fn.endswith(".json"):
            continue
        with open(os.path.join(truth_dir, fn)) as f:
            truth = json.load(f)
        for rec, kind in sorted(truth["recordings"].items()):
            base = rec[:-len(".data")]
            goldens = [base + ".script-F.txt", base + ".script-F-noinline.txt"]
            if truth["program"] == "stripped" and kind == "fp":
                goldens.append(base + ".script-F-debug.txt")
            for g in goldens:
                path = os.path.join(exp, g)
                if not os.path.exists(path):
                    continue
                with open(path, errors="replace") as f:
                    s = score(truth, f.read(), kind)
                total = s["complete"] + s["truncated"] + s["unmatched"]
                ok = "yes" if s["fraction"] >= truth["min_fraction"] else "NO"
                print(f"{g:44} {kind:5} {total:7} {s['complete']:8} {s['truncated']:5} "
                      f"{s['fraction']:5.2f} {truth['min_fraction']:4.2f}  {ok}")
                if ok == "NO" and s["top_unmatched"]:
                    stack, count = s["top_unmatched"][0]
                    print(f"    e.g. {count}x {stack[:150]}")
    return 0


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        return check_all(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if len(argv) != 4:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        truth = json.load(f)
    with open(argv[2], errors="replace") as f:
        s = score(truth, f.read(), argv[3])
    print(json.dumps(s, indent=1))
    return 0 if s["fraction"] >= truth["min_fraction"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
