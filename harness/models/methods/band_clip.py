"""Probability-aware ratio bounds (the band operator) and a clipped policy loss that uses them.

A loss to drop into a GRPO/PPO loop: `policy_loss(logprob, old_logprob, advantages, mask,
rule=band_rule("kl", 0.05))` returns the loss and its clip statistics. The rules it knows:

- `fixed_rule(eps_low, eps_high)`: PPO/GRPO clipping to [1 - eps_low, 1 + eps_high]
  (GRPO 0.2/0.2, Clip-Higher 0.2/0.28).
- `dcpo_rule()`: DCPO's dynamic adaptive clipping (DAC), bounds from the old probability p:
  l = 1/2 + 1/2 sqrt(max(1 - 4 * 0.16 / p, 0)), u = min(1/2 + 1/2 sqrt(1 + 4 * 0.20 / p), 10).
- `band_rule(divergence, delta)`: the band. Moving a token from probability p to r p while
  rescaling every other action proportionally costs the binary divergence
  g_f(p, r) = p f(r) + (1 - p) f((1 - r p) / (1 - p)); the band [r_low, r_up] is the set of r
  with g_f(p, r) <= delta, within the simplex (r <= 1/p). f is KL(old || new) (-log u + u - 1),
  total variation (|u - 1| / 2) or chi-squared ((u - 1)^2).

How the bounds are computed, in this order (the authors' code, as the BandPO spec §2 has it):
1. p = exp(clamp(old_logprob, -700, 0)), in float64 whatever the input's dtype (a float32
   bracket cannot reach 1e-6 width around r = 50);
2. vectorised bisection, the upper root on [1, 1/p] and the lower one on [0, 1], at most 50
   halvings, stopping when the widest bracket is <= 1e-6; a side whose end already satisfies
   g <= delta saturates (r_up = 1/p, r_low = 0); inside g, r and (1 - r p)/(1 - p) are clamped
   to >= 1e-12 before f;
3. p > 1 - 1e-6: upper 1, lower r* (e^-delta for KL, max(1 - delta, 0) for TV, 1 for chi2);
4. p < 1e-6: upper 1/p, lower 0;
5. `relax` (optional): lower = min(lower, 1 - eps_low), upper = max(upper, 1 + eps_high);
6. lower clamped to [0, 1], upper to [1, u_max];
all under `torch.no_grad()`: the bounds are constants of the loss.

TV and chi-squared have closed forms (1 -/+ delta/p and 1 -/+ sqrt(delta (1 - p)/p)), which the
tests check against the bisection; the loss uses the bisection for every divergence, as the
authors' code does.

The loss per token: rho = exp(clamp(logprob - old_logprob, -20, 20)); L = max(-A rho,
-A clamp(rho, l, u)); with A < 0, L = min(L, -A c) (dual clip, c = 10). Aggregated
`seq-mean-token-mean`: the mean over each response's valid tokens, then over responses. An
optional k3 penalty towards a reference policy, beta mean(exp(x) - x - 1) with x = ref - logprob
clamped to +-20 and k3 to +-10, aggregated the same way.

References:
    Y. Li et al., "BandPO: Bridging Trust Regions and Ratio Clipping via Probability-Aware
    Bounds for LLM Reinforcement Learning", arXiv:2603.04918; code OpenMOSS/BandPO.

"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import torch

Divergence = Literal["kl", "tv", "chi2"]
RuleKind = Literal["fixed", "dcpo", "band"]

P_EDGE = 1e-6  # p above 1 - P_EDGE or below P_EDGE takes the special cases, not the solver
TOL = 1e-6  # bisection stops when the widest bracket is at most this
MAX_ITER = 50  # bisection halvings at most
FLOOR = 1e-12  # r and the rescaled rest are clamped to this before f


def _f(divergence: Divergence, u: torch.Tensor) -> torch.Tensor:
    """The generator f of the f-divergence, applied elementwise."""
    if divergence == "kl":
        return -torch.log(u) + u - 1.0
    if divergence == "tv":
        return 0.5 * (u - 1.0).abs()
    return (u - 1.0) ** 2


def binary_divergence(divergence: Divergence, p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """g_f(p, r): the divergence of moving one action from p to r p, the rest rescaled.

    Args:
        divergence: "kl", "tv" or "chi2".
        p: Old probabilities in (0, 1).
        r: Ratios in [0, 1/p]; broadcast against `p`.

    """
    _check_divergence(divergence)
    rest = (1.0 - r * p) / (1.0 - p)
    return p * _f(divergence, r.clamp_min(FLOOR)) + (1.0 - p) * _f(
        divergence, rest.clamp_min(FLOOR)
    )


def _bisect(
    divergence: Divergence, p: torch.Tensor, delta: float, low: torch.Tensor, high: torch.Tensor,
    rising: bool,
) -> torch.Tensor:  # fmt: skip
    """The root of g(p, .) = delta in [low, high], where g is monotone (rising or falling)."""
    for _ in range(MAX_ITER):
        if float((high - low).max()) <= TOL:
            break
        mid = 0.5 * (low + high)
        above = binary_divergence(divergence, p, mid) > delta
        # rising: above the level means the root is left of mid; falling: right of mid
        go_left = above if rising else ~above
        high = torch.where(go_left, mid, high)
        low = torch.where(go_left, low, mid)
    return 0.5 * (low + high)


@dataclass(frozen=True, slots=True)
class RatioBounds:
    """Per-token ratio bounds, detached from the graph.

    Attributes:
        lower: r_low per token, in [0, 1].
        upper: r_up per token, in [1, u_max].

    """

    lower: torch.Tensor
    upper: torch.Tensor


def band_roots(p: torch.Tensor, divergence: Divergence = "kl", delta: float = 0.05) -> RatioBounds:
    """The two roots of g_f(p, .) = delta by bisection, saturating at 0 and 1/p; no caps.

    `p` must lie in (0, 1); float64 is used inside. This is step 2 of the module's order,
    without the special cases and caps that `band_bounds` adds.
    """
    _check_divergence(divergence)
    p = p.to(torch.float64)
    one = torch.ones_like(p)
    top = 1.0 / p
    upper = _bisect(divergence, p, delta, one, top.clone(), rising=True)
    upper = torch.where(binary_divergence(divergence, p, top) <= delta, top, upper)
    lower = _bisect(divergence, p, delta, torch.zeros_like(p), one, rising=False)
    lower = torch.where(binary_divergence(divergence, p, torch.zeros_like(p)) <= delta, 0.0, lower)
    return RatioBounds(lower, upper)


def closed_form_band(
    p: torch.Tensor, divergence: Literal["tv", "chi2"], delta: float
) -> RatioBounds:
    """TV and chi-squared bands in closed form, clipped to [0, 1/p]; no caps."""
    p = p.to(torch.float64)
    if divergence == "tv":
        half = delta / p
    elif divergence == "chi2":
        half = torch.sqrt(delta * (1.0 - p) / p)
    else:
        raise ValueError(f"closed forms exist for 'tv' and 'chi2', got {divergence!r}")
    return RatioBounds((1.0 - half).clamp_min(0.0), torch.minimum(1.0 + half, 1.0 / p))


def _edge_lower(divergence: Divergence, delta: float) -> float:
    """The lower bound as p -> 1 (r*)."""
    if divergence == "kl":
        return math.exp(-delta)
    if divergence == "tv":
        return max(1.0 - delta, 0.0)
    return 1.0


@dataclass(frozen=True, slots=True)
class ClipRule:
    """How a token's ratio bounds follow from its old probability.

    Attributes:
        kind: "fixed" ([1 - eps_low, 1 + eps_high]), "dcpo" (DCPO-DAC) or "band".
        divergence: The band's f-divergence ("kl", "tv", "chi2"); unused otherwise.
        delta: The band's trust-region radius; unused otherwise.
        eps_low: Fixed clipping's lower epsilon; the band's under `relax`.
        eps_high: Fixed clipping's upper epsilon; the band's under `relax`.
        relax: Widen the band to at least [1 - eps_low, 1 + eps_high].
        u_max: Cap on the band's upper bound (the authors' function default 100; their
            training scripts 10).

    """

    kind: RuleKind = "band"
    divergence: Divergence = "kl"
    delta: float = 0.05
    eps_low: float = 0.2
    eps_high: float = 0.2
    relax: bool = False
    u_max: float = 100.0

    def __post_init__(self) -> None:
        """Refuse an unknown kind or divergence, or bounds that cannot hold."""
        if self.kind not in get_args(RuleKind):
            raise ValueError(f"kind must be one of {get_args(RuleKind)}, got {self.kind!r}")
        _check_divergence(self.divergence)
        if not self.delta > 0:
            raise ValueError(f"delta must be > 0, got {self.delta}")
        if not (0 <= self.eps_low <= 1 and self.eps_high >= 0):
            raise ValueError(f"need 0 <= eps_low <= 1 and eps_high >= 0, got {self.eps_low}, "
                             f"{self.eps_high}")  # fmt: skip
        if not self.u_max >= 1:
            raise ValueError(f"u_max must be >= 1, got {self.u_max}")


def fixed_rule(eps_low: float = 0.2, eps_high: float = 0.2) -> ClipRule:
    """PPO/GRPO clipping (0.2, 0.2); Clip-Higher is (0.2, 0.28)."""
    return ClipRule("fixed", eps_low=eps_low, eps_high=eps_high)


def dcpo_rule() -> ClipRule:
    """DCPO's dynamic adaptive clipping with the constants of the authors' code."""
    return ClipRule("dcpo")


def band_rule(
    divergence: Divergence = "kl", delta: float = 0.05, *, relax: bool = False,
    u_max: float = 10.0, eps_low: float = 0.2, eps_high: float = 0.2,
) -> ClipRule:  # fmt: skip
    """The band with the training scripts' cap (u_max 10)."""
    return ClipRule("band", divergence, delta, eps_low, eps_high, relax, u_max)


