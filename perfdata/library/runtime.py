"""The interpreter as a pass of the library finds it and leaves it: set, for
the pass only, as the commands set it for their whole run (perfdata/cli.py),
so that `perfdata.profile(path).report()` costs what `perfdata report` does.

* The collector: frozen (what was made before the pass is not walked
  again), and a young collection every 500,000 net new objects rather than
  700: the run keeps caches of small objects and makes no cycles on its hot
  paths, and CPython's default walked the caches' frames again and again (a
  tenth of a run, measured for the commands).  Put back after the pass:
  gc.unfreeze() (what the program froze itself is unfrozen too, which
  changes only how often the collector looks at it; telling the two apart
  needs gc.get_freeze_count(), a walk of every frozen object: 47 ms after a
  command's run in the same process).
* The standard modules construct imports and never uses (its debugger's
  pdb, inspect, traceback; pickle and hashlib of two of its classes): while
  perfdata's modules are imported, a stand-in in sys.modules takes each
  one's place and loads the real module at its first use (36 ms of a
  `-g` report's 200, measured with benchmarks/bench_library.py).  After
  the pass sys.modules holds no stand-in: the program imports those modules
  as it always does.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

# (perfdata/cli.py's GC_YOUNG_THRESHOLD, GC_OLDER_THRESHOLDS, UNUSED_MODULES)
GC_YOUNG_THRESHOLD = 500000
GC_OLDER_THRESHOLDS = (100, 100)
UNUSED_MODULES = ("pdb", "inspect", "traceback", "pickle", "hashlib")


def _stand_in(name: str) -> types.ModuleType:
    """A module that imports `name` at the first read of an attribute and
    then holds what the real one holds."""
    stand_in = types.ModuleType(name, "(imported at its first use)")

    def __getattr__(attr: str) -> Any:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        real = importlib.import_module(name)
        stand_in.__dict__.update(real.__dict__)
        return getattr(real, attr)

    stand_in.__getattr__ = __getattr__  # type: ignore[method-assign]  # (PEP 562)
    return stand_in


@contextlib.contextmanager
def as_the_commands() -> Iterator[None]:
    """The collector and the unused modules as the commands have them,
    for the body of the with statement only."""
    global _depth
    if _depth:                  # (within another: that one sets and puts back)
        yield
        return
    placed = {}
    for name in UNUSED_MODULES:
        if name not in sys.modules:
            sys.modules[name] = placed[name] = _stand_in(name)
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *GC_OLDER_THRESHOLDS)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        for name, stand_in in placed.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


_depth = 0      # the windows open now (a view's pass within profile(): one)
