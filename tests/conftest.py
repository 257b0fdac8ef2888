"""Test isolation: inspect-ai folders in temporary ones; data from ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HARNESS_DATA_DIR") or ROOT.parent / "shared" / "data")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    yield
    assert not (tmp_path / ".env").exists(), "a test left a .env behind; inspect-ai would read it"


@pytest.fixture
def data_dir() -> Path:
    if not (SHARED_DATA / "aime" / "aime2024.jsonl").is_file():
        pytest.fail(f"shared data not found at {SHARED_DATA}; set HARNESS_DATA_DIR")
    return SHARED_DATA


@pytest.fixture
def no_gc_collect(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip `gc.collect()`, which statsmodels' `multipletests` runs on every call.

    In a test worker that holds torch models a full collection costs up to half a second, so a
    test checking our corrections against `multipletests` on many families spent most of its
    time there (18 s of 40 calls); a collection never changes a result.
    """
    import gc

    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)
