"""Pairs of recordings made at test time for tests/views/test_diff*.py, where the
truth is known: tests/progs/diff_work.c run with grows()' work doubled.

* "base": the -O1 build, FACTOR 1; "new": the same binary, FACTOR 2 (one
  program run twice, one function's work doubled);
* "o2new": an -O2 build of the same source (other addresses, another
  build-id), FACTOR 2, under the same file name in another directory;
* "strip_base", "strip_new": a stripped -O1 build (FACTOR 1, 2) whose debug
  file only perfdata is given (a .build-id --debug-dir): perf names none of
  its functions, perfdata names them.

All are recorded at once (the machine's load falls on both sides of a
pair alike), with frame-pointer stacks, HOME a directory of the test's so
that perf's build-id cache is the test's own.

Beside them, what the tests read the outputs with: table() cuts perf diff's
text into cells; difffolded() is FlameGraph's difffolded.pl, its rule as
its source states it, run by perl."""
import os
import re
import shutil
import subprocess
from pathlib import Path

PERF = shutil.which("perf")
SOURCE = Path(__file__).resolve().parent / "progs" / "diff_work.c"
# the work of one round of steady(); enough for ~2,000 samples at 4 kHz
WORK = "8000000"
FREQ = "4000"


class Pairs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.debug_dir = root / "debug"
        self.data: dict[str, Path] = {}

    def perf_env(self) -> dict[str, str]:
        return dict(os.environ, HOME=str(self.home))

    def perf(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([PERF, *args], capture_output=True, text=True,
                              env=self.perf_env(), cwd=self.root, timeout=300)


def build_id(path: Path) -> str:
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    raise AssertionError("no build-id in %s" % path)


def _build(root: Path, name: str, opt: str, build_id: str = "") -> Path:
    """diff_work built in root/name (a build-id of its own if given: two
    builds of one source at one level have the same)."""
    folder = root / name
    folder.mkdir()
    out = folder / "diff_work"
    subprocess.run(["gcc", opt, "-g", "-fno-omit-frame-pointer",
                    "-Wl,--build-id" + ("=0x" + build_id if build_id else ""),
                    "-o", str(out), str(SOURCE)], check=True, capture_output=True)
    return out


def make_pairs(root: Path) -> Pairs:
    """Build, strip and record (see the module's doc); a recording perf
    could not make is missing from Pairs.data."""
    pairs = Pairs(root)
    pairs.home.mkdir()
    o1 = _build(root, "o1", "-O1")
    o2 = _build(root, "o2", "-O2")
    # (not the -O1 build's build-id: perf would find that one's symbols)
    stripped = _build(root, "stripped", "-O1", os.urandom(20).hex())
    bid = build_id(stripped)
    debug = pairs.debug_dir / ".build-id" / bid[:2] / (bid[2:] + ".debug")
    debug.parent.mkdir(parents=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(stripped), str(debug)], check=True)
    subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
    runs = {"base": (o1, "1"), "new": (o1, "2"), "o2new": (o2, "2"),
            "strip_base": (stripped, "1"), "strip_new": (stripped, "2")}
    procs = {}
    for name, (binary, factor) in runs.items():
        path = root / (name + ".data")
        procs[name] = (path, subprocess.Popen(
            [PERF, "record", "-q", "-g", "-F", FREQ, "-o", str(path), "--", str(binary),
             factor, WORK], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=pairs.perf_env(), cwd=root))
    for name, (path, proc) in procs.items():
        if proc.wait(300) == 0 and path.exists():
            pairs.data[name] = path
    return pairs


def table(text):
    """[(column header, cell)...] per row of perf diff's text, cut at the
    columns the dotted line marks; with the headers (several events: the
    first one's table)."""
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("# ..."))
    heads, dots = lines[at - 1], lines[at]
    spans = [m.span() for m in re.finditer(r"\.+", dots)]
    # (the last column runs to the line's end: a symbol is not padded)
    spans[-1] = (spans[-1][0], None)
    names = [heads[a:b].strip() if b else heads[a:].strip() for a, b in spans]
    rows = []
    for line in lines[at + 2:]:
        if not line.strip() or line.startswith("#"):
            break
        rows.append([(n, (line[a:b] if b else line[a:]).strip()) for n, (a, b) in
                     zip(names, spans)])
    return names, rows


DIFFFOLDED = r"""
my ($normalize, $file1, $file2) = @ARGV;
my ($total1, $total2) = (0, 0);
my %Folded;
for my $f ([$file1, 1], [$file2, 2]) {
    open FILE, $f->[0] or die;
    while (<FILE>) {
        chomp;
        my ($stack, $count) = (/^(.*)\s+?(\d+(?:\.\d*)?)$/);
        $Folded{$stack}{$f->[1]} += $count;
        if ($f->[1] == 1) { $total1 += $count } else { $total2 += $count }
    }
    close FILE;
}
foreach my $stack (keys %Folded) {
    $Folded{$stack}{1} = 0 unless defined $Folded{$stack}{1};
    $Folded{$stack}{2} = 0 unless defined $Folded{$stack}{2};
    if ($normalize && $total1 != $total2) {
        $Folded{$stack}{1} = int($Folded{$stack}{1} * $total2 / $total1);
    }
    print "$stack $Folded{$stack}{1} $Folded{$stack}{2}\n";
}
"""


def difffolded(first, second, normalize):
    out = subprocess.run(["perl", "-e", DIFFFOLDED, "1" if normalize else "0", str(first),
                          str(second)], capture_output=True, text=True, check=True).stdout
    stacks = {}
    for line in out.splitlines():
        stack, c1, c2 = line.rsplit(" ", 2)
        stacks[stack] = (int(c1), int(c2))
    return stacks
