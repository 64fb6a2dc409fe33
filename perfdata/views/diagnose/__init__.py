"""`perfdata diagnose FILE`: why frames are [unknown] or wrong, and the fix.

Every frame of every sample gets one class: resolved (and how), or the
problem that spoiled it.  Some problems belong to a whole sample rather than
to a frame (a DWARF stack cut by the snapshot, a register/ip mismatch, the
garbage dropped below a coroutine's bottom); those count samples, and the
frames they cost where that is known.  Each class is printed with its
frames, samples, share of the samples, the binaries involved (top 5), one
example sample and the fix.

    classes      the classes: their kind, title and general fix, and the
                 counts of each (ClassStats)
    classify     FrameClassifier: the class of one frame, from what the
                 symbolizer knows of its binary (symbols, build-id, code)
    diagnosis    Diagnosis: every sample's frames counted in their classes,
                 with the problems of whole stacks (a broken frame-pointer
                 chain, a DWARF unwind that stopped)
    fixes        the fix texts that depend on what was found (a binary's
                 package, a missing file, the stack size to record)
    output       the result as one JSON object, and as text
    command      the command
"""
