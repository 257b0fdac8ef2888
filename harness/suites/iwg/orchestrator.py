"""The orchestrator under test: a Plan/Reflexion loop over K executors, as inspect agents.

Each round (spec §2.2):

1. `plan` (the model under test, any model spec) reads the prompt of `harness.suites.iwg.plan`
   and replies with board operations and parallel next_actions;
2. each action goes to an `executor` agent, which answers from the instance's synthesised
   environment: the named tool's deterministic output, or the exception scenario's fault
   message on the tool's first call;
3. Reflexion (`audit`, rule-based here) checks each output and either writes the step's result
   summary (the predicted checkpoint value) or classifies the failure: Hallucination (an unknown
   executor or tool), MissingInfo (an empty output), WrongFormat (a reply that is not the
   format), ToolError and Timeout (a fault; Timeout also when max_steps runs out).

The loop stops when Plan dispatches nothing, after `patience` failed replies in a row, when the
orchestrator's own model call raises (ModelError: a failed step with its reason, and the run
ends), or at `max_steps`. Executors run whatever tool they are sent to, whatever their type: a
misrouted step can still pass its checkpoint, and only the executor sequence shows it.
"""

from __future__ import annotations

import json
import random
from contextvars import ContextVar
from dataclasses import dataclass

from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser, Model, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import LimitExceededError, collect

from harness.suites.iwg.plan import PlanFormatError, TaskBoard, parse_plan, plan_prompt
from harness.suites.iwg.schema import EXECUTORS, BenchmarkInstance, instance_from_dict
from harness.suites.iwg.trajectory import MODEL_ERROR, Dispatch, Round, Trajectory


@dataclass(frozen=True)
class Turn:
    """What a round's Plan call is about, for scripted orchestrators (which read the gold)."""

    instance: BenchmarkInstance  # the instance
    tool_ids: tuple[str, ...]  # tool id of each gold step
    done: frozenset[int]  # gold steps completed so far
    failed: int | None  # gold step whose dispatch failed in the last round, if any
    t: int  # 1-based round
    context: float  # the prompt's words / 1000


_turn: ContextVar[Turn | None] = ContextVar("iwg_turn", default=None)


def current_turn() -> Turn | None:
    """The round being planned in this sample's task (None outside the loop)."""
    return _turn.get()


def shuffled_tool_ids(instance: BenchmarkInstance) -> tuple[str, ...]:
    """Tool ids T1..Tn assigned to the gold steps in a shuffled (seeded by id) order."""
    order = list(range(len(instance.environments)))
    random.Random(f"iwg-tools-{instance.id}").shuffle(order)
    ids = [""] * len(order)
    for position, step in enumerate(order):
        ids[step] = f"T{position + 1}"
    return tuple(ids)


def audit(output: str) -> tuple[str, str, str]:
    """Reflexion: (result summary, failure class, reason) of one executor output.

    The summary is the text after `answer:` on its line, else the first non-empty line.
    """
    text = output.strip()
    if not text:
        return "", "MissingInfo", "the executor returned nothing"
    if text.upper().startswith("ERROR"):
        kind = "Timeout" if "timeout" in text.lower() else "ToolError"
        return "", kind, text.splitlines()[0][:200]
    for line in text.splitlines():
        if line.strip().lower().startswith("answer:"):
            return line.split(":", 1)[1].strip(), "", ""
    return text.splitlines()[0].strip(), "", ""


@agent
def plan(model: Model | None = None) -> Agent:
    """Plan: one call of the model under test (default: the task's) on the round's prompt."""

    async def execute(state: AgentState) -> AgentState:
        state.output = await (model or get_model()).generate(state.messages)
        state.messages.append(state.output.message)
        return state

    return execute


@agent
def executor(
    name: str, instance: BenchmarkInstance, tool_ids: tuple[str, ...], faults: dict
) -> Agent:
    """An executor of type `name`: answers a `{"tool", "input"}` message from the environment.

    `faults` maps a faulty gold step to the round its fault fired (0: not yet); the first call to
    that step's tool gets the fault message.
    """
    step_of = {tid: i for i, tid in enumerate(tool_ids)}

    async def execute(state: AgentState) -> AgentState:
        request = json.loads(state.messages[-1].text)
        step = step_of[request["tool"]]
        scenario = next((s for s in instance.exception_scenarios if s.step_index == step), None)
        if scenario is not None and not faults[step]:
            faults[step] = request["round"]
            answer = scenario.message
        else:
            answer = instance.environments[step].tool_output
        state.messages.append(ChatMessageAssistant(content=answer, model=name, source="generate"))
        return state

    return execute


async def _dispatch(
    instance: BenchmarkInstance,
    tool_ids: tuple[str, ...],
    faults: dict,
    t: int,
    agent_name: str,
    tool: str,
    text: str,
) -> Dispatch:
    if agent_name not in EXECUTORS:
        return Dispatch(
            agent_name,
            tool,
            text,
            failure="Hallucination",
            reason=f"unknown executor '{agent_name}'",
        )
    if tool not in tool_ids:
        return Dispatch(
            agent_name, tool, text, failure="Hallucination", reason=f"unknown tool '{tool}'"
        )
    worker = executor(agent_name, instance, tool_ids, faults)
    message = json.dumps({"tool": tool, "input": text, "round": t})
    state = await worker(AgentState(messages=[ChatMessageUser(content=message)]))
    output = state.messages[-1].text
    summary, failure, reason = audit(output)
    return Dispatch(agent_name, tool, text, output, summary, failure, reason)


