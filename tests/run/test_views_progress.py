"""The progress bar: drawn on a terminal only, never in a pipe or a file,
and never changes what the commands print."""
import io
from pathlib import Path

import perfdata
from conftest import run_cli
from perfdata.run.progress import Progress, input_size, sample_progress

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class Item:
    def __init__(self, offset):
        self.record = type("R", (), {"offset": offset, "file": 0})()


def test_draws_on_a_terminal_and_clears():
    tty = FakeTTY()
    bar = Progress(1000, "collapse", stream=tty)
    assert bar.enabled
    bar.update(500)
    text = tty.getvalue()
    assert "\r" in text and "collapse" in text and " 50%" in text and "1 samples" in text
    bar.close()
    assert tty.getvalue().endswith("\r\x1b[K")


def test_silent_when_not_a_terminal():
    buf = io.StringIO()
    items = [Item(i * 100) for i in range(50)]
    with perfdata.open(str(SAMPLES / "threads.fp.data")) as pf:
        got = list(sample_progress(iter(items), pf, "x", stream=buf))
        assert input_size(pf) == (SAMPLES / "threads.fp.data").stat().st_size
    assert got == items and buf.getvalue() == ""


def test_terminal_bar_counts_samples():
    tty = FakeTTY()
    items = [Item(i * 100) for i in range(5)]
    with perfdata.open(str(SAMPLES / "threads.fp.data")) as pf:
        got = list(sample_progress(iter(items), pf, "report", stream=tty))
    assert got == items
    assert "report" in tty.getvalue() and tty.getvalue().endswith("\r\x1b[K")


def test_cli_stderr_has_no_bar_in_a_pipe():
    rc, out, err = run_cli(["collapse", str(SAMPLES / "threads.fp.data")])
    assert rc == 0 and "\r" not in err and out
