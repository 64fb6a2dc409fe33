#!/usr/bin/env python3
"""How fast can any pure-Python `perf script` be on a frame-pointer recording?

    python3 benchmarks/floor_fp.py FILE.data TEXT [--repeat 5]

A lower bound, not a tool: the least per-sample work a Python reader must
do, with every answer known in advance.  TEXT is an earlier `perfdata
script -i FILE.data` output; its frame lines become a perfect cache keyed
by (tid, address), so nothing is symbolized, no map is looked up, no time
order is kept and no special case (context switches inside a chain, stack
bottoms, JIT code) is checked.  What is left is what every sample costs in
CPython whatever the design: one pass over the records, the sample's fixed
fields and its callchain unpacked, one dict lookup per frame, the header
line formatted, the text joined and written.

Only files whose samples are exactly IP|TID|TIME|CALLCHAIN|PERIOD with one
event (what `perf record -g` writes by default, as benchmarks/bench_real.py
records make and cc1plus) are read; anything else is refused.  Prints the
loop's CPU time (best of --repeat) and, for the comparison, perf script's
and perfdata's wall and CPU time on the same file (output to /dev/null).
"""
import argparse
import os
import resource
import struct
import subprocess
import sys
import time

PERF_RECORD_COMM, PERF_RECORD_SAMPLE = 3, 9
IP, TID, TIME, CALLCHAIN, PERIOD = 1 << 0, 1 << 1, 1 << 2, 1 << 5, 1 << 8
CONTEXT_MAX = 2 ** 64 - 4095             # PERF_CONTEXT_MAX and above: markers


def read_layout(data):
    """(data offset, data size, event name) of a file of the one layout."""
    magic, _, attr_size, attrs_off, attrs_size, data_off, data_size = \
        struct.unpack_from("<8sQQQQQQ", data, 0)
    if magic != b"PERFILE2" or attrs_size != attr_size:
        sys.exit("floor_fp: one event, a little-endian perf.data file only")
    sample_type, = struct.unpack_from("<Q", data, attrs_off + 24)
    if sample_type != IP | TID | TIME | CALLCHAIN | PERIOD:
        sys.exit("floor_fp: samples must be IP|TID|TIME|CALLCHAIN|PERIOD (perf record -g)")
    return data_off, data_size


def perfect_cache(text_path):
    """(tid, address) -> the frame line an earlier run printed."""
    cache, tid = {}, 0
    with open(text_path) as f:
        for line in f:
            if line.startswith("\t"):
                cache[(tid, int(line.split(None, 1)[0], 16))] = line
            elif line.strip():
                # "comm tid time: ..." where comm may hold spaces: the tid is
                # the field before the time, which ends in ':'.
                fields = line.split(":", 1)[0].split()
                tid = int(fields[-2]) if len(fields) >= 3 and fields[-2].isdigit() else 0
    return cache


def floor_loop(data, data_off, data_size, cache, event, out):
    header, fixed = struct.Struct("<IHH"), struct.Struct("<QIIQQQ")
    get = cache.get
    comm = {}
    pending = []
    pos, end = data_off, data_off + data_size
    samples = 0
    while pos + 8 <= end:
        kind, _, size = header.unpack_from(data, pos)
        if size < 8:
            break
        if kind == PERF_RECORD_SAMPLE:
            _, _, tid, t, period, nr = fixed.unpack_from(data, pos + 8)
            ips = struct.unpack_from("<%dQ" % nr, data, pos + 8 + fixed.size)
            lines = [get((tid, ip)) for ip in ips if ip < CONTEXT_MAX]
            pending.append("%16s %6d %5d.%06d: %10d %s: \n%s\n" % (
                comm.get(tid, ":%d" % tid), tid, t // 1000000000, t % 1000000000 // 1000,
                period, event, "".join([x for x in lines if x is not None])))
            samples += 1
            if len(pending) >= 1024:
                out.write("".join(pending))
                pending.clear()
        elif kind == PERF_RECORD_COMM:
            _, tid = struct.unpack_from("<II", data, pos + 8)
            comm[tid] = data[pos + 16:data.index(b"\0", pos + 16)].decode("utf-8", "replace")
        pos += size
    out.write("".join(pending))
    return samples


def timed(cmd):
    """(wall, CPU of the children) of one run, output to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(os.devnull, "w") as null:
        subprocess.run(cmd, stdout=null, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("text")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with open(args.data, "rb") as f:
        data = f.read()
    data_off, data_size = read_layout(data)
    cache = perfect_cache(args.text)
    loops = []
    with open(os.devnull, "w") as null:
        for _ in range(args.repeat):
            start = time.process_time()
            samples = floor_loop(data, data_off, data_size, cache, "cpu-clock", null)
            loops.append(time.process_time() - start)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = {"perf script": ["perf", "script", "-i", args.data],
            "perfdata script -j 1": [sys.executable, os.path.join(repo, "cli.py"), "script",
                                     "-j", "1", "-i", args.data],
            "perfdata script": [sys.executable, os.path.join(repo, "cli.py"), "script",
                                "-i", args.data]}
    best = {name: min((timed(cmd) for _ in range(args.repeat)), key=lambda r: r[1])
            for name, cmd in runs.items()}
    print("%d samples; the floor loop: %.3f s CPU (best of %d; the interpreter's start "
          "not counted)" % (samples, min(loops), args.repeat))
    for name, (wall, cpu) in best.items():
        print("%-22s %.3f s wall, %.3f s CPU (best of %d by CPU)" % (name, wall, cpu, args.repeat))


if __name__ == "__main__":
    main()
