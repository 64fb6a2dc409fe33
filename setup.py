"""The compiled extensions; everything else (metadata, packages, scripts) is in
pyproject.toml.

Each extension is optional (`optional=True`): where no C compiler is present,
`pip install .` still succeeds and perfdata runs its pure-Python path, which
is the reference the compiled one is tested against (perfdata.core)."""
from setuptools import Extension, setup

# -O2 is the default of CPython's own flags; the sources are C99 with no
# dependency beyond Python.h.
_C_FLAGS = ["-std=c99", "-O2", "-Wall"]

EXTENSIONS = [
    Extension(
        "perfdata.core._core",
        sources=["perfdata/core/_core.c"],
        depends=["perfdata/core/_framing.h"],
        extra_compile_args=_C_FLAGS,
        optional=True,
    ),
    # the record walk of `perfdata stats` (perfdata/core/records.py)
    Extension(
        "perfdata.core._records",
        sources=["perfdata/core/_records.c"],
        depends=["perfdata/core/_framing.h"],
        extra_compile_args=_C_FLAGS,
        optional=True,
    ),
    # a first run's symbol tables: perf's fixups, ELF symbol sections and
    # kallsyms texts read (symbolize/symbols/symtab.py, kallsyms.py)
    Extension(
        "symbolize.symbols._symtab",
        sources=["symbolize/symbols/_symtab.c"],
        extra_compile_args=_C_FLAGS,
        optional=True,
    ),
    # the DWARF unwinder's walk (perfdata/resolve/unwinding.py, compiled_walk)
    Extension(
        "perfdata.core._unwind",
        sources=["perfdata/core/_unwind.c"],
        extra_compile_args=_C_FLAGS,
        optional=True,
    ),
    # the waits of a scheduler recording without stacks (perfdata/core/switches.py)
    Extension(
        "perfdata.core._switches",
        sources=["perfdata/core/_switches.c"],
        extra_compile_args=_C_FLAGS,
        optional=True,
    ),
]

setup(ext_modules=EXTENSIONS)
