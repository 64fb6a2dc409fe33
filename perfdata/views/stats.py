"""`perfdata stats`: record counts per type and per event, as `perf report --stats`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.records import RecordCounts, walk_counting
from ..format import STATS_NAMES, RecordType as RT, SampleType as ST, record_type_name
from ..format import PerfDataError
from ..session.stream import CounterReads

if TYPE_CHECKING:
    from ..format import PerfFile, Record, EventAttr


_U32 = (1 << 32) - 1
# Plain ints: sample_type is an int, and `int & IntFlag` calls the flag's
# Python-level __rand__ (a Python call once a sample).
_SAMPLE, _LOST_SAMPLES, _AUXTRACE_INFO = int(RT.SAMPLE), int(RT.LOST_SAMPLES), int(RT.AUXTRACE_INFO)
_READ = int(ST.READ)


class RecordStats:
    """Counts gathered while walking a file."""

    def __init__(self) -> None:
        self.by_type: dict[int, int] = {}
        self.by_event: dict[int, dict[int, int]] = {}  # EventAttr index -> {type: count}
        self.total = 0
        self.has_aux = False
        self._reads = CounterReads()        # counted only where a read counter grew

    def add(self, rec: Record) -> None:
        self.total += 1
        rtype = rec.type
        self.by_type[rtype] = self.by_type.get(rtype, 0) + 1
        if rtype == _AUXTRACE_INFO:
            self.has_aux = True
        if rtype == _SAMPLE and rec.attr is not None:
            for ea in self._events_of(rec):
                per = self.by_event.setdefault(ea.index, {})
                per[rtype] = per.get(rtype, 0) + 1
        elif rtype == _LOST_SAMPLES and rec.attr is not None:
            # An event's LOST_SAMPLES line counts the samples lost, not the
            # records (perf's count_lost_samples_event): its u32 counter takes
            # each record's count as a u32 (BPF-dropped ones too in perf 6.1).
            try:
                lost = rec.parse().get("lost", 0) or 0
            except PerfDataError:
                return          # (the walk's own warning says why)
            per = self.by_event.setdefault(rec.attr.index, {})
            per[rec.type] = (per.get(rec.type, 0) + (lost & _U32)) & _U32

    def _events_of(self, rec: Record) -> list[EventAttr]:
        """perf delivers a sample that reads a whole group once per member
        whose counter grew since its last sample (deliver_sample_group,
        deliver_sample_value: "no reason to deliver sample for zero
        period"), to the event each value's id belongs to.  (Each id is one
        cpu's or thread's counter, whose samples the file holds in order.)"""
        ea: EventAttr
        ea = rec.attr  # type: ignore[assignment]  # (add() passes records with an event)
        if ea.reads_group:
            values = rec.parse()["read"]["values"]
            id_to_attr = rec.ctx.id_to_attr
            return [id_to_attr[v["id"]] for v in values
                    if v.get("id") in id_to_attr and self._reads.growth(v["id"], v["value"])]
        if ea.sample_type & _READ:
            # one counter read: counted only if it grew (as a group member)
            read = rec.parse().get("read") or {}
            ident = read.get("id")
            if ident in rec.ctx.id_to_attr and not self._reads.growth(ident, read.get("value", 0)):
                return []
        return [ea]

    def add_counts(self, counts: RecordCounts) -> None:
        """What the compiled walk counted (perfdata.core.records)."""
        self.total += counts.total
        for rtype, count in counts.by_type.items():
            self.by_type[rtype] = self.by_type.get(rtype, 0) + count
        self.has_aux = self.has_aux or counts.has_aux
        for index, count in counts.samples.items():
            per = self.by_event.setdefault(index, {})
            per[_SAMPLE] = per.get(_SAMPLE, 0) + count
        for index, count in counts.lost.items():
            per = self.by_event.setdefault(index, {})
            per[_LOST_SAMPLES] = (per.get(_LOST_SAMPLES, 0) + count) & _U32


def gather_stats(pf: PerfFile, stats: RecordStats | None = None) -> RecordStats:
    """Count every record (into `stats`, so that what was counted before a
    fault is still there when the walk raises).  The compiled walk counts
    the records it takes as they are, the Python walk the others; the same
    counts either way (tests/core/test_core_records.py)."""
    stats = RecordStats() if stats is None else stats
    if not walk_counting(pf, stats.add_counts, stats.add):
        # perf counts every record as it arrives, COMPRESSED ones and their content.
        for rec in pf.records(order="file", include_compressed=True):
            stats.add(rec)
    return stats


def _type_label(rtype: int) -> str:
    return STATS_NAMES.get(rtype) or record_type_name(rtype)


def describe_stats(pf: PerfFile, stats: RecordStats) -> str:
    pf.resolve_event_names(pipe_event_desc=False)
    title = "Aggregated stats:"
    if stats.has_aux:
        title += " (excludes AUX area (e.g. instruction trace) decoded / synthesized events)"
    lines = ["", title]
    lines.append("%16s events: %10d" % ("TOTAL", stats.total))
    for rtype in sorted(stats.by_type):
        count = stats.by_type[rtype]
        lines.append("%16s events: %10d  (%4.1f%%)"
                     % (_type_label(rtype), count, 100.0 * count / stats.total))
    for ea in pf.attrs:
        per = {rtype: count for rtype, count in stats.by_event.get(ea.index, {}).items()
               if count}
        if not per:
            continue
        lines.append("%s stats:" % ea.name)
        for rtype in sorted(per):
            count = per[rtype]
            if rtype == RT.LOST_SAMPLES and count >= 1 << 31:
                count -= 1 << 32        # (perf prints its u32 with %d)
            lines.append("%16s events: %10d" % (_type_label(rtype), count))
    skipped = getattr(pf, "skipped", None)
    if skipped:
        lines.append("skipped %d bytes of corrupt records: %s" % (
            sum(n for _, _, n, _ in skipped),
            ", ".join("%d at %#x" % (n, off) for _, off, n, _ in skipped[:20])
            + (", ..." if len(skipped) > 20 else "")))
    return "\n".join(lines) + "\n"
