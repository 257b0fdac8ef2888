"""Speed of the statistics on large inputs, each beside a naive Python loop, in one process.

1. A Wilson interval and a calibrated (Rogan-Gladen) estimate over 10**6 items. Target < 50 ms.
2. A paired bootstrap of a difference, 10,000 resamples over 10**4 items, vectorised.
   Target < 1 s.

Usage: python benchmarks/stats.py
"""

from __future__ import annotations

import math
import time

import numpy as np

from harness.stats import rogan_gladen_from_labels, wilson
from harness.stats._paired import paired_bootstrap_diff  # an internal routine, timed


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def naive_wilson(items: list[int]) -> tuple[float, float]:
    k = 0
    for x in items:
        k += x
    n = len(items)
    p, z = k / n, 1.959963984540054
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def naive_rogan_gladen(test: list[int], human: list[int], judge: list[int]) -> float:
    p = sum(test) / len(test)
    tn = tp = m1 = 0
    for h, j in zip(human, judge, strict=True):
        m1 += h
        tp += h and j
        tn += (not h) and (not j)
    q0, q1 = tn / (len(human) - m1), tp / m1
    return min(1.0, max(0.0, (p + q0 - 1) / (q0 + q1 - 1)))


def naive_bootstrap(a: list[float], b: list[float], resamples: int, seed: int = 0) -> list[float]:
    import random

    rng = random.Random(seed)
    n = len(a)
    out = []
    for _ in range(resamples):
        s = 0.0
        for _ in range(n):
            i = rng.randrange(n)
            s += a[i] - b[i]
        out.append(s / n)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    n = 10**6
    test = rng.binomial(1, 0.4, n)
    human = rng.binomial(1, 0.5, n)
    judge = np.where(human == 1, rng.binomial(1, 0.9, n), rng.binomial(1, 0.3, n))

    t_wilson = best_of(lambda: wilson(int(test.sum()), n))
    t_rg = best_of(lambda: rogan_gladen_from_labels(test, human, judge))
    test_list = test.tolist()
    t_naive = best_of(lambda: naive_wilson(test_list), repeats=1)
    print(f"Wilson over 10^6 items        : {t_wilson * 1e3:8.2f} ms (target < 50 ms)")
    print(f"Rogan-Gladen over 10^6 items  : {t_rg * 1e3:8.2f} ms (target < 50 ms)")
    ratio = t_naive / t_wilson
    print(f"naive Python loop, Wilson     : {t_naive * 1e3:8.2f} ms -> ratio {ratio:.0f}x")
    lists = (test_list, human.tolist(), judge.tolist())
    t_naive_rg = best_of(lambda: naive_rogan_gladen(*lists), repeats=1)
    ratio = t_naive_rg / t_rg
    print(f"naive Python loop, RG (point) : {t_naive_rg * 1e3:8.2f} ms -> ratio {ratio:.0f}x")

    m, resamples = 10**4, 10**4
    a = rng.binomial(1, 0.7, m).astype(float)
    b = rng.binomial(1, 0.65, m).astype(float)
    t_boot = best_of(lambda: paired_bootstrap_diff(a, b, n_resamples=resamples), repeats=2)
    # the naive loop at 1% of the resamples, scaled up: running it whole takes minutes
    t_naive_boot = (
        best_of(lambda: naive_bootstrap(a.tolist(), b.tolist(), resamples // 100), repeats=1) * 100
    )
    print(f"paired bootstrap 10^4 x 10^4  : {t_boot * 1e3:8.1f} ms (target < 1000 ms; 0/1 scores)")
    ca, cb = rng.normal(0.7, 0.2, m), rng.normal(0.65, 0.2, m)
    t_cont = best_of(lambda: paired_bootstrap_diff(ca, cb, n_resamples=resamples), repeats=2)
    print(f"  same, continuous scores     : {t_cont * 1e3:8.1f} ms (target < 1000 ms)")
    print(
        f"naive Python loop (scaled)    : {t_naive_boot * 1e3:8.0f} ms -> ratio "
        f"{t_naive_boot / t_boot:.0f}x"
    )


if __name__ == "__main__":
    main()
