"""kallsyms and perf-PID.map parsing, with perf 6.1's conventions
(tools/perf/util/symbol.c: symbols__fixup_end with is_kallsyms,
choose_best_symbol, the T/W/D/B type filter; dso__load_perf_map)."""
import os

import pytest

from symbolize import KernelSymbol, KernelSymbols, PerfMap, is_perfmap_path

TEXT = """\
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000010 t local_a
ffffffff81000010 W weak_a
ffffffff81000010 T global_a
ffffffff81000040 T __x64_sys_read
ffffffff81000040 T SyS_read
ffffffff81000080 r some_rodata
ffffffff81000090 D some_data
ffffffff810000a0 T last_kernel_fn
ffffffffc0001000 t mod_fn_a\t[mod_one]
ffffffffc0001030 t mod_fn_b\t[mod_one]
ffffffffc0005000 t other_mod_fn\t[mod_two]
this is not a kallsyms line
ffffffffzz000000 T bad_hex
"""


def test_types_sizes_and_aliases():
    k = KernelSymbols.parse(TEXT)
    names = [s.name for s in k]
    assert "some_rodata" not in names           # 'r' is not kept by perf
    assert "some_data" in names                 # 'D' is
    # Same address: sizes are fixed up first (only the last alias of an
    # address reaches the next symbol), then a non-zero size wins; among
    # equal sizes global beats weak and local.
    assert k.lookup(0xffffffff81000000).name == "_text"
    assert k.lookup(0xffffffff81000010).name == "global_a"
    assert k.lookup(0xffffffff81000040).name == "SyS_read"
    s = k.lookup(0xffffffff81000015)
    assert (s.start, s.size) == (0xffffffff81000010, 0x30)     # runs to the next symbol
    # The kernel's last symbol ends at its page end, not at the module.
    last = k.lookup(0xffffffff810000a0)
    assert last.name == "last_kernel_fn" and last.end == 0xffffffff81002000
    assert k.lookup(0xffffffff81800000) is None
    m = k.lookup(0xffffffffc0001010)
    assert (m.name, m.module, m.size) == ("mod_fn_a", "mod_one", 0x30)
    assert k.lookup(0xffffffffc0005004).module == "mod_two"
    assert k.warnings and "malformed" in k.warnings[0]


def test_choose_best_symbol_rules():
    """kallsyms symbols have no size: the last alias of an address (perf sorts
    stably by address) gets the room up to the next symbol and so wins."""
    k = KernelSymbols.parse("ffffffff81000000 T _text\nffffffff81000000 T _stext\n"
                            "ffffffff81000100 T next\n")
    assert k.lookup(0xffffffff81000000).name == "_stext"


def test_kptr_restrict_all_zero():
    k = KernelSymbols.parse("0000000000000000 T a\n0000000000000000 T b\n")
    assert len(k) == 0 and k.warnings and "kptr_restrict" in k.warnings[0]


def test_proc_kallsyms_every_text_symbol_resolves():
    try:
        text = open("/proc/kallsyms").read()
    except OSError:
        pytest.skip("no /proc/kallsyms")
    rows = [l.split() for l in text.splitlines()]
    rows = [r for r in rows if len(r) >= 3 and r[1] in "Tt"]
    if not rows or all(int(r[0], 16) == 0 for r in rows[:100]):
        pytest.skip("kallsyms addresses hidden")
    k = KernelSymbols.from_file("/proc/kallsyms")
    for r in rows[::50]:
        a = int(r[0], 16)
        s = k.lookup(a)
        assert s is not None and s.start == a


