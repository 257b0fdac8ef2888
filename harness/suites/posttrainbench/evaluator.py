"""The pristine evaluator: a benchmark's test split as an inspect task, with the max-tokens ladder.

The final evaluation never runs the agent's files. It runs `ptb_benchmark` (this module's
task, the suite's own scorer) through inspect's `eval` on `local/COPY`, where COPY is the
copied `final_model/`, in a separate process (`python -m
harness.suites.posttrainbench.evaluator`), so that each checkpoint loads in a fresh process
and an eval inside the running eval is avoided. As the authors' evaluator, it retries with a
smaller `max_tokens` when an attempt fails (any errored sample, or an eval that did not
finish): the CPU ladder is 32, 16, 8 tokens; the paper's AIME ladder is 16000, 12000, 8000.
The result is `metrics.json`: the accuracy, the per-item scores, and every attempt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate

from harness.suites.posttrainbench.benchmarks import answer_of, splits

CPU_LADDER = (32, 16, 8)
EVAL_TIMEOUT = 900  # seconds for one checkpoint's whole ladder


@dataclass(frozen=True)
class Attempt:
    """One rung of the ladder."""

    max_tokens: int  # the rung
    ok: bool  # every sample scored without error
    errors: int  # errored samples
    message: str = ""  # the first error, when any


@dataclass(frozen=True)
class Metrics:
    """What `metrics.json` holds for one checkpoint on one benchmark."""

    benchmark: str  # benchmark name
    split: str  # "test" for the final evaluation
    accuracy: float  # share of items correct; nan when every rung failed
    n: int  # items scored
    items: dict[str, int] = field(default_factory=dict)  # item id -> 1 correct, 0 not
    attempts: tuple[Attempt, ...] = ()  # the ladder as it ran
    max_tokens: int | None = None  # the rung that succeeded


@scorer(metrics=[accuracy(), stderr()])
def exact_answer() -> Scorer:
    """Correct when the completion up to its first newline, stripped, equals the target."""

    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion if state.output else ""
        answer = answer_of(text or "")
        ok = answer == target.text
        return Score(value=CORRECT if ok else INCORRECT, answer=answer, explanation=text)

    return score


@task
def ptb_benchmark(benchmark: str = "add2", split: str = "test", max_tokens: int = 32) -> Task:
    """One benchmark split of the CPU instance, greedy, scored by exact match."""
    parts = splits(benchmark)
    items = {"train": parts.train, "val": parts.val, "test": parts.test}[split]
    samples = [Sample(id=i.id, input=i.prompt, target=i.target) for i in items]
    return Task(
        dataset=MemoryDataset(samples),
        solver=generate(),
        scorer=exact_answer(),
        config=GenerateConfig(max_tokens=max_tokens, temperature=0.0),
    )


def run_ladder(
    checkpoint: str, benchmark: str, ladder: tuple[int, ...], split: str, log_dir: str
) -> Metrics:
    """Evaluate `checkpoint` on `benchmark`, one ladder rung after another until one works."""
    from inspect_ai import eval as inspect_eval

    attempts = []
    for rung in ladder:
        (log,) = inspect_eval(
            ptb_benchmark(benchmark=benchmark, split=split, max_tokens=rung),
            model=f"local/{checkpoint}",
            log_dir=log_dir,
            display="none",
            score_on_error=True,
            fail_on_error=False,
            max_connections=64,
        )
        samples = log.samples or []
        errored = [s for s in samples if s.error is not None]
        ok = log.status == "success" and samples and not errored
        message = errored[0].error.message if errored else (str(log.error or "")[:300])
        attempts.append(Attempt(rung, bool(ok), len(errored), message.splitlines()[0][:300]
                                if message else ""))  # fmt: skip
        if ok:
            items = {str(s.id): int(s.scores["exact_answer"].value == CORRECT) for s in samples}
            acc = sum(items.values()) / len(items)
            return Metrics(benchmark, split, acc, len(items), items, tuple(attempts), rung)
    return Metrics(benchmark, split, float("nan"), 0, {}, tuple(attempts), None)


async def evaluate_checkpoint(
    checkpoint: Path, benchmark: str, ladder: tuple[int, ...], *, split: str = "test"
) -> Metrics:
    """Run the pristine evaluator on `checkpoint` in a fresh process; its `Metrics`."""
    with tempfile.TemporaryDirectory(prefix="harness-ptb-eval-") as scratch:
        out = Path(scratch) / "metrics.json"
        argv = [sys.executable, "-m", "harness.suites.posttrainbench.evaluator", str(checkpoint),
                benchmark, ",".join(map(str, ladder)), str(out), "--split", split,
                "--log-dir", str(Path(scratch) / "logs")]  # fmt: skip
        env = {**os.environ, "INSPECT_LOG_DIR": str(Path(scratch) / "logs")}
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=scratch, env=env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            output, _ = await asyncio.wait_for(process.communicate(), EVAL_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise RuntimeError(f"the evaluator ran past {EVAL_TIMEOUT} s on {checkpoint}") from None
        if process.returncode != 0 or not out.exists():
            tail = output.decode(errors="replace")[-2000:]
            raise RuntimeError(f"the evaluator failed on {checkpoint}:\n{tail}")
        return metrics_from_dict(json.loads(out.read_text()))


def metrics_from_dict(data: dict[str, Any]) -> Metrics:
    """A `Metrics` back from its JSON form."""
    attempts = tuple(Attempt(**a) for a in data.get("attempts", ()))
    return Metrics(**{**data, "attempts": attempts})


def main(argv: list[str] | None = None) -> None:
    """`python -m harness.suites.posttrainbench.evaluator CKPT BENCHMARK LADDER OUT`."""
    import harness.models.providers  # noqa: F401  (registers local/ with inspect)

    parser = argparse.ArgumentParser(description="the pristine PostTrainBench evaluator")
    parser.add_argument("checkpoint")
    parser.add_argument("benchmark")
    parser.add_argument("ladder", help="max_tokens rungs, e.g. 32,16,8")
    parser.add_argument("out", help="where to write metrics.json")
    parser.add_argument("--split", default="test")
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args(argv)
    ladder = tuple(int(x) for x in args.ladder.split(","))
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="harness-ptb-eval-")
    metrics = run_ladder(args.checkpoint, args.benchmark, ladder, args.split, log_dir)
    Path(args.out).write_text(json.dumps(asdict(metrics), indent=1))


if __name__ == "__main__":
    main()
