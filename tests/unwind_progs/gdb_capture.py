# Runs inside gdb (gdb -nx -batch -x gdb_capture.py --args PROG).  Stops the
# program where UNWIND_CAPTURE_SPEC says and writes, for each stop, what a
# perf --call-graph=dwarf sample holds (registers, 8 KiB of stack from sp,
# the mappings, the vdso image) plus gdb's own backtrace as the oracle.
import json
import os
import re

import gdb

REGS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"]
MASK = (1 << 64) - 1

spec = json.loads(os.environ["UNWIND_CAPTURE_SPEC"])
for cmd in ("set pagination off", "set confirm off", "set width 0",
            "set backtrace past-main on", "set backtrace past-entry on",
            "set backtrace limit 100000", "set disable-randomization on",
            "handle SIGUSR1 nostop noprint pass"):
    gdb.execute(cmd)


def mappings(pid):
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5].strip() if len(parts) > 5 else ""
            out.append({"start": start, "end": end, "perms": parts[1],
                        "offset": int(parts[2], 16), "path": path})
    return out


def capture(window):
    inf = gdb.selected_inferior()
    frame = gdb.newest_frame()
    regs = {n: int(frame.read_register(n)) & MASK for n in REGS}
    maps = mappings(inf.pid)
    sp = regs["rsp"]
    stack = b""
    for m in maps:
        if m["start"] <= sp < m["end"]:
            stack = bytes(inf.read_memory(sp, min(window, m["end"] - sp)))
    vdso = None
    for m in maps:
        if m["path"] == "[vdso]":
            vdso = {"start": m["start"],
                    "data": bytes(inf.read_memory(m["start"], m["end"] - m["start"])).hex()}
    pcs, names = [], []
    f = frame
    last = f
    while f is not None:
        # an inlined call shares its physical frame (and pc) with the caller,
        # and a tail-call frame is gdb's reconstruction from DWARF call-site
        # data: the unwinder sees physical frames only
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            pcs.append(f.pc())
            names.append(f.name())
        last = f
        f = f.older()
    symbols = {}
    for name in spec.get("symbols", ()):
        try:
            text = gdb.execute("info address %s" % name, to_string=True)
            m = re.search(r"at address (0x[0-9a-f]+)", text)
            symbols[name] = int(m.group(1), 16) if m else None
        except gdb.error:
            symbols[name] = None
    return {"regs": regs, "symbols": symbols, "stack_base": sp, "stack": stack.hex(), "maps": maps,
            "vdso": vdso, "gdb_pcs": pcs, "gdb_names": names,
            "gdb_stop": gdb.frame_stop_reason_string(last.unwind_stop_reason())}


results = []
started = False
try:
    gdb.execute("starti", to_string=True)
    for stop in spec["stops"]:
        if stop.get("break"):
            bp = gdb.Breakpoint(stop["break"], internal=True)
            gdb.execute("continue", to_string=True)
            bp.delete()
        for _ in range(stop.get("stepi", 0)):
            gdb.execute("stepi", to_string=True)
        results.append(capture(spec.get("window", 8192)))
except gdb.error as exc:
    results.append({"error": str(exc)})
with open(spec["out"], "w") as f:
    json.dump(results, f)
gdb.execute("kill")
