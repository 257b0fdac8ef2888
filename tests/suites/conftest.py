"""Small inspect logs for the suites' report sections: runs that finished, and runs that errored.

Each log is written once per test session by a scripted solver (no training), so that a
section's reader meets what a real log holds: an errored sample, a sample without a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def _write_log(log_dir: Path, samples: list[Any], solver: Any, scorer: Any) -> str:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset

    task = Task(dataset=MemoryDataset(samples), solver=solver, scorer=scorer)
    (log,) = inspect_eval(task, model="none/none", display="none", log_dir=str(log_dir),
                          fail_on_error=False, score_on_error=True)  # fmt: skip
    assert log.status == "success", log.error
    return log.location


@pytest.fixture(scope="session")
def training_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A training suite's log: seeds 0 and 2 finished, seed 1 raised, seed 3 left no run."""
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import solver

    @solver
    def train() -> Any:
        async def solve(state: Any, generate: Any) -> Any:
            seed = state.metadata["seed"]
            if seed == 1:
                raise RuntimeError("CUDA out of memory\nsecond line")
            if seed != 3:
                state.metadata["run"] = {"score": 0.5 + seed / 10, "steps": [10, 20]}
            return state

        return solve

    @scorer(metrics=[mean()])
    def run_score() -> Any:
        async def score(state: Any, target: Any) -> Score:
            run = state.metadata.get("run")
            return Score(value=run["score"] if run else 0.0)

        return score

    samples = [Sample(id=f"a-seed{i}", input="train", metadata={"arm": "a", "seed": i})
               for i in range(4)]  # fmt: skip
    return _write_log(tmp_path_factory.mktemp("training"), samples, train(), run_score())


@pytest.fixture(scope="session")
def team_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A team log through the suite's own scorer: prompt 0 right, 3 wrong, 1 raised, 2 undecoded."""
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import solver

    from harness.suites.team.task import exact_match_ids

    @solver
    def decode() -> Any:
        async def solve(state: Any, generate: Any) -> Any:
            pid = state.metadata["prompt_id"]
            if pid == 1:
                raise RuntimeError("decoder crashed")
            if pid != 2:
                answer = state.metadata["answer"]
                state.metadata["answer_ids"] = answer if pid == 0 else answer[::-1]
                state.metadata["decode"] = {"tpf": 2.0, "apf": 6.0, "apt": 3.0,
                                            "tpf_with_commits": 2.0, "cold_share": 0.0}  # fmt: skip
            return state

        return solve

    samples = [
        Sample(id=f"vanilla-seed0-{i}", input="[1, 2]", target="[2, 1]",
               metadata={"variant": "vanilla", "seed": 0, "prompt_id": i, "task": "reverse",
                         "prompt": [1, 2], "answer": [2, 1]})
        for i in range(4)
    ]  # fmt: skip
    return _write_log(tmp_path_factory.mktemp("team"), samples, decode(), exact_match_ids())
