"""Where suites that train models from a seed run their training: a thread, a process pool, or Ray.

- `local` with `workers` = 1: runs train one at a time in a thread of this process, with torch's
  default thread count.
- `local` with `workers` > 1: a pool of spawned processes; each fixes torch to
  cpu_count // workers threads before it trains, so the pool does not oversubscribe the cores.
- `ray`: each run is a Ray task that declares `cpus` CPUs and `gpus` GPUs, and trains with
  `cpus` torch threads (harness/suites/ray_runs.py).

A run is deterministic for its seed and its torch thread count on one machine, so `ray` with
`cpus_per_run` = c gives the same per-run results as `local` with cpu_count // workers = c on the
same machine (tests/suites/test_ray_executor.py checks it on k-parity).

`training_task` is the `@task` body every such suite shares: it checks the preset and the seeds,
builds the settings, the samples and the pool, and names the suite in the log's metadata.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import TYPE_CHECKING, Any, TypeVar

from harness.errors import HarnessUsageError

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, Scorer, Target
    from inspect_ai.solver import Solver, TaskState

T = TypeVar("T")

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class TrainingPool:
    """Where a task's training runs go, and what each run declares."""

    executor: str = "local"  # local or ray
    workers: int = 1  # local: parallel processes (1: a thread)
    cpus: int = 1  # ray: CPUs a run declares, and its torch threads
    gpus: float = 0.0  # ray: GPUs a run declares
    retries: int = 3  # ray: runs again after its worker process dies

    def describe(self) -> dict[str, Any]:
        """For the log's metadata."""
        if self.executor == "ray":
            return {"executor": "ray", "cpus_per_run": self.cpus, "gpus_per_run": self.gpus,
                    "max_retries": self.retries}  # fmt: skip
        return {"executor": "local", "workers": self.workers}


def training_pool(
    suite: str, executor: str = "local", workers: int = 1, cpus_per_run: int = 1, gpus: float = 0.0
) -> TrainingPool:
    """A checked pool for a suite's task arguments; a usage error names the bad one.

    `executor=ray` starts or joins the Ray cluster here, and fails before anything runs when Ray
    is not installed or the cluster cannot be reached.
    """
    if executor not in EXECUTORS:
        raise HarnessUsageError(
            f"{suite}: unknown executor {executor!r}; executors: {', '.join(EXECUTORS)}"
        )
    if int(workers) < 1:
        raise HarnessUsageError(f"{suite}: workers must be at least 1, got {workers}")
    if int(cpus_per_run) < 1:
        raise HarnessUsageError(f"{suite}: cpus_per_run must be at least 1, got {cpus_per_run}")
    if executor == "ray" and int(workers) != 1:
        raise HarnessUsageError(
            f"{suite}: workers is for executor=local; with executor=ray runs go in parallel as "
            f"the cluster's CPUs allow, cpus_per_run each"
        )
    if executor == "ray":
        from harness.suites.ray_runs import check_fits

        # now, before the display starts: no Ray, no cluster, or no node that can hold a run is
        # a usage error
        check_fits(suite, int(cpus_per_run), float(gpus))
    return TrainingPool(executor, capped_workers(suite, int(workers)), int(cpus_per_run),
                        float(gpus))  # fmt: skip


def capped_workers(suite: str, workers: int) -> int:
    """`workers` processes, at most one per CPU core; capping says so in one line on stderr."""
    cores = os.cpu_count() or 1
    if workers <= cores:
        return workers
    print(f"harness: {suite}: workers={workers} is more than the {cores} CPU cores; "
          f"using {cores}", file=sys.stderr)  # fmt: skip
    return cores


_executors: dict[int, Executor] = {}


def executor(workers: int) -> Executor:
    """One thread (workers=1) or a pool of spawned processes, shared by a task's samples."""
    if workers not in _executors:
        if workers == 1:
            _executors[workers] = ThreadPoolExecutor(max_workers=1)
        else:
            _executors[workers] = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=get_context("spawn"),
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            )
    return _executors[workers]


