"""Tracepoint fields as perf 6.1's python_process_tracepoint() passes them.

libtraceevent's conventions, kept because scripts see them:

* The event's own fields only (not the common_* ones), in format order.
* An array field (`char comm[16]`, `unsigned long args[6]`,
  `__data_loc char[] filename`) is a str when it is a char/u8/s8 array whose
  last byte is NUL and whose text up to the first NUL is printable, else a
  bytearray of its bytes; once a field fails that test it stays a bytearray
  for the rest of the run (perf clears the field's string flag).
* Any other field is read as an unsigned number of its size (1, 2, 4 or 8
  bytes; other sizes read 0); only an 8-byte signed field comes out negative
  (perf converts the unsigned value to a C long), so `int prio = -1` is
  4294967295 as perf gives it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..format import EventFormat, FieldFormat

# C's isprint() or isspace() in the C locale
_PRINTABLE = frozenset(range(0x20, 0x7f)) | frozenset(b"\t\n\v\f\r")


def _printable_array(data: bytes) -> bool:
    """perf's is_printable_array()."""
    if not data or data[-1] != 0:
        return False
    for byte in data[:-1]:
        if byte == 0:
            break
        if byte not in _PRINTABLE:
            return False
    return True


class FieldReader:
    """The handler arguments of one tracepoint's samples (one per event of
    the file: it remembers which string fields turned to bytearrays)."""

    def __init__(self, event_format: EventFormat) -> None:
        self.format = event_format
        self.little = event_format.little
        self.fields = [f for f in event_format.fields if not f.is_common]
        self.names = [f.name for f in self.fields]
        self.not_strings: set[str] = set()
        common = {f.name: f for f in event_format.fields if f.is_common}
        self.common_pid = common.get("common_pid")

    def number(self, raw: bytes, offset: int, size: int) -> int:
        if size not in (1, 2, 4, 8) or offset < 0 or offset + size > len(raw):
            return 0
        return int.from_bytes(raw[offset:offset + size], "little" if self.little else "big")

    def value(self, field: FieldFormat, raw: bytes) -> Any:
        if field.is_array or field.is_dynamic_array:
            offset, length = field.offset, field.size
            if field.is_dynamic:
                loc = self.number(raw, offset, length)
                offset, length = loc & 0xffff, loc >> 16
                if field.is_rel:
                    offset += field.offset + field.size
            data = raw[offset:offset + length]
            if field.is_string and field.name not in self.not_strings:
                if _printable_array(data):
                    end = data.find(b"\0")
                    return data[:end].decode("utf-8", "replace")
                self.not_strings.add(field.name)
            return bytearray(data)
        value = self.number(raw, field.offset, field.size)
        if field.signed and field.size == 8 and value >= 1 << 63:
            value -= 1 << 64
        return value

    def values(self, raw: bytes) -> list[Any]:
        return [self.value(f, raw) for f in self.fields]

    def pid(self, raw: bytes) -> int:
        """common_pid as perf reads it (raw_field_value into an int)."""
        f = self.common_pid
        if f is None:
            return 0
        value = self.number(raw, f.offset, f.size) & 0xffffffff
        return value - (1 << 32) if value >= 1 << 31 else value


def define_event_symbols(event_format: EventFormat, handler_name: str, long_size: int,
                         call: Callable[[str, tuple[Any, ...]], None]) -> None:
    """perf's define_event_symbols(): tell the script (Core's
    define_flag_field, define_flag_value, define_symbolic_field and
    define_symbolic_value) the __print_flags and __print_symbolic tables of
    the event's print fmt, in the order of its arguments."""
    from ..tracefmt import parse_print_fmt
    try:
        parsed = parse_print_fmt(event_format, long_size)
    except Exception:       # (a print fmt perf could not parse defines nothing)
        return
    if parsed.failed:
        return
    state = {"field": ""}
    for segment in parsed.segments:
        for arg in (getattr(segment, "arg", None), getattr(segment, "len_arg", None)):
            if arg is not None:
                _define(arg, handler_name, state, call, 0)


# perf's eval_flag() names (util/trace-event-parse.c); other names are 0
_FLAG_NAMES = {"HI_SOFTIRQ": 0, "TIMER_SOFTIRQ": 1, "NET_TX_SOFTIRQ": 2, "NET_RX_SOFTIRQ": 3,
               "BLOCK_SOFTIRQ": 4, "IRQ_POLL_SOFTIRQ": 5, "TASKLET_SOFTIRQ": 6,
               "SCHED_SOFTIRQ": 7, "HRTIMER_SOFTIRQ": 8, "RCU_SOFTIRQ": 9,
               "HRTIMER_NORESTART": 0, "HRTIMER_RESTART": 1}


def _eval_flag(text: str) -> int:
    """perf's eval_flag(): a number (strtoull, base from its prefix) or a
    known name, as the C long PyLong_FromLong makes of it."""
    from ..tracefmt.evaluate import strtoull
    if text[:1].isdigit() and text[:1].isascii():
        value = strtoull(text)
    else:
        value = _FLAG_NAMES.get(text, 0)
    return value - (1 << 64) if value >= 1 << 63 else value


def _define(arg: Any, ev: str, state: dict[str, str],
            call: Callable[[str, tuple[Any, ...]], None], depth: int) -> None:
    if arg is None or depth > 64:
        return
    kind = getattr(arg, "kind", "null")
    if kind == "atom":
        call("define_flag_value", (ev, state["field"], 0, getattr(arg, "atom", "")))
    elif kind == "field":
        state["field"] = getattr(arg, "name", "")
    elif kind in ("flags", "symbol"):
        _define(getattr(arg, "field", None), ev, state, call, depth + 1)
        if kind == "flags":
            call("define_flag_field", (ev, state["field"], getattr(arg, "delim", None) or ""))
            for value, text in getattr(arg, "flags", ()):
                call("define_flag_value", (ev, state["field"], _eval_flag(value), text))
        else:
            call("define_symbolic_field", (ev, state["field"]))
            for value, text in getattr(arg, "symbols", ()):
                call("define_symbolic_value", (ev, state["field"], _eval_flag(value), text))
    elif kind in ("hex", "hexstr"):
        _define(getattr(arg, "field", None), ev, state, call, depth + 1)
        _define(getattr(arg, "size", None), ev, state, call, depth + 1)
    elif kind == "intarray":
        for name in ("field", "count", "el_size"):
            _define(getattr(arg, name, None), ev, state, call, depth + 1)
    elif kind == "type":
        _define(getattr(arg, "item", None), ev, state, call, depth + 1)
    elif kind == "op":
        _define(getattr(arg, "left", None), ev, state, call, depth + 1)
        _define(getattr(arg, "right", None), ev, state, call, depth + 1)
