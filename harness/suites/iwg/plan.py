"""Plan's side of the loop: its prompt, the reply format, and the task board.

Plan sees the goal, the executors, the environment's tools (listed shuffled, so their order does
not give the gold order away), its task board and the results so far, and replies with one JSON
object:

    {"board": [{"op": "ADD", "id": "s1", "description": "...", "agent": "searcher", "tool": "T2"},
               {"op": "MODIFY", "id": "s1", "status": "done"}],
     "next_actions": [{"agent": "searcher", "tool": "T2", "input": "..."}],
     "recovery": "how the last failure is handled (only after one)"}

Several actions in one reply run in parallel. An empty `next_actions` ends the run. A reply
that is not such an object is a failed step (WrongFormat) with its reason; a refused board
operation or a malformed action is noted and the rest of the reply still runs.

The prompt is ours; `PROMPT_VERSION` is recorded in every log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.suites.iwg.schema import EXECUTORS, BenchmarkInstance
from harness.suites.iwg.trajectory import Round

PROMPT_VERSION = "iwg-plan-v1"
BOARD_FIELDS = ("description", "agent", "tool", "status")


class PlanFormatError(ValueError):
    """Plan's reply is not the JSON object the prompt asks for."""


@dataclass(frozen=True)
class Action:
    """One dispatch Plan asks for."""

    agent: str  # executor name
    tool: str  # tool id
    input: str  # what to send


@dataclass(frozen=True)
class PlanReply:
    """A parsed reply."""

    actions: tuple[Action, ...]  # to dispatch now, in parallel
    board_ops: tuple[dict[str, Any], ...]  # ADD / MODIFY operations
    recovery: str  # recovery plan text ("" if none)
    problems: tuple[str, ...] = ()  # malformed actions, left out


def reply_json(text: str, name: str = "the reply's JSON") -> Any:
    """The JSON value that starts at the first `{` of a model's reply.

    PlanFormatError says what is wrong: no `{` in the reply, or `name` does not parse.
    """
    start = text.find("{")
    if start < 0:
        raise PlanFormatError("no JSON object in the reply")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as ex:
        raise PlanFormatError(f"{name} does not parse ({ex.msg})") from None
    return data


def parse_plan(text: str) -> PlanReply:
    """The first JSON object in `text` as a reply; PlanFormatError says what is wrong."""
    data = reply_json(text)
    if not isinstance(data, dict):
        raise PlanFormatError("the reply's JSON is not an object")
    raw_actions = data.get("next_actions")
    if not isinstance(raw_actions, list):
        raise PlanFormatError("the reply has no 'next_actions' list")
    actions, problems = [], []
    for i, a in enumerate(raw_actions):
        if isinstance(a, dict) and all(
            isinstance(a.get(k), str) for k in ("agent", "tool", "input")
        ):
            actions.append(Action(a["agent"].strip(), a["tool"].strip(), a["input"]))
        else:
            problems.append(f"next_actions[{i}] needs string agent, tool and input")
    ops = data.get("board", [])
    if not isinstance(ops, list):
        problems.append("'board' is not a list")
        ops = []
    recovery = data.get("recovery", "")
    return PlanReply(
        tuple(actions), tuple(ops), recovery if isinstance(recovery, str) else "", tuple(problems)
    )


@dataclass
class TaskBoard:
    """Plan's DAG of tasks, changed by ADD and MODIFY."""

    entries: dict[str, dict[str, str]] = field(default_factory=dict)

    def apply(self, op: Any) -> str:
        """Apply one operation; the reason it is refused, or "" when applied."""
        if not isinstance(op, dict) or op.get("op") not in ("ADD", "MODIFY"):
            return f"{str(op)[:60]}: an operation is an object with op ADD or MODIFY"
        key = op.get("id")
        if not isinstance(key, str) or not key:
            return f"{op['op']}: needs a string id"
        values = {k: str(op[k]) for k in BOARD_FIELDS if k in op}
        if op["op"] == "ADD":
            if key in self.entries:
                return f"ADD {key}: the board already has it (use MODIFY)"
            self.entries[key] = {"status": "todo", **values}
        else:
            if key not in self.entries:
                return f"MODIFY {key}: not on the board (use ADD)"
            self.entries[key].update(values)
        return ""

    def lines(self) -> list[str]:
        """The board as prompt lines."""
        return [
            f"- {k} [{v.get('status', 'todo')}] {v.get('agent', '?')} on {v.get('tool', '?')}: "
            f"{v.get('description', '')}"
            for k, v in self.entries.items()
        ]


def tool_listing(instance: BenchmarkInstance, tool_ids: tuple[str, ...]) -> list[str]:
    """The tools as Plan sees them, in id order (the ids were assigned shuffled)."""
    by_id = {tid: instance.environments[i].tool_prompt for i, tid in enumerate(tool_ids)}
    return [f"- {tid}: {by_id[tid]}" for tid in sorted(by_id, key=lambda t: int(t[1:]))]


def plan_prompt(
    instance: BenchmarkInstance,
    tool_ids: tuple[str, ...],
    board: TaskBoard,
    rounds: list[Round],
    pending: str,
) -> str:
    """The prompt of one Plan call."""
    results = []
    for r in rounds:
        if r.failure:
            results.append(f"- round {r.t}: your reply failed ({r.failure}: {r.reason})")
        for d in r.dispatches:
            what = f"FAILED {d.failure}: {d.reason}" if d.failure else f"result: {d.summary}"
            results.append(f"- round {r.t}: {d.agent} on {d.tool} ({d.input[:80]!r}) -> {what}")
    executors = [f"- {name}: {cap}" for name, cap in EXECUTORS.items()]
    parts = [
        "You are the orchestrator of a team of executor agents. Plan the work, dispatch it, "
        "and stop when the goal is reached.",
        f"Goal: {instance.seed_data.query}",
        "Executors:\n" + "\n".join(executors),
        "Tools (each executor can call any tool by its id):\n"
        + "\n".join(tool_listing(instance, tool_ids)),
        "Task board:\n" + ("\n".join(board.lines()) or "(empty)"),
        "Results so far:\n" + ("\n".join(results) or "(none)"),
    ]
    if pending:
        parts.append(f'The last round failed: {pending}. Say how you recover in "recovery".')
    parts.append(
        "Reply with one JSON object and nothing else:\n"
        '{"board": [{"op": "ADD", "id": "s1", "description": "...", "agent": "...", '
        '"tool": "T1"}, {"op": "MODIFY", "id": "s1", "status": "done"}],\n'
        ' "next_actions": [{"agent": "...", "tool": "T1", "input": "..."}],\n'
        ' "recovery": "..."}\n'
        "Put several actions in next_actions only for independent steps; quote the results a "
        'step needs in its input. Reply with "next_actions": [] when the goal is reached.'
    )
    return "\n\n".join(parts)
