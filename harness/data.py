"""One dataset loader for every suite: the public hub copy by default, a local folder on request.

A suite describes its data with a `DatasetSpec`: the hub id it loads through `datasets`, the path of
the local copy inside a data folder, and a validator per field. `load_rows` reads the rows, checks
every one, and returns the good rows together with a `RowError` for each bad one, so a bad row costs
that row alone. Callers that want to stop on bad rows call `LoadedRows.raise_for_errors()`.

The local folder is `--data-dir DIR` or, failing that, the environment variable `HARNESS_DATA_DIR`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError

DATA_DIR_ENV = "HARNESS_DATA_DIR"

Validator = Callable[[Any], Any]
"""Takes a raw field value and returns the clean value, or raises `ValueError` saying why."""


@dataclass(frozen=True)
class DatasetSpec:
    """Where a suite's data lives and what a valid row looks like."""

    name: str  # short name used in messages, for example "aime2024"
    hub_id: str  # public dataset id on the Hugging Face hub
    local_path: str  # path of the local copy inside a data folder (.jsonl or .json)
    fields: Mapping[str, Validator]  # required fields and how to check them
    hub_split: str = "train"  # split to load from the hub
    hub_config: str | None = None  # hub configuration name, if the dataset has several
    hub_columns: Mapping[str, str] = field(default_factory=dict)  # hub column -> our field


@dataclass(frozen=True)
class RowError:
    """One bad row: where it is and which field is wrong."""

    source: str  # file path or hub id
    row: int  # 1-based row number in the source
    field: str  # the offending field
    message: str  # what is wrong with it

    def __str__(self) -> str:
        return f"{self.source} row {self.row}: field '{self.field}' {self.message}"


@dataclass(frozen=True)
class LoadedRows:
    """The rows that passed validation, each with its 1-based source row number."""

    source: str  # file path or hub id the rows came from
    rows: tuple[tuple[int, dict[str, Any]], ...]  # (row number, clean row)
    errors: tuple[RowError, ...]  # one entry per rejected row

    def raise_for_errors(self, hint: str = "") -> None:
        """Raise a one-line `HarnessUsageError` if any row was rejected."""
        if not self.errors:
            return
        more = f" (and {len(self.errors) - 1} more bad rows)" if len(self.errors) > 1 else ""
        fix = f"; fix the row{hint}" if hint else "; fix the row"
        raise HarnessUsageError(f"bad data: {self.errors[0]}{more}{fix}")


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The local data folder: the argument, else `HARNESS_DATA_DIR`, else None (use the hub).

    Raises:
        HarnessUsageError: the folder named does not exist.

    """
    chosen = data_dir if data_dir not in (None, "") else os.environ.get(DATA_DIR_ENV) or None
    if chosen is None:
        return None
    path = Path(chosen).expanduser()
    if not path.is_dir():
        origin = "--data-dir" if data_dir not in (None, "") else DATA_DIR_ENV
        raise HarnessUsageError(
            f"data folder '{path}' (from {origin}) does not exist; point {origin} at a folder "
            f"holding the suites' local copies, or unset it to load from the hub"
        )
    return path


def load_rows(spec: DatasetSpec, data_dir: str | os.PathLike[str] | None = None) -> LoadedRows:
    """Load and validate a suite's rows from the local folder if one is set, else from the hub."""
    folder = resolve_data_dir(data_dir)
    if folder is not None:
        path = folder / spec.local_path
        if not path.is_file():
            raise HarnessUsageError(
                f"{spec.name}: expected the local copy at '{path}'; put the file there or "
                f"point --data-dir at the folder that holds '{spec.local_path}'"
            )
        source, raw = str(path), _read_local(path)
    else:
        source, raw = spec.hub_id, _read_hub(spec)
    rows: list[tuple[int, dict[str, Any]]] = []
    errors: list[RowError] = []
    for number, item in raw:
        clean = _validate(spec, source, number, item)
        if isinstance(clean, RowError):
            errors.append(clean)
        else:
            rows.append((number, clean))
    return LoadedRows(source=source, rows=tuple(rows), errors=tuple(errors))


def _validate(spec: DatasetSpec, source: str, number: int, item: Any) -> dict[str, Any] | RowError:
    if isinstance(item, RowError):
        return item
    if not isinstance(item, dict):
        return RowError(source, number, "*", f"is not an object but {type(item).__name__}")
    clean = dict(item)
    for name, check in spec.fields.items():
        if name not in item or item[name] is None:
            return RowError(source, number, name, "is missing")
        try:
            clean[name] = check(item[name])
        except (ValueError, TypeError) as ex:
            return RowError(source, number, name, f"is invalid: {ex}")
    return clean


