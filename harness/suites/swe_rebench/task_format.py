"""The SWE-rebench V2 task format: one row to a validated `SweTask`, and task files to tasks.

A task row carries the fields of `specs/swe-rebench.md`, section 2. `parse_task` checks every field
it knows and keeps the others in `SweTask.extra`. Rows exported from the hub sometimes hold their
list fields as JSON text (`'["a", "b"]'`); those are decoded. A bad row raises `TaskFormatError`,
whose message names the file, the row and the field.

Local copies live in `DIR/swe/*.json` (a JSON list of rows) or `DIR/swe/*.jsonl` (one row a line),
where DIR is `--data-dir` or `HARNESS_DATA_DIR`. Rows are numbered from 1, as in `harness.data`;
in a .jsonl file blank lines are not counted.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from harness.data import resolve_data_dir
from harness.errors import HarnessUsageError
from harness.suites.swe_rebench.log_parsers import PARSERS

TASK_DIR: Final = "swe"
"""The folder inside a data folder that holds the task files."""

_REQUIRED_TEXT: Final = (
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "image_name",
)
_OPTIONAL_TEXT: Final = ("interface", "pr_description", "language")
_KNOWN: Final = frozenset(
    {*_REQUIRED_TEXT, *_OPTIONAL_TEXT, "FAIL_TO_PASS", "PASS_TO_PASS", "install_config"}
    | {"meta", "created_at"}
)
_INSTALL_KNOWN: Final = frozenset(
    {"install", "test_cmd", "log_parser", "base_image_name", "docker_specs", "log_parsers"}
)
_SHA_RE: Final = re.compile(r"[0-9a-fA-F]{7,40}")


class TaskFormatError(HarnessUsageError, ValueError):
    """A task row or task file that does not follow the V2 format; the message says where."""


@dataclass(frozen=True, slots=True)
class InstallConfig:
    """How a task's image is built and its tests are run (`install_config` in a row)."""

    install: tuple[str, ...]  # shell lines run once to build the project; may be empty
    test_cmd: tuple[str, ...]  # shell lines run at scoring, in order; never empty
    log_parser: str  # a name registered in `harness.suites.swe_rebench.log_parsers.PARSERS`
    base_image_name: str | None  # the language base image, such as "c:latest"
    docker_specs: Any = None  # kept as the row gives it
    log_parsers: Any = None  # kept as the row gives it
    extra: dict[str, Any] = field(default_factory=dict)  # any other keys, unchanged


@dataclass(frozen=True, slots=True)
class SweTask:
    """One validated SWE-rebench V2 task.

    Notes:
        `pr_description` is for analysis only and must never reach the solver. `meta`, `extra`
        and the raw fields of `install_config` are kept as the row gives them, so the dataclass
        is frozen only at its top level.

    """

    instance_id: str  # "owner__repo-PR", unique within a file
    repo: str  # "owner/name"
    base_commit: str  # the commit the task starts from (7 to 40 hex digits)
    patch: str  # the gold fix, a unified diff
    test_patch: str  # the hidden tests, a unified diff applied only at scoring
    problem_statement: str  # the issue text shown to the solver
    fail_to_pass: tuple[str, ...]  # tests the fix must make pass; never empty
    pass_to_pass: tuple[str, ...]  # tests that must keep passing; may be empty
    install_config: InstallConfig  # install and test commands, and the log parser's name
    image_name: str  # the pre-built image to run the task in
    meta: dict[str, Any]  # llm_metadata, num_modified_files, pr_url and so on; {} if absent
    created_at: datetime | None  # when the PR was created, aware and in UTC
    interface: str | None  # signatures the tests rely on, shown to the solver by default
    pr_description: str | None  # the original PR text; never shown to the solver
    language: str | None  # such as "c" or "python"
    extra: dict[str, Any]  # the row's other fields, unchanged

    @property
    def workdir(self) -> str:
        """The repository's folder in the task's image: `/<repo-name>`, not `/testbed`."""
        return "/" + self.repo.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class LoadedTasks:
    """What `load_tasks_lenient` read: the good tasks, and a message for each bad row."""

    source: str  # the file the tasks came from
    tasks: tuple[SweTask, ...]  # the rows that passed validation, in file order
    errors: tuple[str, ...]  # one message per rejected row, naming the file, row and field


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _text(row: dict[str, Any], name: str, where: str, *, required: bool) -> str | None:
    value = row.get(name)
    if value is None:
        if required:
            raise TaskFormatError(f"{where}: {name} is missing")
        return None
    if not isinstance(value, str):
        raise TaskFormatError(f"{where}: {name} must be a string, got {_type_name(value)}")
    if required and not value.strip():
        raise TaskFormatError(f"{where}: {name} must be a non-empty string")
    return value


