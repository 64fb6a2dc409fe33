"""perfdata against perf 6.1 on real programs recorded at test time (issue 13).

A compile of a template-heavy C++ file by this machine's g++ -O2 (its cc1plus,
a large C++ program with ~29,000 C++ symbols) is recorded with `perf record
-g`, and perf is run on the result as the oracle: `perf script`, `perf report`,
and `perf probe -F` (perf's names of every symbol of a binary). Nothing is
taken from an earlier run: whatever this machine's gcc, libc and kernel are,
the comparison is with what perf prints for them.
"""
import collections
import os
import shutil
import subprocess
import sys

import pytest

from conftest import PERF, requires_kernel_symbols_here, requires_libc_debug_here, requires_perf, requires_perf_tool, run_cli
from script_compare import compare, parse_samples

GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed (the program recorded)")

# Templates, lambdas, std containers: cc1plus spends its time in C++ code of
# its own and of libstdc++.
TEMPLATE_SOURCE = r"""
#include <map>
#include <vector>
#include <algorithm>
#include <string>
#include <functional>
#include <memory>
#include <tuple>
template <int N> struct Fib { static constexpr long v = Fib<N-1>::v + Fib<N-2>::v; };
template <> struct Fib<0> { static constexpr long v = 0; };
template <> struct Fib<1> { static constexpr long v = 1; };
template <typename T, int N> struct Box { T t[N]; T sum() const { T s{}; for (auto &x : t) s += x; return s; } };
template <typename... Ts> auto total(Ts... ts) { return (ts + ...); }
#define INST(n) long f##n() { std::map<std::string, std::vector<int>> m; m["a"].push_back(n); \
  std::vector<std::tuple<int,double,std::string>> v; v.emplace_back(n, 1.0, "x"); \
  std::sort(v.begin(), v.end()); Box<double, n + 1> b{}; \
  std::function<long(int)> g = [&](int k){ return k + Fib<(n % 40) + 1>::v; }; \
  auto p = std::make_shared<std::map<int, std::string>>(); (*p)[n] = "y"; \
  return g(n) + total(n, 1, 2L, 3.0f) + (long)b.sum() + m.size() + p->size(); }
#define I10(a) INST(a##0) INST(a##1) INST(a##2) INST(a##3) INST(a##4) \
  INST(a##5) INST(a##6) INST(a##7) INST(a##8) INST(a##9)
I10(1) I10(2) I10(3)
"""


