"""A non-preemptive single-server queue (M/G/1) under FCFS, SJF and γ-Boost: spec §5.2's check.

Jobs arrive at given times with given sizes; whenever the server frees, it starts the waiting
job of least key: arrival time (FCFS), size (SJF, the true size), or Φ = a − b_γ(size)
(γ-Boost, `harness.suites.serving.boost`). Ties go to the earlier arrival. The check's numbers
(P99 ≈ 23 for FCFS at load 0.8 with Exp(1) sizes) are the spec's, derived there; they are not
the paper's.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.suites.serving.boost import boost

Rule = Literal["fcfs", "sjf", "boost"]
RULES: tuple[str, ...] = ("fcfs", "sjf", "boost")


@dataclass(frozen=True, slots=True)
class QueueRun:
    """One run of the queue.

    Attributes:
        order: Job indices in the order service started.
        start: Service start time of each job (indexed by job).
        response: Completion minus arrival of each job.

    """

    order: np.ndarray
    start: np.ndarray
    response: np.ndarray

    def percentile(self, q: float) -> float:
        """The q-th percentile of response time (linear interpolation)."""
        return float(np.percentile(self.response, q))


def poisson_jobs(
    n: int, load: float, sizes: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times of a Poisson process at rate load/mean(size), and the sizes given."""
    gaps = rng.exponential(float(np.mean(sizes)) / load, size=n)  # (n,)
    return np.cumsum(gaps), sizes


def serve(arrivals: np.ndarray, sizes: np.ndarray, rule: Rule, gamma: float = 1.0) -> QueueRun:
    """Run the non-preemptive queue; `arrivals` must be non-decreasing.

    Raises:
        ValueError: an unknown rule, arrays of different lengths, or unsorted arrivals.

    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    a = np.asarray(arrivals, dtype=float)
    s = np.asarray(sizes, dtype=float)
    if a.shape != s.shape or a.ndim != 1:
        raise ValueError(f"need one size per arrival, got {a.shape} and {s.shape}")
    if np.any(np.diff(a) < 0):
        raise ValueError("arrivals must be non-decreasing")
    if rule == "fcfs":
        keys = a
    elif rule == "sjf":
        keys = s
    else:
        keys = a - np.array([boost(float(x), gamma) for x in s])
    n = len(a)
    start = np.empty(n)
    order = np.empty(n, dtype=np.int64)
    waiting: list[tuple[float, int]] = []
    free_at = 0.0
    nxt = 0
    for k in range(n):
        if not waiting and nxt < n and a[nxt] > free_at:
            free_at = a[nxt]  # idle until the next arrival
        while nxt < n and a[nxt] <= free_at:
            heapq.heappush(waiting, (keys[nxt], nxt))
            nxt += 1
        _, job = heapq.heappop(waiting)
        start[job] = free_at
        order[k] = job
        free_at += s[job]
    return QueueRun(order, start, start + s - a)
