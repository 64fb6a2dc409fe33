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


def convert_unit(n: int) -> str:
    """perf's convert_unit() as its tables print a count: 2387 -> '2K',
    140 -> '140 '."""
    unit = " "
    if n > 1000000000:
        n, unit = n // 1000000000, "G"
    elif n > 1000000:
        n, unit = n // 1000000, "M"
    elif n > 1000:
        n, unit = n // 1000, "K"
    return "%d%s" % (n, unit)
