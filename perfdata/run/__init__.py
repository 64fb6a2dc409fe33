"""Running a command over a file: the layer between the resolver and the views.

    sharded      -j: blocks of samples taken by worker processes, their
                 output and warnings merged in file order
    progress     the progress bar on standard error
    profile      the file a command reads, opened one way, and the run's
                 warnings printed once each

The views format what the run hands them.
"""
