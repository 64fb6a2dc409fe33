#!/usr/bin/env python3
"""Speed and memory of the perf.data reader against perf itself.

    python3 benchmarks/bench_reader.py [--fp FILE] [--dwarf FILE] [--big-mib N]
                                       [--repeat 3] [--keep DIR]

Without --fp/--dwarf it records, with perf, into a tmp dir:
  fp:    ~30,000 frame-pointer samples  (perf record -g -F 10000, 4.5 s of CPU)
  dwarf: ~30 MiB of DWARF-mode samples  (perf record --call-graph=dwarf -F 1000, 4 s)
then measures, best of --repeat runs, wall time, CPU time (user+system) and
peak RSS of each command (GNU time, else wait4):
  perfdata stats  vs  perf report --stats
  perfdata dump   vs  perf report -D          (output to /dev/null)
and prints one table with the ratios and records per second.

Memory check: a large file (--big-mib, default 1024) is made from the fp file
by repeating its data section (header data size and feature offsets fixed
up), and `perfdata stats` is run on it once: targets < 100 MiB peak RSS and
>= 300,000 records/s (the records/s target is checked on the fp file).
"""
import argparse
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

PERFDATA = [sys.executable, "-m", "perfdata"]
LOOP = "import time\nt=time.time()\nwhile time.time()-t<%s: sum(i*i for i in range(1000))"


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def compile_bytecode(repo=REPO):
    """Compile perfdata's modules to bytecode, as `pip install` leaves them:
    where PYTHONDONTWRITEBYTECODE is set (this project's machines set it) a
    checkout is otherwise compiled again at every run, ~0.1 s of each
    measured command.  repo: another checkout (bench_core.py --before's:
    uncompiled, it measured 0.1 s CPU more a run than its code costs)."""
    import compileall
    for name in ("perfdata", "symbolize"):
        compileall.compile_dir(os.path.join(repo, name), quiet=1)
    if os.path.exists(os.path.join(repo, "cli.py")):
        compileall.compile_file(os.path.join(repo, "cli.py"), quiet=1)


