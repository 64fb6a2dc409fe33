"""Which per-sample core a run uses: the compiled extension or the pure-Python
reference.

The compiled core (a C extension built by `pip install .` where a compiler is
present) is optional: without it, or with PERFDATA_CORE=pure in the
environment, every command runs the pure-Python path, which stays the
reference the compiled one is tested against byte for byte."""
from __future__ import annotations

import importlib
import os
import types

#: the environment variable that forces the pure-Python path ("pure")
CORE_ENV = "PERFDATA_CORE"


def _extension(name: str) -> types.ModuleType | None:
    """The compiled module perfdata.core.`name`, or None where it is not
    built or is turned off (PERFDATA_CORE=pure)."""
    if os.environ.get(CORE_ENV, "").lower() == "pure":
        return None
    try:
        return importlib.import_module("perfdata.core." + name)
    except ImportError:
        return None


def compiled() -> types.ModuleType | None:
    """The compiled per-sample core (script, collapse, report), or None."""
    return _extension("_core")


def compiled_records() -> types.ModuleType | None:
    """The compiled record walk (stats), or None."""
    return _extension("_records")


def compiled_unwind() -> types.ModuleType | None:
    """The compiled walk of the DWARF unwinder (perfdata/resolve/unwinding.py
    takes it through ResolveOptions.compiled_unwind), or None."""
    return _extension("_unwind")


def describe() -> str:
    """One line for `perfdata --version`: which core runs and why."""
    if os.environ.get(CORE_ENV, "").lower() == "pure":
        return "core: pure Python (%s=pure)" % CORE_ENV
    built = [name for name, module in (("samples", compiled()), ("record walk", compiled_records()))
             if module is not None]
    if not built:
        return "core: pure Python (the compiled core is not built)"
    if len(built) == 1:
        return "core: compiled %s, pure Python for the rest (one extension is not built)" % built[0]
    return "core: compiled (C: samples and record walk)"