def _cc1plus():
    if GXX is None:
        return None
    out = subprocess.run([GXX, "-print-prog-name=cc1plus"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.isfile(path) else None


def _perf(args, **kw):
    return subprocess.run([PERF] + args, capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture(scope="module")
def cc1plus_recording(tmp_path_factory):
    """(perf.data of `g++ -O2 -c` under `perf record -g`, perf script's text)."""
    if GXX is None:
        pytest.skip("g++ is not installed")
    tmp = tmp_path_factory.mktemp("cc1plus")
    src = tmp / "templates.cc"
    src.write_text(TEMPLATE_SOURCE)
    data = tmp / "cc1plus.data"
    rec = _perf(["record", "-q", "-g", "-F", "1500", "-o", str(data), "--",
                 GXX, "-O2", "-c", str(src), "-o", os.devnull], cwd=tmp)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record g++: %s" % rec.stderr.strip()[-200:])
    env = dict(os.environ, HOME=str(tmp))     # no ~/.debug of the user's
    script = _perf(["script", "-i", str(data)], cwd=tmp, env=env)
    assert script.returncode == 0, script.stderr
    return data, script.stdout, env


def _ours(args):
    rc, out, err = run_cli(args)
    assert rc == 0, err
    return out


_SCRIPTS = {}


def _ours_script(data):
    """perfdata script's text of a recording, made once per test session."""
    if data not in _SCRIPTS:
        _SCRIPTS[data] = _ours(["script", str(data)])
    return _SCRIPTS[data]


# ------------------------------------------------------------ 1. C++ names
@requires_perf_tool
def test_cxx_names_as_perf_on_every_cc1plus_symbol():
    """perf's names (no parameter list, return type or clone suffix) of all
    the symbols of cc1plus, as `perf probe -F` prints them demangled and not."""
    from symbolize.symbols.demangle import demangle
    cc1plus = _cc1plus()
    if cc1plus is None:
        pytest.skip("no cc1plus (g++) here")

    def names(*extra):
        out = _perf(["probe", "-x", cc1plus, "-F", "--filter", "*"] + list(extra))
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    raw, perfs, verbose = names("--no-demangle"), names(), names("-v")
    cxx = [n for n in raw if n.startswith("_Z")]
    assert len(raw) == len(perfs) == len(verbose) and len(cxx) > 1000
    for params, expected in ((False, perfs), (True, verbose)):
        # perf 6.1's form, and perf -v's full signatures (--signatures)
        ours = collections.Counter(demangle(n, params=params) for n in raw)
        theirs = collections.Counter(expected)
        assert ours - theirs == collections.Counter(), params
        assert theirs - ours == collections.Counter(), params


@requires_perf
@needs_gxx
def test_cc1plus_script_and_report_as_perf(cc1plus_recording):
    """script frames and report rows of the cc1plus recording equal perf's,
    but for the deliberate differences (docs/differences.md); report keys rows by symbol
    (two symbols printed alike stay two rows, as in perf)."""
    data, perf_script, env = cc1plus_recording
    ours = _ours_script(data)
    stats = compare(ours, perf_script)
    assert stats["samples_perf"] == stats["samples_ours"] > 100
    assert stats["header_diff"] == 0
    assert stats["other"] == [], stats["other"][:5]
    cxx = sum(1 for _, frames in parse_samples(perf_script) for f in frames if "::" in f[1])
    assert cxx > 0, "no C++ frame recorded"
    # full signatures: --signatures as perf -v (libiberty with DMGL_PARAMS)
    verbose = _perf(["script", "-v", "-i", str(data)], env=env).stdout
    full = compare(_ours(["script", "--signatures", str(data)]), verbose)
    assert full["other"] == [] and full["equal"] == stats["equal"]
    assert any(x != y for (_, f1), (_, f2) in zip(parse_samples(verbose),
                                                  parse_samples(perf_script))
               for x, y in zip(f1, f2)), "no name with a signature recorded"

    theirs = _perf(["report", "-i", str(data), "--stdio", "--no-children", "-g", "none",
                    "--sort", "dso,sym"], env=env).stdout
    mine = _ours(["report", str(data), "--sort", "dso,sym"])

    def rows(text):
        out = collections.Counter()
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            pct, rest = line.split(None, 1)
            out[(pct, " ".join(rest.split()))] += 1
        return out
    a, b = rows(mine), rows(theirs)
    # perf prints a PLT stub it cannot name as an address; perfdata names it
    only_ours = [k for k in a - b if not k[1].endswith("@plt")]
    # (perf also names a libc stub after another slot without libc's debug
    # file, e.g. "__nptl_change_stack_perm@plt": the same deliberate kind)
    only_perf = [k for k in b - a if "[.] 0x" not in k[1] and
                 not k[1].endswith(("@plt", "[.] _init"))]
    assert only_ours == [] and only_perf == []
    # ... and several stubs perf names alike ("_init") are one row of theirs,
    # several of ours: the same share of the samples in all.
    def share(rows_):
        return sum(float(pct.rstrip("%")) * n for (pct, _), n in rows_.items())
    extra_ours, extra_perf = a - b, b - a
    assert abs(share(extra_ours) - share(extra_perf)) <= \
        0.005 * (sum(extra_ours.values()) + sum(extra_perf.values())) + 1e-9
    assert sum(b.values()) > 100


CXX_PROGRAM = r"""
#include <vector>
#include <map>
#include <cstdio>
namespace {
__attribute__((noinline)) unsigned parse_round(std::vector<int>& v, unsigned k) {
    unsigned s = 0;
    for (unsigned r = 0; r < 200; ++r)
        for (auto x : v) { s += (x * k) ^ r; asm volatile("" : "+r"(s)); }
    return s;
}
}
namespace ns {
template <typename F>
__attribute__((noinline)) unsigned apply(F f, int n) {
    unsigned s = 0;
    for (int i = 0; i < n; ++i) { s += f(i); asm volatile("" : "+r"(s)); }
    return s;
}
}
int main(int argc, char**) {
    std::vector<int> v(20000, argc);
    std::map<int, int> m;
    for (int i = 0; i < 50000; ++i) m[i * 7 % 1000] += i;
    unsigned t = 0;
    for (int j = 0; j < 30; ++j) {
        t += parse_round(v, 3);
        t += ns::apply([](auto x) { return x * 3 + 1; }, 200000);
        for (int p = 0; p < 300; ++p)
            for (auto it = m.begin(); it != m.end(); ++it) t += it->second;
    }
    std::printf("%u\n", t);
}
"""


@requires_libc_debug_here
@requires_perf
@needs_gxx
def test_cxx_program_names_as_perf(tmp_path):
    """A C++ program built here (anonymous namespace, a template called with
    a lambda, both cloned by IPA-CP: `[clone .constprop.0]`; std::map
    iteration through libstdc++'s PLT): every frame named as perf names it,
    and report's rows."""
    src = tmp_path / "prog.cc"
    src.write_text(CXX_PROGRAM)
    exe = tmp_path / "prog"
    built = subprocess.run([GXX, "-O2", "-fno-omit-frame-pointer", "-o", str(exe), str(src)],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    data = tmp_path / "prog.data"
    # user space only: the C++ names are the point, and kernel rows would
    # depend on this machine's kernel symbols
    rec = _perf(["record", "-q", "-g", "--all-user", "-F", "2000", "-o", str(data), "--",
                 str(exe)], cwd=tmp_path)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    env = dict(os.environ, HOME=str(tmp_path))
    perf_script = _perf(["script", "-i", str(data)], env=env).stdout
    stats = compare(_ours(["script", str(data)]), perf_script)
    assert stats["other"] == [], stats["other"][:5]
    names = {f[1].rsplit("+", 1)[0] for _, fr in parse_samples(perf_script) for f in fr}
    assert {"(anonymous namespace)::parse_round", "std::_Rb_tree_increment"} <= names, names
    theirs = _perf(["report", "-i", str(data), "--stdio", "--no-children", "-g", "none",
                    "--sort", "sym"], env=env).stdout
    mine = _ours(["report", str(data), "--sort", "sym"])
    rows = lambda text: sorted(" ".join(l.split()) for l in text.splitlines()
                               if l.strip() and not l.startswith("#"))
    # perf prints a PLT stub it cannot name as an address, which perfdata
    # names (row ...@plt); an address neither can name is a row of both.
    ours_rows = [r for r in rows(mine) if "@plt" not in r]
    assert ours_rows == [r for r in rows(theirs) if "@plt" not in r and
                         ("[.] 0x" not in r or r in ours_rows)]


# ------------------------------------------------------------ 7. PLT names
def _libs():
    import ctypes.util
    found = []
    for name in ("m", "c", "stdc++"):
        lib = ctypes.util.find_library(name)
        for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64",
                  "/usr/lib/aarch64-linux-gnu"):
            if lib and os.path.isfile(os.path.join(d, lib)):
                found.append(os.path.realpath(os.path.join(d, lib)))
                break
    return found


@requires_libc_debug_here
@requires_perf_tool
def test_plt_names_carry_no_version():
    """Every PLT stub perf names is named alike (`memcpy@plt`), the IFUNC
    slots perf leaves as a bare `@plt` included, with no symbol version."""
    from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions
    libs = _libs() + ([_cc1plus()] if _cc1plus() else [])
    if not libs:
        pytest.skip("no libc/libm/libstdc++ found")
    sz = Symbolizer(DebugInfoLocator(), SymbolizerOptions(cache_dir=None))
    checked = 0
    for path in libs:
        out = _perf(["probe", "-x", path, "-F", "--filter", "*"])
        assert out.returncode == 0, out.stderr
        theirs = collections.Counter(n for n in out.stdout.splitlines() if n.endswith("@plt"))
        table = sz.symbol_table(path)
        ours = collections.Counter(sz.demangle_name(s.name) for s in table
                                   if s.name.endswith("@plt"))
        unnamed = theirs.pop("@plt", 0)
        assert theirs - ours == collections.Counter(), path
        # perfdata names the slots perf leaves `@plt`, and the .plt.got ones
        # perf does not list
        binary = sz.binary_for(path).binary
        got = binary.get_section(".plt.got")
        in_got = collections.Counter(
            sz.demangle_name(s.name) for s in table if s.name.endswith("@plt") and
            got is not None and got.addr <= s.start < got.addr + got.size)
        extra = ours - theirs - in_got
        assert sum(extra.values()) == unnamed, (path, extra)
        assert not [n for n in ours if "@" in n[:-4]], path
        checked += sum(ours.values())
    assert checked > 50


# ------------------------------------------------- 2. the return-address rule
def _instruction_before(path, start, address):
    """objdump's mnemonic of the instruction that ends at `address` (svma),
    disassembling from `start` (a function's first byte), or None."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump is not installed (the oracle for instructions)")
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", "--start-address=%#x" % start,
                          "--stop-address=%#x" % address, path],
                         capture_output=True, text=True, timeout=60).stdout
    last = None
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].strip().endswith(":"):
            last = parts[1].split()[0] if parts[1].split() else None
    return last


@requires_perf
@needs_gxx
def test_return_address_rule_only_after_a_call(cc1plus_recording):
    """perf names a return address as is; perfdata looks it up at address-1
    only where a call ends there (a frame-pointer walk also yields
    addresses no call pushed). Every frame named differently from perf that
    way must follow a call, per objdump; those perf names `f+0x0` without a
    call before are named as perf names them."""
    from symbolize import Binary
    data, perf_script, env = cc1plus_recording
    ours = parse_samples(_ours_script(data))
    theirs = parse_samples(perf_script)
    differ = same_at_entry = 0
    checked = {}
    for (_, f1), (_, f2) in zip(ours, theirs):
        for (a1, s1, d1), (a2, s2, d2) in zip(f1, f2):
            if d1 != d2 or a1 != a2 or not s2.endswith("+0x0") or not d1.startswith("/"):
                continue
            if s1 == s2:
                same_at_entry += 1
                continue
            if s1.endswith("+0x0") or s2.split("+")[0] in ("@plt", "_init"):
                continue            # named at the address; perf's unnamed PLT slot
            differ += 1
            key = (d1, a1)
            if key not in checked:
                b = Binary(d1)
                svma = b.file_offset_to_svma(a1)
                offset = int(s1.rsplit("+", 1)[1], 16)
                checked[key] = _instruction_before(d1, svma - offset, svma)
    assert same_at_entry + differ > 0, "no frame at a function's first byte recorded"
    not_calls = {k: v for k, v in checked.items() if not (v or "").startswith("call")}
    assert not_calls == {}


# --------------------------------------------------- 3, 4. kernel frames
@pytest.fixture(scope="module")
def system_wide(tmp_path_factory):
    """(perf.data of `perf record -a -g` over a busy moment, perf script's
    text): kernel stacks through interrupt entries, and idle stacks down to
    start_kernel where a cpu was idle."""
    tmp = tmp_path_factory.mktemp("system_wide")
    data = tmp / "system.data"
    busy = "import os\nfor i in range(30000): os.stat('/')\nsum(i * i for i in range(300000))"
    rec = _perf(["record", "-q", "-a", "-g", "-F", "997", "-e", "cpu-clock",
                 "-e", "sched:sched_switch", "-o", str(data), "--",
                 sys.executable, "-c", busy], cwd=tmp)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record system-wide: %s" % rec.stderr.strip()[-200:])
    env = dict(os.environ, HOME=str(tmp))
    script = _perf(["script", "-i", str(data)], cwd=tmp, env=env)
    assert script.returncode == 0, script.stderr
    return data, script.stdout


def _kernel_frames(ours_text, perf_text):
    """[(ours, perf, perf's previous frame)] of the kernel frames perf names."""
    out = []
    for (_, f1), (_, f2) in zip(parse_samples(ours_text), parse_samples(perf_text)):
        for i, (x, y) in enumerate(zip(f1, f2)):
            if y[2] == "[kernel.kallsyms]" and y[1] != "[unknown]":
                out.append((x, y, f2[i - 1][1] if i else ""))
    return out


def _sampler(data):
    import perfdata
    from perfdata.resolve.symbolized import SampleSymbolizer
    from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions
    pf = perfdata.open(str(data))
    sampler = SampleSymbolizer(pf, Symbolizer(DebugInfoLocator(),
                                              SymbolizerOptions(cache_dir=None)))
    sample = next((s for s in sampler if s.cpumode == 1), None)     # a kernel sample
    if sample is None:
        pf.close()
        pytest.skip("no kernel sample recorded")
    return pf, sampler, sample


@requires_perf
def test_kernel_frames_after_interrupt_entry(system_wide):
    """The frame after asm_sysvec_*/asm_common_interrupt/asm_exc_* is the
    interrupted address, named as perf names it; a __pfx_ padding symbol
    never names an address that is a real function's first byte."""
    data, perf_script = system_wide
    ours = _ours_script(data)
    frames = _kernel_frames(ours, perf_script)
    if len(frames) <= 100:
        pytest.skip("perf named %d kernel frames only (kernel symbols hidden?)" % len(frames))
    after_entry = [(x, y) for x, y, prev in frames
                   if prev.startswith(("asm_sysvec_", "asm_common_interrupt", "asm_exc_"))]
    assert [(x, y) for x, y in after_entry if x != y] == []
    assert [(x, y) for x, y, _ in frames if x[1].startswith("__pfx_") and
            not y[1].startswith("__pfx_")] == []
    # A return address at a function's first byte (address-1 in its __pfx_
    # padding), for every such function kallsyms lists: the function itself.
    pf, sampler, sample = _sampler(data)
    with pf:
        table = sampler.symbolizer.kernel_symbols(sampler.build_ids.get("[kernel.kallsyms]"))
        by_start = {s.start: s for s in table if s.module is None}
        pfx = [s for s in table if s.name.startswith("__pfx_") and s.module is None and
               s.end in by_start][:2000]
        if not pfx:
            pytest.skip("this kernel has no __pfx_ padding symbols")
        wrong = []
        for s in pfx:
            got = sampler.frames_for_address(sample, s.end, True, True)
            if got[-1].symbol != by_start[s.end].name:
                wrong.append((hex(s.end), got[-1].symbol, by_start[s.end].name))
        assert wrong == []


@requires_kernel_symbols_here
@requires_perf
def test_kernel_text_past_etext(system_wide):
    """.init.text (start_kernel, x86_64_start_kernel: the bottom of the idle
    stacks of cpu 0) lies past the kernel MMAP's end (_etext); perf's kernel
    map reaches the last kallsyms symbol, and so does perfdata's."""
    data, perf_script = system_wide
    ours = _ours_script(data)
    frames = _kernel_frames(ours, perf_script)
    # but docs/differences.md's return address at a function's end (a noreturn call
    # ends x86_64_start_reservations: perf names the next symbol, +0x0)
    assert [(x, y) for x, y, _ in frames if x != y and not
            (x[0] == y[0] and y[1].endswith("+0x0") and not x[1].endswith("+0x0"))] == []
    pf, sampler, sample = _sampler(data)
    with pf:
        main = next(m for m in sampler.machine.kernel_maps if m.path == "[kernel.kallsyms]")
        table = sampler.symbolizer.kernel_symbols(sampler.build_ids.get("[kernel.kallsyms]"))
        past = [s for s in table if s.module is None and s.start >= main.end and s.size > 1
                and not s.name.startswith("__pfx_")]
        if not past:
            pytest.skip("no kernel text past the kernel map's end here")
        assert any(s.name == "start_kernel" for s in past) or len(past) > 10
        wrong = []
        for s in past[:3000]:
            got = sampler.frames_for_address(sample, s.start + 1, True, True)
            if (got[-1].symbol, got[-1].dso) != (s.name, "[kernel.kallsyms]"):
                wrong.append((hex(s.start), s.name, got[-1].symbol, got[-1].dso))
        assert wrong == []
    idle = sum(1 for x, y, _ in frames if y[1].startswith("start_kernel"))
    print("idle stacks through start_kernel: %d" % idle)


# ------------------------------------------------ 8. command lines refused
_PERF_REFUSALS = ("Invalid field requested", "Invalid event type", "Cannot mix",
                  "Invalid time string", "Unknown --sort key")
COMMAND_LINES = [
    ("script", ["-F", "comm,bogus"]), ("script", ["-F", "comm,cgroup"]),
    ("script", ["-F", "xx:comm"]),
    ("script", ["-F", "+ip,comm"]), ("script", ["-F", "comm,-sym"]),
    ("script", ["-F", "comm,flags,insnlen"]),
    ("script", ["-F", "sw:comm,tid"]),
    ("script", ["--time", "5,1"]),
    ("script", ["--time", "abc"]), ("script", ["--time", "1,2,3"]),
    ("script", ["--time", "1.x,2"]), ("script", ["--time", "1,1"]),
    ("script", ["--time", ",2"]),
    ("report", ["--sort", "bogus"]), ("report", ["--sort", "comm,bogus"]),
]


@requires_perf
@pytest.mark.parametrize("command,args", COMMAND_LINES,
                         ids=[" ".join([c] + a) for c, a in COMMAND_LINES])
def test_command_lines_perf_refuses(recorded, command, args, tmp_path):
    """A command line perf refuses (its error, no output) is refused in one
    line with exit 2; one perf takes is taken."""
    from conftest import need
    data = need(recorded, "fp")
    extra = ["--stdio"] if command == "report" else []
    res = _perf([command, "-i", str(data)] + extra + args,
                env=dict(os.environ, HOME=str(tmp_path)))
    perf_refused = res.stdout.strip() == "" and any(r in res.stderr for r in _PERF_REFUSALS)
    assert perf_refused or res.returncode == 0, res.stderr
    rc, out, err = run_cli([command, str(data)] + args)
    if perf_refused:
        assert (rc, out) == (2, "") and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
    else:
        assert rc == 0 and "error" not in err, err


# ------------------------------------------------------- 5. stack bottoms
@requires_libc_debug_here
@requires_perf
def test_clone3_at_the_ip_is_no_bottom(tmp_path):
    """clone3 ends a stack where it is the outermost frame of a new thread
    (a caller); where it is the ip the user stack starts at (the parent in
    the clone3 syscall) the stack goes on, as perf prints it."""
    data = tmp_path / "threads.data"
    work = "import threading\nfor _ in range(200):\n t = threading.Thread(target=int)\n" \
           " t.start(); t.join()"
    rec = _perf(["record", "-q", "-g", "-e", "syscalls:sys_enter_clone3", "-o", str(data),
                 "--", sys.executable, "-c", work], cwd=tmp_path)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record the clone3 tracepoint: %s"
                    % rec.stderr.strip()[-200:])
    theirs = parse_samples(_perf(["script", "-i", str(data)], cwd=tmp_path,
                                 env=dict(os.environ, HOME=str(tmp_path))).stdout)
    ours = parse_samples(_ours(["script", str(data)]))
    at_ip = [(f1, f2) for (_, f1), (_, f2) in zip(ours, theirs)
             if f2 and f2[0][1].startswith("clone3+")]
    assert len(at_ip) >= 100 and len(ours) == len(theirs)
    assert any(len(f2) > 1 for _, f2 in at_ip)
    assert [(f1, f2) for f1, f2 in at_ip if f1 != f2] == []


# ------------------------------------------------------ 6. memfd mappings
MEMFD_PROGRAM = r"""
import ctypes, mmap, os
code = bytes.fromhex("b900000400" "ffc9" "75fc" "c3")   # mov ecx,0x40000; dec; jnz; ret
fd = os.memfd_create("perfdata-jit")
os.write(fd, code.ljust(4096, b"\xcc"))
m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
fn = ctypes.CFUNCTYPE(None)(addr)
for _ in range(1500):
    fn()
"""


@requires_perf
def test_memfd_frames_map_relative_without_perfmap_warning(tmp_path):
    """Code run from a memfd (/memfd:NAME (deleted)): perf prints the
    map-relative address and [unknown]; perfdata the same, and no warning
    about a /tmp/perf-PID.map the program never promised."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("the memfd program is x86_64 machine code")
    data = tmp_path / "memfd.data"
    rec = _perf(["record", "-q", "-g", "-F", "2000", "-o", str(data), "--",
                 sys.executable, "-c", MEMFD_PROGRAM], cwd=tmp_path)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    theirs = parse_samples(_perf(["script", "-i", str(data)], cwd=tmp_path,
                                 env=dict(os.environ, HOME=str(tmp_path))).stdout)
    rc, out, err = run_cli(["script", str(data)])
    assert rc == 0, err
    ours = parse_samples(out)
    pairs = [(x, y) for (_, f1), (_, f2) in zip(ours, theirs) for x, y in zip(f1, f2)
             if "(/memfd:" in y[1]]         # ("(deleted)" splits the dso)
    assert len(pairs) >= 20, "too few samples in the memfd code"
    assert [(x, y) for x, y in pairs if x != y] == []
    assert all(y[0] < 4096 for _, y in pairs)            # map-relative
    assert "perf-" not in err and "memfd" not in err, err


# ----------------------------------------------------------- 9. diagnose
def _diagnose(data):
    import json
    return json.loads(_ours(["diagnose", str(data), "--json"]))


@requires_perf
@needs_gxx
def test_diagnose_suggests_what_apt_can_install(cc1plus_recording):
    """Each package diagnose says to install is one the package manager has
    (`apt-cache policy`: a candidate); where it has none (Debian's dbgsym
    packages live in a separate archive) the fix names that archive. The
    static-functions warning only where frames lie past their .dynsym
    symbol's size (per nm -D -S), and the frame total is script's."""
    import re
    data, perf_script, env = cc1plus_recording
    res = _diagnose(data)
    fixes = [b["fix"] for c in res["classes"] for b in c["binaries"] if b.get("fix")]
    if shutil.which("apt-cache") and shutil.which("dpkg"):
        from symbolize.debuginfo.packages import apt_candidate
        named = 0
        for fix in fixes:
            m = re.match(r"`apt-get install ([^`:]+)(:\w+)?`", fix)
            if m:
                named += 1
                out = subprocess.run(["apt-cache", "policy", m.group(1)], capture_output=True,
                                     text=True).stdout
                assert re.search(r"Candidate: (?!\(none\))", out), fix
            m = re.search(r"debug archive.*`apt-get install ([^`:]+)", fix)
            if m:
                named += 1
                assert apt_candidate(m.group(1)) is False, fix
        assert named > 0, fixes
    # the static-functions warning, against nm's sizes of the binaries' symbols
    nm = shutil.which("nm")
    ours = _ours_script(data)
    if nm:
        sizes = {}
        samples = parse_samples(ours)
        for path in {dso for _, frames in samples for _, _, dso in frames}:
            if not os.path.isabs(path) or not os.path.isfile(path):
                continue
            table = sizes[path] = {}
            for line in subprocess.run([nm, "-D", "-S", "--defined-only", path],
                                       capture_output=True, text=True).stdout.splitlines():
                parts = line.split()
                if len(parts) == 4:
                    table.setdefault(parts[3], int(parts[1], 16))
                elif len(parts) == 3:           # nm -S prints no size for 0
                    table.setdefault(parts[2], 0)
        past = at_end = 0       # (at its end: a return address after a last call)
        for _, frames in samples:
            for addr, sym, dso in frames:
                name, _, off = sym.rpartition("+0x")
                if name in sizes.get(dso, ()):
                    past += int(off, 16) > sizes[dso][name]
                    at_end += int(off, 16) == sizes[dso][name]
        dyn = next((c for c in res["classes"] if c["class"] == "resolved-dynsym"), None)
        warned = dyn is not None and "static functions" in (dyn["fix"] or "")
        counted = (dyn or {}).get("detail", {}).get("past-symbol-size", 0)
        assert warned == (counted > 0)
        assert (past > 0) <= warned and counted <= past + at_end
    # frames counted as script prints them
    frames = sum(len(f) for _, f in parse_samples(ours))
    assert res["frames"] == frames
    assert res["inlined_frames"] == ours.count(" (inlined)\n")


@requires_libc_debug_here
@requires_perf
def test_diagnose_no_cfi_alarm_at_stack_ends(tmp_path):
    """A DWARF stack that ends at _start or __libc_start_main (no CFI there
    by design) raises no "no CFI" alarm."""
    data = tmp_path / "dwarf.data"
    # a shell starting ls again and again: ld.so's stacks end at its _start
    loop = "i=0; while [ $i -lt 150 ]; do ls / >/dev/null; i=$((i+1)); done"
    rec = _perf(["record", "-q", "--call-graph=dwarf,8192", "-F", "1999", "-o", str(data),
                 "--", "sh", "-c", loop], cwd=tmp_path)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    res = _diagnose(data)
    samples = parse_samples(_ours(["script", str(data)]))
    ends = 0
    for _, frames in samples:
        user = [f for f in frames if f[2] not in ("[kernel.kallsyms]", "inlined")]
        # The last frame, or the one before a stripped program's own _start
        # ([unknown] in /usr/bin/ls after __libc_start_call_main): which of
        # the two most samples end at depends on how long ld.so's start-up
        # takes on the machine (its cpuid probes trap to some hypervisors).
        if any(f[1].split("+")[0].split("@")[0] in (
                "_start", "__libc_start_main", "__libc_start_call_main", "_dl_start_user")
               for f in user[-2:]):
            ends += 1
    assert ends > len(samples) // 2
    nocfi = next((c for c in res["classes"] if c["class"] == "dwarf-no-cfi"), None)
    stopped = (nocfi or {}).get("detail", {}).get("stopped", 0)
    assert stopped <= len(samples) - ends


@requires_perf_tool
def test_sort_keys_perf_knows_are_told_apart(tmp_path, recorded):
    """A --sort key perf takes and perfdata does not is refused as
    unsupported, not as unknown: perfdata's list of perf's keys is perf's
    help text (printed with its refusal of an unknown key)."""
    from conftest import need
    from perfdata.views.report.sort_keys import ReportError, parse_sort
    data = need(recorded, "fp")
    res = _perf(["report", "-i", str(data), "--stdio", "--sort", "bogus"],
                env=dict(os.environ, HOME=str(tmp_path)))
    text = res.stderr + res.stdout
    assert "sort by key(s):" in text
    lines = text.split("sort by key(s):", 1)[1].split("\n")
    help_keys = []
    for i, line in enumerate(lines):
        if i and (not line.strip() or not line[:1].isspace() or line.lstrip().startswith("-")):
            break                       # the end of the key list
        help_keys += line.split()
    assert {"pid", "comm", "dso", "symbol", "cpu"} <= set(help_keys)
    for key in help_keys:
        try:
            parse_sort(key)
        except ReportError as exc:
            assert "perf's, not supported" in str(exc), key
