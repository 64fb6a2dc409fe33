"""A kernel symbol table whose names stay in the kallsyms text it was parsed
from: `TextSymbols`, and the cache file that holds it (kallsyms.py's, for a
text of printable ASCII, as a real kallsyms is).

The file holds, after its header, each kept symbol's start and size (native
64-bit: KernelSymbols.bounds(), for a search in compiled code), where its
name is in the text (native 32-bit: a text is read up to 256 MiB) and a
flags byte (its binding; MODULE: its line names a module), then the
identity of the text.
A warm run maps the text as well (perf's saved copy: the file whose
identity it is; /proc/kallsyms: the text it read and hashed), so a first
run writes 21 bytes a symbol instead of the 33 and the names of the
columns it kept before (7 MB for this kernel's 121,000 symbols: writing a
file of that size into the page cache cost a first run 5-90 ms CPU on this
project's machines).  A name is cut out of the text when its symbol is
looked up, by the parse's rules: up to the next blank, and the rest of the
line, stripped, is a module where it is "[module]".
"""
from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import mmap
    from collections.abc import Iterator, Sequence

# magic (b"kllsyms6" in native byte order), symbols, the text's size, the
# identity's size
HEADER = struct.Struct("=QQQQ")
MAGIC = 0x3673_6d79_736c_6c6b
MODULE = 8
# What the C parse takes (and this layout holds): printable ASCII, tab, newline.
_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\n"
_NAME = re.compile(rb"[^ \t\n]*")
# (the blanks and the two tokens before a line's name, as str.split sees them)
_BEFORE_NAME = re.compile(r"\s*\S+\s+\S+\s+")
# flags -> 1 where MODULE is set, else 0
_HAS_MODULE = bytes(1 if b & MODULE else 0 for b in range(256))


class KernelSymbol(NamedTuple):
    name: str
    start: int
    size: int
    module: str | None       # None for the kernel itself

    @property
    def end(self) -> int:
        return self.start + self.size


def printable(text: bytes | bytearray | str) -> bool:
    """Whether a text can be laid out so: printable ASCII, tabs and
    newlines only, under 4 GiB."""
    if isinstance(text, str):
        if not text.isascii():
            return False
        text = text.encode("ascii")
    return len(text) < 1 << 32 and not bytes(text).translate(None, _PRINTABLE)


def name_offset(line: str) -> int:
    """Where the name (the third token) of a kallsyms line starts."""
    m = _BEFORE_NAME.match(line)
    return m.end() if m else len(line)


class TextSymbols:
    """The symbols of a table laid out as above: the layout's columns over
    the text; a KernelSymbol is made when one is asked for."""
    __slots__ = ("text", "starts", "sizes", "name_at", "flags")

    def __init__(self, text: bytes | mmap.mmap, starts: Sequence[int], sizes: Sequence[int],
                 name_at: Sequence[int], flags: Sequence[int]) -> None:
        self.text, self.starts, self.sizes = text, starts, sizes
        self.name_at, self.flags = name_at, flags

    @classmethod
    def of(cls, image: bytes | bytearray | mmap.mmap, count: int,
           text: bytes | mmap.mmap) -> TextSymbols | None:
        """The symbols of a cache file's bytes (its header read: the count),
        or None where they do not fit the file or the text."""
        at = HEADER.size
        if len(image) < at + 21 * count:
            return None
        view = memoryview(image)
        return cls(text, view[at:at + 8 * count].cast("Q"),
                   view[at + 8 * count:at + 16 * count].cast("Q"),
                   view[at + 16 * count:at + 20 * count].cast("I"),
                   view[at + 20 * count:at + 21 * count])

    def __len__(self) -> int:
        return len(self.starts)

    def binding(self, i: int) -> int:
        return self.flags[i] & 3

    def __getitem__(self, i: int) -> KernelSymbol:
        if i < 0:
            i += len(self.starts)
        text = self.text
        at = min(self.name_at[i], len(text))
        m = _NAME.match(text, at)       # (matches, if only "")
        name_end = m.end() if m is not None else at
        name = text[at:name_end].decode("ascii", "replace")
        module = None
        if self.flags[i] & MODULE:
            end = text.find(b"\n", name_end)
            rest = text[name_end:end if end >= 0 else len(text)].strip(b" \t")
            if len(rest) > 2 and rest[:1] == b"[" and rest[-1:] == b"]":
                module = rest[1:-1].decode("ascii", "replace")
        return KernelSymbol(name, self.starts[i], self.sizes[i], module)

    def __iter__(self) -> Iterator[KernelSymbol]:
        return (self[i] for i in range(len(self.starts)))

    def kernel_bounds(self) -> tuple[int, int] | None:
        """From the first symbol of no module to the end of the last."""
        own = bytes(self.flags).translate(_HAS_MODULE)
        first, last = own.find(b"\0"), own.rfind(b"\0")
        if first < 0:
            return None
        return self.starts[first], self.starts[last] + self.sizes[last]


def layout(starts: Sequence[int], sizes: Sequence[int], bindings: Sequence[int],
           modules: Sequence[str], name_at: Sequence[int]) -> bytearray:
    """The cache file's bytes (the header's room left zero) of a table parsed
    in Python (the same bytes as the C lays out as it parses)."""
    flags = bytearray(bindings)
    for i in range(len(starts)):
        if modules[i]:
            flags[i] |= MODULE
    from array import array
    return bytearray(HEADER.size) + array("Q", starts).tobytes() + \
        array("Q", sizes).tobytes() + array("I", name_at).tobytes() + flags
