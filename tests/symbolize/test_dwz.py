"""Debug info compressed by dwz: DWARF that continues in a supplementary file.

Debian's -dbgsym packages (dh_dwz, debhelper 12 and later) and Fedora's
debuginfo packages run `dwz -m`: the DIEs and strings several files share
move to one supplementary file (/usr/lib/debug/.dwz/...), which each file
names in .gnu_debugaltlink (or DWARF 5's .debug_sup, `dwz --dwarf-5`) with
its build-id.  An inline function that several units share is such a DIE:
its name, and the abstract instance the inlined calls point to, live there.

The oracle: dwz changes no code, symbol or build-id, only the DWARF's form,
so `perf script` of the recording read with the binaries as built (before
dwz) is what the dwz'd binaries must give.  (perf 6.1 itself names those
inline frames `??` once dwz has run, and then drops the function they are
inlined in.)  The recorded binaries stay as built; each case is given its
dwz'd copies with --path-map.
"""
import os
import shutil
import subprocess

import pytest

from conftest import PERF, requires_perf, run_cli
from script_compare import parse_samples

pytestmark = [
    requires_perf,
    pytest.mark.skipif(shutil.which("dwz") is None, reason="dwz is not installed"),
    pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objcopy") is None,
                       reason="gcc or objcopy is not installed"),
]

CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]

# The inline functions every unit shares (dwz -m moves their abstract
# instances to the supplementary file), and enough shared types that
# moving them is worth it to dwz.
COMMON_H = "".join("struct shared_t%d { int a; long b; double c; struct shared_t%d *next; };\n"
                   % (i, i) for i in range(300)) + r"""
static inline __attribute__((always_inline)) unsigned long mix_step(unsigned long x, int k)
{
    for (int i = 0; i < 64; i++)
        x = x * 6364136223846793005UL + k + i;
    return x;
}
static inline __attribute__((always_inline)) unsigned long mix_round(unsigned long x, int k)
{
    x = mix_step(x, k);
    return x ^ (x >> 17);
}
"""

UNIT_C = r"""#include "common.h"
struct shared_t1 g_%(name)s;
__attribute__((noinline)) unsigned long %(name)s_work(unsigned long x)
{
    for (int j = 0; j < 100; j++)
        x = mix_round(x, j + %(k)d);
    return x;
}
struct ptrs_%(name)s {
""" + "".join("    struct shared_t%d *p%d;\n" % (i, i) for i in range(300)) + """} ptrs_%(name)s_v;
"""

MAIN_C = r"""#include <stdlib.h>
#include <time.h>
unsigned long a1_work(unsigned long), a2_work(unsigned long);
unsigned long l1_work(unsigned long), l2_work(unsigned long);
volatile unsigned long sink;
int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long x = 1;
    do {
        x = a1_work(x); x = a2_work(x); x = l1_work(x); x = l2_work(x);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    sink = x;
    return 0;
}
"""

FILES = ("prog", "libdz.so")
INLINED = ("mix_step", "mix_round")


def _run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True,
                          timeout=120, **kw)


def _dwz(src_dir, out_dir, sup_path, sup_name, *options):
    """Copies of the built files in out_dir, dwz'd together into the
    supplementary file sup_path, which they name sup_name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in FILES:
        shutil.copy(src_dir / f, out_dir / f)
    sup_path.parent.mkdir(parents=True, exist_ok=True)
    _run(["dwz", *options, "-m", sup_path, "-M", sup_name, *[out_dir / f for f in FILES]])
    return out_dir


def _build_id(path):
    from symbolize import Binary
    return Binary(str(path)).build_id


def _split(bin_dir, debug_root):
    """Debian's and Fedora's layout: each file's debug part at
    debug_root/.build-id/xx/rest.debug, the binaries stripped."""
    for f in FILES:
        bid = _build_id(bin_dir / f)
        dst = debug_root / ".build-id" / bid[:2] / (bid[2:] + ".debug")
        dst.parent.mkdir(parents=True, exist_ok=True)
        _run(["objcopy", "--only-keep-debug", bin_dir / f, dst])
        _run(["objcopy", "--strip-debug", "--remove-section=.gnu_debugaltlink",
              bin_dir / f])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    top = tmp_path_factory.mktemp("dwz")
    src, home = top / "src", top / "home"
    src.mkdir()
    home.mkdir()
    (src / "common.h").write_text(COMMON_H)
    for name, k in (("a1", 3), ("a2", 5), ("l1", 7), ("l2", 9)):
        (src / (name + ".c")).write_text(UNIT_C % {"name": name, "k": k})
    (src / "main.c").write_text(MAIN_C)
    _run(["gcc", *CFLAGS, "-shared", "-fPIC", "-o", src / "libdz.so", src / "l1.c", src / "l2.c"])
    _run(["gcc", *CFLAGS, "-o", src / "prog", src / "main.c", src / "a1.c", src / "a2.c",
          "-L", src, "-ldz", "-Wl,-rpath," + str(src)])
    env = dict(os.environ, HOME=str(home))
    env.pop("DEBUGINFOD_URLS", None)
    data = top / "dw.data"
    _run([PERF, "record", "-q", "--no-buildid-cache", "-e", "cpu-clock:u", "-F", "1000",
          "--call-graph=dwarf", "-o", data, "--", src / "prog", "0.3"], env=env)
    perf_text = _run([PERF, "script", "-i", data], env=env).stdout.decode()
    # The same files at another place, read through --path-map as the
    # dwz'd copies are: the text every case below must print.
    full = top / "full"
    full.mkdir()
    for f in FILES:
        shutil.copy(src / f, full / f)
    rc, full_text, err = run_cli(["script", str(data), "--path-map", "%s=%s" % (src, full),
                                  "--symbol-cache", str(top / "cache-full")])
    assert rc == 0, err
    return {"top": top, "src": src, "data": data, "perf": perf_text, "full": full_text}


def _script(built, files_dir, cache, *extra):
    rc, out, err = run_cli(["script", str(built["data"]),
                            "--path-map", "%s=%s" % (built["src"], files_dir),
                            "--symbol-cache", str(cache), *extra])
    assert rc == 0, err
    return out, err


def _inline_frames(text):
    return [[sym for _, sym, _ in frames if sym.split("+")[0] in INLINED]
            for _, frames in parse_samples(text)]


def _without_inlined(text):
    """The text less the frame lines of the functions inlined from the
    supplementary file."""
    def inlined(line):
        words = line.split()
        return line.startswith("\t") and len(words) > 1 and words[1].split("+")[0] in INLINED
    return "".join(line for line in text.splitlines(True) if not inlined(line))


def test_full_build_matches_perf(built):
    """What the cases compare with: perfdata's inline frames of the files
    as built are perf's, sample by sample."""
    ours, perfs = _inline_frames(built["full"]), _inline_frames(built["perf"])
    assert len(ours) == len(perfs)
    assert ours == perfs and sum(map(len, ours)) > 0


