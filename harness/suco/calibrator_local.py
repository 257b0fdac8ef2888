"""`local/NAME_OR_PATH` calibrator: teacher-forced continuation log-probs from a transformers LM.

NAME is a built-in tiny model or PATH a Hugging Face checkpoint folder, resolved as the `local/`
provider does (`harness.models.local.resolve_checkpoint`, `local_files_only`).

Token boundary (ours): the context is tokenized alone and then joined with the continuation;
the scored tokens are those of the joined text past the longest common prefix of the two token
lists. When a token straddles the boundary (a merge of the context's last characters with the
continuation's first), that token is scored, since it carries part of the answer. When nothing
of the context precedes the first scored token, the BOS token (else EOS) is put in front so that
it has a prediction. Special tokens are added as the tokenizer does by default, except when the
context already starts with the BOS text (a chat template wrote it).

Each batch is one forward pass, right-padded, sorted by length to waste little padding; logits
are (B, T, V), so `batch_size` bounds memory. Args: `batch_size` (default 16), `device`
(default cuda if available, else cpu), `dtype` (`float32`, `bfloat16`, `float16`),
`chat_template` (default: the tokenizer's if it has one; `false` passes the prompt as is).
"""

from __future__ import annotations

import inspect
import threading
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError

_loaded: dict[tuple[str, str, str], tuple[Any, Any]] = {}
_load_lock = threading.Lock()


class LocalCalibrator:
    """A transformers causal LM that scores continuations; see the module docstring."""

    ARGS = ("batch_size", "device", "dtype", "chat_template")

    def __init__(
        self,
        name: str,
        batch_size: int = 16,
        device: str | None = None,
        dtype: str = "float32",
        chat_template: bool | None = None,
    ) -> None:
        try:
            import torch
        except ImportError:
            raise HarnessUsageError(
                "local/ calibrators need torch and transformers: pip install torch transformers"
            ) from None
        from harness.models.local import resolve_checkpoint

        if dtype not in ("float32", "bfloat16", "float16"):
            raise HarnessUsageError(
                f"local/{name}: dtype must be float32, bfloat16 or float16, got {dtype!r}"
            )
        if int(batch_size) < 1:
            raise HarnessUsageError(f"local/{name}: batch_size must be at least 1")
        self.name = f"local/{name}"
        self.batch_size = int(batch_size)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        path = resolve_checkpoint(name)
        key = (str(path.resolve()), self.device, dtype)
        with _load_lock:
            if key not in _loaded:
                _loaded[key] = _load(path, self.device, getattr(torch, dtype))
        self.model, self.tokenizer = _loaded[key]
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        self.chat_template = has_template if chat_template is None else bool(chat_template)
        if self.chat_template and not has_template:
            raise HarnessUsageError(f"local/{name}: the tokenizer has no chat template")
        cfg = self.model.config
        self.max_positions = getattr(cfg, "max_position_embeddings", None) or getattr(
            cfg, "n_positions", None
        )
        params = inspect.signature(self.model.forward).parameters
        self._keeps_logits = "logits_to_keep" in params
        self._lock = threading.Lock()  # one forward pass at a time (scorers call from threads)

    def render_prompt(self, prompt: str) -> str:
        """The prompt through the tokenizer's chat template (one user turn), or unchanged."""
        if not self.chat_template:
            return prompt
        from inspect_ai.model import ChatMessageUser

        from harness.models.local import render_prompt

        return render_prompt(self.tokenizer, [ChatMessageUser(content=prompt)])

    def scored_ids(self, context: str, continuation: str) -> tuple[list[int], int]:
        """Token ids of context + continuation and the index of the first scored token."""
        tok = self.tokenizer
        add_special = not (tok.bos_token and context.startswith(tok.bos_token))
        ctx = tok(context, add_special_tokens=add_special)["input_ids"]
        full = tok(context + continuation, add_special_tokens=add_special)["input_ids"]
        k = 0
        while k < min(len(ctx), len(full)) and ctx[k] == full[k]:
            k += 1
        if k == len(full):
            raise ValueError(f"continuation {continuation!r} adds no tokens to the context")
        if k == 0:
            start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
            if start is None:
                raise ValueError(f"{self.name}: no BOS/EOS token to put before the first token")
            full, k = [start, *full], 1
        if self.max_positions and len(full) > self.max_positions:
            raise HarnessUsageError(
                f"{self.name}: context and continuation take {len(full)} tokens, more than the "
                f"model's {self.max_positions} positions; use a shorter text or a bigger model"
            )
        return full, k

    def continuation_logprobs(self, pairs: list[tuple[str, str]]) -> list[list[float]]:
        """Natural-log probabilities of each continuation token, in the order of `pairs`."""
        import torch

        encoded = [self.scored_ids(c, y) for c, y in pairs]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        out: list[list[float]] = [[] for _ in encoded]
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else pad
        for b in range(0, len(order), self.batch_size):
            rows = order[b : b + self.batch_size]
            width = max(len(encoded[i][0]) for i in rows)
            ids = torch.full((len(rows), width), pad, dtype=torch.long)  # (B, T)
            mask = torch.zeros_like(ids)
            for r, i in enumerate(rows):
                seq = encoded[i][0]
                ids[r, : len(seq)] = torch.tensor(seq)
                mask[r, : len(seq)] = 1
            # logits of the last `keep` positions cover every row's scored positions
            first = min(encoded[i][1] for i in rows) - 1
            kwargs = {"logits_to_keep": width - first} if self._keeps_logits else {}
            with self._lock, torch.inference_mode():
                logits = self.model(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device), **kwargs
                ).logits  # (B, keep, V)
            offset = width - logits.shape[1]  # position of logits[:, 0]
            for r, i in enumerate(rows):
                seq, k = encoded[i]
                pred = logits[r, k - 1 - offset : len(seq) - 1 - offset].float()  # (m, V)
                lp = torch.log_softmax(pred, dim=-1)
                target = torch.tensor(seq[k:], device=lp.device)  # (m,)
                out[i] = lp.gather(-1, target[:, None])[:, 0].tolist()
        return out


def _load(path: Path, device: str, dtype: Any) -> tuple[Any, Any]:
    from transformers import AutoTokenizer

    from harness.models.local import load_causal_lm

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = load_causal_lm(path, dtype=dtype)
    model.to(device).eval()
    return model, tokenizer
