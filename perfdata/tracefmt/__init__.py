"""Tracepoint fields as `perf script` prints them: libtraceevent's `print fmt`.

`format_trace_fields(event_format, raw)` returns the text perf 6.1 prints after
`event_name: ` for a tracepoint sample.  perf 6.1 (Debian's build) carries its
own copy of libtraceevent (tools/lib/traceevent, kernel 6.1) and loads no
plugins, so the text is the event's `print fmt:` evaluated the way that copy
evaluates it.  This module re-implements that behaviour, quirks included:

* The print fmt is tokenized and parsed once per event into a tree of print
  args, with libtraceevent's own operator handling (its priorities and its
  "rotate the tree" step, not a textbook C grammar) and its set of helpers:
  `__print_flags`, `__print_symbolic`, `__print_hex`, `__print_hex_str`,
  `__print_array`, `__get_str`, `__get_rel_str`, `__get_bitmask`,
  `__get_dynamic_array[_len]`, `__builtin_expect`.  Anything else (an unknown
  function such as `sizeof` or `__get_cpumask` in 6.1, a syntax error, too
  few arguments for the conversions) makes the event "failed": every sample
  then prints `[FAILED TO PARSE]` and ` field=value` for each non-common
  field, as tep_print_fields() does.
* Numbers are unsigned 64-bit throughout; a field is read unsigned whatever
  its sign; casts only mask (`(int)x` is `x & 0xffffffff`); `^` evaluates to 0.
* Conversions: `%d %i %u %x %X %o` with `#`, `-`, `0`, width, precision,
  `*` and the h/hh/l/ll/L/z length letters, the value passed as the C cast
  libtraceevent makes (char, short, int, long, long long); `%s`; `%p` (glibc's
  `0x...` or `(nil)`), `%ps %pS %pf %pF` (kernel symbol through `kallsyms`),
  `%pM %pm %pI4 %pI6 %pIS %pU %ph`.  Any other letter prints as `>c<` and
  consumes no argument (so `%c` prints `>c<`), as in 6.1.
* `%s` of a field as wide as a long prints it in bare hex (or the printk
  string at that address); `%s` of other fields prints their bytes up to NUL.

Nothing here raises on hostile input: reads past the raw data give 0 or
nothing, and an internal failure falls back to the `[FAILED TO PARSE]`
listing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .parser import parse_print_fmt
from .printer import Printer

if TYPE_CHECKING:
    from ..format.container import PerfFile
    from ..format.tracing import EventFormat, TracingData
    from .printer import Kallsyms

__all__ = ["format_trace_fields", "parse_print_fmt", "describe_raw_fields",
           "trace_long_size", "TracePrinter"]

# ---------------------------------------------------------------- entry points
def format_trace_fields(event_format: EventFormat, raw_bytes: bytes | memoryview | None, *,
                        long_size: int = 8, little: bool = True,
                        pevent_cmdlines: dict[int, str] | None = None,
                        kallsyms: Kallsyms | None = None,
                        printk_formats: dict[int, str] | None = None) -> str:
    """The text perf 6.1's `perf script` prints after `event_name: ` for a
    tracepoint sample of `event_format` (an EventFormat) with RAW data
    `raw_bytes`.

    `long_size` and `little` are the traced kernel's: trace_long_size(td) and
    TracingData.little; `kallsyms` resolves %pS-style pointers (see _lookup_symbol);
    `printk_formats` maps addresses to strings (TracingData.printk_formats)
    for `%s` of pointer-sized fields.  `pevent_cmdlines` is accepted for the
    caller's convenience: perf 6.1's pretty printer never uses them."""
    try:
        parsed = parse_print_fmt(event_format, long_size)
        printer = Printer(parsed, raw_bytes or b"", long_size, little, kallsyms,
                           printk_formats)
        if parsed.failed:
            out = printer.fields()
        else:
            try:
                out = printer.render(parsed.segments)
            except RecursionError:
                out = printer.fields()
        return out.decode("utf-8", "replace")
    except Exception:          # never raise on hostile input
        return describe_raw_fields(event_format, raw_bytes)


def trace_long_size(tracing_data: TracingData) -> int:
    """The long size perf 6.1 gives libtraceevent for a TracingData: the size
    of the `commit` field of the ring buffer's header_page ("the commit field
    in the page is of type long, use that instead, since it represents the
    kernel", trace-event-read.c), else the long size byte of the header."""
    try:
        for f in tracing_data.header_page_fields:
            if f.name == "commit" and f.size > 0:
                return f.size
        return tracing_data.long_size
    except Exception:
        return 8


