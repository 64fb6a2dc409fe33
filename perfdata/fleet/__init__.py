"""Many profiles at once: `perfdata fleet collapse|report|flamegraph|diff`.

paths.py     the command line's paths, globs and directories -> files
partials.py  one file -> a mergeable partial result (run on a Dask worker),
             and the merge of two partials; no Dask here
command.py   the commands' runs, their output and options
diff.py      `fleet diff`: two sets of files, each reduced as above
cluster.py   the Dask client (a local cluster, or --scheduler ADDRESS) and
             the tree reduction of the partials on the workers

Dask is imported only by cluster.py, and only when a fleet command runs.
"""
from ..views.errors import CommandError


class FleetError(CommandError):
    """A fleet run cannot go on (no file, no Dask, no scheduler)."""
