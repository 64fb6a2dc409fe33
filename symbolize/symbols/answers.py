"""What a binary's addresses were named, kept across runs: `AddressAnswers`.

A frame-pointer profile of a compiler meets tens of thousands of distinct
addresses in each binary (cc1's garbage return addresses among them), and
each costs the symbolizer time the first time a run meets it: the
return-address rule (are the bytes before it a call?), the table's bisect,
the demangler.  None of that changes while the binary, the symbol table's
sources and the naming mode stay: the answers are kept by the identity of
the symbol table (build-id and the kinds of file that went in, as its own
cache file is named) and the mode, so the next run of the same program, or
another profile of it, reads them instead of working them out.

The file is a marshal document: [format tag, {key: (name, offset, source)}],
key = svma * 2 + is_return_address.  It is read whole (a fraction of the
time it takes to work the answers out again) and checked entry by entry;
a damaged, foreign or oversized file is no answers.
"""
from __future__ import annotations

import marshal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..cachedir import CacheDir

    Answer = tuple[str | None, int | None, str | None]

# Answers kept per binary at most (a file of ~30 bytes an answer); past it a
# run's new answers are not kept.
MAX_ANSWERS = 1 << 19
_FORMAT: str | None = None
# The modules whose code decides an answer: a change to any makes the kept
# answers stale, so their text is part of the format tag.
_ANSWER_MAKERS = ("symbolizer.py", "symbols/naming.py", "symbols/tables.py",
                  "symbols/symtab.py", "symbols/plt.py", "debuginfo/minidebuginfo.py",
                  "elffile.py", "elfheader.py", "elfcompress.py", "symbols/demangle.py",
                  "symbols/rust_demangle.py",
                  "addresses.py", "symbols/answers.py")


def _format() -> str:
    global _FORMAT
    if _FORMAT is None:
        from ..cachedir import code_tag
        _FORMAT = code_tag("answers-1", _ANSWER_MAKERS)
    return _FORMAT


class AddressAnswers:
    """The answers kept for one symbol table in one naming mode (a dict
    the symbolizer reads and adds to), and their file."""
    __slots__ = ("cache", "path", "known", "_added")

    def __init__(self, cache: CacheDir, path: str) -> None:
        self.cache = cache
        self.path = path
        self.known: dict[int, Answer] = _load(cache, path)
        self._added = 0

    def add(self, key: int, answer: Answer) -> None:
        if len(self.known) < MAX_ANSWERS:
            self.known[key] = answer
            self._added += 1

    def save(self) -> bool:
        """Write the answers if this run added some: merged with what the
        file holds now (another worker of a -j run may have written it since
        it was read), atomically."""
        if not self._added:
            return False
        self._added = 0
        merged = _load(self.cache, self.path)
        if len(merged) + len(self.known) > MAX_ANSWERS:
            merged = {}
        merged.update(self.known)
        return self.cache.write(self.path, marshal.dumps([_format(), merged]))


def _load(cache: CacheDir, path: str) -> dict[int, Answer]:
    data = cache.read(path, MAX_ANSWERS * 64)
    if data is None:
        return {}
    try:
        doc: Any = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if not (type(doc) is list and len(doc) == 2 and doc[0] == _format() and
            type(doc[1]) is dict):
        return {}
    answers = doc[1]
    for key, answer in answers.items():
        if not (type(key) is int and key >= 0 and type(answer) is tuple and len(answer) == 3
                and (answer[0] is None or type(answer[0]) is str)
                and (answer[1] is None or type(answer[1]) is int)
                and (answer[2] is None or type(answer[2]) is str)):
            return {}
    return answers
