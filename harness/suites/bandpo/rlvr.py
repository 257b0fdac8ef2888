"""The toy RLVR task of specs/bandpo.md §5.3: one GRPO run of one clip rule from one seed.

Task: the prompt is a target t in [0, m); the response is `length` tokens from 0 .. vocab-1;
it is correct when the tokens sum to t mod m (reward +1, else -1), checked by a program.

Start: a tiny GRU policy (`harness.suites.bandpo.policy`) is briefly fitted by supervised
learning to a noisy distribution: tokens drawn from a Zipf-like prior (p(k) ∝ 1/(k+1)), and
with probability `sft_fix` the last token replaced by the smallest one that makes the sum
correct. The fitted policy starts at a success rate of about 10-30% (logged per run as
`start_mean`), with a skewed token distribution, so that old probabilities fill every bin.

GRPO: each iteration samples `prompts` targets x `group` responses at temperature 1, rewards
them, standardises the rewards within each group, and splits the batch into `updates`
mini-batches, one Adam step each (the authors' 4 updates per batch), on
`harness.models.methods.band_clip.policy_loss` with the sampler's log-probabilities as old,
a k3 penalty (beta 0.001) towards the fitted start policy, and no entropy bonus.

Logged: the sampler's mean token entropy per iteration; the clip fraction of each iteration's
updates, overall and by the token's old probability in five bins of width 0.2; the evaluation
(`eval_samples` responses for every target) every `eval_every` iterations and at the end, as
the mean success and the correct count per target (from which the report computes mean@n and
the unbiased pass@k).

Reconstructed (the spec fixes the task only loosely): m, the vocabulary, the length, the prior,
the noise, the policy's size, the learning rates and the batch sizes are ours.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from harness.models.methods.band_clip import grpo_advantages, policy_loss, ratio_bounds
from harness.suites.bandpo.arms import rule_of
from harness.suites.bandpo.policy import GRUPolicy, PolicyConfig
from harness.suites.bandpo.threads import one_thread

BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # old-probability bins of the clip fraction


@dataclass(frozen=True)
class RLVRConfig:
    """One toy RLVR run."""

    arm: str  # clip rule (harness.suites.bandpo.arms)
    seed: int  # prior draws, initialisation, rollouts
    vocab: int = 16  # response tokens
    modulus: int = 7  # m: targets 0 .. m-1
    length: int = 8  # response length
    hidden: int = 64  # GRU width
    sft_steps: int = 150  # supervised steps on the noisy distribution
    sft_batch: int = 256  # sequences per supervised step
    sft_lr: float = 3e-3  # Adam, supervised
    sft_fix: float = 0.15  # share of supervised sequences whose last token makes the sum right
    iterations: int = 100  # GRPO iterations
    prompts: int = 16  # targets per iteration
    group: int = 8  # responses per target
    updates: int = 4  # mini-batches (Adam steps) per iteration
    lr: float = 3e-3  # Adam, GRPO
    kl_coef: float = 0.001  # k3 penalty towards the start policy
    eval_every: int = 20  # iterations between evaluations
    eval_samples: int = 32  # responses per target at evaluation

    def __post_init__(self) -> None:
        if (self.prompts * self.group) % self.updates:
            raise ValueError(f"prompts x group ({self.prompts * self.group}) must split into "
                             f"{self.updates} equal mini-batches")  # fmt: skip
        if self.group < 2 or self.modulus < 2 or self.iterations < 1 or self.eval_every < 1:
            raise ValueError(f"bad RLVR configuration: {self}")


@dataclass(frozen=True)
class RLVRResult:
    """The outcome of one run."""

    start_mean: float  # success rate of the fitted start policy (eval set)
    final_mean: float  # success rate at the end (eval set), mean@eval_samples
    final_correct: list[int]  # correct responses per target at the end, of eval_samples
    eval_samples: int  # responses per target at evaluation
    final_entropy: float  # the sampler's mean token entropy at the last iteration
    start_entropy: float  # ... at the first
    clip_fraction: float  # clipped share of all token-updates of the run
    bin_clipped: list[int]  # clipped token-updates per old-probability bin, whole run
    bin_tokens: list[int]  # token-updates per bin, whole run
    eval_iterations: list[int] = field(default_factory=list)  # iterations evaluated (0: start)
    eval_mean: list[float] = field(default_factory=list)  # success rate at each
    entropy: list[float] = field(default_factory=list)  # per iteration
    clip_fractions: list[float] = field(default_factory=list)  # per iteration
    seconds: float = 0.0  # wall time

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def correct(prompts: torch.Tensor, tokens: torch.Tensor, modulus: int) -> torch.Tensor:
    """The verifier: whether each response's tokens sum to its target mod m, (B,) bool."""
    return tokens.sum(-1) % modulus == prompts


