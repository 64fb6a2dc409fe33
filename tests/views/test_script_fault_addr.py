"""`-F addr` of page-fault samples with sym and dso, against perf run now.

perf's perf_sample__fprintf_addr() names the symbol and dso at a page
fault's data address (sample_addr_correlates_sym: the page-fault software
events, BTS), from the one table it keeps per dso: functions and data
objects.  samples/src/fault_addr.cpp faults on .data objects (a plain name,
a namespaced one, a function-local static), .bss, the heap and a mapped data
file; it is built and recorded here (`perf record -e page-faults -d`), and
`perfdata script -F ...` must print what `perf script -F ...` prints, line
for line, but for the PLT stubs perf leaves unnamed (`@plt`, a deliberate
difference: docs/differences.md).
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import PERF, SAMPLES, requires_perf, run_cli

SPECS = ["+addr", "addr,sym,symoff,dso", "ip,addr,sym,dso", "comm,addr,sym", "addr,dso", "addr"]
OBJECTS = ("faults::pages_in_namespace", "local_static()::kept", "fault_data_table")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """samples/src/fault_addr.cpp built here."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    built = tmp_path_factory.mktemp("program") / "fault_addr"
    subprocess.run(["g++", "-O1", "-g", "-o", str(built), str(SAMPLES / "src" / "fault_addr.cpp")],
                   check=True, capture_output=True, timeout=120)
    return built


@pytest.fixture(scope="module")
def faults(tmp_path_factory, program):
    """(perf.data, the build-id dir, perf's environment, the data file)."""
    tmp = tmp_path_factory.mktemp("faults")
    blob = tmp / "blob.bin"
    blob.write_bytes(os.urandom(1 << 20))
    env = dict(os.environ, HOME=str(tmp))       # no ~/.perfconfig; perf's cache here
    buildid_dir = tmp / "buildid-cache"
    data = tmp / "faults.data"
    res = subprocess.run([PERF, "--buildid-dir", str(buildid_dir), "record", "-q", "-e",
                          "page-faults", "-d", "-c", "1", "-o", str(data), "--", str(program),
                          str(blob)], env=env, capture_output=True, timeout=120)
    if res.returncode != 0 or not data.exists():
        pytest.skip("perf cannot record page faults here: %s" % res.stderr.decode()[-200:])
    return data, buildid_dir, env, blob


def _plt_named(ours, theirs):
    """Whether two lines differ only where perf prints a PLT stub as `@plt`
    and perfdata names it (`strlen@plt`)."""
    return re.sub(r" [^\s(]+@plt", " @plt", ours) == theirs


@requires_perf
@pytest.mark.parametrize("spec", SPECS)
def test_fault_addresses_named_as_perf_names_them(faults, spec):
    data, buildid_dir, env, blob = faults
    theirs = subprocess.run([PERF, "--buildid-dir", str(buildid_dir), "script", "-i", str(data),
                             "-F", spec], env=env, capture_output=True, text=True,
                            timeout=120).stdout.splitlines()
    rc, text, err = run_cli(["script", str(data), "--buildid-dir", str(buildid_dir), "-F", spec])
    assert rc == 0, err
    # (a data map's file that is no ELF, the blob, ld.so.cache: nothing to say)
    assert "not-elf" not in err and "not an ELF" not in err, err
    ours = text.splitlines()
    assert len(ours) == len(theirs) > 1000
    plt = 0
    for mine, perfs in zip(ours, theirs):
        if mine != perfs:
            assert _plt_named(mine, perfs), (mine, perfs)
            plt += 1
    assert plt <= 5
    # (+addr: the default fields, sym and dso among them, and the address)
    if "sym" in spec or spec.startswith("+"):
        named = "\n".join(ours)
        for name in OBJECTS:
            assert name in named
        assert "[unknown] (%s)" % blob in named or "dso" not in spec and spec[0] != "+"
    else:
        assert not any(name in text for name in OBJECTS)


def test_data_objects_come_from_their_own_table(tmp_path, program):
    """Symbolizer.lookup_data names a data object by its file offset; the
    function table (lookup) does not hold objects; the table with objects is
    kept in the cache directory and read back by the next run."""
    from elftools.elf.elffile import ELFFile

    from symbolize import Symbolizer, SymbolizerOptions
    from symbolize.cachedir import CacheDir
    with open(program, "rb") as f:
        elf = ELFFile(f)
        sym = elf.get_section_by_name(".symtab").get_symbol_by_name("fault_data_table")[0]
        value = sym["st_value"]
        data = next(s for s in elf.iter_segments()
                    if s["p_type"] == "PT_LOAD" and s["p_vaddr"] <= value < s["p_vaddr"] + s["p_filesz"])
        offset = value - data["p_vaddr"] + data["p_offset"] + 0x1234
    cache = tmp_path / "cache"
    for run in range(2):
        symbolizer = Symbolizer(options=SymbolizerOptions(cache_dir=CacheDir(str(cache))))
        found = symbolizer.lookup_data(str(program), None, offset)
        assert (found.name, found.offset) == ("fault_data_table", 0x1234), run
        plain = symbolizer.lookup(str(program), None, value + 0x1234)
        assert plain[0].name is None            # functions only
    kept = [p for _, _, files in os.walk(cache) for p in files if p.endswith("-objects.table")]
    assert kept


@pytest.mark.parametrize("attr,named", [
    ({"type": 1, "config": 2, "sample_period": 1}, True),        # page-faults
    ({"type": 1, "config": 5, "sample_period": 7}, True),        # minor-faults
    ({"type": 1, "config": 6, "sample_period": 1}, True),        # major-faults
    ({"type": 1, "config": 0, "sample_period": 1}, False),       # cpu-clock
    ({"type": 0, "config": 4, "sample_period": 1}, True),        # BTS: every branch
    ({"type": 0, "config": 4, "sample_period": 1000}, False),    # sampled branches
    ({"type": 0, "config": 0, "sample_period": 1}, False),       # cycles
    ({"type": 4, "config": 0x1cd, "sample_period": 1}, False),   # a raw memory event
])
def test_which_events_addresses_are_named(attr, named):
    """perf's sample_addr_correlates_sym(): page-fault software events and
    BTS (branch instructions, every one) name their addr; a memory event's
    addr (PERF_TYPE_RAW) stays a number."""
    from types import SimpleNamespace

    from perfdata.views.script_formatter import _addr_names_symbol
    assert _addr_names_symbol(SimpleNamespace(attr=attr)) is named
