"""Calibrators: language models that give teacher-forced log-probs of a continuation.

SuCo scores a CoT prefix by the probability a "calibrator" model assigns to the gold answer
(spec suco.md §2). Which model the paper used in each stage is secondhand (Qwen3-4B, Qwen3-14B,
R1-Distill-7B were compared), so the calibrator is a spec:

- `local/NAME_OR_PATH`: a built-in tiny model or a Hugging Face checkpoint folder, in process
  (`harness.suco.calibrator_local`). Args: `batch_size`, `device`, `dtype`, `chat_template`.
- `openai-api/NAME/MODEL`: any OpenAI-compatible server whose legacy `/completions` endpoint
  echoes prompt log-probs (vLLM, for one), `harness.suco.calibrator_openai`. Args: `base_url`,
  `max_connections`, `timeout`.

Other providers cannot return the log-probs of given text, so they are a usage error.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from harness.errors import HarnessUsageError

SUPPORTED = "local/NAME_OR_PATH or openai-api/NAME/MODEL"


@runtime_checkable
class Calibrator(Protocol):
    """Teacher-forced log-probs of continuations given contexts."""

    name: str  # the spec it was loaded from

    def render_prompt(self, prompt: str) -> str:
        """The prompt as the model reads it (a chat template applied, or the text unchanged)."""
        ...

    def continuation_logprobs(self, pairs: list[tuple[str, str]]) -> list[list[float]]:
        """Natural-log probabilities of each continuation token, one list per (context, cont.)."""
        ...


def load_calibrator(spec: str, **args: Any) -> Calibrator:
    """The calibrator for `spec` with model args `args` (see the module docstring).

    Raises:
        HarnessUsageError: an unsupported provider, a malformed spec or a bad argument.

    """
    provider, sep, rest = spec.partition("/")
    if provider == "local" and rest:
        from harness.suco.calibrator_local import LocalCalibrator

        return LocalCalibrator(rest, **_known(spec, args, LocalCalibrator.ARGS))
    if provider == "openai-api":
        service, sep2, model = rest.partition("/")
        if not (service and sep2 and model):
            raise HarnessUsageError(
                f"calibrator {spec!r}: write openai-api/NAME/MODEL, for example "
                f"openai-api/vllm/Qwen/Qwen3-4B (NAME picks NAME_BASE_URL and NAME_API_KEY)"
            )
        from harness.suco.calibrator_openai import OpenAICompletionsCalibrator

        return OpenAICompletionsCalibrator(
            service, model, **_known(spec, args, OpenAICompletionsCalibrator.ARGS)
        )
    raise HarnessUsageError(
        f"calibrator {spec!r}: SuCo needs the log-probs of given text, which only {SUPPORTED} "
        f"calibrators provide here; use one of those forms"
    )


def _known(spec: str, args: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    unknown = sorted(set(args) - set(known))
    if unknown:
        raise HarnessUsageError(
            f"calibrator {spec!r}: unknown argument(s) {', '.join(unknown)}; "
            f"valid: {', '.join(known)}"
        )
    return args
