"""The compiled extensions; everything else (metadata, packages, scripts) is in
pyproject.toml.

Each extension is optional (`optional=True`): where no C compiler is present,
`pip install .` still succeeds and perfdata runs its pure-Python path, which
is the reference the compiled one is tested against (perfdata.core)."""
from setuptools import Extension, setup

# -O2 is the default of CPython's own flags; the sources are C99 with no
# dependency beyond Python.h.
_C_FLAGS = ["-std=c99", "-O2", "-Wall"]


def _extension(name: str, depends: tuple[str, ...] = ()) -> Extension:
    """The optional extension `name`, built from its one C file."""
    return Extension(name, sources=[name.replace(".", "/") + ".c"], depends=list(depends),
                     extra_compile_args=_C_FLAGS, optional=True)


EXTENSIONS = [
    _extension("perfdata.core._core", depends=("perfdata/core/_framing.h",)),
    # the record walk of `perfdata stats` (perfdata/core/records.py)
    _extension("perfdata.core._records", depends=("perfdata/core/_framing.h",)),
    # a first run's symbol tables: perf's fixups, ELF symbol sections and
    # kallsyms texts read (symbolize/symbols/symtab.py, kallsyms.py)
    _extension("symbolize.symbols._symtab"),
    # the DWARF unwinder's walk (perfdata/resolve/unwinding.py, compiled_walk)
    _extension("perfdata.core._unwind"),
    # the waits of a scheduler recording without stacks (perfdata/core/switches.py)
    _extension("perfdata.core._switches"),
]

setup(ext_modules=EXTENSIONS)
