"""Suite `provenance`: power-calibrated KGW watermarking and antidistillation fingerprinting.

Three tasks, each sample one run in the training pool (a thread, processes, or Ray tasks):
- `provenance_detect`: the false-positive run (check 1) and one run per (gamma, delta) grid cell
  (check 2, and the front of check 3): 1,000 watermarked texts, measured power against the
  conditional power model. Score: FPR at 0.01 (the FPR sample), power at n = 100 (a cell).
- `provenance_select`: the parameter selection on clean calibration texts and 1,000 texts at
  the chosen (gamma*, delta*) (check 3). Score: the measured power at n = 100.
- `provenance_distill`: one student per (method, strength, seed, architecture) (checks 4-5).
  Score: -log10 p of the open-mode supervised test after the last epoch.

Presets `quick` and `full` (`harness.suites.provenance.presets`). What is reconstructed is in
each log's metadata (`reconstructed`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Scorer, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.suites.arg_ranges import Work, checked_args, count
from harness.suites.provenance.presets import (
    DETECT,
    DISTILL,
    PRESETS,
    RECONSTRUCTED,
    SEEDS,
    SWEEPS,
)
from harness.suites.training_pool import TrainingPool, record_run, score_run, training_task

SUITE = "provenance"


@solver
def provenance_run(pool: TrainingPool | int = 1) -> Solver:
    """Run the sample's experiment where the pool says; its result goes in the metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from harness.suites.provenance.runs import run_kind

        m = state.metadata
        return await record_run(state, pool, SUITE, partial(_headline, m["kind"]), run_kind,
                                m["kind"], m["params"], m["settings"])  # fmt: skip

    return solve


def _value(kind: str, run: dict[str, Any]) -> float:
    if kind == "fpr":
        fresh = run["by_gamma"][next(iter(run["by_gamma"]))]["fresh_key"]
        return fresh["hits"]["0.01"] / fresh["texts"]
    if kind == "cell":
        return next(c["power"] for c in run["cells"] if c["n"] == 100)
    if kind == "select":
        return run["chosen"]["measured"]["power"] if "chosen" in run else math.nan
    last = run["epochs"][max(run["epochs"], key=int)]
    return last["open_supervised"]["neg_log10_p"]


def _headline(kind: str, run: dict[str, Any]) -> str:
    names = {"fpr": "false-positive rate at 0.01", "cell": "power at n = 100",
             "select": "power at the selected point, n = 100",
             "distill": "-log10 p, open mode, supervised, last epoch"}  # fmt: skip
    return f"{names[kind]}: {_value(kind, run):.4g}"


@scorer(metrics=[mean()])
def provenance_score() -> Scorer:
    """The run's headline number (see the module docstring); details in the metadata."""

    def score(state: TaskState, run: dict[str, Any]) -> Score:
        kind = state.metadata["kind"]
        return Score(value=_value(kind, run), explanation=_headline(kind, run),
                     metadata={"kind": kind, **state.metadata["params"]})  # fmt: skip

    return score_run(score)


def _task(
    function: str,
    preset: str,
    settings: Callable[[str], dict[str, Any]],
    samples: Callable[[dict[str, Any], int], list[Sample]],
    pool: dict[str, Any],
    **seeds: Any,
) -> Task:
    return training_task(
        f"{__name__}:{function}", preset=preset, presets=PRESETS, settings=settings,
        samples=samples, solver=provenance_run, scorer=provenance_score(),
        metadata={"reconstructed": RECONSTRUCTED}, **pool, **seeds,
    )  # fmt: skip


def _sample(sid: str, kind: str, params: dict[str, Any], settings: dict[str, Any]) -> Sample:
    return Sample(id=sid, input=f"{kind} {params}", target="",
                  metadata={"kind": kind, "params": params, "settings": settings})  # fmt: skip


def _texts(runs: int) -> Work:
    """Texts generated: `texts` (default the preset's) x `runs` runs."""

    def estimate(args: dict[str, Any]) -> float:
        preset = DETECT.get(args["preset"], DETECT["quick"])
        return runs * float(preset["texts"] if args["texts"] is None else args["texts"])

    # the quick detect task generates 13 x 1,000 texts in minutes; 20 times that is the limit
    return Work(estimate, "texts generated", 260_000)


def _students(args: dict[str, Any]) -> float:
    preset = args["preset"] if args["preset"] in SWEEPS else "quick"
    runs = sum(len(sweep) for sweep in SWEEPS[preset].values())
    return runs * float(SEEDS[preset] if args["seeds"] is None else args["seeds"])


