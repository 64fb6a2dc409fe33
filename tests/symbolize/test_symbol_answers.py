"""The answers kept by symbol table and naming mode (symbolize/symbols/answers.py):
a second run that reads them prints what the first printed, and what a
damaged, foreign or stale file says is never used."""
import marshal
from pathlib import Path

import pytest

from conftest import SAMPLES, SAMPLE_SYMBOL_ARGS, run_cli
from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions
from symbolize.symbols import answers as answers_mod
from symbolize.symbols.naming import AddressNamer

DATA = [SAMPLES / "cpp_inline.fp.data", SAMPLES / "plt_loop.fp.data",
        SAMPLES / "exit_atexit.fp.data", SAMPLES / "stripped.fp.data"]


def script(data, cache, *opts):
    rc, out, err = run_cli(["script", str(data), "-j", "1", "--symbol-cache", str(cache)]
                           + SAMPLE_SYMBOL_ARGS + list(opts))
    assert rc == 0, err
    return out


def answer_files(cache):
    return sorted(Path(cache).rglob("*.answers"))


@pytest.mark.parametrize("data", DATA, ids=lambda p: p.name)
def test_second_run_reads_the_answers_and_prints_the_same(data, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = script(data, cache)
    files = answer_files(cache)
    assert files, "the first run kept no answers"
    kept = sum(len(answers_mod._load(_cache(cache), str(f))) for f in files)
    assert kept > 0
    # The second run works out no address the first run met.
    anew = []
    real = AddressNamer.frames_anew
    monkeypatch.setattr(AddressNamer, "frames_anew",
                        lambda self, *a: anew.append(a) or real(self, *a))
    assert script(data, cache) == first
    assert anew == []


def _cache(path):
    from symbolize.cachedir import CacheDir
    return CacheDir(str(path))


@pytest.mark.parametrize("damage", ["truncated", "garbage", "wrong-types", "foreign-format"])
def test_damaged_answers_are_not_used(damage, tmp_path):
    data = SAMPLES / "cpp_inline.fp.data"
    cache = tmp_path / "cache"
    good = script(data, cache)
    for path in answer_files(cache):
        raw = path.read_bytes()
        tag, known = marshal.loads(raw)
        if damage == "truncated":
            path.write_bytes(raw[:len(raw) // 2])
        elif damage == "garbage":
            path.write_bytes(b"\x00\xff" * 100)
        elif damage == "wrong-types":
            # a name that is no string, an offset that is no integer
            path.write_bytes(marshal.dumps([tag, {k: (1, "x", None) for k in known}]))
        else:
            path.write_bytes(marshal.dumps(["answers-0", {k: ("wrong", 0, "symtab")
                                                          for k in known}]))
    assert script(data, cache) == good


def test_answers_by_naming_mode(tmp_path):
    """--no-demangle and --signatures name C++ functions otherwise: each
    mode keeps its own answers, so a run in one mode never prints another's."""
    data = SAMPLES / "cpp_inline.fp.data"
    cache = tmp_path / "cache"
    fresh = tmp_path / "fresh"
    for opts in ([], ["--no-demangle"], ["--signatures"], []):
        assert script(data, cache, *opts) == script(data, fresh / "-".join(opts or ["x"]),
                                                    *opts)
    assert {f.name.rsplit("-", 1)[1] for f in answer_files(cache)} >= \
        {"p.answers", "r.answers", "s.answers"}


def test_no_answers_kept_for_lookups_that_read_dwarf(tmp_path):
    """With --inline (or srcline) an address's frames come from DWARF too:
    those are the line index's to keep, not plain answers."""
    data = SAMPLES / "cpp_inline.fp.data"
    cache = tmp_path / "cache"
    script(data, cache, "--inline")
    script(data, cache, "-F", "ip,sym,srcline")
    assert answer_files(cache) == []


def test_answers_made_before_a_debug_file_was_installed_are_not_used(tmp_path):
    """The stripped binary names nothing without its debug file: those
    answers are kept under the table's identity (which files went in), so a
    run with the debug file names the functions."""
    data = SAMPLES / "stripped.fp.data"
    cache = tmp_path / "cache"
    rc, before, err = run_cli(["script", str(data), "-j", "1", "--symbol-cache", str(cache),
                               "--debug-dir", str(SAMPLES / "buildids")])
    assert rc == 0, err
    after = script(data, cache, "--debug-dir", str(SAMPLES / "debug"))
    fresh = script(data, tmp_path / "fresh", "--debug-dir", str(SAMPLES / "debug"))
    assert after == fresh and after != before


def test_answers_of_other_code_are_not_used(tmp_path, monkeypatch):
    data = SAMPLES / "cpp_inline.fp.data"
    cache = tmp_path / "cache"
    script(data, cache)
    path = str(answer_files(cache)[0])
    assert answers_mod._load(_cache(cache), path)
    monkeypatch.setattr(answers_mod, "_FORMAT", None)
    monkeypatch.setattr(answers_mod, "_ANSWER_MAKERS",
                        answers_mod._ANSWER_MAKERS + ("unwind.py",))
    assert answers_mod._load(_cache(cache), path) == {}


def test_no_symbol_cache_keeps_no_answers(tmp_path):
    sym = Symbolizer(DebugInfoLocator(debug_dirs=[str(SAMPLES / "buildids")]),
                     SymbolizerOptions(inline=False))
    sym.lookup(str(SAMPLES / "bin" / "threads"), None, file_offset=0x1200)
    sym.flush()
    assert all(d.answers is None for d in sym._dsos.values())


def test_answers_of_a_file_that_showed_a_fault_are_not_kept(tmp_path):
    """A binary that showed a fault while it was read (here: said to) gave
    its answers from a damaged copy: they are not written, as its table
    would not be."""
    from symbolize.cachedir import CacheDir
    prog = str(SAMPLES / "bin" / "threads")
    sym = Symbolizer(DebugInfoLocator(),
                     SymbolizerOptions(inline=False, cache_dir=CacheDir(str(tmp_path))))
    sym.lookup(prog, None, file_offset=0x1200)
    dso = next(d for d in sym._dsos.values() if d.answers is not None)
    dso.choice.binary.warn("a read past the end of the file")
    sym.flush()
    assert answer_files(tmp_path) == []
    sym2 = Symbolizer(DebugInfoLocator(),
                      SymbolizerOptions(inline=False, cache_dir=CacheDir(str(tmp_path))))
    sym2.lookup(prog, None, file_offset=0x1200)
    sym2.flush()
    assert answer_files(tmp_path)
