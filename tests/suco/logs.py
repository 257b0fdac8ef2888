"""Build small inspect logs for the SuCo tests with the scripted provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog
from inspect_ai.scorer import Scorer, includes
from inspect_ai.solver import generate

from harness.models.sample_context import bind_sample


def run_scripted(
    tmp_path: Path,
    items: list[dict[str, Any]],
    scorer: Scorer | None = None,
    name: str = "logs",
) -> EvalLog:
    """items: {"id", "input", "target", "output", "metadata"?}; one scripted eval."""
    outputs = tmp_path / f"{name}-outputs.jsonl"
    outputs.write_text("\n".join(json.dumps({"id": i["id"], "output": i["output"]}) for i in items))
    samples = [
        Sample(id=i["id"], input=i["input"], target=i["target"], metadata=i.get("metadata"))
        for i in items
    ]
    task = Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), generate()],
        scorer=scorer or includes(),
    )
    (log,) = inspect_eval(
        task,
        model="scripted/suco",
        model_args={"outputs": str(outputs)},
        log_dir=str(tmp_path / name),
        display="none",
    )
    assert log.status == "success", log.error
    return log
