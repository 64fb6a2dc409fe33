"""Whether symbol tables are made by the compiled extension
(symbolize.symbols._symtab: perf's fixups, ELF symbol sections and kallsyms
texts read in C) or by the pure-Python code, which stays the reference the
compiled one is tested against (tests/symbolize/test_symbolize_compiled.py).

The extension is optional (built by `pip install .` where a C compiler is
present); PERFDATA_CORE=pure in the environment turns it off, as it turns
off perfdata's compiled core, so that one switch runs everything in Python."""
from __future__ import annotations

import importlib
import os
import types

#: the environment variable that forces the pure-Python path ("pure")
CORE_ENV = "PERFDATA_CORE"

# The compiled module once imported (None: not built)
_imported: list[types.ModuleType | None] = []

# The version of _symtab.c's entry points this code calls (SYMTAB_VERSION
# there): a module built from other sources is not used.
SYMTAB_VERSION = 3


def symtab_core() -> types.ModuleType | None:
    """The compiled module, or None where it is not built or is turned off."""
    if os.environ.get(CORE_ENV, "").lower() == "pure":
        return None
    if not _imported:
        try:
            module = importlib.import_module("._symtab", __package__)
        except ImportError:
            module = None
        _imported.append(module if getattr(module, "VERSION", None) == SYMTAB_VERSION
                         else None)
    return _imported[0]
