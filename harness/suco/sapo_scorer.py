r"""`sapo()`: an inspect scorer whose value is SuCo's SAPO reward of each output.

Per output (the parts the paper leaves open are ours, spec suco.md §4):

- the completion is split by `harness.suco.trajectories.split_completion`;
- correct: the answer extracted from the text after the CoT (`harness.answer_extraction`,
  by default the last `\boxed{}` or else the last integer) equals the target exactly, spaces
  around both stripped;
- format: the completion has a `<think>…</think>` block and an answer can be extracted after it;
- L_z: the sentences of the CoT (`harness.suco.segment`);
- t* (ours): the first sentence prefix of this rollout, t = 0..L_z, with S >= δ against the
  target; ∞ when none reaches it (stored as null in the metadata);
- δ: the fixed `delta`, else δ0 + α·C with C read from `state.metadata[complexity_key]`.

The calibrator is loaded once, at the first score, and called from a worker thread. In the paper
it is a frozen copy of the policy from the start of SAPO (ours: the choice is configurable).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import anyio
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from harness.answer_extraction import ExtractionMode, extract_answer
from harness.errors import HarnessUsageError
from harness.suco.calibrator import Calibrator, load_calibrator
from harness.suco.msc import find_msc
from harness.suco.sapo import sapo_reward
from harness.suco.segment import sentence_ends
from harness.suco.sufficiency import RECONSTRUCTED, ScoringTemplate, score_prefixes
from harness.suco.threshold import ALPHA, DELTA0, adaptive_delta, check_threshold
from harness.suco.trajectories import split_completion


@scorer(metrics=[mean(), stderr()])
def sapo(
    *,
    calibrator: str,
    calibrator_args: dict[str, Any] | None = None,
    delta: float | None = None,
    delta0: float = DELTA0,
    alpha: float = ALPHA,
    complexity_key: str = "suco_complexity",
    beta: float = 1.0,
    eps: float = 2.0,
    lam_over: float = 0.5,
    lam_under: float = 0.5,
    think_open: str = "<think>",
    think_close: str = "</think>",
    lead_in: str = "The final answer is \\boxed{",
    answer_close: str = "}",
    extraction: ExtractionMode = "boxed_or_int",
) -> Scorer:
    r"""Score each output with R = R_correct + R_format + β·R_suff (see the module docstring).

    Args:
        calibrator: `local/NAME_OR_PATH` or `openai-api/NAME/MODEL`, the model that scores S.
        calibrator_args: Its model args (for example `{"batch_size": 8}`).
        delta: A fixed threshold in [0, 1]; None reads the complexity from the metadata.
        delta0: δ0 of δ = δ0 + α·C (ours).
        alpha: α of δ = δ0 + α·C (ours).
        complexity_key: The sample-metadata key holding C in [0, 1].
        beta: Weight of R_suff.
        eps: Slack ε in sentences before over-thinking is penalised.
        lam_over: Penalty for L_z > t* + ε.
        lam_under: Penalty for L_z < t* with a wrong answer.
        think_open: Opens the CoT, in outputs and in the scoring template.
        think_close: Closes the CoT.
        lead_in: Text between the CoT and the answer in the scoring template.
        answer_close: Text scored after the answer (the box's closing brace).
        extraction: How the answer is read (`harness.answer_extraction`).

    """
    try:
        check_threshold(delta0, alpha)
    except ValueError as ex:
        raise HarnessUsageError(f"sapo: {ex}") from None
    if delta is not None and not 0 <= delta <= 1:
        raise HarnessUsageError(f"sapo: delta must be in [0, 1], got {delta}")
    template = ScoringTemplate(think_open, think_close, lead_in, answer_close)
    loaded: list[Calibrator] = []
    lock = threading.Lock()

    def get_calibrator() -> Calibrator:
        with lock:
            if not loaded:
                loaded.append(load_calibrator(calibrator, **(calibrator_args or {})))
            return loaded[0]

    def threshold(state: TaskState) -> float:
        if delta is not None:
            return delta
        c = (state.metadata or {}).get(complexity_key)
        if not isinstance(c, int | float) or not 0 <= c <= 1:
            raise HarnessUsageError(
                f"sapo: sample {state.sample_id} has no complexity in metadata "
                f"'{complexity_key}' (a number in [0, 1]); add it or give sapo(delta=...)"
            )
        return adaptive_delta(float(c), delta0, alpha)

    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion if state.output else ""
        parts = split_completion(text, think_open, think_close)
        answer = extract_answer(parts.answer, extraction) if parts.answer.strip() else None
        correct = answer is not None and answer.strip() == target.text.strip()
        format_ok = parts.think_block and answer is not None
        length = len(sentence_ends(parts.cot))
        d = threshold(state)
        cal = await anyio.to_thread.run_sync(get_calibrator)
        scores = await anyio.to_thread.run_sync(
            score_prefixes, cal, state.input_text, parts.cot, target.text.strip(), template
        )
        res = find_msc(scores, d)
        t_star = res.t_star if res.reached else math.inf
        reward = sapo_reward(correct, format_ok, length, t_star, beta, eps, lam_over, lam_under)
        return Score(
            value=reward.total,
            answer=answer,
            explanation=reward.summary(),
            metadata={
                "correct": correct,
                "format_ok": format_ok,
                "length": length,
                "t_star": None if math.isinf(t_star) else t_star,
                "delta": d,
                "scores": [round(s, 6) for s in scores],
                "r_correct": reward.r_correct,
                "r_format": reward.r_format,
                "r_suff": reward.r_suff,
                "beta": beta,
                "calibrator": calibrator,
                "reconstructed": RECONSTRUCTED,
            },
        )

    return score
