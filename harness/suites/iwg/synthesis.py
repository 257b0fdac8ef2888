"""Benchmark synthesis (spec §2.1): seeds -> Scout plan -> Wrapper environments -> committee.

The whole synthesis is one inspect eval (`iwg_synthesis`), one sample per seed, so it gets
inspect's concurrency, retries and a log. The models play roles: `scout`, `wrapper`, and
`committee_1..k`. Per seed:

1. the Scout plans the workflow DAG (TaskMarks) from the question and its answer;
2. the Wrapper writes each step's environment and checkpoint, and at most one exception
   scenario with its gold recovery plan;
3. the structural checks of `schema.check_instance` run (known executors, an acyclic DAG in
   order, one environment per step) and the last checkpoint must be the seed's answer;
4. the committee votes: member 1 on solvability (the paper's open-source tier), the others on
   consistency (the proprietary tier); the human tier is recorded as not done.

An instance is accepted when every check and vote passes. Rejected instances are kept, with
every reason, in `OUT/rejected/`; accepted ones go to `OUT/instances/`, ready for
`harness eval --suite iwg -T instances=OUT/instances`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.models.sample_context import bind_sample
from harness.suites.iwg.plan import PlanFormatError, reply_json
from harness.suites.iwg.prompts import (
    SYNTHESIS_PROMPT_VERSION,
    committee_prompt,
    scout_prompt,
    wrapper_prompt,
)
from harness.suites.iwg.schema import (
    BenchmarkInstance,
    Checkpoint,
    CommitteeVote,
    EnvironmentInfo,
    ExceptionScenario,
    RecoveryPlan,
    SeedData,
    TaskMark,
    ValidationReport,
    build,
    check_instance,
    save_instance,
    to_dict,
)


def load_seeds(path: str | Path) -> list[SeedData]:
    """Seeds from a JSONL file; a bad line is a usage error naming the file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise HarnessUsageError(f"--seeds {path}: no such file")
    from harness.bounded_json import JsonInputError, iter_lines

    seeds: list[SeedData] = []
    try:  # size, depth and UTF-8 checked before each line is parsed
        for number, item in iter_lines(path):
            try:
                seeds.append(build(SeedData, item))
            except HarnessUsageError as ex:
                raise HarnessUsageError(f"{path}: line {number}: {ex}") from None
    except JsonInputError as ex:
        raise HarnessUsageError(f"--seeds {ex}") from None
    if not seeds:
        raise HarnessUsageError(f"{path}: the seed file is empty; write one JSON seed a line")
    ids = [s.id for s in seeds]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup:
        raise HarnessUsageError(f"{path}: seed id '{dup}' appears twice")
    return seeds


def _json_reply(text: str, key: str) -> dict[str, Any]:
    data = reply_json(text, "the JSON")
    if not isinstance(data, dict) or key not in data:
        raise PlanFormatError(f"the JSON has no '{key}'")
    return data


def assemble(seed: SeedData, plan: dict[str, Any], wrap: dict[str, Any]) -> BenchmarkInstance:
    """An instance from the Scout's and the Wrapper's replies; a usage error says what is wrong."""
    steps = plan["steps"]
    if not isinstance(steps, list) or not steps:
        raise HarnessUsageError("the Scout's 'steps' is not a non-empty list")
    marks = []
    for i, s in enumerate(steps):
        marks.append(
            build(
                TaskMark,
                {
                    "id": s.get("id"),
                    "description": s.get("description", ""),
                    "assigned_agent": s.get("agent"),
                    "required_capability": s.get("capability", ""),
                    "dependencies": s.get("depends_on", []),
                    "checkpoint_hint": s.get("checkpoint_hint", ""),
                    "is_extension": bool(s.get("is_extension", False)),
                },
                f"steps[{i}]",
            )
        )
    index = {m.id: i for i, m in enumerate(marks)}
    envs: list[EnvironmentInfo | None] = [None] * len(marks)
    for k, e in enumerate(wrap.get("environments") or []):
        step = index.get(e.get("step")) if isinstance(e, dict) else None
        if step is None:
            raise HarnessUsageError(f"the Wrapper's environments[{k}] names no step of the plan")
        cp = {"step_index": step, **(e.get("checkpoint") or {})}
        envs[step] = EnvironmentInfo(
            tool_prompt=str(e.get("tool_prompt", "")),
            tool_output=str(e.get("tool_output", "")),
            checkpoint=build(Checkpoint, cp, f"environments[{k}].checkpoint"),
        )
    missing = [marks[i].id for i, e in enumerate(envs) if e is None]
    if missing:
        raise HarnessUsageError(f"the Wrapper wrote no environment for step {missing[0]}")
    scenarios, plans = [], []
    for k, x in enumerate(wrap.get("exceptions") or []):
        step = index.get(x.get("step")) if isinstance(x, dict) else None
        if step is None:
            raise HarnessUsageError(f"the Wrapper's exceptions[{k}] names no step of the plan")
        scenarios.append(
            build(
                ExceptionScenario,
                {"step_index": step, "kind": x.get("kind"), "message": x.get("message", "")},
                f"exceptions[{k}]",
            )
        )
        plans.append(RecoveryPlan(step, str(x.get("recovery", ""))))
    return BenchmarkInstance(
        seed_data=seed,
        workflow=tuple(marks),
        gold_agent_sequence=tuple(m.assigned_agent for m in marks),
        gold_checkpoints=tuple(e.checkpoint for e in envs if e),
        environments=tuple(e for e in envs if e),
        exception_scenarios=tuple(scenarios),
        gold_recovery_plans=tuple(plans),
        validation_report=ValidationReport(False, "committee"),
    )


