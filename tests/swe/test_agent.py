"""The `agent` solver end to end: inspect's ReAct agent edits /work through bash in the sandbox.

A test provider plays a fixed list of tool calls (bash: apply the gold fix; then submit), so the
run needs no real model and no network (inspect's mockllm counts tokens with a tokenizer it
downloads).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

import harness.plugin  # noqa: F401  (registers bwrap)
from harness.sandbox import bwrap_available
from harness.suites.swe_rebench.task import load_swe_tasks, swe_rebench
from tests.swe.make_fixture_tasks import make_fixture_tasks

_SCRIPT: list[ModelOutput] = []
_SEEN: list[list[str]] = []


@modelapi(name="toolscript")
class ToolScript(ModelAPI):
    """Answers with the next queued output; records the tools it was offered."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **kwargs: Any) -> None:  # fmt: skip
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo],
                       tool_choice: ToolChoice, config: GenerateConfig) -> ModelOutput:  # fmt: skip
        """The next scripted output."""
        _SEEN.append([t.name for t in tools])
        return _SCRIPT.pop(0)


def _mathlib_task(tmp_path: Path) -> Any:
    if (why := bwrap_available()) is not None:
        pytest.fail(f"bwrap sandbox unavailable: {why}")
    make_fixture_tasks(tmp_path)
    return next(t for t in load_swe_tasks(str(tmp_path)) if t.instance_id == "fixture__mathlib-1")


def _run_agent(tmp_path: Path, instance_id: str, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """Run the agent solver on one task with `calls` as the model's tool calls; its sample."""
    _SCRIPT[:] = [ModelOutput.for_tool_call("toolscript/agent", name, args) for name, args in calls]
    _SEEN.clear()
    (log,) = inspect_eval(
        swe_rebench(data_dir=str(tmp_path), solver="agent", instances=instance_id),
        model="toolscript/agent", display="none", log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert log.status == "success", log.error
    assert not _SCRIPT  # every scripted call was made
    (sample,) = log.samples
    return sample


def test_agent_applies_a_fix_with_bash_and_is_resolved(tmp_path: Path) -> None:
    task = _mathlib_task(tmp_path)
    cmd = (f"cd /work && printf %s {shlex.quote(task.patch)} > /tmp/fix.diff && "
           "git apply /tmp/fix.diff && git status --short")  # fmt: skip
    sample = _run_agent(
        tmp_path, task.instance_id, [("bash", {"command": cmd}), ("submit", {"answer": "fixed"})]
    )
    assert "bash" in _SEEN[0]  # the agent was offered bash
    tool_out = [m for m in sample.messages if m.role == "tool"]
    assert tool_out and "M mathlib/stats.py" in tool_out[0].text  # the edit happened in /work
    score = sample.scores["swe_resolved"]
    assert score.value == 1, score.metadata
    assert score.metadata["f2p_rate"] == 1.0 and score.metadata["reason"] is None


def test_agent_fixes_the_bug_with_the_text_editor(tmp_path: Path) -> None:
    task = _mathlib_task(tmp_path)
    view = {"command": "view", "path": "mathlib/stats.py"}
    bad = {"command": "str_replace", "path": "mathlib/stats.py", "old_str": "no such text",
           "new_str": "x"}  # fmt: skip
    edit = {"command": "str_replace", "path": "mathlib/stats.py",
            "old_str": "xs = list(xs)", "new_str": "xs = sorted(xs)"}  # fmt: skip
    calls = [("text_editor", view), ("text_editor", bad), ("text_editor", edit)]
    sample = _run_agent(tmp_path, task.instance_id, [*calls, ("submit", {"answer": "fixed"})])
    assert {"bash", "text_editor"} <= set(_SEEN[0])
    viewed, refused, done = [m for m in sample.messages if m.role == "tool"]
    assert "xs = list(xs)" in viewed.text and "\t" in viewed.text  # numbered lines
    assert refused.error is not None and "occurs 0 times" in refused.error.message
    assert "replaced 1 occurrence" in done.text
    assert sample.scores["swe_resolved"].value == 1, sample.scores["swe_resolved"].metadata