def test_from_file_refuses_non_regular(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    k = KernelSymbols.from_file(str(tmp_path / "fifo"))
    assert len(k) == 0 and k.warnings
    assert len(KernelSymbols.from_file(str(tmp_path / "absent"))) == 0
    assert len(PerfMap.from_file(str(tmp_path / "fifo"))) == 0


def test_perfmap_formats_and_bad_lines(tmp_path):
    text = ("7f0000001000 40 plain_name\n"
            "0x7f0000001040 0x20 LazyCompile:*foo /app/x.js:10\n"
            "7F0000002000 10 UPPER\n"
            "\n"
            "garbage\n"
            "7f0000003000 zz badsize\n"
            "7f0000004000 0 zero_size\n"
            "7f0000001000 8 replaced_later\n")
    p = tmp_path / "perf-1.map"
    p.write_text(text)
    m = PerfMap.from_file(str(p))
    assert m.lookup(0x7f0000001004).name == "replaced_later"
    # past the newer, shorter code only the older line covers the address
    assert m.lookup(0x7f0000001010).name == "plain_name"
    assert m.lookup(0x7f0000001010).start == 0x7f0000001000
    assert m.lookup(0x7f0000001050).name == "LazyCompile:*foo /app/x.js:10"
    assert m.lookup(0x7f0000002008).name == "UPPER"
    assert m.lookup(0x7f0000001060) is None and m.lookup(0x7f0000004000) is None
    assert m.warnings and "3 malformed" in m.warnings[0]
    assert is_perfmap_path("/tmp/perf-123.map") and not is_perfmap_path("/tmp/perf-x.map")


def test_perfmap_newest_line_covering_wins():
    """V8 (node --perf-basic-prof) puts new code where freed code was: the
    map then holds `7f00 c58 churn` and later `7f00 160 sort-callback`.  An
    address is the newest line's that covers it, whichever line starts
    nearer; past the newer code, the older line's (perf names every address
    of 7f00..7f00+c58 churn: its tree finds the first line inserted)."""
    m = PerfMap.parse("1000 c58 churn\n"
                      "1c40 160 other\n"
                      "1000 160 cmp\n"
                      "1000 160 cmp_again\n"
                      "1100 20 inner\n"
                      "2000 100 old\n"
                      "2080 100 straddles\n")
    assert m.lookup(0x107f).name == "cmp_again" and m.lookup(0x107f).start == 0x1000
    assert m.lookup(0x1105).name == "inner" and m.lookup(0x1125).name == "cmp_again"
    assert m.lookup(0x1160).name == "churn" and m.lookup(0x1160).start == 0x1000
    assert m.lookup(0x1c41).name == "other" and m.lookup(0x1c58).name == "other"
    assert m.lookup(0x1da0) is None and m.lookup(0xfff) is None
    assert m.lookup(0x2079).name == "old" and m.lookup(0x2080).name == "straddles"
    assert m.lookup(0x217f).name == "straddles" and m.lookup(0x2180) is None
    assert len(m) == 7 and [s.start for s in m] == sorted(s.start for s in m)


def test_parsed_tables_are_cached_and_equal(tmp_path, monkeypatch):
    """A kallsyms file read a second time comes from the cache (without
    reading the file: its identity is the key) and gives the same symbols,
    modules included; a changed file is parsed again."""
    import os
    from symbolize.symbols import kallsyms
    monkeypatch.setenv("PERFDATA_CACHE_DIR", str(tmp_path / "cache"))
    text = "".join("%016x %s fn_%d%s\n" % (0xffffffff81000000 + 0x40 * i, "tT"[i % 2], i,
                                           "\t[mod_%d]" % (i % 3) if i > 150 else "")
                   for i in range(200))
    path = tmp_path / "kallsyms"
    path.write_text(text)
    first = list(KernelSymbols.from_file(str(path)))
    assert len(first) == 200 and first[180].module == "mod_0" and first[3].module is None
    assert list((tmp_path / "cache").glob("kallsyms-*.bin"))
    reads = []
    real = kallsyms._read_kallsyms
    monkeypatch.setattr(kallsyms, "_read_kallsyms", lambda p: reads.append(p) or real(p))
    again = KernelSymbols.from_file(str(path))
    assert list(again) == first and reads == []
    assert again.lookup(0xffffffff81000000 + 0x40 * 7 + 3).name == "fn_7"
    path.write_text(text.replace("fn_7\n", "fn_seven\n"))
    os.utime(path, ns=(1, 1))
    changed = KernelSymbols.from_file(str(path))
    # (parsed again: mapped, not read, as a file known by its identity is)
    assert changed.lookup(0xffffffff81000000 + 0x40 * 7 + 3).name == "fn_seven"


def test_damaged_cache_file_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFDATA_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kallsyms"
    path.write_text("ffffffff81000000 T a\nffffffff81000100 T b\n")
    good = list(KernelSymbols.from_file(str(path)))
    for cached in (tmp_path / "cache").glob("kallsyms-*.bin"):
        cached.write_bytes(cached.read_bytes()[:20])
    assert list(KernelSymbols.from_file(str(path))) == good


def test_cached_table_is_mapped_and_equal_to_the_parsed_one(tmp_path, monkeypatch):
    """The cached table (mapped from its file) gives what parsing gives:
    every symbol, non-ASCII names and modules (cut by bytes, not characters)
    and lookups, with the file not read again."""
    from symbolize.symbols import kallsyms
    monkeypatch.setenv("PERFDATA_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kallsyms"
    good = "".join(line for line in TEXT.splitlines(True) if "not" not in line and "zz" not in line)
    path.write_text(good.replace("mod_fn_a", "mod_fn_\u00e9t\u00e9").replace(
        "[mod_two]", "[mod_\u00fc\u00f1]").replace("last_kernel_fn", "last_\u2603_fn"),
        encoding="utf-8")
    parsed = KernelSymbols.parse(path.read_text(encoding="utf-8"))
    first = KernelSymbols.from_file(str(path))
    assert list(first) == list(parsed)
    monkeypatch.setattr(kallsyms, "_read_kallsyms", lambda p: pytest.fail("read again"))
    cached = KernelSymbols.from_file(str(path))
    assert list(cached) == list(parsed) and len(cached) == len(parsed)
    assert cached.lookup(0xffffffffc0001010).name == "mod_fn_\u00e9t\u00e9"
    assert cached.lookup(0xffffffffc0005004).module == "mod_\u00fc\u00f1"
    assert cached.lookup(0xffffffff810000a4).name == "last_\u2603_fn"
    assert cached.lookup(0xffffffff80000000) is None


def test_cache_file_of_another_kallsyms_is_not_used(tmp_path, monkeypatch):
    """The key in a cache file's name is short: the file names the kallsyms
    it was made from, and one made from another (a collision) is not used."""
    from symbolize.symbols import kallsyms
    monkeypatch.setenv("PERFDATA_CACHE_DIR", str(tmp_path / "cache"))
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_text("ffffffff81000000 T one_a\nffffffff81000100 T one_b\n")
    two.write_text("ffffffff81000000 T two_a\nffffffff81000100 T two_b\n")
    KernelSymbols.from_file(str(one))
    (made,) = (tmp_path / "cache").glob("kallsyms-*.bin")
    made.rename(tmp_path / "cache" / kallsyms._cache_file(kallsyms._file_identity(str(two))))
    assert [s.name for s in KernelSymbols.from_file(str(two))] == ["two_a", "two_b"]


@pytest.mark.parametrize("in_order", [False, True], ids=["shuffled", "in-address-order"])
def test_parse_by_columns_keeps_perfs_fixup_rules(in_order):
    """The parse sorts, sizes and picks among aliases by columns; what it
    gives is what fixup_entries (perf's symbols__fixup_end and
    choose_best_symbol, shared with ELF tables) gives on the same symbols:
    unsorted lines, aliases of every binding, kernel/module boundaries, a
    name with '[' in it, a module of another form, malformed lines; and
    lines already in address order (as a kernel's kallsyms mostly is), which
    the parse leaves unsorted."""
    import random
    from symbolize.symbols import kallsyms
    from symtab_reference import fixup_entries
    rng = random.Random(12)
    lines = []
    for i in range(3000):
        in_module = i >= 2400
        base = (0xffffffffc0000000 if in_module else 0xffffffff81000000) + 0x10 * rng.randrange(900)
        kind = rng.choice("TtWwDdBbRr")
        name = rng.choice(["_" * rng.randrange(3) + "fn_%d" % i, "SyS_%d" % (i % 7),
                           "compat_SyS_x", "a[%d]" % i, "fn_%d" % (i % 50)])
        line = "%016x %s %s" % (base, kind, name)
        if in_module:
            line += rng.choice(["\t[mod_%d]" % (i % 4), "\t[mod_%d]" % (i % 4), "\tnot_a_module"])
        lines.append(line)
    if in_order:
        lines.sort(key=lambda line: int(line[:16], 16))     # (stable: aliases keep their order)
    lines[17:17] = ["", "garbage", "zz T bad_hex", "ffffffff81000000 TT two_letters"]
    text = "\n".join(lines) + "\n"
    starts, kinds, names, bad, _ = kallsyms._columns(text)
    assert bad == 3
    ents = [[s, s, kallsyms._BINDINGS[k], n, "kallsyms"] for s, k, n in zip(starts, kinds, names)]
    want = []
    for start, end, _, name, _ in fixup_entries(ents, is_kallsyms=True):
        name, _, module = name.partition("\t")
        want.append(KernelSymbol(name, start, end - start, module[1:-1] or None))
    got = KernelSymbols.parse(text)
    assert list(got) == want and len(want) > 1000
    assert got.warnings == ["kallsyms: 3 malformed lines skipped"]
    assert {s.module for s in want} == {None, "mod_0", "mod_1", "mod_2", "mod_3"}


def test_kernel_names_demangled_only_when_asked():
    """perf 6.1 demangles kernel symbols (Rust's, in a kernel built with it)
    only with --demangle-kernel (symbol_conf.demangle_kernel); user names
    by default."""
    from symbolize import Symbolizer, SymbolizerOptions
    mangled = "_ZN6kernel4sync4lock17h0123456789abcdefE"
    table = KernelSymbols.parse("ffffffff81000000 T %s\nffffffff81001000 T next_fn\n" % mangled)
    plain = Symbolizer(options=SymbolizerOptions(kallsyms=table))
    asked = Symbolizer(options=SymbolizerOptions(kallsyms=table, demangle_kernel=True))
    got = plain.lookup("[kernel.kallsyms]", None, 0xffffffff81000010)[0]
    assert (got.name, got.offset) == (mangled, 0x10)
    named = asked.lookup("[kernel.kallsyms]", None, 0xffffffff81000010)[0].name
    assert named == asked.demangle_name(mangled) and named != mangled and "lock" in named


def test_bounds_are_every_symbols_start_and_size(tmp_path, monkeypatch):
    """bounds() (the columns the compiled core searches) holds each symbol's
    start and size, in order, for every form of a table: parsed, mapped from
    the cache (the text layout: its sizes column), the names' layout, and
    symbols given."""
    monkeypatch.setenv("PERFDATA_CACHE_DIR", str(tmp_path / "cache"))
    good = "".join(line for line in TEXT.splitlines(True) if "not" not in line and "zz" not in line)
    path = tmp_path / "kallsyms"
    path.write_text(good)
    tables = [KernelSymbols.parse(good), KernelSymbols.from_file(str(path)),
              KernelSymbols.from_file(str(path)), KernelSymbols.parse(good + "ffff\u00e9 T x\n"),
              KernelSymbols([KernelSymbol("b", 0x2000, 0x10, None),
                             KernelSymbol("a", 0x1000, 0x30, "m")]), KernelSymbols()]
    if os.access("/proc/kallsyms", os.R_OK):
        tables.append(KernelSymbols.from_file("/proc/kallsyms"))
        tables.append(KernelSymbols.from_file("/proc/kallsyms"))
    for table in tables:
        starts, sizes = table.bounds()
        assert [(s.start, s.size) for s in table] == list(zip(starts, sizes))
