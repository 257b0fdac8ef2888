"""The SWE-rebench V2 task-quality filter: an ensemble of LLM judges sorts tasks by issue code.

Each judge reads one task (repository, language, problem statement, interface, test patch,
FAIL_TO_PASS names and, by default, the gold patch) and answers with exactly one code from
`ISSUE_CODES`: "A" for a sound task, or a B-code for a problem that makes the task unfair or
unsolvable. `classify_tasks` asks every judge about every task, takes the majority code per task,
flags the tasks whose majority is not "A", and reports how well the judges agree (raw pairwise
agreement and Fleiss' kappa) and the share flagged with a Wilson interval. `drop_flagged` keeps
the sound tasks.

What the judge sees: the judge is not the solver, so nothing it reads can leak into a solution.
It sees the gold patch by default, because B5 (patch artefacts) and B11 (multi-issue PR) cannot
be judged without it, and B2 (implicit naming) is judged by comparing the names the tests need
with the names the statement gives; the SWE-bench Verified annotators, against whom the authors
validated their ensemble, saw it too. `include_gold_patch=False` hides it. `pr_description` is
never shown: the question is whether the statement the solver gets is enough.

Reconstructed (ours): the spec (`specs/swe-rebench.md`, section 2) gives each code's short name
only; the descriptions, the prompt wording, the answer format, the tie rule, and the handling
of abstentions are ours. The authors' judge models and thresholds were not read.

Per-task scripted answers: each judge call is bound to the task's `instance_id` as its sample id
(`harness.models.sample_context`), so `scripted/NAME -M outputs=FILE` and `replay/` answer per
task, keyed by instance id.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import anyio
from inspect_ai.model import GenerateConfig, Model, ModelName, get_model
from inspect_ai.solver import TaskState

from harness.models.sample_context import set_current_sample
from harness.stats import Interval, fleiss_kappa, wilson
from harness.suites.swe_rebench.task_format import SweTask


@dataclass(frozen=True, slots=True)
class IssueCode:
    """One task-quality code of the authors' annotation prompt."""

    code: str  # "A" or "B1" ... "B11"
    name: str  # the short name from the spec
    description: str  # what a judge should look for (ours; the spec gives the name only)


SOUND_CODE: Final = "A"
"""The code of a sound (solvable) task; every other code flags a task."""

ISSUE_CODES: Final = (
    IssueCode(
        "A",
        "solvable",
        "The statement specifies the behaviour the FAIL_TO_PASS tests check, and a competent "
        "engineer could write a fix that passes them from the statement and the repository alone.",
    ),
    IssueCode(
        "B1",
        "test-suite coupling",
        "The tests depend on other test-suite changes (new fixtures, helpers, test "
        "infrastructure) or on internals of the gold fix, so a correct but different fix fails.",
    ),
    IssueCode(
        "B2",
        "implicit naming",
        "The tests call functions, classes, modules, files or options whose names the statement "
        "(and the interface, if given) never states, so a solver must guess them.",
    ),
    IssueCode(
        "B3",
        "external dependency",
        "Solving or testing needs something outside the repository at its base commit: network "
        "access, a service, a new third-party package or data.",
    ),
    IssueCode(
        "B4",
        "ambiguous spec",
        "The statement is vague or admits several reasonable behaviours, and the tests check one "
        "that the statement does not pin down.",
    ),
    IssueCode(
        "B5",
        "patch artefacts",
        "The patches carry changes unrelated to the issue (generated files, mass reformatting, "
        "version bumps, vendored code) that the tests depend on.",
    ),
    IssueCode(
        "B6",
        "implicit knowledge",
        "Solving needs knowledge the statement does not give and the repository does not make "
        "discoverable: linked discussions, maintainer decisions, unstated project conventions.",
    ),
    IssueCode(
        "B7",
        "inline test",
        "The tests live inside the source files the fix must change (doctests, in-file test "
        "modules), so the test patch and a fix touch the same code.",
    ),
    IssueCode(
        "B8",
        "visual",
        "The issue rests on images, screenshots or rendered output that the text does not convey.",
    ),
    IssueCode("B9", "non-English", "The statement is mostly not written in English."),
    IssueCode(
        "B10",
        "text-file tests",
        "The tests compare against expected-output text files (snapshots, golden files) whose "
        "exact contents a solver cannot infer from the statement.",
    ),
    IssueCode(
        "B11",
        "multi-issue PR",
        "The pull request fixes several issues or adds unrelated features, and the tests check "
        "behaviour beyond the stated problem.",
    ),
)
"""Every code a judge may answer, in the order the spec lists them."""

_CODES: Final = tuple(item.code for item in ISSUE_CODES)

