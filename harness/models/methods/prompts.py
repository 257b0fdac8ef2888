r"""The prompts of the refinement methods (PDR, SR), written by us and versioned.

The paper's prompts are not public (specs/pdr.md §4), so these are ours. Every run records
`PROMPT_VERSION` in the model output's metadata and the sample's metadata; change the version
whenever a template changes.

Conventions:
- A draft sees the sample's own messages unchanged; in later rounds the workspace comes *before*
  the last user message's text, so a prompt still ends with the problem as the task wrote it
  (character-level models trained on a bare format keep working, and chat models read the
  problem last).
- The distill prompt asks for a summary of at most kappa tokens and says not to solve from
  scratch; its output is also hard-cut at kappa tokens by the caller.
"""

from __future__ import annotations

PROMPT_VERSION = "refine-prompts-v1"

WORKSPACE_PREAMBLE = (
    "Earlier attempts at the problem below are summarised in the workspace. They may contain "
    "errors: verify anything you use, then give a complete solution with the final answer.\n"
    "<workspace>\n{workspace}\n</workspace>\n\n"
)

DISTILL_GLOBAL = (
    "You are given a problem and {n} draft solutions to it. Do not solve the problem from "
    "scratch. Summarise the drafts in at most {kappa} tokens, covering: the candidate final "
    "answers and how many drafts support each; intermediate facts that were verified; "
    "contradictions and errors found; open subgoals.\n\n"
    "Problem:\n{problem}\n\n{drafts}\n\nSummary:"
)

RATE_DRAFT = (
    "Rate the following solution to the problem from 0 (wrong or useless) to 10 (correct and "
    "complete). Reply with the integer only.\n\nProblem:\n{problem}\n\nSolution:\n{draft}\n\n"
    "Rating:"
)

DRAFT_HEADER = "Draft {label}:\n{text}"


def with_workspace(user_text: str, workspace: str) -> str:
    """The last user message's text with the workspace placed before it."""
    return WORKSPACE_PREAMBLE.format(workspace=workspace) + user_text


def drafts_block(drafts: list[str]) -> str:
    """Drafts numbered from 1, separated by blank lines."""
    return "\n\n".join(DRAFT_HEADER.format(label=i, text=d) for i, d in enumerate(drafts, 1))


def distill_prompt(problem: str, drafts: list[str], kappa: int) -> str:
    """The global-summary distill prompt."""
    return DISTILL_GLOBAL.format(n=len(drafts), kappa=kappa, problem=problem,
                                 drafts=drafts_block(drafts))  # fmt: skip


def rate_prompt(problem: str, draft: str) -> str:
    """The self-rating prompt used to pick top-k drafts."""
    return RATE_DRAFT.format(problem=problem, draft=draft)
