"""The scheduling policies compared by the suite; each is a `Policy` of the simulator.

- `fcfs`: arrival order; preempts the latest arrival first.
- `srpt`: oracle SRPT on the true remaining output tokens (the waiting queue; victims are the
  running requests with most remaining).
- `sjf`: SJF on predicted output length, the prediction the true length times a log-normal
  error exp(σZ), σ = 0.5, drawn once per request from the slice's seed; remaining predicted
  work is the prediction less tokens generated (at least 1).
- `uniboost`: UniBoost prefill-only: Φ = a − b_γ(α·uncached tokens), the waiting queue
  re-sorted with the γ that γ-Ada sets every 5 s (the authors' code). Victims: largest Φ.
- `uniboost-decode`: **reconstructed** (the paper's rule is secondhand; spec §2 and §4). As
  `uniboost` for the waiting queue, plus geometric decode boosting and MemGuard:
  - a request is re-prioritised when its generated tokens reach 16, 32, 64, ... (first
    threshold and factor ours): Φ = a − b_γ(α·tokens decoded so far), the spec's default;
  - after dispatch or resume it is not evictable until its next threshold;
  - on KV pressure, and to admit a waiting request of smaller Φ, victims are the evictable
    running requests in descending Φ − (their preemption cost in seconds), a cost rule of
    ours; evicting a protected request happens only when no evictable one is left, and is
    counted.
"""

from __future__ import annotations

import math

import numpy as np

from harness.errors import HarnessUsageError
from harness.suites.serving.boost import ALPHA, GammaAda, GammaAdaConfig, priority
from harness.suites.serving.simulator import Job, ServerConfig

POLICY_NAMES: tuple[str, ...] = ("fcfs", "srpt", "sjf", "uniboost", "uniboost-decode")
SIGMA = 0.5  # log-normal prediction error of `sjf` (spec)
FIRST_THRESHOLD = 16  # tokens: first decode re-prioritisation (ours)
THRESHOLD_FACTOR = 2  # geometric factor between thresholds (ours)
DEFAULT_ADA = GammaAdaConfig()  # the authors' controller constants
RECONSTRUCTED = (
    "uniboost-decode: decode thresholds (16 tokens, x2), w = alpha * tokens decoded at a "
    "threshold, non-evictable until the next threshold, victims by phi - preemption cost: "
    "reconstructed from a secondhand description (spec sections 2 and 4), not the authors' code"
)


def preemption_cost(job: Job, config: ServerConfig) -> float:
    """Seconds a preemption of `job` costs: swap out and in, or re-prefilling its context."""
    if config.preemption == "swap":
        return 2.0 * config.swap_cost * job.kv
    return config.c1 * job.uncached


class _Base:
    """Static keys, victims in descending key, no thresholds, no controller."""

    name = "base"

    def start(self, jobs: list[Job], seed: int) -> None:
        """Nothing to set up."""

    def key(self, job: Job, now: float) -> float:
        """Arrival time (overridden)."""
        return job.req.arrival

    def victims(self, running: list[Job], now: float, config: ServerConfig) -> list[Job]:
        """The running requests, worst key first (ties: latest arrival first)."""
        return sorted(running, key=lambda j: (self.key(j, now), j.req.rid), reverse=True)

    def make_room(
        self, head: Job, need: int, running: list[Job], now: float, config: ServerConfig
    ) -> list[Job]:
        """Never preempts to admit: the head waits for KV to free."""
        return []

    def admitted(self, job: Job, now: float) -> None:
        """Nothing to mark."""

    def preempted(self, job: Job, now: float) -> None:
        """Nothing to count."""

    def threshold(self, job: Job, now: float) -> None:
        """No thresholds."""

    def finished(self, job: Job, now: float) -> None:
        """Nothing to record."""

    def tick(self, now: float) -> bool:
        """No controller."""
        return False

    def next_tick(self) -> float:
        """No controller."""
        return math.inf


class Fcfs(_Base):
    """First come, first served."""

    name = "fcfs"


class OracleSrpt(_Base):
    """Shortest remaining (true) output first."""

    name = "srpt"

    def key(self, job: Job, now: float) -> float:
        """True remaining output tokens."""
        return float(job.req.output - job.generated)


class NoisySjf(_Base):
    """Shortest predicted job first, predictions with log-normal error."""

    name = "sjf"

    def __init__(self, sigma: float = SIGMA) -> None:
        """σ of the log error."""
        self.sigma = sigma

    def start(self, jobs: list[Job], seed: int) -> None:
        """Draw each request's prediction from `seed`."""
        z = np.random.default_rng([seed, 0x5F]).standard_normal(len(jobs))
        for job, e in zip(jobs, z, strict=True):
            job.note["predicted"] = job.req.output * math.exp(self.sigma * float(e))

    def key(self, job: Job, now: float) -> float:
        """Predicted remaining output tokens (at least 1)."""
        return max(job.note["predicted"] - job.generated, 1.0)


