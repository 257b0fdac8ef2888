"""Where the harness keeps what it makes: the user's cache folder for built-in models."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The harness cache folder, created if missing.

    `HARNESS_CACHE_DIR` wins; otherwise `$XDG_CACHE_HOME/harness`, falling back to
    `~/.cache/harness`.
    """
    root = os.environ.get("HARNESS_CACHE_DIR")
    if root:
        path = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(xdg) / "harness"
    path.mkdir(parents=True, exist_ok=True)
    return path
