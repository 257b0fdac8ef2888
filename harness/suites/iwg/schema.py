"""IWG's instance schema (spec §2.1), as frozen dataclasses that round-trip through JSON.

A `BenchmarkInstance` holds its seed, its workflow (a DAG of `TaskMark`s, listed in a
topological order), the gold executor sequence and checkpoints, one `EnvironmentInfo` per step,
the exception scenarios with their gold recovery plans, and the validation report.

`instance_from_dict` checks every field against its annotation (no field missing, none unknown,
every type right) and then the instance's own rules: known executors, an acyclic workflow listed
in dependency order, one environment and checkpoint per step, exceptions on existing steps. A
file that breaks one gets a `HarnessUsageError` naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessUsageError

# The K = 7 executor types of the paper's setting; the names and capabilities are ours.
EXECUTORS: dict[str, str] = {
    "searcher": "web search",
    "browser": "page browsing",
    "reader": "document reading",
    "calculator": "arithmetic",
    "coder": "code execution",
    "analyst": "data analysis",
    "writer": "answer writing",
}
CheckpointType = Literal["exact_match", "api_verify", "custom_1shot"]
FailureKind = Literal["Hallucination", "MissingInfo", "WrongFormat", "ToolError", "Timeout"]
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SeedData:
    """A seed question-answer pair that an instance is built backwards from."""

    id: str  # unique id; the instance's id and its sample id
    query: str  # the question
    answer: str  # the final answer
    domain: str = "general"  # topic label
    difficulty: str = "medium"  # easy, medium or hard (a label, not checked)
    expected_steps: int = 3  # how many steps the seed's author expects


@dataclass(frozen=True)
class TaskMark:
    """One step of the workflow DAG."""

    id: str  # step id, unique in the instance
    description: str  # what the step does
    assigned_agent: str  # the executor type that should run it (one of EXECUTORS)
    required_capability: str  # what the executor needs
    dependencies: tuple[str, ...] = ()  # ids of steps that must finish first
    checkpoint_hint: str = ""  # what the checkpoint checks
    is_extension: bool = False  # a step added beyond the seed's plan


@dataclass(frozen=True)
class Checkpoint:
    """What a step's result must be."""

    type: CheckpointType  # how it is matched (spec §2.5)
    expected_value: str  # the gold value
    verification_prompt: str = ""  # for an LLM check (custom_1shot); unused by our matcher
    step_index: int = 0  # 0-based position in the gold sequence


@dataclass(frozen=True)
class EnvironmentInfo:
    """A step's synthesised tool: its prompt, its deterministic output and its checkpoint."""

    tool_prompt: str  # what the tool does, as the orchestrator sees it
    tool_output: str  # what the executor answers; "answer: VALUE" on one line
    checkpoint: Checkpoint  # the step's checkpoint


@dataclass(frozen=True)
class ExceptionScenario:
    """A fault injected into one step: its first call returns `message` instead of the output."""

    step_index: int  # 0-based gold step
    kind: FailureKind  # the failure class Reflexion should see (ToolError or Timeout)
    message: str  # what the executor answers on the faulty call


@dataclass(frozen=True)
class RecoveryPlan:
    """The gold recovery of an exception scenario."""

    step_index: int  # the scenario's step
    plan: str  # free text; its class is found by keyword (spec §2.5, EH-F1)


@dataclass(frozen=True)
class CommitteeVote:
    """One committee member's verdict on an instance."""

    model: str  # the model that voted
    tier: str  # "solvability" or "consistency"
    passed: bool  # whether it passed this member's check
    reasons: tuple[str, ...] = ()  # why not, or notes


@dataclass(frozen=True)
class ValidationReport:
    """How an instance was validated."""

    accepted: bool  # kept in the benchmark
    method: str  # "procedural (generator, no committee)" or "committee"
    votes: tuple[CommitteeVote, ...] = ()  # the committee's verdicts
    reasons: tuple[str, ...] = ()  # why it was rejected (structural checks and votes)
    human_review: str = "not done"  # the third tier is a person's; we record that it is open