@pytest.mark.parametrize("native", [True, False], ids=["native-index", "pyelftools"])
@pytest.mark.parametrize("form", ["gnu_debugaltlink", "debug_sup"])
def test_inline_names_through_the_supplementary_file(built, tmp_path, monkeypatch, native, form):
    if not native:
        from symbolize.symbols import native as native_mod
        monkeypatch.setattr(native_mod, "_symbolic", None)
    if form == "debug_sup":
        # DWARF 5's form, named relative to the files (next to them here)
        files = _dwz(built["src"], tmp_path / "bin", tmp_path / "bin" / "shared.sup",
                     "shared.sup", "--dwarf-5")
    else:
        sup = tmp_path / "dwz" / "shared.debug"
        files = _dwz(built["src"], tmp_path / "bin", sup, str(sup))
    from symbolize import Binary
    link = Binary(str(files / "prog")).supplementary_link
    assert link is not None and link.identity
    out, err = _script(built, files, tmp_path / "cache")
    assert out == built["full"]
    assert "supplementary" not in err


@pytest.mark.parametrize("layout", ["fedora", "debian"])
def test_split_debug_files_with_their_dwz_file_in_a_debug_dir(built, tmp_path, layout):
    """Fedora links each .dwz file into .build-id by its build-id; Debian's
    name it by its path under /usr/lib/debug/.dwz, which a --debug-dir
    given as that root holds at DIR/.dwz/..."""
    dbg = tmp_path / "debug"
    if layout == "fedora":
        sup = tmp_path / "elsewhere" / "perfdata-test-1.0-1.x86_64"
        files = _dwz(built["src"], tmp_path / "bin", sup,
                     "/usr/lib/debug/.dwz/perfdata-test-1.0-1.x86_64")
        bid = _build_id(sup)
        link = dbg / ".build-id" / bid[:2] / (bid[2:] + ".debug")
        link.parent.mkdir(parents=True)
        shutil.move(str(sup), str(link))
    else:
        name = "/usr/lib/debug/.dwz/x86_64-linux-gnu/perfdata-test.debug"
        files = _dwz(built["src"], tmp_path / "bin", dbg / name[len("/usr/lib/debug/"):], name)
    _split(files, dbg)
    out, err = _script(built, files, tmp_path / "cache", "--debug-dir", str(dbg))
    assert out == built["full"]
    assert "supplementary" not in err


