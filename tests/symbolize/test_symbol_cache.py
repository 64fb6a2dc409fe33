"""The on-disk cache of symbol tables (by build-id, --symbol-cache): the second
run prints exactly what the first printed, a damaged or foreign cache entry is
ignored, a damaged binary never leaves a partial table behind, and
--no-symbol-cache writes nothing."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
DATA = SAMPLES / "cpp_inline.fp.data"


def script(*args, cache_env=None):
    env = dict(os.environ)
    if cache_env is not None:
        env["PERFDATA_CACHE_DIR"] = str(cache_env)
    run = subprocess.run([sys.executable, "-c", "import sys, cli; sys.exit(cli.main())",
                          "script", str(DATA), "--buildid-dir", str(SAMPLES / "buildids"),
                          "--debug-dir", str(SAMPLES / "buildids")] + list(args),
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


def cached_tables(root):
    return sorted((Path(root) / "symtab").rglob("*.table"))


def test_second_run_from_the_cache_prints_the_same(tmp_path):
    cache = tmp_path / "cache"
    first = script("--symbol-cache", str(cache))
    tables = cached_tables(cache)
    assert tables, "the first run kept no symbol table"
    stamps = {p: p.stat().st_mtime_ns for p in tables}
    second = script("--symbol-cache", str(cache))
    assert second == first
    # read, not rebuilt
    assert {p: p.stat().st_mtime_ns for p in cached_tables(cache)} == stamps
    assert "main" in first


def test_damaged_cache_entries_are_ignored(tmp_path):
    cache = tmp_path / "cache"
    good = script("--symbol-cache", str(cache))
    for i, path in enumerate(cached_tables(cache)):
        path.write_text(['{"format": 1, "symbols": [["x", -5, 1, "symtab"]]}',
                         "not json", '{"format": 999, "symbols": []}'][i % 3])
    assert script("--symbol-cache", str(cache)) == good


def test_no_symbol_cache_writes_nothing(tmp_path):
    cache = tmp_path / "cache"
    out = script("--no-symbol-cache", cache_env=cache)
    assert not cache.exists() or not cached_tables(cache)
    assert out == script(cache_env=tmp_path / "other")
    assert cached_tables(tmp_path / "other"), "$PERFDATA_CACHE_DIR is the default cache"


def test_damaged_binary_leaves_no_table(tmp_path):
    """A binary whose .symtab runs past its end (a damaged copy) still gives
    a table, from .dynsym: that partial table must not be kept for the good
    copy of the same build-id."""
    import struct
    from symbolize.elffile import Binary
    src = SAMPLES / "bin" / "threads"
    good = Binary(str(src))
    symtab = good.get_section(".symtab")
    e_shoff = struct.unpack_from("<Q", src.read_bytes(), 0x28)[0]
    data = bytearray(src.read_bytes())
    struct.pack_into("<Q", data, e_shoff + 64 * symtab.index + 32, 4 * len(data))
    bad = tmp_path / "threads"
    bad.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    # (no build-id cache: perf's ~/.debug may hold an intact copy)
    locator = lambda: DebugInfoLocator(buildid_dir=str(tmp_path / "none"))  # noqa: E731
    sym = Symbolizer(locator(), SymbolizerOptions(inline=False, cache_dir=str(cache)))
    table = sym.symbol_table(str(bad), good.build_id)
    assert table is not None and len(table) > 0, "the damaged copy should give .dynsym"
    assert len(table) < len(Symbolizer(locator(), SymbolizerOptions(inline=False))
                             .symbol_table(str(src), good.build_id))
    assert not cached_tables(cache)
    # the intact file is cached
    shutil.copy(src, bad)
    sym = Symbolizer(locator(), SymbolizerOptions(inline=False, cache_dir=str(cache)))
    assert len(sym.symbol_table(str(bad), good.build_id)) > len(table)
    assert cached_tables(cache)


def test_tables_of_other_code_are_not_used(tmp_path, monkeypatch):
    """The format tag digests the code that builds tables: a table cached by
    another version of perfdata is rebuilt, not trusted."""
    from symbolize.symbols import symtab
    from symbolize.elffile import Binary
    table = symtab.build_symbol_table(Binary(str(SAMPLES / "bin" / "threads")), None, None)
    path = str(tmp_path / "t.table")
    assert symtab.save_table(table, path)
    assert symtab.load_table(path) is not None
    monkeypatch.setattr(symtab, "_CACHE_FORMAT", None)
    monkeypatch.setattr(symtab, "_TABLE_MAKERS", symtab._TABLE_MAKERS + ("unwind.py",))
    assert symtab.cache_format() != ""
    assert symtab.load_table(path) is None


def _dwarf_script(cache_dir):
    """perfdata script of a DWARF recording with inlined C++ frames, in-process."""
    import io
    import perfdata
    from perfdata.resolve.symbolized import SampleSymbolizer
    from perfdata.views.script_formatter import ScriptFormatter
    data = SAMPLES / "cpp_inline.dwarf.data"
    locator = DebugInfoLocator(debug_dirs=[str(SAMPLES / "buildids")],
                               buildid_dir=str(SAMPLES / "buildids"))
    pf = perfdata.open(str(data))
    samples = SampleSymbolizer(pf, Symbolizer(locator, SymbolizerOptions(
        inline=False, cache_dir=str(cache_dir) if cache_dir else None)))
    fmt = ScriptFormatter(pf)
    out = io.StringIO()
    for s in samples:
        out.write(fmt.format(s))
    return out.getvalue()


def test_inline_names_come_from_the_cache_the_second_time(tmp_path, monkeypatch):
    """DWARF inline names learnt in one run are kept by build-id: the next
    run prints the same text without decoding a DWARF unit."""
    from symbolize.symbols.lines import LineInfo
    first = _dwarf_script(tmp_path)
    assert "(inlined)" in first
    assert list((tmp_path / "inline").rglob("*.json"))

    def no_units(self, offset):
        raise AssertionError("a DWARF unit was decoded although the names were cached")
    monkeypatch.setattr(LineInfo, "_load_cu", no_units)
    assert _dwarf_script(tmp_path) == first


def test_inline_names_cache_damaged_or_stale(tmp_path, monkeypatch):
    """A damaged file, or one written by other code (another format tag), is
    not trusted: the names are decoded again, and equal."""
    from symbolize.symbols import lines
    reference = _dwarf_script(None)
    assert _dwarf_script(tmp_path) == reference
    caches = list((tmp_path / "inline").rglob("*.json"))
    for path in caches:
        path.write_text('{"format": "x", "names": [[1, ["wrong"]]]}')
    assert _dwarf_script(tmp_path) == reference
    monkeypatch.setattr(lines, "_NAMES_FORMAT", "perfdata-inline-names-other")
    for path in caches:
        path.write_text('{"format": "perfdata-inline-names-other", "names": [[1, 5]]}')
    assert _dwarf_script(tmp_path) == reference


def test_cache_options_reach_kallsyms(tmp_path):
    """--no-symbol-cache and --symbol-cache DIR govern the kallsyms table's
    cache too, not only the symbol tables ($PERFDATA_CACHE_DIR stays empty)."""
    env_cache = tmp_path / "env"
    env_cache.mkdir()
    data = SAMPLES / "two_events.data"          # kernel frames: its kallsyms is parsed
    base = [sys.executable, "-c", "import sys, cli; sys.exit(cli.main())", "script", str(data),
            "--debug-dir", str(SAMPLES / "buildids")]
    env = dict(os.environ, PERFDATA_CACHE_DIR=str(env_cache))
    off = subprocess.run(base + ["--no-symbol-cache"], capture_output=True, text=True,
                         cwd=REPO, env=env, timeout=120)
    assert off.returncode == 0, off.stderr
    assert "[kernel.kallsyms]" in off.stdout and list(env_cache.iterdir()) == []
    chosen = tmp_path / "chosen"
    on = subprocess.run(base + ["--symbol-cache", str(chosen)], capture_output=True, text=True,
                        cwd=REPO, env=env, timeout=120)
    assert on.returncode == 0 and on.stdout == off.stdout
    assert list(chosen.glob("kallsyms-*.bin")) and list(env_cache.iterdir()) == []
