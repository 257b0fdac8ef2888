"""The softmax bandit of specs/bandpo.md §5.2: one run of one clip rule from one seed.

100 actions; the policy is a free logit vector. Every action but one pays a fixed reward drawn
from U[0, 0.5] by the seed; the best pays 1 and starts at probability 0.02, the others sharing
the rest equally. Each pull's reward carries N(0, 0.1²) noise. An iteration samples a GRPO group
of 16 pulls from the current policy, standardises their rewards within the group, and takes 4
plain gradient steps (lr times the gradient) on the clipped loss of
`harness.models.methods.band_clip` with those pulls (one token per response, no reference
penalty). Measured per iteration: the best action's probability after it, and the share of the
16 x 4 token-updates whose clipped term was taken.

Reconstructed (the spec gives the setting, not the code): the best action is action 0, the
others start equal, the noise's 0.1 is its standard deviation, and iterations count from 1
(the first iteration after which p_best > 0.5).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from harness.models.methods.band_clip import grpo_advantages, policy_loss, ratio_bounds
from harness.suites.bandpo.arms import rule_of
from harness.suites.bandpo.threads import one_thread


@dataclass(frozen=True)
class BanditConfig:
    """One bandit run."""

    arm: str  # clip rule (harness.suites.bandpo.arms)
    seed: int  # rewards, pulls and noise
    lr: float = 1.0  # plain gradient step size
    actions: int = 100  # arms of the bandit
    p_best: float = 0.02  # the best action's starting probability
    group: int = 16  # pulls per iteration (one GRPO group)
    epochs: int = 4  # gradient steps per iteration
    noise: float = 0.1  # reward noise standard deviation
    iterations: int = 200  # budget
    target: float = 0.5  # "reached": p_best above this

    def __post_init__(self) -> None:
        if not (self.actions >= 2 and 0 < self.p_best < 1 and self.group >= 2
                and self.epochs >= 1 and self.iterations >= 1 and self.lr > 0):  # fmt: skip
            raise ValueError(f"bad bandit configuration: {self}")


@dataclass(frozen=True)
class BanditResult:
    """The outcome of one bandit run."""

    iterations_to_target: int | None  # first iteration after which p_best > target; None: never
    final_p_best: float  # p_best after the last iteration
    clip_fraction: float  # clipped share over every token-update of the run
    p_best: list[float] = field(default_factory=list)  # after each iteration
    clip_fractions: list[float] = field(default_factory=list)  # per iteration
    seconds: float = 0.0  # wall time

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def train_bandit(cfg: BanditConfig) -> BanditResult:
    """Run the bandit for the configured budget (it does not stop at the target)."""
    start = time.perf_counter()
    rule = rule_of(cfg.arm)
    gen = torch.Generator().manual_seed(cfg.seed)
    means = torch.rand(cfg.actions, generator=gen, dtype=torch.float64) * 0.5  # (K,)
    means[0] = 1.0
    logits = torch.zeros(cfg.actions, dtype=torch.float64)
    logits[0] = math.log(cfg.p_best * (cfg.actions - 1) / (1.0 - cfg.p_best))
    logits.requires_grad_(True)
    hit: int | None = None
    p_best: list[float] = []
    fractions: list[float] = []
    mask = torch.ones(cfg.group, 1, dtype=torch.float64)
    for it in range(1, cfg.iterations + 1):
        with torch.no_grad():
            old = torch.log_softmax(logits, -1)  # (K,)
            pulls = torch.multinomial(old.exp(), cfg.group, replacement=True, generator=gen)
            noise = torch.randn(cfg.group, generator=gen, dtype=torch.float64) * cfg.noise
            adv = grpo_advantages((means[pulls] + noise)[None, :])[0]  # (G,)
            old_taken = old[pulls][:, None]  # (G, 1)
            bounds = ratio_bounds(old_taken, rule)  # the old policy's: once per iteration
        clipped = 0
        for _ in range(cfg.epochs):
            new = torch.log_softmax(logits, -1)[pulls]  # (G,)
            out = policy_loss(new[:, None], old_taken, adv[:, None], mask, rule=rule, bounds=bounds)
            (grad,) = torch.autograd.grad(out.loss, logits)
            with torch.no_grad():
                logits -= cfg.lr * grad
            clipped += int(out.clipped.sum())
        fractions.append(clipped / (cfg.group * cfg.epochs))
        with torch.no_grad():
            p_best.append(float(torch.softmax(logits, -1)[0]))
        if hit is None and p_best[-1] > cfg.target:
            hit = it
    return BanditResult(
        iterations_to_target=hit,
        final_p_best=p_best[-1],
        clip_fraction=sum(fractions) / len(fractions),
        p_best=p_best,
        clip_fractions=fractions,
        seconds=time.perf_counter() - start,
    )


def train_bandit_dict(cfg: BanditConfig) -> dict[str, Any]:
    """Worker entry point: run on one thread, return a dict (torch only, no inspect)."""
    with one_thread():
        return train_bandit(cfg).as_dict()
