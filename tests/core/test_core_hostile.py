"""Hostile samples through the compiled core: what it reads of a SAMPLE body
itself (the callchain's nr and entries, pid and tid) made wrong in a bundled
recording; the compiled run must print what the pure-Python path prints,
exit as it exits, and never show a traceback.  (The records' framing is the
walker's; tests/fuzz and tools/fuzz-compiled.sh mutate whole files.)"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

import perfdata
from perfdata.core import CORE_ENV, compiled
from perfdata.core.layout import sample_offsets
from perfdata.format.constants import RecordType as RT

from conftest import SAMPLE_SYMBOL_ARGS, run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
RECORDING = SAMPLES / "threads.fp.data"

requires_core = pytest.mark.skipif(compiled() is None,
                                   reason="the compiled core is not built here")


def _samples(path: Path) -> list[tuple[int, int, int]]:
    """(offset of the body in the file, its length, offset of the callchain
    in it) of every SAMPLE record."""
    out = []
    with perfdata.open(str(path)) as pf:
        for rec in pf.records("file"):
            if rec.type == RT.SAMPLE and rec.attr is not None:
                chain = sample_offsets(rec.attr.schema)[5]
                out.append((rec.offset + 8, len(rec.body), chain))
    return out


def _mutated(tmp_path: Path, change: str) -> Path:
    data = bytearray(RECORDING.read_bytes())
    for k, (body, length, chain) in enumerate(_samples(RECORDING)):
        if k % 5:
            continue
        at = body + chain
        nr = struct.unpack_from("<Q", data, at)[0]
        room = (length - chain - 8) // 8
        if change == "nr-huge":
            struct.pack_into("<Q", data, at, (1 << 64) - 1)
        elif change == "nr-one-past":
            struct.pack_into("<Q", data, at, room + 1)
        elif change == "nr-half-word":
            struct.pack_into("<Q", data, at, (1 << 61) + 1)     # (nr * 8 wraps to 8)
        elif change == "nr-zero":
            struct.pack_into("<Q", data, at, 0)
        elif change == "garbage-entries" and nr:
            for i in range(nr):
                struct.pack_into("<Q", data, at + 8 + 8 * i, ((1 << 64) - 1 - i * 0x1000))
        elif change == "contexts-only" and nr:
            for i in range(nr):
                struct.pack_into("<Q", data, at + 8 + 8 * i, (1 << 64) - 512)
        elif change == "pid-minus-one":
            # (pid and tid: the first u32 pair after ip in this layout)
            struct.pack_into("<II", data, body + 8, 0xFFFFFFFF, 0xFFFFFFFF)
    out = tmp_path / ("%s.data" % change)
    out.write_bytes(bytes(data))
    return out


def _compiled_as_pure(monkeypatch: pytest.MonkeyPatch,
                      args: list[str]) -> tuple[int | str | None, str, str]:
    """Runs the command on the pure-Python path, then compiled: the same
    exit, output and errors, and no traceback.  The pure run's."""
    monkeypatch.setenv(CORE_ENV, "pure")
    pure = run_cli(args)
    monkeypatch.delenv(CORE_ENV)
    fast = run_cli(args)
    assert "Traceback" not in fast[2]
    assert fast == pure
    return pure


@requires_core
@pytest.mark.parametrize("change", ["nr-huge", "nr-one-past", "nr-half-word", "nr-zero",
                                    "garbage-entries", "contexts-only", "pid-minus-one"])
@pytest.mark.parametrize("command", [["script"], ["collapse"], ["report"],
                                     ["report", "-n", "-s", "pid,cpu,sym"],
                                     ["flamegraph", "--tid-root"]], ids=" ".join)
def test_hostile_samples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, change: str,
                         command: list[str]) -> None:
    path = _mutated(tmp_path, change)
    args = command + ["-j", "1", str(path)] + SAMPLE_SYMBOL_ARGS
    _compiled_as_pure(monkeypatch, args)


PLAIN = SAMPLES / "threads_stat.data"    # (no callchain: report's leaf is the ip)


@requires_core
@pytest.mark.parametrize("change", ["ip-all-ones", "ip-context-marker", "ip-zero",
                                    "ip-kernel-half", "pid-minus-one", "cpu-all-ones"])
def test_hostile_plain_samples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                               change: str) -> None:
    """What report's core reads of a sample without a callchain (its ip,
    pid, tid, cpu) made wrong in every third sample of a bundled recording."""
    from perfdata.core.layout import field
    data = bytearray(PLAIN.read_bytes())
    with perfdata.open(str(PLAIN)) as pf:
        bodies = [(rec.offset + 8, rec.attr.schema) for rec in pf.records("file")
                  if rec.type == RT.SAMPLE and rec.attr is not None]
    for k, (body, schema) in enumerate(bodies):
        if k % 3:
            continue
        ip = body + field(schema, "ip").offset
        if change == "ip-all-ones":
            struct.pack_into("<Q", data, ip, (1 << 64) - 1)
        elif change == "ip-context-marker":
            struct.pack_into("<Q", data, ip, (1 << 64) - 512)
        elif change == "ip-zero":
            struct.pack_into("<Q", data, ip, 0)
        elif change == "ip-kernel-half":
            struct.pack_into("<Q", data, ip, (1 << 63) + 0x1000)
        elif change == "pid-minus-one":
            struct.pack_into("<II", data, body + field(schema, "pid").offset,
                             0xFFFFFFFF, 0xFFFFFFFF)
        elif change == "cpu-all-ones":
            struct.pack_into("<I", data, body + field(schema, "cpu").offset, 0xFFFFFFFF)
    path = tmp_path / ("%s.data" % change)
    path.write_bytes(bytes(data))
    args = ["report", "-j", "1", "-n", "-s", "pid,cpu,dso,sym", str(path)] + SAMPLE_SYMBOL_ARGS
    pure = _compiled_as_pure(monkeypatch, args)
    assert pure != run_cli(["report", "-j", "1", "-n", "-s", "pid,cpu,dso,sym", str(PLAIN)] +
                           SAMPLE_SYMBOL_ARGS)     # (the mutation shows)