def _read_local(path: Path) -> list[tuple[int, Any]]:
    """Rows of a local .json or .jsonl file; a line that is not UTF-8 or JSON is a bad row.

    Size and nesting depth are checked before parsing (`harness.bounded_json`).
    """
    from harness.bounded_json import JsonInputError, loads, read_bytes

    try:
        data = read_bytes(path)
    except JsonInputError as ex:
        raise HarnessUsageError(f"{ex}; fix --data-dir") from None
    if not data.strip():
        raise HarnessUsageError(f"{path}: the file is empty; put the rows there or fix --data-dir")
    if path.suffix == ".json":
        try:
            parsed = loads(data, str(path))
        except JsonInputError as ex:
            raise HarnessUsageError(f"{ex}; fix the file") from None
        items = parsed if isinstance(parsed, list) else [parsed]
        return list(enumerate(items, start=1))
    out: list[tuple[int, Any]] = []
    number = 0
    for raw_line in data.splitlines():
        if not raw_line.strip():
            continue
        number += 1
        try:
            raw_line.decode("utf-8")
        except UnicodeDecodeError as ex:
            reason = f"is not UTF-8 text (byte {ex.start} of the line)"
            out.append((number, RowError(str(path), number, "*", reason)))
            continue
        try:
            out.append((number, loads(raw_line, "")))
        except JsonInputError as ex:
            reason = f"is not valid JSON: {str(ex).removeprefix(': ')}"
            out.append((number, RowError(str(path), number, "*", reason)))
    return out


def _hub_unreachable(timeout: float = 5.0) -> str:
    """Why the Hugging Face hub cannot be reached ("" when it can, or in offline mode).

    In offline mode `datasets` reads its own cache. One connection attempt, so that a machine
    without a network fails at once with the hint instead of after the hub client's retries.
    """
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE"):
        return ""
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or ""
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError as ex:
        return f"{host}: {ex.strerror or type(ex).__name__}"
    return ""


@contextmanager
def _quiet_hub_logs() -> Iterator[None]:
    """Silence the hub client's per-retry log lines; the final error still reaches the user."""
    import logging

    loggers = [logging.getLogger(n) for n in ("huggingface_hub", "datasets", "fsspec", "urllib3")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _read_hub(spec: DatasetSpec) -> list[tuple[int, Any]]:
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a core dependency
        raise HarnessUsageError("loading from the hub needs `pip install datasets`") from None
    hint = f"pass --data-dir or set {DATA_DIR_ENV} to use a local copy"
    unreachable = _hub_unreachable()
    if unreachable:
        raise HarnessUsageError(
            f"{spec.name}: the hub is unreachable ({unreachable}) and no local copy was given; "
            f"{hint}"
        )
    print(f"harness: loading {spec.name} from the hub ({spec.hub_id})", file=sys.stderr)
    try:
        with _quiet_hub_logs():
            ds = datasets.load_dataset(spec.hub_id, spec.hub_config, split=spec.hub_split)
    except Exception as ex:  # network, auth or a missing dataset
        raise HarnessUsageError(
            f"{spec.name}: could not load '{spec.hub_id}' from the hub ({type(ex).__name__}); "
            f"{hint}"
        ) from None
    out: list[tuple[int, Any]] = []
    for number, row in enumerate(ds, start=1):
        row = dict(row)
        for hub_name, ours in spec.hub_columns.items():
            if hub_name in row:
                row[ours] = row.pop(hub_name)
        out.append((number, row))
    return out


def nonempty_str(value: Any) -> str:
    """Validator: a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value


def int_in_range(low: int, high: int) -> Validator:
    """Validator factory: an integer (or a decimal string of one) in [low, high]."""

    def check(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError("must be an integer, not a boolean")
        if isinstance(value, str):
            if not value.strip().isdigit():
                raise ValueError(f"must be an integer, got {value!r}")
            value = int(value.strip())
        if not isinstance(value, int):
            raise ValueError(f"must be an integer, got {type(value).__name__}")
        if not low <= value <= high:
            raise ValueError(f"must be in [{low}, {high}], got {value}")
        return value

    return check


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line, size, depth and UTF-8 checked first.

    Raises:
        HarnessUsageError: a line is too long, not UTF-8, nested too deep, not valid JSON or
            not a JSON object (named by number), or the file is not a regular file.

    """
    from harness.bounded_json import JsonInputError, iter_lines

    try:
        for number, item in iter_lines(path):
            if not isinstance(item, dict):
                raise HarnessUsageError(f"{path} line {number}: expected a JSON object")
            yield number, item
    except JsonInputError as ex:
        raise HarnessUsageError(f"{ex}; fix the file") from None
