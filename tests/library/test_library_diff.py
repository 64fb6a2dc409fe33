"""Two profiles compared through the library face: Profile.diff_folded
gives the columns `perfdata diff --folded BASE NEW` prints (difffolded.pl's
format), and with normalize the base scaled as difffolded.pl -n scales it."""
from __future__ import annotations

from conftest import REPO, run_cli

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
