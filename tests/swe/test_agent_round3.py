"""Agent mode, round three (issue 31): three samples in one run, and the agent's `.git` unused.

A test provider plays, for each sample, the tool calls scripted for its repository (found in
the prompt), so that samples may run in any order. Before the fix every sample after the first
failed with "Each Limit may only be used once", and a `post-commit` hook, `git replace` of the
base commit, or a nested repository hidden by `.git/info/exclude` made an empty candidate
score 1.
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

_SCRIPTS: dict[str, list[tuple[str, dict[str, Any]]]] = {}


@modelapi(name="repoagent")
class RepoAgent(ModelAPI):
    """Plays the scripted calls of the repository named in the prompt, one per turn."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **kwargs: Any) -> None:  # fmt: skip
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo],
                       tool_choice: ToolChoice, config: GenerateConfig) -> ModelOutput:  # fmt: skip
        """The next call of the script for this sample's repository."""
        prompt = next(m.text for m in input if m.role == "user")
        repo = next(r for r in _SCRIPTS if f"repository {r}," in prompt)
        turn = sum(m.role == "assistant" for m in input)
        name, args = _SCRIPTS[repo][turn]
        return ModelOutput.for_tool_call("repoagent/x", name, args)


def _run(tmp_path: Path, scripts: dict[str, list[tuple[str, dict[str, Any]]]]) -> dict:
    if (why := bwrap_available()) is not None:
        pytest.fail(f"bwrap sandbox unavailable: {why}")
    _SCRIPTS.clear()
    _SCRIPTS.update(scripts)
    tasks = {t.repo: t for t in load_swe_tasks(str(tmp_path))}
    ids = ",".join(tasks[repo].instance_id for repo in scripts)
    (log,) = inspect_eval(
        swe_rebench(data_dir=str(tmp_path), solver="agent", instances=ids),
        model="repoagent/x", display="none", log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    assert log.status == "success", log.error
    return {s.metadata["repo"]: s for s in log.samples}


def _apply(patch: str) -> tuple[str, dict[str, Any]]:
    cmd = f"cd /work && printf %s {shlex.quote(patch)} > /tmp/fix.diff && git apply /tmp/fix.diff"
    return ("bash", {"command": cmd})


_SUBMIT = ("submit", {"answer": "done"})
_PYTHON_REPOS = ("fixture/mathlib", "fixture/textkit", "fixture/intervals")


def test_three_agent_samples_in_one_run_are_each_resolved(tmp_path: Path) -> None:
    make_fixture_tasks(tmp_path)
    tasks = {t.repo: t for t in load_swe_tasks(str(tmp_path))}
    samples = _run(tmp_path, {r: [_apply(tasks[r].patch), _SUBMIT] for r in _PYTHON_REPOS})
    assert set(samples) == set(_PYTHON_REPOS)
    for repo, sample in samples.items():
        assert sample.error is None and sample.limit is None, (repo, sample.error)
        score = sample.scores["swe_resolved"]
        assert score.value == 1, (repo, score.metadata)
        assert score.metadata["integrity_flags"] == [], (repo, score.metadata)


def _hook(patch: str) -> str:
    """A post-commit hook that applies the fix when the scorer commits the candidate."""
    return (
        f"cd /work && printf %s {shlex.quote(patch)} > .git/fix.diff && "
        "printf '#!/bin/sh\\ngit apply .git/fix.diff\\n' > .git/hooks/post-commit && "
        "chmod +x .git/hooks/post-commit"
    )


def _replace(patch: str) -> str:
    """Commit the fix and make the base commit point at it: `git diff base` is then empty."""
    return (
        f"cd /work && base=$(git rev-parse HEAD) && printf %s {shlex.quote(patch)} | git apply && "
        'git -c user.name=a -c user.email=a@b commit -qam fix && git replace "$base" HEAD'
    )


# a fake `unittest` package, shadowing the standard one from /work, that prints every listed test
# of the intervals fixture as passed; in a nested repository that .git/info/exclude hides
def _nested(tasks: dict) -> str:
    names = [*tasks["fixture/intervals"].fail_to_pass, *tasks["fixture/intervals"].pass_to_pass]
    body = "".join(f"print({n!r} + ' ... ok')\n" for n in names) + "print('OK')\n"
    return (
        "cd /work && mkdir -p unittest && cd unittest && "
        f"printf %s {shlex.quote(body)} > __main__.py && touch __init__.py && git init -q && "
        "cd /work && echo unittest/ >> .git/info/exclude"
    )


def test_the_agents_git_cannot_make_an_empty_candidate_score(tmp_path: Path) -> None:
    make_fixture_tasks(tmp_path)
    tasks = {t.repo: t for t in load_swe_tasks(str(tmp_path))}
    scripts = {
        "fixture/mathlib": [("bash", {"command": _hook(tasks["fixture/mathlib"].patch)}), _SUBMIT],
        "fixture/textkit": [
            ("bash", {"command": _replace(tasks["fixture/textkit"].patch)}),
            _SUBMIT,
        ],
        "fixture/intervals": [("bash", {"command": _nested(tasks)}), _SUBMIT],
    }
    samples = _run(tmp_path, scripts)
    hook = samples["fixture/mathlib"].scores["swe_resolved"]
    assert hook.answer == "" and hook.value == 0, (hook.answer, hook.metadata)
    # the tree does hold the fix: the candidate now shows it, and it is what was scored
    replaced = samples["fixture/textkit"].scores["swe_resolved"]
    assert 'strip("-")' in replaced.answer and replaced.value == 1, replaced.metadata
    nested = samples["fixture/intervals"].scores["swe_resolved"]
    assert nested.value == 0, nested.metadata
    assert any("nested git repository" in f for f in nested.metadata["integrity_flags"])
    assert nested.metadata["reason"].startswith("runner_tampered"), nested.metadata  # canaries
