"""--stitch: DWARF stacks cut by perf's 8 KiB stack copy, completed from the
same thread's other samples (perfdata/resolve/stitch.py).

The rules, on stacks written by hand; then tests/progs/stitch_stacks.c,
recorded with perf here, whose every stack is known by construction: a
sample in leaf_<path>_<level> has the stack
    leaf_<path>_<level> <- descend x (level + 1) <- sweep <- entry_<path> <- root
(the root, main ... _start or thread_<path> <- start_thread <- clone3 or
coro_main <- __start_context, is read from the samples that were not cut).
Measured per mode: the cut samples, how many were completed, how many of
those equal the truth, and how many are wrong (must be none).
"""
import collections
import json
import re

import pytest

from conftest import REPO, requires_libc_debug_here, requires_perf, run_cli
from stitch_programs import LEAF, path_roots, record_modes, stitched_samples, user_names
from perfdata.resolve.outward_links import OutwardLinks
from perfdata.resolve.stitch import StackStitcher, UserStack, extend_from

# --------------------------------------------------------------- the rules
# A thread's stack, by hand: frame i at pc 0x100 + i, CFA 0x1000 + 0x100 * (i + 1);
# sp 0x1000; frame 9 is the bottom.
PCS = [0x100 + i for i in range(10)]
CFAS = [0x1000 + 0x100 * (i + 1) for i in range(10)]


def full(pcs=PCS, cfas=CFAS, sp=0x1000):
    return UserStack(pcs, cfas, sp, bottom=True)


def cut(first, last, pcs=PCS, cfas=CFAS):
    """Frames first..last of the stack (sp below frame `first`), cut after
    `last` (its CFA known, its return address not)."""
    sp = 0x1000 if first == 0 else cfas[first - 1]
    return UserStack(pcs[first:last + 1], cfas[first:last + 1], sp)


def test_same_cfa_and_return_address_extends_to_the_bottom():
    c = cut(0, 4)
    assert extend_from(c, full()) == "extended"
    assert c.pcs == PCS and c.bottom and c.own == 5


def test_a_deeper_sample_cut_further_in_extends_as_far_as_it_knows():
    c = cut(0, 4)
    other = cut(2, 7)
    assert extend_from(c, other) == "extended"
    assert c.pcs == PCS[:8] and not c.bottom


def test_another_return_address_at_that_place_contradicts():
    c = cut(0, 4)
    pcs = list(PCS)
    pcs[4] = 0x999                  # frame 4 called from elsewhere
    assert extend_from(c, full(pcs=pcs)) == "contradicts"
    assert c.pcs == PCS[:5]


def test_a_shallower_sample_contradicts():
    # The thread's sp was above the frame: it had returned past it.
    c = cut(0, 4)
    assert extend_from(c, cut(5, 9)) == "contradicts"


def test_a_stack_spanning_the_address_without_that_frame_contradicts():
    c = cut(0, 4)
    other = full(cfas=[x + 8 for x in CFAS])     # frames elsewhere
    assert extend_from(c, other) == "contradicts"


def test_a_deeper_sample_cut_below_says_nothing():
    c = cut(3, 6)
    assert extend_from(c, cut(0, 3)) == "no-info"
    assert extend_from(c, cut(1, 6)) == "extended"  # cut at the same frame: agrees, adds nothing
    assert c.pcs == PCS[3:7] and not c.bottom


def test_a_whole_stack_lying_below_says_nothing():
    # Another stack (a coroutine's), entirely below the frame: no evidence.
    c = cut(0, 4)
    other = full(cfas=[x - 0x10000 for x in CFAS], sp=0x1000 - 0x10000)
    assert extend_from(c, other) == "no-info"


def _stitcher():
    done = []
    s = StackStitcher(lambda sample, stack: done.append((sample, list(stack.pcs))),
                      lookahead=8)
    return s, done


def _out(s):
    return s.ready()


