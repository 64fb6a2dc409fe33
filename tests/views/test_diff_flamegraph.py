"""The differential flame graph (`perfdata flamegraph --diff BASE NEW`) and
`perfdata diff --folded`, against FlameGraph's difffolded.pl on the same two
collapsed inputs (`perfdata collapse` of each file).

The oracle is difffolded.pl's rule as its source states it, run by perl
(tests/diff_pairs.py, not FlameGraph's file): a line per stack of either
file with both counts, 0 for a file without it; with -n, count1 scaled to
file 2's total, int(count1 * total2 / total1), stack by stack.  Every frame drawn must hold
the sums of those columns over the stacks through it; the doubled function
must be the reddest frame; the functions whose work did not change must
stay within the noise the graph shows (counts as recorded: their share
does change, by design of the test program).
"""
import html
import re

import pytest

from conftest import requires_perf, run_cli
from diff_pairs import difffolded, make_pairs

pytestmark = requires_perf

_FRAME = re.compile(r'<g data-d="(\d+)"[^>]*data-name="([^"]*)"[^>]*data-base="(\d+)" '
                    r'data-new="(\d+)" data-noise="([\d.]+)">.*?fill="rgb\((\d+),(\d+),(\d+)\)"'
                    r'.*?data-ox="([\d.]+)" data-ow="([\d.]+)"')


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    pairs = make_pairs(tmp_path_factory.mktemp("diff_flame"))
    for name in ("base", "new"):
        if name not in pairs.data:
            pytest.skip("perf could not record %r here" % name)
    return pairs


def perfdata(pairs, *args):
    rc, out, err = run_cli(list(args) + ["--symbol-cache", str(pairs.root / "cache")])
    assert rc == 0, err
    return out


def collapsed(pairs, name, *flags):
    path = pairs.root / ("%s%s.folded" % (name, "".join(flags)))
    if not path.exists():
        perfdata(pairs, "collapse", str(pairs.data[name]), "-o", str(path), *flags)
    return path


def frame_sums(stacks):
    """{path from "all": (sum of column 1, of column 2)} over the stacks."""
    sums = {}
    for stack, (c1, c2) in stacks.items():
        names = ["all"] + stack.split(";")
        for i in range(1, len(names) + 1):
            a, b = sums.get(tuple(names[:i]), (0, 0))
            sums[tuple(names[:i])] = (a + c1, b + c2)
    return sums


def frames(svg):
    """[(path, base, new, noise, rgb)] of the drawn frames, each frame's
    path rebuilt from where it is drawn (within its caller's span)."""
    found = sorted((int(d), float(ox), float(ow), html.unescape(name), int(b), int(n),
                    float(noise), (int(r), int(g), int(bl)))
                   for d, name, b, n, noise, r, g, bl, ox, ow in _FRAME.findall(svg))
    paths: dict[tuple[int, float], tuple[str, ...]] = {}
    out = []
    for depth, ox, ow, name, b, n, noise, rgb in found:
        if depth == 0:
            path: tuple[str, ...] = (name,)
        else:
            parent = next(p for (d, x), p in paths.items() if d == depth - 1 and
                          x[0] - 1e-3 <= ox and ox + ow <= x[0] + x[1] + 1e-3)
            path = parent + (name,)
        paths[(depth, (ox, ow))] = path
        out.append((path, b, n, noise, rgb))
    return out


@pytest.mark.parametrize("mode", ["normalised", "as recorded", "negate"])
def test_frame_counts_equal_difffolded(pairs, mode):
    base, new = collapsed(pairs, "base", "--samples"), collapsed(pairs, "new", "--samples")
    args = {"normalised": [], "as recorded": ["--no-normalize"], "negate": ["--negate"]}[mode]
    svg = perfdata(pairs, "flamegraph", "--diff", str(pairs.data["base"]),
                   str(pairs.data["new"]), *args)
    if mode == "negate":
        # difffolded.pl -n NEW BASE | flamegraph.pl --negate
        sums = {p: (b, n) for p, (n, b) in frame_sums(difffolded(new, base, True)).items()}
    else:
        sums = frame_sums(difffolded(base, new, mode == "normalised"))
    drawn = frames(svg)
    assert len(drawn) > 5
    for path, b, n, _, _ in drawn:
        assert (b, n) == sums[path], path
    # (the root holds both totals: the drawn side's as recorded)
    assert next(f[1:3] for f in drawn if f[0] == ("all",)) == sums[("all",)]


# NEW: the same -O1 binary with grows()' work doubled, or the -O2 build of
# the same source (other addresses, another build-id: frames pair by name)
NEWS = ["new", "o2new"]


def new_file(pairs, name):
    if name not in pairs.data:
        pytest.skip("perf could not record %r here" % name)
    return str(pairs.data[name])


@pytest.mark.parametrize("new", NEWS)
def test_doubled_function_is_the_reddest_frame(pairs, new):
    svg = perfdata(pairs, "flamegraph", "--diff", str(pairs.data["base"]),
                   new_file(pairs, new))

    def redness(rgb):
        r, g, b = rgb
        return 255 - g if r == 255 and g == b else -1
    drawn = frames(svg)
    reddest = max(drawn, key=lambda f: redness(f[4]))
    assert reddest[0][-1] == "grows"
    assert redness(reddest[4]) > 100
    # (normalised: the unchanged functions' shares fall, drawn blue)
    for path, _, _, _, (r, g, b) in drawn:
        if path[-1] in ("steady", "other"):
            assert b == 255 and r == g < 255, path


@pytest.mark.parametrize("new", NEWS)
def test_unchanged_functions_stay_within_the_noise(pairs, new):
    svg = perfdata(pairs, "flamegraph", "--diff", str(pairs.data["base"]),
                   new_file(pairs, new), "--no-normalize")
    seen = set()
    for path, b, n, noise, _ in frames(svg):
        name = path[-1]
        if name in ("steady", "other"):
            assert abs(n - b) <= noise, (path, b, n, noise)
            seen.add(name)
        elif name == "grows":
            # (the doubled work: about twice the samples, far beyond the noise)
            assert n - b > noise and 1.6 < n / b < 2.4, (path, b, n, noise)
            seen.add(name)
    assert seen == {"steady", "other", "grows"}


def test_folded_output_is_difffolded_of_collapse(pairs):
    base, new = collapsed(pairs, "base"), collapsed(pairs, "new")
    ours = perfdata(pairs, "diff", "--folded", str(pairs.data["base"]), str(pairs.data["new"]))
    oracle = difffolded(base, new, False)
    assert ours == "".join("%s %d %d\n" % (s, *oracle[s]) for s in sorted(oracle))


def test_plain_flame_graph_keeps_its_options(pairs):
    rc, _, err = run_cli(["flamegraph", str(pairs.data["new"]), "--negate"])
    assert rc == 2 and "--diff" in err and len(err.splitlines()) == 1
    plain = perfdata(pairs, "flamegraph", str(pairs.data["new"]))
    assert "data-base=" not in plain and 'data-family="grew"' not in plain
