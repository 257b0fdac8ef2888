"""Suite `serving`: scheduling policies on Azure LLM trace slices in a simulated server.

The policy is the eval's model (`serving/fcfs`, `serving/srpt`, `serving/sjf`,
`serving/uniboost`, `serving/uniboost-decode`; `harness.suites.serving.provider`). A sample is
a slice of the trace with a seed: the slice's requests, rate-scaled to the load asked for
(`harness.suites.serving.trace`), with prefix-cache hits and SJF's prediction errors drawn
from the seed. The sample's metadata keeps every request's TTFT and TTLT (ms) in arrival
order, and γ over time, for the report section; its scores are the slice's P99 TTLT and P99
TTFT in seconds (lower is better).

Presets (the simulator's constants are ours, spec §5.3):
- `quick`: the conversation trace, load 0.85, its first 2 slices of 10 minutes, 1 seed.
- `full`: the conversation trace, load 0.85, 6 slices of 10 minutes (the whole hour), 2 seeds.
Any argument given overrides the preset's.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.suites.arg_ranges import Range, Work, checked_args, count, positive
from harness.suites.serving import provider  # noqa: F401  (registers serving/ policies)
from harness.suites.serving.policies import RECONSTRUCTED
from harness.suites.serving.simulator import ServerConfig
from harness.suites.serving.trace import TRACES, TraceRow, slice_workload, trace_rows
from harness.suites.serving.workload import Run, bind_run

PRESETS: dict[str, dict[str, Any]] = {
    "quick": dict(trace="conv", load=0.85, slice_minutes=10.0, slices=2, seeds=1),
    "full": dict(trace="conv", load=0.85, slice_minutes=10.0, slices=6, seeds=2),
}
SIMULATOR_NOTE = (
    "serving simulator, step-time model (c0 + c1 * batched tokens), load definition and "
    "prefix-cache draws are ours (spec section 5.3), not the paper's"
)


@lru_cache(maxsize=4)
def _rows(trace: str, data_dir: str | None) -> tuple[TraceRow, ...]:
    return tuple(trace_rows(trace, data_dir))


def _server(args: dict[str, Any]) -> ServerConfig:
    try:
        return ServerConfig(
            kv_budget=int(args["kv_budget"]),
            step_tokens=int(args["step_tokens"]),
            c0=float(args["c0_ms"]) / 1e3,
            c1=float(args["c1_ms"]) / 1e3,
            preemption=args["preemption"],
            swap_cost=float(args["swap_ms"]) / 1e3,
            tensor_parallel=int(args["tensor_parallel"]),
        )
    except ValueError as ex:
        raise HarnessUsageError(f"serving: {ex}") from None


@solver
def simulate_slice(server: ServerConfig, hit_rate: float, data_dir: str | None) -> Solver:
    """Build the sample's workload, let the policy (the model) serve it, keep the latencies."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        rows = list(_rows(meta["trace"], data_dir))
        workload = slice_workload(
            rows, meta["start_s"], meta["minutes"], meta["load"], meta["seed"], server,
            hit_rate=hit_rate,
        )  # fmt: skip
        run = Run(workload, server, meta["seed"])
        bind_run(run)
        state = await generate(state)
        result = run.result
        if result is None:
            raise RuntimeError("the policy provider left no result (is the model serving/...?)")
        state.metadata.update(
            {
                "requests": len(result.ttlt),
                "scale": workload.scale,
                "saturated_rate": workload.saturated_rate,
                "load_reached": workload.load,
                "arrival_s": np.round(result.arrival, 4).tolist(),
                "ttft_ms": np.round(result.ttft * 1e3, 2).tolist(),
                "ttlt_ms": np.round(result.ttlt * 1e3, 2).tolist(),
                "max_wait_s": float(result.waited.max()),
                "preemptions": int(result.preemptions.sum()),
                "swapped_tokens": result.swapped_tokens,
                "recompute_tokens": result.recompute_tokens,
                "busy_fraction": result.busy_time / result.end if result.end > 0 else 0.0,
                **run.extras,
            }
        )
        return state

    return solve


def _percentile_score(state: TaskState, key: str) -> Score:
    if key not in state.metadata:  # the simulation did not run: the sample's error says why
        return Score(value=float("nan"), explanation="unscored: no simulation result")
    values = np.asarray(state.metadata[key], dtype=float) / 1e3
    return Score(value=float(np.percentile(values, 99)), explanation=f"P99 of {len(values)}")


@scorer(metrics=[mean()])
def ttlt_p99() -> Scorer:
    """The slice's P99 time to last token (s; lower is better)."""

    async def score(state: TaskState, target: Target) -> Score:
        return _percentile_score(state, "ttlt_ms")

    return score


@scorer(metrics=[mean()])
def ttft_p99() -> Scorer:
    """The slice's P99 time to first token (s; lower is better)."""

    async def score(state: TaskState, target: Target) -> Score:
        return _percentile_score(state, "ttft_ms")

    return score


def _slice_minutes(args: dict[str, Any]) -> float:
    """Trace minutes simulated: slices x seeds x slice_minutes, the preset filling the gaps."""
    preset = PRESETS.get(args["preset"], PRESETS["quick"])
    size = {k: preset[k] if args[k] is None else float(args[k]) for k in ("slices", "seeds")}
    minutes = preset["slice_minutes"] if args["slice_minutes"] is None else args["slice_minutes"]
    return size["slices"] * size["seeds"] * float(minutes)


