"""`Profile.annotate()` (the library's face of `perfdata annotate`, issue
38) against the command: the same functions, instructions, samples, period
and shares as `annotate --json`, for each percent type and the functions
named; each source line's samples and period the sums of its
instructions'; the objects frozen."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import perfdata
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "threads.fp.data"
DEBUG = ROOT / "samples" / "buildids"

pytest.importorskip("capstone")


def _command(*extra: str) -> list[dict]:
    rc, out, err = run_cli(["annotate", str(SAMPLE), "--json", "--debug-dir", str(DEBUG)] +
                           list(extra))
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.parametrize("percent_type", ["local-period", "global-hits"])
def test_annotations_are_the_commands(percent_type: str) -> None:
    prof = perfdata.profile(SAMPLE, debug_dirs=[DEBUG])
    got = prof.annotate(percent_type=percent_type)
    want = _command("--percent-type", percent_type)
    assert [a.function for a in got] == [w["function"] for w in want] and len(got) >= 2
    for a, w in zip(got, want):
        assert (a.event, a.dso, a.build_id, a.start, a.samples, a.period, a.percent_type,
                a.problem) == (w["event"], w["dso"], w["build_id"], w["start"], w["samples"],
                               w["period"], w["percent_type"], w["problem"])
        assert [(i.address, i.text, i.samples, i.period, i.percent, i.srcline)
                for i in a.instructions] == \
            [(i["address"], i["text"], i["hits"], i["period"], i["percent"], i["srcline"])
             for i in w["instructions"]]
        assert [(p, s) for p, s in a.summary] == \
            [(line["percent"], line["srcline"]) for line in w["lines"]]
        for line in a.lines:
            mine = [i for i in a.instructions if i.srcline == line.srcline]
            assert line.samples == sum(i.samples for i in mine)
            assert line.period == sum(i.period for i in mine)
            assert abs(line.percent - sum(i.percent for i in mine)) < 1e-9
        assert sum(line.samples for line in a.lines) == a.samples
        assert [line.percent for line in a.lines] == sorted((line.percent for line in a.lines),
                                                            reverse=True)


def test_functions_named_and_frozen() -> None:
    prof = perfdata.profile(SAMPLE, debug_dirs=[DEBUG])
    (a,) = prof.annotate("hot_beta", percent_limit=100)
    assert a.function == "hot_beta" and a.samples == _command("hot_beta")[0]["samples"]
    for obj in (a, a.instructions[0], a.lines[0]):
        assert not hasattr(obj, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.__setattr__(dataclasses.fields(obj)[0].name, None)
    with pytest.raises(ValueError):
        prof.annotate(percent_type="period")
