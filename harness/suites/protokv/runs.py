"""One seed of the ProtoKV suite: every policy on the same streams, queried at every delay.

A seed draws a world (`harness.suites.protokv.world`) and `episodes` streams. Each stream runs
once through every policy, and each policy is queried after the last cue frame plus each delay
Δ; a query only reads the cache, so the delays of one episode share its stream and every arm
sees the same streams (arms are paired within the seed). ProtoKV and its two ablations (no
residual modes, no log-mass bias) read one bank: the ablations change only what is shown at
query time, not what is kept.

The seed is the unit: a run returns each arm's accuracy over the episodes at each delay.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.suites.protokv.bank import BankConfig, budget_split
from harness.suites.protokv.policies import (
    FullCache,
    HeavyHitters,
    ProtoKVCache,
    SinkWindow,
    SlidingWindow,
    UniformThinning,
)
from harness.suites.protokv.world import WorldConfig, episode, make_world, read

TOKEN_BASELINES = ("window", "sink+window", "h2o", "uniform")
PROTOKV = ("protokv", "protokv-no-residual", "protokv-no-bias")
ARMS = ("full", *TOKEN_BASELINES, *PROTOKV)


@dataclass(frozen=True)
class RunSpec:
    """One seed with the preset's settings."""

    seed: int
    settings: tuple[tuple[str, Any], ...]  # sorted (name, value) pairs

    def get(self, key: str) -> Any:
        """A setting by name."""
        return dict(self.settings)[key]


@dataclass(frozen=True)
class RunResult:
    """What one seed measured."""

    accuracy: dict[str, dict[str, float]]  # arm -> str(delay) -> share of episodes right
    exposed: dict[str, list[int]]  # arm -> [min, max] exposed entries over the queries
    state_bytes: list[int]  # ProtoKV's persistent state at each query, distinct values
    prototypes: int  # K
    window: int  # W
    episodes: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        return asdict(self)


def world_config(spec: RunSpec) -> WorldConfig:
    """The world's sizes from the settings (the spec's by default)."""
    names = WorldConfig.__dataclass_fields__
    return WorldConfig(**{k: v for k, v in spec.settings if k in names})


def _policies(spec: RunSpec, world: WorldConfig) -> dict[str, Any]:
    m, p = spec.get("frames_budget"), world.tokens
    budget = budget_split(m, spec.get("modes"), spec.get("max_prototypes"))
    bank = BankConfig(
        budget.prototypes, budget.modes, spec.get("groups"), spec.get("codes"),
        codebook_frames=spec.get("codebook_frames"), kmeans_iters=spec.get("kmeans_iters"),
        kmeans_sample=spec.get("kmeans_sample"), seed=spec.seed,
    )  # fmt: skip
    heavy = m * p // 2
    return {
        "full": FullCache(),
        "window": SlidingWindow(m),
        "sink+window": SinkWindow(m * p, spec.get("sink_tokens")),
        "h2o": HeavyHitters(m * p, heavy),
        "uniform": UniformThinning(m * p),
        "protokv": ProtoKVCache(budget, bank, p, world.dim),
    }


def run(spec: RunSpec) -> dict[str, Any]:
    """Every arm on `episodes` streams of this seed; accuracy per arm and delay."""
    world_cfg = world_config(spec)
    world = make_world(spec.seed, world_cfg)
    delays = [int(d) for d in spec.get("delays")]
    stops = {world_cfg.frames_for(d) - 1: d for d in delays}  # frame index -> delay
    length = max(world_cfg.frames_for(max(delays)), int(dict(spec.settings).get("stream", 0)))
    rng = np.random.default_rng([spec.seed, 1])
    right = {a: dict.fromkeys(delays, 0) for a in ARMS}
    sizes: dict[str, list[int]] = {a: [] for a in ARMS}
    state: set[int] = set()
    budget = None
    for _ in range(spec.get("episodes")):
        ep = episode(world, rng, length)
        policies = _policies(spec, world_cfg)
        budget = policies["protokv"].budget
        for t in range(length):
            frame = ep.frames[t]
            for policy in policies.values():
                policy.observe(frame, frame, t)
            if t not in stops:
                continue
            shown = {name: policy.exposed() for name, policy in policies.items()
                     if name != "protokv"}  # fmt: skip
            proto = policies["protokv"]
            shown.update(proto.views())
            state.add(proto.bank.state_bytes())
            for name, exposed in shown.items():
                right[name][stops[t]] += read(world, exposed) == ep.label
                sizes[name].append(exposed.size)
    n = spec.get("episodes")
    assert budget is not None
    result = RunResult(
        accuracy={a: {str(d): right[a][d] / n for d in delays} for a in ARMS},
        exposed={a: [min(s), max(s)] for a, s in sizes.items()},
        state_bytes=sorted(state),
        prototypes=budget.prototypes,
        window=budget.window,
        episodes=n,
    )
    return result.as_dict()
