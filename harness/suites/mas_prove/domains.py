"""What a multi-agent pattern needs to know about a problem: its prompts, answers and checks.

A pattern works through a problem's steps, carrying a value from one step to the next (a chain
has 3 to 6 steps; an AIME problem is one step). Roles (worker, debater, critic, ...) ask for
different prompts. The chain's prompts are bare expressions (`62-48=`), the only thing tiny-arith
reads, so its `reads_notes` is False: peers' answers, drafts and critiques reach the chain only
through the patterns' votes and comparisons, never through a prompt. The AIME prompts are ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser

from harness.suites.mas_prove.chain import ChainProblem, apply, first_integer
from harness.suites.mas_prove.extraction import AimeExtraction, aime_answer

Role = Literal["worker", "debater", "critic", "reviser", "planner", "synthesizer", "ensemble"]
ROLES: tuple[str, ...] = (
    "worker",
    "debater",
    "critic",
    "reviser",
    "planner",
    "synthesizer",
    "ensemble",
)


class Domain(Protocol):
    """A problem as the patterns see it."""

    task_type: str  # what the judge is told ("math")
    question: str  # the whole problem in words
    n_steps: int  # steps the pattern works through
    reads_notes: bool  # whether prompts can carry peers' answers, drafts and critiques

    def start(self) -> str:
        """The value carried into step 0."""
        ...

    def messages(
        self, step: int, value: str, role: Role, notes: tuple[str, ...]
    ) -> list[ChatMessage]:
        """The prompt of one agent call."""
        ...

    def answer(self, text: str) -> str | None:
        """The answer in an output, normalised (None: no answer)."""
        ...

    def correct(self, step: int, value: str, answer: str | None) -> bool:
        """Whether `answer` is right for step `step` asked about `value` (the process label)."""
        ...

    def step_prompt(self, step: int, value: str) -> str:
        """The step as a reward model reads it (the text its answer follows)."""
        ...


@dataclass(frozen=True)
class ChainDomain:
    """A seeded arithmetic chain; see `harness.suites.mas_prove.chain`."""

    problem: ChainProblem  # the chain
    task_type: str = "math"  # what the judge is told
    reads_notes: bool = False  # tiny-arith reads only the bare expression

    @property
    def question(self) -> str:
        """The chain in words."""
        return self.problem.text()

    @property
    def n_steps(self) -> int:
        """One step per operation."""
        return len(self.problem.steps)

    def start(self) -> str:
        """The start value."""
        return str(self.problem.start)

    def step_prompt(self, step: int, value: str) -> str:
        """`62-48=`: the carried value, the step's operator and operand."""
        op, b = self.problem.steps[step]
        return f"{value}{op}{b}="

    def messages(
        self, step: int, value: str, role: Role, notes: tuple[str, ...]
    ) -> list[ChatMessage]:
        """The bare expression, whatever the role (tiny-arith reads nothing else)."""
        return [ChatMessageUser(content=self.step_prompt(step, value))]

    def answer(self, text: str) -> str | None:
        """The first integer of the output."""
        found = first_integer(text)
        return None if found is None else str(found)

    def correct(self, step: int, value: str, answer: str | None) -> bool:
        """Whether the answer is the exact result of the step's own expression."""
        if answer is None:
            return False
        try:
            carried = int(value)
        except ValueError:
            return False  # the carried value was not a number: no answer can be right
        op, b = self.problem.steps[step]
        return int(answer) == apply(carried, op, b)


_AIME_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
ROLE_PROMPTS = {
    "worker": "Solve the problem.",
    "debater": (
        "Other agents' solutions are below. Using their reasoning as additional advice, "
        "give an updated solution."
    ),
    "critic": (
        "Review the draft solution below for errors. Say what is wrong, if anything, and end "
        "with the final answer you believe is right."
    ),
    "reviser": "Revise the draft solution below in the light of the critique that follows it.",
    "planner": (
        "Break the problem into two or three sub-tasks for worker agents. Do not solve it; "
        "end with your best guess of the final answer."
    ),
    "synthesizer": "Workers' solutions are below. Combine them into one final solution.",
    "ensemble": (
        "Several solutions are below. Pick the answer most of them support and is best "
        "justified, and give it."
    ),
}


def role_messages(prompt: str, role: Role, notes: tuple[str, ...]) -> list[ChatMessage]:
    """The role's instruction, then `prompt` with the notes (peers, drafts) numbered after it."""
    if role not in ROLE_PROMPTS:
        raise ValueError(f"unknown role {role!r}; valid: {ROLES}")
    body = prompt + "".join(f"\n\n--- Note {i} ---\n{note}" for i, note in enumerate(notes, 1))
    return [ChatMessageSystem(content=ROLE_PROMPTS[role]), ChatMessageUser(content=body)]


@dataclass(frozen=True)
class AimeDomain:
    """One AIME problem, solved in one step; role prompts are ours."""

    problem: str  # the problem text
    target: int  # the reference answer
    extraction: AimeExtraction = "lenient"  # how answers are read
    task_type: str = "math"  # what the judge is told
    n_steps: int = 1  # the problem is one step
    reads_notes: bool = True  # chat models read peers, drafts and critiques

    @property
    def question(self) -> str:
        """The problem."""
        return self.problem

    def start(self) -> str:
        """Nothing is carried into the problem."""
        return ""

    def step_prompt(self, step: int, value: str) -> str:
        """The problem and the answer instruction."""
        return f"{self.problem}\n\n{_AIME_INSTRUCTION}"

    def messages(
        self, step: int, value: str, role: Role, notes: tuple[str, ...]
    ) -> list[ChatMessage]:
        """The role's instruction, the problem, and the notes (peers, drafts) numbered."""
        return role_messages(self.step_prompt(step, value), role, notes)

    def answer(self, text: str) -> str | None:
        """The integer answer under the task's extraction mode."""
        found = aime_answer(text, self.extraction)
        return None if found is None else str(found)

    def correct(self, step: int, value: str, answer: str | None) -> bool:
        """Whether the answer equals the reference as integers."""
        return answer is not None and int(answer) == self.target