def describe_raw_fields(event_format: EventFormat, raw_bytes: bytes | memoryview | None) -> str:
    """perf's `[FAILED TO PARSE] field=value ...` listing, built from
    EventFormat.decode() alone (the last-resort fallback)."""
    try:
        values = event_format.decode(bytes(raw_bytes or b""))
        parts = []
        for f in event_format.fields:
            if getattr(f, "is_common", False):
                continue
            v = values.get(f.name)
            if isinstance(v, (bytes, bytearray)):
                v = "ARRAY[" + ", ".join("%02x" % b for b in v) + "]"
            elif isinstance(v, list):
                v = "ARRAY[" + ", ".join(str(x) for x in v) + "]"
            parts.append(" %s=%s" % (f.name, "" if v is None else v))
        return "[FAILED TO PARSE]" + "".join(parts)
    except Exception:
        return "[FAILED TO PARSE]"


# ---------------------------------------------------------------- per file
class TracePrinter:
    """format_trace_fields() for the samples of one file: the file's event
    formats, long size, byte order and printk strings, read once.

        printer = TracePrinter.for_file(pf, kallsyms=table)   # None: no tracing data
        text = printer.format(sample_attr["config"], raw_bytes)  # None: unknown id
    """

    def __init__(self, tracing_data_bytes: bytes | memoryview,
                 kallsyms: Kallsyms | None = None) -> None:
        from ..format.tracing import parse_tracing_data
        data = bytes(tracing_data_bytes)
        td = parse_tracing_data(data)
        self.tracing_data = td
        self.events = td.events
        self.long_size = trace_long_size(td)
        self.little = td.little
        self.printk = td.printk_formats
        self.kallsyms = kallsyms
        _restore_multiline_print_fmts(td, data)

    @classmethod
    def for_file(cls, pf: PerfFile, kallsyms: Kallsyms | None = None) -> TracePrinter | None:
        """The printer of a PerfFile, or None when it has no (readable)
        tracing data."""
        from ..format.constants import Feature
        try:
            pf.tracepoint_formats()          # reads pipe-mode tracing data too
            data = pf.feature_bytes(Feature.TRACING_DATA)
            return cls(data, kallsyms) if data else None
        except Exception:
            return None

    def format(self, event_id: int, raw_bytes: bytes | memoryview | None) -> str | None:
        ev = self.events.get(event_id)
        if ev is None:
            return None
        return format_trace_fields(ev, raw_bytes, long_size=self.long_size,
                                   little=self.little, kallsyms=self.kallsyms,
                                   printk_formats=self.printk)


def _restore_multiline_print_fmts(td: TracingData, data: bytes) -> None:
    """EventFormat.from_text keeps the first line of `print fmt:`; a few
    kernel formats (ext4_getfsmap_*, ext4_fc_stats) carry newlines inside the
    string, which perf prints.  Put the whole text back from the raw tracing
    data."""
    try:
        from ..format.tracing import tracing_data_schema
        parsed = tracing_data_schema(td.little).parse(data)
        for system in parsed.systems:
            for raw in system.formats:
                text = bytes(raw).decode("utf-8", "replace")
                at = text.find("print fmt:")
                if at < 0 or "\n" not in text[at:].strip():
                    continue
                event_id = None
                for line in text.splitlines():
                    if line.startswith("ID:"):
                        try:
                            event_id = int(line[3:].strip(), 0)
                        except ValueError:
                            pass
                        break
                ev = td.events.get(event_id)  # type: ignore[arg-type]  # (None: no event)
                if ev is not None and ev.system == system.name:
                    ev.print_fmt = text[at + len("print fmt:"):].strip()
    except Exception:
        pass