def _decode_json_text(value: Any) -> Any:
    """Decode `value` if it is JSON text for a list or an object; else return it unchanged."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _string_list(value: Any, name: str, where: str, *, nonempty: bool) -> tuple[str, ...]:
    if value is None:
        raise TaskFormatError(f"{where}: {name} is missing")
    value = _decode_json_text(value)
    if not isinstance(value, list):
        raise TaskFormatError(f"{where}: {name} must be a list of strings, got {_type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise TaskFormatError(
                f"{where}: {name} must be a list of strings, got {_type_name(item)} at [{index}]"
            )
        if not item.strip():
            raise TaskFormatError(f"{where}: {name}[{index}] is an empty string")
    if nonempty and not value:
        raise TaskFormatError(f"{where}: {name} must not be empty")
    return tuple(value)


def _install_config(value: Any, where: str) -> InstallConfig:
    name = "install_config"
    value = _decode_json_text(value)
    if not isinstance(value, dict):
        raise TaskFormatError(f"{where}: {name} must be an object, got {_type_name(value)}")
    install = value.get("install")
    install_lines = (
        () if install is None else _string_list(install, f"{name}.install", where, nonempty=False)
    )
    test_cmd = _decode_json_text(value.get("test_cmd"))
    if isinstance(test_cmd, str) and test_cmd.strip():
        test_cmd = [test_cmd]  # one shell line given on its own
    test_lines = _string_list(test_cmd, f"{name}.test_cmd", where, nonempty=True)
    parser = value.get("log_parser")
    if not isinstance(parser, str):
        raise TaskFormatError(
            f"{where}: {name}.log_parser must be a string, got {_type_name(parser)}"
        )
    if parser not in PARSERS:
        known = ", ".join(sorted(PARSERS))
        raise TaskFormatError(
            f"{where}: {name}.log_parser {parser!r} is not a registered parser; "
            f"registered parsers: {known}"
        )
    base_image = value.get("base_image_name")
    if base_image is not None and not isinstance(base_image, str):
        raise TaskFormatError(
            f"{where}: {name}.base_image_name must be a string, got {_type_name(base_image)}"
        )
    return InstallConfig(
        install=install_lines,
        test_cmd=test_lines,
        log_parser=parser,
        base_image_name=base_image,
        docker_specs=value.get("docker_specs"),
        log_parsers=value.get("log_parsers"),
        extra={key: item for key, item in value.items() if key not in _INSTALL_KNOWN},
    )


def _created_at(value: Any, where: str) -> datetime | None:
    """Epoch milliseconds, an ISO-8601 string or a datetime, as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise TaskFormatError(
                f"{where}: created_at {value!r} is out of range for epoch milliseconds"
            ) from None
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise TaskFormatError(
                f"{where}: created_at {value!r} is neither epoch milliseconds nor ISO 8601"
            ) from None
    else:
        raise TaskFormatError(
            f"{where}: created_at must be epoch milliseconds or an ISO 8601 string, "
            f"got {_type_name(value)}"
        )
    # A time without a zone is taken to be UTC, as the hub's exports write it.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_task(row: dict[str, Any], where: str) -> SweTask:
    """Validate one task row and return it as a `SweTask`.

    Args:
        row: The row as read from JSON.
        where: Where the row is, for messages, such as "swe/tasks.json row 3".

    Raises:
        TaskFormatError: A required field is missing, or a field has the wrong type or value.
            The message starts with `where` and names the field.

    Notes:
        FAIL_TO_PASS, PASS_TO_PASS, `install_config` and its `install` and `test_cmd` may be JSON
        text; `test_cmd` may also be one shell line. `created_at` is epoch milliseconds (the
        format of the hub's rows), an ISO 8601 string or a datetime; one without a zone is taken
        as UTC. FAIL_TO_PASS must not be empty, and no test name may be empty, since neither
        could ever be matched against a log.

    """
    if not isinstance(row, dict):
        raise TaskFormatError(f"{where}: a task must be a JSON object, got {_type_name(row)}")
    text = {name: _text(row, name, where, required=True) for name in _REQUIRED_TEXT}
    optional = {name: _text(row, name, where, required=False) for name in _OPTIONAL_TEXT}
    if not _SHA_RE.fullmatch(text["base_commit"] or ""):
        raise TaskFormatError(
            f"{where}: base_commit must be a commit sha (7 to 40 hex digits), "
            f"got {text['base_commit']!r}"
        )
    if (text["repo"] or "").count("/") != 1:
        raise TaskFormatError(f"{where}: repo must read 'owner/name', got {text['repo']!r}")
    fail_to_pass = _string_list(row.get("FAIL_TO_PASS"), "FAIL_TO_PASS", where, nonempty=True)
    pass_to_pass = _string_list(row.get("PASS_TO_PASS"), "PASS_TO_PASS", where, nonempty=False)
    if row.get("install_config") is None:
        raise TaskFormatError(f"{where}: install_config is missing")
    install_config = _install_config(row["install_config"], where)
    meta = _decode_json_text(row.get("meta"))
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise TaskFormatError(f"{where}: meta must be an object, got {_type_name(meta)}")
    return SweTask(
        instance_id=text["instance_id"],
        repo=text["repo"],
        base_commit=text["base_commit"],
        patch=text["patch"],
        test_patch=text["test_patch"],
        problem_statement=text["problem_statement"],
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        install_config=install_config,
        image_name=text["image_name"],
        meta=meta,
        created_at=_created_at(row.get("created_at"), where),
        interface=optional["interface"],
        pr_description=optional["pr_description"],
        language=optional["language"],
        extra={key: value for key, value in row.items() if key not in _KNOWN},
    )


