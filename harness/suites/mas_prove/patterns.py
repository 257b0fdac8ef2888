"""Multi-agent patterns as inspect agents: debate, self-refinement, orchestrator-workers, workflow.

Each is a reimplementation of the *pattern*, not of a framework the paper wrapped (Debate,
DyLAN, MaAS, AFlow, ADAS, MAS-Zero): its agents, rounds and aggregation are ours. A pattern works
through the problem's steps (`Domain.n_steps`), carrying each step's answer into the next, and
makes every model call through the sample's `Runner`, which applies the search at the agent or
the iteration granularity. `single` (one call per step) is the baseline with no MAS around it.

Rounds (the iteration granularity's unit):
- debate: each round is `n_agents` calls; from round 2 each agent reads its peers' last answers;
  the step's answer is the majority of the last round, or an aggregator's call (`judge`);
- refine: round 1 is a draft; each later round is a critic's call and, when the critic's answer
  differs from the draft's, a reviser's call whose answer replaces the draft;
- orchestrator: one round is a planner's call, `n_workers` worker calls that read the plan, and a
  synthesiser's call that reads the workers;
- workflow (AFlow-style fixed DAG): Generate x3 -> ScEnsemble -> Review -> Revise when the review
  disagrees.

In a domain whose prompts carry no notes (the chain: tiny-arith reads only `62-48=`) the planner
and the ensemble make no call; the synthesiser's, the ensemble's and an aggregator's answers are
votes in which the calls' answers count (the synthesiser's first, breaking ties).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Literal

from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.model import ChatMessageAssistant, ModelOutput

from harness.suites.mas_prove.runner import Runner
from harness.suites.mas_prove.search import Outcome, Reply, gather

PatternName = Literal["single", "debate", "refine", "orchestrator", "workflow"]
PATTERNS: tuple[str, ...] = ("single", "debate", "refine", "orchestrator", "workflow")
StepFn = Callable[[int, str], Awaitable[Outcome]]


def majority(outcomes: list[Outcome]) -> Outcome:
    """The first outcome whose answer most outcomes share (no answer never wins over one)."""
    answers = [o.answer for o in outcomes if o.answer is not None]
    if not answers:
        return outcomes[0]
    top = max(Counter(answers).values())
    winners = {a for a, c in Counter(answers).items() if c == top}
    return next(o for o in outcomes if o.answer in winners)


def joined(outcomes: list[Outcome], label: str, answer_from: Outcome) -> Outcome:
    """Several calls as one outcome: the texts labelled, the answer of `answer_from`."""
    text = "\n\n".join(f"{label} {i}: {o.text}" for i, o in enumerate(outcomes, 1))
    replies: tuple[Reply, ...] = tuple(r for o in outcomes for r in o.replies)
    return Outcome(text, answer_from.answer, replies)


async def run_steps(runner: Runner, state: AgentState, step_fn: StepFn) -> AgentState:
    """Work through the domain's steps, carrying each kept answer; the last is the output."""
    domain = runner.domain
    value = domain.start()
    outcome = Outcome("", None)
    for step in range(domain.n_steps):
        outcome = await step_fn(step, value)
        runner.step_correct.append(domain.correct(step, value, outcome.answer))
        runner.prior_steps.append((domain.step_prompt(step, value), outcome.answer or ""))
        value = outcome.answer if outcome.answer is not None else "?"
    final = outcome.text if domain.reads_notes else (outcome.answer or outcome.text)
    state.output = ModelOutput.from_content(model=str(runner.model), content=final)
    state.messages.append(ChatMessageAssistant(content=final))
    return state


@agent
def single(runner: Runner) -> Agent:
    """One agent call per step: the baseline with no multi-agent structure."""

    async def execute(state: AgentState) -> AgentState:
        async def step_fn(step: int, value: str) -> Outcome:
            return await runner.iteration(
                lambda: runner.call(step, value, "worker", where="worker"), step, value, "call"
            )

        return await run_steps(runner, state, step_fn)

    return execute


@agent
def debate(
    runner: Runner,
    n_agents: int = 3,
    rounds: int = 2,
    aggregate: Literal["vote", "judge"] = "vote",
) -> Agent:
    """Debate (a reimplementation of the pattern): `n_agents` agents, `rounds` rounds.

    Args:
        runner: The sample's runner.
        n_agents: Agents per round.
        rounds: Rounds; from the second on, each agent reads its peers' last answers.
        aggregate: The step's answer: `vote` (majority of the last round) or `judge` (an
            aggregator's call that reads the last round).

    """

    async def execute(state: AgentState) -> AgentState:
        async def step_fn(step: int, value: str) -> Outcome:
            last: list[Outcome] = []
            for r in range(rounds):
                peers = [o.text for o in last]

                async def one_round(r: int = r, peers: list[str] = peers) -> Outcome:
                    calls = [
                        runner.call(
                            step,
                            value,
                            "worker" if r == 0 else "debater",
                            tuple(p for j, p in enumerate(peers) if j != i),
                            where=f"debate round {r + 1} agent {i + 1}",
                        )
                        for i in range(n_agents)
                    ]
                    outs = list(await gather(*calls))
                    return joined(outs, "Agent", majority(outs))

                kept = await runner.iteration(
                    one_round, step, value, f"debate round {r + 1}", tuple(peers)
                )
                last = [Outcome(x.text, x.answer, (x,)) for x in kept.replies] or [kept]
            if aggregate == "judge":
                verdict = await runner.call(
                    step, value, "ensemble", tuple(o.text for o in last), where="aggregator"
                )
                return verdict if runner.domain.reads_notes else majority([verdict, *last])
            return majority(last)

        return await run_steps(runner, state, step_fn)

    return execute


