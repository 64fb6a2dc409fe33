"""The limits of the command's process: what a run of a large profile needs
raised before it starts."""
from __future__ import annotations


def raise_open_files_limit() -> None:
    """The soft limit on open files raised to the hard one, as perf raises
    it where opening its events runs out of descriptors (util/rlimit.c,
    rlimit__increase_nofile) and Go's runtime does at every start: each
    binary a run names addresses in stays mapped, a descriptor each, and a
    system-wide profile of a busy machine passes the soft 1,024 most
    distributions set (its binaries then unreadable, their frames
    [unknown]; perf closes its binaries' descriptors past half the limit,
    util/dso.c).  The command line's process only: a program using the
    library keeps its own limits."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        # (no limit: the kernel's own, fs.nr_open, 1,048,576 by default)
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft == resource.RLIM_INFINITY or soft >= want:
            return
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass
