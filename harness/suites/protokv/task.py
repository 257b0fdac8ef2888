"""Suite `protokv`: ProtoKV's summary-state memory against token-retention caches, by delay.

One sample per seed (the unit): the seed draws a world of specs/protokv.md §5 and `episodes`
streams; every arm (full cache, sliding window, sinks + window, H2O, uniform thinning, ProtoKV
and its two ablations) runs on the same streams and is queried after the cue plus each delay
(`harness.suites.protokv.runs`). The sample's score is ProtoKV's accuracy averaged over the
delays; the report reads every arm at every delay from the sample's run.

Presets:
- `quick`: the spec's §5 acceptance run: M = 8 frames (W = 2, K = 3, S = 2), G = 4, C = 8,
  codebooks after 16 frames, 8 seeds × 40 episodes, Δ ∈ {0, 4, 8, 16, 32, 64, 128, 256}.
- `paper`: the authors' argparse defaults where the toy allows: S = 8, G = 8, C = 16, the
  scripts' k-means (2 iterations, 512 samples), M = 32 (W = 8, K = 3), 8 seeds × 100 episodes,
  Δ up to 512. The paper's real M and S are unknown (spec §4).

The world, the reader and our H2O adaptation are reconstructed (spec §4); ProtoKV follows the
authors' code. No real model: the real-LLM issue has not landed.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Scorer, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.suites.arg_ranges import checked_args, count
from harness.suites.protokv.bank import budget_split
from harness.suites.protokv.runs import RunSpec, run
from harness.suites.protokv.world import WorldConfig
from harness.suites.training_pool import TrainingPool, record_run, score_run, training_task

PRESETS: dict[str, dict[str, Any]] = {
    "quick": dict(seeds=8, episodes=40, delays="0,4,8,16,32,64,128,256", frames_budget=8,
                  modes=2, max_prototypes=0, groups=4, codes=8, codebook_frames=16,
                  kmeans_iters=4, kmeans_sample=4096, sink_tokens=4),
    "paper": dict(seeds=8, episodes=100, delays="0,8,16,32,64,128,256,512", frames_budget=32,
                  modes=8, max_prototypes=0, groups=8, codes=16, codebook_frames=16,
                  kmeans_iters=2, kmeans_sample=512, sink_tokens=4),
}  # fmt: skip
RECONSTRUCTED = (
    "ProtoKV follows the authors' code (lwx270901/ProtoKV, kvcache_utils_proto.py) without RoPE "
    "re-anchoring; the delayed-cue world, the fixed reader, H2O's stream adaptation and the "
    "codebook warm-up of 16 frames are ours (specs/protokv.md section 4)"
)


def _int(name: str, value: Any, low: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise HarnessUsageError(f"protokv: {name} must be an integer, got {value!r}") from None
    if number < low:
        raise HarnessUsageError(f"protokv: {name} must be at least {low}, got {number}")
    return number


def parse_delays(delays: str) -> tuple[int, ...]:
    """Comma-separated delays in frames, each >= 0, in increasing order."""
    try:
        values = sorted({int(v) for v in str(delays).split(",") if v.strip()})
    except ValueError:
        raise HarnessUsageError(
            f"protokv: delays must be whole frames such as 0,4,8,16; got {delays!r}"
        ) from None
    if not values:
        raise HarnessUsageError("protokv: give at least one delay, such as delays=0,16,32")
    if values[0] < 0:
        raise HarnessUsageError(f"protokv: a delay cannot be negative; got {delays!r}")
    return tuple(values)


def settings_for(preset: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The preset's settings with the given overrides, checked; a usage error names the bad one."""
    if preset not in PRESETS:
        raise HarnessUsageError(f"protokv: unknown preset {preset!r}; presets: quick, paper")
    settings = dict(PRESETS[preset])
    settings.update({k: v for k, v in overrides.items() if v is not None})
    for name, low in (("seeds", 1), ("episodes", 1), ("frames_budget", 2), ("modes", 1),
                      ("max_prototypes", 0), ("groups", 1), ("codes", 1),
                      ("codebook_frames", 1), ("sink_tokens", 0)):  # fmt: skip
        settings[name] = _int(name, settings[name], low)
    delays = parse_delays(settings["delays"])
    settings["delays"] = delays
    budget = budget_split(settings["frames_budget"], settings["modes"],
                          settings["max_prototypes"])  # fmt: skip
    world = WorldConfig()
    tokens = settings["frames_budget"] * world.tokens
    if settings["sink_tokens"] >= tokens:
        raise HarnessUsageError(
            f"protokv: sink_tokens ({settings['sink_tokens']}) must be fewer than the budget's "
            f"{tokens} tokens (M = {settings['frames_budget']} frames of {world.tokens})"
        )
    needed = world.frames_for(delays[-1])
    stream = settings.pop("stream", None)
    if stream is not None:
        stream = _int("stream", stream, 1)
        if stream < needed:
            raise HarnessUsageError(
                f"protokv: delay {delays[-1]} is longer than the stream: a query {delays[-1]} "
                f"frames after the cue (which ends at frame {world.cue_end}) needs {needed} "
                f"frames, and stream={stream}"
            )
    if world.cue_at < settings["frames_budget"] + 1:
        raise HarnessUsageError(
            f"protokv: M = {settings['frames_budget']} frames holds the whole stream up to the "
            f"cue at frame {world.cue_at}; give frames_budget <= {world.cue_at - 1}"
        )
    settings["stream"] = stream or needed
    settings["prototypes"], settings["window"] = budget.prototypes, budget.window
    return settings


@solver
def stream_policies(pool: TrainingPool | int = 1) -> Solver:
    """Run the sample's seed; its result goes in the sample's metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        m = state.metadata
        keep = {k: v for k, v in m["settings"].items()
                if k not in ("seeds", "prototypes", "window")}  # fmt: skip
        spec = RunSpec(m["seed"], tuple(sorted(keep.items())))

        def headline(result: dict[str, Any]) -> str:
            return f"{sum(result['accuracy']['protokv'].values()) / len(keep['delays']):.4f}"

        return await record_run(state, pool, "protokv", headline, run, spec)

    return solve


@scorer(metrics=[mean(), stderr()])
def protokv_accuracy() -> Scorer:
    """ProtoKV's accuracy averaged over the delays; every arm's per delay in metadata."""

    def score(state: TaskState, result: dict[str, Any]) -> Score:
        acc = result["accuracy"]["protokv"]
        return Score(
            value=sum(acc.values()) / len(acc),
            metadata={"seed": state.metadata["seed"], "accuracy": result["accuracy"]},
        )

    return score_run(score)


@task
@checked_args(
    ranges=dict(
        episodes=count(1_000_000),
        stream=count(10_000_000),
        frames_budget=count(1_000_000, low=2),
        modes=count(10_000),
        max_prototypes=count(1_000_000, low=0),
        groups=count(10_000),
        codes=count(1_000_000),
    )
)
def protokv(
    preset: str = "quick", seeds: int | None = None, episodes: int | None = None,
    delays: str | None = None, stream: int | None = None, frames_budget: int | None = None,
    modes: int | None = None, max_prototypes: int | None = None, groups: int | None = None,
    codes: int | None = None, workers: int = 1, executor: str = "local", cpus_per_run: int = 1,
) -> Task:  # fmt: skip
    """Delayed-cue streams: accuracy of every cache policy at each query delay, per seed.

    Args:
        preset: quick (the spec's §5 run) or paper (the authors' S, G, C; M = 32).
        seeds: Seeds (worlds); each is one sample and the unit of the analysis.
        episodes: Streams per seed.
        delays: Comma-separated query delays, in frames after the last cue frame.
        stream: Frames per stream; by default the shortest that holds the longest delay.
        frames_budget: M, frames attention sees (32 KV entries per 8 frames of 4 tokens).
        modes: S, pseudo-frames per prototype.
        max_prototypes: K_max (0: the authors' automatic 1:3 near:far split).
        groups: G, product-quantisation subspaces (rounded to a divisor of D).
        codes: C, codewords per subspace.
        workers: Seeds run in parallel processes.
        executor: local (a thread or `workers` processes) or ray.
        cpus_per_run: ray: CPUs each seed declares.

    """
    overrides = dict(seeds=seeds, episodes=episodes, delays=delays, stream=stream,
                     frames_budget=frames_budget, modes=modes, max_prototypes=max_prototypes,
                     groups=groups, codes=codes)  # fmt: skip
    return training_task(
        f"{__name__}:protokv", preset=preset, presets=PRESETS,
        settings=lambda preset: settings_for(preset, overrides),
        samples=lambda settings, n_seeds: [
            Sample(id=f"seed{seed}", input=f"protokv streams, seed {seed}", target="",
                   metadata={"seed": seed, "settings": settings})
            for seed in range(n_seeds)
        ],
        solver=stream_policies, scorer=protokv_accuracy(), executor=executor, workers=workers,
        cpus_per_run=cpus_per_run, seeds=seeds,
        default_seeds={name: preset["seeds"] for name, preset in PRESETS.items()},
        metadata={"reconstructed": RECONSTRUCTED},
    )  # fmt: skip