def _prior(vocab: int) -> torch.Tensor:
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float32)
    return weights / weights.sum()


def noisy_batch(cfg: RLVRConfig, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Supervised data: prior tokens, a share `sft_fix` with the last token fixing the sum."""
    prompts = torch.randint(cfg.modulus, (n,), generator=gen)
    tokens = torch.multinomial(_prior(cfg.vocab).expand(n, -1), cfg.length, replacement=True,
                               generator=gen)  # fmt: skip
    need = (prompts - tokens[:, :-1].sum(-1)) % cfg.modulus  # smallest fixing token: < m
    fix = torch.rand(n, generator=gen) < cfg.sft_fix
    tokens[:, -1] = torch.where(fix, need, tokens[:, -1])
    return prompts, tokens


_STARTS: dict[tuple[Any, ...], dict[str, torch.Tensor]] = {}  # fitted starts, this process


def _start_key(cfg: RLVRConfig) -> tuple[Any, ...]:
    fields = ("seed", "vocab", "modulus", "length", "hidden", "sft_steps", "sft_batch",
              "sft_lr", "sft_fix")  # fmt: skip
    return (*(getattr(cfg, f) for f in fields), torch.get_num_threads())


def fit_start(cfg: RLVRConfig) -> GRUPolicy:
    """The start policy of a seed, fitted once per process and then copied.

    Every arm of a seed starts from the same weights; the fit depends on the seed, the
    settings above and the thread count only, and the GRPO run draws from its own generators.
    """
    key = _start_key(cfg)
    if key not in _STARTS:
        torch.manual_seed(cfg.seed)
        policy = _fit_start(cfg, torch.Generator().manual_seed(cfg.seed))
        _STARTS[key] = {k: v.clone() for k, v in policy.state_dict().items()}
    policy = GRUPolicy(PolicyConfig(cfg.vocab, cfg.modulus, cfg.length, cfg.hidden))
    policy.load_state_dict(_STARTS[key])
    return policy


def _fit_start(cfg: RLVRConfig, gen: torch.Generator) -> GRUPolicy:
    policy = GRUPolicy(PolicyConfig(cfg.vocab, cfg.modulus, cfg.length, cfg.hidden))
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.sft_lr)
    for _ in range(cfg.sft_steps):
        prompts, tokens = noisy_batch(cfg, cfg.sft_batch, gen)
        loss = -policy.token_logprob(prompts, tokens).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return policy


def evaluate(
    policy: GRUPolicy, cfg: RLVRConfig, gen: torch.Generator
) -> tuple[float, list[int]]:  # fmt: skip
    """Success rate over `eval_samples` responses per target, and the correct count per target."""
    prompts = torch.arange(cfg.modulus).repeat_interleave(cfg.eval_samples)  # (m * n,)
    roll = policy.sample(prompts, gen)
    ok = correct(prompts, roll.tokens, cfg.modulus)
    per_target = ok.view(cfg.modulus, cfg.eval_samples).sum(-1)
    return float(ok.float().mean()), [int(c) for c in per_target]


def train_rlvr(cfg: RLVRConfig) -> RLVRResult:
    """Fit the start policy, then run GRPO with the arm's clip rule."""
    start = time.perf_counter()
    rule = rule_of(cfg.arm)
    policy = fit_start(cfg)
    reference = GRUPolicy(policy.cfg)
    reference.load_state_dict(policy.state_dict())
    reference.requires_grad_(False)
    # rollouts and evaluation draw from their own streams: an arm's updates change what is
    # sampled, but not the evaluation's random numbers at a given iteration
    roll_gen = torch.Generator().manual_seed(cfg.seed + 1_000_003)
    eval_gen = torch.Generator().manual_seed(cfg.seed + 2_000_003)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    start_mean, _ = evaluate(policy, cfg, eval_gen)
    evals, eval_means = [0], [start_mean]
    entropy, fractions = [], []
    bin_clipped = torch.zeros(len(BINS) - 1, dtype=torch.long)
    bin_tokens = torch.zeros(len(BINS) - 1, dtype=torch.long)
    edges = torch.tensor(BINS[1:-1])
    batch = cfg.prompts * cfg.group
    mini = batch // cfg.updates
    for it in range(1, cfg.iterations + 1):
        prompts = torch.randint(cfg.modulus, (cfg.prompts,), generator=roll_gen)
        prompts = prompts.repeat_interleave(cfg.group)  # (P * G,)
        roll = policy.sample(prompts, roll_gen)
        reward = correct(prompts, roll.tokens, cfg.modulus).float() * 2.0 - 1.0  # (B,)
        adv = grpo_advantages(reward.view(cfg.prompts, cfg.group)).reshape(-1)  # (B,)
        with torch.no_grad():
            ref_logprob = reference.token_logprob(prompts, roll.tokens)  # (B, L)
        entropy.append(float(roll.entropy.mean()))
        order = torch.randperm(batch, generator=roll_gen)
        clipped_total = 0
        for k in range(cfg.updates):
            idx = order[k * mini : (k + 1) * mini]
            old = roll.logprob[idx]  # (b, L)
            logprob = policy.token_logprob(prompts[idx], roll.tokens[idx])  # (b, L)
            out = policy_loss(
                logprob, old, adv[idx, None].expand_as(old), torch.ones_like(old),
                rule=rule, ref_logprob=ref_logprob[idx], kl_coef=cfg.kl_coef,
                bounds=ratio_bounds(old, rule),
            )  # fmt: skip
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            opt.step()
            which = torch.bucketize(old.exp().flatten(), edges, right=True)  # (b * L,)
            bin_tokens += torch.bincount(which, minlength=len(BINS) - 1)
            bin_clipped += torch.bincount(which[out.clipped.flatten()], minlength=len(BINS) - 1)
            clipped_total += int(out.clipped.sum())
        fractions.append(clipped_total / (batch * cfg.length))
        if it % cfg.eval_every == 0 or it == cfg.iterations:
            mean, _ = evaluate(policy, cfg, eval_gen)
            evals.append(it)
            eval_means.append(mean)
    final_mean, final_correct = evaluate(policy, cfg, eval_gen)
    return RLVRResult(
        start_mean=start_mean,
        final_mean=final_mean,
        final_correct=final_correct,
        eval_samples=cfg.eval_samples,
        final_entropy=entropy[-1],
        start_entropy=entropy[0],
        clip_fraction=int(bin_clipped.sum()) / max(int(bin_tokens.sum()), 1),
        bin_clipped=[int(c) for c in bin_clipped],
        bin_tokens=[int(c) for c in bin_tokens],
        eval_iterations=evals,
        eval_mean=eval_means,
        entropy=entropy,
        clip_fractions=fractions,
        seconds=time.perf_counter() - start,
    )


def train_rlvr_dict(cfg: RLVRConfig) -> dict[str, Any]:
    """Worker entry point: run on one thread, return a dict (torch only, no inspect)."""
    with one_thread():
        return train_rlvr(cfg).as_dict()
