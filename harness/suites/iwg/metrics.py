"""IWG's metrics (spec §2.5), as pure functions of a trajectory and its instance.

Definitions follow the authors' code as the spec records it:

- LCS-F1 between the predicted and gold executor sequences;
- checkpoint matching (exact_match, api_verify, custom_1shot), task success and Step-SR, with
  checkpoints compared by position (a skipped step shifts every later value);
- EH-F1: the recovery plan's class by keyword, in a fixed order;
- faithfulness: how much of the previous gold checkpoint the next dispatched query quotes;
- consistency: cosine of sentence embeddings (all-MiniLM-L6-v2 here; the paper uses
  text-embedding-v4), or the Jaccard similarity of token sets, labelled as such;
- scheduling entropy H(t) over the executors dispatched at a step, with counts normalised, or
  the authors' overwrite quirk under `compat=True`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from harness.suites.iwg.schema import EXECUTORS, Checkpoint

_TOKEN = re.compile(r"[a-z0-9]+")
_API = re.compile(r"^\s*API\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)

# EH-F1's keyword classes, checked in this order (spec §2.5); anything else is "Other"
RECOVERY_CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Retry", ("retry", "re-call", "try again", "reattempt")),
    ("Switch Agent", ("switch", "different agent", "alternative", "fallback")),
    ("Abort", ("abort", "stop", "terminate", "give up")),
    ("Decompose", ("decompose", "break down", "split")),
)


def tokens(text: str) -> set[str]:
    """Lowercase alphanumeric runs."""
    return set(_TOKEN.findall(text.lower()))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def lcs_f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    """F1 of LCS precision (over pred) and recall (over gold); 0 when either is 0."""
    common = lcs_length(pred, gold)
    p = common / len(pred) if pred else 0.0
    r = common / len(gold) if gold else 0.0
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def checkpoint_match(predicted: str, checkpoint: Checkpoint) -> bool:
    """Whether a predicted value passes a checkpoint.

    exact_match: trimmed, case-insensitive equality. api_verify: the expected value stripped of
    an `API( ... )` wrapper is a case-insensitive substring of the prediction. custom_1shot:
    case-insensitive containment (the paper probably asks an LLM here; unknown).
    """
    expected = checkpoint.expected_value
    if checkpoint.type == "exact_match":
        return predicted.strip().lower() == expected.strip().lower()
    if checkpoint.type == "api_verify":
        inner = _API.match(expected)
        needle = (inner.group(1) if inner else expected).strip().lower()
        return needle in predicted.lower()
    return expected.strip().lower() in predicted.lower()


def step_matches(predicted: Sequence[str], gold: Sequence[Checkpoint]) -> list[bool]:
    """Per gold checkpoint, whether the prediction at the same position passes it."""
    return [i < len(predicted) and checkpoint_match(predicted[i], c) for i, c in enumerate(gold)]


def task_success(predicted: Sequence[str], gold: Sequence[Checkpoint]) -> float:
    """1 iff there are as many predicted values as gold checkpoints and all match."""
    return float(len(predicted) == len(gold) and all(step_matches(predicted, gold)))


def step_sr(predicted: Sequence[str], gold: Sequence[Checkpoint]) -> float:
    """Matched checkpoints over gold checkpoints (1 when there are none)."""
    if not gold:
        return 1.0
    return sum(step_matches(predicted, gold)) / len(gold)


def recovery_class(text: str) -> str:
    """Retry, Switch Agent, Abort, Decompose or Other, by the first class whose keyword occurs."""
    lowered = text.lower()
    for name, words in RECOVERY_CLASSES:
        if any(w in lowered for w in words):
            return name
    return "Other"


def eh_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Share of exception scenarios whose predicted recovery has the gold class (1 with none).

    With one scenario per instance (as the generator makes) this is the spec's 0/1 score.
    """
    if not gold:
        return 1.0
    hits = sum(
        1
        for i, g in enumerate(gold)
        if recovery_class(predicted[i] if i < len(predicted) else "") == recovery_class(g)
    )
    return hits / len(gold)


def faithfulness(queries: Sequence[str], gold: Sequence[Checkpoint]) -> float:
    """Mean over steps t >= 2 of |tok(c_{t-1}) & tok(q_t)| / |tok(c_{t-1})|.

    `queries[t]` is the first input dispatched at step t (0-based) and `gold[t]` the gold
    checkpoint value of step t. A term whose c_{t-1} has no tokens counts 1; steps beyond the
    gold sequence have no c_{t-1} and are left out. With no term the value is 1 when the gold
    has fewer than two steps (nothing to be faithful to) and 0 otherwise (ours: an orchestrator
    that completed fewer than two steps quoted nothing it should have).
    """
    terms = []
    for t in range(1, min(len(queries), len(gold) + 1)):
        prev = tokens(gold[t - 1].expected_value)
        terms.append(len(prev & tokens(queries[t])) / len(prev) if prev else 1.0)
    if not terms:
        return 1.0 if len(gold) < 2 else 0.0
    return sum(terms) / len(terms)


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' token sets (1 when both are empty)."""
    ta, tb = tokens(a), tokens(b)
    return len(ta & tb) / len(ta | tb) if ta | tb else 1.0


def scheduling_entropy(agents: Sequence[str], *, compat: bool = False) -> float:
    """H = -sum p ln p over the executors dispatched at one step (natural log).

    Ours: unknown names are dropped and the known ones' counts are normalised, so p sums to 1.
    `compat=True` reproduces the authors' code: every dispatch writes mass 1/m (m counts all
    dispatches, unknown ones included) for its agent, overwriting rather than summing, and
    unknown names are dropped without renormalising.
    """
    if compat:
        m = len(agents)
        p = {a: 1 / m for a in agents if a in EXECUTORS}
        return -sum(v * math.log(v) for v in p.values()) + 0.0
    counts = Counter(a for a in agents if a in EXECUTORS)
    total = sum(counts.values())
    return -sum(c / total * math.log(c / total) for c in counts.values()) + 0.0
