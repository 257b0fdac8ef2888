"""The unbiased pass@k estimator of Chen et al. (2021)."""

from __future__ import annotations


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k draws from n samples (c correct) is correct.

    Computed as 1 - C(n-c, k) / C(n, k) with a running product, so no huge binomials.

    References:
        Chen et al. (2021), Evaluating Large Language Models Trained on Code, arXiv:2107.03374.

    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod
