"""`perfdata diff` against `perf diff` (perf 6.1) on pairs recorded now
(tests/diff_pairs.py: tests/progs/diff_work.c with grows()' work doubled).

Row by row for the rows above 0.5% (the kernel's small rows depend on the
machine's kallsyms): the same cells in the same order, for perf's default
and for each of the options that shape the table.  Frames perf leaves
unnamed are accounted for explicitly: on the stripped build, perf's one
row of addresses in diff_work (perf diff takes every entry of a dso
without a symbol for one) is the sum of the functions perfdata names there
(from the debug file perf is not given), and its address lies in one of
them.  The truth is checked too: grows()' share grows by what its doubled
work predicts.
"""
import re
import subprocess

import pytest

from conftest import _kernel_symbols_readable, requires_perf, run_cli
from diff_pairs import build_id, make_pairs, table

pytestmark = requires_perf

# the comparison's threshold: rows whose share, before or after, is above it
MIN_SHARE = 0.5
# Where this machine hides the kernel's addresses, perf and perfdata both
# leave its samples unnamed: those rows are not compared (the kernel's rows
# above MIN_SHARE are, where it names them).
KERNEL_NAMED = _kernel_symbols_readable()
_ADDRESS = re.compile(r"\[.\] 0x[0-9a-f]{16}$")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    pairs = make_pairs(tmp_path_factory.mktemp("diff_pairs"))
    pairs.memo = {}     # (perf diff's outputs by command line)
    return pairs


def need(pairs, *names):
    for name in names:
        if name not in pairs.data:
            pytest.skip("perf could not record %r here" % name)
    return [str(pairs.data[n]) for n in names]


def perf_diff(pairs, args):
    key = tuple(args)
    if key not in pairs.memo:
        res = pairs.perf("diff", *args)
        assert res.returncode == 0, res.stderr
        pairs.memo[key] = res.stdout
    return pairs.memo[key]


def our_diff(pairs, args):
    rc, out, err = run_cli(["diff", "--debug-dir", str(pairs.debug_dir),
                            "--symbol-cache", str(pairs.root / "cache")] + list(args))
    assert rc == 0, err
    return out


def share(row):
    """A row's largest share, before or after (%), from its Baseline and
    Delta cells."""
    cells = dict(row)
    base = float(cells.get("Baseline", "").rstrip("%") or 0)
    delta = next((v for k, v in cells.items() if k.startswith("Delta")), "")
    return max(base, base + float(delta.rstrip("%") or 0))


def big_keys(pairs, files):
    """The sort-key cells of the rows above MIN_SHARE in perf's default table."""
    _, rows = table(perf_diff(pairs, files))
    return {tuple(v for k, v in row if k in ("Shared Object", "Symbol"))
            for row in rows if share(row) > MIN_SHARE
            and (KERNEL_NAMED or dict(row)["Shared Object"] != "[kernel.kallsyms]")}


def compared(rows, keys):
    """The rows of these keys (a column left out, -d's: by the others)."""
    out = []
    for row in rows:
        cells = dict(row)
        if any(cells.get("Shared Object", dso) == dso and cells.get("Symbol", sym) == sym
               for dso, sym in keys):
            out.append(row)
    return out


VARIANTS = [[], ["-c", "delta"], ["-c", "ratio"], ["-c", "wdiff:1,2"], ["-p"], ["-F"], ["-b"],
            ["-o", "0"], ["-q"], ["-c", "ratio", "-p", "-F"], ["-d", "diff_work"],
            ["-d", "diff_work", "--percentage", "relative"], ["-S", "grows,other"]]


@pytest.mark.parametrize("pair", [("base", "new"), ("base", "o2new")])
@pytest.mark.parametrize("args", VARIANTS, ids=" ".join)
def test_rows_equal_perf_diff(pairs, pair, args):
    files = need(pairs, *pair)
    keys = big_keys(pairs, files)
    assert {k for k in keys if k[0] == "diff_work"} == \
        {("diff_work", "[.] " + f) for f in ("grows", "steady", "other")}
    theirs, ours = perf_diff(pairs, args + files), our_diff(pairs, args + files)
    if "-q" in args:
        # (no header to cut the columns at: each row's cells by blanks)
        def split(text):
            return [line.split() for line in text.splitlines()
                    if any(k[1] in line for k in keys)]
        assert split(ours) == split(theirs)
        return
    names, perf_rows = table(theirs)
    our_names, our_rows = table(ours)
    assert our_names == names
    assert compared(our_rows, keys) == compared(perf_rows, keys)
    assert len(compared(perf_rows, keys)) >= (2 if "-S" in args else 3)


@pytest.mark.parametrize("sort", ["sym", "dso", "comm", "comm,dso,sym", "sym,dso", "pid",
                                  ","])
def test_sort_keys_equal_perf_diff(pairs, sort):
    files = need(pairs, "base", "new")
    keys = big_keys(pairs, files)
    syms = {k[1] for k in keys}
    names, perf_rows = table(perf_diff(pairs, ["-s", sort] + files))
    our_names, our_rows = table(our_diff(pairs, ["-s", sort] + files))
    assert our_names == names

    def kept(rows):
        # (rows of the big symbols; without a Symbol column every row: the
        # dsos, comms and threads are few)
        return [r for r in rows if "Symbol" not in names or dict(r)["Symbol"] in syms]
    assert kept(our_rows) == kept(perf_rows)
    assert kept(perf_rows)