@dataclass(frozen=True)
class BenchmarkInstance:
    """One IWG instance (spec §2.1), plus its workflow DAG and a schema version."""

    seed_data: SeedData
    workflow: tuple[TaskMark, ...]  # the DAG, in a topological order (the gold order)
    gold_agent_sequence: tuple[str, ...]  # the executor of each step, in gold order
    gold_checkpoints: tuple[Checkpoint, ...]  # one per step, in gold order
    environments: tuple[EnvironmentInfo, ...]  # one per step, in gold order
    exception_scenarios: tuple[ExceptionScenario, ...] = ()
    gold_recovery_plans: tuple[RecoveryPlan, ...] = ()  # one per exception scenario
    validation_report: ValidationReport = field(
        default_factory=lambda: ValidationReport(True, "procedural (generator, no committee)")
    )
    schema_version: int = SCHEMA_VERSION

    @property
    def id(self) -> str:
        """The instance id (its seed's)."""
        return self.seed_data.id


# -- JSON ---------------------------------------------------------------------------------------


def to_dict(obj: Any) -> dict[str, Any]:
    """A dataclass as plain JSON-ready data (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(obj)))


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(annotation)))
    if origin is tuple:
        return f"a list of {_type_name(typing.get_args(annotation)[0])}"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if dataclasses.is_dataclass(annotation):
        return f"an object ({annotation.__name__})"
    return {str: "a string", int: "an integer", bool: "true or false", float: "a number"}.get(
        annotation, str(annotation)
    )


def _bad(where: str, annotation: Any, value: Any) -> HarnessUsageError:
    shown = json.dumps(value)[:40] if not isinstance(value, str) else repr(value[:40])
    return HarnessUsageError(f"field '{where}' wants {_type_name(annotation)}, got {shown}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def build(cls: type, data: Any, where: str = "") -> Any:
    """`data` (parsed JSON) as dataclass `cls`, checking every field; raises a usage error."""
    if not isinstance(data, dict):
        raise _bad(where or cls.__name__, cls, data)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = _hints(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise HarnessUsageError(
            f"field '{where + '.' if where else ''}{unknown[0]}' is not a field of "
            f"{cls.__name__}; its fields are: {', '.join(fields)}"
        )
    kwargs = {}
    for name, f in fields.items():
        path = f"{where}.{name}" if where else name
        if name not in data:
            no_default = (
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            )
            if no_default:
                raise HarnessUsageError(f"field '{path}' is missing")
            continue
        kwargs[name] = _value(hints[name], data[name], path)
    return cls(**kwargs)


def _value(annotation: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(annotation)
    if dataclasses.is_dataclass(annotation):
        return build(annotation, value, where)  # type: ignore[arg-type]
    if origin is tuple:
        item = typing.get_args(annotation)[0]
        if not isinstance(value, list):
            raise _bad(where, annotation, value)
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is Literal:
        if value not in typing.get_args(annotation):
            raise _bad(where, annotation, value)
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise _bad(where, annotation, value)
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(where, annotation, value)
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise _bad(where, annotation, value)
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _bad(where, annotation, value)
        return float(value)
    raise TypeError(f"schema field {where} has an annotation the reader does not handle")


# -- the instance's own rules -------------------------------------------------------------------


def find_cycle(marks: tuple[TaskMark, ...]) -> list[str] | None:
    """A dependency cycle among the steps (ids, first repeated at the end), or None."""
    deps = {m.id: [d for d in m.dependencies] for m in marks}
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in deps.get(node, []):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt in deps and state.get(nxt) is None:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for m in marks:
        if state.get(m.id) is None:
            found = visit(m.id)
            if found:
                return found
    return None


def check_instance(inst: BenchmarkInstance) -> None:
    """The rules a well-formed instance keeps; the first one broken is a usage error."""
    n = len(inst.workflow)
    if n == 0:
        raise HarnessUsageError("field 'workflow' is empty; an instance needs at least one step")
    ids = [m.id for m in inst.workflow]
    if len(set(ids)) != n:
        dup = next(i for i in ids if ids.count(i) > 1)
        raise HarnessUsageError(f"field 'workflow': step id '{dup}' appears twice")
    for i, m in enumerate(inst.workflow):
        if m.assigned_agent not in EXECUTORS:
            raise HarnessUsageError(
                f"field 'workflow[{i}].assigned_agent': unknown executor '{m.assigned_agent}'; "
                f"the executors are: {', '.join(EXECUTORS)}"
            )
        for d in m.dependencies:
            if d not in ids:
                raise HarnessUsageError(f"field 'workflow[{i}].dependencies': unknown step '{d}'")
    cycle = find_cycle(inst.workflow)
    if cycle:
        raise HarnessUsageError(
            f"field 'workflow': the steps form a cycle ({' -> '.join(cycle)}); a workflow is a DAG"
        )
    seen: set[str] = set()
    for i, m in enumerate(inst.workflow):
        late = [d for d in m.dependencies if d not in seen]
        if late:
            raise HarnessUsageError(
                f"field 'workflow[{i}].dependencies': step '{late[0]}' comes later; list the "
                f"steps in a topological order (the gold order)"
            )
        seen.add(m.id)
    for name, items in (
        ("gold_agent_sequence", inst.gold_agent_sequence),
        ("gold_checkpoints", inst.gold_checkpoints),
        ("environments", inst.environments),
    ):
        if len(items) != n:
            raise HarnessUsageError(f"field '{name}' has {len(items)} entries for {n} steps")
    for i, (agent, mark) in enumerate(zip(inst.gold_agent_sequence, inst.workflow, strict=True)):
        if agent != mark.assigned_agent:
            raise HarnessUsageError(
                f"field 'gold_agent_sequence[{i}]': '{agent}' is not step "
                f"'{mark.id}''s assigned agent '{mark.assigned_agent}'"
            )
    for i, scenario in enumerate(inst.exception_scenarios):
        if not 0 <= scenario.step_index < n:
            raise HarnessUsageError(
                f"field 'exception_scenarios[{i}].step_index': {scenario.step_index} is not a step"
            )
    scenario_steps = sorted(s.step_index for s in inst.exception_scenarios)
    if sorted(p.step_index for p in inst.gold_recovery_plans) != scenario_steps:
        raise HarnessUsageError(
            "field 'gold_recovery_plans': give one plan per exception scenario, on its step_index"
        )


def instance_from_dict(data: Any) -> BenchmarkInstance:
    """A checked instance from parsed JSON; a usage error names the field."""
    inst = build(BenchmarkInstance, data)
    check_instance(inst)
    return inst


def load_instance(path: str | Path) -> BenchmarkInstance:
    """One instance file; a usage error names the file and the field."""
    from harness.bounded_json import JsonInputError, load_file

    path = Path(path)
    try:  # a FIFO never blocks; size, depth and UTF-8 are checked before parsing
        data = load_file(path)
    except JsonInputError as ex:
        raise HarnessUsageError(str(ex)) from None
    try:
        return instance_from_dict(data)
    except HarnessUsageError as ex:
        raise HarnessUsageError(f"{path}: {ex}") from None


def load_instances(location: str | Path) -> list[BenchmarkInstance]:
    """Every `*.json` instance in a folder (sorted by name), or one file; ids must be unique."""
    location = Path(location)
    if location.is_dir():
        files = sorted(location.glob("*.json"))
        if not files:
            raise HarnessUsageError(f"{location}: no instance files (*.json) in this folder")
    elif location.is_file():
        files = [location]
    else:
        raise HarnessUsageError(f"{location}: no such instance file or folder")
    out = [load_instance(f) for f in files]
    seen: dict[str, Path] = {}
    for f, inst in zip(files, out, strict=True):
        if inst.id in seen:
            raise HarnessUsageError(
                f"{f}: field 'seed_data.id': '{inst.id}' is also the id in {seen[inst.id]}"
            )
        seen[inst.id] = f
    return out


def save_instance(inst: BenchmarkInstance, folder: str | Path) -> Path:
    """Write `folder/<id>.json` (the id made safe for a file name) and return its path."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in inst.id)
    path = Path(folder) / f"{safe}.json"
    path.write_text(json.dumps(to_dict(inst), indent=1, ensure_ascii=False) + "\n")
    return path
