"""Token usage for providers that have no tokenizer: whitespace-separated words."""

from __future__ import annotations

from inspect_ai.model import ChatMessage, ModelUsage


def word_usage(input: list[ChatMessage], output: str) -> ModelUsage:
    """Usage counted in whitespace-separated words, input and output."""
    n_in = sum(len(m.text.split()) for m in input)
    n_out = len(output.split())
    return ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out)