async def run_loop(
    instance: BenchmarkInstance,
    model: Model | None = None,
    *,
    max_steps: int = 20,
    patience: int = 3,
    messages: list[ChatMessage] | None = None,
) -> Trajectory:
    """The Plan/Reflexion loop on one instance, Plan played by `model` (default: the task's).

    Each round's reply and results are appended to `messages` when it is given (the sample's
    transcript).
    """
    tool_ids = shuffled_tool_ids(instance)
    step_of = {tid: i for i, tid in enumerate(tool_ids)}
    faults = {s.step_index: 0 for s in instance.exception_scenarios}
    board, rounds = TaskBoard(), []
    done: set[int] = set()
    failed: int | None = None
    pending, misses, stopped = "", 0, f"max_steps ({max_steps})"
    planner = plan(model)
    log = messages if messages is not None else []
    for t in range(1, max_steps + 1):
        prompt = plan_prompt(instance, tool_ids, board, rounds, pending)
        context = round(len(prompt.split()) / 1000, 4)
        token = _turn.set(Turn(instance, tool_ids, frozenset(done), failed, t, context))
        try:
            reply_state = await planner(AgentState(messages=[ChatMessageUser(content=prompt)]))
            reply = reply_state.output.completion
        except LimitExceededError:
            raise
        except Exception as ex:  # the orchestrator under test failed: its step, its reason
            reason = f"the orchestrator's model call raised {type(ex).__name__}: {ex}"
            rounds.append(Round(t, context, "", failure=MODEL_ERROR, reason=reason[:300]))
            stopped = "the orchestrator's model call raised"
            break
        finally:
            _turn.reset(token)
        log.append(ChatMessageAssistant(content=reply, source="generate"))
        try:
            parsed = parse_plan(reply)
        except PlanFormatError as ex:
            rounds.append(Round(t, context, reply[:2000], failure="WrongFormat", reason=str(ex)))
            misses += 1
            if misses >= patience:
                stopped = f"{patience} failed replies in a row"
                break
            continue
        misses = 0
        refused = tuple(e for e in (board.apply(op) for op in parsed.board_ops) if e)
        notes = refused + parsed.problems
        if not parsed.actions:
            rounds.append(
                Round(t, context, reply[:2000], recovery=parsed.recovery, board_errors=notes)
            )
            stopped = "no actions"
            break
        dispatches = await collect(
            *(
                _dispatch(instance, tool_ids, faults, t, a.agent, a.tool, a.input)
                for a in parsed.actions
            )
        )
        rounds.append(
            Round(t, context, reply[:2000], tuple(dispatches), parsed.recovery, board_errors=notes)
        )
        done |= {step_of[d.tool] for d in dispatches if not d.failure}
        bad = [d for d in dispatches if d.failure]
        failed = step_of.get(bad[0].tool) if bad else None
        pending = (
            f"{bad[0].agent} on {bad[0].tool}: {bad[0].failure} ({bad[0].reason})" if bad else ""
        )
        results = "\n".join(
            f"{d.agent} on {d.tool}: " + (f"FAILED {d.failure}" if d.failure else d.summary)
            for d in dispatches
        )
        log.append(ChatMessageUser(content=f"Round {t} results:\n{results}"))
    else:
        rounds.append(
            Round(
                max_steps + 1, 0.0, "", failure="Timeout", reason=f"max_steps ({max_steps}) reached"
            )
        )
    fired = tuple(faults[s.step_index] for s in instance.exception_scenarios)
    return Trajectory(instance.id, tuple(rounds), stopped, tool_ids, fired)


@agent
def orchestrator(instance: BenchmarkInstance, max_steps: int = 20, patience: int = 3) -> Agent:
    """The Plan/Reflexion loop on one instance; the trajectory goes to the sample's store."""

    async def execute(state: AgentState) -> AgentState:
        from inspect_ai.util import store

        trajectory = await run_loop(
            instance, max_steps=max_steps, patience=patience, messages=state.messages
        )
        store().set("iwg_trajectory", trajectory.to_dict())
        return state

    return execute


@solver
def orchestrate(max_steps: int = 20, patience: int = 3, compat: bool = False) -> Solver:
    """Run the orchestrator loop on the sample's instance; the trajectory goes to metadata.

    Beside the whole trajectory, the metadata keeps what the report reads from the log's
    summaries: H(t) and c(t) over the rounds that dispatched (`compat` picks the entropy's
    convention), and the failures by class.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from inspect_ai.model import ModelOutput
        from inspect_ai.util import store

        instance = instance_from_dict(state.metadata["instance"])
        loop = orchestrator(instance, max_steps=max_steps, patience=patience)
        agent_state = await loop(AgentState(messages=list(state.messages)))
        state.messages = agent_state.messages
        data = store().get("iwg_trajectory")
        state.metadata["iwg_trajectory"] = data
        trajectory = Trajectory.from_dict(data)
        entropy, context = trajectory.entropy_series(compat=compat)
        state.metadata["iwg_entropy"] = [round(h, 6) for h in entropy]
        state.metadata["iwg_context"] = context
        state.metadata["iwg_failures"] = trajectory.failures()
        values = trajectory.predicted_values()
        state.output = ModelOutput.from_content("orchestrator", values[-1] if values else "")
        return state

    return solve