def test_stitcher_completes_from_earlier_and_later_samples_in_order():
    s, done = _stitcher()
    s.add_sample("first-cut", 1, cut(0, 4), "stack-exhausted")    # nothing known yet
    assert _out(s) == []
    s.add_other("side-event")
    s.add_sample("full", 1, full(), "outermost")                  # completes it
    s.add_sample("later-cut", 1, cut(0, 4), "stack-exhausted")    # from the latest
    # (held back until the look-ahead ends: a later sample may show a
    # frame on the way with another caller)
    assert _out(s) == [] and done == []
    s.close()
    assert _out(s) == ["first-cut", "side-event", "full", "later-cut"]
    assert [d[0] for d in done] == ["first-cut", "later-cut"]
    assert all(d[1] == PCS for d in done)
    assert s.counts["cut"] == 2 and s.counts["completed"] == 2 and s.not_completed() == 0


def test_stitcher_follows_the_chain_outward_sample_to_sample():
    s, done = _stitcher()
    s.add_sample("full", 1, full(), "outermost")
    s.add_sample("mid", 1, cut(2, 7), "stack-exhausted")
    s.add_sample("deep", 1, cut(0, 3), "stack-exhausted")
    s.close()
    assert _out(s) == ["full", "mid", "deep"]
    assert [d[1] for d in done] == [PCS[2:], PCS]


def test_stitcher_never_links_across_an_exit_or_exec_or_another_thread():
    s, done = _stitcher()
    s.add_sample("full", 1, full(), "outermost")
    s.end_thread(1)                                    # exec or exit
    s.add_sample("after-exec", 1, cut(0, 4), "stack-exhausted")
    s.add_sample("other-thread", 2, full(), "outermost")
    s.end_thread(1)
    assert _out(s) == ["full", "after-exec", "other-thread"]
    assert done == []
    assert s.counts["not-completed:thread-end"] == 1


def test_stitcher_open_stacks_with_the_same_link_fare_alike():
    s, done = _stitcher()
    s.add_sample("cut-deep", 1, cut(0, 4), "stack-exhausted")
    s.add_sample("cut-less-deep", 1, cut(2, 4), "stack-exhausted")    # same link
    s.add_sample("mid", 1, cut(3, 7), "stack-exhausted")               # both grow
    assert done == []
    s.add_sample("full", 1, full(), "outermost")
    s.close()
    assert _out(s) == ["cut-deep", "cut-less-deep", "mid", "full"]
    assert sorted(done) == [("cut-deep", PCS), ("cut-less-deep", PCS[2:]), ("mid", PCS[3:])]
    assert s.counts["completed-from-later"] == 3


def test_stitcher_a_shallower_sample_between_breaks_the_link_in_time():
    # The thread returned past the frame: no neighbour in time completes it;
    # the same frame seen again (same CFA, return address) with one caller
    # chain in all the thread's samples does (outward_links.py).
    s, done = _stitcher()
    s.add_sample("cut", 1, cut(0, 4), "stack-exhausted")
    s.add_sample("shallow", 1, cut(6, 9), "outermost")
    s.add_sample("full", 1, full(), "outermost")
    assert _out(s) == [] and done == []
    s.close()
    assert _out(s) == ["cut", "shallow", "full"] and done == [("cut", PCS)]
    assert s.counts["completed-from-links"] == 1 and s.counts["completed-from-later"] == 0


def test_stitcher_chains_through_samples_of_other_calls():
    # deep, then a return to the top (no neighbour in time completes it),
    # then a middle depth: deep -> middle -> top through the links.
    s, done = _stitcher()
    top = cut(6, 9)
    top.bottom = True
    s.add_sample("deep", 1, cut(0, 4), "stack-exhausted")
    s.add_sample("top", 1, top, "outermost")
    s.add_sample("mid", 1, cut(2, 7), "stack-exhausted")
    s.close()
    assert _out(s) == ["deep", "top", "mid"]
    assert sorted(done) == [("deep", PCS), ("mid", PCS[2:])]
    assert s.counts["completed-from-links"] == 1


