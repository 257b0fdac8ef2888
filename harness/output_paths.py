"""Where a command may write: `-o` files and folders checked before any work, and marked after.

The harness never overwrites or deletes a file it did not write.

- A report file carries a mark on its first line (`<!-- written by harness report: ... -->`)
  that lists the plot files written beside it. An existing `-o` file is replaced only if it
  carries that mark, and a file beside it that a report would write is replaced only if the
  marked report lists it.
- A folder the harness builds (a leaderboard site) holds `.harness-built.json`, the list of the
  files it wrote. A non-empty `-o` folder without it is refused, and so is a marked one that
  now holds anything else: a file the user added, a link, a folder where a file was.
- A log (`.eval`, or a `.json` that is one) is never replaced, not even with `--force`.
- `--force` replaces the rest, and the command says what it replaced.

Paths that cannot be written (a device such as /dev/full, a FIFO, /proc, a folder where a file
is wanted or the reverse, an empty name) are usage errors before any work starts.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessUsageError

REPORT_MARK = "<!-- written by harness report"
SITE_MARK = ".harness-built.json"
_MARK_LINE = re.compile(r"<!-- written by harness report(?:: files ([^>]*))? -->")
_SHOWN = 3  # names listed in a refusal before "and N more"


@dataclass(frozen=True)
class OutputFile:
    """A checked `-o` file, and the existing files that `--force` lets a command replace."""

    path: Path  # the file to write
    replaced: tuple[str, ...]  # files not made by the harness that will be replaced (--force)


@dataclass(frozen=True)
class OutputFolder:
    """A checked `-o` folder, and what `--force` lets the build replace in it."""

    path: Path  # the folder to build
    manifest: frozenset[str]  # files a previous build wrote (relative, `/`-separated)
    foreign: tuple[str, ...]  # entries the harness did not write (--force given)


def _names(names: Iterable[str]) -> str:
    names = sorted(names)
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _writable_folder(folder: Path, what: str, target: str) -> None:
    """Create `folder` if missing and prove it writable, else a usage error naming `target`."""
    if folder.exists() and not folder.is_dir():
        raise HarnessUsageError(f"{what} '{target}': '{folder}' is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):  # root passes os.access where it cannot write
            pass
    except OSError as ex:
        raise HarnessUsageError(
            f"{what} '{target}' cannot be written ({ex.strerror or ex}); name a writable place"
        ) from None


def is_log(path: Path) -> bool:
    """Whether a file is an inspect log: a zip named `.eval`, or JSON with an eval's header."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if head.startswith(b"PK") or path.suffix == ".eval":
        return True
    return path.suffix == ".json" and b'"eval"' in head and b'"status"' in head


def report_mark(files: Iterable[str]) -> str:
    """The first line of a report that lists the files written beside it."""
    names = " ".join(sorted(files))
    return f"{REPORT_MARK}: files {names} -->" if names else f"{REPORT_MARK} -->"


def _head(path: Path, head_bytes: int) -> str | None:
    """The first bytes of a regular file, never following a link or blocking on a FIFO."""
    try:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return f.read(head_bytes).decode("utf-8", "replace")
    except OSError:
        return None


def _marked_files(path: Path, head_bytes: int = 64 * 1024) -> set[str] | None:
    """The files a marked report lists beside it; None for a file without the mark.

    The mark counts only where the harness writes it: the whole first line (the second after
    an HTML doctype), or a JSON report's first key. A user's notes that quote the mark further
    down are the user's.
    """
    head = _head(path, head_bytes)
    if head is None:
        return None
    if head.startswith('{\n  "written_by": "harness report"'):
        return set()
    lines = head.split("\n", 2)
    first = lines[0].rstrip("\r")
    if first.lstrip().lower().startswith("<!doctype") and len(lines) > 1:
        first = lines[1].rstrip("\r")
    match = _MARK_LINE.fullmatch(first)
    if match is None:
        return None
    return set((match.group(1) or "").split())


def written_by(path: Path, mark: str) -> bool:
    """Whether a JSON or CSV file starts with the harness's `written_by` mark for `mark`.

    The mark is the file's first key (`{"written_by": MARK` compact or indented), or its first
    line (`# written by MARK`): never a quote of it further down.
    """
    head = _head(path, 256)
    if head is None:
        return False
    starts = (
        f'{{"written_by": "{mark}"',
        f'{{\n  "written_by": "{mark}"',
        f"# written by {mark}\n",
    )
    return head.startswith(starts)