def run_measured(cmd, cwd=REPO):
    """(wall seconds, peak RSS KiB, returncode, CPU seconds) of one run, output
    discarded.  CPU time (user + system of the child) is what to compare on a
    shared machine: other processes lengthen the wall time, not the CPU time.

    Peak RSS comes from GNU time's %M when it is there: a child forked from
    this Python process inherits its RSS in ru_maxrss until it execs, so
    wait4's figure would never be below ours (~25 MiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file, \
            open(os.devnull, "wb") as null:
        full = [GNU_TIME, "-f", "%M %U %S", "-o", rss_file.name] + cmd if GNU_TIME else cmd
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=null, stderr=null, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        rss = usage.ru_maxrss
        cpu = usage.ru_utime + usage.ru_stime
        if GNU_TIME:
            text = rss_file.read().split()
            if len(text) >= 3 and text[-3].isdigit():
                rss, cpu = int(text[-3]), float(text[-2]) + float(text[-1])
    return wall, rss, os.waitstatus_to_exitcode(status), cpu


def best_of(cmd, repeat):
    """(best wall s, peak RSS KiB, best CPU s) over `repeat` runs."""
    runs = [run_measured(cmd) for _ in range(repeat)]
    bad = [r for r in runs if r[2] not in (0,)]
    if bad:
        raise SystemExit("failed (rc %d): %s" % (bad[0][2], " ".join(cmd)))
    return min(r[0] for r in runs), max(r[1] for r in runs), min(r[3] for r in runs)


def record(perf, out, opts, seconds):
    cmd = [perf, "record", "-q", "-o", out] + opts + ["--", sys.executable, "-c",
                                                       LOOP % seconds]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def count_records(path):
    import perfdata
    pf = perfdata.open(path)
    n = samples = 0
    for rec in pf.records(order="file", include_compressed=True):
        n += 1
        samples += rec.type == 9
    return n, samples


def make_big(src, dst, target_bytes):
    """Repeat the data section of src until the file is ~target_bytes."""
    import perfdata
    pf = perfdata.open(src)
    if pf.is_pipe or pf.is_directory:
        raise SystemExit("--big needs a file-mode perf.data")
    little = pf.little
    u = "<" if little else ">"
    d_off, d_size = pf.header["data"]["offset"], pf.header["data"]["size"]
    with open(src, "rb") as f:
        raw = f.read()
    data = raw[d_off:d_off + d_size]
    times = max(1, target_bytes // max(d_size, 1))
    grow = (times - 1) * d_size
    head = bytearray(raw[:d_off])
    # perf_file_header: magic, size, attr_size, attrs{offset,size}, data{offset,size}
    struct.pack_into(u + "Q", head, 48, d_size * times)
    tail = bytearray(raw[d_off + d_size:])
    for i in range(len(pf.features)):
        off, = struct.unpack_from(u + "Q", tail, 16 * i)
        struct.pack_into(u + "Q", tail, 16 * i, off + grow)
    with open(dst, "wb") as f:
        f.write(head)
        for _ in range(times):
            f.write(data)
        f.write(tail)
    return times


def fmt_row(cols, widths):
    return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cols, widths)) + " |"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fp", help="a frame-pointer perf.data (else recorded)")
    ap.add_argument("--dwarf", help="a --call-graph=dwarf perf.data (else recorded)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-mib", type=int, default=1024,
                    help="size of the synthetic large file (0: skip)")
    ap.add_argument("--keep", help="directory for the recorded files (kept)")
    args = ap.parse_args(argv)
    compile_bytecode()

    perf = shutil.which("perf")
    tmp = args.keep or tempfile.mkdtemp(prefix="bench_reader.")
    os.makedirs(tmp, exist_ok=True)
    files = {}
    try:
        if args.fp:
            files["fp"] = args.fp
        elif perf:
            files["fp"] = record(perf, os.path.join(tmp, "fp.data"),
                                 ["-g", "-F", "10000"], 4.5)
        if args.dwarf:
            files["dwarf"] = args.dwarf
        elif perf:
            files["dwarf"] = record(perf, os.path.join(tmp, "dwarf.data"),
                                    ["--call-graph=dwarf", "-F", "1000"], 4.0)
        if not files:
            raise SystemExit("perf not found: give --fp and --dwarf")

        print("# perfdata reader benchmark")
        print("machine: %s, %d cores, %s, Python %s" % (
            _cpu_model(), os.cpu_count(), platform.platform(), platform.python_version()))
        if perf:
            print("perf: %s" % subprocess.run([perf, "--version"], capture_output=True,
                                              text=True).stdout.strip())
        print("date: %s UTC" % time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
        print("command: %s" % " ".join(["benchmarks/bench_reader.py"] + (argv or sys.argv[1:])))
        print()
        print("load average before: %.2f %.2f %.2f" % os.getloadavg())
        print()
        widths = (5, 5, 7, 7, 5, 7, 7, 6, 9, 9, 6, 8, 8, 10)
        print(fmt_row(("file", "MiB", "records", "samples", "cmd", "ours s", "perf s",
                       "ratio", "ours cpu", "perf cpu", "ratio", "ours MiB", "perf MiB",
                       "rec/s cpu"), widths))
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        results = {}
        for name, path in files.items():
            size = os.path.getsize(path) if os.path.isfile(path) else 0
            nrec, nsamp = count_records(path)
            for label, ours, theirs in (
                    ("stats", PERFDATA + ["stats", path],
                     [perf, "report", "-i", path, "--stats"] if perf else None),
                    ("dump", PERFDATA + ["dump", path],
                     [perf, "report", "-i", path, "-D"] if perf else None)):
                o_t, o_rss, o_cpu = best_of(ours, args.repeat)
                if theirs:
                    p_t, p_rss, p_cpu = best_of(theirs, args.repeat)
                else:
                    p_t = p_rss = p_cpu = float("nan")
                results[(name, label)] = (o_t, o_rss, nrec, o_cpu)
                print(fmt_row((name, "%.1f" % (size / 2**20), nrec, nsamp, label,
                               "%.3f" % o_t, "%.3f" % p_t, "%.1fx" % (o_t / p_t),
                               "%.3f" % o_cpu, "%.3f" % p_cpu,
                               "%.1fx" % (o_cpu / max(p_cpu, 0.005)),
                               "%.1f" % (o_rss / 1024), "%.1f" % (p_rss / 1024),
                               "%d" % (nrec / max(o_cpu, 1e-3))), widths))
        print()
        if ("fp", "stats") in results:
            o_t, _, nrec, o_cpu = results[("fp", "stats")]
            start = best_of(PERFDATA + ["--help"], args.repeat)
            net = o_cpu - start[2]
            print("fp stats: %d records/s of CPU time (%d wall), including the "
                  "interpreter and imports (%.3f s CPU, %.3f s wall for --help); %s "
                  "records/s of CPU time without them; target >= 300,000: %s" % (
                      nrec / o_cpu, nrec / o_t, start[2], start[0],
                      "%d" % (nrec / net) if net >= 0.05 else "n/a (file too small)",
                      "met" if nrec / o_cpu >= 300_000 else "NOT met"))
        if args.big_mib and "fp" in files and os.path.isfile(files["fp"]):
            big = os.path.join(tmp, "big.data")
            times = make_big(files["fp"], big, args.big_mib << 20)
            size = os.path.getsize(big)
            nrec = results.get(("fp", "stats"), (0, 0, 0))[2] * times
            wall, rss, rc, cpu = run_measured(PERFDATA + ["stats", big])
            p_wall, p_rss, _, p_cpu = run_measured([perf, "report", "-i", big, "--stats"]) \
                if perf else (float("nan"),) * 4
            print("big file: %.0f MiB (fp data section x%d), ~%d records: perfdata stats "
                  "%.1f s wall, %.1f s CPU, %d records/s of CPU time, peak RSS %.1f MiB "
                  "(target < 100 MiB: %s), rc %d; perf report --stats %.1f s wall, %.1f s "
                  "CPU, peak RSS %.1f MiB" % (
                      size / 2**20, times, nrec, wall, cpu, nrec / cpu, rss / 1024,
                      "met" if rss < 100 * 1024 else "NOT met", rc, p_wall, p_cpu,
                      p_rss / 1024))
            os.unlink(big)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


if __name__ == "__main__":
    main()
