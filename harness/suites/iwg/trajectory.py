"""An orchestrator's trajectory on one instance, and what the metrics read from it.

A trajectory is its rounds (Plan's reply, the dispatches, Reflexion's audit of each output) and
why it stopped. A dispatch that Reflexion passes is a completed step: the predicted executor
sequence, the predicted checkpoint values (Reflexion's result summaries) and faithfulness's
steps are read from completed dispatches only, so a failed call that is then recovered leaves no
trace in them. Scheduling entropy is over every dispatch a round made.

Trajectories round-trip through JSON like instances (`harness.suites.iwg.schema.build`).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.suites.iwg.metrics import scheduling_entropy
from harness.suites.iwg.schema import build, to_dict

# Why a step failed: Reflexion's classes (spec §2.2), and ModelError where the orchestrator's
# own model call raised (a failure of the orchestrator under test; the section counts them)
FAILURE_CLASSES = ("Hallucination", "MissingInfo", "WrongFormat", "ToolError", "Timeout")
MODEL_ERROR = "ModelError"


@dataclass(frozen=True)
class Dispatch:
    """One executor call of a round."""

    agent: str  # the executor named by Plan (may be unknown)
    tool: str  # the tool id named by Plan (may be unknown)
    input: str  # what Plan sent
    output: str = ""  # what the executor answered ("" when it was not run)
    summary: str = ""  # Reflexion's result summary (the predicted checkpoint value)
    failure: str = ""  # Reflexion's failure class ("" when the step completed)
    reason: str = ""  # the failure's detail


@dataclass(frozen=True)
class Round:
    """One Plan step: the reply, its dispatches, the context load when it was asked."""

    t: int  # 1-based round
    context: float  # the orchestrator's context load: words of its prompt / 1000
    reply: str  # Plan's raw reply (cut to 2,000 characters)
    dispatches: tuple[Dispatch, ...] = ()
    recovery: str = ""  # Plan's recovery plan, if it gave one
    failure: str = ""  # a failure of the whole reply (WrongFormat, ModelError)
    reason: str = ""  # its detail
    board_errors: tuple[str, ...] = ()  # ADD/MODIFY operations refused, with why


@dataclass(frozen=True)
class Trajectory:
    """All rounds of one orchestrator on one instance."""

    instance_id: str  # the instance
    rounds: tuple[Round, ...]  # in order
    stopped: str  # why the loop ended ("no actions", "max_steps", "3 failed plans", ...)
    tool_ids: tuple[str, ...]  # tool id of each gold step (the tools are listed shuffled)
    fired: tuple[int, ...] = ()  # round of each exception scenario's fault (0: never fired)

    def completed(self) -> list[Dispatch]:
        """Dispatches Reflexion passed, in order."""
        return [d for r in self.rounds for d in r.dispatches if not d.failure]

    def predicted_agents(self) -> list[str]:
        """The executors of the completed steps."""
        return [d.agent for d in self.completed()]

    def predicted_values(self) -> list[str]:
        """Reflexion's result summaries of the completed steps."""
        return [d.summary for d in self.completed()]

    def step_queries(self) -> list[str]:
        """The first dispatched input of each round that completed a step."""
        return [
            r.dispatches[0].input for r in self.rounds if any(not d.failure for d in r.dispatches)
        ]

    def recoveries(self) -> list[str]:
        """Per exception scenario, the first recovery Plan gave after its fault ("" if none)."""
        out = []
        for fired in self.fired:
            text = (
                ""
                if not fired
                else next((r.recovery for r in self.rounds if r.t > fired and r.recovery), "")
            )
            out.append(text)
        return out

    def entropy_series(self, *, compat: bool = False) -> tuple[list[float], list[float]]:
        """H(t) and c(t) over the rounds that dispatched anything."""
        rounds = [r for r in self.rounds if r.dispatches]
        h = [scheduling_entropy([d.agent for d in r.dispatches], compat=compat) for r in rounds]
        return h, [r.context for r in rounds]

    def failures(self) -> dict[str, int]:
        """How many failures of each class (dispatches and whole replies)."""
        counts: dict[str, int] = {}
        for r in self.rounds:
            for kind in [r.failure] + [d.failure for d in r.dispatches]:
                if kind:
                    counts[kind] = counts.get(kind, 0) + 1
        return counts

    def to_dict(self) -> dict:
        """As JSON-ready data."""
        return to_dict(self)

    @staticmethod
    def from_dict(data: dict) -> Trajectory:
        """From `to_dict`'s output, every field checked."""
        return build(Trajectory, data)
