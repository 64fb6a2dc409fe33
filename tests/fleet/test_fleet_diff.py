"""`perfdata fleet diff --base ... --new ...`: two sets of recordings made now
(tests/diff_pairs.py: tests/progs/diff_work.c, grows()' work doubled in the
new set), compared on a real Dask cluster (a scheduler and two workers
started for this module: tests/fleet/dask_cluster.py).

The sets: --base {base (-O1 build), strip_base (a stripped -O1 build named
from its debug file)}, --new {new (-O1), o2new (-O2), strip_new}: the
base set runs grows() with FACTOR 1, the new set with FACTOR 2.

* one file a set: byte for byte `perfdata diff BASE NEW`, and `--folded`;
* the sets: each row's periods are the sums of the files' own (each read
  from the single-file `perfdata diff -p -F FILE FILE`, added up here),
  the totals in the formulas too, the shares and deltas as printed
  recomputed from those sums, the rows in perf diff's order, the doubled
  function first;
* --folded: difffolded.pl (perl) over each set's `perfdata collapse`
  outputs put in one file (difffolded.pl adds up a stack's counts).
"""
import collections
import re

import pytest

from conftest import requires_perf, run_cli
from dask_cluster import dask_scheduler, fleet
from diff_pairs import difffolded, make_pairs, table

pytest.importorskip("distributed", reason="fleet needs dask[distributed] "
                                           "(pip install '.[fleet]')")
pytestmark = requires_perf

BASE_SET = ("base", "strip_base")
NEW_SET = ("new", "o2new", "strip_new")
_ADDRESS = re.compile(r"^\[.\] (0x)?[0-9a-f]{16}$")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    pairs = make_pairs(tmp_path_factory.mktemp("fleet_diff"))
    for name in BASE_SET + NEW_SET:
        if name not in pairs.data:
            pytest.skip("perf could not record %r here" % name)
    pairs.options = ["--debug-dir", str(pairs.debug_dir),
                     "--symbol-cache", str(pairs.root / "cache")]
    return pairs


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    with dask_scheduler(tmp_path_factory.mktemp("dask")) as address:
        yield address


def fleet_diff(pairs, scheduler, base, new, *args):
    rc, out, err = fleet("diff", "--base", *[pairs.data[n] for n in base],
                         "--new", *[pairs.data[n] for n in new], *args, *pairs.options,
                         "--scheduler", scheduler)
    assert rc == 0, err
    assert re.search(r"fleet: base: %d files? read" % len(base), err), err
    assert re.search(r"fleet: new: %d files? read" % len(new), err), err
    return out


def single(pairs, *args):
    rc, out, err = run_cli(list(args) + pairs.options)
    assert rc == 0, err
    return out


