"""Which per-sample core a run uses: the compiled extension or the pure-Python
reference.

The compiled core (a C extension built by `pip install .` where a compiler is
present) is optional: without it, or with PERFDATA_CORE=pure in the
environment, every command runs the pure-Python path, which stays the
reference the compiled one is tested against byte for byte."""
from __future__ import annotations

import os
import types

#: the environment variable that forces the pure-Python path ("pure")
CORE_ENV = "PERFDATA_CORE"


def compiled() -> types.ModuleType | None:
    """The compiled core's module, or None where it is not built or is
    turned off (PERFDATA_CORE=pure)."""
    if os.environ.get(CORE_ENV, "").lower() == "pure":
        return None
    try:
        from perfdata.core import _core  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _core


def describe() -> str:
    """One line for `perfdata --version`: which core runs and why."""
    if os.environ.get(CORE_ENV, "").lower() == "pure":
        return "core: pure Python (%s=pure)" % CORE_ENV
    module = compiled()
    if module is None:
        return "core: pure Python (the compiled core is not built)"
    return "core: compiled (%s)" % os.path.basename(module.__file__ or "_core")
