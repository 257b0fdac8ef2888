"""CausalDPO's loss and its baselines (DPO, S-DPO, IRMv1), from their formulas; usable on their own.

Every preference loss here takes Δ = log π_θ(y|x) − log π_ref(y|x) of the responses (summed
token log-probabilities), clamped to [−10, 10] as the authors' code does (specs/causaldpo.md §2):

- DPO: ℓ = −log σ(β(Δ_w − Δ_l)).
- S-DPO (several negatives): ℓ = log(1 + Σ_j exp(β(Δ_{l_j} − Δ_w))); with one negative it is DPO.
- CausalDPO: soft environments q_ik = softmax_k(−‖f_i − c_k‖₂), the per-environment loss
  L_k = Σ_i q_ik ℓ_i / Σ_i q_ik (ours: the code averages the inputs into pseudo-examples instead),
  L = (1/K) Σ_k L_k + λ·MMD over environment pairs. Two invariance terms:
  - `single_point` (as the code computes it, one point per environment): the RBF kernel with
    σ = 1 between the environments' q-weighted mean features, 2 − 2·exp(−‖a − b‖²/2);
  - `weighted` (ours, reconstructed): MMD²_w(a, b) = wₐᵀKwₐ + w_bᵀKw_b − 2wₐᵀKw_b with
    w_k = q_·k/Σ q_·k and K an RBF kernel over per-example features, median-distance bandwidth.
  With K = 1 and λ = 0 the loss is DPO's (or S-DPO's) mean over the batch.
- IRMv1: Σ_e R^e + λ·Σ_e (∂R^e(s·m)/∂s at s = 1)², where m = β(Δ_w − Δ_l) is the DPO
  classifier's logit and R^e the DPO risk of environment e.

References:
    Zhao, Yang, Zhao, Guo, "Causal Direct Preference Optimization for Distributionally Robust
    Generative Recommendation", arXiv 2603.22335 (authors' code: user683/CausalDPO).
    Rafailov et al., "Direct Preference Optimization", NeurIPS 2023.
    Chen et al., "On Softmax Direct Preference Optimization for Recommendation" (S-DPO), 2024.
    Arjovsky et al., "Invariant Risk Minimization", 2019.

"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

CLAMP = 10.0  # the authors' clamp on each Δ
MMDKind = Literal["single_point", "weighted"]


def clamped(delta: torch.Tensor) -> torch.Tensor:
    """Δ clamped to [−10, 10], as the authors' code does before the loss."""
    return delta.clamp(-CLAMP, CLAMP)


def sdpo_per_example(delta_w: torch.Tensor, delta_l: torch.Tensor, beta: float) -> torch.Tensor:
    """ℓ_i = log(1 + Σ_j exp(β(Δ_{l_ij} − Δ_{w_i}))) per example.

    Args:
        delta_w: Δ of the chosen response, shape (B,).
        delta_l: Δ of the rejected responses, shape (B,) for one or (B, J) for J negatives.
        beta: The inverse temperature β (> 0).

    """
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    if delta_l.dim() == 1:
        delta_l = delta_l[:, None]  # (B, 1)
    z = beta * (clamped(delta_l) - clamped(delta_w)[:, None])  # (B, J)
    return torch.logsumexp(F.pad(z, (1, 0)), dim=1)  # log(e^0 + Σ_j e^{z_j}), (B,)


def dpo_loss(delta_w: torch.Tensor, delta_l: torch.Tensor, beta: float) -> torch.Tensor:
    """DPO's mean loss −log σ(β(Δ_w − Δ_l)) over the batch; both shaped (B,)."""
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    return F.softplus(-beta * (clamped(delta_w) - clamped(delta_l))).mean()


def sdpo_loss(delta_w: torch.Tensor, delta_l: torch.Tensor, beta: float) -> torch.Tensor:
    """S-DPO's mean loss over the batch; `delta_l` is (B, J)."""
    return sdpo_per_example(delta_w, delta_l, beta).mean()


