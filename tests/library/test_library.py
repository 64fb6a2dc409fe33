"""The library's face (perfdata.profile, issue 35) against the commands: the
README's example names the functions `perfdata report` names, on a bundled
sample and on a recording made now; the views as data equal the commands'
output (collapse, flamegraph, script, report); the objects are frozen."""
import dataclasses
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

import perfdata
from conftest import PERF, WORKLOAD, requires_perf, run_cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "samples/threads.fp.data"
DEBUG = ["--debug-dir", str(ROOT / "samples/buildids")]
# a row of `perfdata report -q`: overhead, comm, dso, level, symbol
_ROW = re.compile(r"^\s+([\d.]+)%\s+(.*?)\s{2,}(.*?)\s{2,}\[(.)\] (.*?)\s*$")


def readme_example() -> str:
    """The python block of the README's library section."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The library\n"):text.index("## Where the rest lives")]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def run_example(code: str, path: str, debug_dir: str) -> str:
    code = code.replace('"%s"' % SAMPLE, repr(path)).replace(
        '"samples/buildids"', repr(debug_dir))
    assert repr(path) in code, "the README's example reads another file than %s" % SAMPLE
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def report_rows(path: str, *extra: str) -> list[tuple[str, str, str, str]]:
    """(overhead, comm, dso, symbol) of `perfdata report -q`'s rows."""
    rc, out, err = run_cli(["report", "-q", str(path)] + DEBUG + list(extra))
    assert rc == 0, err
    return [(m.group(1), m.group(2), m.group(3), m.group(5))
            for m in map(_ROW.match, out.splitlines()) if m]


def check_example(path: str) -> None:
    printed = run_example(readme_example(), str(path), str(ROOT / "samples/buildids"))
    lines = printed.splitlines()
    rows = report_rows(path)
    top = [tuple(line.split(" ", 3)) for line in lines[:2]]
    assert len(rows) >= 2 and top == [("%s%%" % r[0],) + r[1:] for r in rows[:2]]