QUALITY_PROMPT_VERSION: Final = "swe-quality-v1"
"""The version of `QUALITY_PROMPT`; change it whenever the wording or the sections change."""

QUALITY_PROMPT: Final = """\
You are reviewing one task of a software-engineering benchmark before it is used.

A solver gets the repository at its base commit and the problem statement below{interface_note}. \
It never sees the test patch or the gold patch. Its fix counts as correct when, after the hidden \
test patch is applied, every FAIL_TO_PASS test passes. Decide whether this task is sound, that \
is, whether a competent engineer could write a correct fix from what the solver is given, and \
whether the tests judge such a fix fairly.

Classify the task into exactly one of these codes:
{codes}

If several B-codes apply, choose the one that most stands in the way of a correct solution. \
Answer with a short justification, then end with one final line of exactly this form:
CODE: <one of {code_list}>

Repository: {repo}
Language: {language}

Problem statement:
<<<
{problem_statement}
>>>
{interface}
Test patch (hidden from the solver):
<<<
{test_patch}
>>>

FAIL_TO_PASS tests ({n_fail_to_pass}):
{fail_to_pass}
{gold_patch}"""
"""The judge prompt; sections are filled by `render_prompt`. Versioned by QUALITY_PROMPT_VERSION."""

_CODE_LIST: Final = ", ".join(_CODES)
_CODE_TABLE: Final = "\n".join(f"- {c.code} ({c.name}): {c.description}" for c in ISSUE_CODES)
_MAX_TEST_NAMES: Final = 200  # FAIL_TO_PASS names shown; the count is always given in full


def _clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n... [{len(text) - max_chars} more characters not shown]"


def render_prompt(
    task: SweTask, *, include_gold_patch: bool = True, max_chars: int = 30_000
) -> str:
    """The judge prompt for one task (`QUALITY_PROMPT`, version `QUALITY_PROMPT_VERSION`).

    Args:
        task: The task to classify.
        include_gold_patch: Show the gold patch (see the module docstring for why by default).
        max_chars: Longest text shown for each of the statement, interface and patches; the rest
            is cut and its length stated.

    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    names = task.fail_to_pass[:_MAX_TEST_NAMES]
    listed = "\n".join(f"- {name}" for name in names)
    if len(task.fail_to_pass) > len(names):
        listed += f"\n... and {len(task.fail_to_pass) - len(names)} more"
    interface = (
        f"\nInterface given to the solver:\n<<<\n{_clip(task.interface, max_chars)}\n>>>\n"
        if task.interface
        else ""
    )
    gold = (
        f"\nGold patch (the reference fix, hidden from the solver):\n<<<\n"
        f"{_clip(task.patch, max_chars)}\n>>>\n"
        if include_gold_patch
        else ""
    )
    return QUALITY_PROMPT.format(
        interface_note=" and the interface" if task.interface else "",
        codes=_CODE_TABLE,
        code_list=_CODE_LIST,
        repo=task.repo,
        language=task.language or "unknown",
        problem_statement=_clip(task.problem_statement, max_chars),
        interface=interface,
        test_patch=_clip(task.test_patch, max_chars),
        n_fail_to_pass=len(task.fail_to_pass),
        fail_to_pass=listed,
        gold_patch=gold,
    )


def parse_verdict(text: str) -> str | None:
    """The code on the last `CODE: X` line of a judge's answer, or None if there is none.

    Notes:
        Case, surrounding spaces and Markdown emphasis or backticks (`**CODE: B3**`) are
        ignored. A code not in `ISSUE_CODES` (such as "B12") does not count, and an earlier
        valid line is not used in its place: the final answer is the last such line.

    """
    for line in reversed(text.splitlines()):
        cleaned = line.strip().strip("*_`> ").strip()
        head, sep, value = cleaned.partition(":")
        if not sep or head.strip().strip("*_`").upper() != "CODE":
            continue
        code = value.strip().strip("*_`.").strip().upper()
        return code if code in _CODES else None
    return None


def authors_code(task: SweTask) -> str | None:
    """The code of the task's first `meta.llm_metadata` entry (the authors' annotation), if any."""
    entries = task.meta.get("llm_metadata")
    if isinstance(entries, list) and entries and isinstance(entries[0], dict):
        code = entries[0].get("code")
        return code if isinstance(code, str) else None
    return None


@dataclass(frozen=True, slots=True)
class Verdict:
    """One judge's answer about one task."""

    judge: str  # the judge model, such as "openai/gpt-4o-mini"
    instance_id: str  # the task judged
    code: str | None  # the parsed code; None is an abstention
    completion: str  # the judge's full answer ("" when the call failed)
    error: str | None = None  # why the call failed, if it did; such a verdict also abstains