def test_three_files_equal_perf_diff(pairs):
    files = need(pairs, "base", "new", "o2new")
    keys = big_keys(pairs, files[:2])
    for args in ([], ["-c", "ratio", "-p"], ["-o", "2"]):
        theirs, ours = perf_diff(pairs, args + files), our_diff(pairs, args + files)
        assert ours.split("# Baseline")[0] == theirs.split("# Baseline")[0]   # (data files)
        names, perf_rows = table(theirs)
        assert table(ours)[0] == names
        assert compared(table(ours)[1], keys) == compared(perf_rows, keys)


def test_doubled_function_is_the_change(pairs):
    """The truth: steady : grows : other is 2 : 2 : 1, then 2 : 4 : 1, so
    grows' share goes from 40% to 57% and the others' fall by the same."""
    files = need(pairs, "base", "new")
    _, rows = table(our_diff(pairs, files))
    cells = {dict(r)["Symbol"]: dict(r) for r in rows}
    first = rows[0]
    assert dict(first)["Symbol"] == "[.] grows"
    delta = float(cells["[.] grows"]["Delta Abs"].rstrip("%"))
    assert 100 * 4 / 7 - 100 * 2 / 5 - 5 < delta < 100 * 4 / 7 - 100 * 2 / 5 + 5
    for name in ("[.] steady", "[.] other"):
        assert float(cells[name]["Delta Abs"].rstrip("%")) < -2


def function_ranges(debug_file):
    """{name: (start, end)} of the functions of an ELF file (nm -S)."""
    out = subprocess.run(["nm", "-S", str(debug_file)], capture_output=True, text=True).stdout
    ranges = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            start = int(parts[0], 16)
            ranges[parts[3]] = (start, start + int(parts[1], 16))
    return ranges


def test_frames_perf_leaves_unnamed_are_named(pairs):
    files = need(pairs, "strip_base", "strip_new")
    _, perf_rows = table(perf_diff(pairs, files))
    _, our_rows = table(our_diff(pairs, files))
    unnamed = [dict(r) for r in perf_rows if r[2] == ("Shared Object", "diff_work")
               and _ADDRESS.search(dict(r)["Symbol"])]
    # perf: one row for the dso, its functions unnamed (perf is not given the
    # debug file; perfdata is, through --debug-dir)
    assert len(unnamed) == 1, perf_rows
    ours = [dict(r) for r in our_rows if dict(r)["Shared Object"] == "diff_work"]
    names = {r["Symbol"] for r in ours}
    assert {"[.] grows", "[.] steady", "[.] other"} <= names
    assert not any(_ADDRESS.search(n) for n in names)
    # ... and their shares, before and after, add up to perf's row
    for column in ("Baseline", "after"):
        def pct(cells):
            base = float(cells["Baseline"].rstrip("%") or 0)
            if column == "Baseline":
                return base
            # an empty delta: the function has no sample in the new file (perf
            # diff prints no delta without a pair), its share there 0
            if not cells["Delta Abs"]:
                return 0.0
            return base + float(cells["Delta Abs"].rstrip("%"))
        assert abs(sum(pct(r) for r in ours) - pct(unnamed[0])) <= 0.01 * (len(ours) + 1)
    # perf's address (the dso's lowest sampled one) is in one of the functions named
    address = int(unnamed[0]["Symbol"].split()[-1], 16)
    debug = next(pairs.debug_dir.rglob("*.debug"))
    ranges = function_ranges(debug)
    assert any(lo <= address < hi for name, (lo, hi) in ranges.items()
               if "[.] " + name in names)
    # the rows perf does name are the same (the kernel's, above 0.5%)
    others = [r for r in perf_rows if dict(r)["Shared Object"] != "diff_work"
              and share(r) > MIN_SHARE
              and (KERNEL_NAMED or dict(r)["Shared Object"] != "[kernel.kallsyms]")]
    assert [r for r in our_rows if r in others] == others


def test_two_builds_pair_by_name(pairs):
    """-O1 against -O2 of the same source (FACTOR 1, then 2): other build-ids,
    every function at another address, yet each function is one row of
    both files (a Baseline and a Delta), as perf diff pairs them; the
    doubled function first.  The library's rows (Profile.diff) pair them
    the same."""
    import perfdata
    files = need(pairs, "base", "o2new")
    o1, o2 = (pairs.root / level / "diff_work" for level in ("o1", "o2"))
    assert build_id(o1) != build_id(o2)
    at1, at2 = function_ranges(o1), function_ranges(o2)
    names = ("grows", "steady", "other")
    assert all(at1[n][0] != at2[n][0] for n in names)
    _, perf_rows = table(perf_diff(pairs, files))
    _, rows = table(our_diff(pairs, files))
    for got in (rows, perf_rows):
        mine = [dict(r) for r in got if dict(r)["Shared Object"] == "diff_work"
                and dict(r)["Symbol"] in ["[.] " + n for n in names]]
        assert sorted(r["Symbol"] for r in mine) == ["[.] grows", "[.] other", "[.] steady"]
        assert all(r["Baseline"] and r["Delta Abs"] for r in mine), mine
        assert dict(got[0])["Symbol"] == "[.] grows"
    options = dict(debug_dirs=[str(pairs.debug_dir)], symbol_cache=str(pairs.root / "cache"))
    data = perfdata.profile(files[0], **options).diff(perfdata.profile(files[1], **options))
    paired = {r.symbol: r for r in data if r.shared_object == "diff_work" and r.symbol in names}
    assert set(paired) == set(names)
    assert all(r.base_period and r.new_period for r in paired.values())
    assert data[0].symbol == "grows" and 100 * 4 / 7 - 100 * 2 / 5 - 5 < data[0].delta < \
        100 * 4 / 7 - 100 * 2 / 5 + 5