def _step_lines(inst: BenchmarkInstance) -> list[str]:
    return [
        f"- {m.id} ({m.assigned_agent}, after {', '.join(m.dependencies) or 'nothing'}): "
        f"{m.description} | output: {e.tool_output!r} | checkpoint {e.checkpoint.type}: "
        f"{e.checkpoint.expected_value!r}"
        for m, e in zip(inst.workflow, inst.environments, strict=True)
    ]


async def _ask(role: str, prompt: str) -> str:
    output = await get_model(role=role).generate([ChatMessageUser(content=prompt)])
    return output.completion


@solver
def synthesize_instance(committee: int) -> Solver:
    """Scout, Wrapper, checks and `committee` votes for the sample's seed."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        seed = build(SeedData, state.metadata["seed"])
        reasons: list[str] = []
        inst: BenchmarkInstance | None = None
        try:
            plan = _json_reply(await _ask("scout", scout_prompt(seed)), "steps")
            wrap = _json_reply(
                await _ask("wrapper", wrapper_prompt(seed, plan["steps"])), "environments"
            )
            inst = assemble(seed, plan, wrap)
            check_instance(inst)
        except (PlanFormatError, HarnessUsageError) as ex:
            reasons.append(f"structure: {ex}")
        votes: list[CommitteeVote] = []
        if inst is not None and not reasons:
            last = inst.gold_checkpoints[-1].expected_value.strip().lower()
            if seed.answer.strip().lower() not in last:
                reasons.append(f"structure: the last checkpoint {last!r} is not the answer")
            for k in range(1, committee + 1):
                tier = "solvability" if k == 1 else "consistency"
                role = f"committee_{k}"
                text = await _ask(role, committee_prompt(seed, _step_lines(inst), tier))
                try:
                    verdict = _json_reply(text, "solvable")
                    passed = verdict.get("solvable") is True and verdict.get("consistent") is True
                    why = tuple(str(r) for r in verdict.get("reasons") or ())
                except PlanFormatError as ex:
                    passed, why = False, (f"unreadable verdict: {ex}",)
                name = str(get_model(role=role))
                votes.append(CommitteeVote(name, tier, passed, why))
                if not passed:
                    reasons.append(f"{role} ({tier}): " + ("; ".join(why) or "voted no"))
        if inst is not None:
            report = ValidationReport(
                not reasons, f"committee ({SYNTHESIS_PROMPT_VERSION})", tuple(votes), tuple(reasons)
            )
            state.metadata["iwg_instance"] = to_dict(replace(inst, validation_report=report))
        state.metadata["iwg_reasons"] = reasons
        return state

    return solve


@scorer(metrics=[mean()])
def accepted() -> Scorer:
    """1 when the instance passed every check and vote."""

    async def score(state: TaskState, target: Target) -> Score:
        reasons = state.metadata.get("iwg_reasons") or []
        return Score(value=float(not reasons), explanation="; ".join(reasons) or "accepted")

    return score


@task
def iwg_synthesis(seeds: str, committee: int = 2) -> Task:
    """One sample per seed of `seeds` (JSONL); models in roles scout, wrapper, committee_k."""
    items = load_seeds(seeds)
    samples = [
        Sample(id=s.id, input=s.query, target=s.answer, metadata={"seed": to_dict(s)})
        for s in items
    ]
    return Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), synthesize_instance(committee)],
        scorer=accepted(),
        metadata={"prompt_version": SYNTHESIS_PROMPT_VERSION},
    )


@dataclass(frozen=True)
class SynthesisResult:
    """What a synthesis run wrote."""

    accepted: int  # instances in OUT/instances
    rejected: int  # records in OUT/rejected
    log: str  # the inspect log of the run

    def summary(self) -> str:
        """One line."""
        return f"accepted {self.accepted}, rejected {self.rejected}; log {self.log}"


def write_outputs(log_location: str, out: Path) -> SynthesisResult:
    """Accepted instances to OUT/instances, rejected ones (with reasons) to OUT/rejected."""
    from harness.logs import read_samples
    from harness.suites.iwg.schema import instance_from_dict

    (out / "instances").mkdir(parents=True, exist_ok=True)
    (out / "rejected").mkdir(parents=True, exist_ok=True)
    n_ok = n_bad = 0
    for sample in read_samples(log_location):
        meta = sample.metadata or {}
        reasons = list(meta.get("iwg_reasons") or [])
        if sample.error:
            reasons.append(f"error: {sample.error.message.splitlines()[0][:200]}")
        data = meta.get("iwg_instance")
        if data is not None and not reasons:
            save_instance(instance_from_dict(data), out / "instances")
            n_ok += 1
            continue
        record = {"seed": meta.get("seed"), "reasons": reasons, "instance": data}
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(sample.id))
        (out / "rejected" / f"{safe}.json").write_text(json.dumps(record, indent=1) + "\n")
        n_bad += 1
    return SynthesisResult(n_ok, n_bad, log_location)
