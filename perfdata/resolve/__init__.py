"""Samples to named stacks: the layer over the session stream.

    symbolized   SampleSymbolizer: the session's samples, each with its
                 frames named (filters, stop reasons, side events)
    frames       FrameResolver: an address in a thread's maps to a frame
                 (map and dso resolution, JIT sources, the stack caches)
    unwinding    DWARF stacks from REGS_USER and STACK_USER
    stitch       --stitch: cut stacks completed from the thread's samples
    hitrate      when a cache keeps paying for itself

It stands on perfdata.format and perfdata.session, and on symbolize beside
them; nothing here knows of the commands or their views.
"""
