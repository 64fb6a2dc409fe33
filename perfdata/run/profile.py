"""The profile a command reads, opened one way for every command, and the
run's warnings, printed once each when it ends."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..format import PerfFile


def open_profile(path: str, strict: bool = False) -> PerfFile:
    """The PerfFile every command reads: `perfdata --strict` (stop at the
    first fault) reaches every command through here."""
    from ..format import PerfFile
    return PerfFile(path, strict=strict)


def print_warnings(pf: PerfFile, extra: Iterable[str] = ()) -> None:
    """Each warning of a run once on stderr (the file's, then the symbolizer's)."""
    seen = set()
    for message in list(pf.warnings) + list(extra):
        if message not in seen:
            seen.add(message)
            sys.stderr.write("perfdata: warning: %s\n" % message)
