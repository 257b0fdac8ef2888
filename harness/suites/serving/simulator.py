"""A discrete-event LLM serving simulator: continuous batching under a KV-token budget (ours).

The model (spec §5.3; every constant here is ours, not the paper's):

- Time advances in engine steps. A step batches one token for every decoding request plus
  prefill chunks, at most `step_tokens` tokens in all (chunked prefill), and lasts
  c0 + c1·(batched tokens), plus the KV swap traffic of the step.
- A request's KV holds its whole context (prompt and tokens generated so far). Admitting it
  reserves its context; each generated token adds one. The total never exceeds `kv_budget`.
- A prefix-cache hit (drawn by the trace loader) means the cached prefix needs no prefill;
  its tokens still occupy KV.
- The last prefill chunk of a request emits its first token (TTFT); each decode step emits one.
  Time to last token (TTLT) is the end of the step that emits its last token.
- Before a step, if the decoders' next tokens do not fit, victims are preempted in the
  policy's order: "swap" moves their KV out (swap_cost s per token, and again on the way back,
  added to the step that moves it); "recompute" drops it and re-prefills prompt + generated
  (less the cached prefix) on resume, the last chunk emitting the next token.
- The waiting queue (new and preempted requests) is served in the policy's order, strictly:
  the head blocks those behind it (no skipping).

Steps that change nothing but decode progress (no prefill, no swap, no admission) are taken
in one jump to the next event: an arrival, a completion, a policy threshold, a controller
tick, or the KV budget filling. The result is the same as stepping one by one.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

Preemption = Literal["swap", "recompute"]


@dataclass(frozen=True, slots=True)
class Request:
    """One request of a workload.

    Attributes:
        rid: Its index in the workload (arrival order).
        arrival: Arrival time (s).
        prompt: Prompt tokens (>= 1).
        output: Output tokens to generate (>= 1).
        cached: Prompt tokens found in the prefix cache (0 <= cached < prompt).

    """

    rid: int
    arrival: float
    prompt: int
    output: int
    cached: int = 0


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """The simulated server (our constants, spec §5.3)."""

    kv_budget: int = 200_000  # KV tokens in all
    step_tokens: int = 2048  # batched tokens per step (decode tokens + prefill chunks)
    c0: float = 8e-3  # fixed cost of a step (s)
    c1: float = 0.06e-3  # cost per batched token (s)
    preemption: Preemption = "swap"  # what a preempted request's KV does
    swap_cost: float = 0.02e-3  # s per KV token moved, each way
    tensor_parallel: int = 1  # ranks; not timed, only checked (UniBoost refuses > 1 by default)

    def __post_init__(self) -> None:
        """Refuse a server that cannot run."""
        if self.kv_budget < 1 or self.step_tokens < 1 or self.tensor_parallel < 1:
            raise ValueError("kv_budget, step_tokens and tensor_parallel must be positive")
        if not (self.c0 > 0 and self.c1 >= 0 and self.swap_cost >= 0):
            raise ValueError("need c0 > 0, c1 >= 0, swap_cost >= 0")
        if self.preemption not in ("swap", "recompute"):
            raise ValueError(f"preemption must be 'swap' or 'recompute', got {self.preemption!r}")

    def token_cost(self) -> float:
        """Seconds per token when steps are full: c0/step_tokens + c1 (the load's unit)."""
        return self.c0 / self.step_tokens + self.c1


@dataclass(slots=True, eq=False)
class Job:
    """A request's state inside the simulator (mutable; policies read and mark it)."""

    req: Request
    state: str = "new"  # new, waiting, prefill, decode, swapped, done
    generated: int = 0  # output tokens emitted
    kv: int = 0  # KV tokens held (swapped: held on the host)
    prefill_left: int = 0  # tokens still to prefill before the next token
    entered: float = 0.0  # when it (first) entered the wait queue: Φ's a
    wait_since: float = 0.0  # when it last entered the wait queue
    waited: float = 0.0  # total time waiting (initial and after preemptions)
    first_token: float = math.nan
    finish: float = math.nan
    preemptions: int = 0
    key: float = 0.0  # the policy's last key (smaller first)
    protected: bool = False  # the policy says: not evictable now
    next_threshold: int = 0  # generated count at which the policy re-prioritises (0: never)
    note: dict[str, float] = field(default_factory=dict)  # policy state (predictions)

    @property
    def context(self) -> int:
        """Prompt plus tokens generated so far."""
        return self.req.prompt + self.generated

    @property
    def uncached(self) -> int:
        """Context less the cached prefix: the work UniBoost's w counts."""
        return self.context - self.req.cached


class Policy(Protocol):
    """What the simulator asks of a scheduling policy (see `harness.suites.serving.policies`)."""

    name: str

    def start(self, jobs: list[Job], seed: int) -> None:
        """Before the run: set each job's policy state (predictions, thresholds)."""

    def key(self, job: Job, now: float) -> float:
        """The waiting-queue key of `job` now (smaller is served first)."""

    def victims(self, running: list[Job], now: float, config: ServerConfig) -> list[Job]:
        """Running jobs in the order to preempt them on KV pressure (first goes first)."""

    def make_room(
        self, head: Job, need: int, running: list[Job], now: float, config: ServerConfig
    ) -> list[Job]:
        """Running jobs to preempt so that `head` (needing `need` more KV) is admitted; []: wait."""

    def admitted(self, job: Job, now: float) -> None:
        """`job` was dispatched (new) or resumed (after preemption)."""

    def preempted(self, job: Job, now: float) -> None:
        """`job` is being preempted (still marked as it ran)."""

    def threshold(self, job: Job, now: float) -> None:
        """`job` reached `job.next_threshold` generated tokens."""

    def finished(self, job: Job, now: float) -> None:
        """`job` emitted its last token at `now`."""

    def tick(self, now: float) -> bool:
        """Run controller updates due by `now`; True when waiting keys must be recomputed."""

    def next_tick(self) -> float:
        """When the next controller update is due (inf: none)."""


@dataclass(frozen=True, slots=True)
class SimResult:
    """What a run measured; per-request arrays are indexed by `Request.rid`.

    Attributes:
        policy: The policy's name.
        arrival: Arrival times (s).
        ttft: Time to first token (s).
        ttlt: Time to last token, i.e. end-to-end latency (s).
        waited: Total time each request spent in the wait queue (s).
        preemptions: Times each request was preempted.
        admission_order: Request ids in the order they were first admitted.
        finish_order: Request ids in the order they finished (each exactly once).
        prefill_tokens: Prefill tokens computed (first prefills and recomputes).
        recompute_tokens: Prefill assigned again after preemptions that dropped KV.
        dropped_tokens: Prefill assigned but never computed (preempted mid-prefill).
        decode_tokens: Tokens emitted by decode steps.
        prefill_emits: Tokens emitted by last prefill chunks.
        swapped_tokens: KV tokens moved out and back in, counted each way.
        steps: Engine steps taken (a jump counts its steps).
        passes: Scheduling passes made (a jump is one).
        busy_time: Seconds the engine spent in steps.
        max_kv: The most KV tokens held at once.
        end: Time the last request finished.

    """

    policy: str
    arrival: np.ndarray
    ttft: np.ndarray
    ttlt: np.ndarray
    waited: np.ndarray
    preemptions: np.ndarray
    admission_order: tuple[int, ...]
    finish_order: tuple[int, ...]
    prefill_tokens: int
    recompute_tokens: int
    dropped_tokens: int
    decode_tokens: int
    prefill_emits: int
    swapped_tokens: int
    steps: int
    passes: int
    busy_time: float
    max_kv: int
    end: float


def _check(requests: list[Request], config: ServerConfig) -> None:
    for i, r in enumerate(requests):
        if r.rid != i:
            raise ValueError(f"request {i} has rid {r.rid}; rids must be 0..n-1 in order")
        if r.prompt < 1 or r.output < 1 or not 0 <= r.cached < r.prompt:
            raise ValueError(f"request {i}: need prompt >= 1, output >= 1, 0 <= cached < prompt")
        if r.prompt + r.output > config.kv_budget:
            raise ValueError(f"request {i} needs {r.prompt + r.output} KV tokens > kv_budget")
        if i and r.arrival < requests[i - 1].arrival:
            raise ValueError("requests must be in arrival order")


class _Engine:
    """One run's mutable state; `simulate` is its interface."""

    def __init__(self, requests: list[Request], policy: Policy, config: ServerConfig) -> None:
        self.cfg = config
        self.policy = policy
        self.jobs = [Job(r) for r in requests]
        self.now = 0.0
        self.next_arrival = 0
        self.heap: list[tuple[float, int, Job]] = []
        self.running: list[Job] = []  # prefill and decode, in admission order
        self.kv_used = 0
        self.max_kv = 0
        self.admission: list[int] = []
        self.finished: list[int] = []
        self.counts = dict(
            prefill=0, recompute=0, dropped=0, decode=0, emits=0, swapped=0, steps=0, passes=0
        )
        self.busy = 0.0

    # -- the wait queue ------------------------------------------------------------------
    def _push(self, job: Job) -> None:
        job.key = self.policy.key(job, self.now)
        heapq.heappush(self.heap, (job.key, job.req.rid, job))

    def _rekey(self) -> None:
        waiting = [j for _, _, j in self.heap]
        self.heap = []
        for job in waiting:
            self._push(job)

    def _enqueue(self, job: Job, state: str) -> None:
        job.state = state
        job.wait_since = self.now
        self._push(job)

    def _arrivals(self) -> None:
        while self.next_arrival < len(self.jobs):
            job = self.jobs[self.next_arrival]
            if job.req.arrival > self.now:
                break
            job.entered = job.req.arrival
            self._enqueue(job, "waiting")
            job.wait_since = job.req.arrival
            self.next_arrival += 1

    # -- preemption ----------------------------------------------------------------------
    def _preempt(self, job: Job) -> float:
        """Take `job` off the engine; returns the swap time it costs this step."""
        self.policy.preempted(job, self.now)
        self.running.remove(job)
        self.kv_used -= job.kv
        job.preemptions += 1
        cost = 0.0
        if self.cfg.preemption == "swap" and job.state == "decode":
            self.counts["swapped"] += job.kv
            cost = self.cfg.swap_cost * job.kv
            self._enqueue(job, "swapped")
        else:  # recompute, or a request caught mid-prefill: its KV is dropped
            if job.state == "prefill":
                self.counts["dropped"] += job.prefill_left  # never computed
            job.kv = 0
            job.prefill_left = job.uncached
            self.counts["recompute"] += job.prefill_left
            self._enqueue(job, "waiting")
        return cost

    def _admit(self, job: Job) -> float:
        heapq.heappop(self.heap)
        first = job.state == "waiting" and job.generated == 0 and job.preemptions == 0
        if first:
            self.admission.append(job.req.rid)
        job.waited += self.now - job.wait_since
        cost = 0.0
        if job.state == "swapped":
            self.counts["swapped"] += job.kv
            cost = self.cfg.swap_cost * job.kv
            job.state = "decode"
        else:
            job.kv = job.context
            job.state = "prefill"
            if first:
                job.prefill_left = job.req.prompt - job.req.cached
        self.kv_used += job.kv
        self.max_kv = max(self.max_kv, self.kv_used)
        self.running.append(job)
        self.policy.admitted(job, self.now)
        return cost

    # -- one pass ------------------------------------------------------------------------
    def _emit(self, job: Job, end: float) -> None:
        job.generated += 1
        job.kv += 1
        self.kv_used += 1
        if job.generated == 1:
            job.first_token = end
        if job.generated == job.req.output:
            job.state = "done"
            job.finish = end
            self.running.remove(job)
            self.kv_used -= job.kv
            self.finished.append(job.req.rid)
            self.policy.finished(job, end)
        elif job.next_threshold and job.generated >= job.next_threshold:
            self.policy.threshold(job, end)

    def _jump(self, decoders: list[Job]) -> int:
        """Steps that can be taken at once from now: only decoding, nothing else due."""
        d = len(decoders)
        dt = self.cfg.c0 + self.cfg.c1 * d
        k = min(j.req.output - j.generated for j in decoders)
        k = min(k, (self.cfg.kv_budget - self.kv_used) // d)
        for j in decoders:
            if j.next_threshold:
                k = min(k, j.next_threshold - j.generated)
        due = [self.policy.next_tick()]
        if self.next_arrival < len(self.jobs):
            due.append(self.jobs[self.next_arrival].req.arrival)
        for t in due:
            if t < math.inf:
                k = min(k, max(1, math.ceil((t - self.now) / dt)))
        return max(1, k)

    def step(self) -> bool:
        """Run one scheduling pass and its steps; False when every request is done."""
        self.counts["passes"] += 1
        self._arrivals()
        if self.policy.tick(self.now):
            self._rekey()
        if not self.running and not self.heap:
            if self.next_arrival >= len(self.jobs):
                return False
            self.now = max(self.now, self.jobs[self.next_arrival].req.arrival)
            return True
        swap_time = 0.0
        decoders = [j for j in self.running if j.state == "decode"]
        if self.kv_used + len(self.running) > self.cfg.kv_budget:  # each may emit a token
            for victim in self.policy.victims(list(self.running), self.now, self.cfg):
                if self.kv_used + len(self.running) <= self.cfg.kv_budget:
                    break
                swap_time += self._preempt(victim)
            decoders = [j for j in self.running if j.state == "decode"]
        budget = self.cfg.step_tokens - len(decoders)
        chunks: list[tuple[Job, int]] = []
        for job in self.running:
            if job.state == "prefill" and budget > 0:
                take = min(job.prefill_left, budget)
                chunks.append((job, take))
                budget -= take
        admitted = False
        while self.heap and budget > 0:
            head = self.heap[0][2]
            # its KV, one token for each running request's emission this step, and its own
            need = head.kv if head.state == "swapped" else head.context + 1
            short = self.kv_used + len(self.running) + need - self.cfg.kv_budget
            if short > 0:
                room = self.policy.make_room(head, short, list(self.running), self.now, self.cfg)
                if not room:
                    break
                for victim in room:
                    swap_time += self._preempt(victim)
                decoders = [j for j in decoders if j in self.running]
                kept = [(j, t) for j, t in chunks if j in self.running]
                budget = self.cfg.step_tokens - len(decoders) - sum(t for _, t in kept)
                chunks = kept
                continue
            swap_time += self._admit(head)
            admitted = True
            if head.state == "prefill":
                take = min(head.prefill_left, budget)
                chunks.append((head, take))
                budget -= take
        if not decoders and not chunks:
            # everything admitted is swapped back in and decodes from the next step
            self.now += swap_time
            self.busy += swap_time
            return True
        if not chunks and not admitted and swap_time == 0.0:
            k = self._jump(decoders)
        else:
            k = 1
        batched = len(decoders) + sum(t for _, t in chunks)
        dt = k * (self.cfg.c0 + self.cfg.c1 * batched) + swap_time
        end = self.now + dt
        self.counts["steps"] += k
        self.busy += dt
        for job, take in chunks:
            job.prefill_left -= take
            self.counts["prefill"] += take
        for job in decoders:
            if k > 1:  # the k - 1 steps before the last emit nothing but tokens
                job.generated += k - 1
                job.kv += k - 1
                self.kv_used += k - 1
            self.counts["decode"] += k
            self._emit(job, end)
        for job, _ in chunks:
            if job.prefill_left == 0 and job.state == "prefill":
                job.state = "decode"
                self.counts["emits"] += 1
                self._emit(job, end)
        self.max_kv = max(self.max_kv, self.kv_used)
        self.now = end
        return True


def simulate(
    requests: list[Request], policy: Policy, config: ServerConfig, *, seed: int = 0
) -> SimResult:
    """Serve `requests` (in arrival order, rids 0..n-1) under `policy` until all are done.

    Raises:
        ValueError: a malformed workload, or a request larger than the KV budget.

    """
    _check(requests, config)
    engine = _Engine(requests, policy, config)
    policy.start(engine.jobs, seed)
    while engine.step():
        pass
    jobs = engine.jobs
    arrival = np.array([j.req.arrival for j in jobs])
    c = engine.counts
    return SimResult(
        policy=policy.name,
        arrival=arrival,
        ttft=np.array([j.first_token for j in jobs]) - arrival,
        ttlt=np.array([j.finish for j in jobs]) - arrival,
        waited=np.array([j.waited for j in jobs]),
        preemptions=np.array([j.preemptions for j in jobs]),
        admission_order=tuple(engine.admission),
        finish_order=tuple(engine.finished),
        prefill_tokens=c["prefill"],
        recompute_tokens=c["recompute"],
        dropped_tokens=c["dropped"],
        decode_tokens=c["decode"],
        prefill_emits=c["emits"],
        swapped_tokens=c["swapped"],
        steps=c["steps"],
        passes=c["passes"],
        busy_time=engine.busy,
        max_kv=engine.max_kv,
        end=engine.now,
    )
