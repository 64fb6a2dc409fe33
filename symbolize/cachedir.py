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
