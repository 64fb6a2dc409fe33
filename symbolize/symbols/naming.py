"""`AddressNamer`: the frames of one address of a binary, from its symbol
table, its DWARF (inline frames, source lines) and the answers of earlier
runs."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..addresses import address_for_lookup, ends_call
from .frame import Frame

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..elffile import Binary
    from .answers import AddressAnswers
    from .lines import LineInfo
    from .symtab import SymbolTable


def call_precedes(binary: Binary | None, svma: int) -> bool:
    """Whether the instruction before svma in the binary is a call (the
    return-address rule applies); True where the bytes cannot be read."""
    b = binary
    if b is None or svma < 1:
        return True
    end = b.svma_to_file_offset(svma - 1)
    if end is None:
        return True
    n = 15
    while n > 1 and b.svma_to_file_offset(svma - n) != end + 1 - n:
        n -= 1                      # not past the start of the segment
    code = b.read_code(end + 1 - n, n)
    if code is None:
        return True
    got = ends_call(bytes(code), b.machine)
    return True if got is None else got


class AddressNamer:
    """Names addresses of binaries: `name` prints a symbol's name in the
    symbolizer's mode; `drain` says what reading a binary had to say.
    inline: add the inlined frames (and their source lines); srcline: the
    source line of the outermost frame alone."""

    def __init__(self, name: Callable[[str | None], str | None],
                 drain: Callable[[Binary], None], inline: bool, srcline: bool) -> None:
        self.name = name
        self.drain = drain
        self.inline = inline
        self.srcline = srcline

    def frames(self, binary: Binary | None, table: SymbolTable | None, lines: LineInfo | None,
               answers: AddressAnswers | None, path: str, bid: str | None, svma: int,
               is_ret: bool) -> list[Frame]:
        """The frames at svma, innermost first (from the answers of earlier
        runs where they are kept)."""
        if answers is not None:
            key = svma * 2 + is_ret
            known = answers.known.get(key)
            if known is not None:
                return [Frame(known[0], known[1], svma, path, bid, known[2])]
            found = self.frames_anew(binary, table, lines, path, bid, svma, is_ret)
            # (no inline frames, no srcline: answers are kept for plain
            # lookups only, so the one frame is the whole answer)
            answers.add(key, (found[0].name, found[0].offset, found[0].source))
            return found
        return self.frames_anew(binary, table, lines, path, bid, svma, is_ret)

    def frames_anew(self, binary: Binary | None, table: SymbolTable | None,
                    lines: LineInfo | None, path: str, bid: str | None, svma: int,
                    is_ret: bool) -> list[Frame]:
        # A return address is looked up at address - 1 (the call) only where
        # a call ends there: a frame-pointer walk also yields addresses that
        # no call pushed (a function's first byte after a jmp), named as is.
        if is_ret and not call_precedes(binary, svma):
            is_ret = False
        addr = address_for_lookup(svma, is_ret)
        sym = table.lookup(addr) if table is not None else None
        if sym is None and addr != svma and table is not None:
            # address - 1 falls between functions (alignment padding): the
            # value was a function's entry found on the stack (makecontext's
            # __start_context, a jump-entered function), not the end of a call:
            # name what is at the address itself, as perf does.
            sym = table.lookup(svma)
            if sym is not None:
                addr = svma
        inl = []
        srcline = None
        if lines is not None and (self.inline or self.srcline):
            if self.inline:
                inl = lines.frames(addr)
                self.drain(lines.binary)
                if inl:
                    srcline = inl[-1].srcline
            else:
                srcline = lines.srcline(addr)
                self.drain(lines.binary)
        out = []
        for f in inl[:-1]:
            out.append(Frame(self.name(f.function) if f.function else None, None, svma, path,
                             bid, "debuginfo", True, f.srcline))
        if sym is not None:
            out.append(Frame(self.name(sym.name), svma - sym.start, svma, path, bid,
                             sym.source, False, srcline))
        elif inl and inl[-1].function:
            # No symbol (stripped, or a gap), but DWARF names the function.
            out.append(Frame(self.name(inl[-1].function), None, svma, path, bid,
                             "debuginfo", False, srcline))
        else:
            # (no-symbols: the binary has none to name any address with, but
            # PLT stubs: addr2line, which perf asks for a line, names nothing)
            bare = table is not None and table.sources in ((), ("plt",))
            out.append(Frame(None, None, svma, path, bid, "no-symbols" if bare else None, False,
                             srcline))
        return out