def test_readme_example_names_the_report_top_functions():
    check_example(str(ROOT / SAMPLE))


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A -g recording made now (the suite's Python workload)."""
    path = tmp_path_factory.mktemp("library") / "fp.data"
    out = subprocess.run([PERF, "record", "-q", "-g", "-F", "2000", "-o", str(path), "--"]
                         + WORKLOAD, capture_output=True, timeout=120)
    if out.returncode != 0 or not path.exists():
        pytest.skip("perf record failed: %s" % out.stderr[-300:])
    return str(path)


@requires_perf
def test_readme_example_on_a_recording(recording):
    check_example(recording)


@requires_perf
def test_report_rows_are_the_commands(recording):
    """Every row of the table, in the command's order, with its names."""
    rows = [("%.2f" % r.overhead, r.command, r.shared_object, r.symbol)
            for r in perfdata.profile(recording, debug_dirs=[str(ROOT / "samples/buildids")])
            .report()]
    assert rows == report_rows(recording) and len(rows) > 3


def test_report_sort_keys_and_children():
    prof = perfdata.profile(ROOT / SAMPLE, debug_dirs=[ROOT / "samples/buildids"])
    table = prof.report(sort="pid,sym", children=True)
    rc, out, _ = run_cli(["report", "-q", "--children", "-n", "--sort", "pid,sym",
                          str(ROOT / SAMPLE)] + DEBUG)
    got = [l.split() for l in out.splitlines() if l.strip()]
    want = [["%.2f%%" % r.children, "%.2f%%" % r.overhead, "%d" % r.samples,
             "%d:%s" % (r.pid, "threads"), "[%s]" % r.level, r.symbol] for r in table]
    assert rc == 0 and got == want
    assert table.samples == sum(r.samples for r in table if r.overhead)


def test_folded_is_collapse():
    prof = perfdata.profile(ROOT / "samples/plt_loop.fp.data",
                            debug_dirs=[ROOT / "samples/buildids"])
    rc, out, _ = run_cli(["collapse", str(ROOT / "samples/plt_loop.fp.data")] + DEBUG)
    assert rc == 0
    assert "".join("%s %d\n" % kv for kv in prof.folded().items()) == out
    rc, out, _ = run_cli(["collapse", "--samples", str(ROOT / "samples/plt_loop.fp.data")]
                         + DEBUG)
    assert "".join("%s %d\n" % kv for kv in prof.folded(weight="samples").items()) == out


def test_flamegraph_is_the_commands(tmp_path):
    path = str(ROOT / "samples/cpp_inline.dwarf.data")
    graph = perfdata.profile(path, debug_dirs=[ROOT / "samples/buildids"]).flamegraph()
    rc, out, _ = run_cli(["flamegraph", path] + DEBUG)
    assert rc == 0 and graph.svg() == out
    assert graph.root.name == "all" and graph.root.value == sum(
        c.value for c in graph.root.children)
    leaves = Counter()
    for _, node in graph.root.walk():
        leaves[node.name] += node.self_value
    assert sum(leaves.values()) == graph.root.value


def script_stacks(path: str) -> list[tuple[int, list[str]]]:
    rc, out, err = run_cli(["script", path, "-F", "tid,ip,sym"] + DEBUG)
    assert rc == 0, err
    stacks = []
    for block in out.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if lines:
            stacks.append((int(lines[0]), [l.split(None, 1)[1] for l in lines[1:]]))
    return stacks


@pytest.mark.parametrize("name", ["threads.fp", "cpp_inline.dwarf", "plt_loop.fp"])
def test_samples_are_the_scripts(name):
    """Each sample's frames are those `perfdata script` prints, in order."""
    path = str(ROOT / "samples" / ("%s.data" % name))
    prof = perfdata.profile(path, debug_dirs=[ROOT / "samples/buildids"])
    got = [(s.tid, [(f.function or "[unknown]") + (" (inlined)" if f.inlined else "")
                    for f in s.frames]) for s in prof]
    assert got == script_stacks(path) and got
    if name.endswith("dwarf"):
        assert any(f.inlined and f.kind == "inlined" for s in got_samples(prof) for f in s.frames)


def got_samples(prof):
    return list(prof)


def test_objects_are_frozen_and_slotted():
    prof = perfdata.profile(ROOT / SAMPLE, debug_dirs=[ROOT / "samples/buildids"])
    sample = next(iter(prof))
    row = prof.report()[0]
    node = prof.flamegraph().root
    for obj in (sample, sample.frames[0], row, node):
        assert not hasattr(obj, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.__setattr__(dataclasses.fields(obj)[0].name, None)
    assert sample.frames[0].kind == "user" and sample.leaf is sample.frames[0]
    assert sample.frames[0].srcline() == "threads.c:14"
    assert sample.frames[0].srcline(full_path=True).endswith("/threads.c:14")


def test_filters_are_the_commands():
    path = str(ROOT / SAMPLE)
    prof = perfdata.profile(path, debug_dirs=[ROOT / "samples/buildids"], tids=[19302])
    assert {s.tid for s in prof} == {19302}
    # perf report's --tid: the others still count in the total
    assert [("%.2f" % r.overhead, r.symbol) for r in prof.report()] == \
        [(r[0], r[3]) for r in report_rows(path, "--tid", "19302")]
    timed = perfdata.profile(path, time="10%/2")
    rc, out, _ = run_cli(["script", path, "--time", "10%/2", "-F", "time"])
    assert [s.time for s in timed] and len(list(timed)) == len(out.split())


def test_profile_of_options_made_by_hand():
    """perfdata.Profile(path, ResolveOptions(...)): the options the face
    leaves out, here -S (a report filter: the others stay in the total)."""
    from perfdata.resolve import ResolveOptions
    path = str(ROOT / SAMPLE)
    options = ResolveOptions(debug_dirs=(str(ROOT / "samples/buildids"),),
                             symbols=(frozenset({"hot_beta"}), frozenset()))
    prof = perfdata.Profile(path, options)
    assert prof.options is options
    rc, out, _ = run_cli(["report", "-q", path, "-S", "hot_beta"] + DEBUG)
    # (the command elides the symbol column: one symbol was asked for)
    assert [l.split()[:3] for l in out.splitlines() if l.strip()] == [["49.48%", "threads",
                                                                        "threads"]]
    assert [("%.2f%%" % r.overhead, r.symbol) for r in prof.report()] == [("49.48%", "hot_beta")]


def test_notebook_shows_the_graph_and_table():
    prof = perfdata.profile(ROOT / SAMPLE, debug_dirs=[ROOT / "samples/buildids"])
    html = prof._repr_html_()
    assert html.count("<svg") == 1 and "hot_alpha" in html and "<table>" in html
    table = prof.report()._repr_html_()
    assert table.count("<tr>") == 3 and "50.52%" in table
    assert prof.flamegraph()._repr_svg_().startswith("<?xml")


def test_ipython_shows_them_inline():
    """IPython's display formatter (what Jupyter calls for a cell's value)
    finds the HTML of a profile and a table, the SVG of a flame graph."""
    formatters = pytest.importorskip("IPython.core.formatters")
    prof = perfdata.profile(ROOT / SAMPLE, debug_dirs=[ROOT / "samples/buildids"])
    shown, _ = formatters.DisplayFormatter().format(prof)
    assert "<svg" in shown["text/html"] and "hot_beta" in shown["text/html"]
    shown, _ = formatters.DisplayFormatter().format(prof.report())
    assert shown["text/html"].startswith("<table>")
    shown, _ = formatters.DisplayFormatter().format(prof.flamegraph())
    assert "image/svg+xml" in shown


def test_arrow_tables_hold_every_sample():
    pytest.importorskip("pyarrow")
    prof = perfdata.profile(ROOT / SAMPLE, debug_dirs=[ROOT / "samples/buildids"])
    tables = prof.to_arrow()
    samples = list(prof)
    assert tables.samples.num_rows == len(samples)
    assert tables.samples.column("tid").to_pylist() == [s.tid for s in samples]


def test_bad_input_is_a_perfdata_error(tmp_path):
    with pytest.raises(perfdata.PerfDataError):
        perfdata.profile(ROOT / "README.md")
    with pytest.raises(ValueError):
        perfdata.profile(ROOT / SAMPLE, unwind="lbr")
    with pytest.raises(ValueError):
        perfdata.profile("-")
    with pytest.raises(ValueError):
        perfdata.profile(ROOT / SAMPLE, time="yesterday")


def test_a_pass_leaves_the_interpreter_as_it_was():
    """The collector and sys.modules as the commands set them during a pass
    only (perfdata/library/runtime.py): after it, no stand-in in
    sys.modules, the program's thresholds, nothing frozen; the modules the
    run never uses are not imported."""
    code = textwrap.dedent('''
        import gc, sys
        import perfdata
        gc.set_threshold(1234, 5, 6)
        prof = perfdata.profile(sys.argv[1], debug_dirs=[sys.argv[2]])
        prof.report(); prof.folded(); prof.flamegraph()
        sample = next(iter(prof))
        line = sample.frames[0].srcline()
        unused = ("pdb", "inspect", "traceback", "pickle", "hashlib")
        print(gc.get_threshold(), gc.get_freeze_count(), line,
              [n for n in unused if n in sys.modules])
        import inspect
        print("__file__" in vars(sys.modules["inspect"]), inspect.isfunction(len))
    ''')
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / SAMPLE),
                          str(ROOT / "samples/buildids")], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["(1234, 5, 6) 0 threads.c:14 []", "True False"]
