"""`perfdata header`: the text of `perf report --header-only` (and `-I`).

Line for line as perf 6.1 prints it (perf_header__fprintf_info and the
print_* functions of tools/perf/util/header.c, perf_event_attr__fprintf of
tools/perf/util/perf_event_attr_fprintf.c), with these deliberate
differences (tests/views/test_header_view.py lists them where they show):

* A feature section that does not decode prints `# <FEATURE>: <error>`
  where perf prints what its half-filled state holds ("(null)", zeros).
  BRANCH_STACK, AUXTRACE and STAT keep perf's fixed line: it does not depend
  on the section.
* Feature sections outside the file are reported the same way; perf skips
  those its lseek refuses and prints "(null)" for the rest.  When the data
  size is 0 (perf record did not finish, no section table) nothing is
  printed for the features.
* perf stops processing feature sections at the first that fails and prints
  the later ones from an empty state; every section is decoded on its own
  here.
* A NUMA node with an empty cpu list prints it empty (perf prints the cpus
  of the machine reading the file).
* A truncated HEADER_FEATURE record (pipe mode) prints `# FEATURE: <error>`;
  perf reports it on stderr.


    describe     the header's text: the file's lines, then the features'
    features     each feature's lines, from its parsed section
    event_desc   EVENT_DESC: the events' perf_event_attr
    bpf          BPF_PROG_INFO: the programs' names (from BTF), addresses
    pipe         a pipe's HEADER_FEATURE records, printed as they come

`perfdata header` and `perfdata script --header` print it.
"""
from .describe import describe_header, describe_pipe_header_start
from .pipe import PipeFeaturePrinter

__all__ = ["describe_header", "describe_pipe_header_start", "PipeFeaturePrinter"]
