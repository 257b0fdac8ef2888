"""Suite `k-parity`: masked diffusion against autoregressive training (arXiv 2601.22450).

One sample is one training run from scratch: an arm (objective, schedule, weighting) and a seed.
The score is the final test accuracy; the sample's metadata carries the steps to generalise
(first evaluation with test accuracy >= 0.99, else None) and the train and test curves.
No data is downloaded: strings and the secret subset come from the seed.

Presets (settings from specs/k-parity.md §6, measured on 2 CPU cores):
- `quick` (the demo): n=12, k=3, N=1000, d=32, 2 layers, batch 256, AdamW lr 1e-3, weight decay
  1.0, at most 1500 steps evaluated every 50; arms ar, md-optimal, md-fixed, md-uniform,
  md-uniform-inv-t; 3 seeds.
- `plateau`: n=20, k=3, N=300, full batch, d=64, weight decay 1.0, 2000 steps: the scarce-data
  setting where AR memorises and plateaus; arms ar and md-optimal; 4 seeds.
- `paper`: n=20, k=6, N=20000, d=128, 4 layers, 30000 steps evaluated every 250: the paper's
  setting, for a GPU or a long run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Scorer, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.suites.arg_ranges import checked_args, count
from harness.suites.training_pool import TrainingPool, record_run, score_run, training_task

if TYPE_CHECKING:
    from harness.suites.k_parity.train import RunConfig

# the training modules (torch, scipy) are imported where a run is configured, not here: every
# inspect command imports this module through the harness's entry point

PRESETS: dict[str, dict[str, Any]] = {
    "quick": dict(n=12, k=3, n_train=1000, n_test=2000, d_model=32, n_layer=2, batch_size=256,
                  weight_decay=1.0, max_steps=1500, eval_every=50),
    "plateau": dict(n=20, k=3, n_train=300, n_test=2000, d_model=64, n_layer=2, batch_size=300,
                    weight_decay=1.0, max_steps=2000, eval_every=50),
    "paper": dict(n=20, k=6, n_train=20000, n_test=10000, d_model=128, n_layer=4, batch_size=256,
                  weight_decay=0.1, max_steps=30000, eval_every=250),
}  # fmt: skip
PRESET_ARMS = {
    "quick": "ar,md-optimal,md-fixed,md-uniform,md-uniform-inv-t",
    "plateau": "ar,md-optimal",
    "paper": "ar,md-optimal,md-uniform",
}
PRESET_SEEDS = {"quick": 3, "plateau": 4, "paper": 3}
ARMS = ("ar", "ar-all-tokens", "md-optimal", "md-fixed", "md-uniform", "md-uniform-inv-t")


def arm_config(arm: str, seed: int, settings: dict[str, Any]) -> RunConfig:
    """The run configuration of an arm and seed under a preset's settings."""
    from harness.suites.k_parity.schedules import make_schedule
    from harness.suites.k_parity.train import RunConfig

    k = settings["k"]
    if arm == "ar":
        return RunConfig("ar", None, seed, **settings)
    if arm == "ar-all-tokens":
        return RunConfig("ar", None, seed, ar_loss="all_tokens", **settings)
    schedules = {
        "md-optimal": lambda: make_schedule("optimal", k=k),
        "md-fixed": lambda: make_schedule("fixed", k=k, t=1 / (k + 1)),
        "md-uniform": lambda: make_schedule("uniform", k=k),
        "md-uniform-inv-t": lambda: make_schedule("uniform", k=k, weighting="inv_t"),
    }
    if arm not in schedules:
        raise HarnessUsageError(f"k-parity: unknown arm '{arm}'; arms: {', '.join(ARMS)}")
    return RunConfig("md", schedules[arm](), seed, **settings)


def _headline(run: dict[str, Any]) -> str:
    return (f"test accuracy {run['final_test_acc']:.4f}, "
            f"steps to generalise {run['steps_to_generalize']}")  # fmt: skip


@solver
def train_parity(pool: TrainingPool | int = 1) -> Solver:
    """Train the sample's run; the result goes in the sample's metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from harness.suites.k_parity.train import train_run_dict

        cfg = arm_config(state.metadata["arm"], state.metadata["seed"], state.metadata["settings"])
        return await record_run(state, pool, "k-parity", _headline, train_run_dict, cfg)

    return solve


@scorer(metrics=[mean(), stderr()])
def final_test_accuracy() -> Scorer:
    """The run's final test accuracy; steps to generalise and curves in the metadata."""

    def score(state: TaskState, run: dict[str, Any]) -> Score:
        return Score(
            value=run["final_test_acc"],
            metadata={
                "arm": state.metadata["arm"],
                "seed": state.metadata["seed"],
                "steps_to_generalize": run["steps_to_generalize"],
                "final_train_acc": run["final_train_acc"],
            },
        )

    return score_run(score, unfinished=0.0)


@task
@checked_args(ranges=dict(max_steps=count(10_000_000), n_train=count(100_000_000)))
def k_parity(
    preset: str = "quick",
    arms: str | None = None,
    seeds: int | None = None,
    workers: int = 1,
    max_steps: int | None = None,
    n_train: int | None = None,
    executor: str = "local",
    cpus_per_run: int = 1,
) -> Task:
    """k-sparse parity: one sample per (arm, seed) training run.

    Args:
        preset: quick, plateau or paper.
        arms: Comma-separated arms (default: the preset's); see `ARMS`.
        seeds: Seeds per arm (default: the preset's).
        workers: Runs trained in parallel processes (1: one at a time in a thread).
        max_steps: Override the preset's step budget.
        n_train: Override the preset's training-set size.
        executor: local (a thread or `workers` processes) or ray (one Ray task per run, on
            `RAY_ADDRESS`'s cluster or a local one).
        cpus_per_run: ray: CPUs each run declares and trains with (its torch threads); runs
            train on CPU, so they declare no GPU.

    """

    def settings(preset: str) -> dict[str, Any]:
        chosen = dict(PRESETS[preset])
        if max_steps is not None:
            chosen["max_steps"] = int(max_steps)
        if n_train is not None:
            chosen["n_train"] = int(n_train)
        return chosen

    def samples(settings: dict[str, Any], n_seeds: int) -> list[Sample]:
        arm_list = [a.strip() for a in (arms or PRESET_ARMS[preset]).split(",") if a.strip()]
        for arm in arm_list:
            arm_config(arm, 0, settings)  # an unknown arm fails here, before anything runs
        # Runs expected to use the whole budget go to the worker pool first, so that the last
        # run to finish is a short one (longest-first scheduling); the report orders arms itself.
        expected_cost = {"md-uniform-inv-t": 0, "md-uniform": 1, "md-optimal": 2, "md-fixed": 3}
        arm_list.sort(key=lambda arm: expected_cost.get(arm, len(expected_cost)))
        return [
            Sample(
                id=f"{arm}-seed{seed}",
                input=f"train {arm} with seed {seed}",
                target="",
                metadata={"arm": arm, "seed": seed, "settings": settings},
            )
            for arm in arm_list
            for seed in range(n_seeds)
        ]

    return training_task(
        f"{__name__}:k_parity",
        preset=preset,
        presets=PRESETS,
        settings=settings,
        samples=samples,
        solver=train_parity,
        scorer=final_test_accuracy(),
        executor=executor,
        workers=workers,
        cpus_per_run=cpus_per_run,
        seeds=seeds,
        default_seeds=PRESET_SEEDS,
        metadata={
            "reconstructed": "model shape, presets and MD loss normalisation are ours "
            "(specs/k-parity.md §4-6); the paper's code was not available",
        },
    )
