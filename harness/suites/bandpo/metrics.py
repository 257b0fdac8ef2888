"""What the report reads off one run, per experiment: each metric's value for one seed.

Every metric is a function of one finished run's dict (what `train_bandit` or `train_rlvr`
returned), or None where the run does not define it (a bin no token fell in).

- bandit: iterations to p_best > 0.5 (a run that never got there counts as its budget, so the
  mean is a lower bound on the true mean; the report also gives the median, the share reached
  and the count), the clip fraction, p_best at the end;
- RLVR: mean@n (the final success rate over n responses per target), the unbiased pass@k of
  Chen et al. averaged over targets (`harness.stats._pass_at_k`), verl's "best@k" in
  expectation (k draws with replacement from the n responses: 1 - (1 - c/n)^k per target; the
  convention the authors' logs report, reconstructed from its description), the sampler's
  token entropy at the end and averaged over training, the clip fraction overall and in each
  old-probability bin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.stats import pass_at_k

PASS_KS = (1, 4, 16)  # pass@k reported (those <= n)
BIN_LABELS = ("[0, 0.2)", "[0.2, 0.4)", "[0.4, 0.6)", "[0.6, 0.8)", "[0.8, 1]")


@dataclass(frozen=True)
class Metric:
    """One number per seed, and how the engine treats it (data only: results hold these)."""

    key: str  # short name, used in claims
    label: str  # column heading
    score: str  # "bounded" (in [0, 1]) or "unbounded" (then >= 0: iterations, nats)
    direction: str = "higher"  # which way is better ("lower" for iterations to the target)


Value = Callable[[dict[str, Any]], float | None]  # run -> value (None: undefined)


def _iterations(run: dict[str, Any]) -> float:
    hit = run["iterations_to_target"]
    return float(hit if hit is not None else len(run["p_best"]))


BANDIT_METRICS: tuple[tuple[Metric, Value], ...] = (
    (Metric("iterations", "iterations to p_best > 0.5 (never: budget)", "unbounded", "lower"),
     _iterations),
    (Metric("clip", "clip fraction", "bounded"), lambda r: r["clip_fraction"]),
    (Metric("p_end", "p_best at the end", "bounded"), lambda r: r["final_p_best"]),
)  # fmt: skip


def pass_k(run: dict[str, Any], k: int) -> float:
    """Unbiased pass@k averaged over the evaluation targets."""
    n = run["eval_samples"]
    return float(np.mean([pass_at_k(n, c, k) for c in run["final_correct"]]))


def best_k(run: dict[str, Any], k: int) -> float:
    """The verl bootstrap best@k in expectation, averaged over targets (binary rewards)."""
    n = run["eval_samples"]
    return float(np.mean([1.0 - (1.0 - c / n) ** k for c in run["final_correct"]]))


def _bin(index: int) -> Callable[[dict[str, Any]], float | None]:
    def value(run: dict[str, Any]) -> float | None:
        tokens = run["bin_tokens"][index]
        return run["bin_clipped"][index] / tokens if tokens else None

    return value


def rlvr_metrics(n: int) -> tuple[tuple[Metric, Value], ...]:
    """The RLVR metrics for n responses per target, each with its reader."""
    ks = [k for k in PASS_KS if k <= n]
    out: list[tuple[Metric, Value]] = [
        (Metric("mean", f"mean@{n}", "bounded"), lambda r: r["final_mean"])
    ]
    out += [(Metric(f"pass{k}", f"pass@{k} (unbiased)", "bounded"),
             lambda r, k=k: pass_k(r, k)) for k in ks if k > 1]  # fmt: skip
    out += [
        (Metric(f"best{n}", f"best@{n} (verl bootstrap, expected)", "bounded"),
         lambda r: best_k(r, n)),
        (Metric("entropy", "token entropy at the end (nats)", "unbounded"),
         lambda r: r["final_entropy"]),
        (Metric("entropy_avg", "token entropy, mean over training", "unbounded"),
         lambda r: float(np.mean(r["entropy"]))),
        (Metric("clip", "clip fraction", "bounded"), lambda r: r["clip_fraction"]),
    ]  # fmt: skip
    out += [(Metric(f"bin{i}", f"clip fraction, old p in {label}", "bounded"), _bin(i))
            for i, label in enumerate(BIN_LABELS)]  # fmt: skip
    return tuple(out)
