"""A small valid SWE-rebench V2 row, shared by the task-format and scoring tests."""

from __future__ import annotations

from typing import Any


def task_row(**changes: Any) -> dict[str, Any]:
    """A small valid row; `changes` sets fields, and a value of `...` deletes the field."""
    row: dict[str, Any] = {
        "instance_id": "acme__calc-7",
        "repo": "acme/calc",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "patch": "diff --git a/calc.py b/calc.py\n",
        "test_patch": "diff --git a/test_calc.py b/test_calc.py\n",
        "problem_statement": "add() subtracts",
        "FAIL_TO_PASS": ["test_calc.py::test_add"],
        "PASS_TO_PASS": ["test_calc.py::test_sub"],
        "install_config": {
            "install": ["pip install -e ."],
            "test_cmd": ["pytest -rA"],
            "log_parser": "parse_log_pytest",
        },
        "image_name": "local/acme-calc",
    }
    for name, value in changes.items():
        if value is ...:
            row.pop(name, None)
        else:
            row[name] = value
    return row