# one run per (gamma, delta) cell and the false-positive run
DETECT_RUNS = 1 + len(DETECT["quick"]["gammas"]) * len(DETECT["quick"]["deltas"])


@task
@checked_args(ranges=dict(texts=count(10_000_000, low=10)), work=_texts(DETECT_RUNS))
def provenance_detect(
    preset: str = "quick",
    texts: int | None = None,
    workers: int = 1,
    executor: str = "local",
    cpus_per_run: int = 1,
) -> Task:
    """False positives on clean text and power against the model over the (gamma, delta) grid.

    Args:
        preset: quick or full.
        texts: Texts per run (default 1,000).
        workers: Runs in parallel processes (1: one at a time in a thread).
        executor: local or ray.
        cpus_per_run: ray: CPUs each run declares.

    """

    def settings(preset: str) -> dict[str, Any]:
        chosen = dict(DETECT[preset])
        if texts is not None:
            if int(texts) < 10:
                raise HarnessUsageError(f"{SUITE}: texts must be at least 10, got {texts}")
            chosen["texts"] = int(texts)
        return chosen

    def samples(settings: dict[str, Any], _: int) -> list[Sample]:
        return [_sample("fpr", "fpr", {}, settings)] + [
            _sample(f"kgw-g{g:g}-d{d:g}", "cell", {"gamma": g, "delta": d}, settings)
            for g in settings["gammas"]
            for d in settings["deltas"]
        ]

    pool = dict(executor=executor, workers=workers, cpus_per_run=cpus_per_run)
    return _task("provenance_detect", preset, settings, samples, pool)


@task
@checked_args(ranges=dict(texts=count(10_000_000, low=10)), work=_texts(1))
def provenance_select(
    preset: str = "quick",
    texts: int | None = None,
    workers: int = 1,
    executor: str = "local",
    cpus_per_run: int = 1,
) -> Task:
    """The selected (gamma*, delta*) and its measured power (the front is the detect grid's).

    Args:
        preset: quick or full.
        texts: Texts generated at the selected point (default 1,000).
        workers: Runs in parallel processes.
        executor: local or ray.
        cpus_per_run: ray: CPUs each run declares.

    """

    def settings(preset: str) -> dict[str, Any]:
        chosen = dict(DETECT[preset])
        if texts is not None:
            chosen["texts"] = int(texts)
        return chosen

    pool = dict(executor=executor, workers=workers, cpus_per_run=cpus_per_run)
    return _task("provenance_select", preset, settings,
                 lambda settings, _: [_sample("select", "select", {}, settings)], pool)  # fmt: skip


@task
# the full preset trains 78 students; 1,000 is the limit
@checked_args(work=Work(_students, "students trained", 1_000))
def provenance_distill(
    preset: str = "quick",
    seeds: int | None = None,
    archs: str = "transformer,gru",
    workers: int = 1,
    executor: str = "local",
    cpus_per_run: int = 1,
) -> Task:
    """Fingerprinted students against the control: KGW and ADFP sweeps, 1 and 3 epochs.

    Args:
        preset: quick or full.
        seeds: Seeds (default 2 in quick, 3 in full).
        archs: Student architectures: transformer, gru (the unknown-architecture case).
        workers: Runs in parallel processes.
        executor: local or ray.
        cpus_per_run: ray: CPUs each run declares.

    """

    def samples(settings: dict[str, Any], n_seeds: int) -> list[Sample]:
        arch_list = [a.strip() for a in archs.split(",") if a.strip()]
        unknown = [a for a in arch_list if a not in SWEEPS[preset]]
        if unknown or not arch_list:
            raise HarnessUsageError(f"{SUITE}: archs must be among transformer, gru; got {archs!r}")
        runs = [(arch, method, strength, seed) for arch in arch_list
                for method, strength in SWEEPS[preset][arch]
                for seed in range(n_seeds)]  # fmt: skip
        # longest first: the control with the FPR sweeps, then ADFP (a proxy pass per step)
        runs.sort(key=lambda r: (not (r[1] == "control" and r[0] == "transformer" and r[3] == 0),
                                 r[1] != "adfp"))  # fmt: skip
        return [
            _sample(f"{method}-{strength:g}-{arch}-seed{seed}", "distill",
                    {"method": method, "strength": strength, "seed": seed, "arch": arch}, settings)
            for arch, method, strength, seed in runs
        ]  # fmt: skip

    pool = dict(executor=executor, workers=workers, cpus_per_run=cpus_per_run)
    return _task("provenance_distill", preset, lambda preset: dict(DISTILL[preset]), samples,
                 pool, seeds=seeds, default_seeds=SEEDS)  # fmt: skip
