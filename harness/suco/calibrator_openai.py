"""`openai-api/NAME/MODEL` calibrator: prompt log-probs echoed by an OpenAI-compatible server.

Each (context, continuation) pair is one POST to `{base_url}/completions` with
`prompt = context + continuation`, `max_tokens = 0`, `echo = true` and `logprobs = 0`; the server
(vLLM, for one) answers with the log-prob of every prompt token. The base URL comes from
`-M base_url=...` or the environment variable `{NAME}_BASE_URL`, and the key, which is optional
for servers that need none, from `{NAME}_API_KEY` (NAME upper-cased, `-` as `_`), as inspect's
`openai-api` provider names them. The key is sent as a bearer token and never logged.

Token boundary (ours, as for `local/`): the scored tokens start at the token that holds the
continuation's first character (the last token whose `text_offset` is at or before
`len(context)`); a token straddling the boundary is therefore scored.

Args: `base_url`, `max_connections` (parallel requests, default 8), `timeout` (seconds, 120).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.errors import HarnessUsageError


class OpenAICompletionsCalibrator:
    """Scores continuations through a `/completions` endpoint with echo; see the module doc."""

    ARGS = ("base_url", "max_connections", "timeout")

    def __init__(
        self,
        service: str,
        model: str,
        base_url: str | None = None,
        max_connections: int = 8,
        timeout: float = 120.0,
    ) -> None:
        env = service.upper().replace("-", "_")
        self.name = f"openai-api/{service}/{model}"
        self.model = model
        url = base_url or os.environ.get(f"{env}_BASE_URL")
        if not url:
            raise HarnessUsageError(
                f"calibrator {self.name}: set {env}_BASE_URL to the server's base URL (for "
                f"example http://localhost:8000/v1) or pass -M base_url=..."
            )
        self.base_url = url.rstrip("/")
        self._api_key = os.environ.get(f"{env}_API_KEY")
        if int(max_connections) < 1:
            raise HarnessUsageError(f"calibrator {self.name}: max_connections must be >= 1")
        self.max_connections = int(max_connections)
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"OpenAICompletionsCalibrator({self.name!r}, base_url={self.base_url!r})"

    def render_prompt(self, prompt: str) -> str:
        """The prompt unchanged: `/completions` applies no chat template."""
        return prompt

    def continuation_logprobs(self, pairs: list[tuple[str, str]]) -> list[list[float]]:
        """Natural-log probabilities of each continuation token, in the order of `pairs`."""
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        with (
            httpx.Client(timeout=self.timeout, headers=headers) as client,
            ThreadPoolExecutor(self.max_connections) as pool,
        ):
            return list(pool.map(lambda p: self._one(client, p[0], p[1]), pairs))

    def _one(self, client: Any, context: str, continuation: str) -> list[float]:
        import httpx

        if not continuation:
            raise ValueError("the continuation is empty; there is nothing to score")
        body = {"model": self.model, "prompt": context + continuation, "max_tokens": 0,
                "echo": True, "logprobs": 0, "temperature": 0.0}  # fmt: skip
        url = f"{self.base_url}/completions"
        try:
            resp = client.post(url, json=body)
        except httpx.HTTPError as ex:
            raise HarnessUsageError(
                f"calibrator {self.name}: cannot reach {url} ({type(ex).__name__}); "
                f"is the server running?"
            ) from None
        if resp.status_code != 200:
            raise HarnessUsageError(
                f"calibrator {self.name}: {url} answered HTTP {resp.status_code} "
                f"({resp.text[:200]!r}); the server must accept echo=true, max_tokens=0, logprobs=0"
            )
        try:
            lp = resp.json()["choices"][0].get("logprobs") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            lp = {}
        token_logprobs, offsets = lp.get("token_logprobs"), lp.get("text_offset")
        if not token_logprobs or not offsets or len(token_logprobs) != len(offsets):
            raise HarnessUsageError(
                f"calibrator {self.name}: the server does not support echo logprobs (its "
                f"/completions answer has no logprobs.token_logprobs/text_offset for the prompt); "
                f"use a server that does, such as vLLM, or a local/ calibrator"
            )
        return tail_logprobs(token_logprobs, offsets, len(context))


def tail_logprobs(
    token_logprobs: list[float | None], text_offset: list[int], boundary: int
) -> list[float]:
    """The log-probs of the tokens from the one holding character `boundary` to the end.

    Raises:
        ValueError: no token starts at or before `boundary`, or a scored token has no log-prob
            (the first token of a text has none: the context must not be empty).

    """
    first = None
    for j, off in enumerate(text_offset):
        if off <= boundary:
            first = j
        else:
            break
    if first is None:
        raise ValueError(f"no token starts at or before character {boundary}")
    scored = token_logprobs[first:]
    if any(x is None for x in scored):
        raise ValueError("a scored token has no log-prob; the context must not be empty")
    return [float(x) for x in scored]  # type: ignore[arg-type]
