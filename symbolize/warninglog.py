"""`WarningLog`: what symbolizing had to say, each thing once.

Bad input never raises here: problems become messages, one per file and
kind of problem.  Every part of the symbolizer (finding files, building
tables, reading DWARF) says its warnings into one log, so their order is
the order in which the problems were met.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .elffile import Binary

if TYPE_CHECKING:
    from collections.abc import Iterator


class WarningLog:
    """The messages said (`messages`, a list the caller reads), and those
    held back for a later first use (`held`, `say_held`)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._said: set[tuple[str, str]] = set()
        # key -> the messages said inside a `held(key)` block, not yet said
        self._held: dict[tuple[str, str | None], list[str]] = {}

    def warn(self, path: str, kind: str, message: str) -> None:
        """Say `message`, unless a message of this kind about this path was
        said already."""
        key = (path, kind)
        if key not in self._said:
            self._said.add(key)
            self.messages.append(message)

    def drain(self, *objs: Any) -> None:
        """Say the warnings each object (a Binary, a locator, a table read
        from a file) collected, and clear them there."""
        for o in objs:
            if o is None:
                continue
            # A damaged file can fail at every address asked: one warning
            # names it, the first problem found.
            path = getattr(o, "path", None) if isinstance(o, Binary) else None
            for w in getattr(o, "warnings", ()):
                self.warn(path or w, "detail", w)
            try:
                o.warnings.clear()
            except AttributeError:
                pass

    @contextlib.contextmanager
    def held(self, key: tuple[str, str | None]) -> Iterator[None]:
        """The messages said inside the block, kept back for say_held(key)."""
        mark = len(self.messages)
        try:
            yield
        finally:
            said = self.messages[mark:]
            del self.messages[mark:]
        if said:
            self._held[key] = said

    def has_held(self) -> bool:
        return bool(self._held)

    def say_held(self, key: tuple[str, str | None]) -> None:
        """Say now what a held(key) block kept back (nothing twice)."""
        said = self._held.pop(key, None)
        if said:
            self.messages.extend(said)
