"""Two profiles compared through the library face: Profile.diff gives the
rows of `perfdata diff BASE NEW`'s table (perf diff's) as data, and
Profile.diff_folded the columns `perfdata diff --folded BASE NEW` prints
(difffolded.pl's format), with normalize the base scaled as difffolded.pl
-n scales it."""
from __future__ import annotations

import pytest

from conftest import REPO, run_cli
from diff_pairs import table

import perfdata

SAMPLES = REPO / "samples"
BUILDIDS = str(SAMPLES / "buildids")
BASE, NEW = str(SAMPLES / "plt_loop.fp.data"), str(SAMPLES / "plt_loop_ibt.fp.data")


def _columns(text):
    out = {}
    for line in text.splitlines():
        stack, base, new = line.rsplit(" ", 2)
        out[stack] = (int(base), int(new))
    return out


def test_diff_folded_equals_the_command():
    rc, out, err = run_cli(["diff", BASE, NEW, "--folded", "--debug-dir", BUILDIDS])
    assert rc == 0, err
    want = _columns(out)
    got = perfdata.profile(BASE, debug_dirs=[BUILDIDS]).diff_folded(
        perfdata.profile(NEW, debug_dirs=[BUILDIDS]))
    assert got == want
    assert list(got) == sorted(got)
    # (the case has stacks of one side only, and stacks of both)
    assert any(b == 0 for b, _ in got.values()) and any(n == 0 for _, n in got.values())


def test_normalize_scales_the_base_to_new_total():
    base = perfdata.profile(BASE, debug_dirs=[BUILDIDS])
    new = perfdata.profile(NEW, debug_dirs=[BUILDIDS])
    raw = base.diff_folded(new)
    scaled = base.diff_folded(new, normalize=True)
    total1 = sum(b for b, _ in raw.values())
    total2 = sum(n for _, n in raw.values())
    assert total1 != total2
    assert {k: n for k, (_, n) in scaled.items()} == {k: n for k, (_, n) in raw.items()}
    for stack, (b, _) in raw.items():
        assert scaled[stack][0] == b * total2 // total1 or \
            abs(scaled[stack][0] - b * total2 / total1) < 1, stack


def _cells(row: perfdata.DiffRow, keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """The row as `perfdata diff -p` prints its cells (perf leaves a share
    blank where a profile lacks the function)."""
    out = [("Baseline", "%.2f%%" % row.baseline if row.base_period else ""),
           ("Base period", str(row.base_period)),
           ("Delta Abs", "%+.2f%%" % row.delta if row.new_period else ""),
           ("Period", str(row.new_period) if row.new_period else "")]
    for key in keys:
        if key == "dso":
            out.append(("Shared Object", row.shared_object or ""))
        elif key == "sym":
            out.append(("Symbol", "[%s] %s" % (row.level, row.symbol)))
        elif key == "comm":
            out.append(("Command", row.command or ""))
        elif key == "pid":
            out.append(("Pid:Command", "%d:%s" % (row.pid or 0, row.command or "")))
    return out


@pytest.mark.parametrize("pair", [(BASE, NEW), (str(SAMPLES / "threads.fp.data"),
                                                str(SAMPLES / "threads.dwarf.data"))])
@pytest.mark.parametrize("sort", ["dso,sym", "sym", "comm,dso,sym", "dso"])
def test_diff_rows_equal_the_command(pair, sort):
    rc, out, err = run_cli(["diff", *pair, "-p", "-s", sort, "--debug-dir", BUILDIDS])
    assert rc == 0, err
    _, printed = table(out)
    base, new = (perfdata.profile(p, debug_dirs=[BUILDIDS]) for p in pair)
    got = base.diff(new, sort=sort)
    assert got.sort_keys == tuple(sort.split(","))
    assert len(got) == len(printed) >= 1
    for row, cells in zip(got, printed):
        assert _cells(row, got.sort_keys) == cells
        assert abs(row.delta - (row.new - row.baseline)) < 1e-9
    assert got.event == "cpu-clock:u" and got[0] == got.rows[0]
    assert sum(r.base_period for r in got) == got.base_event_count
    assert sum(r.new_period for r in got) == got.new_event_count


def test_diff_of_an_event_by_name():
    base = perfdata.profile(BASE, debug_dirs=[BUILDIDS])
    new = perfdata.profile(NEW, debug_dirs=[BUILDIDS])
    assert base.diff(new, event="cpu-clock:u") == base.diff(new)
    with pytest.raises(KeyError):
        base.diff(new, event="cycles")
