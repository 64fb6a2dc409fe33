"""The command lines of tests/cli/test_command_lines.py: (command, arguments)."""
SCRIPT = [
    # --max-stack: perf script's OPT_UINTEGER
    ["--max-stack", "-1"], ["--max-stack=-5"], ["--max-stack", "abc"], ["--max-stack", "0x10"],
    ["--max-stack", "1_0"], ["--max-stack", "3 "], ["--max-stack", "+3"], ["--max-stack", "0"],
    ["--max-stack", " -1"], ["--max-stack", "4294967297"],
    # -F: types, empty lists, +/- mixes, names as written
    ["-F", "hw:"], ["-F", "hw:,"], ["-F", "hw:flags"], ["-F", "trace:"], ["-F", "raw:"],
    ["-F", "break:"], ["-F", "synth:"], ["-F", "sw:"], ["-F", "hw:comm"], ["-F", "hw:-comm"],
    ["-F", "hw:trace"], ["-F", "sw:trace"], ["-F", "trace"], ["-F", "sw:bpf-output"],
    ["-F", "bpf-output"], ["-F", "ip,bpf-output"], ["-F", ""], ["-F", ","], ["-F", "flags"],
    ["-F", "comm,flags"], ["-F", "comm, tid"], ["-F", "ip,sym,comm:x"], ["-F", "HW:comm"],
    ["-F", "bogus:comm"], ["-F", "comm,bogus"], ["-F", "+comm,tid"], ["-F", "comm,+tid"],
    ["-F", "-comm,+tid"], ["-F", "sw:+comm,tid"], ["-F", "+"], ["-F", "comm,+bogus"],
    ["-F", "comm,cgroup"],
    # -C: perf_cpu_map__new()
    ["-C", "-1"], ["-C", "0-"], ["-C", "1-"], ["-C", ","], ["-C", "1-0"], ["-C", "0,0"],
    ["-C", ""], ["-C", "a"], ["-C", "5"], ["-C", "0x1"], ["-C", "010"], ["-C", "08"],
    ["-C", "1,"], ["-C", "0,a"], ["-C", " 1"], ["-C", "1a"],
    # --time: perf_time__parse_strs()
    ["--time", "abc"], ["--time", ""], ["--time", "5"], ["--time", ","], ["--time", "1,0"],
    ["--time", "2,1"], ["--time", "1,2,3"], ["--time", "inf,"], ["--time", "nan,"],
    ["--time", "1e2,"], ["--time", ".5,"], ["--time", "1.0000000001,"], ["--time", " 1,"],
    ["--time", "1 ,"], ["--time", "3,4 1,2"], ["--time", "1, 2,3"], ["--time", "1,2  3,4"],
    ["--time", "726.3,726.4 726.5,"], ["--time", "-1,"], ["--time", "0x10,"],
    ["--time", "10%"], ["--time", "0%-10%,30%-40%"],
    # lists perf reads with intlist/strlist
    ["--pid", "abc"], ["--pid", "1.5"], ["--pid", "-1"], ["--pid", "1,,2"], ["--tid", "x"],
    ["--reltime", "--deltatime"],
]
REPORT = [
    ["--max-stack", "-1"], ["--max-stack", "abc"],
    ["-s", "bogus"], ["-s", "comm,bogus"], ["-s", ""], ["-s", ","], ["-s", "comm,,dso"],
    ["-s", " comm"], ["-s", "COMM"], ["-s", "s"], ["-s", "c"], ["-s", "cp"], ["-s", "p"],
    ["-s", "Dso,pi"], ["-s", "comm dso"], ["-s", "cpu,cpu"],
    ["-g", "bogus"], ["-g", "caller"], ["-g", "hot_alpha"], ["--call-graph=n"],
    ["-g", "0.5x"], ["-g", "x0.5"], ["-g", "graph,0.5,10,caller"], ["-g", "graph,0.5,x"],
    ["-g", "fl"], ["-g", "5,5,5"], ["-g", "none"], ["-g"],
    ["--time", "5"], ["--time", "2,1"], ["-C", "1a"], ["-C", "0-"], ["--pid", "abc"],
]
COMMAND_LINES = [("script", a) for a in SCRIPT] + [("report", a) for a in REPORT]
