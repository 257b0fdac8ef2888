"""The power model of a KGW watermark (reconstructed, ours: specs/provenance.md §2).

Paper (A) (Wang et al., ICML 2026) claims explicit relations between (gamma, delta), power and
distortion; only its abstract was read, so everything here is our reconstruction:

- one position with green mass G under the unwatermarked distribution is green with
  probability pi(G) = e^delta G / (e^delta G + 1 - G), at a distortion
  KL(p_wm || p) = delta pi(G) - log(1 + (e^delta - 1) G) nats (`green_probability`, `kl`);
- the entropy model U_k: p uniform on k tokens, each green i.i.d. Bernoulli(gamma)
  (`uniform_model`);
- KGW's Theorem 4.2 lower bound on the expected green rate through the spike entropy
  (`kgw_bound`);
- the green count of n scored tokens is Poisson-binomial in the per-position probabilities,
  and power is its tail at the exact test's critical count (`poisson_binomial_sf`,
  `exact_power`); the normal form and the tokens needed (`normal_power`, `tokens_needed`).

References:
    Kirchenbauer et al., "A Watermark for Large Language Models", arXiv 2301.10226, Thm 4.2.

"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from harness.suites.provenance.detect import critical_count


def green_probability(green_mass: np.ndarray | float, delta: float) -> np.ndarray:
    """pi(G): the chance the watermarked step emits a green token, elementwise."""
    g = np.asarray(green_mass, dtype=np.float64)
    e = math.exp(delta)
    return e * g / (e * g + 1.0 - g)


def kl(green_mass: np.ndarray | float, delta: float) -> np.ndarray:
    """KL(p_wm || p) in nats at green mass G, elementwise (exact for the logit tilt)."""
    g = np.asarray(green_mass, dtype=np.float64)
    return delta * green_probability(g, delta) - np.log1p(math.expm1(delta) * g)


def kl_of(p: np.ndarray, p_wm: np.ndarray) -> np.ndarray:
    """KL(p_wm || p) over the last axis, brute force (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p_wm > 0, p_wm * (np.log(p_wm) - np.log(p)), 0.0)
    return terms.sum(-1)


def spike_entropy(p: np.ndarray, zeta: float) -> np.ndarray:
    """S(p, zeta) = sum_v p_v / (1 + zeta p_v) over the last axis."""
    return (p / (1.0 + zeta * p)).sum(-1)


def kgw_bound(p: np.ndarray, gamma: float, delta: float) -> np.ndarray:
    """KGW Thm 4.2's lower bound on P(green) per distribution (last axis)."""
    e = math.exp(delta)
    zeta = (1 - gamma) * (e - 1) / (1 + (e - 1) * gamma)
    return gamma * e / (1 + (e - 1) * gamma) * spike_entropy(p, zeta)


@dataclass(frozen=True, slots=True)
class UniformModel:
    """The entropy model U_k at one (gamma, delta).

    Attributes:
        green_rate: p-bar, the key-averaged chance a position is green.
        kl: Mean KL(p_wm || p) per position, nats.
        bound: KGW's bound on the green rate for the uniform distribution on k tokens.

    """

    green_rate: float
    kl: float
    bound: float


def uniform_model(k: int, gamma: float, delta: float) -> UniformModel:
    """U_k: p uniform on k tokens, each green i.i.d. Bernoulli(gamma); J ~ Bin(k, gamma) green."""
    j = np.arange(k + 1)
    weights = stats.binom.pmf(j, k, gamma)
    g = j / k
    rate = float((weights * green_probability(g, delta)).sum())
    return UniformModel(rate, float((weights * kl(g, delta)).sum()),
                        float(kgw_bound(np.full(k, 1.0 / k), gamma, delta)))  # fmt: skip


def poisson_binomial_sf(probs: np.ndarray, c: int | np.ndarray) -> np.ndarray:
    """P(sum of independent Bernoulli(probs[..., i]) >= c), by dynamic programming.

    Args:
        probs: (N, n) success probabilities, one row per count.
        c: The threshold, a scalar or one per row.

    Returns:
        (N,) tail probabilities.

    """
    probs = np.atleast_2d(np.asarray(probs, dtype=np.float64))
    rows, n = probs.shape
    dist = np.zeros((rows, n + 1))
    dist[:, 0] = 1.0
    for i in range(n):
        p = probs[:, i : i + 1]
        dist[:, 1 : i + 2] = dist[:, 1 : i + 2] * (1 - p) + dist[:, : i + 1] * p
        dist[:, 0] *= 1 - p[:, 0]
    c = np.broadcast_to(np.asarray(c), (rows,))
    cum = np.concatenate([np.cumsum(dist[:, ::-1], axis=1)[:, ::-1], np.zeros((rows, 1))], 1)
    return cum[np.arange(rows), np.clip(c, 0, n + 1)]


def exact_power(rate: float, n: int, gamma: float, alpha: float) -> float:
    """P(Bin(n, rate) >= c_alpha(n)): power of the exact test when every position has `rate`."""
    return float(stats.binom.sf(critical_count(n, gamma, alpha) - 1, n, rate))


def normal_power(rate: float, n: int, gamma: float, alpha: float) -> float:
    """The normal form: Phi((n(p - gamma) - z_a sqrt(n gamma(1-gamma))) / sqrt(n p(1-p)))."""
    z_a = stats.norm.isf(alpha)
    num = n * (rate - gamma) - z_a * math.sqrt(n * gamma * (1 - gamma))
    return float(stats.norm.cdf(num / math.sqrt(n * rate * (1 - rate))))


def tokens_needed(rate: float, gamma: float, alpha: float, power: float) -> float:
    """n* of the normal form: [(z_a sqrt(g(1-g)) + z_b sqrt(p(1-p))) / (p - g)]^2; inf if p <= g."""
    if rate <= gamma:
        return math.inf
    z_a, z_b = stats.norm.isf(alpha), stats.norm.isf(1 - power)
    root = z_a * math.sqrt(gamma * (1 - gamma)) + z_b * math.sqrt(rate * (1 - rate))
    return (root / (rate - gamma)) ** 2


def tokens_needed_exact(rate: float, gamma: float, alpha: float, power: float,
                        limit: int = 100_000) -> int | None:  # fmt: skip
    """The first n whose exact power reaches `power` (None up to `limit`)."""
    for n in range(1, limit + 1):
        if exact_power(rate, n, gamma, alpha) >= power:
            return n
    return None


def conditional_power(probs: list[np.ndarray], n: int, gamma: float, alpha: float) -> float:
    """Mean over texts of P(PoissonBinomial(first n per-position probabilities) >= c_alpha(n)).

    Texts with fewer than n scored positions are left out; nan when none has n.
    """
    rows = [p[:n] for p in probs if p.size >= n]
    if not rows:
        return math.nan
    return float(poisson_binomial_sf(np.stack(rows), critical_count(n, gamma, alpha)).mean())
