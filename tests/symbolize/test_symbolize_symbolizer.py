"""Symbolizer and DebugInfoLocator: finding files in every layout, build-id
and CRC checks, statuses, return addresses, caching."""
import os
import re
import shutil

import pytest

from symbolize import Binary, DebugInfoLocator, KernelSymbols, Symbolizer, SymbolizerOptions
from test_symbolize_util import compile_c, need, nm_defined, readelf_build_id, readelf_symbols, run

SRC = r"""
#include <stdio.h>
#include <stdlib.h>
static __attribute__((noinline)) int hidden_helper(int x) { return x * 7 + 1; }
__attribute__((noinline, noreturn)) void die_now(int code) { printf("bye\n"); exit(code); }
__attribute__((noinline)) int after_die(int x) { return x + 1; }
int main(int argc, char **argv) {
    if (argc > 5) die_now(hidden_helper(argc));
    return after_die(hidden_helper(argc));
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    need("objcopy", "strip")
    d = tmp_path_factory.mktemp("sym")
    full = compile_c(d, "prog", SRC, "-O2", "-g")
    other = compile_c(d, "other", SRC.replace("x * 7", "x * 9"), "-O2", "-g")
    nobid = compile_c(d, "nobid", SRC, "-O2", "-g", "-Wl,--build-id=none")
    return {"dir": d, "full": full, "other": other, "nobid": nobid}


def strip_to(src, dst):
    run("strip", "--strip-all", "-o", dst, src)
    return dst


def keep_debug(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    run("objcopy", "--only-keep-debug", src, dst)
    return dst


def truth(path):
    return {n: a for a, t, n in nm_defined(path) if t in "Tt"}


def only(*, debug_dirs=(), symfs=None, buildid_dir=None):
    """A locator that looks nowhere on this machine but where told."""
    return DebugInfoLocator(debug_dirs=debug_dirs, symfs=symfs, buildid_dir=buildid_dir,
                            system_debug=None)


def test_debug_dir_build_id_layout(built, tmp_path):
    bid = readelf_build_id(built["full"])
    stripped = strip_to(built["full"], str(tmp_path / "prog"))
    dd = tmp_path / "dd"
    keep_debug(built["full"], str(dd / ".build-id" / bid[:2] / (bid[2:] + ".debug")))
    s = Symbolizer(only(debug_dirs=[str(dd)]), SymbolizerOptions(inline=False))
    choice = s.binary_for(stripped, bid)
    assert choice.status == "found" and choice.binary.path == stripped
    assert choice.debug is not None and choice.debug.path.endswith(bid[2:] + ".debug")
    addr = truth(built["full"])["hidden_helper"]
    f = s.lookup(stripped, bid, addr + 2)
    assert (f[-1].name, f[-1].offset, f[-1].source) == ("hidden_helper", 2, "debuginfo")
    assert f[-1].build_id == bid and f[-1].dso_path == stripped


def test_debug_dir_path_layout_and_srcline(built, tmp_path):
    stripped = strip_to(built["full"], str(tmp_path / "prog"))
    dd = tmp_path / "dd"
    keep_debug(built["full"], str(dd) + stripped + ".debug")
    s = Symbolizer(only(debug_dirs=[str(dd)]))
    addr = truth(built["full"])["hidden_helper"]
    f = s.lookup(stripped, None, addr)
    assert f[-1].name == "hidden_helper" and f[-1].source == "debuginfo"
    line = run("addr2line", "-e", built["full"], hex(addr)).strip()
    assert f[-1].srcline == re.sub(r" \(discriminator \d+\)", "", line)


def test_buildid_mismatch_is_never_used_and_warned_once(built, tmp_path):
    bid = readelf_build_id(built["full"])
    stripped = strip_to(built["full"], str(tmp_path / "prog"))
    dd = tmp_path / "dd"
    wrong = keep_debug(built["other"], str(dd / ".build-id" / bid[:2] / (bid[2:] + ".debug")))
    s = Symbolizer(only(debug_dirs=[str(dd)]), SymbolizerOptions(inline=False))
    addr = truth(built["full"])["hidden_helper"]
    for _ in range(3):
        f = s.lookup(stripped, bid, addr)
        s.lookup(stripped, bid, addr + 1)
    assert f[-1].name != "hidden_helper"       # .dynsym has no static functions
    assert s.binary_for(stripped, bid).debug is None
    assert sum(wrong in w for w in s.warnings) == 1
    # The wanted build-id is not the one of the file at the path at all.
    other_bid = readelf_build_id(built["other"])
    s2 = Symbolizer(only(), SymbolizerOptions(inline=False))
    c = s2.binary_for(built["full"], other_bid)
    assert c.status == "buildid-mismatch" and c.binary is None
    assert s2.lookup(built["full"], other_bid, addr)[0].name is None


def test_debuglink_crc_checked(built, tmp_path):
    """No build-id: the .gnu_debuglink CRC decides, in dir/ and dir/.debug/."""
    src = built["nobid"]
    assert readelf_build_id(src) is None
    d = tmp_path / "app"
    d.mkdir()
    dbg = keep_debug(src, str(d / ".debug" / "nobid.debug"))
    stripped = str(d / "nobid")
    # objcopy computes the CRC of the file named; then it is moved into .debug/
    tmpdbg = str(tmp_path / "nobid.debug")
    shutil.copy(dbg, tmpdbg)
    run("objcopy", "--strip-all", f"--add-gnu-debuglink={tmpdbg}", src, stripped)
    s = Symbolizer(only(), SymbolizerOptions(inline=False))
    c = s.binary_for(stripped)
    assert c.debug is not None and c.debug.path == dbg
    addr = truth(src)["hidden_helper"]
    assert s.lookup(stripped, None, addr)[-1].name == "hidden_helper"
    # Corrupt the debug file: the CRC no longer matches, it is not used.
    with open(dbg, "r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))
    s = Symbolizer(only(), SymbolizerOptions(inline=False))
    assert s.binary_for(stripped).debug is None
    assert any("CRC" in w for w in s.warnings)


def test_debuglink_name_with_slash_rejected(tmp_path):
    loc = only()
    assert loc.candidates_for_debug("/usr/bin/x", None, ("../../etc/passwd", 0)) == []
    assert loc.candidates_for_debug("/usr/bin/x", None, ("a/b.debug", 0)) == []
    assert len(loc.warnings) == 2
    c = loc.candidates_for_debug("/usr/bin/x", None, ("x.debug", 5))
    assert [p.path for p in c] == ["/usr/bin/x.debug", "/usr/bin/.debug/x.debug"]
    assert all(p.crc == 5 for p in c)


def test_pseudo_mappings_that_are_no_file_say_nothing(tmp_path):
    """A return address in the heap or the stack (a DWARF unwind or a
    frame-pointer walk that read a pointer there) names nothing, as in perf,
    and its lookup is no missing binary to warn of; a missing file still is."""
    s = Symbolizer(DebugInfoLocator(), SymbolizerOptions(cache_dir=None))
    for path in ("[heap]", "[stack]", "[vvar]", "[anon]", "[uprobes]", "[vsyscall]"):
        assert [f.name for f in s.lookup(path, None, None, file_offset=0x95f)] == [None]
    assert s.warnings == []
    missing = str(tmp_path / "gone.so")
    s.lookup(missing, None, None, file_offset=0x10)
    assert s.warnings == ["%s: no candidate file exists" % missing]


def test_invalid_build_ids_never_become_paths():
    loc = DebugInfoLocator(debug_dirs=["/dd"], buildid_dir="/cache")
    for bad in ["../../etc/passwd", "xyz", "abc", "0x", "AB" * 40, "ab/cd"]:
        for c in loc.candidates_for_binary("/usr/bin/x", bad) + loc.candidates_for_debug("/usr/bin/x", bad):
            assert ".build-id" not in c.path and "passwd" not in c.path
    s = Symbolizer(loc)
    assert s.lookup("/nonexistent/x", "../../etc", 0x10)[0].name is None


def test_perf_buildid_cache_layout(built, tmp_path):
    """~/.debug/.build-id/xx/rest -> ../../<path>/<bid>/ holding `elf`, as
    `perf buildid-cache -a` makes it; the binary is gone from its path."""
    bid = readelf_build_id(built["full"])
    cache = tmp_path / "dotdebug"
    orig = "/opt/gone/prog"
    entry = cache / orig.lstrip("/") / bid
    entry.mkdir(parents=True)
    shutil.copy(built["full"], entry / "elf")
    link = cache / ".build-id" / bid[:2] / bid[2:]
    link.parent.mkdir(parents=True)
    os.symlink(os.path.relpath(entry, link.parent), link)
    s = Symbolizer(only(buildid_dir=str(cache)), SymbolizerOptions(inline=False))
    c = s.binary_for(orig, bid)
    assert c.status == "found" and os.path.realpath(c.binary.path) == os.path.realpath(entry / "elf")
    addr = truth(built["full"])["after_die"]
    assert s.lookup(orig, bid, addr)[-1].name == "after_die"


def test_perf_buildid_cache_with_real_perf(built, tmp_path):
    """The layout perf itself writes: `perf buildid-cache -a` into a HOME."""
    need("perf")
    import subprocess
    home = tmp_path / "home"
    home.mkdir()
    p = subprocess.run(["perf", "buildid-cache", "-a", built["full"]], env={**os.environ, "HOME": str(home)},
                       capture_output=True, text=True)
    if p.returncode != 0 or not (home / ".debug").exists():
        pytest.skip(f"perf buildid-cache failed: {p.stderr[:200]}")
    bid = readelf_build_id(built["full"])
    s = Symbolizer(only(buildid_dir=str(home / ".debug")), SymbolizerOptions(inline=False))
    cands = [c.path for c in s.locator.candidates_for_binary("/elsewhere/prog", bid) if os.path.isfile(c.path)]
    assert cands
    c = s.binary_for("/elsewhere/prog", bid)
    assert c.status == "found" and c.binary.build_id == bid


def test_symfs(built, tmp_path):
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    shutil.copy(built["full"], root / "usr" / "bin" / "prog")
    s = Symbolizer(only(symfs=str(root)), SymbolizerOptions(inline=False))
    addr = truth(built["full"])["main"]
    assert s.lookup("/usr/bin/prog", None, addr)[-1].name == "main"
    assert s.lookup("/usr/bin/../bin/prog", None, addr)[-1].name == "main"
    # '..' cannot climb out of the symfs root.
    assert s.binary_for("/../../" + built["full"].lstrip("/")).status == "missing"


def test_path_map(built, tmp_path):
    """--path-map: a binary recorded under OLD is read under NEW (longest OLD
    first, whole path components), never at the recorded path."""
    from symbolize.debuginfo.locate import map_path, parse_path_map
    new = tmp_path / "new" / "bin"
    new.mkdir(parents=True)
    shutil.copy(built["full"], new / "prog")
    addr = truth(built["full"])["main"]
    recorded = "/srv/app/bin/prog"
    s = Symbolizer(DebugInfoLocator(buildid_dir=None, system_debug=None,
                                    path_map=["/srv/app=%s" % (tmp_path / "new")]),
                   SymbolizerOptions(inline=False))
    assert s.lookup(recorded, None, addr)[-1].name == "main"
    assert s.binary_for(recorded).binary.path == str(new / "prog")
    # A path under OLD that NEW lacks is missing, though the recorded path
    # exists on this machine: it could be another file.
    here = built["full"]
    s2 = Symbolizer(DebugInfoLocator(buildid_dir=None, system_debug=None,
                                     path_map=[(os.path.dirname(here), str(tmp_path / "none"))]),
                    SymbolizerOptions(inline=False))
    assert s2.binary_for(here).status == "missing"
    # Longest prefix wins; a file can be mapped alone; components, not characters.
    pm = [parse_path_map("/srv=/a"), parse_path_map("/srv/app/=/b"),
          parse_path_map("/lib/libc.so.6=/c/libc-copy")]
    assert map_path("/srv/app/bin/prog", pm) == "/b/bin/prog"
    assert map_path("/srv/other", pm) == "/a/other"
    assert map_path("/srv/application/x", pm) == "/a/application/x"
    assert map_path("/lib/libc.so.6", pm) == "/c/libc-copy"
    assert map_path("/lib/libc.so.6.1", pm) is None and map_path("[vdso]", pm) is None
    for bad in ("noequals", "=/x", "/x=", "relative=/x"):
        with pytest.raises(ValueError):
            parse_path_map(bad)


def test_cli_refuses_a_malformed_path_map(tmp_path):
    from conftest import SAMPLES, run_cli
    rc, out, err = run_cli(["script", str(SAMPLES / "pipe.data"), "--path-map", "relative=/x"])
    assert rc == 2 and out == "" and "--path-map" in err and "Traceback" not in err


def test_statuses(built, tmp_path):
    s = Symbolizer(only(), SymbolizerOptions(inline=False))
    assert s.binary_for(str(tmp_path / "absent")).status == "missing"
    txt = tmp_path / "notelf"
    txt.write_text("not an ELF\n")
    assert s.binary_for(str(txt)).status == "not-elf"
    cut = tmp_path / "cut"
    cut.write_bytes(open(built["full"], "rb").read()[:40])
    assert s.binary_for(str(cut)).status == "not-elf"
    os.mkfifo(tmp_path / "fifo")
    assert s.binary_for(str(tmp_path / "fifo")).status == "not-elf"
    assert s.binary_for(str(tmp_path)).status == "not-elf"
    # A binary with no symbols at all.
    bare = str(tmp_path / "bare")
    run("objcopy", "--strip-all", "--remove-section=.dynsym", "--remove-section=.plt",
        "--remove-section=.plt.got", built["full"], bare, check=False)
    if os.path.exists(bare) and Binary(bare).ok:
        st = s.binary_for(bare).status
        assert st in ("no-symbols", "found")
    for w in s.warnings:
        assert isinstance(w, str)
    assert len(s.warnings) == len(set(s.warnings))


def test_return_address_after_noreturn_call(built):
    """`call exit` ends die_now: its return address is past the function's
    last byte (padding or the next function). Looked up as a return address
    it belongs to die_now, at the offset perf prints (from the real address)."""
    path = built["full"]
    dis = run("objdump", "-d", "--no-show-raw-insn", path)
    insns = [l for l in dis.split("<die_now>:")[1].splitlines() if re.match(r"\s+[0-9a-f]+:", l)]
    call = [i for i, l in enumerate(insns) if "call" in l and "exit" in l][0]
    ret = int(insns[call + 1].split(":")[0], 16)
    t = truth(path)
    size = [sz for v, sz, *_ in readelf_symbols(path) if v == t["die_now"]][0]
    assert ret == t["die_now"] + size          # the call is the last instruction
    s = Symbolizer(only(), SymbolizerOptions(inline=False))
    plain = s.lookup(path, None, ret)[-1]
    as_ret = s.lookup(path, None, ret, is_return_address=True)[-1]
    assert as_ret.name == "die_now" and as_ret.offset == ret - t["die_now"] and as_ret.svma == ret
    assert plain.name != "die_now"


def test_file_offset_lookup_and_caching(built, tmp_path):
    path = built["full"]
    s = Symbolizer(only(), SymbolizerOptions(inline=False))
    b = Binary(path)
    addr = truth(path)["after_die"]
    off = b.svma_to_file_offset(addr)
    assert s.lookup(path, None, file_offset=off) == s.lookup(path, None, addr)
    # Same build-id under two paths: one table.
    copy = str(tmp_path / "copy")
    shutil.copy(path, copy)
    bid = readelf_build_id(path)
    assert s.symbol_table(path, bid) is s.symbol_table(copy, bid)
    assert s.lookup(path, None)[0].name is None


def test_kernel_and_perfmap(tmp_path):
    ks = KernelSymbols.parse("ffffffff81000000 T _stext\nffffffff81000100 t helper\n"
                             "ffffffffc0000000 t modfn\t[mymod]\n")
    s = Symbolizer(only(), SymbolizerOptions(kallsyms=ks))
    f = s.lookup("[kernel.kallsyms]", None, 0xffffffff81000104)
    assert (f[0].name, f[0].offset, f[0].source) == ("helper", 4, "kallsyms")
    f = s.lookup("[kernel.kallsyms]", None, 0xffffffff81000100, is_return_address=True)
    assert (f[0].name, f[0].offset) == ("_stext", 0x100)
    f = s.lookup("[mymod]", None, 0xffffffffc0000008)
    assert (f[0].name, f[0].offset, f[0].source) == ("modfn", 8, "kallsyms")
    pm = tmp_path / "perf-1234.map"
    pm.write_text("7f0000001000 40 jitted_a\n0x7f0000001040 0x10 _ZN3foo3barEv\n")
    # Only /tmp/perf-PID.map paths are JIT maps; use the real naming.
    real = "/tmp/perf-%d.map" % (os.getpid() + 7000000)
    shutil.copy(pm, real)
    try:
        f = s.lookup(real, None, 0x7f0000001044)
        # perf's form by default; the full signature with signatures=True
        assert (f[0].name, f[0].offset, f[0].source) == ("foo::bar", 4, "perfmap")
        f = Symbolizer(only(), SymbolizerOptions(kallsyms=ks, signatures=True)).lookup(
            real, None, 0x7f0000001044)
        assert f[0].name == "foo::bar()"
    finally:
        os.unlink(real)


def test_mutated_binaries_never_raise(built, tmp_path):
    """Byte flips anywhere (headers, symbols, DWARF), cuts at random lengths:
    lookups answer something and raise nothing but SymbolizeError."""
    import random
    from symbolize import SymbolizeError
    data = open(built["full"], "rb").read()
    addrs = sorted(truth(built["full"]).values())[:6]
    rnd = random.Random(1234)
    for i in range(60):
        buf = bytearray(data)
        if i % 3 == 0:
            buf = buf[:rnd.randrange(len(buf))]
        else:
            for _ in range(rnd.randrange(1, 300)):
                buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        p = tmp_path / f"m{i}"
        p.write_bytes(bytes(buf))
        s = Symbolizer(only())
        try:
            for a in addrs:
                assert s.lookup(str(p), None, a + 1)
                assert s.lookup(str(p), None, a + 1, is_return_address=True)
            s.lookup(str(p), None, file_offset=0x1100)
            s.binary_for(str(p))
        except SymbolizeError:
            pass


def test_stripped_copy_at_build_id_path_is_no_debug_file(built, tmp_path):
    """A .build-id/xx/rest.debug entry that is only a stripped copy (no
    .symtab, no DWARF) is passed over for the real debug file behind it."""
    bid = readelf_build_id(built["full"])
    stripped = strip_to(built["full"], str(tmp_path / "prog"))
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    fake = d1 / ".build-id" / bid[:2] / (bid[2:] + ".debug")
    fake.parent.mkdir(parents=True)
    shutil.copy(stripped, fake)
    real = keep_debug(built["full"], str(d2 / ".build-id" / bid[:2] / (bid[2:] + ".debug")))
    s = Symbolizer(only(debug_dirs=[str(d1), str(d2)]), SymbolizerOptions(inline=False))
    c = s.binary_for(stripped, bid)
    assert c.debug is not None and c.debug.path == real


def test_minidebuginfo_through_symbolizer(built, tmp_path):
    import lzma
    src = built["full"]
    dyn = {n.split("@")[0] for a, t, n in nm_defined(src, dynamic=True)}
    funcs = [n for a, t, n in nm_defined(src) if t in "Tt" and n not in dyn]
    keep = tmp_path / "keep"
    keep.write_text("\n".join(funcs) + "\n")
    dbg, mini = str(tmp_path / "dbg"), str(tmp_path / "mini")
    run("objcopy", "--only-keep-debug", src, dbg)
    run("objcopy", "-S", f"--keep-symbols={keep}", dbg, mini)
    xz = tmp_path / "mini.xz"
    xz.write_bytes(lzma.compress(open(mini, "rb").read(), format=lzma.FORMAT_XZ))
    prog = strip_to(src, str(tmp_path / "prog"))
    run("objcopy", f"--add-section=.gnu_debugdata={xz}", prog)
    s = Symbolizer(only(), SymbolizerOptions(inline=False))
    addr = truth(src)["hidden_helper"]
    f = s.lookup(prog, None, addr + 1)[-1]
    assert (f.name, f.offset, f.source) == ("hidden_helper", 1, "minidebuginfo")
    assert "minidebuginfo" in s.binary_for(prog).reason


def test_disk_cache_round_trip_and_damage(built, tmp_path):
    bid = readelf_build_id(built["full"])
    stripped = strip_to(built["full"], str(tmp_path / "prog"))
    cache = tmp_path / "cache"
    s1 = Symbolizer(only(), SymbolizerOptions(inline=False, cache_dir=str(cache)))
    t1 = s1.symbol_table(stripped, bid)
    files = sorted((cache / "symtab").rglob("*.table"))
    assert len(files) == 1
    s2 = Symbolizer(only(), SymbolizerOptions(inline=False, cache_dir=str(cache)))
    assert list(s2.symbol_table(stripped, bid)) == list(t1)
    # Once the debug file is there, the dynsym-only table is not reused.
    dd = tmp_path / "dd"
    keep_debug(built["full"], str(dd / ".build-id" / bid[:2] / (bid[2:] + ".debug")))
    s3 = Symbolizer(only(debug_dirs=[str(dd)]),
                    SymbolizerOptions(inline=False, cache_dir=str(cache)))
    addr = truth(built["full"])["hidden_helper"]
    assert s3.lookup(stripped, bid, addr)[-1].name == "hidden_helper"
    # A damaged cache file is ignored (and rewritten).
    for f in cache.rglob("*.table"):
        f.write_text('{"format": "perfdata-symtab-1", "symbols": [["x", -1, "y", "z"]]}')
    s4 = Symbolizer(only(debug_dirs=[str(dd)]),
                    SymbolizerOptions(inline=False, cache_dir=str(cache)))
    assert s4.lookup(stripped, bid, addr)[-1].name == "hidden_helper"


def test_wrong_types_do_not_raise():
    from symbolize import PerfMap, build_symbol_table, demangle, normalize_build_id
    s = Symbolizer(only())
    assert s.lookup(None, None, 1)[0].name is None
    assert s.lookup("/bin/ls", None, "0x10")[0].name is None
    assert s.binary_for(None).status == "missing"
    assert Binary(None).error_kind == "missing" and Binary(b"/nonexistent").error_kind == "missing"
    assert len(KernelSymbols.parse(None)) == 0 and len(PerfMap.parse(None)) == 0
    assert demangle(None) is None and normalize_build_id(object()) is None
    b = Binary("/bin/ls")
    assert b.avma_to_svma(None, 1, 2) is None and b.file_offset_to_svma(-5) is None
    assert build_symbol_table(b).lookup("q") is None


def test_perf_buildid_cache_directory_without_elf_is_no_candidate(built, tmp_path):
    """A cache entry of the new layout that holds no `elf` (perf caches a vdso
    as `[vdso]/<bid>/vdso`, the image perfdata's stand-in names by another
    path) is passed over without a warning; the binary is found at its path."""
    bid = readelf_build_id(built["full"])
    cache = tmp_path / "dotdebug"
    entry = cache / "[vdso]" / bid
    entry.mkdir(parents=True)
    shutil.copy(built["full"], entry / "vdso")
    (entry / "probes").write_bytes(b"")
    link = cache / ".build-id" / bid[:2] / bid[2:]
    link.parent.mkdir(parents=True)
    os.symlink(os.path.relpath(entry, link.parent), link)
    s = Symbolizer(only(buildid_dir=str(cache)), SymbolizerOptions(inline=False))
    c = s.binary_for(built["full"], bid)
    assert c.status == "found" and c.binary.path == built["full"]
    assert s.warnings == []


def test_first_found_takes_the_first_place_with_the_build_id(built, tmp_path):
    """first_found: places of one binary in the order wanted (perfdata's
    recorded path, then the recording process's /proc/PID/root): the first
    holding a file with the build-id, never a file with another; else the
    first, whose lookups then say why it is missing, and no other's."""
    bid = readelf_build_id(built["full"])
    gone = str(tmp_path / "gone" / "prog")
    wrong = shutil.copy(built["other"], tmp_path / "wrong")
    right = shutil.copy(built["full"], tmp_path / "right")
    addr = truth(built["full"])["main"]
    s = Symbolizer(only(), SymbolizerOptions(inline=False))
    assert s.first_found([gone, str(wrong), str(right)], bid) == str(right)
    assert s.lookup(str(right), bid, addr)[-1].name == "main"
    assert s.warnings == []
    s2 = Symbolizer(only(), SymbolizerOptions(inline=False))
    assert s2.first_found([gone, str(wrong)], bid) == gone
    assert s2.warnings == []
    s2.lookup(gone, bid, addr)
    assert len(s2.warnings) == 1 and gone in s2.warnings[0]
    # the first place that has it is taken whatever follows
    assert Symbolizer(only(), SymbolizerOptions(inline=False)).first_found(
        [built["full"], gone], bid) == built["full"]
