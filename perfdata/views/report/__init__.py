"""`perfdata report`: the table `perf report --stdio --no-children -g none` prints.

One section per event: `# Samples: 2K of event 'cpu-clock:u'`, the event
count (sum of periods), the column header, then one row per histogram entry
(`    12.34%  comm  libc.so.6  [.] sym`), sorted by overhead, ties by the sort
keys in order.  Entries are keyed as perf keys them: comm, the dso's short
name, the symbol (as perf prints it: C++ without parameters, the symbol
table's name rather than an inlined function's), or, without a symbol, the
address (`[.] 0x00000000000011de`, map-relative as perf prints it).

`--children` adds perf's inclusive column: every entry on a sample's stack
gets the sample's period once, sorted by that, then by self.

    entries      a histogram entry (Entry) and an event's histogram
                 (EventHistogram), mergeable across workers
    histogram    Report: the histograms of the samples, per event
    sort_keys    --sort: its keys, each key's column (header, cell) and
                 the order of the rows
    text         the table as perf report --stdio prints it
    command      the command: its options, the samples into a Report (one
                 process, the compiled core, or -j workers), event groups
                 and -T's per-thread counter values
"""
