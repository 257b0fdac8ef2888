"""Shared by the kernel tests: Triton's CPU interpreter, switched on per test."""

from __future__ import annotations

import pytest


@pytest.fixture
def interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    """TRITON_INTERPRET=1 for one test; the kernel modules jit at launch, once per mode."""
    triton = pytest.importorskip("triton", reason="triton is a dev dependency (pyproject)")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    knobs = getattr(triton, "knobs", None)
    if knobs is not None and not knobs.runtime.interpret:
        pytest.fail("triton.knobs.runtime.interpret was pinned to False in this process")