def test_stitcher_refuses_a_frame_seen_with_two_callers():
    # The same frames at the same places under another caller (frame 7
    # called from elsewhere): which one a cut sample had cannot be told,
    # even from its neighbour in time (a return and a call between two
    # samples looks like no return).
    other = list(PCS)
    other[7] = 0x999
    s, done = _stitcher()
    s.add_sample("full", 1, full(), "outermost")
    s.add_sample("cut", 1, cut(0, 4), "stack-exhausted")
    s.add_sample("full-other", 1, full(pcs=other), "outermost")
    s.add_sample("cut2", 1, cut(0, 4), "stack-exhausted")
    s.close()
    assert _out(s) == ["full", "cut", "full-other", "cut2"]
    assert done == [] and s.counts["not-completed:ambiguous"] == 2


def test_stitcher_samples_left_out_by_filters_still_count_as_evidence():
    s, done = _stitcher()
    s.add_sample("full", 1, full(), "outermost")
    s.add_sample("hidden-shallow", 1, cut(6, 9), "outermost", shown=False)
    s.add_sample("cut", 1, cut(0, 4), "stack-exhausted")
    s.add_sample("hidden-full", 1, full(), "outermost", shown=False)
    s.close()
    assert _out(s) == ["full", "cut"]
    assert [d[0] for d in done] == ["cut"]
    assert s.counts["completed-from-later"] == 1 and s.counts["cut"] == 1


def _below(stack, by=0x100000):
    """The same frames on another stack, `by` bytes lower (a coroutine's)."""
    return UserStack(stack.pcs, [c - by for c in stack.cfas], stack.sp - by,
                     bottom=stack.bottom)


def test_stitcher_the_thread_s_other_stack_says_nothing():
    # Main stack above, coroutine stack below; samples alternate.
    s, done = _stitcher()
    s.add_sample("coro-full", 1, _below(full()), "outermost")
    s.add_sample("main-full", 1, full(), "outermost")
    s.add_sample("coro-cut", 1, _below(cut(0, 4)), "stack-exhausted")  # across main-full
    s.add_sample("main-cut", 1, cut(0, 4), "stack-exhausted")          # across coro-cut
    # A deeper coroutine sample, through the completed one, across main-cut.
    s.add_sample("coro-deep", 1, _below(cut(0, 2)), "stack-exhausted")
    s.add_sample("coro-deep2", 1, _below(cut(0, 2)), "stack-exhausted")
    s.add_sample("main-full2", 1, full(), "outermost")
    s.close()
    assert _out(s) == ["coro-full", "main-full", "coro-cut", "main-cut", "coro-deep",
                       "coro-deep2", "main-full2"]
    assert [(d[0], d[1]) for d in done] == [("coro-cut", PCS), ("main-cut", PCS),
                                            ("coro-deep", PCS), ("coro-deep2", PCS)]
    assert s.counts["completed-from-links"] == 0 and s.not_completed() == 0


def test_stitcher_look_ahead_is_bounded():
    s, done = _stitcher()
    s.add_sample("cut", 1, cut(0, 4), "stack-exhausted")
    for i in range(8):
        s.add_other(i)
    # The ninth item behind it: the cut sample goes out as it is.
    assert _out(s) == ["cut"] + list(range(8))
    s.add_sample("full", 1, full(), "outermost")
    s.close()
    assert _out(s) == ["full"] and done == []
    assert s.counts["not-completed:lookahead"] == 1


def test_links_full_table_refuses_what_it_did_not_learn_never_guesses():
    # Room for the links of frames 1..3 only: frames 4..8 are not learnt,
    # so a stack cut at frame 4 stays cut (missing), never completed
    # wrongly; a link learnt still learns of a second caller.
    links = OutwardLinks(limit=3)
    links.add(full())
    assert len(links.links) == 3
    c = cut(0, 4)
    assert links.complete(c) == "missing" and c.pcs == PCS[:5] and not c.bottom
    other = list(PCS)
    other[3] = 0x999                    # frame 2 called from elsewhere
    links.add(full(pcs=other))
    assert len(links.links) == 3 and links.links[(CFAS[1], PCS[2])] is None
    assert links.complete(cut(0, 2)) == "ambiguous"


