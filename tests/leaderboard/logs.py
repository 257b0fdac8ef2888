"""Real inspect logs for leaderboard tests and benchmarks, made fast.

One real eval (scripted model, exact-match scorer) gives a template log; each further log is that
template with another task, model and per-sample scores drawn from a seed, written with inspect's
own `write_eval_log`, so every file is a genuine log the viewer and the reader accept.
"""

from __future__ import annotations

import random
from pathlib import Path

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalError, EvalLog, write_eval_log
from inspect_ai.scorer import match


def template_log(work: Path, n: int) -> EvalLog:
    """A finished log of n samples: questions "q<i>", targets 0/1, answered "1"."""
    samples = [Sample(id=f"s{i}", input=f"q{i}", target=str(i % 2)) for i in range(n)]
    task = Task(dataset=MemoryDataset(samples), scorer=match(), name="toy")
    [log] = inspect_eval(
        task,
        model="scripted/x",
        model_args={"answer": "1"},
        log_dir=str(work / "template"),
        display="none",
    )
    assert log.status == "success", log.error
    return log


def write_variant(
    template: EvalLog,
    path: Path,
    *,
    task: str,
    model: str,
    accuracy: float,
    seed: int,
    errored_samples: int = 0,
    status: str = "success",
) -> Path:
    """The template as another task and model, with scores C/I drawn at `accuracy`."""
    log = template.model_copy(deep=True)
    log.eval.task = task
    log.eval.model = model
    log.eval.model_args = {}  # the template's scripted answer is not this model's
    log.eval.metadata = {"harness_suite": task.split("_")[0]}
    rng = random.Random(seed)
    assert log.samples is not None
    for i, sample in enumerate(log.samples):
        for score in sample.scores.values():
            score.value = "C" if rng.random() < accuracy else "I"
        sample.error = (
            EvalError(message="boom", traceback="", traceback_ansi="")
            if i < errored_samples
            else None
        )
    log.status = status  # type: ignore[assignment]
    if status == "error":
        log.error = EvalError(message="the provider failed", traceback="", traceback_ansi="")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(path))
    return path
