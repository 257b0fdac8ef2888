"""Bundle inspect's log viewer with chosen logs into the site, and link to each log.

The bundle is what `inspect view bundle` makes (`inspect_ai.log.bundle_log_dir`): the viewer's
static files, the logs under `logs/`, and a `listing.json` of their headers. The viewer is a
single-page app with hash routes; one log opens at `index.html#/logs/<path in logs/>`, the path's
segments each encoded like JavaScript's `encodeURIComponent` (inspect-ai 0.3.285:
`_view/dist/assets/index.js`, `logsUrl`/`directoryRelativeUrl` in `src/app/routing/url.ts`,
and `scopeRouteLogFile`, which resolves the route against the bundle's `logs` dir).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from harness.errors import HarnessUsageError

VIEWER_DIR = "viewer"  # the bundle's folder under the site root
LOG_SUFFIXES = (".eval", ".json")  # the log formats the bundle copies


class ViewerBundleError(RuntimeError):
    """inspect-ai could not bundle the viewer, or the bundle lacks a log it was given."""


def viewer_log_url(name: str) -> str:
    """The site-relative URL that opens one bundled log in the viewer.

    Args:
        name: The log's path inside the bundle's `logs/` folder, with `/` separators.

    Returns:
        `viewer/index.html#/logs/<name>`, each segment of `name` percent-encoded.

    """
    # encodeURIComponent leaves A-Z a-z 0-9 and - _ . ! ~ * ' ( ) alone; quote adds !*'()
    encoded = "/".join(quote(part, safe="!*'()") for part in name.split("/"))
    return f"{VIEWER_DIR}/index.html#/logs/{encoded}"


def bundle_viewer(log_paths: list[str], site: Path) -> dict[str, str]:
    """Build `site/viewer/` holding inspect's viewer and exactly the given logs.

    Logs may come from several folders: they are gathered into one temporary log folder
    (hard-linked where possible, else copied) that inspect bundles. A log whose file name
    another given log already took goes into a numbered subfolder (`2/`, `3/`, ...) so that
    neither is lost. Any existing `site/viewer/` is replaced.

    Args:
        log_paths: Local `.eval` or `.json` log files.
        site: The site root; created if missing.

    Returns:
        For each given path (as given), the site-relative URL that opens that log in the
        viewer, e.g. `viewer/index.html#/logs/2026-01-01T00-00-00_task_abc.eval`.

    Raises:
        HarnessUsageError: No logs, or a path that is not a log file.
        ViewerBundleError: inspect-ai failed to bundle, or a log is missing from the bundle.

    """
    if not log_paths:
        raise HarnessUsageError("no logs to bundle into the viewer; pass at least one log")
    sources = [_checked_log(p) for p in log_paths]
    names = _bundle_names(sources)
    out = site / VIEWER_DIR
    site.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-viewer-logs-") as tmp:
        for source, name in names.items():
            target = Path(tmp, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(source, target)
        _run_bundle(tmp, out, list(names.values()))
        _forget_log_dir(out / "index.html", tmp)
    missing = [n for n in names.values() if not (out / "logs" / n).is_file()]
    if not (out / "index.html").is_file() or missing:
        raise ViewerBundleError(
            f"inspect view bundle wrote {out} without "
            + (f"the logs {missing}" if missing else "index.html")
        )
    pairs = zip(log_paths, sources, strict=True)
    return {path: viewer_log_url(names[source]) for path, source in pairs}


def _checked_log(path: str) -> Path:
    source = Path(path).resolve()
    if not source.is_file():
        raise HarnessUsageError(f"log file not found: {path}")
    if source.suffix not in LOG_SUFFIXES:
        raise HarnessUsageError(f"not an inspect log (.eval or .json): {path}")
    return source


def _bundle_names(sources: list[Path]) -> dict[Path, str]:
    """Each distinct source's path in the bundle: its file name, numbered folders on a clash."""
    names: dict[Path, str] = {}
    taken: set[str] = set()
    for source in sources:
        if source in names:
            continue  # the same log given twice opens the same page
        name, k = source.name, 1
        while name in taken:
            k += 1
            name = f"{k}/{source.name}"
        names[source] = name
        taken.add(name)
    return names


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another filesystem, or links not allowed
        shutil.copy2(source, target)


def _forget_log_dir(index: Path, log_dir: str) -> None:
    """Drop the temporary log folder's path that inspect writes into the viewer's page.

    The viewer only uses it for the value its "copy path" button copies; without it the
    button copies the log's URL instead of a folder that no longer exists.
    """
    if not index.is_file():
        return  # reported by the caller
    text = index.read_text(encoding="utf-8")
    index.write_text(text.replace(f', "abs_log_dir": {json.dumps(log_dir)}', ""), encoding="utf-8")


def _run_bundle(log_dir: str, out: Path, names: list[str]) -> None:
    from inspect_ai.log import bundle_log_dir

    # inspect prints progress on stdout; keep stdout for the caller's own output
    try:
        with contextlib.redirect_stdout(sys.stderr):
            bundle_log_dir(log_dir=log_dir, output_dir=str(out), overwrite=True)
    except Exception as ex:  # inspect's PrerequisiteError, an OSError, a log it cannot read
        raise ViewerBundleError(
            f"inspect view bundle into {out} failed ({type(ex).__name__}: {ex}); "
            f"check that these are readable inspect logs: {', '.join(names)}"
        ) from ex