@torch.no_grad()
def ratio_bounds(old_logprob: torch.Tensor, rule: ClipRule) -> RatioBounds:
    """Per-token bounds for `rule`, in `old_logprob`'s dtype, without gradient."""
    p = torch.exp(old_logprob.detach().to(torch.float64).clamp(-700.0, 0.0))
    if rule.kind == "fixed":
        lower = torch.full_like(p, 1.0 - rule.eps_low)
        upper = torch.full_like(p, 1.0 + rule.eps_high)
    elif rule.kind == "dcpo":
        p_safe = p.clamp_min(1e-300)
        lower = 0.5 + 0.5 * torch.sqrt((1.0 - 4.0 * 0.16 / p_safe).clamp_min(0.0))
        upper = (0.5 + 0.5 * torch.sqrt(1.0 + 4.0 * 0.20 / p_safe)).clamp_max(10.0)
    else:
        lower, upper = _band(p, rule)
    dtype = old_logprob.dtype if old_logprob.is_floating_point() else torch.float32
    return RatioBounds(lower.to(dtype), upper.to(dtype))


def _band(p: torch.Tensor, rule: ClipRule) -> tuple[torch.Tensor, torch.Tensor]:
    inner = (p >= P_EDGE) & (p <= 1.0 - P_EDGE)
    lower = torch.zeros_like(p)
    upper = torch.ones_like(p)
    if bool(inner.any()):
        roots = band_roots(p[inner], rule.divergence, rule.delta)
        lower[inner] = roots.lower
        upper[inner] = roots.upper
    high = p > 1.0 - P_EDGE
    lower = torch.where(high, _edge_lower(rule.divergence, rule.delta), lower)
    upper = torch.where(high, 1.0, upper)
    low = p < P_EDGE
    lower = torch.where(low, 0.0, lower)
    upper = torch.where(low, 1.0 / p.clamp_min(1e-300), upper)
    if rule.relax:
        lower = lower.clamp_max(1.0 - rule.eps_low)
        upper = upper.clamp_min(1.0 + rule.eps_high)
    return lower.clamp(0.0, 1.0), upper.clamp(1.0, rule.u_max)