def die_with_parent(parent: int) -> None:
    """Worker initializer: end this worker when the process that started it ends.

    A run stopped with SIGTERM or SIGKILL ends without shutting its pool down, and a worker in
    the middle of a training run would otherwise go on to its end, holding the cores. On Linux
    the kernel sends the worker SIGTERM when its parent dies (prctl PR_SET_PDEATHSIG); a parent
    already gone before that call is caught by its pid. Elsewhere it does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def with_threads(fn: Callable[..., T], threads: int, args: tuple[Any, ...]) -> T:
    """Worker entry point: fix the thread count (for determinism), then run."""
    import torch

    torch.set_num_threads(threads)
    return fn(*args)


async def run_training(pool: TrainingPool | int, fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(*args)` (picklable, unless one local worker) where `pool` says; await its result.

    An int is `TrainingPool(workers=n)`. Where the run went is recorded in the sample's
    transcript.
    """
    from inspect_ai.log import transcript

    if isinstance(pool, int):
        pool = TrainingPool(workers=pool)
    start = time.perf_counter()
    if pool.executor == "ray":
        from harness.suites.ray_runs import run_on_ray

        result, where = await run_on_ray(pool, fn, args)
    elif pool.workers > 1:
        threads = max(1, (os.cpu_count() or 1) // pool.workers)
        future = executor(pool.workers).submit(with_threads, fn, threads, args)
        result = await asyncio.wrap_future(future)
        where = {"executor": "local", "workers": pool.workers, "threads": threads}
    else:
        result = await asyncio.wrap_future(executor(1).submit(fn, *args))
        where = {"executor": "local", "workers": 1}
    where["seconds"] = round(time.perf_counter() - start, 3)
    transcript().info(where, source="training")
    return result


async def record_run(
    state: TaskState,
    pool: TrainingPool | int,
    model: str,
    headline: Callable[[Any], str],
    fn: Callable[..., Any],
    *args: Any,
) -> TaskState:
    """A training solver's step: run `fn(*args)` where `pool` says, keep its result.

    The result goes in the sample's metadata as `run`; the output, from `model`, is
    `headline(result)`.
    """
    from inspect_ai.model import ModelOutput

    result = await run_training(pool, fn, *args)
    state.metadata["run"] = result
    state.output = ModelOutput.from_content(model=model, content=headline(result))
    return state


def score_run(
    score: Callable[[TaskState, Any], Score], *, unfinished: float = math.nan
) -> Callable[[TaskState, Target], Awaitable[Score]]:
    """A training scorer's function: `score(state, run)` of the sample's recorded run.

    A sample without a run (its training did not finish) scores `unfinished` and says so.
    """
    from inspect_ai.scorer import Score

    async def score_state(state: TaskState, target: Target) -> Score:
        run = state.metadata.get("run")
        if run is None:
            return Score(value=unfinished, explanation="the run did not finish")
        return score(state, run)

    return score_state


def training_task(
    task_path: str,
    *,
    preset: str,
    presets: Collection[str],
    settings: Callable[[str], dict[str, Any]],
    samples: Callable[[dict[str, Any], int], Iterable[Sample]],
    solver: Callable[[TrainingPool], Solver],
    scorer: Scorer,
    executor: str = "local",
    workers: int = 1,
    cpus_per_run: int = 1,
    seeds: int | None = None,
    default_seeds: int | Mapping[str, int] = 1,
    counts: Mapping[str, int | None] | None = None,
    metadata: Mapping[str, Any] | Callable[[str], Mapping[str, Any]] | None = None,
) -> Task:
    """The Task of a training suite's `@task`: one sample per training run.

    The checks come first, so a usage error (one line naming the suite, from the catalog) stops
    the task before Ray starts: the preset, then the seeds, then whatever `settings` and
    `samples` check, then the pool's arguments.

    Args:
        task_path: `module:function` of the calling `@task`, which the catalog lists; its
            suite's name prefixes every error and goes in the log's metadata.
        preset: The preset the task was given; it must be one of `presets`.
        presets: The suite's presets, in the order an error lists them.
        settings: From the (checked) preset to the run settings, the task's overrides applied
            and checked; they go in every sample's and the log's metadata.
        samples: From the settings and the seed count to the samples, one a run.
        solver: From the pool to the solver that trains a sample's run.
        scorer: The scorer of a run.
        executor: local or ray (see `training_pool`).
        workers: Local runs in parallel processes.
        cpus_per_run: ray: CPUs each run declares and trains with.
        seeds: The task's seed count; None takes `default_seeds`.
        default_seeds: The seed count when `seeds` is None: one for all presets, or one per
            preset. A task without seeds leaves it at 1 and its `samples` ignores the count.
        counts: Whole-number overrides of the settings (steps, sizes), each at least 1; None
            keeps the preset's.
        metadata: More of the log's metadata, after the suite, `preset`, `settings` and
            `training`; a callable gets the checked preset.

    Returns:
        The Task, its metadata naming the suite (`harness.logs.SUITE_KEY`).

    """
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset

    from harness.suites.catalog import suite_metadata, suite_of_task

    suite = suite_of_task(task_path).name
    if preset not in presets:
        raise HarnessUsageError(
            f"{suite}: unknown preset {preset!r}; presets: {', '.join(presets)}"
        )
    if seeds is None:
        seeds = default_seeds if isinstance(default_seeds, int) else default_seeds[preset]
    if int(seeds) < 1:
        raise HarnessUsageError(f"{suite}: seeds must be at least 1, got {seeds}")
    run_settings = settings(preset)
    for key, value in (counts or {}).items():
        if value is not None:
            if int(value) < 1:
                raise HarnessUsageError(f"{suite}: {key} must be at least 1, got {value!r}")
            run_settings[key] = int(value)
    dataset = MemoryDataset(list(samples(run_settings, int(seeds))))
    pool = training_pool(suite, executor, workers, cpus_per_run)
    more = metadata(preset) if callable(metadata) else metadata
    return Task(
        dataset=dataset,
        solver=solver(pool),
        scorer=scorer,
        metadata={
            **suite_metadata(task_path),
            "preset": preset,
            "settings": run_settings,
            "training": pool.describe(),
            **(more or {}),
        },
    )
