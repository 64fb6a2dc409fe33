"""Small helpers the tests share: a time limit for code that could hang, and
the LEB128 encoding for building DWARF by hand."""
import signal
from contextlib import contextmanager


class Hang(Exception):
    """A run took longer than its time limit."""


@contextmanager
def time_limit(seconds, error=Hang, what="no answer"):
    """Raise `error` in the main thread when the block runs over `seconds`."""
    def on_alarm(signum, frame):
        raise error("%s after %s s" % (what, seconds))
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def uleb(value):
    """Unsigned LEB128."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def sleb(v):
    """Signed LEB128."""
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if (v == 0 and not b & 0x40) or (v == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)
