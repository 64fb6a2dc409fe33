"""The library's face: `perfdata.profile(path, ...)` and what it returns.

    profile    Profile: a file with the commands' options and defaults, its
               views as data (report, folded stacks, flame graph, Arrow)
    samples    Sample, Frame: symbolized samples as frozen data
    tables     ReportTable, ReportRow, FlameGraph, FlameNode: the views
    annotations  Annotation, AnnotatedInstruction, AnnotatedLine: annotate's
    notebook   what a notebook shows of them (HTML, SVG)

It stands on the views, the resolver and the format below it, which stay
public for what this face does not cover (perfdata.open, SessionStream,
SampleSymbolizer, symbolize).
"""
