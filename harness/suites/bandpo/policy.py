"""A tiny GRU policy for the toy RLVR task: a target residue in, a fixed-length digit string out.

The prompt is a target t in [0, m); it sets the GRU's initial state through an embedding. The
response is `length` tokens from a vocabulary of `vocab`, generated left to right from a
begin token. Small enough to train on one CPU thread in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class PolicyConfig:
    """Shape of the policy."""

    vocab: int = 16  # response tokens 0 .. vocab-1 (the begin token is vocab)
    targets: int = 7  # prompts: the target residue t in [0, targets)
    length: int = 8  # response tokens
    hidden: int = 64  # GRU width
    embed: int = 32  # token embedding width

    def __post_init__(self) -> None:
        if min(self.vocab, self.targets, self.length, self.hidden, self.embed) < 1:
            raise ValueError(f"every size must be positive: {self}")


@dataclass(frozen=True)
class Rollout:
    """Sampled responses and what the sampling policy said about them."""

    prompts: torch.Tensor  # (B,) target residues
    tokens: torch.Tensor  # (B, L) sampled tokens
    logprob: torch.Tensor  # (B, L) log-probability of each under the sampler
    entropy: torch.Tensor  # (B, L) the sampler's entropy at each position


class GRUPolicy(nn.Module):
    """Embedding -> GRU -> vocabulary logits, its initial state set by the prompt."""

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.prompt = nn.Embedding(cfg.targets, cfg.hidden)
        self.token = nn.Embedding(cfg.vocab + 1, cfg.embed)  # + the begin token
        self.gru = nn.GRU(cfg.embed, cfg.hidden, batch_first=True)
        self.head = nn.Linear(cfg.hidden, cfg.vocab)

    def logits(self, prompts: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Teacher-forced next-token logits for every response position, (B, L, V)."""
        begin = torch.full_like(tokens[:, :1], self.cfg.vocab)  # (B, 1)
        inputs = torch.cat([begin, tokens[:, :-1]], dim=1)  # (B, L)
        h0 = torch.tanh(self.prompt(prompts))[None]  # (1, B, H)
        out, _ = self.gru(self.token(inputs), h0)  # (B, L, H)
        return self.head(out)  # (B, L, V)

    def token_logprob(self, prompts: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The log-probability log pi(token | prompt, prefix) for each response token, (B, L)."""
        logp = torch.log_softmax(self.logits(prompts, tokens), -1)  # (B, L, V)
        return logp.gather(-1, tokens[..., None])[..., 0]

    @torch.no_grad()
    def sample(self, prompts: torch.Tensor, gen: torch.Generator) -> Rollout:
        """Sample one response per prompt at temperature 1."""
        batch = prompts.shape[0]
        h = torch.tanh(self.prompt(prompts))[None]  # (1, B, H)
        x = torch.full((batch, 1), self.cfg.vocab, dtype=torch.long)
        tokens, logps, ents = [], [], []
        for _ in range(self.cfg.length):
            out, h = self.gru(self.token(x), h)  # (B, 1, H)
            logp = torch.log_softmax(self.head(out[:, 0]), -1)  # (B, V)
            nxt = torch.multinomial(logp.exp(), 1, generator=gen)  # (B, 1)
            tokens.append(nxt)
            logps.append(logp.gather(-1, nxt))
            ents.append(-(logp.exp() * logp).sum(-1, keepdim=True))
            x = nxt
        return Rollout(prompts, torch.cat(tokens, 1), torch.cat(logps, 1), torch.cat(ents, 1))
