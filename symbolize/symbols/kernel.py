"""`KernelTables`: the kernel's symbols (kallsyms) by kernel build-id, and
the frames of a kernel address."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..addresses import address_for_lookup
from .frame import Frame
from .kallsyms import KernelSymbols

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..cachedir import CacheDir
    from ..warninglog import WarningLog


class KernelTables:
    """given: a KernelSymbols table (e.g. from a vmlinux) or a kallsyms
    file's path the caller gave, or None: then the tables are read from
    `files_for(build-id)`, the kallsyms files that may be that kernel's,
    best first (the first that has symbols)."""

    def __init__(self, given: KernelSymbols | str | None, cache: CacheDir, log: WarningLog,
                 files_for: Callable[[str | None], Iterable[str]]) -> None:
        self.given = given
        self.cache = cache
        self.log = log
        self.files_for = files_for
        self._tables: dict[str | None, KernelSymbols] = {}
        self._files: dict[str | None, str | None] = {}     # build-id -> the kallsyms file read

    def table(self, bid: str | None) -> KernelSymbols:
        """The kernel's symbol table for a (normalized) build-id."""
        if bid in self._tables:
            return self._tables[bid]
        src = self.given
        source = src if isinstance(src, str) else None
        if isinstance(src, KernelSymbols):
            table = src
        elif isinstance(src, str):
            table = KernelSymbols.from_file(src, self.cache)
        else:
            table = KernelSymbols()
            for path in self.files_for(bid):
                table = KernelSymbols.from_file(path, self.cache)
                if len(table):
                    source = path
                    break
        self.log.drain(table)
        if len(table) == 0:
            self.log.warn("[kernel.kallsyms]", "missing", "[kernel.kallsyms]: no kernel symbols")
        self._tables[bid] = table
        self._files[bid] = source if len(table) else None
        return table

    def file(self, bid: str | None) -> str | None:
        """The kallsyms file table(bid) read (perf's saved copy, a given
        file, or /proc/kallsyms of the same kernel); None when the symbols
        came from elsewhere (a vmlinux) or nowhere."""
        self.table(bid)
        return self._files.get(bid)

    def frames(self, table: KernelSymbols, path: str, bid: str | None, address: int,
               is_ret: bool, name: Callable[[str], str | None]) -> list[Frame]:
        """The frame of a kernel address (`name` prints a symbol's name)."""
        s = table.lookup(address_for_lookup(address, is_ret))
        if is_ret and (s is None or s.name.startswith("__pfx_")):
            # address - 1 is in the padding before a function (__pfx_*, or
            # none): the address is that function's first byte, not the end
            # of a call; a __pfx_ symbol is never the answer there.
            at = table.lookup(address)
            if at is not None and not at.name.startswith("__pfx_"):
                s = at
        if s is None:
            return [Frame(None, None, address, path, bid, None)]
        return [Frame(name(s.name), address - s.start, address, path, bid, "kallsyms")]
