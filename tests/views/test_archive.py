"""perfdata archive: what resolves here resolves from the unpacked archive
alone (the binaries gone, perf's cache and the system's debug files out of
reach), and unpacking refuses anything outside the layout."""
import io
import os
import re
import shutil
import tarfile

import pytest

from conftest import requires_perf, run_cli

from diagnose_progs import util

from perfdata.views.archive import ArchiveError, extract_archive


@requires_perf
@pytest.mark.skipif(util.have_tools("gcc", "objcopy", "strip") is not None,
                    reason="gcc/binutils not installed")
def test_archive_resolves_elsewhere_what_resolves_here(tmp_path):
    exe = util.build("hot.c", tmp_path / "hot", "-DVARIANT=21")
    dbg = tmp_path / "dbg"
    util.split_debug(exe, tmp_path / "hot.debug")
    bid = util.build_id(exe)
    (dbg / ".build-id" / bid[:2]).mkdir(parents=True)
    shutil.copy(tmp_path / "hot.debug", dbg / ".build-id" / bid[:2] / (bid[2:] + ".debug"))
    data = util.record(tmp_path, exe, tmp_path / "hot.data")
    rc, here, err = run_cli(["script", data, "--debug-dir", str(dbg)])
    assert rc == 0 and "hot_inner" in here, err
    out = tmp_path / "hot.tar.zst"
    rc, listing, err = run_cli(["archive", data, "-o", str(out), "--debug-dir", str(dbg)])
    assert rc == 0 and out.exists(), err
    assert ".build-id/%s/%s.debug" % (bid[:2], bid[2:]) in listing
    # Elsewhere: no binary at its path, no debug dir, no ~/.debug, nothing
    # outside the unpacked archive (--symfs on an empty root hides the system).
    os.unlink(exe)
    shutil.rmtree(dbg)
    unpacked = tmp_path / "x"
    rc, _, err = run_cli(["archive", "-x", str(out), "-C", str(unpacked)])
    assert rc == 0, err
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, there, err = run_cli(["script", data, "--debug-dir", str(unpacked), "--symfs",
                              str(empty), "--buildid-dir", str(empty)])
    assert rc == 0
    assert there == here
    # and without the archive it would not have.
    rc, bare, _ = run_cli(["script", data, "--symfs", str(empty), "--buildid-dir", str(empty)])
    assert "hot_inner" not in bare


def _tar_zst(path, members):
    import zstandard
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, data in members:
            ti = tarfile.TarInfo(name)
            if kind == "sym":
                ti.type = tarfile.SYMTYPE
                ti.linkname = "/etc/passwd"
                tar.addfile(ti)
            else:
                ti.size = len(data)
                tar.addfile(ti, io.BytesIO(data))
    path.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    return path


@pytest.mark.parametrize("name,kind", [
    ("../evil", "file"), ("/tmp/evil", "file"), (".build-id/ab/cdef0123", "sym"),
    ("a/./../../evil", "file"), (".build-id/ab/../../evil", "file"), ("", "file"),
])
def test_unpack_refuses_members_outside_the_layout(tmp_path, name, kind):
    arc = _tar_zst(tmp_path / "a.tar.zst", [(name, kind, b"x")])
    with pytest.raises(ArchiveError):
        extract_archive(str(arc), str(tmp_path / "out"))
    assert not (tmp_path / "evil").exists()
    rc, _, err = run_cli(["archive", "-x", str(arc), "-C", str(tmp_path / "out2")])
    assert rc == 2 and "Traceback" not in err


def test_unpack_of_garbage_is_an_error(tmp_path):
    bad = tmp_path / "bad.tar.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(64))
    with pytest.raises(ArchiveError):
        extract_archive(str(bad), str(tmp_path / "out"))


