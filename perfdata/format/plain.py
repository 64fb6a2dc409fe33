"""construct's Containers as plain Python values."""
from __future__ import annotations

from typing import Any


def plain(obj: Any) -> Any:
    """Containers to plain dicts and lists, without construct's '_' keys."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj
