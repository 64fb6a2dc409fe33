"""Byte sources the reader walks: a regular file read in chunks, or a pipe.

Records are at most 64 KiB (u16 size), but AUXTRACE and HEADER_TRACING_DATA
carry payloads after the record that may be much larger; those are skipped by
seeking (or by reading and dropping, on a pipe), never held whole.  Memory is
bounded by the chunk size plus the largest record.
"""
from __future__ import annotations

import io
import os
import stat
import sys
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import struct

    from .errors import InputName

CHUNK = 1 << 20


class ByteSource:
    """Sequential reads from `start` to `end` (None: to EOF) of a file object."""

    def __init__(self, fileobj: BinaryIO, start: int = 0, end: int | None = None,
                 seekable: bool = True, consumed: bytes = b"") -> None:
        self.f = fileobj
        self.seekable = seekable
        self.pos = start            # file offset of buf[0]
        self.end = end
        self.buf = consumed
        self.view = memoryview(consumed)
        self.head = 0               # index in buf of the next unread byte
        self.eof = False            # a read found the end of the input
        # Bytes before head a refill keeps (a pipe's recovery looks back
        # into the record just read; it cannot seek).
        self.keep = 0
        if seekable:
            self.f.seek(start)

    @property
    def offset(self) -> int:
        """File offset of the next unread byte."""
        return self.pos + self.head

    def _fill(self, need: int) -> bool:
        """Make `need` bytes available at head, if the input has them."""
        avail = len(self.buf) - self.head
        if avail >= need:
            return True
        want = max(need - avail, CHUNK)
        if self.end is not None:
            want = min(want, self.end - (self.pos + len(self.buf)))
        keep = min(self.head, self.keep)
        chunks = [self.buf[self.head - keep:]]
        got = avail
        if self.seekable and want > 0:
            # The file object is shared (feature sections are read from it
            # while records stream, e.g. a lazy OSRELEASE): read from where
            # this source left off, not from wherever the file now points.
            self.f.seek(self.pos + len(self.buf))
        while got < need and want > 0:
            data = self.f.read(want)
            if not data:
                self.eof = True
                break
            chunks.append(data)
            got += len(data)
            want -= len(data)
        self.pos += self.head - keep
        self.buf = b"".join(chunks)
        self.view = memoryview(self.buf)
        self.head = keep
        return len(self.buf) - keep >= need

    def peek(self, n: int) -> memoryview:
        """memoryview of the next n bytes (fewer at the end of input)."""
        self._fill(n)
        return memoryview(self.buf)[self.head:self.head + n]

    def take(self, n: int) -> memoryview:
        view = self.peek(n)
        self.head += len(view)
        return view

    def skip(self, n: int) -> int:
        """Skip n bytes; return how many were really there."""
        avail = len(self.buf) - self.head
        if n <= avail:
            self.head += n
            return n
        skipped = avail
        rest = n - avail
        self.pos += len(self.buf)
        self.buf, self.head = b"", 0
        self.view = memoryview(self.buf)
        if self.end is not None:
            rest_limit = self.end - self.pos
            if rest < rest_limit:
                rest_limit = rest
        else:
            rest_limit = rest
        if self.seekable:
            size = os.fstat(self.f.fileno()).st_size if hasattr(self.f, "fileno") else None
            limit = self.pos + rest_limit
            if size is not None:
                limit = min(limit, size)
            self.f.seek(limit)
            skipped += limit - self.pos
            self.pos = limit
        else:
            while rest_limit > 0:
                data = self.f.read(min(rest_limit, CHUNK))
                if not data:
                    self.eof = True
                    break
                skipped += len(data)
                rest_limit -= len(data)
                self.pos += len(data)
        return skipped

    def next_record(self,
                    header: struct.Struct) -> tuple[int, int | None, int, int, memoryview] | None:
        """(offset, type, misc, size, view) of the next record, `view` being
        the whole record (shorter than size when the input ends inside it), or
        None at the end of input.  `header` is the struct of perf_event_header;
        a size below 8 is returned as is for the caller to reject."""
        buf, head = self.buf, self.head
        if len(buf) - head >= 8:
            rtype, misc, size = header.unpack_from(buf, head)
            if size >= 8 and len(buf) - head >= size:
                self.head = head + size
                return self.pos + head, rtype, misc, size, self.view[head:head + size]
        offset = self.offset
        first = self.peek(8)
        if len(first) == 0:
            return None
        if len(first) < 8:
            return offset, None, 0, len(first), first
        rtype, misc, size = header.unpack_from(first)
        if size < 8:
            return offset, rtype, misc, size, first
        return (offset, rtype, misc, size) + (self.take(size),)

    @property
    def known_end(self) -> int | None:
        """Offset of the end of the input when known (a bound, or a read
        reached the end), else None."""
        if self.end is not None:
            return self.end
        return self.pos + len(self.buf) if self.eof else None

    def goto(self, offset: int) -> None:
        """Move to file offset `offset`.  Within the buffer (also backwards,
        to bytes already taken) no I/O is done.  A non-seekable source only
        goes forward past its buffer (reading and dropping the bytes); going
        back before the buffer raises ValueError."""
        if self.pos <= offset <= self.pos + len(self.buf):
            self.head = offset - self.pos
            return
        if not self.seekable:
            if offset < self.pos:
                raise ValueError("cannot go back to %#x in a pipe (buffer starts at %#x)"
                                 % (offset, self.pos))
            self.head = len(self.buf)
            self.skip(offset - self.offset)
            return
        self.pos = offset
        self.buf, self.head = b"", 0
        self.view = memoryview(self.buf)
        self.f.seek(offset)



def open_input(path: str | os.PathLike[str] | BinaryIO | None) -> tuple[BinaryIO, bool, InputName]:
    """Open a path (or '-' for standard input) for reading; refuse non-files."""
    if path == "-" or path is None:
        stream = getattr(sys.stdin, "buffer", sys.stdin)
        return stream, False, "<stdin>"  # type: ignore[return-value]
    if hasattr(path, "read"):
        seekable = False
        try:
            seekable = path.seekable()  # type: ignore[union-attr]  # (a stream: it has read)
        except (AttributeError, OSError, ValueError):
            pass
        return path, seekable, getattr(path, "name", "<stream>")  # type: ignore[return-value]
    st = os.stat(path)
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
        return open(path, "rb", buffering=0), False, str(path)
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(str(path))
    return open(path, "rb"), True, str(path)


def file_size(fileobj: BinaryIO) -> int | None:
    try:
        return os.fstat(fileobj.fileno()).st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None
