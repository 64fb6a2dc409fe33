"""Running a command over a file: the layer between the resolver and the views.

    sharded      -j: blocks of samples taken by worker processes, their
                 output and warnings merged in file order
    progress     the progress bar on standard error

The views format what the run hands them.
"""