def _read_rows(path: Path) -> list[tuple[int, Any]]:
    """The file's rows, numbered from 1; a .jsonl line that is not JSON becomes an exception."""
    if not path.is_file():
        raise HarnessUsageError(f"task file '{path}' does not exist; check the path")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as ex:
            raise TaskFormatError(f"{path}: not valid JSON ({ex}); fix the file") from None
        if not isinstance(data, list):
            raise TaskFormatError(
                f"{path}: a .json task file must hold a list of tasks, got {_type_name(data)}"
            )
        return list(enumerate(data, start=1))
    if path.suffix == ".jsonl":
        rows: list[tuple[int, Any]] = []
        for line in text.splitlines():
            if not line.strip():
                continue
            number = len(rows) + 1
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as ex:
                rows.append((number, TaskFormatError(f"{path} row {number}: not JSON ({ex.msg})")))
        return rows
    raise HarnessUsageError(f"task file '{path}' must end in .json or .jsonl")


def load_tasks_lenient(path: str | os.PathLike[str]) -> LoadedTasks:
    """Load a .json or .jsonl task file, skipping bad rows and keeping a message for each.

    A row whose `instance_id` repeats an earlier good row's is rejected too.

    Raises:
        HarnessUsageError: The file is missing or has another suffix.
        TaskFormatError: A .json file is not valid JSON or does not hold a list.

    """
    source = Path(path)
    tasks: list[SweTask] = []
    errors: list[str] = []
    first_row: dict[str, int] = {}
    for number, row in _read_rows(source):
        where = f"{source} row {number}"
        try:
            if isinstance(row, TaskFormatError):
                raise row
            task = parse_task(row, where)
            if task.instance_id in first_row:
                raise TaskFormatError(
                    f"{where}: instance_id {task.instance_id!r} repeats row "
                    f"{first_row[task.instance_id]}"
                )
        except TaskFormatError as ex:
            errors.append(str(ex))
            continue
        first_row[task.instance_id] = number
        tasks.append(task)
    return LoadedTasks(source=str(source), tasks=tuple(tasks), errors=tuple(errors))


def load_tasks(path: str | os.PathLike[str]) -> list[SweTask]:
    """Load a .json or .jsonl task file; any bad row stops the load.

    Raises:
        TaskFormatError: A row is invalid; the message gives the first one and counts the rest.
        HarnessUsageError: The file is missing or has another suffix.

    """
    loaded = load_tasks_lenient(path)
    if loaded.errors:
        more = len(loaded.errors) - 1
        tail = f" (and {more} more bad rows)" if more else ""
        raise TaskFormatError(f"{loaded.errors[0]}{tail}; fix the row")
    return list(loaded.tasks)


def find_task_files(data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """The task files in `DATA_DIR/swe/`: every *.json and *.jsonl file, sorted by name.

    Args:
        data_dir: The data folder; None means `HARNESS_DATA_DIR`.

    Raises:
        HarnessUsageError: No data folder is given or set, or its `swe/` folder holds no task file.

    """
    folder = resolve_data_dir(data_dir)
    if folder is None:
        raise HarnessUsageError(
            "SWE-rebench tasks load from a local folder; pass --data-dir DIR or set "
            "HARNESS_DATA_DIR, with the task files in DIR/swe/"
        )
    task_dir = folder / TASK_DIR
    files = sorted(
        path for path in task_dir.glob("*") if path.suffix in (".json", ".jsonl") and path.is_file()
    )
    if not files:
        raise HarnessUsageError(
            f"no SWE task files (*.json or *.jsonl) in '{task_dir}'; put the task files there "
            f"or point --data-dir at the folder that holds swe/"
        )
    return files
