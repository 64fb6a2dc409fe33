"""Where symbolize keeps what it builds once per binary (symbol tables by
build-id, this machine's vdso image): $PERFDATA_CACHE_DIR, else
$XDG_CACHE_HOME/perfdata, else ~/.cache/perfdata.  An empty
$PERFDATA_CACHE_DIR turns the cache off."""
import os


def user_cache_dir(name: str) -> str:
    """$XDG_CACHE_HOME/name, or ~/.cache/name (the XDG convention)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, name)


def perfdata_cache_dir() -> str | None:
    """The cache directory, or None when $PERFDATA_CACHE_DIR is set empty."""
    env = os.environ.get("PERFDATA_CACHE_DIR")
    if env is not None:
        return os.path.expanduser(env) if env.strip() else None
    return user_cache_dir("perfdata")


def code_tag(kind: str, modules) -> str:
    """The tag a cache entry of `kind` must carry to be used: a digest of the
    symbolize modules whose code decides what it holds (a change to any of
    them makes every entry stale)."""
    import hashlib
    digest = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in modules:
        try:
            with open(os.path.join(here, name), "rb") as f:
                digest.update(f.read())
        except OSError:
            digest.update(name.encode())
    return "perfdata-%s-%s" % (kind, digest.hexdigest()[:16])


def write_json(path: str, doc) -> bool:
    """Write `doc` as JSON to path atomically; False when that fails."""
    import json
    try:
        text = json.dumps(doc)
    except (TypeError, ValueError):
        return False
    return write_atomic(path, text.encode())


def write_atomic(path: str, data: bytes) -> bool:
    """Write data to path so that a reader never sees half a file (a temporary
    file renamed over it); False, and nothing left behind, when that fails."""
    import tempfile
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False


def read_json(path: str, max_size: int = 512 << 20):
    """The JSON document at path, or None if absent, not a regular file,
    too large or damaged."""
    import json
    import stat
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_size:
            return None
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

