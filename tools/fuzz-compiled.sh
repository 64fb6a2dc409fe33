#!/bin/sh
# The compiled extensions (perfdata/core/_*.c, symbolize/symbols/_*.c) under
# AddressSanitizer and UBSan: built into a temporary directory (not the checkout's), then
# tools/fuzz_compiled.py runs the fuzz harness's seeds with mutations through
# them, and every corpus file and fuzz crasher, with the sanitizer runtime
# preloaded into CPython.  0 findings required: the exit status is 1 on any
# finding or sanitizer report.
#
#   tools/fuzz-compiled.sh [INPUTS [JOBS [SEED]]]     (default 100000 2 1)
#
# FUZZ_COMPILED_WHOLE=0 leaves out the whole files (corpus, fuzz crashers,
# samples) for a quick run (tests/core/test_core_records.py runs one).
# A canary first proves the set-up reports a read past a buffer.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
INPUTS=${1:-100000}
JOBS=${2:-2}
SEED=${3:-1}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/perfdata-fuzz-compiled.XXXXXX")
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
ASAN_LIB=$(gcc -print-file-name=libasan.so)
[ -f "$ASAN_LIB" ] || { echo "fuzz-compiled: no libasan.so (gcc's AddressSanitizer runtime)" >&2; exit 2; }
echo "fuzz-compiled: building in $WORK"

cd "$REPO"
CFLAGS="$SAN" LDFLAGS="$SAN" python3 setup.py -q build_ext --build-lib "$WORK/lib" \
    --build-temp "$WORK/tmp" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; exit 2; }
# Every extension (optional=True in setup.py would leave a failed one out quietly).
for src in perfdata/core/_*.c symbolize/symbols/_*.c; do
    name=$(basename "$src" .c)
    ls "$WORK/lib/$(dirname "$src")/$name".*.so >/dev/null 2>&1 || {
        echo "fuzz-compiled: $name did not build:" >&2; cat "$WORK/build.log" >&2; exit 2; }
done

run_sanitized() {
    LD_PRELOAD="$ASAN_LIB" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 PYTHONMALLOC=malloc "$@"
}

# The canary: a module that reads one byte past a malloc'd buffer.
mkdir -p "$WORK/canary"
cat >"$WORK/canary/canary.c" <<'C'
#include <Python.h>
#include <stdlib.h>
static PyObject *overread(PyObject *self, PyObject *arg) {
    size_t n = (size_t)PyLong_AsSize_t(arg);
    volatile char *p = malloc(n);
    char c = p[n];
    free((void *)p);
    return PyLong_FromLong(c);
}
static PyMethodDef m[] = {{"overread", overread, METH_O, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "canary", "", -1, m, NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_canary(void) { return PyModule_Create(&d); }
C
gcc -shared -fPIC $SAN -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
    "$WORK/canary/canary.c" -o "$WORK/canary/canary$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
if (cd "$WORK/canary" && run_sanitized python3 -c 'import canary; canary.overread(64)') \
        >"$WORK/canary.log" 2>&1 || true; then :; fi
grep -q "heap-buffer-overflow" "$WORK/canary.log" || {
    echo "fuzz-compiled: the canary's read past its buffer was not reported: the set-up finds nothing" >&2
    cat "$WORK/canary.log" >&2; exit 2; }
echo "fuzz-compiled: canary reported (heap-buffer-overflow): the sanitizers are live"

# The run: JOBS processes, each its share of the inputs with its own seed
# (the whole files are run by the first only).
start=$(date +%s)
pids=""
j=0
while [ "$j" -lt "$JOBS" ]; do
    share=$(( INPUTS / JOBS + (j < INPUTS % JOBS ? 1 : 0) ))
    mkdir -p "$WORK/out$j"
    extra=""
    [ "$j" -eq 0 ] && [ "${FUZZ_COMPILED_WHOLE:-1}" != 0 ] || extra="--no-whole"
    run_sanitized python3 tools/fuzz_compiled.py --ext-dir "$WORK/lib" --inputs "$share" \
        --seed $(( SEED * 1000 + j )) --out "$WORK/out$j" $extra >"$WORK/out$j/log" 2>&1 &
    pids="$pids $!"
    j=$(( j + 1 ))
done
status=0
for pid in $pids; do
    wait "$pid" || status=1
done
end=$(date +%s)
j=0
while [ "$j" -lt "$JOBS" ]; do
    if ! grep -q '^FIGURES' "$WORK/out$j/log"; then
        echo "fuzz-compiled: job $j stopped before its end (a sanitizer report?); its input: $WORK/out$j/current.data" >&2
        tail -40 "$WORK/out$j/log" >&2
        status=1
    fi
    grep '^FINDING' "$WORK/out$j/log" >&2 || true
    j=$(( j + 1 ))
done
python3 - "$WORK" "$JOBS" "$(( end - start ))" <<'PY'
import json, sys
from pathlib import Path
work, jobs, wall = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
total = {}
for j in range(jobs):
    for line in (work / ("out%d" % j) / "log").read_text().splitlines():
        if line.startswith("FIGURES "):
            for k, v in json.loads(line[8:]).items():
                total[k] = total.get(k, 0) + v
print("fuzz-compiled: %d mutated inputs + %d whole files (corpus, fuzz crashers, samples), "
      "%d compared byte for byte with the pure path, %d walk_block calls on exact-size "
      "buffers, %d compiled DWARF walks on exact-size stack copies, "
      "%d perfdata script runs on the compiled core, %d record walks of script "
      "compared with PerfFile.records, %d symbol tables (kallsyms text, ELF file, fixup) "
      "compared with the pure path, %d LeafCounter (annotate) calls on exact-size sample "
      "bodies, %d annotate counts compared with the pure path; %d s wall with %d jobs; "
      "findings: %d"
      % (total.get("mutated", 0), total.get("whole", 0), total.get("compared", 0),
         total.get("walk_block", 0), total.get("unwinds", 0), total.get("script", 0),
         total.get("walks", 0),
         total.get("symtab", 0), total.get("leaf_bodies", 0), total.get("annotates", 0), wall,
         jobs, total.get("findings", 0)))
PY
[ "$status" -eq 0 ] && echo "fuzz-compiled: 0 findings" || echo "fuzz-compiled: FAILED (see above; work dir $WORK)"
exit "$status"
