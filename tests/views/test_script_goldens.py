"""`perfdata script` against perf 6.1's own output on the sample recordings,
and against the test programs' known call stacks (samples/truth)."""
import importlib.util
import io
import os
from pathlib import Path

import pytest

import perfdata
from perfdata.resolve.symbolized import SampleSymbolizer, StackOptions
from perfdata.views.script_formatter import ScriptFormatter, ScriptOptions
from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions

from conftest import SAMPLE_PATH_MAP, requires_sample_libc_debug, sample_vdso
from script_compare import agreement, compare

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
EXPECTED = SAMPLES / "expected"
BUILDIDS = SAMPLES / "buildids"
# Recordings whose goldens name libc's local functions: those names come from
# the recording machine's libc6-dbg, found by libc's build-id.
needs_libc_debug = requires_sample_libc_debug


def run_script(data, debug_dirs=(BUILDIDS,), no_inline=False, fields=None):
    pf = perfdata.open(str(data))
    symbolizer = Symbolizer(DebugInfoLocator(debug_dirs=[str(d) for d in debug_dirs],
                                             buildid_dir=str(BUILDIDS),
                                             path_map=SAMPLE_PATH_MAP),
          SymbolizerOptions(inline=False, vdso=sample_vdso(data)))
    samples = SampleSymbolizer(pf, symbolizer, StackOptions(dwarf_inline=not no_inline))
    fmt = ScriptFormatter(pf, ScriptOptions(fields))
    out = io.StringIO()
    for s in samples:
        out.write(fmt.format(s))
    return out.getvalue(), samples


def kernel_matches(data):
    """True when the kernel symbols of the recording's kernel travel with the
    samples (buildids/[kernel.kallsyms]/<build-id>/kallsyms, perf's cache
    layout, which the goldens were made with): then kernel frames are
    compared, whatever kernel runs here."""
    with perfdata.open(str(data)) as pf:
        entries = pf.feature(perfdata.Feature.BUILD_ID) or []
    kernels = [e["build_id"].hex() for e in entries if e["filename"] == "[kernel.kallsyms]"]
    return bool(kernels) and all(
        (BUILDIDS / "[kernel.kallsyms]" / bid / "kallsyms").is_file() for bid in kernels)


RECORDINGS = sorted(p.name[:-len(".script.txt")] for p in EXPECTED.glob("*.script.txt")
                    if not p.name.endswith("-noinline.script.txt"))


@needs_libc_debug
@pytest.mark.parametrize("name", RECORDINGS)
def test_frames_agree_with_perf(name):
    data = SAMPLES / (name + ".data")
    golden = (EXPECTED / (name + ".script.txt")).read_text()
    ours, _ = run_script(data)
    stats = compare(ours, golden, include_kernel=kernel_matches(data))
    assert stats["samples_ours"] == stats["samples_perf"]
    assert stats["header_diff"] == 0
    # Every deliberate difference is one of the listed kinds (script_compare);
    # anything else is a failure unless it stays under 0.5% of perf's frames.
    assert agreement(stats) >= 0.995, stats["other"][:5]
    assert len(stats["other"]) <= 0.005 * max(1, stats["perf_resolved"]), stats["other"][:5]


