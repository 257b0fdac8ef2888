"""Suite `bandpo`: clip rules for GRPO compared on a softmax bandit and a toy RLVR task.

Two tasks, one sample per training run (an arm and a seed; the seed is the unit):
- `bandpo_bandit` (specs/bandpo.md §5.2): score = iterations until the best action's
  probability passes 0.5 (a run that never gets there scores the budget, and its metadata says
  so); the clip fraction and the p_best curve in the metadata.
- `bandpo_rlvr` (§5.3): a tiny GRU policy fitted to a noisy start, then GRPO; score = the final
  success rate over the evaluation set (mean@n); per-target correct counts (for pass@k), the
  entropy curve and the clip fraction by old-probability bin in the metadata.

Arms (`harness.suites.bandpo.arms`): clip, clip-higher, dcpo-dac, band{kl,tv,chi2}-<delta>,
bandkl-relax. The loss is `harness.models.methods.band_clip`. No data is downloaded.

Presets (measured on 2 CPU cores shared with other work; docs/validation/bandpo.md):
- `quick`: bandit with the 7 rules at delta 0.05 and 20 seeds; RLVR with the same 7 rules, 3
  seeds, 100 iterations. With `-T workers=2` on 2 shared cores: 3 min 12 s wall and 147 s
  CPU at load 4; 9 min 11 s and 195 s CPU at load 10.
- `sweep`: every rule of the issue (delta 0.02, 0.05, 0.1 for each band), bandit 20 seeds,
  RLVR 8 seeds and 200 iterations: the CPU-scale comparison, about 25 CPU-minutes (estimated).
- `paper`: the same arms with 20 seeds, a wider policy (hidden 256, vocabulary 32, length 10,
  m 11), 64 prompts x 16 responses and 500 iterations: for a machine with many cores, through
  Ray (`-T executor=ray`); not run here. The runs train tiny models on CPU; the paper's LLM
  scale (verl, Qwen2.5 3B/7B) is not part of this suite.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Scorer, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.suites.arg_ranges import Work, checked_args, count, positive
from harness.suites.bandpo.arms import ALL_ARMS, parse_arms
from harness.suites.training_pool import TrainingPool, record_run, score_run, training_task

SUITE = "bandpo"
PRESETS = ("quick", "sweep", "paper")
QUICK_ARMS = "clip,clip-higher,dcpo-dac,bandkl-0.05,bandtv-0.05,bandchi2-0.05,bandkl-relax"
ARMS = {"quick": QUICK_ARMS, "sweep": ",".join(ALL_ARMS), "paper": ",".join(ALL_ARMS)}
BANDIT: dict[str, dict[str, Any]] = {
    "quick": dict(iterations=200, lr=1.0),
    "sweep": dict(iterations=200, lr=1.0),
    "paper": dict(iterations=200, lr=1.0),
}
BANDIT_SEEDS = {"quick": 20, "sweep": 20, "paper": 20}
RLVR: dict[str, dict[str, Any]] = {
    "quick": dict(iterations=100, eval_every=20),
    "sweep": dict(iterations=200, eval_every=20),
    "paper": dict(vocab=32, modulus=11, length=10, hidden=256, sft_steps=400, prompts=64,
                  group=16, iterations=500, eval_every=25, eval_samples=64),
}  # fmt: skip
RLVR_SEEDS = {"quick": 3, "sweep": 8, "paper": 20}
RECONSTRUCTED = (
    "reconstructed: the bandit's layout (best action 0, others equal at the start, noise sd "
    "0.1), the whole toy RLVR task (verifier, prior, SFT noise, GRU size, learning rates, "
    "batch sizes) and bandkl-relax's epsilons (0.2/0.2) are ours (specs/bandpo.md §4-5); the "
    "operator and the loss follow the authors' code"
)


def _override(settings: dict[str, Any], name: str, value: float | None, kind: type) -> None:
    if value is None:
        return
    if not float(value) > 0:
        raise HarnessUsageError(f"{SUITE}: {name} must be > 0, got {value}")
    settings[name] = kind(value)


def _bandit_line(run: dict[str, Any]) -> str:
    return f"iterations to p_best > 0.5: {run['iterations_to_target']}"


def _rlvr_line(run: dict[str, Any]) -> str:
    return f"success {run['start_mean']:.3f} -> {run['final_mean']:.3f}"


@solver
def train_arm(experiment: str, pool: TrainingPool | int = 1) -> Solver:
    """Train the sample's run; the result goes in the sample's metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        m = state.metadata
        if experiment == "bandit":
            from harness.suites.bandpo.bandit import BanditConfig, train_bandit_dict

            cfg: Any = BanditConfig(m["arm"], m["seed"], **m["settings"])
            return await record_run(state, pool, SUITE, _bandit_line, train_bandit_dict, cfg)
        from harness.suites.bandpo.rlvr import RLVRConfig, train_rlvr_dict

        cfg = RLVRConfig(m["arm"], m["seed"], **m["settings"])
        return await record_run(state, pool, SUITE, _rlvr_line, train_rlvr_dict, cfg)

    return solve