@dataclass(frozen=True, slots=True)
class PolicyLoss:
    """The loss of one mini-batch and what the clipping did.

    Attributes:
        loss: The scalar to minimise (policy term plus the k3 penalty, if any).
        policy: The policy term alone, detached.
        kl: The aggregated k3 penalty before its coefficient, detached (0 without a reference).
        clipped: Per token, whether the clipped term was the one taken (-A clamp(rho) > -A rho,
            so its gradient is zero; verl's pg_clipfrac); False on padding. Tokens held by the
            dual clip alone (A < 0, rho above c) are not counted.
        clip_fraction: The share of valid tokens clipped.
        bounds: The ratio bounds used, detached.

    """

    loss: torch.Tensor
    policy: torch.Tensor
    kl: torch.Tensor
    clipped: torch.Tensor
    clip_fraction: float
    bounds: RatioBounds


def seq_mean_token_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over each row's valid tokens, then over the rows that have any."""
    mask = mask.to(values.dtype)
    per_row = (values * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)  # (B,)
    has = (mask.sum(-1) > 0).to(values.dtype)  # (B,)
    return (per_row * has).sum() / has.sum().clamp_min(1.0)


def policy_loss(
    logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    rule: ClipRule,
    dual_clip: float = 10.0,
    ref_logprob: torch.Tensor | None = None,
    kl_coef: float = 0.001,
    bounds: RatioBounds | None = None,
) -> PolicyLoss:
    """The clipped policy-gradient loss with per-token bounds from `rule`.

    Args:
        logprob: log pi_theta of the taken tokens, (B, T), with gradient.
        old_logprob: log pi_old of the same tokens, (B, T); the bounds come from it.
        advantages: Per token, (B, T) (GRPO broadcasts a response's advantage to its tokens).
        mask: 1 on valid tokens, 0 on padding, (B, T).
        rule: The clipping rule (`fixed_rule`, `dcpo_rule`, `band_rule`).
        dual_clip: c of the dual clip for negative advantages (must be > 1).
        ref_logprob: log pi_ref for the k3 penalty, (B, T); None for no penalty.
        kl_coef: The penalty's coefficient beta.
        bounds: `ratio_bounds(old_logprob, rule)` computed once for several epochs over the
            same batch (they depend on the old policy only); None: computed here.

    """
    if logprob.shape != old_logprob.shape or advantages.shape != logprob.shape:
        raise ValueError(f"logprob, old_logprob and advantages need one shape, got "
                         f"{tuple(logprob.shape)}, {tuple(old_logprob.shape)}, "
                         f"{tuple(advantages.shape)}")  # fmt: skip
    if not dual_clip > 1:
        raise ValueError(f"dual_clip must be > 1, got {dual_clip}")
    if bounds is None:
        bounds = ratio_bounds(old_logprob, rule)
    ratio = torch.exp((logprob - old_logprob.detach()).clamp(-20.0, 20.0))  # (B, T)
    adv = advantages.detach()
    unclipped = -adv * ratio
    clipped_term = -adv * torch.clamp(ratio, bounds.lower, bounds.upper)
    per_token = torch.maximum(unclipped, clipped_term)
    per_token = torch.where(adv < 0, torch.minimum(per_token, -adv * dual_clip), per_token)
    valid = mask.bool()
    policy = seq_mean_token_mean(per_token, mask)
    kl = torch.zeros((), dtype=policy.dtype)
    loss = policy
    if ref_logprob is not None:
        x = (ref_logprob.detach() - logprob).clamp(-20.0, 20.0)
        k3 = (torch.exp(x) - x - 1.0).clamp(-10.0, 10.0)
        kl = seq_mean_token_mean(k3, mask)
        loss = policy + kl_coef * kl
    with torch.no_grad():
        clipped = (clipped_term > unclipped) & valid
        fraction = float(clipped.sum()) / max(int(valid.sum()), 1)
    return PolicyLoss(loss, policy.detach(), kl.detach(), clipped, fraction, bounds)


def grpo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(R - group mean) / (unbiased group std + eps) per row of `rewards` (G groups, n each).

    A group of one gets mean 0 and std 1, as in the authors' code: R / (1 + eps).
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be (groups, group size), got {tuple(rewards.shape)}")
    if rewards.shape[1] == 1:
        return rewards / (1.0 + eps)
    mean = rewards.mean(dim=1, keepdim=True)
    std = rewards.std(dim=1, unbiased=True, keepdim=True)
    return (rewards - mean) / (std + eps)


def _check_divergence(divergence: str) -> None:
    if divergence not in get_args(Divergence):
        raise ValueError(f"divergence must be one of {get_args(Divergence)}, got {divergence!r}")
