r"""`suco/INNER`: sufficiency-guided early exit at inference; OUR DERIVATION, not the paper's.

SuCo (Wang et al., arXiv 2606.17687; specs/suco.md) trains a model to stop reasoning at its
minimal sufficient CoT. This wrapper applies the same criterion at inference to an untrained
model, which the paper does not do:

1. Probe the answer with an empty CoT (t = 0).
2. Generate the reasoning in chunks of `chunk_tokens`, continuing a trailing assistant message
   `think_open + reasoning`. After each chunk, every newly completed sentence (the splitter of
   `harness.suco.segment`) ends a prefix z_{<=t}.
3. Probe each prefix: the inner model, greedy, continues `think_open + z + think_close + lead_in`
   up to `answer_close`; S is the geometric mean of that answer's token probabilities
   (`harness.suco.sufficiency`), from the inner model's log-probs or, with `-M calibrator=SPEC`,
   from a calibrator scoring `answer + answer_close` (`harness.suco.calibrator`).
4. Stop at the first prefix with S >= delta, and answer with that probe. Without one, the
   reasoning runs until the model closes it, `max_sentences`, or the task's max_tokens, and the
   answer is the probe of the whole reasoning.

delta: a fixed `-M delta=D`, else delta0 + alpha * complexity. The paper's C(x) is the percentile
rank of the full trajectory's length, which is unknown while generating; ours takes a fixed
`complexity` (default 0.5), so the default delta is 0.6 + 0.3 * 0.5 = 0.75 (delta0 and alpha are
ours too, specs/suco.md §4).

The inner model must continue a trailing assistant message (local/ models do; so do
completion-style servers and providers with assistant prefill). Every call runs one after
another, so B_seq = B_total. The output is `think_open + z + think_close + lead_in + answer +
answer_close`; its metadata (`harness_method`) holds every probe with its S, whether it exited
early, and the budgets.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    get_model,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from inspect_ai.util import span

from harness.errors import HarnessUsageError
from harness.models.methods.budget import CallRecord, budget_of
from harness.models.methods.record import add_call_budget
from harness.models.methods.refine_api import split_inner_args
from harness.models.usage import word_usage
from harness.suco.segment import sentence_ends
from harness.suco.sufficiency import sufficiency
from harness.suco.threshold import adaptive_delta

DERIVATION = (
    "suco/ early exit is our derivation, not the paper's trained model: probes after each "
    "sentence, S from the probed answer's token probabilities, delta = delta0 + alpha * fixed "
    "complexity (the paper's C(x) needs the full trajectory); delta0, alpha, the splitter and "
    "the template are ours (specs/suco.md section 4)"
)
PROMPT_VERSION = "suco-exit-v1"


class SucoExitAPI(ModelAPI):
    """Sufficiency-guided early exit around an inner model; see the module docstring."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        delta: float | None = None,
        delta0: float = 0.6,
        alpha: float = 0.3,
        complexity: float = 0.5,
        chunk_tokens: int = 48,
        max_sentences: int = 64,
        answer_tokens: int = 16,
        calibrator: str | None = None,
        think_open: str = "<think>",
        think_close: str = "</think>",
        lead_in: str = "The final answer is \\boxed{",
        answer_close: str = "}",
        **inner_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if not model_name or "/" not in model_name:
            raise HarnessUsageError(
                "suco/ wraps a model: write suco/PROVIDER/NAME, for example suco/local/tiny-arith"
            )
        try:
            self.delta = float(delta) if delta is not None else adaptive_delta(
                float(complexity), float(delta0), float(alpha)
            )  # fmt: skip
        except ValueError as ex:
            raise HarnessUsageError(f"suco/: {ex}") from None
        if not 0.0 < self.delta <= 1.0:
            raise HarnessUsageError(f"suco/: delta must be in (0, 1], got {self.delta}")
        if min(int(chunk_tokens), int(max_sentences), int(answer_tokens)) < 1:
            raise HarnessUsageError(
                "suco/: chunk_tokens, max_sentences, answer_tokens must be >= 1"
            )
        self.chunk_tokens, self.max_sentences = int(chunk_tokens), int(max_sentences)
        self.answer_tokens = int(answer_tokens)
        self.think_open, self.think_close = str(think_open), str(think_close)
        self.lead_in, self.answer_close = str(lead_in), str(answer_close)
        self.settings = {"delta": self.delta, "delta0": delta0, "alpha": alpha,
                         "complexity": complexity, "chunk_tokens": self.chunk_tokens,
                         "max_sentences": self.max_sentences, "calibrator": calibrator}  # fmt: skip
        inner = split_inner_args(inner_args, "suco")
        self.inner = get_model(model_name, base_url=base_url, api_key=api_key, **inner)
        self.calibrator = None
        if calibrator:
            from harness.suco.calibrator import load_calibrator

            self.calibrator = load_calibrator(str(calibrator))

    def max_connections(self) -> int:
        """As many samples at once as the inner model takes calls."""
        return self.inner.api.max_connections()

    def describe(self) -> dict[str, Any]:
        """The settings recorded with every output."""
        return {
            "method": "suco",
            "inner_model": str(self.inner),
            "prompt_version": PROMPT_VERSION,
            **self.settings,
            "reconstructed": DERIVATION,
        }

    async def _call(
        self, messages: list[ChatMessage], config: GenerateConfig, role: str, index: int
    ) -> tuple[ModelOutput, CallRecord]:
        out = await self.inner.generate(messages, config=config)
        if out.error:
            raise RuntimeError(out.error)
        usage = out.usage or word_usage(messages, out.completion)
        rec = CallRecord(role, index, index, config.seed, usage.input_tokens,  # type: ignore[arg-type]
                         usage.output_tokens, out.completion)  # fmt: skip
        return out, rec

    async def _probe(
        self, input: list[ChatMessage], prefix: str, config: GenerateConfig, t: int
    ) -> tuple[str, float, CallRecord]:
        """The greedy answer after the prefix, and its sufficiency S."""
        lead = self.think_open + prefix + self.think_close + self.lead_in
        msgs = [*input, ChatMessageAssistant(content=lead)]
        update = {"temperature": 0.0, "max_tokens": self.answer_tokens, "logprobs": True,
                  "stop_seqs": [self.answer_close]}  # fmt: skip
        cfg = config.model_copy(update=update)
        out, rec = await self._call(msgs, cfg, "probe", t)
        answer = out.completion.split(self.answer_close, 1)[0].strip()
        if not answer:
            return answer, 0.0, rec
        if self.calibrator is not None:
            cal = self.calibrator
            context = cal.render_prompt(_prompt_text(input)) + lead
            pairs = [(context, answer + self.answer_close)]
            (lps,) = await anyio.to_thread.run_sync(cal.continuation_logprobs, pairs)
            return answer, sufficiency(lps), rec
        logprobs = out.choices[0].logprobs if out.choices else None
        if logprobs is None or not logprobs.content:
            raise HarnessUsageError(
                f"suco/: {self.inner} returned no log-probabilities; pass -M calibrator=SPEC"
            )
        return answer, sufficiency([lp.logprob for lp in logprobs.content]), rec

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Reason sentence by sentence and stop at the first sufficient prefix."""
        calls: list[CallRecord] = []
        probes: list[dict[str, Any]] = []
        reasoning, probed, used = "", 0, 0
        limit = config.max_tokens or 1024  # reasoning tokens, when the task sets no max_tokens

        async def probe(prefix: str, t: int) -> bool:
            answer, s, rec = await self._probe(input, prefix, config, t)
            calls.append(rec)
            probes.append({"t": t, "chars": len(prefix), "answer": answer, "s": s})
            return s >= self.delta

        async with span("suco early exit"):
            exited = await probe("", 0)
            while not exited:
                msgs = [*input, ChatMessageAssistant(content=self.think_open + reasoning)]
                update = {"max_tokens": self.chunk_tokens, "stop_seqs": [self.think_close]}
                out, rec = await self._call(msgs, config.model_copy(update=update), "reason",
                                            len(calls))  # fmt: skip
                calls.append(rec)
                used += rec.output_tokens
                new = out.completion.split(self.think_close, 1)[0]
                reasoning += new
                closed = not new or out.stop_reason == "stop" or self.think_close in out.completion
                done = closed or used >= limit
                ends = sentence_ends(reasoning)
                complete = ends if done else ends[:-1]  # the last piece may still be growing
                for t in range(probed + 1, min(len(complete), self.max_sentences) + 1):
                    if await probe(reasoning[: complete[t - 1]], t):
                        exited = True
                        break
                probed = max(probed, len(complete))
                if done or probed >= self.max_sentences:
                    break
        # the exiting probe, else the probe of the longest prefix
        last = probes[-1]
        prefix, answer, s = reasoning[: last["chars"]], last["answer"], last["s"]
        budget = budget_of([([c], []) for c in calls])
        add_call_budget("suco", PROMPT_VERSION, budget)
        text = (self.think_open + prefix + self.think_close + self.lead_in + answer
                + self.answer_close)  # fmt: skip
        output = ModelOutput.from_content(model=f"suco/{self.inner}", content=text)
        output.metadata = {
            "harness_method": {
                **self.describe(),
                "exited_early": exited,
                "sentences_kept": last["t"],
                "sentences_generated": len(sentence_ends(reasoning)),
                "sufficiency": None if math.isnan(s) else s,
                "probes": probes,
                "budget": budget.as_dict(),
                "calls": [c.as_dict() for c in calls],
            }
        }
        return output


def _prompt_text(messages: list[ChatMessage]) -> str:
    """The conversation as plain text, for a calibrator's context."""
    return "\n\n".join(m.text for m in messages)
