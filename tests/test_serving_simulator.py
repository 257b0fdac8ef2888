"""The serving simulator's invariants: every request served once, tokens conserved, KV within
budget, FCFS order under FCFS, jumps equal to single steps, and the γ limits of UniBoost."""

import numpy as np
import pytest

from harness.errors import HarnessUsageError
from harness.suites.serving import simulator
from harness.suites.serving.boost import ALPHA, priority
from harness.suites.serving.policies import POLICY_NAMES, UniBoostDecode, make_policy
from harness.suites.serving.simulator import Job, Request, ServerConfig, simulate


def workload(n=400, seed=0, load_rate=6.0, cache=0.3) -> list[Request]:
    rng = np.random.default_rng(seed)
    prompt = rng.integers(20, 3000, n)
    output = rng.integers(1, 400, n)
    arrival = np.cumsum(rng.exponential(1.0 / load_rate, n))
    cached = np.where(rng.random(n) < cache, prompt // 2, 0)
    return [
        Request(i, float(arrival[i]), int(prompt[i]), int(output[i]), int(cached[i]))
        for i in range(n)
    ]


TIGHT = dict(kv_budget=20_000, step_tokens=1024)  # forces preemptions at this rate


def check_invariants(reqs: list[Request], r: simulator.SimResult, config: ServerConfig) -> None:
    n = len(reqs)
    assert sorted(r.finish_order) == list(range(n))  # none lost, none served twice
    assert sorted(r.admission_order) == list(range(n))
    prompt = sum(q.prompt - q.cached for q in reqs)
    assert r.prefill_tokens == prompt + r.recompute_tokens - r.dropped_tokens
    assert r.decode_tokens + r.prefill_emits == sum(q.output for q in reqs)
    assert r.max_kv <= config.kv_budget
    assert np.all(np.isfinite(r.ttlt)) and np.all(r.ttft > 0) and np.all(r.ttlt >= r.ttft)
    # each request's last token needs at least its own decode steps after the first
    least = np.array([(q.output - 1) * config.c0 for q in reqs])
    assert np.all(r.ttlt - r.ttft >= least - 1e-9)
    assert r.busy_time <= r.end + 1e-9


@pytest.mark.parametrize("preemption", ["swap", "recompute"])
@pytest.mark.parametrize("name", POLICY_NAMES)
def test_every_request_once_and_tokens_conserved(name, preemption):
    reqs = workload()
    config = ServerConfig(preemption=preemption, **TIGHT)
    r = simulate(reqs, make_policy(name), config, seed=1)
    check_invariants(reqs, r, config)
    assert r.preemptions.sum() > 0  # the test exercised preemption
    if preemption == "swap":
        assert r.swapped_tokens > 0
    else:
        assert r.recompute_tokens > 0 and r.swapped_tokens == 0


def test_fcfs_admits_in_arrival_order_even_with_preemptions():
    reqs = workload(seed=3)
    for preemption in ("swap", "recompute"):
        r = simulate(reqs, make_policy("fcfs"), ServerConfig(preemption=preemption, **TIGHT))
        assert r.admission_order == tuple(range(len(reqs)))
        assert r.preemptions.sum() > 0


def test_fcfs_first_tokens_in_arrival_order_when_prefill_fits_one_step():
    # prompts <= step budget and light load: every prefill completes in its admission step
    reqs = [Request(i, 0.05 * i, 100 + (37 * i) % 900, 5 + (11 * i) % 50) for i in range(300)]
    r = simulate(reqs, make_policy("fcfs"), ServerConfig())
    first = r.arrival + r.ttft
    assert np.all(np.diff(first) >= 0)


def test_jumps_equal_single_steps(monkeypatch):
    reqs = workload(n=200, seed=5)
    config = ServerConfig(**TIGHT)
    for name in POLICY_NAMES:
        jumped = simulate(reqs, make_policy(name), config, seed=2)
        with monkeypatch.context() as m:
            m.setattr(simulator._Engine, "_jump", lambda self, decoders: 1)
            stepped = simulate(reqs, make_policy(name), config, seed=2)
        assert jumped.admission_order == stepped.admission_order
        assert jumped.steps == stepped.steps
        # k·dt against k additions of dt: rounding grows with the number of steps
        tol = 4 * np.finfo(float).eps * stepped.steps * stepped.end
        np.testing.assert_allclose(jumped.ttlt, stepped.ttlt, rtol=0, atol=tol)
        assert jumped.passes < stepped.passes / 2  # the jumps did skip passes


def burst() -> list[Request]:
    """Request 0 alone at t = 0; 40 more arrive during its first step and wait together."""
    rng = np.random.default_rng(11)
    uncached = rng.permutation(np.arange(1000, 1000 + 40 * 37, 37))  # distinct, >= 1000
    outputs = rng.permutation(np.arange(10, 10 + 40 * 3, 3))  # distinct
    reqs = [Request(0, 0.0, 1500, 50)]
    for i in range(40):
        reqs.append(Request(i + 1, 1e-4 * (i + 1), int(uncached[i]), int(outputs[i])))
    return reqs


def test_uniboost_large_gamma_is_fcfs_and_small_gamma_is_sjf_on_uncached_tokens():
    reqs = burst()
    config = ServerConfig(step_tokens=2048)
    fcfs = simulate(reqs, make_policy("fcfs"), config)
    big = simulate(reqs, make_policy("uniboost", gamma0=1e3, adaptive=False), config)
    small = simulate(reqs, make_policy("uniboost", gamma0=1e-6, adaptive=False), config)
    assert big.admission_order == fcfs.admission_order == tuple(range(41))
    waiting = sorted(range(1, 41), key=lambda i: reqs[i].prompt - reqs[i].cached)
    assert small.admission_order == (0, *waiting)


def test_srpt_serves_the_waiting_by_true_output():
    reqs = burst()
    r = simulate(reqs, make_policy("srpt"), ServerConfig())
    assert r.admission_order == (0, *sorted(range(1, 41), key=lambda i: reqs[i].output))


def test_noisy_sjf_follows_its_predictions_and_they_are_seeded():
    reqs = burst()
    a = simulate(reqs, make_policy("sjf"), ServerConfig(), seed=4)
    b = simulate(reqs, make_policy("sjf"), ServerConfig(), seed=4)
    c = simulate(reqs, make_policy("sjf"), ServerConfig(), seed=5)
    truth = (0, *sorted(range(1, 41), key=lambda i: reqs[i].output))
    assert a.admission_order == b.admission_order
    assert a.admission_order != c.admission_order  # σ = 0.5 reorders 40 requests
    assert a.admission_order != truth


def test_decode_boosting_thresholds_and_memguard():
    policy = UniBoostDecode(adaptive=False)
    jobs = [Job(Request(i, 0.1 * i, 2000, 500)) for i in range(3)]
    policy.start(jobs, 0)
    for job in jobs:
        job.entered = job.req.arrival
    config = ServerConfig()
    a, b, c = jobs
    assert a.next_threshold == 16
    policy.admitted(a, 0.0)
    assert a.protected  # not evictable until its next threshold
    a.generated = 16
    policy.threshold(a, 1.0)
    assert not a.protected and a.next_threshold == 32
    assert a.note["phi"] == priority(0.0, ALPHA * 16, 10.0)  # w = α·tokens decoded
    # a waiting request of smaller Φ may evict an evictable one of larger Φ, never a protected one
    policy.admitted(b, 0.1)
    a.kv = b.kv = 2016
    c.entered = -100.0  # waited long: smallest Φ
    assert policy.make_room(c, 1000, [a, b], 2.0, config) == [a]
    assert policy.make_room(c, 3000, [a, b], 2.0, config) == []  # a alone cannot free it
    assert policy.victims([b, a], 2.0, config) == [a, b]  # evictable first
    policy.preempted(b, 2.0)
    assert policy.guard_breaches == 1  # b was protected


def test_decode_boosting_serves_everyone_under_pressure():
    reqs = workload(seed=8)
    policy = UniBoostDecode()
    config = ServerConfig(preemption="recompute", **TIGHT)
    r = simulate(reqs, policy, config)
    check_invariants(reqs, r, config)
    assert r.preemptions.sum() > 0


def test_bad_workloads_and_names():
    with pytest.raises(ValueError, match="KV"):
        simulate([Request(0, 0.0, 150, 60)], make_policy("fcfs"), ServerConfig(kv_budget=200))
    with pytest.raises(ValueError, match="arrival order"):
        simulate(
            [Request(0, 1.0, 5, 5), Request(1, 0.5, 5, 5)], make_policy("fcfs"), ServerConfig()
        )
    with pytest.raises(HarnessUsageError, match="unknown serving policy"):
        make_policy("lifo")
    with pytest.raises(ValueError):
        ServerConfig(preemption="drop")