@dataclass(frozen=True, slots=True)
class TaskVotes:
    """Every judge's verdict on one task, and the ensemble's decision."""

    instance_id: str  # the task
    verdicts: tuple[Verdict, ...]  # one per judge, in the order the judges were given
    majority: str | None  # the code with most votes (see `majority_code`); None if all abstained
    tied: bool  # whether two or more codes shared the most votes
    flagged: bool  # the majority is a code other than SOUND_CODE


@dataclass(frozen=True, slots=True)
class EnsembleResult:
    """What an ensemble of judges decided about a set of tasks, and how well they agreed."""

    judges: tuple[str, ...]  # the judge models, in order
    prompt_version: str  # QUALITY_PROMPT_VERSION at the time of the run
    tasks: tuple[TaskVotes, ...]  # one per task, in the order the tasks were given
    flagged: Interval  # share of judged tasks flagged, with its Wilson interval
    n_unjudged: int  # tasks on which every judge abstained; not in `flagged`'s denominator
    abstentions: int  # answers with no parseable code (failed calls not included)
    errors: int  # judge calls that raised; they abstain too
    pairwise_agreement: float  # share of agreeing pairs of votes on the same task; nan if none
    n_pairs: int  # pairs of non-abstaining votes behind `pairwise_agreement`
    fleiss_kappa: float  # over the tasks every judge answered; nan with `kappa_note` saying why
    kappa_tasks: int  # tasks behind `fleiss_kappa`
    kappa_note: str | None  # why `fleiss_kappa` is nan, if it is

    def summary(self, fmt: Literal["text", "html"] = "text") -> str:
        """The result as text lines, or as an HTML list."""
        if fmt not in ("text", "html"):
            raise ValueError(f"fmt must be 'text' or 'html', got {fmt!r}")
        kappa = f"{self.fleiss_kappa:.3f} (n={self.kappa_tasks})"
        lines = [
            f"judges: {', '.join(self.judges)} (prompt {self.prompt_version})",
            f"flagged: {self.flagged.summary()}; unjudged tasks: {self.n_unjudged}",
            f"abstentions: {self.abstentions}; failed calls: {self.errors}",
            f"pairwise agreement: {self.pairwise_agreement:.3f} (pairs={self.n_pairs})",
            f"Fleiss' kappa: {kappa}" + (f" [{self.kappa_note}]" if self.kappa_note else ""),
        ]
        if fmt == "text":
            return "\n".join(lines)
        from html import escape

        return "<ul>\n" + "\n".join(f"<li>{escape(line)}</li>" for line in lines) + "\n</ul>"


def majority_code(codes: Sequence[str | None]) -> tuple[str | None, bool]:
    """The most frequent code among the non-abstaining votes, and whether it was a tie.

    Notes:
        Ties go to a B-code over "A", so that a task the judges cannot agree is sound is
        flagged; between B-codes, to the one listed first in `ISSUE_CODES`. With no votes the
        code is None.

    """
    counts = Counter(code for code in codes if code is not None)
    unknown = set(counts) - set(_CODES)
    if unknown:
        raise ValueError(f"votes hold codes not in ISSUE_CODES: {sorted(unknown)}")
    if not counts:
        return None, False
    top = max(counts.values())
    leaders = [code for code in _CODES if counts.get(code) == top]
    issues = [code for code in leaders if code != SOUND_CODE]
    return (issues[0] if issues else SOUND_CODE), len(leaders) > 1


async def judge_task(
    model: str | Model,
    task: SweTask,
    *,
    include_gold_patch: bool = True,
    max_chars: int = 30_000,
    config: GenerateConfig | None = None,
) -> Verdict:
    """Ask one judge to classify one task; see `render_prompt` for the options.

    Notes:
        A call that raises gives a Verdict with `code=None` and `error` set, so one failed call
        costs one vote, not the run; `EnsembleResult.errors` counts them. The call runs bound to
        `task.instance_id` as its sample id, in a child task so the binding does not leak.

    """
    judge = get_model(model) if isinstance(model, str) else model
    prompt = render_prompt(task, include_gold_patch=include_gold_patch, max_chars=max_chars)
    found: list[Verdict] = []

    async def call() -> None:
        state = TaskState(ModelName(judge), task.instance_id, 1, prompt, [])
        set_current_sample(state)
        name = str(judge)
        try:
            output = await judge.generate(prompt, config=config or GenerateConfig())
        except Exception as ex:  # counted and reported as EnsembleResult.errors
            found.append(Verdict(name, task.instance_id, None, "", f"{type(ex).__name__}: {ex}"))
            return
        text = output.completion
        found.append(Verdict(name, task.instance_id, parse_verdict(text), text))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
    return found[0]


