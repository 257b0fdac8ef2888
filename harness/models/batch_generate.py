"""Batched generation for a Hugging Face causal LM: one `model.generate` call for many prompts.

This is the compute core of `local/`. It left-pads the prompts, generates, cuts each row at its end
token, its own token limit and its stop strings, and returns per-token log-probabilities when
asked. The provider's micro-batcher and the benchmarks' bare loop both call `generate_batch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GenRequest:
    """One prompt to complete, with its sampling settings."""

    prompt: str  # rendered prompt text
    max_new_tokens: int  # cap on generated tokens
    temperature: float = 0.0  # 0 means greedy
    top_p: float | None = None  # nucleus sampling cut, when sampling
    logprobs: bool = False  # return the chosen tokens' log-probabilities
    top_logprobs: int = 0  # how many alternatives per position, with logprobs
    stop: tuple[str, ...] = ()  # stop strings; the text is cut before the first one

    def group_key(self) -> tuple[Any, ...]:
        """Requests with equal keys can share one `generate` call."""
        return (self.temperature, self.top_p, self.logprobs, self.top_logprobs)


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token, its log-probability, and the best alternatives."""

    token: str  # decoded token text
    logprob: float  # natural-log probability under the model's raw logits
    top: tuple[tuple[str, float], ...]  # (token, logprob) alternatives, best first


@dataclass(frozen=True)
class GenResult:
    """The completion of one request."""

    text: str  # decoded completion, cut at the end token or a stop string
    input_tokens: int  # prompt length in tokens
    output_tokens: int  # generated tokens kept
    stop_reason: str  # "stop" (end token or stop string) or "max_tokens"
    logprobs: tuple[TokenLogprob, ...] | None  # per generated token, when requested


def generate_batch(model: Any, tokenizer: Any, requests: list[GenRequest]) -> list[GenResult]:
    """Complete requests that share a `group_key` in one batched `generate` call."""
    import torch

    if not requests:
        return []
    first = requests[0]
    if any(r.group_key() != first.group_key() for r in requests):
        raise ValueError("generate_batch needs requests with one group_key; split them first")
    tokenizer.padding_side = "left"
    enc = tokenizer(
        [r.prompt for r in requests],
        return_tensors="pt",
        padding=True,
        add_special_tokens=tokenizer.chat_template is None,
    ).to(model.device)
    prompt_len = enc["input_ids"].shape[1]
    sample = first.temperature > 0
    kwargs: dict[str, Any] = {"do_sample": sample}
    if sample:
        kwargs["temperature"] = first.temperature
        if first.top_p is not None:
            kwargs["top_p"] = first.top_p
    else:  # silence the "generation flags are not valid" warnings of checkpoints with defaults
        kwargs.update(temperature=None, top_p=None, top_k=None)
    with torch.inference_mode():
        out = model.generate(
            **enc,
            max_new_tokens=max(r.max_new_tokens for r in requests),
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            return_dict_in_generate=True,
            output_logits=first.logprobs,
            **kwargs,
        )
    new = out.sequences[:, prompt_len:]  # (B, T_new)
    steps = None
    if first.logprobs:
        steps = torch.stack(out.logits, dim=1).float().log_softmax(-1)  # (B, T_new, V)
    results = []
    for row, req in enumerate(requests):
        ids = new[row].tolist()[: req.max_new_tokens]
        stop_reason = "max_tokens"
        if tokenizer.eos_token_id in ids:
            ids = ids[: ids.index(tokenizer.eos_token_id)]
            stop_reason = "stop"
        text = tokenizer.decode(ids, skip_special_tokens=True)
        for s in req.stop:
            cut = text.find(s)
            if cut >= 0:
                text, stop_reason = text[:cut], "stop"
        lps = None
        if steps is not None:
            lps = tuple(_token_logprobs(tokenizer, steps[row], ids, req.top_logprobs))
        results.append(
            GenResult(
                text=text,
                input_tokens=int(enc["attention_mask"][row].sum()),
                output_tokens=len(ids),
                stop_reason=stop_reason,
                logprobs=lps,
            )
        )
    return results


def _token_logprobs(tokenizer: Any, logp: Any, ids: list[int], top: int) -> list[TokenLogprob]:
    out = []
    for t, tid in enumerate(ids):
        alts: tuple[tuple[str, float], ...] = ()
        if top > 0:
            vals, idx = logp[t].topk(top)
            alts = tuple(
                (tokenizer.decode([i]), float(v))
                for v, i in zip(vals.tolist(), idx.tolist(), strict=True)
            )
        out.append(TokenLogprob(tokenizer.decode([tid]), float(logp[t, tid]), alts))
    return out
