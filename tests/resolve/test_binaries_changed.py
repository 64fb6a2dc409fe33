"""Binaries that change or move after the recording, against perf 6.1.

tests/diagnose_progs/hot.c (true stack, leaf first: hot_inner <- hot_outer
<- main) is built and recorded at test time with perf's build-id cache on,
in a private HOME: perf record links the binary into HOME/.debug (a hard
link where it can, a copy where not).  Then the world changes: the binary
is rebuilt at its path (a linker writes a new file; cp writes over the old
one, and so over perf's linked copy), the cache entry is damaged, or the
profile is read "elsewhere" (the binary gone, --symfs on an empty root)
from perf archive's tarball.  perf script of the same recording in the same
HOME is the oracle; the recorded build-id must win: the right names, or
[unknown] with a warning, never another build's names.
"""
import os
import shutil
import subprocess

import pytest

from conftest import requires_perf, run_cli
from script_compare import parse_samples

from diagnose_progs import util

pytestmark = [requires_perf, pytest.mark.skipif(
    util.have_tools("gcc") is not None, reason=util.have_tools("gcc") or "")]

# (PLT: a sample in the stub of hot_outer's call to clock_gettime, which
# _frames_of names "[plt]" whoever names it: perfdata names the slot,
# clock_gettime@plt, perf 6.1 `_init` or `@plt`, docs/differences.md)
PLT = "[plt]"
TRUE_STACK = [PLT, "hot_inner", "hot_outer", "main"]


def _record(tmp, exe, out, opts=("-g",)):
    """perf record with the build-id cache on, in tmp's private HOME."""
    cmd = [util.PERF, "record", "-q", "-e", "cpu-clock:u", "-F", "1000", *opts,
           "-o", str(out), "--", exe, "0.3"]
    res = subprocess.run(cmd, env=util.env_for(tmp), capture_output=True, timeout=120)
    if res.returncode != 0 or not os.path.exists(out):
        raise RuntimeError("perf record failed: %s" % res.stderr.decode(errors="replace"))
    return str(out)


def _cache_entry(tmp, exe, bid):
    return os.path.join(str(tmp), "home", ".debug", str(exe).lstrip("/"), bid, "elf")


def _frames_of(text, exe):
    """The names (offsets dropped) of every frame in exe, sample by sample
    (a dso's name may hold parentheses: `hot (deleted)`), a PLT slot's as
    PLT."""
    out = []
    tail = " (%s)" % exe
    for _, frames in parse_samples(text):
        names = []
        for addr, sym, dso in frames:
            line = "%s (%s)" % (sym, dso)
            if addr is not None and line.endswith(tail):
                name = line[:-len(tail)].split("+0x")[0]
                names.append(PLT if name.endswith("@plt") or name == "_init" else name)
        out.append(names)
    return out


def _buildids(tmp, data):
    return run_cli(["buildids", str(data), "--buildid-dir",
                    os.path.join(str(tmp), "home", ".debug")])


def _in_order(names, stack):
    rest = iter(stack)
    return all(n in rest for n in names)


def _script(tmp, data, *opts):
    rc, out, err = run_cli(["script", str(data), "--buildid-dir",
                            os.path.join(str(tmp), "home", ".debug"), *opts])
    assert rc == 0, err
    return out, err


@pytest.fixture
def recorded(tmp_path):
    """(exe, its build-id, a -g recording of it) with perf's cache entry."""
    (tmp_path / "bin").mkdir()
    exe = util.build("hot.c", tmp_path / "bin" / "hot", "-DVARIANT=31")
    bid = util.build_id(exe)
    data = _record(tmp_path, exe, tmp_path / "hot.data")
    if not os.path.exists(_cache_entry(tmp_path, exe, bid)):
        pytest.skip("perf record kept no copy of the binary in its build-id cache")
    return exe, bid, data


