"""LLMBar pairwise judge verdicts with gold labels, as binary arrays (calibrated-judge.md §3.4).

Files: `DIR/judges/llmbar/<subset>/dataset.json` (gold `label` "1"/"2") and
`judge-<NAME>.json` (the same rows plus `results[0]["swap = False"|"swap = True"]["winner"]`).

Binary mapping (ours, as the spec says): Z = [label == 1], Ẑ = [winner == 1] in the unswapped
order, so θ is the share of pairs where output 1 is better. A null verdict counts as Ẑ = 0 by
default (`null_as`), and the number of nulls is returned so reports can log the policy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.data import resolve_data_dir
from harness.errors import HarnessUsageError

SUBSETS = (
    "Processed_MT-Bench",
    "Processed_FairEval",
    "Processed_LLMEval_2",
    "LLMBar_Natural",
    "LLMBar_Adversarial_Neighbor",
    "LLMBar_Adversarial_GPTInst",
    "LLMBar_Adversarial_GPTOut",
    "LLMBar_Adversarial_Manual",
)
JUDGES = ("GPT-4", "ChatGPT", "LLaMA2", "PaLM2")


@dataclass(frozen=True)
class JudgeVerdicts:
    """Gold labels and one judge's verdicts on one LLMBar subset."""

    subset: str  # LLMBar subset folder name
    judge: str  # judge name, e.g. "GPT-4"
    human: np.ndarray  # Z, 1 when output 1 is the gold winner
    judge_verdict: np.ndarray  # Ẑ in the unswapped order, nulls mapped to `null_as`
    n_null: int  # verdicts that were null
    null_as: int  # the value nulls were mapped to (ours; logged)


def _label(value: object, where: str) -> int:
    if str(value) not in ("1", "2"):
        raise HarnessUsageError(f"{where}: label must be 1 or 2, got {value!r}")
    return int(str(value) == "1")


def load_llmbar(
    subset: str, judge: str, data_dir: str | None = None, *, null_as: int = 0
) -> JudgeVerdicts:
    """Load one subset x judge as binary arrays."""
    if subset not in SUBSETS or judge not in JUDGES:
        raise HarnessUsageError(
            f"unknown LLMBar subset/judge {subset}/{judge}; subsets: {', '.join(SUBSETS)}; "
            f"judges: {', '.join(JUDGES)}"
        )
    root = resolve_data_dir(data_dir)
    if root is None:
        raise HarnessUsageError("LLMBar needs --data-dir or HARNESS_DATA_DIR (no hub copy)")
    folder = Path(root) / "judges" / "llmbar" / subset
    gold_path, judge_path = folder / "dataset.json", folder / f"judge-{judge}.json"
    for path in (gold_path, judge_path):
        if not path.is_file():
            raise HarnessUsageError(f"missing LLMBar file '{path}'")
    gold = json.loads(gold_path.read_text())
    verdicts = json.loads(judge_path.read_text())
    if len(gold) != len(verdicts):
        raise HarnessUsageError(f"{judge_path}: {len(verdicts)} rows, {gold_path}: {len(gold)}")
    human = np.array([_label(r["label"], f"{gold_path} row {i + 1}") for i, r in enumerate(gold)])
    out, nulls = [], 0
    for i, row in enumerate(verdicts, start=1):
        winner = row["results"][0]["swap = False"]["winner"]
        if winner is None:
            nulls += 1
            out.append(null_as)
        else:
            out.append(_label(winner, f"{judge_path} row {i}"))
    return JudgeVerdicts(subset, judge, human, np.array(out), nulls, null_as)
