"""Standard modules imported only when first used: `defer_modules`.

construct's package imports its debugger's modules (construct.debug: pdb,
inspect, traceback) and those of two classes perfdata never uses (Pickled:
pickle; Checksum and compiled parsers: hashlib, which loads OpenSSL): 12 ms,
a third of perfdata's imports, on every run.  A stand-in put in sys.modules
before construct is imported takes their place; the `import` statements bind
it and nothing more, and the first attribute anyone reads of it imports the
real module (the stand-in then holds what the real one holds).

importlib.util.LazyLoader cannot serve here: an `import` statement reads the
module's __spec__, which makes a lazy module load at once.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any

_stand_ins: dict[str, types.ModuleType] = {}


def defer_modules(*names: str) -> None:
    """A stand-in for each module of `names` not imported yet."""
    for name in names:
        if name not in sys.modules:
            sys.modules[name] = _stand_ins[name] = _stand_in(name)


def still_deferred() -> list[str]:
    """The deferred modules not imported yet (their stand-in unused)."""
    return sorted(name for name, stand_in in _stand_ins.items()
                  if sys.modules.get(name) is stand_in)


def _stand_in(name: str) -> types.ModuleType:
    stand_in = types.ModuleType(name, "(imported at its first use)")

    def __getattr__(attr: str) -> Any:
        # (called only for what the stand-in does not hold: before the
        # import, everything; after it, names the real module lacks too)
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        real = importlib.import_module(name)
        stand_in.__dict__.update(real.__dict__)
        return getattr(real, attr)

    stand_in.__getattr__ = __getattr__  # type: ignore[method-assign]  # (a module's __getattr__, PEP 562)
    return stand_in

