"""The pip command that adds an optional extra (pprof, fleet, native) to
perfdata as it is installed here: every "needs X" hint names it.

A hint of `pip install 'perfdata[fleet]'` is wrong for a user who installed
from a clone (that name asks the package index for another perfdata), and
`pip install '.[fleet]'` is wrong anywhere but in the clone: the hint names
the clone's own folder when perfdata came from one (pip's direct_url.json,
PEP 610, says so; `-e` when it was installed editable, which a plain install
would replace), or when it runs from a checkout that no installation knows
(`python3 cli.py`)."""
from __future__ import annotations

import os
import shlex
from typing import Any

DISTRIBUTION = "perfdata"


def install_hint(extra: str) -> str:
    """`pip install ...` that adds `extra` to this installation."""
    return hint_for(extra, _direct_url(), _checkout())


def hint_for(extra: str, direct_url: dict[str, Any] | None, checkout: str | None) -> str:
    """The hint, from what pip recorded of the installation (its
    direct_url.json, None when perfdata is not installed or came from an
    index) and the checkout the running package lives in (or None)."""
    url = str((direct_url or {}).get("url", ""))
    dir_info = (direct_url or {}).get("dir_info")
    if url.startswith("file://") and isinstance(dir_info, dict):
        from urllib.parse import unquote, urlsplit
        folder = unquote(urlsplit(url).path)
        editable = "-e " if dir_info.get("editable") else ""
        return "pip install %s%s" % (editable, shlex.quote("%s[%s]" % (folder, extra)))
    if direct_url is None and checkout is not None:
        return "pip install %s" % shlex.quote("%s[%s]" % (checkout, extra))
    return "pip install %s" % shlex.quote("%s[%s]" % (DISTRIBUTION, extra))


def _direct_url() -> dict[str, Any] | None:
    """The installed distribution's direct_url.json, or None (installed from
    an index, or not installed)."""
    import json
    from importlib import metadata
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _checkout() -> str | None:
    """The folder of the checkout this perfdata package runs from (its
    parent, holding the pyproject.toml that names it), or None (installed
    into site-packages)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    return root if 'name = "%s"' % DISTRIBUTION in text else None