def test_links_a_walk_kept_is_refused_once_a_link_on_it_turns_ambiguous():
    links = OutwardLinks()
    links.add(full())
    c = cut(0, 4)
    assert links.complete(c) == "completed" and c.pcs == PCS
    assert links.complete(cut(0, 4)) == "completed"        # (the walk kept)
    other = list(PCS)
    other[8] = 0x999                    # frame 7 called from elsewhere
    links.add(full(pcs=other))
    c = cut(0, 4)
    assert links.complete(c) == "ambiguous" and c.pcs == PCS[:5]


def test_stitcher_settled_samples_leave_the_threads_pending_lists():
    # Four threads, every other sample cut and waiting for the look-ahead's
    # end (its neighbour, shallower, contradicts it): what the threads hold
    # stays within the look-ahead however many samples go by.
    s, done = _stitcher()
    out = []
    for t in range(4):
        s.add_sample(("full", t), t, full(), "outermost")
    for i in range(400):
        top = cut(6, 9)
        top.bottom = True
        s.add_sample(i, i % 4, cut(0, 4), "stack-exhausted")
        s.add_sample(("top", i), i % 4, top, "outermost")
        out += _out(s)
        assert sum(len(t.pending) for t in s._threads.values()) <= 8
    s.close()
    assert len(out + _out(s)) == 804 and s.counts["cut"] == 400
    assert s.counts["completed-from-links"] == 396 and all(d[1] == PCS for d in done)


# ----------------------------------------------- programs with known stacks
PROG = REPO / "tests" / "progs" / "stitch_stacks.c"
MODES = ("recursive", "threads", "coroutine", "phases")
@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    # cpu-clock:u every 250 us of the program's own CPU time: the same
    # samples whatever the load (each leaf call is several periods long).
    return record_modes(tmp_path_factory.mktemp("stitch"), PROG, MODES, 250000, ("2",))



def measure(path):
    """{path letter: Counter(cut, completed, equal, wrong, no-truth)} for the
    samples of one recording, stitched; and the stitcher's counts."""
    samples, counts, _ = stitched_samples(path)
    roots = path_roots(samples)
    stats = collections.defaultdict(collections.Counter)
    wrong = []
    for s in samples:
        if s.stop_reason != "stack-exhausted":
            assert not any(f.stitched for f in s.frames)
            continue
        names = user_names(s)
        m = LEAF.match(names[0] or "")
        stitched = [f.stitched for f in s.frames if not f.kernel]
        if m is None:
            # Not in a leaf (descend's own code, swapcontext): the truth's
            # depth is not known; its shape is: descend x k <- sweep <-
            # entry_<path> <- root of that path.
            key = "?"
            if any(stitched):
                tail = names[names.index("sweep"):] if "sweep" in names else []
                ok = any(tail == ["sweep", "entry_" + p] + list(root)
                         for p, root in roots.items())
                stats[key]["completed"] += 1
                stats[key]["equal" if ok else "wrong"] += 1
                if not ok:
                    wrong.append(names)
            stats[key]["cut"] += 1
            continue
        p, level = m.group(1), int(m.group(2))
        stats[p]["cut"] += 1
        if not any(stitched):
            continue
        assert stitched.index(True) == stitched.count(False), "stitched frames are outermost"
        truth = [names[0]] + ["descend"] * (level + 1) + ["sweep", "entry_" + p] + \
            list(roots[p])
        stats[p]["completed"] += 1
        if names == truth:
            stats[p]["equal"] += 1
        else:
            stats[p]["wrong"] += 1
            wrong.append(names)
    return stats, counts, wrong


def _total(stats, key):
    return sum(c[key] for c in stats.values())


