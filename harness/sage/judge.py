"""SAGE (reconstructed) with an LLM judge: direct and reference-anchored P(annotation correct).

Prompts are ours (spec `sage.md` §4: the paper's prompt format is unknown), versioned by
`PROMPT_VERSION`, which every result records. One reference per call (the spec's default:
"averaging" implies it). The judge answers Yes or No; P(correct) is P(Yes) renormalised over
{Yes, No} from the first token's log-probabilities where the provider gives them, else 1 for an
answer starting with "yes", 0 for "no", 0.5 for anything else.

All calls of one scoring run go through one inspect `eval` of a prompt-per-sample task, so they
get inspect's concurrency, retries, progress display and a log.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.sage.scoring import AnnotatedItem

PROMPT_VERSION = "sage-judge-v1"

DIRECT_PROMPT = """You check annotations for errors.

Input:
{text}

Annotation:
{annotation}

Is this annotation correct for the input? Answer with one word, Yes or No."""

ANCHORED_PROMPT = """You check annotations for errors. First, a similar input with an \
annotation known to be correct, as a worked example.

Example input:
{ref_text}

Correct annotation of the example:
{ref_annotation}

Now the input to check:
{text}

Annotation to check:
{annotation}

Is this annotation correct for the input? Answer with one word, Yes or No."""


@dataclass(frozen=True)
class JudgeScores:
    """The judge's P(correct) per item, directly and with each reference."""

    direct: np.ndarray  # (n,)
    anchored: np.ndarray  # (n, k)
    prompt_version: str  # which prompts were used
    log: str | None  # the inspect log of the calls


def p_yes(completion: str, top_logprobs: list[tuple[str, float]] | None = None) -> float:
    """P(Yes) from the first token's alternatives where given, else from the text."""
    if top_logprobs:
        yes = [lp for tok, lp in top_logprobs if tok.strip().lower() == "yes"]
        no = [lp for tok, lp in top_logprobs if tok.strip().lower() == "no"]
        if yes or no:
            py = math.exp(max(yes)) if yes else 0.0
            pn = math.exp(max(no)) if no else 0.0
            return py / (py + pn)
    word = completion.strip().lower()
    if word.startswith("yes"):
        return 1.0
    if word.startswith("no"):
        return 0.0
    return 0.5


def judge_config() -> Any:
    """Generation settings of every judge call: a short, greedy answer with log-probabilities."""
    from inspect_ai.model import GenerateConfig

    return GenerateConfig(max_tokens=4, logprobs=True, top_logprobs=5, temperature=0.0)


def p_yes_of_output(output: Any) -> float:
    """P(Yes) of an inspect `ModelOutput`, from its first token's log-probabilities if any."""
    choice = output.choices[0] if output.choices else None
    top = None
    if choice is not None and choice.logprobs and choice.logprobs.content:
        first = choice.logprobs.content[0]
        top = [(first.token, first.logprob)] + [
            (alt.token, alt.logprob) for alt in (first.top_logprobs or [])
        ]
    return p_yes(output.completion, top)


def judge_scores(
    items: Sequence[AnnotatedItem],
    nbr_idx: np.ndarray,
    judge: str,
    *,
    model_args: dict | None = None,
    log_dir: str = "logs/sage",
    display: str | None = None,
) -> JudgeScores:
    """Ask `judge` about every item directly and with each of its references."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.solver import generate

    from harness.models.sample_context import bind_sample

    samples = []
    for i, it in enumerate(items):
        samples.append(
            Sample(
                id=f"direct:{it.id}",
                input=DIRECT_PROMPT.format(text=it.text, annotation=it.annotation),
            )
        )
        for j, ref in enumerate(nbr_idx[i]):
            r = items[int(ref)]
            samples.append(
                Sample(
                    id=f"ref:{it.id}:{j}",
                    input=ANCHORED_PROMPT.format(
                        ref_text=r.text,
                        ref_annotation=r.annotation,
                        text=it.text,
                        annotation=it.annotation,
                    ),
                )
            )
    task = Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), generate()],  # bind: replay/scripted answer per sample
        name="sage_judge",
        metadata={"prompt_version": PROMPT_VERSION, "method": "SAGE (reconstructed)"},
        config=judge_config(),
    )
    [log] = inspect_eval(
        task, model=judge, model_args=model_args or {}, log_dir=log_dir, display=display
    )
    if log.status != "success" or log.samples is None:
        raise RuntimeError(f"the judge run did not finish ({log.status}); see {log.location}")
    got: dict[str, float] = {}
    for s in log.samples:
        got[str(s.id)] = 0.5 if s.error or s.output is None else p_yes_of_output(s.output)
    k = nbr_idx.shape[1]
    direct = np.array([got[f"direct:{it.id}"] for it in items])
    anchored = np.array([[got[f"ref:{it.id}:{j}"] for j in range(k)] for it in items])
    return JudgeScores(direct, anchored, PROMPT_VERSION, log.location)
