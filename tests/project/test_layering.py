"""perfdata's import graph, read from its source (issue 40): floors, one way.

    format  (bytes -> records; extras: what pip adds, faces: names imported
             at first use; both known to all)
    session, tracefmt, buildid_archive     (records -> threads and maps)
    resolve                                (samples -> named stacks)
    run, core                              (a command over a file: -j, the
                                            compiled core's drivers)
    views, arrow                           (what the commands print)
    fleet, scripting                       (many files; perf's Python scripts:
                                            above the views they use)
    cli, completion, __main__, perfdata,   (the faces: command and library;
    library                                 perfdata.profile is library/)

with symbolize beside them: a module imports only its own floor's other
rooms (no circle between rooms) and the floors below; format and session
never import symbolize; above resolve, a module imports format and symbolize
only through their faces (`perfdata.format`, `symbolize`), never a module
inside them.  The imports of a function body and of TYPE_CHECKING count
alike.  What is not so yet is listed in LEFT, each with its reason, and the
list must shrink, never grow: a test fails on an edge neither allowed nor
listed, and on a listed edge that is gone.
"""
from __future__ import annotations

import os

from test_symbolize_layering import imports_of

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FLOORS = [
    {"format", "extras", "faces"},
    {"session", "tracefmt", "buildid_archive"},
    {"resolve"},
    {"run", "core"},
    {"views", "arrow"},
    {"fleet", "scripting"},
    {"cli", "completion", "__main__", "perfdata", "library"},
]
FLOOR = {room: n for n, rooms in enumerate(FLOORS) for room in rooms}
RESOLVE = FLOOR["resolve"]
# Room -> rooms it still imports against the floors, and why.  Shrinks.
LEFT: dict[tuple[str, str], str] = {}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "symbolize":
        return "symbolize"
    if parts[0] != "perfdata":
        return None
    return "perfdata" if len(parts) == 1 else parts[1]


def violations(graph: dict[str, set[str]]) -> dict[tuple[str, str], set[str]]:
    """(room, imported room or face breach) -> the modules that do it."""
    out: dict[tuple[str, str], set[str]] = {}
    rooms: dict[str, set[str]] = {}
    for module, imported in graph.items():
        here = room_of(module)
        assert here in FLOOR, "%s: a room on no floor (add it to FLOORS)" % module
        for target in imported:
            there = room_of(target)
            if there is None or there == here:
                continue
            bad = None
            if there == "symbolize":
                if FLOOR[here] < RESOLVE and here != "tracefmt":
                    bad = "symbolize"
                elif FLOOR[here] > RESOLVE and target != "symbolize":
                    bad = "symbolize internals"
            elif FLOOR[there] > FLOOR[here]:
                bad = there
            elif there == "format" and FLOOR[here] > RESOLVE and target != "perfdata.format":
                bad = "format internals"
            elif FLOOR[there] == FLOOR[here]:
                rooms.setdefault(here, set()).add(there)
            if bad:
                out.setdefault((here, bad), set()).add(module)
    for a, targets in rooms.items():
        for b in targets:
            if a in rooms.get(b, ()) and a < b:
                out.setdefault((a, b + " (circle)"), set()).add(a)
    return out


def test_floors_one_way():
    found = violations(imports_of(ROOT, "perfdata"))
    new = {k: sorted(v) for k, v in found.items() if k not in LEFT}
    assert new == {}, "imports against the floors: %s" % new
    gone = sorted(set(LEFT) - set(found))
    assert gone == [], "listed in LEFT, no longer so (remove them): %s" % gone


def test_the_check_sees_a_breach():
    planted = {"perfdata.format.records": {"perfdata.views.script"},
               "perfdata.session.maps": {"symbolize.elffile"},
               "perfdata.views.dump": {"perfdata.format.walker", "perfdata.format"},
               "perfdata.views.script": {"symbolize.symbols.symtab", "symbolize",
                                         "perfdata.scripting.engine", "perfdata.arrow"},
               "perfdata.arrow": {"perfdata.views.script"}}
    assert violations(planted) == {
        ("format", "views"): {"perfdata.format.records"},
        ("session", "symbolize"): {"perfdata.session.maps"},
        ("views", "format internals"): {"perfdata.views.dump"},
        ("views", "symbolize internals"): {"perfdata.views.script"},
        ("views", "scripting"): {"perfdata.views.script"},
        ("arrow", "views (circle)"): {"arrow"},
    }