# the full preset simulates 120 slice-minutes; the limit is 100 times that
SERVING_WORK = Work(_slice_minutes, "slice-minutes simulated", 12_000)


@task
@checked_args(
    ranges=dict(
        load=Range(0, 1, low_open=True, high_open=True),
        slice_minutes=positive(1_440),
        slices=count(10_000),
        start_minute=Range(0, 1_440),
        kv_budget=count(10_000_000_000),
        step_tokens=count(10_000_000),
        c0_ms=Range(0.01, 100_000),  # a step takes at least 10 us: no zero-time server
        c1_ms=Range(0, 1_000),
        swap_ms=Range(0, 1_000),
        hit_rate=Range(0, 1),
        tensor_parallel=count(1_024),
    ),
    work=SERVING_WORK,
)
def serving(
    preset: Literal["quick", "full"] = "quick",
    trace: str | None = None,
    load: float | None = None,
    slice_minutes: float | None = None,
    slices: int | None = None,
    seeds: int | None = None,
    start_minute: float = 0.0,
    kv_budget: int = 200_000,
    step_tokens: int = 2048,
    c0_ms: float = 8.0,
    c1_ms: float = 0.06,
    preemption: Literal["swap", "recompute"] = "swap",
    swap_ms: float = 0.02,
    hit_rate: float = 0.25,
    tensor_parallel: int = 1,
    data_dir: str | None = None,
) -> Task:
    """Serve trace slices under the policy given as the model.

    Args:
        preset: quick or full (see the module docstring); other arguments override it.
        trace: conv or code (the Azure LLM inference trace 2023).
        load: Arrival rate over the saturated throughput, in (0, 1).
        slice_minutes: Length of a slice in the trace's own time.
        slices: Consecutive slices from `start_minute`.
        seeds: Seeds per slice (prefix-cache hits, SJF's prediction errors).
        start_minute: Where the first slice starts in the trace.
        kv_budget: KV tokens of the server.
        step_tokens: Batched tokens per step (chunked prefill).
        c0_ms: Fixed step time (ms).
        c1_ms: Step time per batched token (ms).
        preemption: swap or recompute.
        swap_ms: Swap time per KV token each way (ms).
        hit_rate: Share of requests that find half their prompt in the prefix cache.
        tensor_parallel: Ranks; UniBoost refuses > 1 unless `-M allow_tp=true` (not timed).
        data_dir: Folder holding serving/ (else HARNESS_DATA_DIR).

    """
    if preset not in PRESETS:
        raise HarnessUsageError(f"serving: unknown preset '{preset}'; presets: quick, full")
    given = dict(trace=trace, load=load, slice_minutes=slice_minutes, slices=slices, seeds=seeds)
    settings = {**PRESETS[preset], **{k: v for k, v in given.items() if v is not None}}
    if settings["trace"] not in TRACES:
        raise HarnessUsageError(f"serving: trace must be one of {', '.join(TRACES)}")
    if not 0 < settings["load"] < 1:
        raise HarnessUsageError(f"serving: load must be in (0, 1), got {settings['load']}")
    if not (settings["slices"] >= 1 and settings["seeds"] >= 1 and settings["slice_minutes"] > 0):
        raise HarnessUsageError("serving: slices, seeds and slice_minutes must be positive")
    if start_minute < 0 or not 0 <= hit_rate <= 1:
        raise HarnessUsageError("serving: need start_minute >= 0 and hit_rate in [0, 1]")
    server = _server(dict(kv_budget=kv_budget, step_tokens=step_tokens, c0_ms=c0_ms,
                          c1_ms=c1_ms, preemption=preemption, swap_ms=swap_ms,
                          tensor_parallel=tensor_parallel))  # fmt: skip
    _rows(settings["trace"], data_dir)  # a missing or bad trace is one line, before the run
    samples = []
    for i in range(settings["slices"]):
        start = 60.0 * (start_minute + i * settings["slice_minutes"])
        for seed in range(settings["seeds"]):
            meta = dict(trace=settings["trace"], slice=i, start_s=start, seed=seed,
                        minutes=settings["slice_minutes"], load=settings["load"])  # fmt: skip
            samples.append(
                Sample(
                    id=f"{settings['trace']}-s{i}-seed{seed}", input=json.dumps(meta), metadata=meta
                )  # fmt: skip
            )
    return Task(
        dataset=MemoryDataset(samples),
        solver=[simulate_slice(server, hit_rate, data_dir)],
        scorer=[ttlt_p99(), ttft_p99()],
        metadata={
            "preset": preset,
            "settings": settings,
            "server": {
                "kv_budget": kv_budget,
                "step_tokens": step_tokens,
                "c0_ms": c0_ms,
                "c1_ms": c1_ms,
                "preemption": preemption,
                "swap_ms": swap_ms,
                "hit_rate": hit_rate,
                "hit_fraction": 0.5,
                "tensor_parallel": tensor_parallel,
            },  # fmt: skip
            "reconstructed": f"{RECONSTRUCTED}; {SIMULATOR_NOTE}",
            "source": "Azure/AzurePublicDataset LLM inference trace 2023 (CC-BY 4.0)",
        },
    )