def _agreement(votes: Sequence[TaskVotes], n_judges: int) -> tuple[float, int, float, int, str]:
    agree = pairs = 0
    complete: list[list[int]] = []
    for item in votes:
        counts = Counter(v.code for v in item.verdicts if v.code is not None)
        n = sum(counts.values())
        agree += sum(c * (c - 1) // 2 for c in counts.values())
        pairs += n * (n - 1) // 2
        if n == n_judges:
            complete.append([counts.get(code, 0) for code in _CODES])
    raw = agree / pairs if pairs else math.nan
    if n_judges < 2:
        return raw, pairs, math.nan, 0, "fewer than two judges"
    if not complete:
        return raw, pairs, math.nan, 0, "no task was answered by every judge"
    kappa = fleiss_kappa(complete)
    note = "every vote is the same code, so chance agreement is 1" if math.isnan(kappa) else ""
    return raw, pairs, kappa, len(complete), note


async def classify_tasks(
    models: Sequence[str | Model],
    tasks: Sequence[SweTask],
    *,
    include_gold_patch: bool = True,
    max_chars: int = 30_000,
    max_concurrency: int = 16,
    confidence: float = 0.95,
    config: GenerateConfig | None = None,
) -> EnsembleResult:
    """Ask every judge about every task, and take the majority code per task.

    Args:
        models: The judges (the authors used three); model specs or inspect `Model`s, each with
            a distinct name.
        tasks: The tasks to classify, each with a distinct instance id.
        include_gold_patch: Show judges the gold patch; see the module docstring.
        max_chars: Longest text shown for each field; see `render_prompt`.
        max_concurrency: Most judge calls in flight at once.
        confidence: Coverage of the interval on the share flagged.
        config: Generation options for every call.

    Notes:
        The share flagged counts only judged tasks (at least one parseable vote). Raw pairwise
        agreement pools all pairs of parseable votes on the same task; Fleiss' kappa uses only
        the tasks every judge answered, since it needs the same number of ratings per task.

    """
    judges = [get_model(m) if isinstance(m, str) else m for m in models]
    names = tuple(str(j) for j in judges)
    if not judges:
        raise ValueError("classify_tasks needs at least one judge model")
    if len(set(names)) != len(names):
        raise ValueError(f"judge names must be distinct, got {list(names)}")
    ids = [t.instance_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("task instance ids must be distinct")
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
    limiter = anyio.CapacityLimiter(max_concurrency)
    grid: dict[tuple[int, int], Verdict] = {}

    async def one(i: int, j: int) -> None:
        async with limiter:
            grid[i, j] = await judge_task(
                judges[j],
                tasks[i],
                include_gold_patch=include_gold_patch,
                max_chars=max_chars,
                config=config,
            )

    async with anyio.create_task_group() as group:
        for i in range(len(tasks)):
            for j in range(len(judges)):
                group.start_soon(one, i, j)

    votes = []
    for i, task in enumerate(tasks):
        verdicts = tuple(grid[i, j] for j in range(len(judges)))
        code, tied = majority_code([v.code for v in verdicts])
        flagged = code is not None and code != SOUND_CODE
        votes.append(TaskVotes(task.instance_id, verdicts, code, tied, flagged))
    judged = [v for v in votes if v.majority is not None]
    raw, pairs, kappa, kappa_n, note = _agreement(votes, len(judges))
    all_verdicts = [v for item in votes for v in item.verdicts]
    return EnsembleResult(
        judges=names,
        prompt_version=QUALITY_PROMPT_VERSION,
        tasks=tuple(votes),
        flagged=wilson(sum(v.flagged for v in judged), len(judged), confidence=confidence),
        n_unjudged=len(votes) - len(judged),
        abstentions=sum(v.code is None and v.error is None for v in all_verdicts),
        errors=sum(v.error is not None for v in all_verdicts),
        pairwise_agreement=raw,
        n_pairs=pairs,
        fleiss_kappa=kappa,
        kappa_tasks=kappa_n,
        kappa_note=note or None,
    )


def drop_flagged(
    tasks: Sequence[SweTask], result: EnsembleResult, *, keep_unjudged: bool = False
) -> list[SweTask]:
    """The tasks whose majority code is SOUND_CODE, in their order.

    Args:
        tasks: The tasks `result` classified (or a subset of them).
        result: What `classify_tasks` returned.
        keep_unjudged: Also keep the tasks on which every judge abstained.

    Raises:
        ValueError: A task is not in `result`.

    """
    by_id = {item.instance_id: item for item in result.tasks}
    kept = []
    for task in tasks:
        item = by_id.get(task.instance_id)
        if item is None:
            raise ValueError(f"task {task.instance_id!r} was not classified in this result")
        if item.majority == SOUND_CODE or (keep_unjudged and item.majority is None):
            kept.append(task)
    return kept