def soft_assign(features: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """q_ik = softmax_k(−‖f_i − c_k‖₂): features (B, d), centres (K, d) -> (B, K)."""
    return torch.softmax(-torch.cdist(features, centres), dim=1)


def kmeans_centres(
    features: torch.Tensor, k: int, *, steps: int = 10, generator: torch.Generator | None = None
) -> torch.Tensor:
    """K centres by Lloyd's algorithm on the batch (ours: the code runs DBSCAN).

    Starts from k distinct random points of the batch; a centre that loses every point keeps
    its place. Features (B, d) with B >= k; returns (k, d), detached.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    x = features.detach()
    if x.shape[0] < k:
        raise ValueError(f"need at least k = {k} points to start k-means, got {x.shape[0]}")
    centres = x[torch.randperm(x.shape[0], generator=generator)[:k]].clone()  # (k, d)
    for _ in range(steps):
        hard = torch.cdist(x, centres).argmin(dim=1)  # (B,)
        for j in range(k):
            members = x[hard == j]
            if len(members):
                centres[j] = members.mean(dim=0)
    return centres


def _rbf(a: torch.Tensor, b: torch.Tensor, sigma: float | torch.Tensor) -> torch.Tensor:
    return torch.exp(-torch.cdist(a, b).pow(2) / (2 * sigma**2))


def single_point_mmd(a: torch.Tensor, b: torch.Tensor, sigma: float = 1.0) -> torch.Tensor:
    """The biased MMD between two one-point samples: 2 − 2·exp(−‖a − b‖²/(2σ²)); a, b (d,)."""
    return 2 - 2 * _rbf(a[None], b[None], sigma)[0, 0]


def median_bandwidth(features: torch.Tensor) -> torch.Tensor:
    """The median of the off-diagonal pairwise distances (detached; 1 when all coincide)."""
    x = features.detach()
    d = torch.cdist(x, x)
    off = d[~torch.eye(len(x), dtype=torch.bool)]
    med = off.median() if off.numel() else torch.tensor(1.0)
    return med if med > 0 else torch.tensor(1.0)


def weighted_mmd(features: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Mean over environment pairs of MMD²_w(a, b) = wₐᵀKwₐ + w_bᵀKw_b − 2wₐᵀKw_b (ours).

    Args:
        features: Per-example feature vectors (B, d).
        q: Soft assignments (B, K); the columns are normalised to weights w_k.

    """
    k = q.shape[1]
    if k < 2:
        return features.new_zeros(())
    kernel = _rbf(features, features, median_bandwidth(features))  # (B, B)
    w = q / q.sum(dim=0, keepdim=True).clamp_min(1e-12)  # (B, K)
    gram = w.T @ kernel @ w  # (K, K): wₐᵀKw_b
    i, j = torch.triu_indices(k, k, offset=1)
    return (gram.diagonal()[i] + gram.diagonal()[j] - 2 * gram[i, j]).mean()


def point_mmd(features: torch.Tensor, q: torch.Tensor, sigma: float = 1.0) -> torch.Tensor:
    """Mean over environment pairs of the single-point MMD of the q-weighted mean features."""
    k = q.shape[1]
    if k < 2:
        return features.new_zeros(())
    w = q / q.sum(dim=0, keepdim=True).clamp_min(1e-12)  # (B, K)
    points = w.T @ features  # (K, d): one pseudo-example's output per environment
    pairs = [
        single_point_mmd(points[a], points[b], sigma) for a in range(k) for b in range(a + 1, k)
    ]
    return torch.stack(pairs).mean()


@dataclass(frozen=True)
class CausalDPOTerms:
    """CausalDPO's loss and its two parts (tensors that carry gradients)."""

    total: torch.Tensor  # (1/K) Σ_k L_k + λ·MMD
    preference: torch.Tensor  # (1/K) Σ_k L_k, the backdoor-adjusted preference loss
    invariance: torch.Tensor  # the MMD term before λ


def causal_dpo_loss(
    delta_w: torch.Tensor,
    delta_l: torch.Tensor,
    q: torch.Tensor,
    features: torch.Tensor,
    *,
    beta: float,
    lam: float,
    mmd: MMDKind = "weighted",
) -> CausalDPOTerms:
    """CausalDPO's loss on a batch.

    Args:
        delta_w: Δ of the chosen response (B,).
        delta_l: Δ of the rejected responses (B,) or (B, J).
        q: Soft environment assignments (B, K), rows summing to 1; K >= 1.
        features: Per-example outputs the invariance term compares (B, d).
        beta: β (> 0).
        lam: λ (>= 0), the weight of the invariance term.
        mmd: "single_point" (the code's form) or "weighted" (ours).

    Notes:
        With K = 1 and λ = 0 this is exactly the DPO (S-DPO) mean loss of the batch.

    """
    if q.dim() != 2 or q.shape[1] < 1:
        raise ValueError(f"q must be (B, K) with K >= 1 environments, got shape {tuple(q.shape)}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    if mmd not in ("single_point", "weighted"):
        raise ValueError(f"mmd must be 'single_point' or 'weighted', got {mmd!r}")
    ell = sdpo_per_example(delta_w, delta_l, beta)  # (B,)
    per_env = (q * ell[:, None]).sum(dim=0) / q.sum(dim=0).clamp_min(1e-12)  # (K,)
    preference = per_env.mean()
    if lam == 0:
        invariance = features.new_zeros(())
    elif mmd == "weighted":
        invariance = weighted_mmd(features, q)
    else:
        invariance = point_mmd(features, q)
    return CausalDPOTerms(preference + lam * invariance, preference, invariance)


def irm_v1_loss(
    delta_w: torch.Tensor, delta_l: torch.Tensor, envs: torch.Tensor, *, beta: float, lam: float
) -> torch.Tensor:
    """IRMv1 on DPO: Σ_e R^e + λ·Σ_e (∂R^e(s·m)/∂s at s = 1)², m = β(Δ_w − Δ_l).

    Args:
        delta_w: Δ of the chosen response (B,).
        delta_l: Δ of the rejected response (B,).
        envs: Integer environment label per example (B,); environments absent from the batch
            contribute nothing.
        beta: β (> 0).
        lam: λ (>= 0), the penalty weight.

    """
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    margin = beta * (clamped(delta_w) - clamped(delta_l))  # (B,)
    scale = torch.ones((), dtype=margin.dtype, requires_grad=True)  # s, the dummy scale
    total = margin.new_zeros(())
    for e in torch.unique(envs):
        risk = F.softplus(-scale * margin[envs == e]).mean()
        (grad,) = torch.autograd.grad(risk, scale, create_graph=True)
        total = total + risk + lam * grad.pow(2)
    return total
