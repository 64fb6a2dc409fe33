"""SwitchTracker's arithmetic on switch sequences made here: what a thread's
run, waits and wall come to, where its last run ends at its exit (a
per-process recording, no switch out after it) or at the switch out that
follows the exit (a system-wide one)."""
from perfdata.session.switches import SwitchTracker


def _thread(tracker, tid):
    (t,) = [t for t in tracker.kept_threads() if t.tid == tid]
    return t


def _runs_waits_runs_exits(tr):
    """Thread 7 runs 100-130, waits until 180, runs until its exit at 250,
    with no switch out after it (a per-process recording)."""
    tr.switch_in(100, 7)
    tr.switch_out(130, 7, 1, "worker", "S")
    tr.switch_in(180, 7)
    tr.exited(250, 7)
    tr.finish()
    return _thread(tr, 7)


def test_a_run_ends_at_the_exit_where_no_switch_out_follows():
    t = _runs_waits_runs_exits(SwitchTracker())
    assert (t.first, t.last, t.run, t.wait) == (100, 250, 30 + 70, 50)
    assert t.wall == t.run + t.wait


def test_a_switch_out_after_the_exit_ends_the_run_there():
    tr = SwitchTracker()
    tr.switch(100, 0, 0, -1, "", "", None, 7, "worker")
    tr.exited(240, 7)
    tr.switch(250, 0, 7, 1, "worker", "X", None, 0, None)
    tr.finish()
    t = _thread(tr, 7)
    assert (t.first, t.last, t.run, t.wait) == (100, 250, 150, 0)


def test_an_exit_while_waiting_or_unseen_changes_nothing():
    tr = SwitchTracker()
    tr.switch_in(100, 7)
    tr.switch_out(130, 7, 1, "worker", "S")
    tr.exited(200, 7)            # (a record out of order: it waits still)
    tr.exited(210, 8)            # (a thread no switch named)
    tr.finish()
    t = _thread(tr, 7)
    assert (t.first, t.last, t.run, t.wait) == (100, 130, 30, 0)
    assert 8 not in tr.threads


def test_the_window_clips_the_run_to_the_exit():
    t = _runs_waits_runs_exits(SwitchTracker(window=[(150, 1000)]))
    assert t.run == 70 and t.waits == {"S": 30}
