"""The packages' faces: a package's public names, each imported from its
module at its first use (PEP 562's module __getattr__), so that a command's
start-up pays only for the modules it uses.  Each face keeps its map of
name -> module (`_MODULE_OF`) and the TYPE_CHECKING imports of the same
names for the type checker; its `__getattr__` is `import_at_first_use`.
(symbolize's face keeps its own few lines: symbolize imports nothing of
perfdata.)
"""
from __future__ import annotations

import importlib
import sys
from typing import Any


def import_at_first_use(package: str, module_of: dict[str, str], name: str) -> Any:
    """`name` of `package` (its __name__): imported from its module (a
    module of the package, as module_of names it, with or without a leading
    dot) and kept in the package, so that the next use finds it there."""
    module = module_of.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (package, name))
    value = getattr(importlib.import_module("." + module.lstrip("."), package), name)
    setattr(sys.modules[package], name, value)
    return value