@pytest.mark.parametrize("pair,args", [
    (("base", "new"), []),
    (("base", "o2new"), ["-c", "ratio", "-p", "-F"]),
    (("base", "new"), ["-s", "sym", "-o", "0"]),
    (("strip_base", "strip_new"), ["-d", "diff_work", "--percentage", "relative"]),
    (("base", "new"), ["-c", "wdiff:1,2", "-b", "-q"]),
    (("base", "o2new"), ["-S", "grows,other", "-s", "comm,dso,sym"]),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "-".join(v))
def test_one_file_a_set_is_perfdata_diff(pairs, scheduler, pair, args):
    base, new = pair
    ours = fleet_diff(pairs, scheduler, [base], [new], *args)
    assert ours == single(pairs, "diff", *args, str(pairs.data[base]), str(pairs.data[new]))
    assert "[.] grows" in ours


def test_folded_of_one_file_a_set_is_perfdata_diff_folded(pairs, scheduler):
    ours = fleet_diff(pairs, scheduler, ["base"], ["o2new"], "--folded")
    assert ours == single(pairs, "diff", "--folded", str(pairs.data["base"]),
                          str(pairs.data["o2new"]))


def file_periods(pairs, name):
    """({(dso, symbol): period}, total) of one file, from `perfdata diff -p
    -F FILE FILE` (every key paired with itself; the formula names the
    total); a dso's entry without a symbol keyed (dso, "[x] ?") with its
    address beside."""
    path = str(pairs.data[name])
    _, rows = table(single(pairs, "diff", "-p", "-F", path, path))
    periods, addresses, totals = {}, {}, set()
    for row in rows:
        cells = dict(row)
        key = (cells["Shared Object"], cells["Symbol"])
        if _ADDRESS.match(key[1]):
            addresses[key[0]] = int(key[1].split()[1], 16)
            key = (key[0], key[1][:4] + "?")
        periods[key] = int(cells["Base period"])
        totals.add(int(re.search(r"/ (\d+)\)$", cells["Formula"]).group(1)))
    assert len(totals) == 1
    return periods, totals.pop(), addresses


def set_sums(pairs, names):
    periods, total, lowest = collections.Counter(), 0, {}
    for name in names:
        p, t, addresses = file_periods(pairs, name)
        periods.update(p)
        total += t
        for dso, address in addresses.items():
            signed = address - (1 << 64) if address >= 1 << 63 else address
            lowest[dso] = min(lowest.get(dso, signed), signed)
    return periods, total, lowest


def test_sets_are_the_sums_of_their_files(pairs, scheduler):
    text = fleet_diff(pairs, scheduler, BASE_SET, NEW_SET, "-p", "-F")
    names, rows = table(text)
    assert names == ["Baseline", "Base period", "Delta Abs", "Formula", "Period",
                     "Shared Object", "Symbol"]
    base, base_total, base_low = set_sums(pairs, BASE_SET)
    new, new_total, new_low = set_sums(pairs, NEW_SET)
    seen = set()
    deltas = []
    for row in rows:
        cells = dict(row)
        dso, sym = cells["Shared Object"], cells["Symbol"]
        key = (dso, sym)
        if _ADDRESS.match(sym):
            # (a dso's entries without a symbol: one row, the lowest address)
            key = (dso, sym[:4] + "?")
            shown = int(sym.split()[1], 16)
            assert shown == min(base_low.get(dso, 1 << 64), new_low.get(dso, 1 << 64)) \
                % (1 << 64), row
        seen.add(key)
        b, n = base.get(key, 0), new.get(key, 0)
        assert cells["Base period"] == str(b)
        assert cells["Period"] == (str(n) if n else "")
        if b:
            assert cells["Baseline"] == "%.2f%%" % (100.0 * b / base_total)
        if n:
            delta = 100.0 * n / new_total - 100.0 * b / base_total
            assert cells["Delta Abs"] == "%+.2f%%" % delta
            assert cells["Formula"] == "(%d * 100 / %d) - (%d * 100 / %d)" % (
                n, new_total, b, base_total)
            deltas.append(abs(delta))
    assert seen == set(base) | set(new)
    # perf diff's order: the rows of both sets by the size of the change
    assert deltas == sorted(deltas, reverse=True)
    # the truth: grows' share goes from 2/5 to 4/7 in every pair of runs
    top = dict(rows[0])
    assert top["Symbol"] == "[.] grows" and top["Shared Object"] == "diff_work"
    assert abs(float(top["Delta Abs"].rstrip("%")) - (400 / 7 - 40)) < 5


def test_folded_sets_are_difffolded_of_summed_collapses(pairs, scheduler, tmp_path):
    ours = fleet_diff(pairs, scheduler, BASE_SET, NEW_SET, "--folded")
    inputs = []
    for label, names in (("base", BASE_SET), ("new", NEW_SET)):
        path = tmp_path / (label + ".folded")
        path.write_text("".join(single(pairs, "collapse", str(pairs.data[n])) for n in names))
        inputs.append(path)
    oracle = difffolded(inputs[0], inputs[1], False)
    assert ours == "".join("%s %d %d\n" % (s, *oracle[s]) for s in sorted(oracle))
    grows = sum(n for s, (_, n) in oracle.items() if s.endswith(";grows"))
    grows_base = sum(b for s, (b, _) in oracle.items() if s.endswith(";grows"))
    # (three runs of twice the work against two runs of it: about 3x)
    assert 2.4 < grows / grows_base < 3.6


def test_a_set_without_a_readable_file(pairs, scheduler, tmp_path):
    junk = tmp_path / "junk.data"
    junk.write_bytes(b"not a perf.data file " * 8)
    rc, out, err = fleet("diff", "--base", junk, "--new", pairs.data["new"], *pairs.options,
                         "--scheduler", scheduler)
    assert rc == 2 and out == ""
    assert err.splitlines()[-1] == "perfdata: error: --base: no file could be read (1 skipped)"
    assert "Traceback" not in err
    rc, out, err = fleet("diff", "--base", pairs.data["base"], "--scheduler", scheduler)
    assert rc == 2 and out == "" and "--new" in err and "Traceback" not in err
    rc, out, err = fleet("diff", "--base", pairs.data["base"], "--new", pairs.data["new"],
                         "-o", "2", "--scheduler", scheduler)
    assert rc == 2 and err == "perfdata: error: Order option out of limit (-o 2: 2 files)\n"
