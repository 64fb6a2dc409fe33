"""Sizes as perf prints them (tools/perf/util/units.c)."""
from __future__ import annotations


def unit_number(n: int) -> str:
    """unit_number__scnprintf: 24G, 512M, 4K, 100B."""
    units = "BKMG"
    i = 0
    while n // 1024 > 1 and i < 3:
        n //= 1024
        i += 1
    return "%d%s" % (n, units[i])