def refuse_link(path: Path, what: str, target: str) -> None:
    """A usage error when `path` is a symbolic link: the harness never writes through one."""
    if path.is_symlink():
        raise HarnessUsageError(
            f"{what} '{target}': '{path}' is a link; the harness never writes through a link, "
            "not even with --force: remove the link or name another file"
        )


def _existing(file: Path, what: str, target: str) -> os.stat_result | None:
    """What is at an output path now (None: nothing); a link or an unusable path is refused."""
    refuse_link(file, what, target)
    try:
        return os.stat(file)
    except FileNotFoundError:
        return None
    except OSError as ex:
        raise HarnessUsageError(f"{what} '{target}' cannot be used ({ex.strerror})") from None


def data_file(path: str, what: str, *, force: bool, mark: str | None) -> Path:
    """Check an output file of data (JSON, CSV) before any work, by the rule reports follow.

    Raises:
        HarnessUsageError: the name is empty; the path is a link, a folder, a device, a FIFO
            or a log; its folder does not exist; or it exists without the harness's mark on
            its first line (`written_by`; a file with no mark, `mark` None, always needs it)
            and `--force` is not given.

    """
    if not path.strip():
        raise HarnessUsageError(f"{what} is empty; name a file")
    out = Path(path)
    info = _existing(out, what, path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise HarnessUsageError(f"{what} '{path}' is not a regular file; name a file")
    if info is not None and is_log(out):
        raise HarnessUsageError(
            f"{what} '{path}' is an inspect log, which is never replaced; name another file"
        )
    if info is not None and not force and (mark is None or not written_by(out, mark)):
        raise HarnessUsageError(
            f"{what} '{path}' exists and was not written by {mark or 'harness'}; name another "
            "file, or pass --force to replace it"
        )
    if not out.parent.is_dir():
        raise HarnessUsageError(f"{what} '{path}': folder '{out.parent}' does not exist")
    return out


def is_harness_report(path: Path) -> bool:
    """Whether a file is a report the harness wrote (its mark, in the first bytes)."""
    return _marked_files(path, 256) is not None


def report_file(path: str, what: str, *, force: bool, fmt: str) -> OutputFile:
    """Check an `-o` report file (and the plots beside it) before any work.

    Raises:
        HarnessUsageError: the name is empty; the path is a folder, a device, a FIFO or a log;
            its folder cannot be written; or it, or a file a report would write beside it, was
            not written by the harness and `--force` is not given.

    """
    if not path.strip():
        raise HarnessUsageError(f"{what} is empty; name the report file, e.g. report.{fmt}")
    file = Path(path)
    info = _existing(file, what, path)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise HarnessUsageError(f"{what} '{path}' is a folder; name a file inside it")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise HarnessUsageError(f"{what} '{path}' is not a regular file (a device or a FIFO)")
    _writable_folder(file.parent, what, path)
    replaced: list[str] = []
    listed: set[str] = set()
    if info is not None:
        marked = _marked_files(file)
        if marked is None and is_log(file):
            raise HarnessUsageError(
                f"{what} '{path}' is an inspect log; the report never replaces a log, name "
                "another file"
            )
        if marked is None:
            replaced.append(str(file))
        else:
            listed = marked
    stem = file.with_suffix("").name
    siblings = sorted(file.parent.glob(f"{glob_escape(stem)}.*"))
    for sibling in siblings:  # report.md and report.html share their plots' names
        if sibling.suffix in (".md", ".html", ".json") and sibling.is_file():
            listed |= _marked_files(sibling) or set()
    for other in siblings:
        if other == file or other.suffix not in (".png", ".svg"):
            continue
        refuse_link(other, what, path)  # a plot a report writes: the same rule, listed or not
        if other.name in listed:
            continue
        if other.is_file():
            replaced.append(str(other))
    if replaced and not force:
        raise HarnessUsageError(
            f"{what} '{path}': {_names(replaced)} exist and were not written by harness "
            "report; name another file, or pass --force to replace them"
        )
    return OutputFile(file, tuple(replaced))


def glob_escape(text: str) -> str:
    """`text` with glob's special characters taken literally."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def mark_report(path: Path, written: Iterable[str], fmt: str) -> None:
    """Put the mark, with the files written beside the report, on the report's first line."""
    beside = [Path(w).name for w in written if Path(w) != path]
    text = path.read_text(encoding="utf-8")
    if fmt == "json":
        body = json.loads(text)
        marked = {"written_by": "harness report", **body}
        path.write_text(json.dumps(marked, indent=2, allow_nan=False), encoding="utf-8")
        return
    mark = report_mark(beside)
    if text.lstrip().lower().startswith("<!doctype"):
        doctype, _, rest = text.partition("\n")
        path.write_text(f"{doctype}\n{mark}\n{rest}", encoding="utf-8")
    else:
        path.write_text(f"{mark}\n{text}", encoding="utf-8")


def _walk(folder: Path) -> tuple[set[str], list[str]]:
    """Regular files under `folder` (relative), and entries that are links or special files."""
    files: set[str] = set()
    odd: list[str] = []
    for top, dirs, names in os.walk(folder):
        rel = Path(top).relative_to(folder)
        for name in [*dirs, *names]:
            path = Path(top, name)
            key = (rel / name).as_posix()
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:  # gone while we looked
                continue
            if stat.S_ISLNK(mode):
                odd.append(f"{key} (a link)")
                if name in dirs:
                    dirs.remove(name)  # never followed
            elif stat.S_ISREG(mode):
                files.add(key)
            elif not stat.S_ISDIR(mode):
                odd.append(f"{key} (not a regular file)")
    files.discard(SITE_MARK)
    return files, odd


def read_manifest(folder: Path) -> frozenset[str] | None:
    """The files a previous build wrote into `folder`, or None if it has no valid mark."""
    mark = folder / SITE_MARK
    try:
        if mark.is_symlink() or not mark.is_file() or mark.stat().st_size > 64 << 20:
            return None
        data = json.loads(mark.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("made_by") != "harness":
        return None
    files = data.get("files")
    return frozenset(f for f in files if isinstance(f, str)) if isinstance(files, list) else None


def site_folder(path: str, what: str, *, force: bool) -> OutputFolder:
    """Check an `-o` site folder before any work: new, empty, or built by the harness.

    Raises:
        HarnessUsageError: the name is empty or names a file; the folder cannot be written;
            or it holds anything a previous build did not write (a folder that holds logs
            included) and `--force` is not given.

    """
    if not path.strip():
        raise HarnessUsageError(f"{what} is empty; name the site folder, e.g. site")
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        kind = "an inspect log" if folder.is_file() and is_log(folder) else "not a folder"
        raise HarnessUsageError(f"{what} '{path}' is {kind}; name a folder for the site")
    _writable_folder(folder, what, path)
    manifest = read_manifest(folder)
    if manifest is None:  # anything at all, an empty folder included; nothing walked
        foreign = sorted(os.listdir(folder))
    else:
        files, odd = _walk(folder)
        foreign = sorted(files - manifest) + odd
        foreign += [f"{m} (a folder)" for m in sorted(manifest) if (folder / m).is_dir()]
    if foreign and not force:
        why = "was not built by harness" if manifest is None else "holds files it did not write"
        raise HarnessUsageError(
            f"{what} '{path}' {why} ({_names(foreign)}); name a new or empty folder, or pass "
            "--force to replace them"
        )
    return OutputFolder(folder, manifest or frozenset(), tuple(foreign))


def unlink_links(folder: Path) -> None:
    """Remove the links under `folder` (never what they point to), so a build writes no link."""
    for top, dirs, names in os.walk(folder):
        for name in [*dirs, *names]:
            path = Path(top, name)
            if path.is_symlink():
                path.unlink()
                if name in dirs:
                    dirs.remove(name)


def mark_site(folder: Path, keep_out: Iterable[str]) -> None:
    """Write the site's mark: every regular file under it, less `keep_out` (not ours)."""
    files, _ = _walk(folder)
    out = tuple(keep_out)
    listed = sorted(f for f in files if not any(f == k or f.startswith(f"{k}/") for k in out))
    body = json.dumps({"made_by": "harness", "files": listed}, indent=0)
    (folder / SITE_MARK).write_text(body + "\n", encoding="utf-8")
