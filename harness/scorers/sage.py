"""`sage(...)`: an inspect scorer that verifies each sample's answer with neighbour references.

SAGE (reconstructed; spec `sage.md`): the sample's input is x, the model's answer is the
annotation ŷ. The k most similar items of a reference pool (cosine similarity of sentence
embeddings, the sample's own id excluded, ties by index) are shown to a judge model one per call
as worked examples; the score is the mean P(correct) over the k calls. `mode="direct"` asks the
judge without references, for the comparison the paper makes. Prompts and the P(Yes) rule are
those of `harness.sage.judge` (versioned; the version is in every score's metadata).

The pool is a JSONL file of `{"id", "text", "annotation", "label_correct"?}` lines:
`references="verified"` uses only lines with label_correct = 1 (trusted annotations);
`references="all"` uses every line.
"""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

import numpy as np
from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from harness.errors import HarnessUsageError
from harness.models.sample_context import set_current_sample
from harness.sage.judge import (
    ANCHORED_PROMPT,
    DIRECT_PROMPT,
    PROMPT_VERSION,
    judge_config,
    p_yes_of_output,
)
from harness.sage.scoring import eligible_references, read_items


@cache
def _pool(path: str, references: str, embedder: str) -> tuple[list[Any], np.ndarray, Any]:
    """The reference items, their embeddings and the embedder, loaded once per process."""
    from harness.sage.retrieval import HashingEmbedder, SentenceEmbedder

    items = read_items(path)
    idx = eligible_references(items, references)  # type: ignore[arg-type]
    refs = [items[int(i)] for i in idx]
    model = HashingEmbedder() if embedder == "hashing" else SentenceEmbedder(
        None if embedder == "minilm" else embedder
    )  # fmt: skip
    return refs, model.encode([r.text for r in refs]), model


async def _ask(judge: Any, prompt: str) -> float:
    return p_yes_of_output(await judge.generate(prompt, config=judge_config()))


@scorer(metrics=[mean(), stderr()])
def sage(
    pool: str,
    k: int = 5,
    references: str = "verified",
    judge: str = "judge",
    mode: str = "sage",
    embedder: str = "minilm",
) -> Scorer:
    """P(the answer is correct), averaged over k reference-anchored judge calls.

    Args:
        pool: JSONL reference pool (see the module docstring).
        k: References per sample.
        references: "verified" (label_correct = 1 only) or "all".
        judge: The model role of the judge (`--model-role judge=SPEC`); the eval's model if the
            role is not bound.
        mode: "sage" (with references) or "direct" (without).
        embedder: "minilm" (all-MiniLM-L6-v2, offline), "hashing", or a sentence-transformers
            model name or path.

    """
    if mode not in ("sage", "direct"):
        raise HarnessUsageError(f"sage: mode must be 'sage' or 'direct', got {mode!r}")
    if k < 1:
        raise HarnessUsageError(f"sage: k must be at least 1, got {k}")

    async def score(state: TaskState, target: Target) -> Score:
        from harness.sage.retrieval import knn

        set_current_sample(state)  # replay/scripted judges answer by sample
        model = get_model(role=judge, default=get_model())
        text, answer = state.input_text, state.output.completion
        direct = await _ask(model, DIRECT_PROMPT.format(text=text, annotation=answer))
        meta: dict[str, Any] = {
            "method": "SAGE (reconstructed)",
            "prompt_version": PROMPT_VERSION,
            "mode": mode,
            "direct": direct,
        }
        if mode == "direct":
            return Score(value=direct, answer=answer, metadata=meta)
        refs, emb, embed = _pool(pool, references, embedder)
        own = str(state.sample_id)
        ids = [r.id for r in refs]
        if k >= len(refs) + (own not in ids):
            raise HarnessUsageError(f"sage: k={k} but the pool has {len(refs)} references")
        found = knn(embed.encode([text]), emb, k, exclude_self=True,
                    query_ids=[own], ref_ids=ids)  # fmt: skip
        chosen = [refs[int(j)] for j in found.indices[0]]
        anchored = await asyncio.gather(
            *(
                _ask(
                    model,
                    ANCHORED_PROMPT.format(
                        ref_text=r.text, ref_annotation=r.annotation, text=text, annotation=answer
                    ),
                )  # fmt: skip
                for r in chosen
            )
        )
        meta |= {"anchored": list(anchored), "references": [r.id for r in chosen]}
        return Score(value=float(np.mean(anchored)), answer=answer, metadata=meta)

    return score
