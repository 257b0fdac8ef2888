"""Ranking metrics of the authors' evaluation (specs/causaldpo.md §2), Pop@1 (ours) and the ARI.

Ranks are 0-based: r = the number of items scored strictly above the target.
- HR@K = mean 1[r < K]; NDCG@K = mean 1[r < K]/log₂(r + 2).
- ORRatio@K = (the summed counts of the 3 items that appear most often across all users'
  top-K lists)/(K·n). (The code's counter is not reset between K values, so its ORRatio@20 is
  half of this; we compute each K on its own.)
- Pop@1 (ours): the share of users whose top-1 item lies in the hot set H.
"""

from __future__ import annotations

import numpy as np


def ranks(scores: np.ndarray, target: np.ndarray) -> np.ndarray:
    """0-based rank of each target: scores (n, items), target (n,) -> (n,)."""
    own = scores[np.arange(len(target)), target]  # (n,)
    return (scores > own[:, None]).sum(axis=1)


def hit_rate(r: np.ndarray, k: int) -> float:
    """HR@K."""
    return float(np.mean(r < k))


def ndcg(r: np.ndarray, k: int) -> float:
    """NDCG@K with one relevant item."""
    return float(np.mean(np.where(r < k, 1.0 / np.log2(r + 2.0), 0.0)))


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """The k best items per row, best first (ties broken by the lower id): (n, k)."""
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def or_ratio(top: np.ndarray, head: int = 3) -> float:
    """ORRatio@K of top-K lists (n, K): the `head` most frequent items' counts over K·n."""
    counts = np.bincount(top.ravel())
    return float(np.sort(counts)[::-1][:head].sum() / top.size)


def pop_at_1(scores: np.ndarray, hot: np.ndarray) -> float:
    """Share of rows whose top-1 item is in `hot`."""
    return float(np.isin(scores.argmax(axis=1), hot).mean())


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Hubert and Arabie's adjusted Rand index of two labellings of the same points."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1)

    def pairs(x: np.ndarray) -> float:
        return float((x * (x - 1) / 2).sum())

    n = len(a)
    index, rows, cols = pairs(table), pairs(table.sum(1)), pairs(table.sum(0))
    expected = rows * cols / (n * (n - 1) / 2)
    top = (rows + cols) / 2
    return 1.0 if top == expected else (index - expected) / (top - expected)