def test_rebuilt_as_a_new_file_the_cached_copy_names_it(tmp_path, recorded):
    exe, bid, data = recorded
    here = util.perf_script(tmp_path, data)
    util.build("hot.c", exe, "-DVARIANT=32")           # the linker writes a new file
    assert util.build_id(exe) != bid
    assert util.build_id(_cache_entry(tmp_path, exe, bid)) == bid
    perf = _frames_of(util.perf_script(tmp_path, data), exe)
    ours, err = _script(tmp_path, data)
    assert _frames_of(ours, exe) == perf == _frames_of(here, exe)
    # the ground truth: the frames of every sample are its true stack's, in
    # order (a -g walk skips hot_outer: hot_inner sets up no frame pointer)
    stacks = [s for s in _frames_of(ours, exe) if s]
    assert stacks and all(_in_order(s, TRUE_STACK) for s in stacks)
    # (the cache is looked in before the recorded path: nothing to warn of)
    assert "not the wanted" not in err


def test_written_over_in_place_no_names_and_diagnose_says_why(tmp_path, recorded):
    exe, bid, data = recorded
    cached = _cache_entry(tmp_path, exe, bid)
    if not os.path.samefile(cached, exe):
        pytest.skip("perf copied the binary into its cache (no hard link here)")
    new = util.build("hot.c", tmp_path / "hot.new", "-DVARIANT=33", "-O0")
    shutil.copyfile(new, exe)                           # as cp does: the same inode
    new_bid = util.build_id(exe)
    assert new_bid != bid and util.build_id(cached) == new_bid
    # perf checks the build-id and names nothing in it; so does perfdata,
    # rather than another build's names
    perf = _frames_of(util.perf_script(tmp_path, data), exe)
    ours, err = _script(tmp_path, data)
    assert _frames_of(ours, exe) == perf
    assert sum(map(len, perf)) > 0 and {n for s in perf for n in s} == {"[unknown]"}
    assert "%s: build-id %s is not the wanted %s" % (cached, new_bid, bid) in err
    res, _ = util.diagnose(data, "--buildid-dir", os.path.join(str(tmp_path), "home", ".debug"))
    c = util.cls(res, "buildid-mismatch")
    (entry,) = [b for b in c["binaries"] if b["path"] == exe]
    assert entry["found"][0] == "%s has build-id %s, not the recorded %s" % (exe, new_bid, bid)
    assert cached in entry["found"][1] and "hard link" in entry["found"][1]


@pytest.mark.parametrize("damage", ["truncated", "another-build"])
def test_damaged_cache_entry_a_warning_not_wrong_names(tmp_path, recorded, damage):
    exe, bid, data = recorded
    cached = _cache_entry(tmp_path, exe, bid)
    content = open(exe, "rb").read()
    os.unlink(exe)                                     # the binary gone: the cache alone
    os.unlink(cached)
    if damage == "truncated":
        with open(cached, "wb") as f:
            f.write(content[:len(content) // 2])
    else:
        shutil.copyfile(util.build("hot.c", tmp_path / "other", "-DVARIANT=34"), cached)
    perf = _frames_of(util.perf_script(tmp_path, data), exe)
    ours, err = _script(tmp_path, data)
    assert "Traceback" not in err
    assert _frames_of(ours, exe) == perf
    assert sum(map(len, perf)) > 0 and {n for s in perf for n in s} == {"[unknown]"}
    res, _ = util.diagnose(data, "--buildid-dir", os.path.join(str(tmp_path), "home", ".debug"))
    if damage == "truncated":
        assert "%s: damaged (section header table runs past the end of the file); not used" \
            % cached in err
        (entry,) = [b for b in util.cls(res, "binary-missing")["binaries"] if b["path"] == exe]
        assert "%s is damaged: section header table runs past the end of the file" % cached \
            in entry["found"]
        rc, listing, _ = _buildids(tmp_path, data)
        assert "%s: section header table runs past the end of the file" % cached in listing
    else:
        assert "%s: build-id %s is not the wanted %s" % (cached, util.build_id(cached), bid) \
            in err
        assert util.cls(res, "buildid-mismatch") is not None
        rc, listing, _ = _buildids(tmp_path, data)
        assert "%s has %s" % (cached, util.build_id(cached)) in listing


def test_perf_archive_tarball_read_elsewhere(tmp_path, recorded):
    exe, bid, data = recorded
    here, _ = _script(tmp_path, data)
    res = subprocess.run([util.PERF, "archive", data], env=util.env_for(tmp_path),
                         capture_output=True, timeout=120)
    tarball = data + ".tar.bz2"
    if not os.path.exists(tarball):
        pytest.skip("perf archive made no tarball: %s" % res.stderr.decode(errors="replace"))
    os.unlink(exe)
    shutil.rmtree(tmp_path / "home" / ".debug")
    empty = tmp_path / "empty"
    empty.mkdir()
    elsewhere = ["--symfs", str(empty), "--buildid-dir", str(empty)]
    bare, _ = _script(tmp_path, data, *elsewhere)
    assert {n for s in _frames_of(bare, exe) for n in s} == {"[unknown]"}
    there, err = _script(tmp_path, data, "--archive", tarball, *elsewhere)
    assert _frames_of(there, exe) == _frames_of(here, exe)
    assert any(_frames_of(here, exe))
    # unpacked as perf says (tar xf -C ~/.debug), as a --debug-dir: the same,
    # and its directories are no "file" to warn about
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    subprocess.run(["tar", "xf", tarball, "-C", str(unpacked)], check=True, timeout=60)
    there2, err2 = _script(tmp_path, data, "--debug-dir", str(unpacked), *elsewhere)
    assert there2 == there
    assert "not a regular file" not in err2


def test_dwarf_stack_in_a_rebuilt_binary_is_never_unwound_with_its_cfi(tmp_path):
    """perf unwinds through the file at the recorded path whatever its
    build-id (its CFI at the old addresses: garbage frames where the
    rebuild moved code); perfdata does not use that file: the sample's ip,
    [unknown], and nothing invented past it."""
    exe = util.build("hot.c", tmp_path / "hot", "-DVARIANT=35")
    bid = util.build_id(exe)
    data = util.record(tmp_path, exe, tmp_path / "hot.data",
                       opts=("--call-graph=dwarf,4096",))
    rc, here, err = run_cli(["script", data])
    assert rc == 0, err
    util.build("hot.c", exe, "-DVARIANT=36", "-fomit-frame-pointer", "-O0")
    rc, ours, err = run_cli(["script", data])
    assert rc == 0 and "%s: build-id %s is not the wanted %s" % (
        exe, util.build_id(exe), bid) in err
    truth = parse_samples(here)
    got = parse_samples(ours)
    assert len(got) == len(truth)
    in_exe = 0
    for (_, frames), (_, true_frames) in zip(got, truth):
        user = [(a, d) for a, _, d in frames if a is not None and a < 1 << 63]
        true_user = [(a, d) for a, _, d in true_frames if a is not None and a < 1 << 63]
        if user and user[0][1] == exe:
            in_exe += 1
            assert user == true_user[:1]      # the ip, then nothing
        assert all(sym == "[unknown]" for _, sym, d in frames if d == exe)
    assert in_exe > 0
    # diagnose blames the binary, not its CFI
    res, _ = util.diagnose(data)
    stopped = util.cls(res, "dwarf-no-binary")
    assert stopped is not None and stopped["samples"] >= in_exe
    assert [b["path"] for b in stopped["binaries"]] == [exe]
    assert util.cls(res, "buildid-mismatch") is not None
    assert not [b for c in res["classes"] if c["class"] == "dwarf-no-cfi"
                for b in c["binaries"] if b["path"] == exe]


def test_no_build_id_recorded_and_modified_since_is_warned_about(tmp_path):
    """A recording without the binary's build-id (perf record --no-buildid
    here; perf 6.1 writes none for binaries only callers are in): a rebuild
    at the path cannot be told by build-id.  perf names the frames from the
    new file, wrongly; perfdata too (the same choice), but says the file
    changed after the profile was written, and diagnose counts its frames."""
    exe = util.build("hot.c", tmp_path / "hot", "-DVARIANT=37")
    data = util.record(tmp_path, exe, tmp_path / "hot.data", opts=("-g", "--no-buildid"))
    rc, before, err = run_cli(["script", data])
    assert rc == 0 and "modified after" not in err, err
    stacks = [s for s in _frames_of(before, exe) if s]
    assert stacks and all(_in_order(s, TRUE_STACK) for s in stacks)
    util.build("hot.c", exe, "-DVARIANT=38", "-O0")
    os.utime(exe, (os.stat(data).st_mtime + 10,) * 2)   # (whatever the clock's grain)
    perf = _frames_of(util.perf_script(tmp_path, data), exe)
    rc, after, err = run_cli(["script", data])
    assert rc == 0
    assert _frames_of(after, exe) == perf
    assert not all(_in_order(s, TRUE_STACK) for s in perf if s)   # another build's names
    assert "%s: modified after the profile was written" % exe in err
    res, _ = util.diagnose(data)
    c = util.cls(res, "binary-modified")
    assert c is not None and [b["path"] for b in c["binaries"]] == [exe]
    assert c["frames"] == sum(map(len, perf))
    rc, listing, _ = run_cli(["buildids", data])
    assert "the file was modified after the profile was written" in \
        listing.split(" %s\n" % exe, 1)[1].split("\n    missing: ", 1)[1].split("\n")[0]
    # gone: perf archive could not have kept it (no build-id); diagnose says so
    os.unlink(exe)
    res, _ = util.diagnose(data)
    (entry,) = [b for b in util.cls(res, "binary-missing")["binaries"] if b["path"] == exe]
    assert "`perf archive` leaves it out" in entry["fix"] and "perfdata archive" in entry["fix"]


def test_deleted_while_running_named_from_a_copy(tmp_path):
    """perf record -p of a process whose binary was deleted while it ran:
    the MMAP2 name ends in " (deleted)" and no build-id is recorded.  A copy
    given by --path-map (or under --symfs) is read under the name without
    the suffix; perf looks for the name with it, `[unknown]` whatever the
    copy."""
    (tmp_path / "bin").mkdir()
    exe = util.build("hot.c", tmp_path / "bin" / "hot", "-DVARIANT=39")
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(exe, copy / "hot")
    proc = subprocess.Popen([exe, "3"], stdout=subprocess.DEVNULL)
    try:
        os.unlink(exe)
        data = str(tmp_path / "hot.data")
        res = subprocess.run([util.PERF, "record", "-q", "--no-buildid-cache", "-e",
                              "cpu-clock:u", "-F", "1000", "-g", "-p", str(proc.pid), "-o", data,
                              "--", "sleep", "0.3"], env=util.env_for(tmp_path),
                             capture_output=True, timeout=120)
    finally:
        proc.kill()
        proc.wait()
    if res.returncode != 0 or not os.path.exists(data):
        pytest.skip("perf record -p failed: %s" % res.stderr.decode(errors="replace"))
    deleted = exe + " (deleted)"
    root = tmp_path / "root"
    (root / os.path.dirname(exe).lstrip("/")).mkdir(parents=True)
    shutil.copy(copy / "hot", root / exe.lstrip("/"))
    text = subprocess.run([util.PERF, "script", "-i", data, "--symfs", str(root)],
                          env=util.env_for(tmp_path), capture_output=True, timeout=120).stdout
    perf = _frames_of(text.decode(errors="replace"), deleted)
    assert sum(map(len, perf)) > 0 and {n for s in perf for n in s} == {"[unknown]"}
    for opts in (["--path-map", "%s=%s" % (os.path.dirname(exe), copy)],
                 ["--symfs", str(root)]):
        rc, out, err = run_cli(["script", data, *opts])
        assert rc == 0, err
        ours = _frames_of(out, deleted)
        assert len(ours) == len(perf) and sum(map(len, ours)) > 0
        assert all(s and _in_order(s, TRUE_STACK) for s in ours if s)
    res, _ = util.diagnose(data)
    (entry,) = [b for b in util.cls(res, "binary-missing")["binaries"] if b["path"] == deleted]
    assert "--path-map %s=COPY" % exe in entry["fix"]
