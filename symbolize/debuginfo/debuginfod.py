"""A debuginfod client: debug files and executables fetched by build-id.

The protocol is elfutils' (debuginfod(8)): GET URL/buildid/ID/debuginfo or
URL/buildid/ID/executable, for each URL of a space-separated list (the
`--debuginfod URL` option or $DEBUGINFOD_URLS), first answer that verifies
wins.  Files are cached in the elfutils client layout, so elfutils tools and
this one share a cache: $DEBUGINFOD_CACHE_PATH, else
$XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client; the file
is CACHE/ID/debuginfo or CACHE/ID/executable.

Nothing is cached that does not verify: a download goes to a temporary file
beside its final name, and is renamed only when it is a complete ELF file
whose build-id is the one asked for.  A server that is down, slow (timeout),
answers 404, or sends something else (another build-id, a cut file, an HTML
page, more than the size limit) costs one warning, and the next URL is tried.

`DebuginfodLocator` is the hook into `Symbolizer`: a DebugInfoLocator whose
candidate lists are lazy and end with the fetched file, so the network is
asked only when every local candidate has failed (the Symbolizer stops at the
first candidate that verifies).
"""
from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from ..buildid import normalize_build_id
from ..cachedir import user_cache_dir
from ..elffile import Binary
from .locate import Candidate, DebugInfoLocator, _is_pseudo

if TYPE_CHECKING:
    from collections.abc import Iterator

KINDS = ("debuginfo", "executable")
DEFAULT_TIMEOUT = 30.0            # seconds without progress (connect or read)
DEFAULT_MAX_SIZE = 2 << 30        # bytes per file
CHUNK = 1 << 16


def default_cache_dir() -> str:
    """elfutils' client cache directory."""
    env = os.environ.get("DEBUGINFOD_CACHE_PATH")
    if env:
        return os.path.expanduser(env)
    return user_cache_dir("debuginfod_client")


def urls_from_env() -> list[str]:
    return parse_urls(os.environ.get("DEBUGINFOD_URLS", ""))


def parse_urls(text: str | None) -> list[str]:
    """A space-separated list of server URLs; only http and https are kept."""
    words = (text or "").split()
    if not words:
        return []
    # (urllib.parse, which imports ipaddress, only for a URL: every
    # symbolizing run asks for the locator, most with none; 1.7 ms)
    import urllib.parse
    out = []
    for u in words:
        scheme = urllib.parse.urlsplit(u).scheme.lower()
        if scheme in ("http", "https") and u not in out:
            out.append(u.rstrip("/"))
    return out


def _is_loopback(url: str) -> bool:
    import ipaddress
    import urllib.parse
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _env_number(name: str, default: float, kind: type[float] | type[int] = float) -> float:
    try:
        value = kind(os.environ[name])
        return value if value > 0 else default
    except (KeyError, ValueError):
        return default


class DebuginfodClient:
    """Fetch files by build-id from debuginfod servers into the local cache."""

    def __init__(self, urls: str | list[str] | tuple[str, ...], cache_dir: str | None = None,
                 timeout: float | None = None, max_size: int | None = None,
                 progress: bool | None = None) -> None:
        self.urls = parse_urls(" ".join(urls) if isinstance(urls, (list, tuple)) else urls)
        self.cache_dir = os.path.expanduser(cache_dir) if cache_dir else default_cache_dir()
        self.timeout = timeout or _env_number("DEBUGINFOD_TIMEOUT", DEFAULT_TIMEOUT)
        self.max_size = max_size or _env_number("DEBUGINFOD_MAXSIZE", DEFAULT_MAX_SIZE, int)
        self.progress = progress if progress is not None else _stderr_is_tty()
        self.warnings: list[str] = []
        self._failed: set = set()      # (build_id, kind) asked and not found, this run
        self._dead: set = set()        # servers that did not answer at all
        self.fetched: list[tuple] = []  # (build_id, kind, url) downloaded this run

    def cache_path(self, build_id: str, kind: str) -> str:
        return os.path.join(self.cache_dir, build_id, kind)

    def fetch(self, build_id: str | None, kind: str = "debuginfo") -> str | None:
        """Path of a verified local copy of the file, downloading it if needed;
        None (and a warning per failed server) when no server has it."""
        bid = normalize_build_id(build_id)
        if bid is None or kind not in KINDS or len(bid) < 4:
            return None
        path = self.cache_path(bid, kind)
        if os.path.isfile(path) and _verifies(path, bid):
            return path
        if (bid, kind) in self._failed or not self.urls:
            return None
        for url in self.urls:
            if url in self._dead:
                continue
            if self._download(url, bid, kind, path):
                self.fetched.append((bid, kind, url))
                return path
        self._failed.add((bid, kind))
        return None

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def _download(self, base: str, bid: str, kind: str, path: str) -> bool:
        # Imported here: they cost a tenth of perfdata's start-up, and most
        # runs have no server to ask.
        import http.client
        import tempfile
        import urllib.error
        import urllib.request
        url = "%s/buildid/%s/%s" % (base, bid, kind)
        handlers = [urllib.request.ProxyHandler({})] if _is_loopback(url) else []
        opener = urllib.request.build_opener(*handlers)
        req = urllib.request.Request(url, headers={"User-Agent": "perfdata-debuginfod/1"})
        tmp = None
        try:
            with opener.open(req, timeout=self.timeout) as resp:
                length = resp.headers.get("Content-Length")
                length = int(length) if length and length.isdigit() else None
                if length is not None and length > self.max_size:
                    self._warn("debuginfod %s: %s %s is %d bytes, over the limit of %d; "
                               "not fetched" % (base, bid, kind, length, self.max_size))
                    return False
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".%s." % kind, dir=os.path.dirname(path))
                got = 0
                last = 0.0
                with os.fdopen(fd, "wb") as out:
                    while True:
                        chunk = resp.read(CHUNK)
                        if not chunk:
                            break
                        got += len(chunk)
                        if got > self.max_size:
                            self._warn("debuginfod %s: %s %s is over the limit of %d bytes; "
                                       "not fetched" % (base, bid, kind, self.max_size))
                            return False
                        out.write(chunk)
                        if self.progress and time.monotonic() - last > 0.2:
                            last = time.monotonic()
                            _show_progress(bid, kind, got, length)
                if self.progress:
                    _show_progress(bid, kind, got, length, done=True)
                if length is not None and got != length:
                    self._warn("debuginfod %s: %s %s cut short (%d of %d bytes); not used"
                               % (base, bid, kind, got, length))
                    return False
            problem = _check_file(tmp, bid)
            if problem:
                self._warn("debuginfod %s: %s %s: %s; not used" % (base, bid, kind, problem))
                return False
            os.replace(tmp, path)
            tmp = None
            return True
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                self._warn("debuginfod %s: %s %s: HTTP %d %s" % (base, bid, kind, exc.code,
                                                                 exc.reason))
            else:
                self._warn("debuginfod %s: no %s for build-id %s (404)" % (base, kind, bid))
            return False
        except http.client.HTTPException as exc:
            # IncompleteRead (the server closed before Content-Length), a
            # malformed status line or headers.
            self._warn("debuginfod %s: %s %s: bad answer (%s: %s); not used"
                       % (base, bid, kind, type(exc).__name__, exc))
            return False
        except (urllib.error.URLError, OSError, ValueError) as exc:
            # Refused, unreachable, timed out, reset mid-transfer, bad URL.
            reason = getattr(exc, "reason", exc)
            self._warn("debuginfod %s: server not usable: %s" % (base, reason))
            if isinstance(exc, urllib.error.URLError) or "timed out" in str(exc):
                self._dead.add(base)
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _check_file(path: str, bid: str) -> str | None:
    """Why the file is not the one wanted, or None."""
    b = Binary(path)
    try:
        if not b.ok:
            with open(path, "rb") as f:
                head = f.read(64).lstrip().lower()
            if head.startswith(b"<!doctype html") or head.startswith(b"<html"):
                return "an HTML page, not an ELF file"
            return "%s: %s" % (b.error_kind, b.error)
        have = b.build_id
        if have != bid:
            return "its build-id is %s" % (have or "absent")
        # A file cut inside its sections may still carry the note at its start.
        size = os.path.getsize(path)
        for sec in b.sections:
            if sec.type != 8 and sec.size and sec.offset + sec.size > size:
                return "truncated (section %s ends past the file's end)" % sec.name
        return None
    finally:
        b.close()