@agent
def refine(runner: Runner, rounds: int = 2) -> Agent:
    """Iterative self-refinement (a reimplementation of the pattern).

    Args:
        runner: The sample's runner.
        rounds: Round 1 drafts; each later round critiques and, if the critic disagrees, revises.

    """

    async def execute(state: AgentState) -> AgentState:
        async def step_fn(step: int, value: str) -> Outcome:
            draft = await runner.iteration(
                lambda: runner.call(step, value, "worker", where="draft"), step, value, "draft"
            )
            for r in range(1, rounds):

                async def one_round(r: int = r, draft: Outcome = draft) -> Outcome:
                    critique = await runner.call(
                        step, value, "critic", (draft.text,), where=f"refine round {r + 1} critic"
                    )
                    if critique.answer == draft.answer and draft.answer is not None:
                        return joined([draft, critique], "Draft and critique", draft)
                    revised = await runner.call(
                        step,
                        value,
                        "reviser",
                        (draft.text, critique.text),
                        where=f"refine round {r + 1} reviser",
                    )
                    return joined([critique, revised], "Critique and revision", revised)

                draft = await runner.iteration(
                    one_round, step, value, f"refine round {r + 1}", (draft.text,)
                )
            return draft

        return await run_steps(runner, state, step_fn)

    return execute


@agent
def orchestrator(runner: Runner, n_workers: int = 3) -> Agent:
    """Orchestrator-workers (a reimplementation of the pattern).

    Args:
        runner: The sample's runner.
        n_workers: Worker calls per round, concurrent.

    """

    async def execute(state: AgentState) -> AgentState:
        async def step_fn(step: int, value: str) -> Outcome:
            async def one_round() -> Outcome:
                notes: tuple[str, ...] = ()
                if runner.domain.reads_notes:
                    plan = await runner.call(step, value, "planner", where="planner")
                    notes = (plan.text,)
                workers = list(
                    await gather(
                        *(
                            runner.call(step, value, "worker", notes, where=f"worker {i + 1}")
                            for i in range(n_workers)
                        )
                    )
                )
                synth = await runner.call(
                    step, value, "synthesizer", tuple(w.text for w in workers), where="synthesizer"
                )
                answer_from = synth if runner.domain.reads_notes else majority([synth, *workers])
                return joined([*workers, synth], "Worker or synthesiser", answer_from)

            return await runner.iteration(one_round, step, value, "orchestration")

        return await run_steps(runner, state, step_fn)

    return execute


@agent
def workflow(runner: Runner, n_generate: int = 3) -> Agent:
    """A fixed AFlow-style DAG of operators (a reimplementation of the pattern, not AFlow).

    Generate x `n_generate` -> ScEnsemble -> Review -> Revise (when the review disagrees).

    Args:
        runner: The sample's runner.
        n_generate: Generate operators, run concurrently.

    """

    async def execute(state: AgentState) -> AgentState:
        async def step_fn(step: int, value: str) -> Outcome:
            async def one_pass() -> Outcome:
                drafts = list(
                    await gather(
                        *(
                            runner.call(step, value, "worker", where=f"generate {i + 1}")
                            for i in range(n_generate)
                        )
                    )
                )
                if runner.domain.reads_notes:
                    ensemble = await runner.call(
                        step, value, "ensemble", tuple(d.text for d in drafts), where="ensemble"
                    )
                else:
                    ensemble = majority(drafts)
                review = await runner.call(step, value, "critic", (ensemble.text,), where="review")
                if review.answer == ensemble.answer and ensemble.answer is not None:
                    return joined([*drafts, ensemble, review], "Operator", ensemble)
                revised = await runner.call(
                    step, value, "reviser", (ensemble.text, review.text), where="revise"
                )
                return joined([*drafts, ensemble, review, revised], "Operator", revised)

            return await runner.iteration(one_pass, step, value, "workflow pass")

        return await run_steps(runner, state, step_fn)

    return execute


def build_pattern(name: str, runner: Runner, **options: object) -> Agent:
    """The pattern called `name`, bound to a sample's runner."""
    factories = {
        "single": single,
        "debate": debate,
        "refine": refine,
        "orchestrator": orchestrator,
        "workflow": workflow,
    }
    if name not in factories:
        raise ValueError(f"unknown pattern {name!r}; valid: {PATTERNS}")
    return factories[name](runner, **options)  # type: ignore[operator]
