"""`Frame`: one name for an address, as every lookup answers."""
from __future__ import annotations

from typing import NamedTuple


class Frame(NamedTuple):
    name: str | None          # None: no symbol covers the address ([unknown])
    offset: int | None        # address - symbol start; None for inlined frames
    svma: int | None          # the address as given (not address - 1)
    dso_path: str
    build_id: str | None
    source: str | None        # symtab dynsym plt minidebuginfo debuginfo kallsyms perfmap;
                              # with no name: no-symbols (the binary has none but PLT stubs)
    inlined: bool = False
    srcline: str | None = None