def test_kernel_symbols_travel_in_the_archive(tmp_path):
    from conftest import REPO
    data = str(REPO / "samples" / "two_events.data")
    buildids = str(REPO / "samples" / "buildids")
    # The recording kernel's kallsyms travels with the samples (perf's cache
    # layout under samples/buildids), so this holds on any running kernel.
    rc, here, _ = run_cli(["script", data, "--debug-dir", buildids])
    named = [l for l in here.splitlines() if l.endswith("([kernel.kallsyms])")]
    assert named and not [l for l in named if "[unknown]" in l]
    out = tmp_path / "k.tar.zst"
    rc, listing, err = run_cli(["archive", data, "-o", str(out), "--debug-dir", buildids])
    assert rc == 0, err
    assert re.search(r"^\s*kallsyms\s+\[kernel\.kallsyms\]/[0-9a-f]{40}/kallsyms", listing, re.M), \
        listing
    unpacked = tmp_path / "x"
    rc, msg, _ = run_cli(["archive", "-x", str(out), "-C", str(unpacked)])
    assert "--debug-dir %s" % unpacked in msg and "kernel symbols included" in msg
    empty = tmp_path / "empty"
    empty.mkdir()
    # The unpacked archive as a --debug-dir alone: its kallsyms is found there.
    rc, there, _ = run_cli(["script", data, "--debug-dir", str(unpacked), "--buildid-dir",
                            str(empty), "--symfs", str(empty)])
    assert there == here and "[kernel.kallsyms]" in there


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_archive_that_does_not_unpack_is_bad_input_whatever_the_workers(tmp_path, jobs):
    """Each -j worker unpacks --archive itself: its ArchiveError is bad input
    (exit 2, one line), as in one process, not an internal error."""
    from conftest import SAMPLES
    bad = tmp_path / "bad.tar.zst"
    bad.write_bytes(b"not an archive at all" * 100)
    for archive in (str(bad), str(tmp_path / "absent.tar.zst")):
        rc, _, err = run_cli(["script", str(SAMPLES / "threads.fp.data"), "--archive", archive,
                              "-j", jobs])
        assert rc == 2 and err.startswith("perfdata: error: %s: " % archive), err
        assert "internal error" not in err and "Traceback" not in err


def test_perf_archive_tarball_put_in_this_layout_links_left_out(tmp_path):
    """perf archive's tarball (perf's build-id cache: <path>/<bid>/elf,
    .build-id/xx/rest symlinks) unpacks by build-id; its symlinks, probes and
    any name that climbs out are left out, never written."""
    bid = "ab" * 20
    members = [
        ("usr/lib/libx.so/%s/elf" % bid, b"ELF"),
        ("usr/lib/libx.so/%s/debug" % bid, b"DEBUG"),
        ("usr/lib/libx.so/%s/probes" % bid, b"P"),
        ("[kernel.kallsyms]/%s/kallsyms" % bid, b"K"),
        ("../evil/%s/elf" % bid, b"E"),
        ("tmp/../../evil/%s/debug" % bid, b"E"),
    ]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:bz2") as tar:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
        link = tarfile.TarInfo(".build-id/ab/" + bid[2:])
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc"
        tar.addfile(link)
    arc = tmp_path / "perf.data.tar.bz2"
    arc.write_bytes(buf.getvalue())
    out = tmp_path / "out" / "x"
    extract_archive(str(arc), str(out))
    got = sorted(str(p.relative_to(out)) for p in out.rglob("*") if not p.is_dir())
    assert got == sorted([".build-id/ab/%s" % bid[2:], ".build-id/ab/%s.debug" % bid[2:],
                          "[kernel.kallsyms]/%s/kallsyms" % bid])
    assert (out / ".build-id" / "ab" / bid[2:]).read_bytes() == b"ELF"
    assert not os.path.islink(out / ".build-id" / "ab" / bid[2:])
    assert not (tmp_path / "out" / "evil").exists() and not (tmp_path / "evil").exists()
    # a tarball with none of perf's files is no archive
    empty = tmp_path / "other.tar.bz2"
    with tarfile.open(str(empty), mode="w:bz2") as tar:
        ti = tarfile.TarInfo("README")
        ti.size = 1
        tar.addfile(ti, io.BytesIO(b"x"))
    with pytest.raises(ArchiveError):
        extract_archive(str(empty), str(tmp_path / "out2"))