def _verifies(path: str, bid: str) -> bool:
    return _check_file(path, bid) is None


class DebuginfodLocator(DebugInfoLocator):
    """A DebugInfoLocator that ends each candidate list with a file fetched
    from debuginfod.  The lists are generators: the fetch happens only when
    the Symbolizer has tried every local candidate and none verified."""

    def __init__(self, client: DebuginfodClient, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client = client

    def _fetched(self, path: str, build_id: str | None, kind: str) -> Iterator[Candidate]:
        bid = normalize_build_id(build_id)
        if bid is None or _is_pseudo(path):
            return
        got = self.client.fetch(bid, kind)
        for w in self.client.warnings:
            self._warn(w)
        self.client.warnings.clear()
        if got is not None:
            yield Candidate(got, "debuginfod")

    # (lazy lists: every caller of a locator only iterates its candidates)
    def candidates_for_binary(  # type: ignore[override]
            self, path: str, build_id: str | None = None) -> Iterator[Candidate]:
        yield from super().candidates_for_binary(path, build_id)
        yield from self._fetched(path, build_id, "executable")

    def candidates_for_debug(  # type: ignore[override]  # (as above)
            self, path: str, build_id: str | None = None,
            debuglink: tuple[str, int] | None = None,
            binary_path: str | None = None) -> Iterator[Candidate]:
        yield from super().candidates_for_debug(path, build_id, debuglink, binary_path)
        yield from self._fetched(path, build_id, "debuginfo")

    def candidates_for_supplementary(  # type: ignore[override]  # (as above)
            self, name: str, identity: str | None, referrer: str) -> Iterator[Candidate]:
        # debuginfod serves a dwz file as the debuginfo of its build-id.
        yield from super().candidates_for_supplementary(name, identity, referrer)
        yield from self._fetched(name, identity, "debuginfo")


def make_locator(urls: str | list[str] | tuple[str, ...] | None = None,
                 **locator_kwargs: Any) -> DebugInfoLocator:
    """The locator for these debuginfod URLs (a string or list; None: from
    $DEBUGINFOD_URLS): a plain DebugInfoLocator when there are none."""
    parsed = parse_urls(" ".join(urls) if isinstance(urls, (list, tuple)) else urls) \
        if urls else urls_from_env()
    if not parsed:
        return DebugInfoLocator(**locator_kwargs)
    return DebuginfodLocator(DebuginfodClient(parsed), **locator_kwargs)


def _show_progress(bid: str, kind: str, got: int, length: int | None, done: bool = False) -> None:
    """A download's progress on stderr, on one line rewritten."""
    if done:
        sys.stderr.write("\rdebuginfod: %s %s: %d KiB, done\n" % (bid[:12], kind, got >> 10))
        return
    sys.stderr.write("\rdebuginfod: %s %s: %d KiB%s" % (
        bid[:12], kind, got >> 10, " of %d KiB" % (length >> 10) if length else ""))
    sys.stderr.flush()
