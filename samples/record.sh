#!/bin/bash
# Regenerate everything under samples/: programs, recordings, build-id store,
# perf goldens.  Usage (as root, from anywhere):
#
#     bash samples/record.sh            # build + record + buildids + goldens
#     bash samples/record.sh goldens    # only redo the goldens from the
#                                       # committed recordings and buildids
#     bash samples/record.sh derive     # redo cpp_inline.fp.pipe.data + goldens
#     bash samples/record.sh extra      # redo buildid_mmap.data + goldens
#     bash samples/record.sh kernel     # redo the recordings with kernel samples
#                                       # (two_events, tracepoint) on this kernel,
#                                       # with its kallsyms, + goldens
#
# Needs: gcc, g++, objcopy, strip, readelf, perf (goldens made with 6.1).
# The truth files (samples/truth/*.json) are hand-written, not generated;
# `python3 samples/truth/match.py --check` checks them against the goldens.
set -euo pipefail

S=$(cd "$(dirname "$0")" && pwd)
SRC=$S/src
BIN=$S/bin
DBG=$S/debug
EXP=$S/expected
BIDS=$S/buildids
WORK=$(mktemp -d /tmp/perfdata-samples.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# perf writes its build-id cache to $HOME/.debug while recording; keep it
# away from the user's cache.  An empty ~/.perfconfig-free HOME for goldens.
export HOME=$WORK/home
mkdir -p "$HOME"

# Fedora-like frame pointers: -mno-omit-leaf-frame-pointer too, else gcc 12
# leaves leaf functions without a frame and fp unwinding skips their caller
# (Debian's libc and the vdso still have no frame pointers: see README).
CFLAGS="-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
FREQ=1000          # fp recordings
DWARF_FREQ=250     # dwarf recordings (each sample carries an 8 KiB stack)

PROGS="plt_loop plt_loop_ibt vdso_clock exit_atexit coroutine cpp_inline threads stripped deep_recursion"
DWARF_PROGS="plt_loop plt_loop_ibt vdso_clock exit_atexit cpp_inline threads coroutine stripped deep_recursion"

build() {
    rm -rf "$BIN" "$DBG"
    mkdir -p "$BIN" "$DBG/.build-id"
    cd "$SRC"
    # non-PIE, lazy binding: calls go through .plt
    gcc $CFLAGS -fno-builtin -no-pie -o "$BIN/plt_loop" plt_loop.c
    # PIE + IBT: calls go through .plt.sec (crt1.o has no IBT note, so force it)
    gcc $CFLAGS -fno-builtin -fcf-protection=full -Wl,-z,ibtplt -o "$BIN/plt_loop_ibt" plt_loop.c
    gcc $CFLAGS -o "$BIN/vdso_clock" vdso_clock.c
    # -falign-functions=1: the byte after work_then_exit's `call exit` is the
    # first byte of after_work_then_exit (no padding in between)
    gcc $CFLAGS -falign-functions=1 -o "$BIN/exit_atexit" exit_atexit.c
    gcc $CFLAGS -o "$BIN/coroutine" coroutine.c
    g++ $CFLAGS -o "$BIN/cpp_inline" cpp_inline.cpp
    gcc $CFLAGS -pthread -no-pie -o "$BIN/threads" threads.c
    gcc $CFLAGS -o "$BIN/deep_recursion" deep_recursion.c
    gcc $CFLAGS -o "$BIN/writer" writer.c
    # stripped: split the debug info off, strip, add a .gnu_debuglink
    gcc $CFLAGS -o "$WORK/stripped" stripped.c
    objcopy --only-keep-debug "$WORK/stripped" "$DBG/stripped.debug"
    strip --strip-all -o "$BIN/stripped" "$WORK/stripped"
    (cd "$DBG" && objcopy --add-gnu-debuglink=stripped.debug "$BIN/stripped")
    local bid
    bid=$(readelf -n "$BIN/stripped" | awk '/Build ID/ {print $3}')
    mkdir -p "$DBG/.build-id/${bid:0:2}"
    cp "$DBG/stripped.debug" "$DBG/.build-id/${bid:0:2}/${bid:2}.debug"
    cd "$S"
    # sanity: the PLT flavours exist
    readelf -SW "$BIN/plt_loop" | grep -q ' \.plt ' || { echo "no .plt in plt_loop" >&2; exit 1; }
    readelf -SW "$BIN/plt_loop_ibt" | grep -q ' \.plt\.sec ' || { echo "no .plt.sec in plt_loop_ibt" >&2; exit 1; }
}

rec() {  # rec OUTPUT perf-record-args... -- command
    local out=$1; shift
    rm -rf "$out"
    echo "+ perf record --sample-cpu $* (-o $out)" >&2
    perf record --sample-cpu -o "$out" "$@" >/dev/null 2>>"$WORK/record.log"
}

record() {
    rm -rf "$S"/*.data
    cd "$S"
    # user-only samples (cpu-clock:u) so goldens need no kallsyms;
    # --sample-cpu everywhere so `perf script -F ...,cpu,...` works
    local p
    for p in $PROGS; do
        # ~300 samples each (~600 for threads); deep_recursion: 127-frame
        # callchains, keep its goldens small
        # plt_loop*: 4000 Hz, ~2000 samples, so the 2-instruction PLT stubs
        # get more than a handful of samples
        local scale=0.6 freq=$FREQ
        case $p in
            deep_recursion) scale=0.12 ;;
            plt_loop|plt_loop_ibt) scale=1 freq=4000 ;;
        esac
        rec "$S/$p.fp.data" -e cpu-clock:u -F $freq -g -- "$BIN/$p" $scale
    done
    for p in $DWARF_PROGS; do
        # ~40-60 samples of ~8.4 KiB each
        local scale=0.25
        case $p in threads) scale=0.15 ;; deep_recursion) scale=0.35 ;; esac
        rec "$S/$p.dwarf.data" -e cpu-clock:u -F $DWARF_FREQ --call-graph=dwarf -- "$BIN/$p" $scale
    done
    # format variants
    rec "$S/zstd.data" -z -e cpu-clock:u -F $FREQ -g -- "$BIN/cpp_inline" 0.6
    rec "$S/zstd_dwarf.data" -z -e cpu-clock:u -F $DWARF_FREQ --call-graph=dwarf -- "$BIN/threads" 0.4
    echo "+ perf record -o - (pipe) > pipe.data" >&2
    perf record --sample-cpu -o - -e cpu-clock:u -F $FREQ -g -- "$BIN/plt_loop" 0.6 > "$S/pipe.data" 2>>"$WORK/record.log"
    # user+kernel, two events
    rec "$S/two_events.data" -e cpu-clock,task-clock -F $FREQ -g -- "$BIN/vdso_clock" 0.3
    # tracepoints (user+kernel callchains, PERF_SAMPLE_RAW)
    rec "$S/tracepoint.data" -e syscalls:sys_enter_write,sched:sched_switch -g -- "$BIN/writer"
    # perf record -s (inherit_stat): READ records of each thread's counts, for report -T
    # (golden: perf --buildid-dir buildids report -T --stdio, its tip line left out,
    # in expected/threads_stat.report-T.txt)
    rec "$S/threads_stat.data" -s -e cpu-clock:u,task-clock:u -F 100 -- "$BIN/threads" 0.3
    # directory format: threads_dir.data/{data,data.N}
    rec "$S/threads_dir.data" --threads -e cpu-clock:u -F $FREQ -g -- "$BIN/threads" 0.3
    cp "$WORK/record.log" "$EXP/record.stderr.txt" 2>/dev/null || true
    # The build-id cache perf filled while recording ($HOME/.debug) is read
    # by collect_buildids: the vdso image only exists there.
}

kernel() {
    # The recordings with kernel samples, made again on the running kernel;
    # the copy of /proc/kallsyms perf keeps in its build-id cache travels
    # with them (samples/buildids/[kernel.kallsyms]/<build-id>/kallsyms, perf's
    # layout), so their kernel frames are named the same on any machine.
    cd "$S"
    # two_events' kernel frames come from interrupts that land while
    # vdso_clock runs (it makes no syscall): some runs get none, so record
    # until one holds a few.
    local try
    for try in 1 2 3 4 5 6 7 8 9 10; do
        rec "$S/two_events.data" -e cpu-clock,task-clock -F $FREQ -g -- "$BIN/vdso_clock" 0.3
        [ "$(perf script -i "$S/two_events.data" 2>/dev/null | grep -c 'kernel.kallsyms')" -ge 10 ] && break
    done
    rec "$S/tracepoint.data" -e syscalls:sys_enter_write,sched:sched_switch -g -- "$BIN/writer"
    add_buildids "$S/two_events.data" "$S/tracepoint.data"
    collect_kallsyms
}

add_buildids() {  # add_buildids FILE...: the ELF files these recordings need that buildids/ lacks
    local f bid path dest
    for f in "$@"; do perf buildid-list -i "$f" 2>/dev/null; done | sort -u | while read -r bid path; do
        [ ${#bid} -ge 16 ] && [ -n "$path" ] || continue
        case $path in "[kernel.kallsyms]"|/usr/lib/debug/*|*.ko|*.ko.*) continue ;; esac
        dest="$BIDS/.build-id/${bid:0:2}/${bid:2}"
        [ -f "$dest" ] && continue
        mkdir -p "$(dirname "$dest")"
        if [ "$path" = "[vdso]" ]; then cp "$HOME/.debug/[vdso]/$bid/vdso" "$dest"
        else cp "$(readlink -f "$path")" "$dest"; fi
        chmod 644 "$dest"
        echo "$bid $path" >> "$BIDS/INDEX.txt"
    done
    sort -u -o "$BIDS/INDEX.txt" "$BIDS/INDEX.txt"
}

collect_kallsyms() {
    # Only the kernels the committed recordings name (older copies go).
    rm -rf "$BIDS/[kernel.kallsyms]"
    local bid
    for bid in $(for f in "$S"/*.data; do perf buildid-list -i "$f" 2>/dev/null; done |
                 awk '$2 == "[kernel.kallsyms]" {print $1}' | sort -u); do
        if [ -f "$HOME/.debug/[kernel.kallsyms]/$bid/kallsyms" ]; then
            mkdir -p "$BIDS/[kernel.kallsyms]/$bid"
            cp "$HOME/.debug/[kernel.kallsyms]/$bid/kallsyms" "$BIDS/[kernel.kallsyms]/$bid/kallsyms"
            chmod 644 "$BIDS/[kernel.kallsyms]/$bid/kallsyms"
        else
            echo "warning: no kallsyms of kernel $bid (recorded elsewhere?)" >&2
        fi
    done
}

extra() {
    # build-ids inside the MMAP2 records (misc PERF_RECORD_MISC_MMAP_BUILD_ID),
    # no HEADER_BUILD_ID feature section
    rec "$S/buildid_mmap.data" --buildid-mmap -e cpu-clock:u -F $FREQ -g -- "$BIN/vdso_clock" 0.3
}

derive() {
    # the same records as cpp_inline.fp.data, in pipe format (perf inject
    # adds ATTR/FEATURE/... header records): for file-vs-pipe equivalence.
    # (perf inject of a -z file to a pipe keeps the COMPRESSED records, and
    # perf 6.1 then cannot decompress them: not usable, see README.)
    perf inject -i "$S/cpp_inline.fp.data" -o - > "$S/cpp_inline.fp.pipe.data" 2>/dev/null
}

collect_buildids() {
    rm -rf "$BIDS"
    mkdir -p "$BIDS/.build-id"
    local f bid path dest
    : > "$WORK/bids"
    for f in "$S"/*.data; do
        perf buildid-list -i "$f" 2>/dev/null >> "$WORK/bids" || true
    done
    # ld.so is mapped by every program even when no sample hits it; and
    # every sample program (writer is only in callchains, never a sample ip)
    for f in /lib64/ld-linux-x86-64.so.2 /usr/lib/x86_64-linux-gnu/libc.so.6 "$BIN"/*; do
        echo "$(readelf -n "$f" | awk '/Build ID/ {print $3}') $(readlink -f "$f")" >> "$WORK/bids"
    done
    sort -u "$WORK/bids" | while read -r bid path; do
        # pipe and -z recordings list hit DSOs without a build-id
        [ ${#bid} -ge 16 ] && [ -n "$path" ] || continue
        case $path in
            "[kernel.kallsyms]"|/usr/lib/debug/*|*.ko|*.ko.*) continue ;;
        esac
        dest="$BIDS/.build-id/${bid:0:2}/${bid:2}"
        mkdir -p "$(dirname "$dest")"
        if [ "$path" = "[vdso]" ]; then
            cp "$HOME/.debug/[vdso]/$bid/vdso" "$dest"
        else
            cp "$(readlink -f "$path")" "$dest"
        fi
        chmod 644 "$dest"
        echo "$bid $path"
    done > "$BIDS/INDEX.txt"
}

goldens() {
    mkdir -p "$EXP"
    perf version > "$EXP/PERF_VERSION"
    uname -r > "$EXP/KERNEL"
    # Every golden: clean HOME (no ~/.perfconfig) and the build-id store of
    # this tree as perf's build-id dir (samples/buildids/.build-id/xx/rest are
    # regular files: perf's "old style" cache layout, which it still reads).
    local f name P keep_dump
    P="perf --buildid-dir $BIDS"
    for f in "$S"/*.data; do
        name=$(basename "$f" .data)
        (cd "$S" && $P script -i "$(basename "$f")" > "$EXP/$name.script.txt" 2> "$EXP/$name.script.stderr.txt")
        (cd "$S" && $P script -i "$(basename "$f")" -F comm,pid,tid,time,cpu,period,event,ip,sym,symoff,dso \
            > "$EXP/$name.script-F.txt" 2> /dev/null)
        (cd "$S" && $P report -i "$(basename "$f")" --stats > "$EXP/$name.stats.txt" 2>&1)
        (cd "$S" && $P report -i "$(basename "$f")" --header-only > "$EXP/$name.header.txt" 2>&1)
        (cd "$S" && $P report -i "$(basename "$f")" -D > "$WORK/dump.txt" 2>/dev/null) || true
        # -D of a DWARF recording is ~30 KiB a sample: keep only one of them
        case $name in
            *.dwarf|zstd_dwarf) keep_dump=no ;;
            *) keep_dump=yes ;;
        esac
        case $name in
            plt_loop.dwarf) keep_dump=yes ;;
            plt_loop.fp|plt_loop_ibt.fp|deep_recursion.fp) keep_dump=no ;;  # size
        esac
        if [ $keep_dump = yes ] && [ "$(stat -c %s "$WORK/dump.txt")" -lt 2097152 ]; then
            mv "$WORK/dump.txt" "$EXP/$name.dump.txt"
        else
            rm -f "$EXP/$name.dump.txt"
        fi
        [ -s "$EXP/$name.script.stderr.txt" ] || rm -f "$EXP/$name.script.stderr.txt"
        # DWARF recordings: the same -F output without inline expansion
        # (perf only expands inlines for DWARF callchains: for the fp files
        # --no-inline changes nothing)
        case $name in
            *.dwarf|zstd_dwarf)
                (cd "$S" && $P script -i "$(basename "$f")" --no-inline \
                    -F comm,pid,tid,time,cpu,period,event,ip,sym,symoff,dso \
                    > "$EXP/$name.script-F-noinline.txt" 2>/dev/null) ;;
        esac
        # kernel frames named from this machine's /proc/kallsyms; the same
        # output without kernel symbols, as on any other machine:
        if grep -q 'kernel.kallsyms' "$EXP/$name.script.txt"; then
            (cd "$S" && $P script -i "$(basename "$f")" --kallsyms /dev/null \
                > "$EXP/$name.script-nokallsyms.txt" 2>/dev/null)
        fi
    done
    # stripped, "after": the debug file offered through a build-id dir
    mkdir -p "$WORK/dbgcache"
    cp -a "$DBG/.build-id" "$WORK/dbgcache/"
    for f in "$WORK"/dbgcache/.build-id/*/*.debug; do mv "$f" "${f%.debug}"; done
    (cd "$S" && perf --buildid-dir "$WORK/dbgcache" script -i stripped.fp.data \
        -F comm,pid,tid,time,cpu,period,event,ip,sym,symoff,dso \
        > "$EXP/stripped.fp.script-F-debug.txt" 2>/dev/null)
    # The one normalisation: a vdso without build-id (buildid_mmap.data) is
    # read from perf's own temporary copy, /tmp/perf-vdso.so-<6 random chars>.
    sed -i -E 's#/tmp/perf-vdso\.so-[A-Za-z0-9]{6}#/tmp/perf-vdso.so-XXXXXX#g' "$EXP"/*.txt
    # perf 6.1's goldens scored against the ground truth
    python3 "$S/truth/build_truth.py"
    python3 "$S/truth/match.py" --check > "$EXP/truth_scores.txt"
}

case ${1:-all} in
    all)
        mkdir -p "$EXP"
        build
        record
        extra
        derive
        collect_buildids
        collect_kallsyms
        goldens
        ;;
    kernel)
        kernel
        goldens
        ;;
    goldens)
        goldens
        ;;
    derive)
        derive
        goldens
        ;;
    extra)
        extra
        goldens
        ;;
    *)
        echo "usage: $0 [all|goldens|derive|extra|kernel]" >&2; exit 2 ;;
esac
du -sh "$S"