@requires_perf
@pytest.mark.parametrize("mode", ("recursive", "threads"))
def test_every_cut_stack_completed_and_equal_to_the_truth(recordings, mode):
    """Depth varies over time, each thread's outer frames stay put (threads:
    one path per thread, so a stitch across threads would show another
    entry_<path>)."""
    stats, counts, wrong = measure(recordings[mode])
    cut, completed = _total(stats, "cut"), _total(stats, "completed")
    print("%s: %d cut, %d completed, %d equal to the truth, %d wrong; %s"
          % (mode, cut, completed, _total(stats, "equal"), len(wrong), counts))
    assert cut > 100, "the recording should cut many stacks"
    assert wrong == []
    assert completed == cut == counts["cut"] == counts["completed"]
    assert _total(stats, "equal") == completed
    # (straight down, then up: only later samples know the outer frames)
    assert counts["completed-from-later"] > 0
    if mode == "threads":
        assert set(stats) >= {"a", "b", "c"}


@requires_perf
def test_outer_frames_changing_between_phases_are_refused(recordings):
    """phases: the frames above the recursion change between phases, at the
    same addresses (sweep called from entry_a, then entry_b): sweep's frame
    has two callers in the thread's samples, so no stack is completed
    through it, none wrongly."""
    stats, counts, wrong = measure(recordings["phases"])
    cut = _total(stats, "cut")
    print("phases: %d cut, %d completed, %d wrong; %s"
          % (cut, _total(stats, "completed"), len(wrong), counts))
    assert cut > 100 and wrong == []
    assert counts["not-completed:ambiguous"] == cut == counts["cut"]


@requires_perf
def test_filters_leave_the_stitched_stacks_as_they_are(recordings):
    """-S keeps the samples of the deep leaves only (levels 8 and more): the
    shallow samples it leaves out, which show the outer frames, are still
    seen by the stitcher, so each kept sample's stack is what it is without
    the filter."""
    path = str(recordings["recursive"])
    rc, out, err = run_cli(["script", "--stitch", "--json", path])
    assert rc == 0, err
    everything = {(s["time"], s["tid"]): s["frames"]
                  for s in map(json.loads, out.splitlines())}
    deep = ",".join("leaf_a_%d" % n for n in range(8, 24))
    rc, out, err = run_cli(["script", "--stitch", "--json", "-S", deep, path])
    assert rc == 0, err
    kept = [json.loads(line) for line in out.splitlines()]
    assert len(kept) > 100 and all(any(f.get("stitched") for f in s["frames"]) for s in kept)
    assert all(s["frames"] == everything[(s["time"], s["tid"])] for s in kept)


@requires_perf
def test_coroutine_stack_never_stitched_across(recordings):
    """Path a on the main stack, path b on a makecontext stack (below it),
    switching after every leaf while both are deep: every completed stack
    ends at its own stack's bottom (main ... _start, or coro_main <-
    __start_context).  The main stack's cut samples are all completed (the
    coroutine's samples in between lie below it and say nothing about it).
    The coroutine's are completed from its earlier samples, across the main
    stack's samples in between, which lie above the end of the coroutine's
    stack as its complete samples show; those that only later samples
    could complete (straight down, then up: a main-stack sample above the
    frame cannot be told from a return past it there) are completed from
    the links of the coroutine's frames in its other samples."""
    stats, counts, wrong = measure(recordings["coroutine"])
    print("coroutine: %s; %s" % ({p: dict(c) for p, c in stats.items()}, counts))
    assert wrong == []
    assert stats["a"]["cut"] > 50 and stats["b"]["cut"] > 50
    assert stats["a"]["completed"] == stats["a"]["equal"] == stats["a"]["cut"]
    assert stats["b"]["completed"] == stats["b"]["equal"] == stats["b"]["cut"]
    assert counts["completed-from-links"] > 0


@requires_perf
def test_script_marks_stitched_frames_and_default_output_is_unchanged(recordings):
    path = str(recordings["recursive"])
    rc, plain, err = run_cli(["script", path])
    assert rc == 0, err
    assert "[stitched]" not in plain
    rc, text, err = run_cli(["script", "--stitch", path])
    assert rc == 0, err
    # The same samples, the same lines, plus the stitched ones marked.
    kept = [line for line in text.splitlines() if not line.endswith(" [stitched]")]
    assert kept == plain.splitlines()
    assert re.search(r" main\+0x[0-9a-f]+ \(\S+stitch_stacks\) \[stitched\]$", text, re.M)
    rc, out, err = run_cli(["script", "--stitch", "--json", path])
    assert rc == 0, err
    frames = [f for line in out.splitlines() for f in json.loads(line)["frames"]]
    assert sum(1 for f in frames if f.get("stitched")) == text.count(" [stitched]\n")
    rc, out, err = run_cli(["script", "--json", path])
    assert '"stitched"' not in out


