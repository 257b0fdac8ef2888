"""k-sparse parity data: n-bit strings, a secret subset of k positions, label = XOR over it.

The secret subset and the strings come from the seed. Training and test strings are drawn
without replacement from one pool, so no test string appears in training. When n is small
enough that the pool runs out, the test set is every remaining string.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ParityData:
    """A training and a test set for one seed."""

    n: int  # bits per string
    secret: tuple[int, ...]  # the k relevant positions, sorted
    train: torch.Tensor  # (N, n+1) long: bits then label
    test: torch.Tensor  # (N_test, n+1) long


def _distinct_strings(n: int, count: int, rng: random.Random) -> list[int]:
    if n <= 20:
        return rng.sample(range(2**n), min(count, 2**n))
    seen: dict[int, None] = {}
    while len(seen) < count:
        seen.setdefault(rng.getrandbits(n), None)
    return list(seen)


def _to_rows(values: list[int], n: int, secret: tuple[int, ...]) -> torch.Tensor:
    bits = torch.tensor([[(v >> i) & 1 for i in range(n)] for v in values], dtype=torch.long)
    label = bits[:, list(secret)].sum(dim=1) % 2  # (N,)
    return torch.cat([bits, label[:, None]], dim=1)  # (N, n+1)


def make_parity_data(n: int, k: int, n_train: int, n_test: int, seed: int) -> ParityData:
    """Draw the secret subset, then distinct training and test strings, from `seed`."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n_train < 1 or n_test < 1:
        raise ValueError(f"need n_train and n_test >= 1, got {n_train}, {n_test}")
    if n_train >= 2**n:
        raise ValueError(f"n_train={n_train} leaves no test strings among 2^{n}")
    rng = random.Random(f"k-parity-{n}-{k}-{seed}")
    secret = tuple(sorted(rng.sample(range(n), k)))
    pool = _distinct_strings(n, n_train + n_test, rng)
    train, test = pool[:n_train], pool[n_train:]
    return ParityData(n, secret, _to_rows(train, n, secret), _to_rows(test, n, secret))
