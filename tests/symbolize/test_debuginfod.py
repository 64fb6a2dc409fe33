"""symbolize.debuginfo.debuginfod against a real elfutils debuginfod server, and against
servers that misbehave (down, slow, 404, another build-id, truncated, HTML).

The real server (`debuginfod -F DIR`, Debian package `debuginfod`) runs on
127.0.0.1 for this module, serving the split-off debug file of a stripped
test binary and the original of a rebuilt one.
"""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import requires_perf, run_cli

from diagnose_progs import util

from symbolize.debuginfo.debuginfod import DebuginfodClient, DebuginfodLocator

DEBUGINFOD = shutil.which("debuginfod")
needs_server = pytest.mark.skipif(
    DEBUGINFOD is None or util.have_tools("gcc", "objcopy", "strip") is not None,
    reason="debuginfod (Debian package debuginfod) or gcc/binutils not installed")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, timeout=2):
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, info) of a debuginfod serving a stripped binary's debug file and
    the original of a binary rebuilt after recording."""
    if DEBUGINFOD is None or util.have_tools("gcc", "objcopy", "strip"):
        pytest.skip("debuginfod or gcc/binutils not installed")
    tmp = tmp_path_factory.mktemp("debuginfod")
    srv = tmp / "srv"
    srv.mkdir()
    stripped = util.build("hot.c", tmp / "hot", "-DVARIANT=11")
    util.split_debug(stripped, srv / "hot.debug")
    stale = util.build("hot.c", tmp / "stale", "-DVARIANT=12")
    shutil.copy(stale, srv / "stale.orig")
    info = {"stripped": stripped, "stripped_bid": util.build_id(stripped),
            "stale": stale, "stale_bid": util.build_id(stale), "tmp": tmp}
    port = _free_port()
    log = open(tmp / "log", "wb")
    proc = subprocess.Popen([DEBUGINFOD, "-F", "-d", str(tmp / "db.sqlite"), "-p", str(port),
                             str(srv)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if _get("%s/buildid/%s/debuginfo" % (url, info["stripped_bid"])) == 200 and \
                    _get("%s/buildid/%s/executable" % (url, info["stale_bid"])) == 200:
                break
            if proc.poll() is not None:
                pytest.skip("debuginfod exited: %s" % (tmp / "log").read_text()[-500:])
            time.sleep(0.2)
        else:
            pytest.skip("debuginfod did not index %s in 30 s" % srv)
        yield url, info
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@requires_perf
@needs_server
def test_stripped_binary_fixed_end_to_end_through_debuginfod(server, tmp_path, monkeypatch):
    url, info = server
    cache = tmp_path / "cache"
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(cache))
    monkeypatch.delenv("DEBUGINFOD_URLS", raising=False)
    data = util.record(tmp_path, info["stripped"], tmp_path / "s.data")
    empty = tmp_path / "empty"
    empty.mkdir()
    before, _ = util.diagnose(data, "--buildid-dir", str(empty))
    assert util.cls(before, "no-debuginfo")["frames"] > 0
    after, err = util.diagnose(data, "--buildid-dir", str(empty), "--debuginfod", url)
    # The program is out of the class (libc stays in it where a sample fell
    # there and its debug file is not installed: the server has none).
    gone = util.cls(after, "no-debuginfo")
    assert gone is None or all(b["path"] != info["stripped"] for b in gone["binaries"]), \
        (after, err)
    bid = info["stripped_bid"]
    got = cache / bid / "debuginfo"
    assert got.is_file() and util.build_id(got) == bid
    # script too, and from $DEBUGINFOD_URLS, with the cache already filled.
    monkeypatch.setenv("DEBUGINFOD_URLS", url)
    rc, out, err = run_cli(["script", data, "--buildid-dir", str(empty)])
    assert rc == 0 and "hot_inner" in out, err


@requires_perf
@needs_server
def test_rebuilt_binary_fetched_as_executable(server, tmp_path, monkeypatch):
    url, info = server
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "cache"))
    data = util.record(tmp_path, info["stale"], tmp_path / "st.data")
    util.build("hot.c", info["stale"], "-DVARIANT=13")        # rebuilt after recording
    empty = tmp_path / "empty"
    empty.mkdir()
    res, _ = util.diagnose(data, "--buildid-dir", str(empty))
    assert util.cls(res, "buildid-mismatch") is not None
    res, _ = util.diagnose(data, "--buildid-dir", str(empty), "--debuginfod", url)
    assert util.cls(res, "buildid-mismatch") is None
    assert (tmp_path / "cache" / info["stale_bid"] / "executable").is_file()


@needs_server
def test_unknown_build_id_is_a_404_warning(server, tmp_path):
    url, _ = server
    c = DebuginfodClient([url], cache_dir=str(tmp_path), progress=False)
    assert c.fetch("ab" * 20, "debuginfo") is None
    assert any("404" in w for w in c.warnings), c.warnings
    assert os.listdir(tmp_path) in ([], ["ab" * 20])
    assert not (tmp_path / ("ab" * 20) / "debuginfo").exists()


# ------------------------------------------------------------ bad servers
class _Bad(http.server.BaseHTTPRequestHandler):
    body = {}

    def log_message(self, *a):
        pass

    def do_GET(self):
        mode = self.server.mode
        if mode == "slow":
            time.sleep(3)
        data = self.server.payload
        if mode == "html":
            data = b"<!DOCTYPE html><html><body>Sign in</body></html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if mode == "truncated":
            data = data[:len(data) // 3]
        try:
            self.wfile.write(data)
        except OSError:
            pass
        if mode == "truncated":
            self.close_connection = True


@pytest.fixture
def bad_server():
    servers = []

    def start(mode, payload=b""):
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Bad)
        httpd.mode = mode
        httpd.payload = payload
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return "http://127.0.0.1:%d" % httpd.server_address[1]
    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _elf_and_bid():
    exe = sys.executable
    bid = util.build_id(os.path.realpath(exe))
    if bid is None:
        pytest.skip("no ELF with a build-id at hand")
    with open(os.path.realpath(exe), "rb") as f:
        return f.read(), bid


@pytest.mark.parametrize("mode,expect", [
    ("wrong", "build-id is"),
    ("html", "HTML"),
    ("truncated", "cut short|IncompleteRead"),
    ("slow", "server not usable"),
])
def test_misbehaving_server_warns_and_caches_nothing(bad_server, tmp_path, mode, expect):
    payload, real_bid = _elf_and_bid()
    want = "cd" * 20 if mode == "wrong" else real_bid
    url = bad_server(mode, payload)
    c = DebuginfodClient([url], cache_dir=str(tmp_path), timeout=1, progress=False)
    t0 = time.monotonic()
    assert c.fetch(want, "executable") is None
    assert time.monotonic() - t0 < 10
    assert len(c.warnings) == 1 and re.search(expect, c.warnings[0]), c.warnings
    leftovers = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    assert leftovers == []


def test_server_down_is_one_warning_then_not_asked_again(tmp_path):
    url = "http://127.0.0.1:%d" % _free_port()
    c = DebuginfodClient([url], cache_dir=str(tmp_path), timeout=2, progress=False)
    assert c.fetch("ab" * 20) is None and c.fetch("cd" * 20) is None
    assert len(c.warnings) == 1 and "server not usable" in c.warnings[0]


def test_size_limit(bad_server, tmp_path):
    payload, bid = _elf_and_bid()
    c = DebuginfodClient([bad_server("ok", payload)], cache_dir=str(tmp_path),
                         max_size=1000, progress=False)
    assert c.fetch(bid, "executable") is None
    assert "limit" in c.warnings[0]
    c = DebuginfodClient([bad_server("ok", payload)], cache_dir=str(tmp_path), progress=False)
    path = c.fetch(bid, "executable")
    assert path == str(tmp_path / bid / "executable") and util.build_id(path) == bid


def test_locator_asks_only_after_local_candidates(tmp_path):
    asked = []

    class Counting(DebuginfodClient):
        def fetch(self, build_id, kind="debuginfo"):
            asked.append((build_id, kind))
            return None
    from symbolize import Symbolizer
    loc = DebuginfodLocator(Counting(["http://127.0.0.1:9"], cache_dir=str(tmp_path)),
                            buildid_dir=None, system_debug=None)
    exe = os.path.realpath(sys.executable)
    bid = util.build_id(exe)
    choice = Symbolizer(loc).binary_for(exe, bid)
    # The executable is here: only its debug file is asked for, once.
    assert choice.binary is not None and asked == [(bid, "debuginfo")]
    asked.clear()
    Symbolizer(loc).binary_for("[vdso]", "ab" * 20)
    assert asked == []


def test_json_output_is_valid(tmp_path):
    # --debuginfod with a URL that is not http(s) is ignored, not an error.
    from conftest import REPO
    rc, out, err = run_cli(["diagnose", str(REPO / "samples" / "stripped.fp.data"), "--json",
                            "--debuginfod", "file:///etc"])
    assert rc == 0 and json.loads(out)["samples"] > 0
