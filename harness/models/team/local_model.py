"""`local/team-moe`: the suite's tiny block-diffusion MoE as a `local/` model.

The checkpoint is the `team` suite's (trained from the seed on first use, then cached; the quick
preset unless `-M preset=tiny`). The prompt is the last user message written in the model's own
characters, e.g. `R345>` (reverse), `S312>` (sort) or `A12+34>` (addition); the completion is
the decoded answer without its EOS. `-M decoding=vanilla|team|no_speculation|no_caching|
no_limited` picks the decoder, and each output's metadata carries its TPF, APF and APT.
"""

from __future__ import annotations

import asyncio
from typing import Any

from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage

from harness.errors import HarnessUsageError
from harness.models.team.decode import VARIANTS, generate
from harness.models.team.tasks import EOS, VOCAB, render

NAME = "team-moe"
_CHARS = {t: i for i, t in enumerate(VOCAB) if len(t) == 1}


def parse_prompt(text: str) -> list[int]:
    """Ids of a prompt such as `R345>`; spaces are ignored."""
    text = "".join(text.split())
    bad = sorted({c for c in text if c not in _CHARS})
    if bad or not text:
        raise ValueError(
            f"local/{NAME}: the prompt {text!r} has characters outside the model's vocabulary "
            f"{bad}; write it as e.g. R345> (reverse), S312> (sort) or A12+34> (addition)"
        )
    return [_CHARS[c] for c in text]


class TeamMoeLocal:
    """Loads (or trains) the checkpoint once and decodes prompts with the chosen variant."""

    def __init__(self, seed: int = 0, decoding: str = "vanilla", preset: str = "quick") -> None:
        from harness.models.team.config import PRESETS, train_config
        from harness.models.team.train import load_or_train

        if decoding not in VARIANTS:
            raise HarnessUsageError(
                f"local/{NAME}: decoding must be one of {', '.join(VARIANTS)}, got {decoding!r}"
            )
        if preset not in PRESETS:
            raise HarnessUsageError(f"local/{NAME}: preset must be one of {', '.join(PRESETS)}")
        self.rules = VARIANTS[decoding]
        self.model, self.summary = load_or_train(train_config(int(seed), PRESETS[preset]))

    async def generate(self, messages: list[ChatMessage], model_name: str) -> ModelOutput:
        """Decode the last user message."""
        text = next((m.text for m in reversed(messages) if m.role == "user"), "")
        prompt = parse_prompt(text)
        answer, stats = await asyncio.to_thread(generate, self.model, prompt, self.rules)
        shown = answer[:-1] if answer and answer[-1] == EOS else answer
        out = ModelOutput.from_content(model=model_name, content=render(shown))
        out.usage = ModelUsage(input_tokens=len(prompt), output_tokens=len(answer),
                               total_tokens=len(prompt) + len(answer))  # fmt: skip
        meta: dict[str, Any] = stats.summary()
        out.metadata = {"decoding": meta}
        return out