@scorer(metrics=[mean(), stderr()])
def clip_rule_score() -> Scorer:
    """Bandit: iterations to p_best > 0.5 (never: the budget); RLVR: final mean success."""

    def score(state: TaskState, run: dict[str, Any]) -> Score:
        head = {"arm": state.metadata["arm"], "seed": state.metadata["seed"]}
        if "iterations_to_target" in run:
            hit = run["iterations_to_target"]
            value = float(hit if hit is not None else len(run["p_best"]))
            return Score(value=value, metadata={**head, "reached": hit is not None,
                                                "clip_fraction": run["clip_fraction"]})  # fmt: skip
        extra = {"start_mean": run["start_mean"], "final_entropy": run["final_entropy"]}
        return Score(value=run["final_mean"], metadata={**head, **extra})

    return score_run(score)


def _task(function: str, preset: str, arms: str | None, seeds: int | None,
          settings: Callable[[str], dict[str, Any]], pool: dict[str, Any]) -> Task:  # fmt: skip
    experiment = function.removeprefix("bandpo_")

    def samples(settings: dict[str, Any], n_seeds: int) -> list[Sample]:
        return [
            Sample(
                id=f"{arm}-seed{seed}",
                input=f"{experiment}: train {arm} with seed {seed}",
                target="",
                metadata={"experiment": experiment, "arm": arm, "seed": seed, "settings": settings},
            )  # fmt: skip
            for arm in parse_arms(arms or ARMS[preset])
            for seed in range(n_seeds)
        ]

    return training_task(
        f"{__name__}:{function}", preset=preset, presets=PRESETS, settings=settings,
        samples=samples, solver=partial(train_arm, experiment), scorer=clip_rule_score(),
        seeds=seeds, default_seeds=BANDIT_SEEDS if experiment == "bandit" else RLVR_SEEDS,
        metadata={"experiment": experiment, "reconstructed": RECONSTRUCTED}, **pool,
    )  # fmt: skip


def _iterations(key: str, settings: dict[str, dict[str, Any]], seeds: dict[str, int]) -> Any:
    """Training iterations: arms x seeds x iterations, the preset filling the gaps."""

    def estimate(args: dict[str, Any]) -> float:
        preset = args["preset"] if args["preset"] in PRESETS else "quick"
        arms = len(parse_arms(args["arms"] or ARMS[preset]))
        n = seeds[preset] if args["seeds"] is None else float(args["seeds"])
        its = settings[preset]["iterations"] if args[key] is None else float(args[key])
        return arms * n * its

    return estimate


# the paper preset: bandit 13 x 20 x 200 = 52,000 iterations (seconds); RLVR 13 x 20 x 500 =
# 130,000 GRPO iterations (hours, on many cores). The limits are about 100 and 2 times those.
BANDIT_WORK = Work(_iterations("iterations", BANDIT, BANDIT_SEEDS), "bandit iterations", 5e6)
RLVR_WORK = Work(_iterations("rl_iterations", RLVR, RLVR_SEEDS), "GRPO iterations", 300_000)


@task
@checked_args(ranges=dict(lr=positive(1_000), iterations=count(1_000_000)), work=BANDIT_WORK)
def bandpo_bandit(
    preset: str = "quick", arms: str | None = None, seeds: int | None = None,
    lr: float | None = None, iterations: int | None = None, workers: int = 1,
    executor: str = "local", cpus_per_run: int = 1,
) -> Task:  # fmt: skip
    """The softmax bandit: one sample per (arm, seed); score = iterations to p_best > 0.5.

    Args:
        preset: quick, sweep or paper.
        arms: Comma-separated clip rules (default: the preset's); clip is the baseline.
        seeds: Seeds per arm (default 20).
        lr: Gradient step size (default 1.0; the spec also reports 3.0).
        iterations: Budget per run (default 200).
        workers: Runs trained in parallel processes (1: one at a time in a thread).
        executor: local or ray (one Ray task per run).
        cpus_per_run: ray: CPUs each run declares and trains with.

    """

    def settings(preset: str) -> dict[str, Any]:
        chosen = dict(BANDIT[preset])
        _override(chosen, "lr", lr, float)
        _override(chosen, "iterations", iterations, int)
        return chosen

    pool = dict(executor=executor, workers=workers, cpus_per_run=cpus_per_run)
    return _task("bandpo_bandit", preset, arms, seeds, settings, pool)


@task
@checked_args(ranges=dict(rl_iterations=count(1_000_000)), work=RLVR_WORK)
def bandpo_rlvr(
    preset: str = "quick", arms: str | None = None, seeds: int | None = None,
    rl_iterations: int | None = None, workers: int = 1, executor: str = "local",
    cpus_per_run: int = 1,
) -> Task:  # fmt: skip
    """Toy RLVR: one sample per (arm, seed); score = final success rate (mean@n).

    Args:
        preset: quick, sweep or paper.
        arms: Comma-separated clip rules (default: the preset's); clip is the baseline.
        seeds: Seeds per arm (default: the preset's).
        rl_iterations: GRPO iterations per run (default: the preset's).
        workers: Runs trained in parallel processes (1: one at a time in a thread).
        executor: local or ray (one Ray task per run).
        cpus_per_run: ray: CPUs each run declares and trains with.

    """

    def settings(preset: str) -> dict[str, Any]:
        chosen = dict(RLVR[preset])
        _override(chosen, "iterations", rl_iterations, int)
        chosen["eval_every"] = min(chosen["eval_every"], chosen["iterations"])
        return chosen

    pool = dict(executor=executor, workers=workers, cpus_per_run=cpus_per_run)
    return _task("bandpo_rlvr", preset, arms, seeds, settings, pool)