class UniBoost(_Base):
    """UniBoost prefill-only with the γ-Ada controller (or a fixed γ)."""

    name = "uniboost"

    def __init__(self, config: GammaAdaConfig = DEFAULT_ADA, *, adaptive: bool = True) -> None:
        """γ-Ada from `config.gamma0`, or γ fixed at it when not `adaptive`."""
        self.controller = GammaAda(config)
        self.adaptive = adaptive

    @property
    def gamma(self) -> float:
        """The current γ (1/s)."""
        return self.controller.gamma

    def key(self, job: Job, now: float) -> float:
        """Φ = a − b_γ(α·uncached tokens)."""
        return priority(job.entered, ALPHA * job.uncached, self.gamma)

    def finished(self, job: Job, now: float) -> None:
        """Feed the controller the request's end-to-end latency."""
        self.controller.record(now - job.req.arrival)

    def tick(self, now: float) -> bool:
        """Run γ-Ada's updates due by `now`."""
        return self.adaptive and self.controller.tick(now)

    def next_tick(self) -> float:
        """γ-Ada's next update."""
        return self.controller.next_due if self.adaptive else math.inf


class UniBoostDecode(UniBoost):
    """UniBoost with geometric decode boosting and MemGuard (reconstructed, see module doc)."""

    name = "uniboost-decode"

    def __init__(
        self,
        config: GammaAdaConfig = DEFAULT_ADA,
        *,
        adaptive: bool = True,
        first_threshold: int = FIRST_THRESHOLD,
        factor: int = THRESHOLD_FACTOR,
    ) -> None:
        """Thresholds at first_threshold·factor^k generated tokens."""
        super().__init__(config, adaptive=adaptive)
        if first_threshold < 1 or factor < 2:
            raise HarnessUsageError("uniboost-decode: need first_threshold >= 1 and factor >= 2")
        self.first_threshold = first_threshold
        self.factor = factor
        self.guard_breaches = 0  # protected requests evicted because nothing else could go

    def start(self, jobs: list[Job], seed: int) -> None:
        """Every request's first threshold."""
        for job in jobs:
            job.next_threshold = self.first_threshold

    def key(self, job: Job, now: float) -> float:
        """Φ: as `uniboost` until the first threshold, then the Φ fixed at the last one."""
        if "phi" in job.note:
            return job.note["phi"]
        return super().key(job, now)

    def admitted(self, job: Job, now: float) -> None:
        """Dispatched or resumed: protected until its next threshold."""
        job.protected = True

    def threshold(self, job: Job, now: float) -> None:
        """Re-prioritise on tokens decoded, lift protection, set the next threshold."""
        job.note["phi"] = priority(job.entered, ALPHA * job.generated, self.gamma)
        job.protected = False
        while job.next_threshold <= job.generated:
            job.next_threshold *= self.factor

    def _ranked(self, jobs: list[Job], now: float, config: ServerConfig) -> list[Job]:
        def score(job: Job) -> tuple[float, int]:
            return (self.key(job, now) - preemption_cost(job, config), job.req.rid)

        return sorted(jobs, key=score, reverse=True)

    def victims(self, running: list[Job], now: float, config: ServerConfig) -> list[Job]:
        """Evictable requests by Φ − cost, then (counted) the protected ones."""
        free = [j for j in running if not j.protected]
        held = [j for j in running if j.protected]
        return self._ranked(free, now, config) + self._ranked(held, now, config)

    def preempted(self, job: Job, now: float) -> None:
        """Count a protected request's eviction as a guard breach."""
        if job.protected:
            self.guard_breaches += 1

    def make_room(
        self, head: Job, need: int, running: list[Job], now: float, config: ServerConfig
    ) -> list[Job]:
        """Evictable requests of larger Φ than `head`, if together they free `need` tokens."""
        phi = self.key(head, now)
        candidates = [
            j for j in self._ranked(running, now, config)
            if not j.protected and self.key(j, now) > phi
        ]  # fmt: skip
        chosen, freed = [], 0
        for job in candidates:
            if freed >= need:
                break
            chosen.append(job)
            freed += job.kv
        return chosen if freed >= need else []


def make_policy(
    name: str, *, gamma0: float = 10.0, adaptive: bool = True, sigma: float = SIGMA
) -> _Base:
    """The policy called `name`.

    Raises:
        HarnessUsageError: an unknown name.

    """
    if name not in POLICY_NAMES:
        raise HarnessUsageError(
            f"unknown serving policy '{name}'; choose one of: {', '.join(POLICY_NAMES)}"
        )
    if not (gamma0 > 0 and math.isfinite(gamma0)):
        raise HarnessUsageError(f"gamma0 must be a positive number, got {gamma0}")
    if adaptive:
        config = GammaAdaConfig(gamma0=gamma0)
    else:  # a fixed γ may lie outside the controller's clamp
        config = GammaAdaConfig(gamma0, gamma_min=min(1.0, gamma0), gamma_max=max(200.0, gamma0))
    if name == "fcfs":
        return Fcfs()
    if name == "srpt":
        return OracleSrpt()
    if name == "sjf":
        return NoisySjf(sigma)
    if name == "uniboost":
        return UniBoost(config, adaptive=adaptive)
    return UniBoostDecode(config, adaptive=adaptive)
