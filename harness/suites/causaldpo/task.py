"""Suite `causaldpo`: SFT, DPO, S-DPO, CausalDPO and IRMv1 on a recommender with exposure bias.

One task, one sample per training run (an arm and a seed; the seed is the unit, and arms pair
within a seed: they share the seed's world, its SFT model as π_ref, batches and negatives).
Score = OOD NDCG@10 over all 120 items; every split's NDCG@10, HR@10, Pop@1 and ORRatio@10,
and for `sft` the clustering ARI, go in the sample's metadata (specs/causaldpo.md §5).
The losses are `harness.suites.causaldpo.losses`; the world and the model are ours.

Presets (CPU seconds measured on 2 shared cores, docs/suites/causaldpo.md):
- `quick`: 3 seeds, the 8 arms with weighted λ ∈ {0.01, 0.1}.
- `paper`: the spec's §5 protocol, 10 seeds, weighted λ ∈ {0.01, 0.1, 1}. The paper's LLM scale
  (Llama-3.1-8B with LoRA) is not part of this suite: the real-LLM issue has not landed.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Scorer, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.suites.arg_ranges import checked_args, count, positive
from harness.suites.training_pool import TrainingPool, record_run, score_run, training_task

SUITE = "causaldpo"
FIXED_ARMS = ("sft", "dpo", "sdpo", "causaldpo-code", "causaldpo-oracle", "irm-oracle")
BASE = dict(train=6000, val=1000, test=2000, sft_lr=1e-3, sft_batch=128, sft_epochs=4, lr=1e-4,
            batch=64, epochs=2, beta=0.1, envs=3, negatives=3, kmeans_steps=10)  # fmt: skip
PRESETS: dict[str, dict[str, Any]] = {
    "quick": dict(seeds=3, lams="0.01,0.1"),
    "paper": dict(seeds=10, lams="0.01,0.1,1"),
}
RECONSTRUCTED = (
    "CausalDPO (reconstructed): the world (items, genres, hot set, exposure environments), the "
    "transformer recommender, Pop@1, k-means instead of DBSCAN, mean-pooled clustering states, "
    "detached assignments, the weighted per-environment losses and the weighted MMD are ours "
    "(specs/causaldpo.md section 4); the DPO, S-DPO, single-point MMD and IRMv1 formulas, the "
    "clamp, beta 0.1, K and the code's lambda 0.001 follow the authors' code and the spec"
)


def _fail(message: str) -> HarnessUsageError:
    return HarnessUsageError(f"{SUITE}: {message}")


def parse_lams(lams: str) -> list[float]:
    """Weighted-MMD λ values from `0.01,0.1`; a usage error for a non-number or a negative."""
    try:
        values = [float(v) for v in str(lams).split(",") if v.strip()]
    except ValueError:
        raise _fail(f"lams must be numbers such as 0.01,0.1; got {lams!r}") from None
    if any(not v >= 0 for v in values):
        raise _fail(f"lams must be >= 0 (λ weighs the invariance penalty); got {lams!r}")
    return values


def arm_names(arms: str | None, lams: list[float]) -> list[str]:
    """The arms to run: all of them (None or "all"), or a checked comma-separated list."""
    from harness.suites.causaldpo.runs import parse_arm

    every = [*FIXED_ARMS[:4], *(f"causaldpo-w{v:g}" for v in lams), *FIXED_ARMS[4:]]
    if arms is None or str(arms).strip() == "all":
        return every
    chosen = [a.strip() for a in str(arms).split(",") if a.strip()]
    for name in chosen:
        try:
            parse_arm(name)
        except ValueError:
            raise _fail(f"unknown arm {name!r}; arms: {', '.join(every)} "
                        "(causaldpo-w<λ> for any λ >= 0)") from None  # fmt: skip
    if not chosen:
        raise _fail("arms is empty; give a comma-separated list or 'all'")
    return list(dict.fromkeys(chosen))


def settings_for(
    preset: str,
    *,
    envs: int,
    beta: float,
    negatives: int,
    overrides: dict[str, int | None],
) -> dict[str, Any]:
    """The run settings of a preset with the task's arguments; a usage error names a bad one."""
    if preset not in PRESETS:
        raise _fail(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    if int(envs) < 1:
        raise _fail(f"envs (K, the number of latent environments) must be at least 1, got {envs}")
    if not float(beta) > 0:
        raise _fail(f"beta must be > 0, got {beta}")
    if not 1 <= int(negatives) <= 119:
        raise _fail(f"negatives must be between 1 and 119 (120 items, one chosen), got {negatives}")
    settings = dict(BASE, envs=int(envs), beta=float(beta), negatives=int(negatives))
    for key, value in overrides.items():
        if value is not None:
            if int(value) < 1:
                raise _fail(f"{key} must be at least 1, got {value}")
            settings[key] = int(value)
    if settings["batch"] < settings["envs"]:
        raise _fail(f"batch ({settings['batch']}) must hold at least envs = K "
                    f"({settings['envs']}) examples to cluster")  # fmt: skip
    return settings


def _headline(run: dict[str, Any]) -> str:
    return f"OOD NDCG@10 {run['ood_ndcg10']:.4f}, IID {run['iid_ndcg10']:.4f}"


@solver
def train_arm(pool: TrainingPool | int = 1) -> Solver:
    """Train the sample's run; the result goes in the sample's metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from harness.suites.causaldpo.runs import RunSpec, train_run

        m = state.metadata
        spec = RunSpec(m["arm"], m["seed"], tuple(sorted(m["settings"].items())))
        return await record_run(state, pool, SUITE, _headline, train_run, spec)

    return solve


@scorer(metrics=[mean(), stderr()])
def ood_ndcg() -> Scorer:
    """OOD NDCG@10 of the run; every split's metrics in the score's metadata."""

    def score(state: TaskState, run: dict[str, Any]) -> Score:
        keep = {k: v for k, v in run.items() if k.endswith(("ndcg10", "hr10", "pop1", "orr10"))}
        head = {"arm": state.metadata["arm"], "seed": state.metadata["seed"], "ari": run["ari"]}
        return Score(value=run["score"], metadata={**head, **keep})

    return score_run(score)


@task
@checked_args(
    ranges=dict(
        envs=count(1_000),
        beta=positive(1e6),
        negatives=count(1_000),
        epochs=count(100_000),
        sft_epochs=count(100_000),
        train=count(10_000_000),
        test=count(10_000_000),
    )
)
def causaldpo(
    preset: str = "quick", seeds: int | None = None, arms: str | None = None,
    lams: str | None = None, envs: int = 3, beta: float = 0.1, negatives: int = 3,
    epochs: int | None = None, sft_epochs: int | None = None, train: int | None = None,
    test: int | None = None, workers: int = 1, executor: str = "local", cpus_per_run: int = 1,
) -> Task:  # fmt: skip
    """One sample per (arm, seed); score = OOD NDCG@10 (specs/causaldpo.md §5).

    Args:
        preset: quick (3 seeds) or paper (10 seeds, the spec's protocol).
        seeds: Seeds (the unit of analysis), overriding the preset's.
        arms: Comma-separated arms, or all (default): sft, dpo, sdpo, causaldpo-code,
            causaldpo-w<λ> for each λ of `lams`, causaldpo-oracle, irm-oracle.
        lams: λ of the weighted-MMD CausalDPO arms, comma-separated (each >= 0).
        envs: K, the number of latent environments CausalDPO clusters (>= 1).
        beta: β of every preference loss (> 0); the code's effective value is 0.1.
        negatives: S-DPO's negatives per example (>= 1).
        epochs: Preference-training epochs, overriding 2.
        sft_epochs: SFT epochs, overriding 4.
        train: Training examples, overriding 6,000.
        test: Examples in each test split (the validation split has half), overriding 2,000.
        workers: Runs trained in parallel processes.
        executor: local (a thread or `workers` processes) or ray.
        cpus_per_run: ray: CPUs (torch threads) each run declares.

    """

    def names(preset: str) -> list[str]:
        return arm_names(arms, parse_lams(PRESETS[preset]["lams"] if lams is None else lams))

    def settings(preset: str) -> dict[str, Any]:
        overrides = {"epochs": epochs, "sft_epochs": sft_epochs, "train": train, "test": test,
                     "val": None if test is None else max(1, int(test) // 2)}  # fmt: skip
        names(preset)  # a bad λ or arm fails before the settings
        return settings_for(preset, envs=envs, beta=beta, negatives=negatives,
                            overrides=overrides)  # fmt: skip

    def samples(settings: dict[str, Any], n_seeds: int) -> list[Sample]:
        return [
            Sample(
                id=f"{arm}-seed{seed}",
                input=f"causaldpo: {arm} seed={seed}",
                target="",
                metadata={"arm": arm, "seed": seed, "settings": settings},
            )
            for seed in range(n_seeds)
            for arm in names(preset)
        ]

    return training_task(
        f"{__name__}:causaldpo", preset=preset, presets=PRESETS, settings=settings,
        samples=samples, solver=train_arm, scorer=ood_ndcg(), executor=executor, workers=workers,
        cpus_per_run=cpus_per_run, seeds=seeds,
        default_seeds={name: preset["seeds"] for name, preset in PRESETS.items()},
        metadata=lambda preset: {"arms": names(preset), "reconstructed": RECONSTRUCTED},
    )  # fmt: skip
