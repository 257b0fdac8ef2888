"""`replay/PATH`: plays back recorded outputs, for re-scoring and for tests.

PATH is an inspect log or a JSONL file with one `{"id": SAMPLE_ID, "output": TEXT}` per line
(an optional `"epoch"` picks an epoch). A sample with no recorded output errors for that sample
alone; with `score_on_error` it is scored wrong and counted in the errors.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput

from harness.models.recorded import load_recorded
from harness.models.sample_context import PerSampleAPI, SampleRef, current_sample
from harness.models.usage import word_usage


class ReplayMissing(LookupError):
    """A sample has no recorded output."""


class ReplayAPI(PerSampleAPI[SampleRef]):
    """Answers each sample with its recorded output."""

    bound = staticmethod(current_sample)
    outside = (
        "replay/ needs to know the sample: run a harness task (its solver starts with "
        "bind_sample())"
    )
    refusal = ReplayMissing

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.recorded = load_recorded(model_name)

    def max_connections(self) -> int:
        """Playback is free, so run many samples at once."""
        return 64

    async def answer(self, ref: SampleRef, input: list[ChatMessage]) -> ModelOutput:
        """Return the recorded output of the current sample."""
        text = self.recorded.lookup(ref.id, ref.epoch)
        if text is None:
            raise ReplayMissing(
                f"no recorded output for sample '{ref.id}' in {self.recorded.source}"
            )
        output = ModelOutput.from_content(model=f"replay/{self.model_name}", content=text)
        output.usage = word_usage(input, text)
        return output
