"""`perfdata stats`: record counts per type and per event, as `perf report --stats`."""
from ..format.constants import STATS_NAMES, RecordType as RT, record_type_name


class RecordStats:
    """Counts gathered while walking a file."""

    def __init__(self):
        self.by_type = {}
        self.by_event = {}      # EventAttr index -> {type: count}
        self.total = 0

    def add(self, rec):
        self.total += 1
        self.by_type[rec.type] = self.by_type.get(rec.type, 0) + 1
        if rec.type in (RT.SAMPLE, RT.LOST_SAMPLES) and rec.attr is not None:
            per = self.by_event.setdefault(rec.attr.index, {})
            per[rec.type] = per.get(rec.type, 0) + 1


def gather_stats(pf):
    stats = RecordStats()
    # perf counts every record as it arrives, COMPRESSED ones and their content.
    for rec in pf.records(order="file", include_compressed=True):
        stats.add(rec)
    return stats


def _type_label(rtype):
    return STATS_NAMES.get(rtype) or record_type_name(rtype)


def describe_stats(pf, stats):
    lines = ["", "Aggregated stats:"]
    lines.append("%16s events: %10d" % ("TOTAL", stats.total))
    for rtype in sorted(stats.by_type):
        count = stats.by_type[rtype]
        lines.append("%16s events: %10d  (%4.1f%%)"
                     % (_type_label(rtype), count, 100.0 * count / stats.total))
    for ea in pf.attrs:
        per = stats.by_event.get(ea.index)
        if not per:
            continue
        lines.append("%s stats:" % ea.name)
        for rtype in sorted(per):
            lines.append("%16s events: %10d" % (_type_label(rtype), per[rtype]))
    return "\n".join(lines) + "\n"
