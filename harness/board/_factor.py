"""A logistic factor model of a board, fitted on past results, that predicts a new model's scores.

P(model m scores on item i) = sigmoid(u_m . v_i + c_i), with u_m in R^k the model's ability
and (v_i, c_i) the item's loadings and easiness. Rank 1 is the two-parameter IRT model
(discrimination |v_i|, difficulty -c_i / v_i). Scores in [0, 1] that are not 0/1 enter the
same cross-entropy as soft labels.

- `fit_items` fits every parameter on the history (the other models' full rows) by gradient
  descent with Adam on the mean cross-entropy plus Gaussian priors (abilities N(0, I), loadings
  N(0, 2^2 I), easiness N(0, 3^2)); the fit is deterministic.
- `ability` gives a new model's MAP ability from the items it has answered so far, by Newton's
  method under the N(0, I) prior, for a batch of sequences at once; `predict` turns it into
  predictions for every item.

The predictions only steer which item is asked next and centre the estimator; the confidence
sequence in `harness.stats._active` is valid whatever they are, so a poor fit costs queries,
never coverage. Ours (reconstructed, in the spirit of FAQ's factor model and Fluid
Benchmarking's IRT): the priors, the rank and the optimiser.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RANK = 1
STEPS = 400
RATE = 0.05


@dataclass(frozen=True)
class ItemModel:
    """Fitted item parameters.

    Attributes:
        loadings: (N, k) v_i.
        easiness: (N,) c_i.
        history_abilities: (M, k) the history models' fitted abilities.

    """

    loadings: np.ndarray
    easiness: np.ndarray
    history_abilities: np.ndarray

    @property
    def rank(self) -> int:
        """K."""
        return int(self.loadings.shape[1])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fit_items(history: np.ndarray, *, rank: int = RANK, steps: int = STEPS,
              seed: int = 0) -> ItemModel:  # fmt: skip
    """Fit the factor model on a (models, items) history of scores in [0, 1].

    Raises:
        ValueError: fewer than two history models, or no items.

    """
    scores = np.asarray(history, dtype=float)
    if scores.ndim != 2 or scores.shape[0] < 2 or scores.shape[1] < 1:
        raise ValueError(f"history needs at least two models and one item, got {scores.shape}")
    models, items = scores.shape
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 0.1, (models, rank))
    v = rng.normal(0, 0.1, (items, rank)) + 1.0
    rate = scores.mean(axis=0).clip(0.5 / models, 1 - 0.5 / models)
    c = np.log(rate / (1 - rate))
    params = [u, v, c]
    moment = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    for t in range(1, steps + 1):
        p = _sigmoid(u @ v.T + c[None, :])
        resid = (p - scores) / scores.size  # d(mean cross-entropy) / d logit
        grads = [resid @ v + u / scores.size,
                 resid.T @ u + v / (4.0 * scores.size),
                 resid.sum(axis=0) + c / (9.0 * scores.size)]  # fmt: skip
        for g, p_, m1, m2 in zip(grads, params, moment, second, strict=True):
            m1 *= 0.9
            m1 += 0.1 * g
            m2 *= 0.999
            m2 += 0.001 * g * g
            p_ -= RATE * (m1 / (1 - 0.9**t)) / (np.sqrt(m2 / (1 - 0.999**t)) + 1e-12)
    return ItemModel(loadings=v, easiness=c, history_abilities=u)


def ability(model: ItemModel, asked: np.ndarray, scores: np.ndarray,
            start: np.ndarray | None = None, iterations: int = 3) -> np.ndarray:  # fmt: skip
    """The MAP ability of a new model, per sequence, from the items it has answered.

    Args:
        model: The fitted items.
        asked: (B, N) bool, the items answered in each sequence.
        scores: (N,) the new model's scores (only the asked ones are read).
        start: (B, k) where Newton starts (the previous ability); zeros when None.
        iterations: Newton steps.

    Returns:
        (B, k) abilities under the N(0, I) prior (zero with nothing asked).

    """
    v, c = model.loadings, model.easiness
    batch = asked.shape[0]
    u = np.zeros((batch, model.rank)) if start is None else start.copy()
    y = np.where(asked, scores[None, :], 0.0)
    weight = asked.astype(float)
    eye = np.eye(model.rank)
    for _ in range(iterations):
        p = _sigmoid(u @ v.T + c[None, :])  # (B, N)
        grad = ((y - p) * weight) @ v - u  # (B, k)
        curvature = p * (1 - p) * weight  # (B, N)
        hessian = np.einsum("bn,nk,nl->bkl", curvature, v, v) + eye[None]  # (B, k, k)
        u = u + np.linalg.solve(hessian, grad[..., None])[..., 0]
    return u


def predict(model: ItemModel, abilities: np.ndarray) -> np.ndarray:
    """(B, N) predicted scores for (B, k) abilities."""
    return _sigmoid(abilities @ model.loadings.T + model.easiness[None, :])
