"""The synthesis prompts (ours; the authors' exist in their code and are not reproduced).

Each asks for one JSON object; `SYNTHESIS_PROMPT_VERSION` is recorded in the synthesis log and
in every instance's validation report.
"""

from __future__ import annotations

import json

from harness.suites.iwg.schema import EXECUTORS, SeedData

SYNTHESIS_PROMPT_VERSION = "iwg-synthesis-v1"

SCOUT = """You plan multi-agent workflows backwards from a known answer.

Question: {query}
Answer: {answer}
Domain: {domain}; expected number of steps: {expected_steps}

Executors (name: capability):
{executors}

Plan the tool-using steps that would produce the answer, as a DAG. Reply with one JSON object:
{{"steps": [{{"id": "s0", "description": "...", "agent": "<executor name>",
  "capability": "...", "depends_on": [], "checkpoint_hint": "...", "is_extension": false}}]}}
List the steps so that every step comes after the steps it depends on; the last step yields the
answer."""

WRAPPER = """You write the environment of each step of a workflow.

Question: {query}
Answer: {answer}
Steps:
{steps}

For every step, write the tool the executor calls (tool_prompt), the tool's exact output
(tool_output, with a line "answer: <value>"), and a checkpoint on that value. Add at most one
exception scenario (a tool failure) with its gold recovery plan. Reply with one JSON object:
{{"environments": [{{"step": "s0", "tool_prompt": "...", "tool_output": "answer: ...",
  "checkpoint": {{"type": "exact_match", "expected_value": "...", "verification_prompt": ""}}}}],
 "exceptions": [{{"step": "s1", "kind": "ToolError", "message": "ERROR (ToolError): ...",
  "recovery": "Retry ..."}}]}}
The last step's expected_value is the answer."""

COMMITTEE = """You check a multi-agent benchmark instance ({tier}).

Question: {query}
Answer: {answer}
Steps, with each tool's output and checkpoint:
{steps}

Is the question solvable by following these steps, and is every checkpoint consistent with its
tool output and the answer? Reply with one JSON object:
{{"solvable": true, "consistent": true, "reasons": []}}"""


def executor_lines() -> str:
    """The executors as prompt lines."""
    return "\n".join(f"- {name}: {cap}" for name, cap in EXECUTORS.items())


def scout_prompt(seed: SeedData) -> str:
    """The Scout's prompt for one seed."""
    return SCOUT.format(
        query=seed.query,
        answer=seed.answer,
        domain=seed.domain,
        expected_steps=seed.expected_steps,
        executors=executor_lines(),
    )


def wrapper_prompt(seed: SeedData, steps: list[dict]) -> str:
    """The Wrapper's prompt for one seed and the Scout's steps."""
    lines = "\n".join(json.dumps(s) for s in steps)
    return WRAPPER.format(query=seed.query, answer=seed.answer, steps=lines)


def committee_prompt(seed: SeedData, steps: list[str], tier: str) -> str:
    """A committee member's prompt."""
    return COMMITTEE.format(tier=tier, query=seed.query, answer=seed.answer, steps="\n".join(steps))
