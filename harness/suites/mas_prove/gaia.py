"""GAIA from the user's own copy, never shipped.

GAIA's authors ask that the validation answers not be redistributed in crawlable form.

Point `--data-dir DIR` at a folder holding `gaia/2023/validation/metadata.jsonl`, the layout of
the `gaia-benchmark/GAIA` dataset repository (clone it into `DIR/gaia`); rows need `task_id`,
`Question` and `Final answer`. Without a local copy the loader tries the gated hub dataset,
which needs the user's accepted terms and token. The agents get no tools and no attached
files, so questions that need them are scored as they are answered: this runs the patterns on
GAIA's questions, not GAIA's agentic setting. Scoring is exact match after normalisation (ours:
lower case, surrounding space and a final period dropped, inner space collapsed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from harness.data import DatasetSpec, load_rows, nonempty_str
from harness.suites.mas_prove.domains import Role, role_messages

GAIA_DATA = DatasetSpec(
    name="gaia",
    hub_id="gaia-benchmark/GAIA",
    local_path="gaia/2023/validation/metadata.jsonl",
    fields={"task_id": nonempty_str, "Question": nonempty_str, "Final answer": nonempty_str},
    hub_split="validation",
    hub_config="2023_all",
)
_INSTRUCTION = (
    "Think step by step, then end with a line `FINAL ANSWER: <answer>`, as short as possible."
)
_FINAL = re.compile(r"FINAL ANSWER:\s*(.+)", re.IGNORECASE)


def normalise(text: str) -> str:
    """Lower case, inner space collapsed, surrounding space and a final period dropped."""
    return " ".join(text.strip().lower().split()).rstrip(".")


def gaia_answer(text: str) -> str | None:
    """The text after the last `FINAL ANSWER:`, normalised; None without one."""
    found = _FINAL.findall(text or "")
    return normalise(found[-1]) if found else None


def gaia_samples(data_dir: str | None, skip_bad_rows: bool) -> list[Sample]:
    """The validation questions as samples with their task ids."""
    loaded = load_rows(GAIA_DATA, data_dir)
    if not skip_bad_rows:
        loaded.raise_for_errors(", or pass -T skip_bad_rows=true to load the other rows")
    return [
        Sample(id=row["task_id"], input=row["Question"], target=row["Final answer"])
        for _, row in loaded.rows
    ]


@dataclass(frozen=True)
class GaiaDomain:
    """One GAIA question, solved in one step, scored by exact match."""

    problem: str  # the question
    target: str  # the reference answer
    task_type: str = "qa"  # what the judge is told
    n_steps: int = 1  # the question is one step
    reads_notes: bool = True  # chat models read peers, drafts and critiques

    @property
    def question(self) -> str:
        """The question."""
        return self.problem

    def start(self) -> str:
        """Nothing is carried in."""
        return ""

    def step_prompt(self, step: int, value: str) -> str:
        """The question and the answer format."""
        return f"{self.problem}\n\n{_INSTRUCTION}"

    def messages(
        self, step: int, value: str, role: Role, notes: tuple[str, ...]
    ) -> list[ChatMessage]:
        """The role's instruction, the question, and the notes numbered."""
        return role_messages(self.step_prompt(step, value), role, notes)

    def answer(self, text: str) -> str | None:
        """The final answer, normalised."""
        return gaia_answer(text)

    def correct(self, step: int, value: str, answer: str | None) -> bool:
        """Exact match after normalisation."""
        return answer is not None and answer == normalise(self.target)


@scorer(metrics=[accuracy(), stderr()])
def gaia_exact() -> Scorer:
    """Correct when the normalised final answer equals the normalised reference."""

    async def score(state: TaskState, target: Target) -> Score:
        found = gaia_answer(state.output.completion if state.output else "")
        ok = found is not None and found == normalise(target.text)
        return Score(value=CORRECT if ok else INCORRECT, answer=found)

    return score
