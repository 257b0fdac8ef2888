"""Vanilla SDAR-style block decoding and TEAM, with per-forward expert instrumentation.

Vanilla (specs/team.md §2): per block, forward it over the read-only KV cache, x0 = argmax,
p = softmax(x0); among masked positions unmask every one with p > τ if there are at least n = 1
of them, else the top-1; repeat until no mask is left, then one more forward writes the block's
KV into the cache. Decoding stops after the block holding EOS.

TEAM (from the authors' code, as the spec describes it), per block: step 0 is a plain forward.
Each later step forwards up to 4 candidates in one batch (C0 = block, C1/C2 = one of the two hot
tokens filled with its previous prediction, C3 = both), each seeing the cache and only its own
rows, and keeps the verified one. Three rules, each switchable (`TeamRules`):
- speculation: the candidates above; off, only C0 is forwarded;
- delayed caching: rows of decoded tokens reuse the MoE outputs stored from the previous step's
  chosen candidate, except tokens unmasked in the previous step, which are recomputed once;
- limited activation: far (distance to the nearest decoded position of C3 > cold_distance),
  unconfident (previous p < cold_confidence), non-hot masked rows may only use experts that the
  other computed rows selected.

Ours, where the spec is silent: hot tokens accepted through the choice count as "transferred in
the previous step" (recomputed once, like T); when every computed row is cold, they route
freely; APF counts experts given a non-zero weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from harness.models.team.model import BlockDiffusionMoE, MoeControl, MoeStats
from harness.models.team.tasks import EOS, MASK


@dataclass(frozen=True)
class TeamRules:
    """TEAM's switches and constants (the paper's hard-coded values, scaled to L = 8)."""

    speculation: bool = True
    caching: bool = True
    limited: bool = True
    tau: float = 0.95  # transfer threshold
    cold_distance: int = 1  # the spec's 3 at L = 32, scaled (§6 measured 1 at L = 8)
    cold_confidence: float = 0.7


VARIANTS: dict[str, TeamRules | None] = {
    "vanilla": None,
    "team": TeamRules(),
    "no_speculation": TeamRules(speculation=False),
    "no_caching": TeamRules(caching=False),
    "no_limited": TeamRules(limited=False),
}


@dataclass
class DecodeStats:
    """Counts over one generation."""

    forwards: int = 0  # denoising forwards (the default TPF convention)
    commits: int = 0  # KV-commit forwards, one per finished block
    tokens: int = 0  # tokens accepted (masks filled)
    experts: list[int] = field(default_factory=list)  # distinct experts, per (forward, layer)
    calls: int = 0  # (row, expert) pairs computed in denoising forwards
    rows: int = 0  # rows routed in denoising forwards
    cold_rows: int = 0  # cold rows, summed over forwards (per position, all candidates)
    masked_rows: int = 0  # masked rows, summed over forwards
    cold_violations: int = 0  # cold rows given an expert outside `necessary`; must be 0
    trace: list[dict] = field(default_factory=list)  # per step: what was cached, transferred

    @property
    def tpf(self) -> float:
        """Tokens accepted per forward, KV commits excluded."""
        return self.tokens / max(1, self.forwards)

    @property
    def tpf_with_commits(self) -> float:
        """Tokens accepted per forward, KV commits included."""
        return self.tokens / max(1, self.forwards + self.commits)

    @property
    def apf(self) -> float:
        """Distinct experts per layer per forward."""
        return sum(self.experts) / max(1, len(self.experts))

    @property
    def apt(self) -> float:
        """APF / TPF."""
        return self.apf / self.tpf if self.tpf else float("nan")

    def summary(self) -> dict:
        """JSON-ready figures."""
        return {"tpf": self.tpf, "tpf_with_commits": self.tpf_with_commits, "apf": self.apf,
                "apt": self.apt, "forwards": self.forwards, "commits": self.commits,
                "tokens": self.tokens, "calls_per_row": self.calls / max(1, self.rows),
                "cold_share": self.cold_rows / max(1, self.masked_rows),
                "cold_violations": self.cold_violations}  # fmt: skip


def _transfer(conf: Tensor, tau: float) -> Tensor:
    """Positions to unmask: every one with conf > τ if any, else the top-1 (n = 1); bool (L,)."""
    finite = torch.isfinite(conf)
    out = torch.zeros_like(finite)
    if not bool(finite.any()):
        return out
    above = conf > tau
    if int(above.sum()) >= 1:
        return above
    out[int(conf.argmax())] = True
    return out


def _predict(logits: Tensor) -> tuple[Tensor, Tensor]:
    probs = torch.softmax(logits.float(), dim=-1)
    p, x0 = probs.max(dim=-1)
    return x0, p


def _record(stats: DecodeStats, layer_stats: list[MoeStats]) -> None:
    stats.forwards += 1
    for s in layer_stats:
        stats.experts.append(len(s.experts))
        stats.calls += s.calls
        stats.rows += s.rows
        stats.cold_violations += s.cold_violations


@torch.no_grad()
def generate(
    model: BlockDiffusionMoE,
    prompt: list[int] | tuple[int, ...],
    rules: TeamRules | None = None,
    *,
    tau: float = 0.95,
    trace: bool = False,
) -> tuple[list[int], DecodeStats]:
    """Decode the answer to `prompt`: vanilla when `rules` is None, else TEAM with `rules`.

    Returns the answer ids (through the first EOS, or to the end of the sequence) and the
    stats.
    """
    cfg = model.cfg
    L = cfg.block
    stats = DecodeStats()
    prompt = list(prompt)
    n_full = len(prompt) // L
    cache = model.prefill(torch.tensor(prompt[: n_full * L], dtype=torch.long))
    out: list[int] = []
    start = n_full * L
    while start < cfg.seq_len:
        given = prompt[start : start + L]
        block = torch.tensor(given + [MASK] * (L - len(given)), dtype=torch.long)
        positions = torch.arange(start, start + L)
        if rules is None:
            block = _vanilla_block(model, block, positions, cache, tau, stats)
        else:
            block = _team_block(model, block, positions, cache, rules, stats, trace)
        _, _, kvs = model.rows(block, positions, torch.zeros(L, dtype=torch.long), cache)
        cache = [(torch.cat([k0, k1], 2), torch.cat([v0, v1], 2))
                 for (k0, v0), (k1, v1) in zip(cache, kvs, strict=True)]  # fmt: skip
        stats.commits += 1
        out += block[len(given) :].tolist()
        if EOS in out:
            return out[: out.index(EOS) + 1], stats
        start += L
    return out, stats


def _vanilla_block(model, block, positions, cache, tau, stats) -> Tensor:
    groups = torch.zeros(len(block), dtype=torch.long)
    while bool((block == MASK).any()):
        layer_stats = [MoeStats() for _ in model.blocks]
        logits, _, _ = model.rows(block, positions, groups, cache, stats=layer_stats)
        _record(stats, layer_stats)
        stats.masked_rows += int((block == MASK).sum())
        x0, p = _predict(logits)
        moved = _transfer(torch.where(block == MASK, p, -torch.inf), tau)
        block = torch.where(moved, x0, block)
        stats.tokens += int(moved.sum())
    return block


def _distance_to_decoded(decoded: Tensor) -> Tensor:
    """Per position, the distance to the nearest decoded position (a large number if none)."""
    idx = torch.arange(len(decoded))
    where = idx[decoded]
    if where.numel() == 0:
        return torch.full((len(decoded),), 10**6)
    return (idx[:, None] - where[None, :]).abs().min(dim=1).values


def _team_block(model, block, positions, cache, rules: TeamRules, stats, trace) -> Tensor:
    L = len(block)
    n_layer = len(model.blocks)
    # step 0: a plain full-MoE forward
    layer_stats = [MoeStats() for _ in range(n_layer)]
    logits, moe_out, _ = model.rows(block, positions, torch.zeros(L, dtype=torch.long), cache,
                                    stats=layer_stats)  # fmt: skip
    _record(stats, layer_stats)
    stats.masked_rows += int((block == MASK).sum())
    x0, p = _predict(logits)
    moved = _transfer(torch.where(block == MASK, p, -torch.inf), rules.tau)
    block = torch.where(moved, x0, block)
    stats.tokens += int(moved.sum())
    stored = [m.clone() for m in moe_out]  # (L, d) per layer, of the chosen candidate
    transferred = moved
    while bool((block == MASK).any()):
        masked = block == MASK
        order = torch.where(masked, p, -torch.inf).argsort(descending=True)
        hot = order[: min(2, int(masked.sum()))].tolist()  # i1 (and i2)
        c1 = block.clone()
        c1[hot[0]] = x0[hot[0]]
        both = c1.clone()
        if len(hot) > 1:
            both[hot[1]] = x0[hot[1]]
        if rules.speculation:
            c2 = block.clone()
            if len(hot) > 1:
                c2[hot[1]] = x0[hot[1]]
            cands = [block, c1, c2, both]
        else:
            cands = [block]
        n_c = len(cands)
        cached = (block != MASK) & ~transferred if rules.caching else torch.zeros_like(masked)
        cold = torch.zeros_like(masked)
        if rules.limited:
            far = _distance_to_decoded(both != MASK) > rules.cold_distance
            cold = far & (p < rules.cold_confidence) & masked
            cold[hot] = False
        controls = [
            MoeControl(cached=cached.repeat(n_c), stored=stored[i].repeat(n_c, 1),
                       cold=cold.repeat(n_c))
            for i in range(n_layer)
        ]  # fmt: skip
        layer_stats = [MoeStats() for _ in range(n_layer)]
        logits, moe_out, _ = model.rows(
            torch.cat(cands), positions.repeat(n_c),
            torch.arange(n_c).repeat_interleave(L), cache, controls, layer_stats,
        )  # fmt: skip
        _record(stats, layer_stats)
        stats.masked_rows += int(masked.sum()) * n_c
        stats.cold_rows += int(cold.sum()) * n_c
        preds = [_predict(logits[c * L : (c + 1) * L]) for c in range(n_c)]
        moves = [
            _transfer(torch.where(cands[c] == MASK, preds[c][1], -torch.inf), rules.tau)
            for c in range(n_c)
        ]
        choice = _choose(hot, x0, preds, moves) if rules.speculation else 0
        filled = cands[choice] != block  # hot tokens the choice accepted
        new_x0, new_p = preds[choice]
        block = torch.where(moves[choice], new_x0, cands[choice])
        stats.tokens += int(moves[choice].sum()) + int(filled.sum())
        if trace:
            stats.trace.append({
                "block_start": int(positions[0]),
                "cached": cached.nonzero().flatten().tolist(),
                "unmasked_before": transferred.nonzero().flatten().tolist(),
                "cold": cold.nonzero().flatten().tolist(),
                "choice": choice,
            })  # fmt: skip
        transferred = moves[choice] | filled
        x0, p = new_x0, new_p
        stored = [m[choice * L : (choice + 1) * L].clone() for m in moe_out]
    return block


def _choose(hot: list[int], x0: Tensor, preds, moves) -> int:
    """The spec's verification: which candidate's hot tokens the model confirms."""
    i1 = hot[0]
    t1 = int(x0[i1])

    def confirms(c: int, i: int, t: int) -> bool:
        return bool(moves[c][i]) and int(preds[c][0][i]) == t

    acc1 = confirms(0, i1, t1)
    if len(hot) < 2:
        return 1 if acc1 else 0
    i2 = hot[1]
    t2 = int(x0[i2])
    acc2 = confirms(0, i2, t2)
    acc21 = acc2 and confirms(2, i1, t1)
    acc12 = confirms(1, i2, t2)
    if (acc1 and acc2) or (acc1 and acc12) or (acc2 and acc21):
        return 3
    return 1 if acc1 else (2 if acc2 else 0)
