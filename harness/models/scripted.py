"""`scripted/NAME`: a provider for tests that answers by a script and reports token usage.

inspect's `mockllm/` reaches for a tokenizer download and fails offline; this one needs nothing.

Model args (`-M key=value`):
    outputs: a JSONL file of `{"id", "output"}` lines, answered per sample.
    answer: the text for samples the script does not name (default "").
    echo: answer with the last user message instead of `answer`.
    fail: comma-separated sample ids whose calls raise, to test error accounting.
    fail_seeds: comma-separated generation seeds (`GenerateConfig.seed`) whose calls raise, to
        fail single calls of a method wrapper.
    delay: seconds to wait before each answer, to make runs slow enough to interrupt.
    connections: how many samples may call at once (default 32).
    trace: a file to which each answered sample id is appended, one per line.
"""

from __future__ import annotations

import anyio
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput
from inspect_ai.tool import ToolChoice, ToolInfo

from harness.errors import HarnessUsageError
from harness.models.recorded import load_recorded
from harness.models.sample_context import current_sample
from harness.models.usage import word_usage

MAX_DELAY = 3600.0  # seconds: longer is a typo (and Infinity never answers)
MAX_CONNECTIONS = 10_000


def _seeds(value: str | int | list[int] | None) -> set[int]:
    """`fail_seeds` as a set of ints, or a usage error naming the value."""
    items = value.split(",") if isinstance(value, str) else [value] if value is not None else []
    if isinstance(value, list):
        items = value
    try:
        return {int(str(f).strip()) for f in items if str(f).strip()}
    except ValueError:
        raise HarnessUsageError(
            f"-M fail_seeds={value!r}: comma-separated whole numbers, e.g. 1,2"
        ) from None


class ScriptedFailure(RuntimeError):
    """The script says this sample's call fails."""


class ScriptedAPI(ModelAPI):
    """Answers by script; see the module docstring for its model args."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        outputs: str | None = None,
        answer: str = "",
        echo: bool = False,
        fail: str | list[str] | None = None,
        fail_seeds: str | int | list[int] | None = None,
        delay: float = 0.0,
        connections: int = 32,
        trace: str | None = None,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.recorded = load_recorded(outputs) if outputs else None
        self.answer = str(answer)
        self.echo = bool(echo)
        if isinstance(fail, str):
            fail = [f for f in fail.split(",") if f]
        self.fail = {str(f) for f in (fail or [])}
        self.fail_seeds = _seeds(fail_seeds)
        if not (isinstance(delay, int | float) and 0 <= delay <= MAX_DELAY):
            raise HarnessUsageError(f"-M delay={delay!r}: seconds from 0 to {MAX_DELAY}")
        self.delay = float(delay)
        if not (isinstance(connections, int) and 1 <= connections <= MAX_CONNECTIONS):
            raise HarnessUsageError(
                f"-M connections={connections!r}: a whole number from 1 to {MAX_CONNECTIONS}"
            )
        self.connections = connections
        if trace:
            try:  # checked now: a trace that cannot be written would fail every sample
                with open(trace, "a", encoding="utf-8"):
                    pass
            except OSError as ex:
                raise HarnessUsageError(
                    f"-M trace={trace}: cannot be written ({ex.strerror or ex}); name a "
                    "writable file"
                ) from None
        self.trace = trace

    def max_connections(self) -> int:
        """As many samples at once as the script allows."""
        return self.connections

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Answer the current sample by the script."""
        if self.delay > 0:
            await anyio.sleep(self.delay)
        ref = current_sample()
        if ref is not None and ref.id in self.fail:
            raise ScriptedFailure(f"scripted failure for sample '{ref.id}'")
        if config.seed is not None and config.seed in self.fail_seeds:
            raise ScriptedFailure(f"scripted failure for seed {config.seed}")
        text = None
        if self.recorded is not None and ref is not None:
            text = self.recorded.lookup(ref.id, ref.epoch)
        if text is None:
            text = input[-1].text if self.echo and input else self.answer
        if self.trace and ref is not None:
            with open(self.trace, "a", encoding="utf-8") as f:
                f.write(f"{ref.id}\n")
        output = ModelOutput.from_content(model=f"scripted/{self.model_name}", content=text)
        output.usage = word_usage(input, text)
        return output
