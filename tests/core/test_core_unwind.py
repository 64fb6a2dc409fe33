"""The compiled walk of the DWARF unwinder (perfdata.core._unwind, driven by
perfdata/resolve/unwinding.py compiled_walk) against symbolize's
Unwinder.walk, the reference: on every DWARF sample of the bundled
recordings and of the corpus, the same UnwindResult (frames, CFAs, exact
and frame-pointer frames, why and where the walk stopped), and most steps
taken in C."""
from __future__ import annotations

from pathlib import Path

import pytest

from perfdata.core import compiled_unwind
from perfdata.resolve import unwinding

from conftest import SAMPLE_SYMBOL_ARGS, corpus_dir, have_corpus, run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DWARF = sorted(p.name for p in SAMPLES.glob("*.dwarf.data"))

requires_unwind = pytest.mark.skipif(compiled_unwind() is None,
                                     reason="the compiled walk is not built here")


class _Counted:
    """An Unwinder whose Python steps are counted."""

    def __init__(self, unwinder: object, counts: dict[str, int]) -> None:
        self.unwinder = unwinder
        self.counts = counts

    def __getattr__(self, name: str) -> object:
        return getattr(self.unwinder, name)

    def step(self, *args: object) -> object:
        self.counts["python_steps"] += 1
        return self.unwinder.step(*args)  # type: ignore[attr-defined]


def _compared(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> dict[str, int]:
    """Run `perfdata script` with every compiled walk checked against the
    Python walk on the same registers; counts of walks and of steps."""
    counts = {"walks": 0, "frames": 0, "python_steps": 0}
    walk = unwinding.compiled_walk

    def checked(module, consts, unwinder, ip, regs, read_stack, modules, max_depth):
        reference = unwinder.walk(ip, dict(regs), read_stack, modules.__getitem__, max_depth)
        got = walk(module, consts, _Counted(unwinder, counts), ip, dict(regs), read_stack,
                   modules, max_depth)
        assert got == reference, (hex(ip), got, reference)
        counts["walks"] += 1
        counts["frames"] += len(got.frames)
        return got
    monkeypatch.setattr(unwinding, "compiled_walk", checked)
    counts["exit"], _out, _err = run_cli(args)
    return counts


@requires_unwind
@pytest.mark.parametrize("name", DWARF)
def test_bundled(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    counts = _compared(monkeypatch, ["script", "-j", "1", str(SAMPLES / name)] +
                       SAMPLE_SYMBOL_ARGS)
    assert counts["exit"] == 0
    assert counts["walks"] > 0
    # (a walk's last step, where it stops, is Python's; most others are C's)
    assert counts["python_steps"] < counts["frames"]


@requires_unwind
def test_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    if not have_corpus():
        pytest.skip("no corpus")
    walks = 0
    for path in sorted(p for p in (corpus_dir() / "perfdata").iterdir() if p.is_file()):
        walks += _compared(monkeypatch, ["script", "-j", "1", str(path)])["walks"]
    assert walks > 0
