"""Logits processors that watermark generation: KGW's green bias and ADFP's proxy-weighted one.

Both have Hugging Face's `LogitsProcessor` signature, `(input_ids (B, T), scores (B, V)) ->
scores`, so they are the hook for an HF model as well as for the suite's own generator:

    from transformers import LogitsProcessorList
    rule = GreenList(gamma=0.25, vocab=model.config.vocab_size, h=2,
                     special=tuple(tokenizer.all_special_ids))
    out = model.generate(**inputs, do_sample=True, temperature=1.0,
                         logits_processor=LogitsProcessorList([KGWProcessor(rule, key=42)]))

HF applies a processor passed this way after its own processors, and where it applies the
temperature depends on its version; sample at temperature 1 (and scale the logits yourself if
you want another) to get exactly p_wm(v) ∝ p(v) e^{delta m(v)}. The suite's generator divides by
the temperature first, then adds delta (specs/provenance.md §2: ours adds delta to logits/τ).

KGW: scores + delta * m(c_t, .). ADFP (from the authors' `ADSLogitsProcessor`): with q the
proxy's next-token distribution at the same prefix, scores + lam * q * (m - <q, m>), and no
change where the teacher's argmax is EOS. `last_mask` keeps the green mask of the last call,
for the generator's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from harness.suites.provenance.greenlist import GreenList


def _row_keys(key: int | np.ndarray, rows: int) -> np.ndarray:
    arr = np.asarray(key)
    if arr.ndim == 0:
        return np.full(rows, int(key), dtype=np.uint64)
    if arr.shape != (rows,):
        raise ValueError(f"need one key per row ({rows}), got shape {arr.shape}")
    return arr.astype(np.uint64)


class KGWProcessor:
    """Adds delta to the logits of the green tokens of each row's context and key."""

    def __init__(self, rule: GreenList, key: int | np.ndarray, delta: float) -> None:
        """The green rule, a key (or one per row) and the bias."""
        self.rule, self.key, self.delta = rule, key, float(delta)
        self.last_mask: np.ndarray | None = None

    def mask(self, input_ids: torch.Tensor) -> np.ndarray:
        """Green mask (B, V) after each row of input_ids (B, T)."""
        ids = input_ids.detach().cpu().numpy()
        ctx = self.rule.contexts(ids, ids.shape[1])
        return self.rule.mask(_row_keys(self.key, ids.shape[0]), ctx)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """Return scores (B, V) + delta * green mask."""
        self.last_mask = self.mask(input_ids)
        green = torch.from_numpy(self.last_mask[:, : scores.shape[1]]).to(scores.device)
        return scores + self.delta * green.to(scores.dtype)


class ADFPProcessor:
    """ADFP: scores + lam * q * (m - <q, m>), q from a proxy at the same prefix."""

    def __init__(
        self,
        rule: GreenList,
        key: int | np.ndarray,
        lam: float,
        proxy: Callable[[torch.Tensor], torch.Tensor],
        eos: int | None = None,
    ) -> None:
        """The green rule, a key (or one per row), the strength, the proxy and the EOS id.

        `proxy(input_ids)` returns the proxy's next-token logits (B, V) after each row.
        """
        self.rule, self.key, self.lam, self.proxy, self.eos = rule, key, float(lam), proxy, eos
        self.last_mask: np.ndarray | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """The proxy-weighted perturbation, zero on rows whose argmax is EOS."""
        ids = input_ids.detach().cpu().numpy()
        self.last_mask = self.rule.mask(_row_keys(self.key, ids.shape[0]),
                                        self.rule.contexts(ids, ids.shape[1]))  # fmt: skip
        m = torch.from_numpy(self.last_mask[:, : scores.shape[1]]).to(scores.device, scores.dtype)
        q = torch.softmax(self.proxy(input_ids).to(scores.dtype), dim=-1)  # (B, V)
        shift = self.lam * q * (m - (q * m).sum(-1, keepdim=True))
        if self.eos is not None:
            shift = torch.where((scores.argmax(-1) == self.eos)[:, None], 0.0, shift)
        return scores + shift


class IncrementalProxy:
    """A proxy model's next-token logits for a growing batch of prefixes, one step at a time.

    Called with input_ids one token longer than last time, it decodes that token from its
    cache; any other call starts again from the whole prefix (correct, but slower).
    """

    def __init__(self, model: torch.nn.Module) -> None:
        """Wrap a model with `start(prefix)` and `step(state, tokens)`."""
        self.model = model
        self.state: object = None
        self.length = -1
        self.rows = -1

    def __call__(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits (B, V) after each row of input_ids (B, T)."""
        b, t = input_ids.shape
        if self.state is not None and t == self.length + 1 and b == self.rows:
            logits, self.state = self.model.step(self.state, input_ids[:, -1])
        else:
            logits, self.state = self.model.start(input_ids)
        self.length, self.rows = t, b
        return logits.float()
