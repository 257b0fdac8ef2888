"""Running `harness eval` in-process against a fault server, as a user reaches a vLLM server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

# the NAME of openai-api/NAME/MODEL: inspect reads FAULTY_BASE_URL and FAULTY_API_KEY
SERVICE = "faulty"


def model_spec(port: int) -> str:
    """`openai-api/faulty/tiny-arith-PORT`: inspect memoizes a model by its name and arguments,
    so a name shared across servers in one process would reach a server that is gone."""
    return f"openai-api/{SERVICE}/tiny-arith-{port}"


def point_at(monkeypatch: pytest.MonkeyPatch, base_url: str, api_key: str) -> None:
    """Set the two variables inspect's openai-api provider reads for service `faulty`."""
    try:
        import openai  # noqa: F401
    except ImportError:
        pytest.fail(
            "inspect's openai-api provider needs the openai package: pip install 'openai>=3.4'"
        )
    monkeypatch.setenv(f"{SERVICE.upper()}_BASE_URL", base_url)
    monkeypatch.setenv(f"{SERVICE.upper()}_API_KEY", api_key)


def harness_eval(log_dir: Path, *args: str) -> list[dict]:
    """`harness eval --json ...` in this process; the summary rows."""
    result = CliRunner().invoke(
        main, ["eval", "--log-dir", str(log_dir), "--display", "none", "--json", *args]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout[result.stdout.index("{") :])["scores"]
