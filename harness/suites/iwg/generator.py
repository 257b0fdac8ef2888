"""The seeded procedural generator of IWG instances (spec §5.1): no LLM, no download.

Each instance is a random DAG of 3-8 steps over the K = 7 executor types. Step i depends on one
or two earlier steps (step 0 on none), so the listed order is a topological order and the gold
order. Every step's tool output is deterministic (`answer: VALUE` and a source line), its
checkpoint is `exact_match` on VALUE, and values are distinct within an instance, so a shifted
checkpoint never matches by chance. A share of the instances (30% by default, exactly rounded)
gets one exception scenario on a random step, with a gold recovery plan of class Retry, Switch
Agent or Decompose. Abort is not generated: it would end the gold trajectory early.
"""

from __future__ import annotations

import random

from harness.suites.iwg.schema import (
    EXECUTORS,
    BenchmarkInstance,
    Checkpoint,
    EnvironmentInfo,
    ExceptionScenario,
    RecoveryPlan,
    SeedData,
    TaskMark,
    ValidationReport,
)

WORDS = (
    "amber cobalt delta ember fjord garnet harbor indigo juniper kestrel lumen meadow nectar "
    "onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zephyr"
).split()
DOMAINS = ("registry", "archive", "catalogue", "ledger", "atlas")
TOOLS = {
    "searcher": "search engine",
    "browser": "web page",
    "reader": "document store",
    "calculator": "calculator",
    "coder": "code runner",
    "analyst": "data table",
    "writer": "report drafter",
}
RECOVERIES = {
    "Retry": "Retry the {tool} call with the same input after the failure",
    "Switch Agent": "Switch to a different agent for this step and resend the input",
    "Decompose": "Decompose the step: break down the request into two smaller calls",
}


def _value(rng: random.Random, used: set[str]) -> str:
    while True:
        value = f"{rng.choice(WORDS)}-{rng.randint(1000, 9999)}"
        if value not in used:
            used.add(value)
            return value


def make_instance(rng: random.Random, index: int, with_exception: bool) -> BenchmarkInstance:
    """One instance; `index` names it (`iwg-0001`, ...)."""
    n = rng.randint(3, 8)
    agents = list(EXECUTORS)
    domain = rng.choice(DOMAINS)
    used: set[str] = set()
    start = _value(rng, used)
    values = [_value(rng, used) for _ in range(n)]
    marks, environments, checkpoints = [], [], []
    for i in range(n):
        agent = rng.choice(agents)
        deps = () if i == 0 else tuple(sorted({f"s{i - 1}", f"s{rng.randrange(i)}"}))
        source = start if i == 0 else values[i - 1]
        description = f"Look up the {domain} entry that follows '{source}' with the {TOOLS[agent]}"
        marks.append(
            TaskMark(
                id=f"s{i}",
                description=description,
                assigned_agent=agent,
                required_capability=EXECUTORS[agent],
                dependencies=deps,
                checkpoint_hint=f"the {domain} code after '{source}'",
            )
        )
        checkpoint = Checkpoint("exact_match", values[i], "", i)
        checkpoints.append(checkpoint)
        environments.append(
            EnvironmentInfo(
                tool_prompt=f"{TOOLS[agent]}: finds the {domain} entry that follows a given code",
                tool_output=f"answer: {values[i]}\nsource: {domain} {TOOLS[agent]}, entry {i + 1}",
                checkpoint=checkpoint,
            )
        )
    scenarios: tuple[ExceptionScenario, ...] = ()
    plans: tuple[RecoveryPlan, ...] = ()
    if with_exception:
        step = rng.randrange(n)
        kind = rng.choice(("ToolError", "Timeout"))
        recovery = rng.choice(list(RECOVERIES))
        tool = TOOLS[marks[step].assigned_agent]
        message = f"ERROR ({kind}): the {tool} did not answer"
        scenarios = (ExceptionScenario(step, kind, message),)  # type: ignore[arg-type]
        plans = (RecoveryPlan(step, RECOVERIES[recovery].format(tool=tool)),)
    seed = SeedData(
        id=f"iwg-{index + 1:04d}",
        query=f"Starting from the {domain} code '{start}', follow the chain of {n} look-ups: "
        f"which code do you reach?",
        answer=values[-1],
        domain=domain,
        difficulty="easy" if n <= 4 else "medium" if n <= 6 else "hard",
        expected_steps=n,
    )
    return BenchmarkInstance(
        seed_data=seed,
        workflow=tuple(marks),
        gold_agent_sequence=tuple(m.assigned_agent for m in marks),
        gold_checkpoints=tuple(checkpoints),
        environments=tuple(environments),
        exception_scenarios=scenarios,
        gold_recovery_plans=plans,
        validation_report=ValidationReport(True, "procedural (generator, no committee)"),
    )


def generate(n: int = 100, seed: int = 0, exception_share: float = 0.3) -> list[BenchmarkInstance]:
    """`n` instances from `seed`; round(exception_share * n) of them get an exception."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= exception_share <= 1:
        raise ValueError(f"exception_share must be in [0, 1], got {exception_share}")
    rng = random.Random(f"iwg-generate-{seed}")
    faulty = set(rng.sample(range(n), round(exception_share * n)))
    return [make_instance(rng, i, i in faulty) for i in range(n)]
