"""Batched sampling from a teacher under a watermark, recording what the power model needs.

Per generated position t the record holds:
- `kl`: exact KL(p_wm || p_t) in nats (0 without a watermark);
- `green_mass`: G_t = sum_v p_t(v) m(c_t, v) under the row's key;
- `green_prob`: P_wm(green at t) = pi(G_t) for KGW (the perturbed distribution's green mass in
  general);
- `green_prob_dedup`: the same given that x_t is none of the successors U already seen after
  c_t earlier in the text: sum_{v not in U} p_wm(v) m(v) / sum_{v not in U} p_wm(v) (the
  conditional power model's dedup correction, §2 of the spec);
- `clean_logprob`: log p_t(x_t), for the perplexity under the unwatermarked teacher.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from harness.suites.provenance.greenlist import GreenList
from harness.suites.provenance.power import kgw_bound, kl_of


class Teacher(Protocol):
    """Incremental next-token logits."""

    def start(self, prefix: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Logits (B, V) after a prefix (B, P), and a state."""
        ...

    def step(self, state: Any, tokens: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Logits (B, V) after one more token per row, and the new state."""
        ...


@dataclass(frozen=True)
class Generated:
    """A batch of texts and their per-position records (N rows, S generated positions).

    Attributes:
        tokens: (N, P + S) prompt then continuation.
        prompt_len: P.
        keys: (N,) the key of each row.
        kl: (N, S) exact KL(p_wm || p_t), nats.
        green_mass: (N, S) G_t under the row's key.
        green_prob: (N, S) P_wm(green).
        green_prob_dedup: (N, S) P_wm(green | x_t not among c_t's earlier successors).
        clean_logprob: (N, S) log p_t(x_t).
        bound: (N, S) KGW's bound on P(green), when asked for.
        probs: (N, S, V) the unwatermarked distributions, when asked for.

    """

    tokens: np.ndarray
    prompt_len: int
    keys: np.ndarray
    kl: np.ndarray
    green_mass: np.ndarray
    green_prob: np.ndarray
    green_prob_dedup: np.ndarray
    clean_logprob: np.ndarray
    bound: np.ndarray | None = None
    probs: np.ndarray | None = None


def generate(
    teacher: Teacher,
    prompts: np.ndarray,
    steps: int,
    rule: GreenList,
    keys: np.ndarray,
    processor: Any = None,
    *,
    temperature: float = 1.0,
    seed: int = 0,
    bound_delta: float | None = None,
    keep_probs: bool = False,
) -> Generated:
    """Sample `steps` tokens after each prompt (N, P), watermarked by `processor` (None: clean).

    The processor is called as processor(input_ids, logits / temperature) and must set
    `last_mask`; without one, the green mask of `rule` and `keys` is still computed, so that
    clean text has the same records (its green rate is what the FPR is about). `bound_delta`
    adds KGW's bound on P(green) at that delta per position (`bound`); `keep_probs` keeps the
    unwatermarked next-token distributions (N, S, V) (`probs`).
    """
    rng = np.random.default_rng(seed)
    prompts = np.asarray(prompts, dtype=np.int64)
    n, p_len = prompts.shape
    keys = np.asarray(keys, dtype=np.uint64)
    ids = torch.from_numpy(prompts)
    logits, state = teacher.start(ids)
    out = np.zeros((n, p_len + steps), dtype=np.int64)
    out[:, :p_len] = prompts
    rec = {name: np.zeros((n, steps)) for name in
           ("kl", "green_mass", "green_prob", "green_prob_dedup", "clean_logprob")}  # fmt: skip
    bound = np.zeros((n, steps)) if bound_delta is not None else None
    kept = np.zeros((n, steps, logits.shape[-1]), dtype=np.float32) if keep_probs else None
    seen: list[dict[tuple[int, ...], list[int]]] = [{} for _ in range(n)]
    rows = np.arange(n)
    for s in range(steps):
        t = p_len + s
        base = logits.double() / temperature
        p = torch.softmax(base, -1).numpy()  # (N, V)
        if processor is None:
            wm_logits = base
            mask = rule.mask(keys, rule.contexts(out[:, :t], t))
        else:
            wm_logits = processor(torch.from_numpy(out[:, :t]), base).double()
            mask = processor.last_mask
        p_wm = torch.softmax(wm_logits, -1).numpy()
        if bound is not None:
            bound[:, s] = kgw_bound(p, rule.gamma, float(bound_delta))
        if kept is not None:
            kept[:, s] = p
        rec["kl"][:, s] = np.maximum(kl_of(p, p_wm), 0.0)
        rec["green_mass"][:, s] = (p * mask).sum(1)
        rec["green_prob"][:, s] = (p_wm * mask).sum(1)
        contexts = [tuple(row) for row in rule.contexts(out[:, :t], t).tolist()]
        rec["green_prob_dedup"][:, s] = _dedup_green(p_wm, mask, contexts, seen, t >= rule.h)
        cum = np.cumsum(p_wm, axis=1)  # inverse-CDF sampling, one uniform per row
        draw = (cum < rng.random(n)[:, None] * cum[:, -1:]).sum(1)
        out[:, t] = np.minimum(draw, p_wm.shape[1] - 1)
        token = torch.from_numpy(out[:, t].copy())
        rec["clean_logprob"][:, s] = np.log(np.maximum(p[rows, out[:, t]], 1e-300))
        if t >= rule.h:
            for row in range(n):
                seen[row].setdefault(contexts[row], []).append(int(out[row, t]))
        logits, state = teacher.step(state, token)
    return Generated(out, p_len, keys, **rec, bound=bound, probs=kept)


def _dedup_green(
    p_wm: np.ndarray,
    mask: np.ndarray,
    contexts: list[tuple[int, ...]],
    seen: list[dict[tuple[int, ...], list[int]]],
    scored: bool,
) -> np.ndarray:
    """P_wm(green | x not among the context's earlier successors), per row."""
    green = (p_wm * mask).sum(1)
    if not scored:
        return green
    rows, toks = [], []
    for row, ctx in enumerate(contexts):
        for tok in set(seen[row].get(ctx, ())):
            rows.append(row)
            toks.append(tok)
    if not rows:
        return green
    r, v = np.array(rows), np.array(toks)
    n = p_wm.shape[0]
    mass = np.bincount(r, weights=p_wm[r, v], minlength=n)
    green_seen = np.bincount(r, weights=p_wm[r, v] * mask[r, v], minlength=n)
    rest = 1.0 - mass
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(rest > 1e-12, (green - green_seen) / rest, green)
    return np.clip(out, 0.0, 1.0)
