"""Where reward and process-reward scores come from: a model's probability of a step.

`LocalStepScorer` (`local/NAME_OR_PATH`, any causal LM that `local/` serves, tiny-arith
included) scores a step by teacher forcing: log p(step, end token | prompt), the prompt rendered
as `local/` renders it. That is a reward model built from a language model's own likelihood,
not a trained reward model (the paper used Skywork-Reward-V2 and Qwen2.5-Math-PRM). Scoring runs
in a worker thread, one batch per request, one request at a time per model.

`EndpointStepScorer` (`openai-api/NAME/MODEL`, base URL in `NAME_BASE_URL`, key in
`NAME_API_KEY`, as inspect reads them) posts `{"model", "input"}` to the server's `/pooling`
route (vLLM's route for reward models) and takes the last number of the returned `data` as the
score; a request that fails scores None (reward 0).
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from harness.errors import HarnessUsageError


@dataclass(frozen=True)
class Scored:
    """Scores of some (prompt, step) pairs."""

    logprobs: tuple[float | None, ...]  # one per pair; None when it could not be scored
    tokens: int  # tokens read to score them


class StepScorer(Protocol):
    """Scores (prompt, step) pairs."""

    name: str  # the model spec

    async def score(self, pairs: list[tuple[str, str | None]]) -> Scored:
        """A log-probability (or reward) per pair; None where the step is missing or failed."""
        ...


class LocalStepScorer:
    """log p(step + end token | rendered prompt) under a local causal LM."""

    def __init__(self, spec: str) -> None:
        """Load `local/NAME_OR_PATH` (a built-in is trained on first use, as `local/` does)."""
        from harness.models.local import resolve_checkpoint

        self.name = spec
        self.path = resolve_checkpoint(spec.partition("/")[2])
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        from transformers import AutoTokenizer

        from harness.models.local import load_causal_lm

        if self._model is None:
            self._tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            model = load_causal_lm(self.path)
            self._model = model.eval()

    def score_sync(self, pairs: list[tuple[str, str | None]]) -> Scored:
        """Teacher-forced log-probabilities, one padded forward pass for the whole batch."""
        import torch
        from inspect_ai.model import ChatMessageUser

        from harness.models.local import render_prompt

        with self._lock:
            self._load()
            tok, model = self._tokenizer, self._model
            special = tok.chat_template is None
            context = getattr(model.config, "n_positions", None) or getattr(
                model.config, "max_position_embeddings", 10**9
            )
            rows: list[tuple[list[int], int] | None] = []
            for prompt, step in pairs:
                if step is None:
                    rows.append(None)
                    continue
                text = render_prompt(tok, [ChatMessageUser(content=prompt)])
                head = tok(text, add_special_tokens=special)["input_ids"]
                tail = tok(step, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
                ids = (head + tail)[-context:]  # keep the step; cut the prompt's start
                rows.append((ids, min(len(tail), len(ids) - 1)))
            live = [r for r in rows if r is not None]
            out: list[float | None] = []
            tokens = sum(len(ids) for ids, _ in live)
            if live:
                width = max(len(ids) for ids, _ in live)
                pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
                batch = torch.full((len(live), width), pad, dtype=torch.long)  # (B, T)
                mask = torch.zeros((len(live), width), dtype=torch.long)  # (B, T)
                for i, (ids, _) in enumerate(live):
                    batch[i, width - len(ids) :] = torch.tensor(ids)  # left padding
                    mask[i, width - len(ids) :] = 1
                with torch.inference_mode():
                    logits = model(input_ids=batch, attention_mask=mask).logits  # (B, T, V)
                logp = logits.float().log_softmax(-1)  # (B, T, V)
                values = iter(
                    float(
                        logp[i, width - n - 1 : width - 1]
                        .gather(-1, batch[i, width - n :, None])
                        .sum()
                    )
                    for i, (_, n) in enumerate(live)
                )
            for r in rows:
                out.append(None if r is None else next(values))
            return Scored(tuple(out), tokens)

    async def score(self, pairs: list[tuple[str, str | None]]) -> Scored:
        """As `score_sync`, off the event loop."""
        return await anyio.to_thread.run_sync(self.score_sync, pairs)


class EndpointStepScorer:
    """A reward model behind an OpenAI-compatible server's `/pooling` route."""

    def __init__(self, spec: str, transport: Any = None) -> None:
        """`openai-api/NAME/MODEL`: base URL from `NAME_BASE_URL`, key from `NAME_API_KEY`."""
        parts = spec.split("/", 2)
        if len(parts) != 3 or not all(parts):
            raise HarnessUsageError(
                f"reward model '{spec}': an endpoint is named openai-api/NAME/MODEL"
            )
        env = parts[1].upper().replace("-", "_")
        base = os.environ.get(f"{env}_BASE_URL")
        if not base:
            raise HarnessUsageError(
                f"reward model '{spec}': set {env}_BASE_URL to the server's base URL "
                f"(for example http://localhost:8000/v1)"
            )
        self.name = spec
        self.model = parts[2]
        self.url = base.rstrip("/").removesuffix("/v1") + "/pooling"
        self.key = os.environ.get(f"{env}_API_KEY", "")
        self.transport = transport

    async def _one(self, client: Any, prompt: str, step: str | None) -> float | None:
        if step is None:
            return None
        try:
            response = await client.post(
                self.url, json={"model": self.model, "input": f"{prompt}\n\n{step}"}
            )
            response.raise_for_status()
            value = _last_number(response.json()["data"])
        except Exception:  # a failed scoring request gets reward 0 (spec §2)
            return None
        return value

    async def score(self, pairs: list[tuple[str, str | None]]) -> Scored:
        """One request per pair, concurrently."""
        import httpx

        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        async with httpx.AsyncClient(
            headers=headers, timeout=60, transport=self.transport
        ) as client:
            values: list[float | None] = [None] * len(pairs)

            async def fill(i: int, prompt: str, step: str | None) -> None:
                values[i] = await self._one(client, prompt, step)

            async with anyio.create_task_group() as group:
                for i, (prompt, step) in enumerate(pairs):
                    group.start_soon(fill, i, prompt, step)
        words = sum(len(p.split()) + len((s or "").split()) for p, s in pairs)
        return Scored(tuple(values), words)


def _last_number(data: Any) -> float:
    """The last number in a nested JSON value (vLLM nests the scores in lists of objects)."""
    if isinstance(data, bool):
        raise ValueError("a boolean is not a score")
    if isinstance(data, int | float):
        if not math.isfinite(float(data)):
            raise ValueError("the score is not finite")
        return float(data)
    if isinstance(data, dict):
        data = data.get("data", list(data.values()))
    if isinstance(data, list) and data:
        return _last_number(data[-1])
    raise ValueError("no score in the response")


def make_scorer(spec: str) -> StepScorer:
    """The step scorer a spec names: `local/...` or `openai-api/NAME/MODEL`."""
    provider = spec.partition("/")[0]
    if provider == "local":
        return LocalStepScorer(spec)
    if provider == "openai-api":
        return EndpointStepScorer(spec)
    raise HarnessUsageError(
        f"reward model '{spec}': use local/NAME_OR_PATH (a causal LM's log-probability) or "
        f"openai-api/NAME/MODEL (a server's /pooling route)"
    )
