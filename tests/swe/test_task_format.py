"""The SWE-rebench V2 task format: the shipped fixture, row validation and the task loaders.

The fixture facts (6 and 10 files, 12 and 177 tests, the UTC time) are those of
`specs/swe-rebench.md`, sections 2 and 3, worked out there from the fixture itself.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessUsageError
from harness.suites.swe_rebench.log_parsers import PARSERS, get_parser
from harness.suites.swe_rebench.task_format import (
    InstallConfig,
    LoadedTasks,
    SweTask,
    TaskFormatError,
    find_task_files,
    load_tasks,
    load_tasks_lenient,
    parse_task,
)
from tests.swe.rows import task_row as _row

FIXTURE = "swe/swe-rebench-v2-sample.json"


def _install(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(_row()["install_config"])
    config.update(changes)
    return config


def _write_json(path: Path, rows: list[Any]) -> Path:
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def _diff_files(patch: str) -> int:
    return sum(line.startswith("diff --git ") for line in patch.splitlines())


# --- the shipped fixture (acceptance check 1) --------------------------------------------------


@pytest.fixture
def fixture_task(data_dir: Path) -> SweTask:
    tasks = load_tasks(data_dir / FIXTURE)
    assert len(tasks) == 1
    return tasks[0]


def test_fixture_loads_with_its_fields_and_types(fixture_task: SweTask) -> None:
    task = fixture_task
    assert task.instance_id == "unidata__netcdf-c-1925"
    assert task.repo == "Unidata/netcdf-c"
    assert len(task.base_commit) == 40
    for text in (task.patch, task.test_patch, task.problem_statement, task.image_name):
        assert isinstance(text, str) and text.strip()
    assert isinstance(task.fail_to_pass, tuple) and isinstance(task.pass_to_pass, tuple)
    assert all(isinstance(name, str) for name in task.fail_to_pass + task.pass_to_pass)
    config = task.install_config
    assert isinstance(config, InstallConfig)
    assert isinstance(config.install, tuple) and len(config.install) == 6
    assert config.test_cmd == ("make check",)
    assert config.base_image_name == "c:latest"
    assert config.docker_specs is None and config.log_parsers is None
    assert task.image_name == "docker.io/swerebenchv2/unidata-netcdf-c:1925-ad6bff3"
    assert task.workdir == "/netcdf-c"
    assert task.language == "c"
    assert task.interface and task.pr_description
    assert task.meta["llm_metadata"][0]["code"] == "A"
    assert task.extra == {}


def test_fixture_log_parser_resolves(fixture_task: SweTask) -> None:
    assert fixture_task.install_config.log_parser == "parse_log_jq"
    parser = get_parser(fixture_task.install_config.log_parser)
    assert parser("PASS: a\nFAIL: b\n") == {"a": "PASSED", "b": "FAILED"}


def test_fixture_created_at_is_utc(fixture_task: SweTask) -> None:
    moment = fixture_task.created_at
    assert moment == datetime(2020, 12, 30, 3, 14, 33, tzinfo=UTC)
    assert moment is not None and moment.utcoffset() is not None
    assert moment.utcoffset().total_seconds() == 0
    assert moment.isoformat() == "2020-12-30T03:14:33+00:00"


def test_fixture_facts_of_spec_section_3(fixture_task: SweTask) -> None:
    task = fixture_task
    assert _diff_files(task.patch) == 6 == task.meta["num_modified_files"]
    assert task.meta["num_modified_lines"] == 46
    assert _diff_files(task.test_patch) == 10
    assert len(task.fail_to_pass) == 12 and len(set(task.fail_to_pass)) == 12
    assert len(task.pass_to_pass) == 177 and len(set(task.pass_to_pass)) == 177
    assert not set(task.fail_to_pass) & set(task.pass_to_pass)


def test_find_task_files_in_data_dir(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_task_files(data_dir) == [data_dir / FIXTURE]  # LICENSE is not a task file
    monkeypatch.setenv("HARNESS_DATA_DIR", str(data_dir))
    assert find_task_files() == [data_dir / FIXTURE]


def test_find_task_files_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    with pytest.raises(HarnessUsageError, match="--data-dir"):
        find_task_files()
    (tmp_path / "swe").mkdir()
    (tmp_path / "swe" / "notes.txt").write_text("not a task file")
    with pytest.raises(HarnessUsageError, match=r"no SWE task files .* in '.*swe'"):
        find_task_files(tmp_path)
    (tmp_path / "swe" / "b.jsonl").write_text("")
    (tmp_path / "swe" / "a.json").write_text("[]")
    assert find_task_files(tmp_path) == [tmp_path / "swe" / "a.json", tmp_path / "swe" / "b.jsonl"]


# --- decoding ----------------------------------------------------------------------------------


def test_json_string_list_fields_decode() -> None:
    row = _row(
        FAIL_TO_PASS='["t::a", "t::b"]',
        PASS_TO_PASS="[]",
        install_config=_install(install='["make"]', test_cmd='["make check", "make dist"]'),
    )
    task = parse_task(row, "w")
    assert task.fail_to_pass == ("t::a", "t::b")
    assert task.pass_to_pass == ()
    assert task.install_config.install == ("make",)
    assert task.install_config.test_cmd == ("make check", "make dist")


def test_install_config_and_meta_as_json_text() -> None:
    row = _row(install_config=json.dumps(_install()), meta='{"pr_url": null}')
    task = parse_task(row, "w")
    assert task.install_config.log_parser == "parse_log_pytest"
    assert task.meta == {"pr_url": None}


@pytest.mark.parametrize(
    ("test_cmd", "expected"),
    [
        ("pytest -rA", ("pytest -rA",)),
        ("[ -f setup.py ] && pytest", ("[ -f setup.py ] && pytest",)),  # starts with "[", not JSON
    ],
)
def test_test_cmd_may_be_one_line(test_cmd: str, expected: tuple[str, ...]) -> None:
    task = parse_task(_row(install_config=_install(test_cmd=test_cmd)), "w")
    assert task.install_config.test_cmd == expected


def test_install_may_be_absent() -> None:
    config = _install()
    del config["install"]
    assert parse_task(_row(install_config=config), "w").install_config.install == ()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1609298073000, datetime(2020, 12, 30, 3, 14, 33, tzinfo=UTC)),
        ("2020-12-30T03:14:33Z", datetime(2020, 12, 30, 3, 14, 33, tzinfo=UTC)),
        ("2020-12-30T05:14:33+02:00", datetime(2020, 12, 30, 3, 14, 33, tzinfo=UTC)),
        ("2020-12-30 03:14:33", datetime(2020, 12, 30, 3, 14, 33, tzinfo=UTC)),  # naive: UTC
        (None, None),
    ],
)
def test_created_at_forms(value: Any, expected: datetime | None) -> None:
    moment = parse_task(_row(created_at=value), "w").created_at
    assert moment == expected
    if moment is not None:
        assert moment.tzinfo is UTC


def test_unknown_fields_are_kept() -> None:
    row = _row(environment_setup_commit="abc", install_config=_install(pre_install=["x"]))
    task = parse_task(row, "w")
    assert task.extra == {"environment_setup_commit": "abc"}
    assert task.install_config.extra == {"pre_install": ["x"]}
    assert task.created_at is None and task.meta == {} and task.language is None


def test_task_is_frozen() -> None:
    task = parse_task(_row(), "w")
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.repo = "other/repo"  # type: ignore[misc]


# --- bad rows ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"FAIL_TO_PASS": 3}, "FAIL_TO_PASS must be a list of strings, got int"),
        ({"FAIL_TO_PASS": "t::a"}, "FAIL_TO_PASS must be a list of strings, got str"),
        ({"FAIL_TO_PASS": '{"a": 1}'}, "FAIL_TO_PASS must be a list of strings, got dict"),
        ({"FAIL_TO_PASS": []}, "FAIL_TO_PASS must not be empty"),
        ({"FAIL_TO_PASS": ...}, "FAIL_TO_PASS is missing"),
        ({"PASS_TO_PASS": ["t::a", 2]}, "PASS_TO_PASS must be a list of strings, got int at [1]"),
        ({"PASS_TO_PASS": ["t::a", " "]}, "PASS_TO_PASS[1] is an empty string"),
        ({"instance_id": ...}, "instance_id is missing"),
        ({"patch": ""}, "patch must be a non-empty string"),
        ({"image_name": 5}, "image_name must be a string, got int"),
        ({"language": ["c"]}, "language must be a string, got list"),
        ({"base_commit": "not-a-sha"}, "base_commit must be a commit sha"),
        ({"repo": "calc"}, "repo must read 'owner/name'"),
        ({"install_config": ...}, "install_config is missing"),
        ({"install_config": ["make"]}, "install_config must be an object, got list"),
        ({"install_config": _install(test_cmd=[])}, "install_config.test_cmd must not be empty"),
        ({"install_config": _install(test_cmd=None)}, "install_config.test_cmd is missing"),
        ({"install_config": _install(install=[1])}, "install_config.install must be a list"),
        ({"install_config": _install(log_parser=None)}, "install_config.log_parser must be a"),
        ({"install_config": _install(base_image_name=1)}, "base_image_name must be a string"),
        ({"created_at": "yesterday"}, "created_at 'yesterday' is neither epoch milliseconds"),
        ({"created_at": True}, "created_at must be epoch milliseconds or an ISO 8601 string"),
        ({"meta": [1]}, "meta must be an object, got list"),
    ],
)
def test_bad_row_names_file_row_and_field(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    bad = _row(**{"instance_id": "acme__calc-8", **changes})
    path = _write_json(tmp_path / "tasks.json", [_row(), bad])
    with pytest.raises(TaskFormatError) as caught:
        load_tasks(path)
    text = str(caught.value)
    assert text.startswith(f"{path} row 2: ")
    assert message in text
    assert "\n" not in text
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, HarnessUsageError)


def test_parse_task_message_starts_with_where() -> None:
    with pytest.raises(TaskFormatError, match=r"^x\.json row 0: FAIL_TO_PASS must be a list of"):
        parse_task(_row(FAIL_TO_PASS=7), "x.json row 0")
    with pytest.raises(TaskFormatError, match=r"^x\.json row 0: a task must be a JSON object"):
        parse_task(["not", "a", "row"], "x.json row 0")  # type: ignore[arg-type]


def test_unknown_log_parser_names_the_registered_ones() -> None:
    with pytest.raises(TaskFormatError) as caught:
        parse_task(_row(install_config=_install(log_parser="parse_log_nope")), "t.json row 1")
    text = str(caught.value)
    assert "install_config.log_parser 'parse_log_nope' is not a registered parser" in text
    assert all(name in text for name in PARSERS)


def test_strict_load_counts_the_other_bad_rows(tmp_path: Path) -> None:
    rows = [_row(FAIL_TO_PASS=1), _row(), _row(instance_id="b", repo="x")]
    with pytest.raises(TaskFormatError, match=r"row 1: .*\(and 1 more bad rows\); fix the row$"):
        load_tasks(_write_json(tmp_path / "t.json", rows))


# --- the lenient loader and file forms ---------------------------------------------------------


def test_lenient_loader_keeps_the_good_rows(tmp_path: Path) -> None:
    rows = [
        _row(),
        _row(instance_id="acme__calc-8", FAIL_TO_PASS="oops"),
        _row(instance_id="acme__calc-9"),
        _row(),  # repeats row 1's instance_id
        "not an object",
    ]
    path = _write_json(tmp_path / "t.json", rows)
    loaded = load_tasks_lenient(path)
    assert isinstance(loaded, LoadedTasks)
    assert [task.instance_id for task in loaded.tasks] == ["acme__calc-7", "acme__calc-9"]
    assert len(loaded.errors) == 3
    assert loaded.errors[0].startswith(f"{path} row 2: FAIL_TO_PASS")
    assert loaded.errors[1] == f"{path} row 4: instance_id 'acme__calc-7' repeats row 1"
    assert loaded.errors[2].startswith(f"{path} row 5: a task must be a JSON object, got str")
    assert loaded.source == str(path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.tasks = ()  # type: ignore[misc]


def test_jsonl_file(tmp_path: Path, data_dir: Path) -> None:
    fixture_row = json.loads((data_dir / FIXTURE).read_text())[0]
    path = tmp_path / "t.jsonl"
    lines = [json.dumps(fixture_row), "", json.dumps(_row())]
    path.write_text("\n".join(lines) + "\n")
    tasks = load_tasks(path)
    assert [task.instance_id for task in tasks] == ["unidata__netcdf-c-1925", "acme__calc-7"]
    assert tasks[0].created_at == datetime(2020, 12, 30, 3, 14, 33, tzinfo=UTC)

    path.write_text(json.dumps(_row()) + "\n\n{broken\n" + json.dumps(_row(repo=1)) + "\n")
    loaded = load_tasks_lenient(path)
    assert [task.instance_id for task in loaded.tasks] == ["acme__calc-7"]
    assert loaded.errors[0].startswith(f"{path} row 2: not JSON")  # blank lines are not rows
    assert loaded.errors[1] == f"{path} row 3: repo must be a string, got int"


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(HarnessUsageError, match="does not exist"):
        load_tasks(tmp_path / "absent.json")
    with pytest.raises(TaskFormatError, match="must hold a list of tasks, got dict"):
        load_tasks(_write_json(tmp_path / "one.json", _row()))  # type: ignore[arg-type]
    (tmp_path / "bad.json").write_text("[{")
    with pytest.raises(TaskFormatError, match="not valid JSON"):
        load_tasks(tmp_path / "bad.json")
    (tmp_path / "t.csv").write_text("")
    with pytest.raises(HarnessUsageError, match=r"must end in \.json or \.jsonl"):
        load_tasks(tmp_path / "t.csv")
    assert load_tasks(_write_json(tmp_path / "empty.json", [])) == []
