"""Budgets of wrapped model calls, summed per sample, and the solver that puts them in metadata.

A method wrapper (`pdr/`, `sr/`, `suco/`) adds each call's budgets to the sample's store under
`STORE_KEY` (the store is per sample, saved with it, and its changes are transcript events).
`record_method_budgets()`, which `harness eval` appends to every task run through a wrapper,
copies the sums into the sample's metadata as flat keys that `samples_df` reads:
`method`, `method_prompts`, `budget_seq_io`, `budget_seq_out`, `budget_total_io`,
`budget_total_out`, `budget_calls`, `budget_failed` (inner calls that raised), `method_calls`;
and `method_detail`, the last wrapped call's record (settings, every round's workspaces and
drafts, or suco's probes), as the model output's metadata holds it.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import store

from harness.models.methods.budget import Budget

STORE_KEY = "harness_method_budget"


def add_call_budget(method: str, prompts: str, budget: Budget) -> None:
    """Add one wrapped call's budgets to the current sample's running sums."""
    st = store()
    sums: dict[str, Any] = dict(st.get(STORE_KEY) or {})
    sums["method"] = method
    sums["method_prompts"] = prompts
    sums["method_calls"] = int(sums.get("method_calls", 0)) + 1
    for key, value in budget.as_dict().items():
        name = f"budget_{key}"
        sums[name] = int(sums.get(name, 0)) + value
    st.set(STORE_KEY, sums)


@solver
def record_method_budgets() -> Solver:
    """Copy the sample's summed method budgets from its store into its metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sums = state.store.get(STORE_KEY)
        if sums:
            state.metadata.update(sums)
        detail = (state.output.metadata or {}).get("harness_method") if state.output else None
        if detail:
            state.metadata["method_detail"] = detail
        return state

    return solve
