"""Issue 40's measures for perfdata/ (symbolize/ has its own, at zero):
no module over 600 lines, no function over 80, no constructor over 8
parameters.  What is over today is listed, and the list must shrink, never
grow: a test fails on a new breach and on a listed one that is gone (remove
it from the list).  Records whose fields are their constructor (a
dataclass, a NamedTuple) have no __init__ to count."""
from __future__ import annotations

import os
import re

from test_symbolize_measures import ROOT, measures, python_modules

# What is still over (shrinks to nothing; nothing now).
LEFT: set[str] = set()


def test_perfdata_modules_and_functions_are_small():
    modules = python_modules(os.path.join(ROOT, "perfdata"))
    assert len(modules) > 60
    # (the sizes as N: a listed module may change size while it is cut)
    over = {re.sub(r"\b\d+ (lines|parameters)", r"N \1", m) for m in measures(modules)}
    assert sorted(over - LEFT) == [], "new breaches"
    assert sorted(LEFT - over) == [], "listed, no longer over (remove them from LEFT)"
