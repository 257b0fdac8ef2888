"""Suite `iwg`: orchestrators dispatching executor agents on IWG instances, every step checked.

The instances come from the seeded generator (`n`, `seed`; spec §5.1) or from a folder written
by `harness iwg generate` or `harness iwg synthesize` (`instances=DIR`). The model under test is
the orchestrator: any model spec, or a scripted one (`iwg/perfect`, `iwg/skipper`,
`iwg/misrouter`, `iwg/diffuser`). Scores: task success, Step-SR, LCS-F1, EH-F1, faithfulness
and consistency per instance; H(t) and c(t) go to each sample's metadata for the suite's report
section, which fits the entropy dynamics (a placeholder model of ours, not the paper's).
"""

from __future__ import annotations

from typing import Literal

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

from harness.errors import HarnessUsageError
from harness.models.sample_context import bind_sample
from harness.suites.arg_ranges import checked_args, count
from harness.suites.iwg import scripted  # noqa: F401  (registers the iwg/ scripted orchestrators)
from harness.suites.iwg.dynamics import PLACEHOLDER_LABEL
from harness.suites.iwg.generator import generate
from harness.suites.iwg.orchestrator import orchestrate
from harness.suites.iwg.plan import PROMPT_VERSION
from harness.suites.iwg.schema import load_instances, to_dict
from harness.suites.iwg.scorers import (
    consistency,
    eh_f1,
    faithfulness,
    lcs_f1,
    step_sr,
    task_success,
)


@task
@checked_args(ranges=dict(n=count(10_000), max_steps=count(10_000), patience=count(10_000)))
def iwg(
    instances: str | None = None,
    n: int = 100,
    seed: int = 0,
    max_steps: int = 20,
    patience: int = 3,
    compat: bool = False,
    embedder: Literal["minilm", "jaccard"] = "minilm",
) -> Task:
    """Orchestrate IWG instances and score every step.

    Args:
        instances: A folder of instance files (or one file); unset: generate `n` from `seed`.
        n: Generated instances (when `instances` is unset), 1 to 10,000.
        seed: Seed of the generator.
        max_steps: Plan rounds before the run stops with a Timeout (the paper's 20).
        patience: Malformed Plan replies in a row before the run stops.
        compat: Scheduling entropy with the authors' overwrite quirk instead of normalised counts.
        embedder: Consistency by all-MiniLM-L6-v2 ("minilm"), or the Jaccard fallback.

    """
    if instances is None:
        if not 1 <= n <= 10_000:
            raise HarnessUsageError(f"iwg: n must be 1..10000, got {n}")
        items = generate(n, seed)
        source = f"generated (n={n}, seed={seed})"
    else:
        items = load_instances(instances)
        source = f"files under {instances}"
    if max_steps < 1:
        raise HarnessUsageError(f"iwg: max_steps must be at least 1, got {max_steps}")
    if patience < 1:
        raise HarnessUsageError(f"iwg: patience must be at least 1, got {patience}")
    samples = [
        Sample(
            id=inst.id,
            input=inst.seed_data.query,
            target=inst.seed_data.answer,
            metadata={"instance": to_dict(inst)},
        )
        for inst in items
    ]
    consistency_scorer, embedding = consistency(embedder)
    return Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), orchestrate(max_steps=max_steps, patience=patience, compat=compat)],
        scorer=[task_success(), step_sr(), lcs_f1(), eh_f1(), faithfulness(), consistency_scorer],
        metadata={
            "suite": "iwg",
            "instances": source,
            "prompt_version": PROMPT_VERSION,
            "entropy": "authors' overwrite quirk (compat)" if compat else "normalised counts",
            "consistency_embedder": embedding,
            "dynamics_model": PLACEHOLDER_LABEL,
        },
    )
