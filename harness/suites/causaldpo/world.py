"""The §5 world (ours, reconstructed): next-item recommendation with an exposure confounder.

specs/causaldpo.md §5, generated from the seed:
- 120 items in 6 genres of 20; a "hot" set H of 24 random items plays the role of exposure.
- Each example draws an environment e ∈ {0, 1, 2} with exposure ρ_e ∈ {0.2, 0.5, 0.8} and a
  user genre g. Each of the 8 history items comes from H with probability ρ_e, else from genre g
  with probability 0.8, else uniformly. The next item comes from H with probability ρ_e, else
  it is a genre-g item not already in the history.
- Splits: train, IID validation (ours: λ is chosen on it, never on OOD), IID test (the same
  mixture), OOD test (ρ = 0: exposure removed) and OOD-H′ (a fresh hot set H′ at the training ρ).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HISTORY = 8  # items in a history
EXPOSURE = (0.2, 0.5, 0.8)  # ρ_e of the three training environments
GENRE_KEEP = 0.8  # a non-hot history item comes from the user's genre with this probability


@dataclass(frozen=True)
class WorldConfig:
    """Sizes of the world; the spec's are the defaults."""

    items: int = 120  # catalogue size
    genres: int = 6  # genres of items // genres items each
    hot: int = 24  # |H|
    train: int = 6000  # training examples
    val: int = 1000  # IID validation examples (ours)
    test: int = 2000  # examples in each test split


@dataclass(frozen=True)
class Split:
    """Examples of one split."""

    history: np.ndarray  # (n, 8) item ids
    target: np.ndarray  # (n,) the next item
    env: np.ndarray  # (n,) environment 0..2; -1 where exposure is removed (OOD)


@dataclass(frozen=True)
class World:
    """A seed's world: its hot set and its splits."""

    config: WorldConfig
    hot: np.ndarray  # (|H|,) the training hot set
    splits: dict[str, Split]  # train, val, iid, ood, ood_h2


def _examples(
    rng: np.random.Generator, cfg: WorldConfig, hot: np.ndarray, n: int, rho: tuple[float, ...]
) -> Split:
    per_genre = cfg.items // cfg.genres
    env = rng.integers(0, len(rho), n) if rho != (0.0,) else np.full(n, -1)
    p = np.asarray(rho)[np.maximum(env, 0)]  # (n,)
    genre = rng.integers(0, cfg.genres, n)  # (n,)
    in_genre = genre[:, None] * per_genre + rng.integers(0, per_genre, (n, HISTORY))
    uniform = rng.integers(0, cfg.items, (n, HISTORY))
    from_hot = hot[rng.integers(0, len(hot), (n, HISTORY))]
    keep = rng.random((n, HISTORY)) < GENRE_KEEP
    history = np.where(rng.random((n, HISTORY)) < p[:, None], from_hot,
                       np.where(keep, in_genre, uniform))  # fmt: skip
    # a uniform genre-g item not in the history: the best of random keys, history items barred
    genre_items = genre[:, None] * per_genre + np.arange(per_genre)  # (n, per_genre)
    keys = rng.random((n, per_genre))
    keys[(genre_items[:, :, None] == history[:, None, :]).any(axis=2)] = -1.0
    fresh = genre_items[np.arange(n), keys.argmax(axis=1)]  # (n,)
    hot_next = rng.random(n) < p
    target = np.where(hot_next, hot[rng.integers(0, len(hot), n)], fresh)
    return Split(history.astype(np.int64), target.astype(np.int64), env.astype(np.int64))


def make_world(seed: int, cfg: WorldConfig | None = None) -> World:
    """The world of a seed: every split is drawn from its own stream of the seed."""
    cfg = cfg or WorldConfig()
    if cfg.items % cfg.genres or cfg.items // cfg.genres <= HISTORY or cfg.hot > cfg.items:
        raise ValueError(f"inconsistent world sizes: {cfg}")
    rng = np.random.default_rng([seed, 0])
    hot = rng.choice(cfg.items, cfg.hot, replace=False)
    hot2 = rng.choice(cfg.items, cfg.hot, replace=False)  # H′, drawn independently of H
    sizes = {"train": cfg.train, "val": cfg.val, "iid": cfg.test, "ood": cfg.test,
             "ood_h2": cfg.test}  # fmt: skip
    splits = {}
    for stream, (name, n) in enumerate(sizes.items(), start=1):
        r = np.random.default_rng([seed, stream])
        if name == "ood":
            splits[name] = _examples(r, cfg, hot, n, (0.0,))
        else:
            splits[name] = _examples(r, cfg, hot2 if name == "ood_h2" else hot, n, EXPOSURE)
    return World(cfg, hot, splits)
