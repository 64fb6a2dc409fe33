"""--stitch on a recursion of random depth (tests/progs/stitch_depths.c,
recorded with perf here): each iteration of the same loop descends 1 to 120
levels of 200-600 byte frames, so a deep sample's outer frames are seen
only in samples of other depths taken in other iterations, through chains
(deep -> middle -> shallow).  Every leaf sample's true stack is known by
construction:
    leaf_<P>_<D> <- step_<D % 3> <- step_<(D - 1) % 3> ... <- step_0 <- descend
    <- entry_<P> <- (the root of P, read from the samples the snapshot did not cut)
Measured per mode: the cut samples, how many were completed, how many of
those equal the truth (>= 95% of the cut), and how many are wrong (none).
"""
import collections
import json

import pytest

from conftest import REPO, requires_perf, run_cli
from stitch_programs import LEAF, path_roots, record_modes, stitched_samples, user_names

PROG = REPO / "tests" / "progs" / "stitch_depths.c"
MODES = ("recursive", "callers", "coroutine", "threads")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    # cpu-clock:u every 1 ms of the program's own CPU time (1 kHz), the
    # default 8 KiB stack copy; ~1,500 samples per mode.
    return record_modes(tmp_path_factory.mktemp("stitch_depths"), PROG, MODES, 1000000, ())



def truth(leaf, path, depth, root):
    return [leaf] + ["step_%d" % (level % 3) for level in range(depth, -1, -1)] + \
        ["descend", "entry_" + path] + list(root)


def measure(path):
    """Counter(cut, completed, equal, wrong) over the leaf samples of one
    recording, stitched; the wrong stacks; the stitcher's counts."""
    samples, counts, max_stack = stitched_samples(path)
    roots = path_roots(samples)
    stats = collections.Counter()
    wrong = []
    for s in samples:
        names = user_names(s)
        m = LEAF.match(names[0] or "") if names else None
        stitched = [f.stitched for f in s.frames if not f.kernel]
        if s.stop_reason != "stack-exhausted":
            assert not any(stitched)
            continue
        completed = any(stitched)
        if m is None:
            # (in step_k's own code: the depth is not known, the shape is)
            stats["cut-elsewhere"] += 1
            if completed:
                ok = len(names) == max_stack or any(
                    names[-len(root) - 3:] == ["step_0", "descend", "entry_" + p] + list(root)
                    for p, root in roots.items())
                stats["completed-elsewhere"] += 1
                if not ok:
                    wrong.append(names)
            continue
        stats["cut"] += 1
        stats["deepest-cut"] = max(stats["deepest-cut"], int(m.group(2)))
        if not completed:
            continue
        assert stitched.index(True) == stitched.count(False), "stitched frames are outermost"
        p, depth = m.group(1), int(m.group(2))
        stats["completed"] += 1
        if names == truth(names[0], p, depth, roots[p])[:max_stack]:
            stats["equal"] += 1
        else:
            wrong.append(names)
    return stats, counts, wrong


@requires_perf
@pytest.mark.parametrize("mode", ("recursive", "coroutine", "threads"))
def test_random_depth_recursion_completed_through_chains(recordings, mode):
    stats, counts, wrong = measure(recordings[mode])
    print("%s: %s; %s" % (mode, dict(stats), counts))
    assert stats["cut"] > 500, "the recording should cut many stacks"
    assert wrong == []
    assert stats["equal"] == stats["completed"] >= 0.95 * stats["cut"]
    # (chains through other iterations: no neighbour in time knows them)
    assert counts["completed-from-links"] > stats["cut"] / 4


@requires_perf
def test_recursion_reached_from_two_callers_is_refused(recordings):
    """entry_a and entry_b call the same descent at the same depth: its
    frames have two outward stacks in the thread's samples, so a stack cut
    in it is refused as ambiguous, none completed wrongly (see
    docs/checks.md, "Stack stitching": no rule can tell those samples'
    callers apart)."""
    stats, counts, wrong = measure(recordings["callers"])
    print("callers: %s; %s" % (dict(stats), counts))
    assert stats["cut"] > 500
    assert wrong == []
    assert stats["equal"] == stats["completed"]
    assert counts["not-completed:ambiguous"] > stats["cut"] / 4


@requires_perf
def test_two_callers_samples_that_nothing_but_the_leaf_tells_apart(recordings):
    """Why the refusal above is the only sound verdict: cut samples under
    entry_a and under entry_b at the same depth whose frames beyond the
    leaf's own are the same in every byte the sample holds (their CFAs,
    return addresses and the stack copy from the leaf's CFA on).  What
    tells them apart is the leaf function alone, which says nothing of
    the caller to a rule that reads stacks."""
    samples, _, _ = stitched_samples(recordings["callers"])
    paths = collections.defaultdict(set)
    for s in samples:
        names = user_names(s)
        m = LEAF.match(names[0] or "") if names else None
        if m is None or s.stop_reason != "stack-exhausted":
            continue
        result, stack = s.unwind, s.fields["stack_user"]
        copy = bytes(stack["data"][:stack["dyn_size"]])
        beyond_leaf = copy[result.cfas[0] - result.sp:]
        paths[(tuple(result.cfas), tuple(result.frames[1:]), beyond_leaf)].add(m.group(1))
    both = [key for key, seen in paths.items() if seen == {"a", "b"}]
    print("callers: %d distinct stacks beyond the leaf, %d of them seen under both callers"
          % (len(paths), len(both)))
    assert len(both) >= 10


@requires_perf
def test_diagnose_says_completed_refused_and_the_snapshot_that_avoids_the_cut(recordings):
    """diagnose on the two-caller recording: the stitcher's completed and
    refused-as-ambiguous counts, and the --call-graph=dwarf,SIZE that holds
    the deepest stack: at least 200 bytes a level of the deepest sample cut
    (its leaf names its depth), more than the 8 KiB recorded."""
    stats, counts, _ = measure(recordings["callers"])
    rc, out, err = run_cli(["diagnose", "--json", str(recordings["callers"])])
    assert rc == 0, err
    result = json.loads(out)
    st = result["stitch"]
    assert st["cut"] == counts["cut"] and st["completed"] == counts["completed"]
    assert st["why_not"]["ambiguous"] == counts["not-completed:ambiguous"] > 0
    exhausted = [c for c in result["classes"] if c["class"] == "dwarf-stack-exhausted"][0]
    detail = exhausted["detail"]
    assert detail["recorded"] == 8192
    assert detail["suggested"] >= detail["needed"] >= 200 * stats["deepest-cut"] > 8192
    assert "--call-graph=dwarf,%d" % detail["suggested"] in exhausted["fix"]
    rc, text, err = run_cli(["diagnose", str(recordings["callers"])])
    assert "stack stitching: %d of %d cut DWARF stacks completed" % (
        st["completed"], st["cut"]) in text
    assert "ambiguous %d" % st["why_not"]["ambiguous"] in text
    assert "--call-graph=dwarf,%d" % detail["suggested"] in text