def test_missing_supplementary_file_said_then_installed(built, tmp_path):
    """Without the .dwz file the frames inlined from it cannot be named: a
    warning per file says which file is missing and where it is looked for;
    once it is installed, the next run (the same cache) names them all."""
    name = "/usr/lib/debug/.dwz/x86_64-linux-gnu/perfdata-test.debug"
    away = tmp_path / "not-installed.debug"
    files = _dwz(built["src"], tmp_path / "bin", away, name)
    dbg = tmp_path / "debug"
    _split(files, dbg)
    cache = tmp_path / "cache"
    out, err = _script(built, files, cache, "--debug-dir", str(dbg))
    assert not any(_inline_frames(out))
    said = [line for line in err.splitlines() if "supplementary file" in line]
    assert len(said) == len(FILES), err
    assert all(name in line and "--debug-dir" in line for line in said)
    # Without the inlined frames, the text is the full one less those lines.
    assert out == _without_inlined(built["full"])
    # diagnose names the frames whose inlined calls are left out: perf's
    # frames (of the files as built) that follow an inlined one of them.
    want = sum(1 for _, frames in parse_samples(built["perf"]) for k in range(1, len(frames))
               if frames[k][2] != "inlined" and frames[k - 1][1].split("+")[0] in INLINED)
    opts = ["--path-map", "%s=%s" % (built["src"], files), "--debug-dir", str(dbg),
            "--symbol-cache", str(cache)]
    assert _diagnosed(built, opts)["frames"] == want > 0
    installed = dbg / name[len("/usr/lib/debug/"):]
    installed.parent.mkdir(parents=True)
    shutil.move(str(away), str(installed))
    out, err = _script(built, files, cache, "--debug-dir", str(dbg))
    assert out == built["full"] and "supplementary" not in err
    assert _diagnosed(built, opts) is None


def _diagnosed(built, opts):
    """diagnose's inline-unnamed class (None when it is empty)."""
    import json
    rc, out, err = run_cli(["diagnose", str(built["data"]), "--json", *opts])
    assert rc == 0, err
    found = [c for c in json.loads(out)["classes"] if c["class"] == "inline-unnamed"]
    return found[0] if found else None


def test_another_builds_supplementary_file_is_not_used(built, tmp_path):
    """A .dwz file at the named path that is not the one named (another
    build's, another version of the package) is refused by its build-id,
    and said to be."""
    sup = tmp_path / "dwz" / "shared.debug"
    files = _dwz(built["src"], tmp_path / "bin", sup, str(sup))
    real_id = _build_id(sup)
    # The next version of the sources (a field more in the shared types),
    # dwz'd into a file of the same name.
    other = tmp_path / "other"
    shutil.copytree(built["src"], other)
    (other / "common.h").write_text(COMMON_H.replace("double c;", "double c; int d;"))
    _run(["gcc", *CFLAGS, "-shared", "-fPIC", "-o", other / "libdz.so",
          other / "l1.c", other / "l2.c"])
    _run(["gcc", *CFLAGS, "-o", other / "prog", other / "main.c", other / "a1.c",
          other / "a2.c", "-L", other, "-ldz"])
    _dwz(other, tmp_path / "other-dwz", tmp_path / "other.debug", str(sup))
    os.replace(tmp_path / "other.debug", sup)
    from symbolize import Binary
    assert Binary(str(sup)).supplementary_identity not in (None, real_id)
    out, err = _script(built, files, tmp_path / "cache")
    assert not any(_inline_frames(out))
    assert "not the supplementary file %s" % real_id in err
    assert out == _without_inlined(built["full"])


def test_archive_carries_the_supplementary_file(built, tmp_path):
    """`perfdata archive` packs the .dwz file with the debug files that
    refer to it: unpacked elsewhere, with the debug dir gone, the inline
    frames are all named."""
    name = "/usr/lib/debug/.dwz/x86_64-linux-gnu/perfdata-test.debug"
    dbg = tmp_path / "debug"
    files = _dwz(built["src"], tmp_path / "bin", dbg / name[len("/usr/lib/debug/"):], name)
    _split(files, dbg)
    packed = tmp_path / "profile.tar.zst"
    rc, listing, err = run_cli(["archive", str(built["data"]), "-o", str(packed),
                                "--path-map", "%s=%s" % (built["src"], files),
                                "--debug-dir", str(dbg),
                                "--symbol-cache", str(tmp_path / "cache-a")])
    assert rc == 0, err
    assert sum(1 for line in listing.splitlines() if line.split()[:1] == ["dwz"]) == 1, listing
    shutil.rmtree(dbg)
    unpacked = tmp_path / "unpacked"
    rc, _, err = run_cli(["archive", "-x", str(packed), "-C", str(unpacked)])
    assert rc == 0, err
    out, err = _script(built, files, tmp_path / "cache-b", "--debug-dir", str(unpacked))
    assert out == built["full"] and "supplementary" not in err


def test_missing_supplementary_file_fetched_from_debuginfod(built, tmp_path, monkeypatch):
    """debuginfod serves a .dwz file as the debuginfo of its build-id
    (elfutils' server indexes them so): with --debuginfod, the one not
    installed is fetched, checked and used."""
    import http.server
    import threading
    name = "/usr/lib/debug/.dwz/x86_64-linux-gnu/perfdata-test.debug"
    served = tmp_path / "served.debug"
    files = _dwz(built["src"], tmp_path / "bin", served, name)
    dbg = tmp_path / "debug"
    _split(files, dbg)
    want = "/buildid/%s/debuginfo" % _build_id(served)
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            asked.append(self.path)
            if self.path != want:
                self.send_error(404)
                return
            body = served.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "client-cache"))
        monkeypatch.delenv("DEBUGINFOD_URLS", raising=False)
        out, err = _script(built, files, tmp_path / "cache", "--debug-dir", str(dbg),
                           "--debuginfod", "http://127.0.0.1:%d" % httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert want in asked
    assert out == built["full"] and "supplementary" not in err