@requires_perf
def test_collapse_stitched_stacks_reach_main(recordings):
    path = str(recordings["recursive"])
    rc, plain, _ = run_cli(["collapse", path])
    rc2, stitched, _ = run_cli(["collapse", "--stitch", path])
    assert rc == rc2 == 0
    count = lambda text, pred: sum(int(line.rsplit(" ", 1)[1])      # noqa: E731
                                   for line in text.splitlines() if pred(line))
    # The same number of samples, and with --stitch every leaf stack has main.
    assert count(plain, lambda line: True) == count(stitched, lambda line: True)
    assert count(plain, lambda line: ";main;" not in line and ";leaf_" in line) > 0
    assert count(stitched, lambda line: ";main;" not in line and ";leaf_" in line) == 0


@requires_perf
def test_report_children_of_main_count_the_stitched_stacks(recordings):
    """report --children --stitch: main's share is that of the folded stacks
    (collapse --stitch) that hold main; without --stitch it is smaller."""
    path = str(recordings["recursive"])
    shares = {}
    for opt in ([], ["--stitch"]):
        rc, out, err = run_cli(["report", "--children", *opt, path])
        assert rc == 0, err
        line = next(line for line in out.splitlines() if line.endswith("[.] main"))
        shares[len(opt)] = float(line.split()[0].rstrip("%"))
    rc, folded, err = run_cli(["collapse", "--stitch", path])
    # (main in a stack: between two frames, or its leaf: a sample in main itself)
    counts = [(int(n), ";main;" in stack + ";")
              for stack, n in (line.rsplit(" ", 1) for line in folded.splitlines())]
    expected = 100.0 * sum(n for n, has in counts if has) / sum(n for n, _ in counts)
    assert shares[1] == round(expected, 2) and shares[0] < shares[1]


@requires_libc_debug_here
@requires_perf
def test_export_stitched_stacks_reach_main(recordings):
    path = str(recordings["threads"])
    roots = {}
    for opt in ([], ["--stitch"]):
        out_path = str(recordings["threads"]) + ".%d.speedscope.json" % len(opt)
        rc, _, err = run_cli(["export", "--format", "speedscope", *opt, path, "-o", out_path])
        assert rc == 0, err
        with open(out_path) as f:
            doc = json.load(f)
        names = [fr["name"] for fr in doc["shared"]["frames"]]
        leaf_stacks = [[names[i] for i in stack] for prof in doc["profiles"]
                       for stack in prof["samples"]
                       if any(names[i].startswith("leaf_") for i in stack)]
        roots[len(opt)] = sum(1 for st in leaf_stacks if "start_thread" in st), len(leaf_stacks)
    assert roots[0][0] < roots[0][1]          # cut stacks miss their root
    assert roots[1][0] == roots[1][1] == roots[0][1]


@requires_perf
@pytest.mark.parametrize("mode", ("coroutine", "phases"))
def test_diagnose_counts_completed_and_not(recordings, mode):
    stats, counts, _ = measure(recordings[mode])
    rc, out, err = run_cli(["diagnose", "--json", str(recordings[mode])])
    assert rc == 0, err
    st = json.loads(out)["stitch"]
    assert st["cut"] == counts["cut"] and st["completed"] == counts["completed"]
    assert st["not_completed"] == counts["cut"] - counts["completed"]
    assert st["why_not"].get("ambiguous", 0) == counts["not-completed:ambiguous"]
    rc, text, err = run_cli(["diagnose", str(recordings[mode])])
    assert "stack stitching: %d of %d cut DWARF stacks completed" % (
        st["completed"], st["cut"]) in text
    if mode == "phases":
        assert st["not_completed"] > 0 and "ambiguous %d" % st["not_completed"] in text
