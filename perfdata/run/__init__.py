"""Running a command over a file: the layer between the resolver and the views.

    sharded      -j: blocks of samples taken by worker processes, their
                 output and warnings merged in file order
    progress     the progress bar on standard error
    profile      the file a command reads, opened one way, and the run's
                 warnings printed once each
    folded       stacks folded as stackcollapse-perf.pl folds them, and a
                 frame's kind in a flame graph: what the Python path and the
                 compiled core's drivers both make of a frame

The views format what the run hands them; where the compiled core
(perfdata/core) makes the text or counts, the view hands its formatter,
report or tree down to the core's driver, which imports no view.
"""
