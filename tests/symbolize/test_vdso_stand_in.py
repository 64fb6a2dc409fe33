"""Which vdso image names a profile's vdso frames when the profile names no
build-id for it (perf record --buildid-mmap): this machine's own only where
it runs the recorded kernel release (as the kernel symbols), else the one
given by --vdso, else none (the frames stay unnamed, with a warning that
says what to pass).  The running kernel is made the recorded one, or
another, by the test: the outcome must not depend on where the tests run."""
import os
import re

import pytest

from conftest import SAMPLES, SAMPLE_SYMBOL_ARGS, run_cli, sample_vdso

DATA = SAMPLES / "buildid_mmap.data"
GOLDEN = SAMPLES / "expected" / "buildid_mmap.script.txt"
RECORDED_RELEASE = "6.18.44-fc-v669"       # `perfdata header`: os release
_VDSO_FRAME = re.compile(r"^\s+[0-9a-f]+ (.*) \(\[vdso\]\)$", re.M)


def _running(monkeypatch, release):
    real = os.uname()
    fake = os.uname_result((real.sysname, real.nodename, release, real.version,
                            real.machine))
    monkeypatch.setattr(os, "uname", lambda: fake)


def _vdso_names(text):
    return _VDSO_FRAME.findall(text)


def test_recorded_release_is_the_files():
    rc, out, _ = run_cli(["header", str(DATA)])
    assert rc == 0 and "# os release : %s\n" % RECORDED_RELEASE in out


def test_another_kernel_leaves_the_vdso_unnamed_and_says_what_to_pass(monkeypatch):
    _running(monkeypatch, "0.0.0-another-kernel")
    rc, out, err = run_cli(["script", str(DATA)] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    names = _vdso_names(out)
    assert names and set(names) == {"[unknown]"}
    assert "recorded on kernel %s, not this one (0.0.0-another-kernel)" % RECORDED_RELEASE \
        in err and "--vdso FILE" in err


def test_the_recorded_kernel_takes_this_machines_vdso(monkeypatch):
    from symbolize.debuginfo.vdso import running_vdso
    own = running_vdso()
    if own is None:
        pytest.skip("no [vdso] mapping readable in this process")
    _running(monkeypatch, RECORDED_RELEASE)
    rc, out, err = run_cli(["script", str(DATA), "-F", "ip,sym,dso"] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    assert "assuming this machine's vdso (build-id %s), as perf does" % own[1] in err
    # perf's own choice: its names are this machine's vdso's, not unknown
    # (the vdso's text is mapped at the same offsets in every process).
    assert _vdso_names(out) and "[unknown]" not in _vdso_names(out)


def test_given_vdso_names_the_frames_as_perf_did_on_the_recording_machine(monkeypatch):
    _running(monkeypatch, "0.0.0-another-kernel")
    vdso = sample_vdso(DATA)
    assert vdso is not None
    rc, out, err = run_cli(["script", str(DATA), "--vdso", vdso] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    assert "--vdso" not in err and "recorded on kernel" not in err
    want = _vdso_names(GOLDEN.read_text())
    assert want and _vdso_names(out) == want


def test_given_vdso_of_another_build_id_is_not_used(tmp_path):
    # vdso_clock.fp.data names its vdso's build-id (the v669 kernel's);
    # without the samples' build-id directory that image is not found, and
    # the image given is the other recording kernel's (v769).
    data = SAMPLES / "vdso_clock.fp.data"
    recorded = sample_vdso(DATA)            # the v669 kernel's image
    others = [p for p in (SAMPLES / "buildids" / ".build-id").glob("*/*")
              if p.is_file() and str(p) != recorded and _is_vdso_image(p)]
    assert recorded is not None and others, "the samples carry two kernels' vdso images"
    rc, out, err = run_cli(["script", str(data), "--vdso", str(others[0]),
                            "--buildid-dir", str(tmp_path)])
    assert rc == 0, err
    assert "not the profile's vdso" in err and "not used" in err
    from symbolize.debuginfo.vdso import running_vdso
    own = running_vdso()
    if own is None or own[0] is None or recorded is None or \
            not recorded.endswith(own[1][2:]):
        # (only on the recording kernel is this machine's vdso the recorded one)
        assert _vdso_names(out) and set(_vdso_names(out)) == {"[unknown]"}


def _is_vdso_image(path):
    for line in (SAMPLES / "buildids" / "INDEX.txt").read_text().splitlines():
        bid, _, name = line.partition(" ")
        if name == "[vdso]" and path.parent.name + path.name == bid:
            return True
    return False


def test_archive_made_on_the_recording_kernel_carries_the_vdso(monkeypatch, tmp_path):
    """`perfdata archive` on the recording machine takes its own vdso for a
    profile that names none; read elsewhere with --archive, that image
    names the vdso frames, as this machine's own would have there."""
    from symbolize.debuginfo.vdso import running_vdso
    own = running_vdso()
    if own is None:
        pytest.skip("no [vdso] mapping readable in this process")
    _running(monkeypatch, RECORDED_RELEASE)
    archive = tmp_path / "profile.tar.zst"
    rc, out, err = run_cli(["archive", str(DATA), "-o", str(archive)] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    rc, here, err = run_cli(["script", str(DATA)] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    _running(monkeypatch, "0.0.0-another-kernel")
    rc, elsewhere, err = run_cli(["script", str(DATA), "--archive", str(archive)]
                                 + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    assert "recorded on kernel" not in err
    assert _vdso_names(elsewhere) == _vdso_names(here) and "[unknown]" not in _vdso_names(here)