def _truth_matcher():
    spec = importlib.util.spec_from_file_location("truth_match", SAMPLES / "truth" / "match.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _truth_cases():
    import json
    for path in sorted((SAMPLES / "truth").glob("*.json")):
        truth = json.loads(path.read_text())
        for rec, kind in sorted(truth["recordings"].items()):
            yield pytest.param(truth, rec, kind, id=rec)


@needs_libc_debug
@pytest.mark.parametrize("truth,recording,kind", list(_truth_cases()))
def test_stacks_match_ground_truth(truth, recording, kind):
    """Our stacks against the programs' real call stacks (samples/truth)."""
    match = _truth_matcher()
    debug_dirs = [BUILDIDS]
    if truth["program"] == "stripped":
        debug_dirs.append(SAMPLES / "debug")     # the fixed case; see test_stripped_*
    ours, _ = run_script(SAMPLES / recording, debug_dirs)
    score = match.score(truth, ours, kind)
    assert score["fraction"] >= truth["min_fraction"], score["top_unmatched"]


@needs_libc_debug
@pytest.mark.parametrize("program", ["plt_loop", "vdso_clock", "exit_atexit",
                                     "coroutine"])
def test_names_where_perf_fails(program):
    """Frames that perf 6.1 leaves [unknown], misnames (`_init+0x40` for a PLT
    stub) or invents (past a coroutine's bottom): perfdata's samples holding
    them match the real stacks in at least 95% of cases."""
    import json
    match = _truth_matcher()
    truth = json.loads((SAMPLES / "truth" / (program + ".json")).read_text())
    bad = total = 0
    for recording, kind in truth["recordings"].items():
        golden = (EXPECTED / (recording[:-5] + ".script.txt")).read_text()
        ours, _ = run_script(SAMPLES / recording)
        perf_samples = match.parse_perf_script(golden)
        our_samples = match.parse_perf_script(ours)
        for (_, pframes), (_, oframes) in zip(perf_samples, our_samples):
            perf_names = match.user_names(pframes)
            # A frame perf could have named: in a mapped binary (frames in no
            # map at all are garbage of a frame-pointer walk, unknowable).
            misnamed = any(match.normalize_name(sym) in ("[unknown]", "_init", "@plt")
                           and dso != "[unknown]" for _, sym, dso in pframes)
            past_bottom = any(n in ("__start_context", "_start", "clone3") and i < len(perf_names) - 1
                              for i, n in enumerate(perf_names))
            perf_failed = misnamed or past_bottom
            if not perf_failed:
                continue
            total += 1
            names = match.user_names(oframes)
            ok = any(match.match_stack(names, s["frames"], kind,
                                       kind in truth.get("truncatable", []))
                     for s in truth["stacks"])
            bad += not ok
    if total == 0:
        pytest.skip("perf resolved every frame of %s here" % program)
    assert (total - bad) / total >= 0.95, (program, total, bad)


def test_stripped_binary_named_after_debug_dir():
    """A profile of a stripped binary: no names for its functions before its
    debug file is supplied, the right names after (--debug-dir)."""
    data = SAMPLES / "stripped.fp.data"
    before, _ = run_script(data)
    after, _ = run_script(data, (BUILDIDS, SAMPLES / "debug"))
    own = SAMPLE_PATH_MAP[0][0] + "/bin/stripped"     # the path recorded
    before_named = [l for l in before.splitlines() if own in l and "[unknown]" not in l
                    and "+0x" in l and not l.split()[1].startswith(("_start", "_init"))]
    assert "stripped_hot" not in before
    assert "stripped_hot" in after or "hot" in after
    truth_text = (EXPECTED / "stripped.fp.script-F-debug.txt").read_text()
    assert [l for l in after.splitlines() if own in l] and before_named == []
    assert any(name in after for name in ("main",)) and "main" in truth_text


def _dwarf_cases():
    import json
    for path in sorted((SAMPLES / "truth").glob("*.json")):
        truth = json.loads(path.read_text())
        for rec, kind in sorted(truth["recordings"].items()):
            if kind == "dwarf":
                yield pytest.param(truth, rec, id=rec)


@needs_libc_debug
@pytest.mark.parametrize("truth,recording", list(_dwarf_cases()))
def test_dwarf_unwind_against_true_stacks(truth, recording):
    """DWARF unwinding (issue 4): every sample whose stack fits in the 8 KiB
    snapshot ends 'outermost' and matches the program's real stack (>= 99%);
    a stack that does not fit is cut, not wrong: marked 'stack-exhausted' and
    a true prefix of the real stack."""
    match = _truth_matcher()
    debug_dirs = [BUILDIDS] + ([SAMPLES / "debug"] if truth["program"] == "stripped" else [])
    pf = perfdata.open(str(SAMPLES / recording))
    symbolizer = Symbolizer(DebugInfoLocator(debug_dirs=[str(d) for d in debug_dirs],
                                             path_map=SAMPLE_PATH_MAP),
                            SymbolizerOptions(inline=False))
    fits = ok = cut = cut_ok = 0
    for s in SampleSymbolizer(pf, symbolizer):
        names = [match.normalize_name(f.symbol or "[unknown]") for f in s.frames
                 if not f.kernel]
        if s.stop_reason == "outermost":
            fits += 1
            ok += any(match.match_stack(names, st["frames"], "dwarf") for st in truth["stacks"])
        else:
            assert s.stop_reason == "stack-exhausted", s.stop_reason
            cut += 1
            cut_ok += any(match.match_stack(names, st["frames"], "dwarf", True)
                          for st in truth["stacks"])
    assert fits + cut > 0
    if fits:
        assert ok >= 0.99 * fits, (ok, fits)
    assert cut_ok == cut
    if truth["program"] == "deep_recursion":
        assert cut > 0 and fits == 0
