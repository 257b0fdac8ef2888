"""One sample's run of a pattern: its agent calls, where the search applies, and its record.

A pattern asks the runner for agent calls (`call`) and for rounds (`iteration`). With
granularity `agent` every call is a search; with `iteration` every round is (spec §2). The
verifier's context follows the context strategy:

- `raw`: the context the pattern supplies for the unit (peers' answers, a draft), else the
  trajectory so far rendered as "Step 1: ...", "Step 2: ..." joined by blank lines (spec §2.3);
- `none`: no context;
- `summary`: the context and each candidate summarised;
- `summary+step`: the context summarised, the candidates as they are.

The strategies' definitions are reconstructed (spec §4: "not verified"). Summaries come from a
summariser model when one is given (`enforce`: always; `optional`: only for texts over
`summary_words` words), else from an extractive rule of ours: each step reduced to its answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageUser, GenerateConfig, Model

from harness.suites.mas_prove.domains import Domain, Role
from harness.suites.mas_prove.search import (
    Outcome,
    Reply,
    SearchRecord,
    Verifier,
    VerifyRequest,
    parallel_search,
)

SummaryMode = Literal["enforce", "optional"]


@dataclass(frozen=True)
class SearchSettings:
    """How a sample verifies."""

    verifier: Verifier | None  # None: no verification
    n: int = 3  # candidates per search
    granularity: str = "agent"  # agent or iteration
    context: str = "raw"  # raw, none, summary, summary+step
    timeout: float = 120.0  # seconds before a silent verifier falls back to candidate 0
    summarizer: Model | None = None  # summarises contexts; None: the extractive rule
    summary_mode: SummaryMode = "enforce"  # when the summariser runs
    summary_words: int = 3000  # `optional`: summarise texts longer than this


class Runner:
    """Agent calls, searches and counts for one sample."""

    def __init__(
        self,
        domain: Domain,
        model: Model,
        settings: SearchSettings,
        config: GenerateConfig,
        key: str,
    ) -> None:
        """Bind the problem, the agents' model, the search settings and a stable key."""
        self.domain = domain
        self.model = model
        self.settings = settings
        self.config = config
        self.key = key
        self.records: list[SearchRecord] = []
        self.trajectory: list[str] = []  # kept units' texts, in order
        self.prior_steps: list[tuple[str, str]] = []  # (step prompt, kept answer) per step
        self.step_correct: list[bool] = []  # process label of each step's kept answer
        self.calls = 0
        self.agent_tokens = 0
        self.summary_tokens = 0

    # -- agent calls -------------------------------------------------------------------------
    async def _generate(self, step: int, value: str, role: Role, notes: tuple[str, ...]) -> Outcome:
        messages = self.domain.messages(step, value, role, notes)
        output = await self.model.generate(messages, config=self.config)
        tokens = output.usage.total_tokens if output.usage else 0
        self.calls += 1
        self.agent_tokens += tokens
        text = output.completion
        answer = self.domain.answer(text)
        return Outcome(text, answer, (Reply(role, text, answer, tokens),))

    async def call(
        self, step: int, value: str, role: Role, notes: tuple[str, ...] = (), where: str = ""
    ) -> Outcome:
        """One agent call; a search over `n` of them at the agent granularity."""
        make = lambda: self._generate(step, value, role, notes)  # noqa: E731
        if self.settings.verifier is None or self.settings.granularity != "agent":
            return await make()
        label = f"step {step + 1}, {where or role}"
        return await self._search(make, step, value, label, notes)

    async def iteration(
        self,
        make: Callable[[], Awaitable[Outcome]],
        step: int,
        value: str,
        where: str,
        notes: tuple[str, ...] = (),
    ) -> Outcome:
        """One round of a pattern; a search over `n` rounds at the iteration granularity."""
        if self.settings.verifier is None or self.settings.granularity != "iteration":
            return await make()
        return await self._search(make, step, value, f"step {step + 1}, {where}", notes)

    # -- the search --------------------------------------------------------------------------
    async def _search(
        self,
        make: Callable[[], Awaitable[Outcome]],
        step: int,
        value: str,
        where: str,
        notes: tuple[str, ...],
    ) -> Outcome:
        settings = self.settings
        assert settings.verifier is not None  # checked by the callers
        index = len(self.records)

        async def view(outcomes: tuple[Outcome, ...]) -> VerifyRequest:
            context, texts = await self._context_view(outcomes, notes)
            answers = tuple(o.answer for o in outcomes)
            return VerifyRequest(
                task_type=self.domain.task_type,
                question=self.domain.question,
                context=context,
                candidates=texts,
                answers=answers,
                steps=tuple(self._step_text(o) for o in outcomes),
                step_prompt=self.domain.step_prompt(step, value),
                prior_steps=tuple(self.prior_steps),
                correct=tuple(self.domain.correct(step, value, a) for a in answers),
                key=f"{self.key}-{index}",
            )

        kept, record = await parallel_search(
            make,
            n=settings.n,
            verifier=settings.verifier,
            view=view,
            where=where,
            granularity=settings.granularity,
            timeout=settings.timeout,
        )
        self.records.append(record)
        self.trajectory.append(kept.text)
        transcript().info(record.as_dict(), source="mas-prove search")
        return kept

    def _step_text(self, outcome: Outcome) -> str | None:
        """The candidate's step as a reward model reads it (None: a placeholder)."""
        if outcome.failed:
            return None
        return outcome.answer if not self.domain.reads_notes else outcome.text

    async def _context_view(
        self, outcomes: tuple[Outcome, ...], notes: tuple[str, ...]
    ) -> tuple[str, tuple[str, ...]]:
        mode = self.settings.context
        texts = tuple(o.text for o in outcomes)
        if mode == "none":
            return "", texts
        if notes:
            raw = "\n\n".join(notes)  # the context the pattern supplies
        else:
            raw = "\n\n".join(f"Step {i}: {t}" for i, t in enumerate(self.trajectory, 1))
        if mode == "raw":
            return raw, texts
        context = await self._summarise(raw, is_context=True)
        if mode == "summary":
            texts = tuple([await self._summarise(t, is_context=False) for t in texts])
        return context, texts

    async def _summarise(self, text: str, *, is_context: bool) -> str:
        settings = self.settings
        if is_context and not text:
            return ""
        if settings.summarizer is None:
            if not is_context:
                answer = self.domain.answer(text)
                return f"answer {answer}" if answer is not None else "no answer"
            blocks = [b for b in text.split("\n\n") if b.strip()]
            return "\n".join(
                f"Part {i}: answer {self.domain.answer(b.partition(':')[2] or b)}"
                for i, b in enumerate(blocks, 1)
            )
        if settings.summary_mode == "optional" and len(text.split()) <= settings.summary_words:
            return text
        output = await settings.summarizer.generate(
            [
                ChatMessageUser(
                    content="Summarise the following in under "
                    f"{settings.summary_words} words, keeping every intermediate and final "
                    f"answer:\n\n{text}"
                )
            ],
            config=GenerateConfig(temperature=0.0),
        )
        self.summary_tokens += output.usage.total_tokens if output.usage else 0
        return output.completion

    # -- what the sample's metadata keeps ----------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Scalar counts for the sample's metadata (they survive the log's summaries)."""
        records = self.records
        mixed = [r for r in records if r.mixed]
        picks = [r.correct[r.chosen] for r in records]
        return {
            "mp_calls": self.calls,
            "mp_agent_tokens": self.agent_tokens,
            "mp_searches": len(records),
            "mp_verifier_calls": sum(r.verifier_calls for r in records),
            "mp_verifier_tokens": sum(r.verifier_tokens for r in records) + self.summary_tokens,
            "mp_candidates": sum(len(r.correct) for r in records),
            "mp_candidates_correct": sum(sum(r.correct) for r in records),
            "mp_failed_candidates": sum(1 for r in records for f in r.failed if f),
            "mp_mixed": len(mixed),
            "mp_all_correct": sum(1 for r in records if all(r.correct)),
            "mp_mixed_pick_correct": sum(1 for r in mixed if r.correct[r.chosen]),
            "mp_picks_correct": sum(picks),
            "mp_last_pick_correct": int(picks[-1]) if picks else -1,
            "mp_fallbacks": sum(1 for r in records if r.fallback),
            "mp_unparsed": sum(1 for r in records if r.detail.get("parse_fallback")),
            "mp_steps": len(self.step_correct),
            "mp_steps_correct": sum(self.step_correct),
        }
