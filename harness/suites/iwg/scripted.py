"""Scripted orchestrators (spec §5.2) as a model provider: `--model iwg/perfect`, and so on.

They are test fixtures, not models: they read the gold workflow of the instance being run (from
the round's `Turn`, set by the loop) and reply in Plan's JSON format, so the whole loop, the
executors, Reflexion and every metric run exactly as for a real model.

- `perfect` dispatches the next gold step to its gold executor, one per round; its query quotes
  the previous gold checkpoint value; after a fault it gives the gold recovery plan and retries.
- `skipper` is perfect but never dispatches step j = skipped_step(instance).
- `misrouter` is perfect but sends max(1, round(0.2 n)) steps (seeded by instance) to the next
  executor type in `EXECUTORS`' order.
- `diffuser` is perfect plus extra executors on the same tool, more as its context grows:
  1 + Binomial(K - 1, min(1, c / DIFFUSE_AT)) dispatches in the round, seeded by instance and
  round, c being the prompt's words / 1000.
"""

from __future__ import annotations

import json
import random

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi

from harness.errors import HarnessUsageError
from harness.models.sample_context import PerSampleAPI
from harness.models.usage import word_usage
from harness.suites.iwg.orchestrator import Turn, current_turn
from harness.suites.iwg.schema import EXECUTORS, BenchmarkInstance

POLICIES = ("perfect", "skipper", "misrouter", "diffuser")
DIFFUSE_AT = 0.9  # context load (kilo-words) at which the diffuser dispatches all K executors


def skipped_step(instance: BenchmarkInstance) -> int:
    """The step the skipper drops (0-based), seeded by the instance id."""
    return random.Random(f"iwg-skip-{instance.id}").randrange(len(instance.workflow))


def misrouted_steps(instance: BenchmarkInstance) -> set[int]:
    """The steps the misrouter sends to a wrong executor, seeded by the instance id."""
    n = len(instance.workflow)
    return set(
        random.Random(f"iwg-misroute-{instance.id}").sample(range(n), max(1, round(0.2 * n)))
    )


def _wrong(agent: str) -> str:
    names = list(EXECUTORS)
    return names[(names.index(agent) + 1) % len(names)]


def reply(policy: str, turn: Turn) -> str:
    """The policy's JSON reply for this round."""
    inst = turn.instance
    skip = {skipped_step(inst)} if policy == "skipper" else set()
    todo = [i for i in range(len(inst.workflow)) if i not in turn.done and i not in skip]
    # the board: the latest completed step marked done, the step dispatched now added
    ops: list[dict] = []
    if turn.done:
        ops.append({"op": "MODIFY", "id": f"s{max(turn.done)}", "status": "done"})
    recovery = ""
    if turn.failed is not None:
        plan = next((p for p in inst.gold_recovery_plans if p.step_index == turn.failed), None)
        recovery = plan.plan if plan else "Retry the call"
    if not todo:
        return json.dumps({"board": ops, "next_actions": [], "recovery": recovery})
    step = todo[0]
    mark = inst.workflow[step]
    agent = mark.assigned_agent
    if policy == "misrouter" and step in misrouted_steps(inst):
        agent = _wrong(agent)
    text = (
        inst.seed_data.query
        if step == 0
        else (
            f"{mark.description}. Previous result: {inst.gold_checkpoints[step - 1].expected_value}"
        )
    )
    tool = turn.tool_ids[step]
    actions = [{"agent": agent, "tool": tool, "input": text}]
    if policy == "diffuser":
        rng = random.Random(f"iwg-diffuse-{inst.id}-{turn.t}")
        share = min(1.0, turn.context / DIFFUSE_AT)
        extra = sum(rng.random() < share for _ in range(len(EXECUTORS) - 1))
        others = [a for a in EXECUTORS if a != agent]
        actions += [{"agent": a, "tool": tool, "input": text} for a in others[:extra]]
    if turn.failed == step:
        ops.append({"op": "MODIFY", "id": f"s{step}", "status": "retry"})
    else:
        ops.append(
            {
                "op": "ADD",
                "id": f"s{step}",
                "description": mark.description,
                "agent": agent,
                "tool": tool,
            }
        )
    return json.dumps({"board": ops, "next_actions": actions, "recovery": recovery})


class ScriptedOrchestratorAPI(PerSampleAPI[Turn]):
    """`iwg/POLICY`: replies to Plan prompts by a scripted policy (see the module docstring)."""

    bound = staticmethod(current_turn)  # the round being planned in this sample
    outside = (
        "iwg/{model} is a scripted orchestrator; it only answers inside `harness eval --suite iwg`"
    )

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if model_name not in POLICIES:
            raise HarnessUsageError(
                f"unknown scripted orchestrator 'iwg/{model_name}'; choose one of: "
                + ", ".join(f"iwg/{p}" for p in POLICIES)
            )

    def max_connections(self) -> int:
        """No rate limit: it answers at once."""
        return 32

    async def answer(self, turn: Turn, input: list[ChatMessage]) -> ModelOutput:
        """Reply to the current round's Plan prompt."""
        text = reply(self.model_name, turn)
        output = ModelOutput.from_content(model=f"iwg/{self.model_name}", content=text)
        output.usage = word_usage(input, text)
        return output


@modelapi(name="iwg")
def scripted_orchestrator() -> type[ModelAPI]:
    """Scripted IWG orchestrators: iwg/perfect, iwg/skipper, iwg/misrouter, iwg/diffuser."""
    return ScriptedOrchestratorAPI
