"""Suite `swe-rebench`: SWE-rebench V2 tasks, scored by running their tests in a bwrap sandbox.

Tasks load from `DIR/swe/*.json` and `DIR/swe/*.jsonl` (`swe_rebench.task_format`), DIR being
`--data-dir` or `HARNESS_DATA_DIR`. Each task's repository is materialised at its base commit
with no later history (`swe_rebench.repos`) and copied to `/work` in the sample's sandbox
before the solver starts. The prompt gives the repository, the language, the problem
statement, the interface (when the task has one) and the working directory; never the
`pr_description`.

Solvers: `patch` asks the model for a unified diff in one reply; `agent` runs inspect's
`react()` agent with inspect's `bash()` tool and our `text_editor` (`harness.sandbox.editor_tool`:
inspect's own needs its tool-support program inside the sandbox, which a bwrap sandbox over the
host's /usr does not have), under message, token and time limits made afresh for each sample
(inspect lets each limit object be used once). The agent's candidate is the diff of a host-side
copy of its tree against a freshly materialised base, and the scorer empties `/work` and scores
that diff in a fresh checkout: nothing of the agent's `.git` is used (`swe_rebench.checkout`).
The scorer applies the candidate and the hidden test patch and runs the tests
(`swe_rebench.runner`).

`-T integrity=strict`, the default, scores a flagged candidate as unresolved: a leaderboard user
reads "resolved" as resolved by a fix, not by a test runner made to lie. `flag` only records.
Either way the `flagged` metric, beside accuracy, counts the samples with a flag.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any, Final, Literal

from inspect_ai import Task, task
from inspect_ai.agent import as_solver, react
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Target,
    accuracy,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver
from inspect_ai.tool import bash
from inspect_ai.util import message_limit as message_limit_of
from inspect_ai.util import sandbox as sample_sandbox
from inspect_ai.util import store
from inspect_ai.util import time_limit as time_limit_of
from inspect_ai.util import token_limit as token_limit_of

from harness.errors import HarnessUsageError
from harness.models.sample_context import bind_sample
from harness.sandbox import BwrapConfig, BwrapSandboxEnvironment
from harness.sandbox.doctor import require_sandbox
from harness.sandbox.editor_tool import sandbox_text_editor
from harness.suites.arg_ranges import checked_args, count
from harness.suites.catalog import suite_metadata
from harness.suites.swe_rebench.checkout import fresh_checkout, worktree_candidate
from harness.suites.swe_rebench.repos import materialise
from harness.suites.swe_rebench.runner import (
    GIT_ENV,
    WORK,
    copy_into_sandbox,
    root_commit,
    run_candidate,
)
from harness.suites.swe_rebench.scoring import CRITERIA, Criterion
from harness.suites.swe_rebench.task_format import (
    InstallConfig,
    SweTask,
    find_task_files,
    load_tasks,
)

SolverMode = Literal["patch", "agent"]
SOLVERS: Final = ("patch", "agent")

CANDIDATE_KEY: Final = "swe_rebench:candidate"
BASE_KEY: Final = "swe_rebench:base"
FINDINGS_KEY: Final = "swe_rebench:candidate_findings"
INTEGRITY_MODES: Final = ("strict", "flag")

PROMPT: Final = """\
You are working on the {language} repository {repo}, checked out at {workdir}.

Resolve this issue:

<issue>
{problem}
</issue>
{interface}
{instructions}"""

PATCH_INSTRUCTIONS: Final = """\
Reply with the fix as one unified diff (the output of `git diff`, paths a/... and b/...
relative to the repository root) inside a ```diff fenced block. Do not add or change tests."""

AGENT_INSTRUCTIONS: Final = """\
Use the bash tool to explore {workdir}, edit the files there to fix the issue, and run the
tests if you like. Your edits to {workdir} are the answer; do not commit them. Submit when done."""

_FENCE_RE: Final = re.compile(r"```(?:diff|patch)?[ \t]*\n(.*?)```", re.DOTALL)


def load_swe_tasks(data_dir: str | None, instances: str | None = None) -> list[SweTask]:
    """Every task in the data folder's task files, or those named in `instances` (comma list).

    Raises:
        HarnessUsageError: No task file, a bad row, or an instance id that no file holds.

    """
    tasks = [t for path in find_task_files(data_dir) for t in load_tasks(path)]
    if instances is None:
        return tasks
    wanted = [name.strip() for name in instances.split(",") if name.strip()]
    known = {t.instance_id: t for t in tasks}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise HarnessUsageError(
            f"unknown instances: {', '.join(unknown)}; the task files hold: "
            f"{', '.join(sorted(known))}"
        )
    return [known[name] for name in dict.fromkeys(wanted)]


def task_prompt(task: SweTask, mode: SolverMode) -> str:
    """The solver's prompt for `task`; it never includes the pr_description."""
    interface = f"\nInterface the tests rely on:\n\n{task.interface}\n" if task.interface else ""
    instructions = PATCH_INSTRUCTIONS if mode == "patch" else AGENT_INSTRUCTIONS
    return PROMPT.format(
        language=task.language or "software",
        repo=task.repo,
        workdir=WORK,
        problem=task.problem_statement.strip(),
        interface=interface,
        instructions=instructions.format(workdir=WORK),
    )


def _metadata(task: SweTask) -> dict[str, Any]:
    """What the setup solver and the scorer need; the gold patch stays out of the log."""
    config = task.install_config
    return {
        "instance_id": task.instance_id,
        "repo": task.repo,
        "base_commit": task.base_commit,
        "language": task.language,
        "test_patch": task.test_patch,
        "FAIL_TO_PASS": list(task.fail_to_pass),
        "PASS_TO_PASS": list(task.pass_to_pass),
        "install": list(config.install),
        "test_cmd": list(config.test_cmd),
        "log_parser": config.log_parser,
    }


def task_from_metadata(metadata: dict[str, Any]) -> SweTask:
    """Rebuild the parts of a task the runner uses from a sample's metadata."""
    return SweTask(
        instance_id=metadata["instance_id"],
        repo=metadata["repo"],
        base_commit=metadata["base_commit"],
        patch="",
        test_patch=metadata["test_patch"],
        problem_statement="",
        fail_to_pass=tuple(metadata["FAIL_TO_PASS"]),
        pass_to_pass=tuple(metadata["PASS_TO_PASS"]),
        install_config=InstallConfig(
            install=tuple(metadata["install"]),
            test_cmd=tuple(metadata["test_cmd"]),
            log_parser=metadata["log_parser"],
            base_image_name=None,
        ),
        image_name="",
        meta={},
        created_at=None,
        interface=None,
        pr_description=None,
        language=metadata.get("language"),
        extra={},
    )


def task_sample(task: SweTask, mode: SolverMode = "patch") -> Sample:
    """One sample for one task: id = instance_id, input = the prompt."""
    return Sample(id=task.instance_id, input=task_prompt(task, mode), metadata=_metadata(task))


_COMPOSE = """\
services:
  default:
    image: {image}
    command: tail -f /dev/null
    working_dir: /work
    network_mode: none
    mem_limit: 2g
    cpus: 1
"""


def with_docker_image(sample: Sample, task: SweTask) -> Sample:
    """The sample in inspect's docker sandbox, from the task's image (a compose file per image)."""
    from inspect_ai.util import SandboxEnvironmentSpec

    folder = Path(tempfile.gettempdir()) / "harness-swe-compose"
    folder.mkdir(exist_ok=True)
    compose = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', task.image_name)}.yaml"
    compose.write_text(_COMPOSE.format(image=task.image_name), encoding="utf-8")
    sample.sandbox = SandboxEnvironmentSpec("docker", str(compose))
    return sample


def extract_patch(completion: str) -> str:
    """The diff in a reply: the first ```diff (or bare ```) block, else the whole reply."""
    match = _FENCE_RE.search(completion)
    text = match.group(1) if match else completion
    return text if not text.strip() or text.endswith("\n") else text + "\n"


@solver
def swe_setup(data_dir: str | None = None) -> Solver:
    """Materialise the sample's repository on the host and copy it to `/work` in its sandbox."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = task_from_metadata(state.metadata)
        with tempfile.TemporaryDirectory(prefix="harness-swe-") as scratch:
            repo = Path(scratch) / "repo"
            materialise(task, data_dir, repo)
            await copy_into_sandbox(sample_sandbox(), repo)
        store().set(BASE_KEY, await root_commit(sample_sandbox()))
        return state

    return solve


@solver
def patch_from_completion() -> Solver:
    """Take the candidate diff from the model's reply."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        store().set(CANDIDATE_KEY, extract_patch(state.output.completion))
        return state

    return solve


@solver
def patch_from_worktree(data_dir: str | None = None) -> Solver:
    """Take the candidate diff from the agent's tree, never from the agent's `.git`.

    In a bwrap sandbox the host copies the tree and diffs it against a fresh base
    (`checkout.worktree_candidate`); elsewhere git runs in the sandbox with no hooks, config or
    replace objects, and the finding says the agent's `.git` was used.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        box = sample_sandbox()
        try:
            work = box.as_type(BwrapSandboxEnvironment).work_dir
        except TypeError:
            work = None
        if work is not None:
            task = task_from_metadata(state.metadata)
            got = await asyncio.to_thread(worktree_candidate, task, data_dir, work)
            store().set(CANDIDATE_KEY, got.diff)
            store().set(FINDINGS_KEY, list(got.findings))
            return state
        base = store().get(BASE_KEY) or await root_commit(box)
        git = ["git", "-c", "core.hooksPath=/dev/null"]
        await box.exec([*git, "add", "-A"], cwd=WORK, env=GIT_ENV, timeout=300)
        done = await box.exec(
            [*git, "diff", "--cached", "--binary", base], cwd=WORK, env=GIT_ENV, timeout=300
        )
        store().set(CANDIDATE_KEY, done.stdout if done.success else "")
        store().set(FINDINGS_KEY, ["the candidate was taken with the agent's own .git"])
        return state

    return solve


@solver
def limited_agent(agent: Any, message_limit: int, token_limit: int, time_limit: int) -> Solver:
    """Run `agent` under message, token and time limits made afresh for each sample."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        limits = [
            message_limit_of(message_limit),
            token_limit_of(token_limit),
            time_limit_of(time_limit),
        ]
        return await as_solver(agent, limits=limits)(state, generate)

    return solve


@metric
def flagged() -> Metric:
    """How many samples carry an integrity flag, whatever `integrity` made of them."""

    def compute(scores: list[SampleScore]) -> float:
        return float(sum(bool((s.score.metadata or {}).get("integrity_flags")) for s in scores))

    return compute


@scorer(metrics=[accuracy(), stderr(), flagged()])
def swe_resolved(
    criterion: Criterion = "standard",
    timeout: int = 600,
    integrity: str = "strict",
    fresh: bool = False,
    data_dir: str | None = None,
) -> Any:
    """1 when the candidate resolves the task under `criterion`, else 0, with the run's rates.

    `integrity`: "strict" (the default) scores a flagged candidate as unresolved; "flag" only
    records the findings in the metadata (`swe_rebench.integrity`). A runner caught lying by
    the canaries is unresolved either way. `fresh`: empty `/work` and score in a freshly
    materialised base (agent mode: nothing the agent left there is used). The metadata's
    `results_source` says where the per-test results came from: "junit" (the runner's
    report), "stdout" (the log parser; `results_reason` says why), or "none" (no test ran).
    """
    if criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}; valid criteria: {', '.join(CRITERIA)}")

    async def score(state: TaskState, target: Target) -> Score:
        task = task_from_metadata(state.metadata)
        candidate = store().get(CANDIDATE_KEY)
        if candidate is None:
            candidate = extract_patch(state.output.completion)
        base = store().get(BASE_KEY)
        if fresh:
            await fresh_checkout(sample_sandbox(), task, data_dir)
            base = await root_commit(sample_sandbox())
        run = await run_candidate(
            sample_sandbox(), task, candidate, criterion=criterion, timeout=timeout, base_ref=base
        )
        result = run.score
        flags = (*store().get(FINDINGS_KEY, []), *run.flags)
        resolved = result.resolved and not (integrity == "strict" and flags)
        source = f"results from {run.results_source}" + (
            f" ({run.results_reason})" if run.results_reason else ""
        )
        return Score(
            value=1 if resolved else 0,
            answer=candidate,
            explanation=f"{result.summary()}\n{source}\n\n{run.log[-4000:]}",
            metadata={
                "f2p_rate": result.f2p_rate,
                "p2p_rate": result.p2p_rate,
                "missing": list(result.missing),
                "failed": list(result.failed),
                "reason": result.reason,
                "criterion": result.criterion,
                "integrity_flags": list(flags),
                "canaries": run.canaries,
                "integrity": integrity,
                "results_source": run.results_source,
                "results_reason": run.results_reason,
            },
        )

    return score


def filter_quality(tasks: list[SweTask], quality: str) -> tuple[list[SweTask], dict[str, Any]]:
    """Drop the tasks a quality filter flags; what it did, for the log's metadata."""
    if quality == "none":
        return tasks, {"filter": "none"}
    if quality == "authors":
        from harness.suites.swe_rebench.quality import SOUND_CODE, authors_code

        kept = [t for t in tasks if authors_code(t) == SOUND_CODE]
        return kept, {"filter": "authors", "kept": len(kept), "dropped": len(tasks) - len(kept)}
    if not quality.startswith("judges:") or not quality[len("judges:") :].strip():
        raise HarnessUsageError(
            f"unknown quality filter {quality!r}; pass -T quality=none, authors or "
            "judges:MODEL,MODEL,..."
        )
    from concurrent.futures import ThreadPoolExecutor
    from functools import partial

    import anyio

    from harness.suites.swe_rebench.quality import (
        QUALITY_PROMPT_VERSION,
        classify_tasks,
        drop_flagged,
    )

    judges = [j.strip() for j in quality[len("judges:") :].split(",") if j.strip()]
    with ThreadPoolExecutor(1) as pool:  # the task factory may run inside inspect's event loop
        result = pool.submit(anyio.run, partial(classify_tasks, judges, tasks)).result()
    kept = drop_flagged(tasks, result)
    return kept, {
        "filter": "judges", "judges": judges, "prompt": QUALITY_PROMPT_VERSION,
        "kept": len(kept), "dropped": len(tasks) - len(kept),
        "flagged_share": result.flagged.estimate, "fleiss_kappa": result.fleiss_kappa,
        "pairwise_agreement": result.pairwise_agreement,
        "majority": {v.instance_id: v.majority for v in result.tasks},
    }  # fmt: skip


@task
@checked_args(
    ranges=dict(
        timeout=count(604_800),
        message_limit=count(100_000),
        token_limit=count(1_000_000_000),
        time_limit=count(604_800),
    )
)
def swe_rebench(
    data_dir: str | None = None,
    criterion: str = "standard",
    instances: str | None = None,
    timeout: int = 600,
    solver: str = "patch",
    message_limit: int = 50,
    token_limit: int = 200_000,
    time_limit: int = 1800,
    quality: str = "none",
    sandbox: str = "bwrap",
    integrity: str = "strict",
) -> Task:
    """SWE-rebench V2 tasks from the data folder, run and scored in a bwrap sandbox.

    Args:
        data_dir: Folder holding swe/*.json(l) (else $HARNESS_DATA_DIR).
        criterion: standard (every listed test passes) or strict (exactly the listed ones).
        instances: Comma-separated instance ids to keep (default: all).
        timeout: Seconds for each install and test command.
        solver: patch (one reply holding a diff) or agent (ReAct with bash in the sandbox).
        message_limit: The agent's message limit.
        token_limit: The agent's token limit.
        time_limit: The agent's wall-clock limit in seconds.
        quality: none; authors (keep the tasks the authors' metadata codes "A"); or
            judges:MODEL,MODEL,... (an LLM-judge ensemble classifies each task with the issue
            codes; tasks whose majority is not "A" are dropped, agreement in the log).
        integrity: strict (the default: a candidate that touches test infrastructure or names
            the test framework's internals is unresolved) or flag (only record it in the
            score's metadata). Test infrastructure the candidate changed is restored, and a
            runner the canary tests catch lying is unresolved, either way; the `flagged`
            metric counts flagged samples beside accuracy.
        sandbox: bwrap (default), or docker where an engine runs: each sample then gets the
            task's own `image_name` through inspect's docker sandbox (no network, 1 CPU, 2 GB,
            as the authors' RL wrapper; written for engines we could not test here).

    """
    if integrity not in INTEGRITY_MODES:
        raise HarnessUsageError(f"swe-rebench: -T integrity= strict or flag, got '{integrity}'")
    if criterion not in CRITERIA:
        raise HarnessUsageError(
            f"unknown criterion '{criterion}'; pass -T criterion= one of: {', '.join(CRITERIA)}"
        )
    if solver not in SOLVERS:
        raise HarnessUsageError(
            f"unknown solver '{solver}'; pass -T solver= one of: {', '.join(SOLVERS)}"
        )
    mode: SolverMode = "patch" if solver == "patch" else "agent"
    if sandbox not in ("bwrap", "docker"):
        raise HarnessUsageError(f"unknown sandbox {sandbox!r}; pass -T sandbox=bwrap or docker")
    require_sandbox(sandbox)  # docker without an engine: one line naming bwrap
    tasks, quality_meta = filter_quality(load_swe_tasks(data_dir, instances), quality)
    samples = [task_sample(t, mode) for t in tasks]
    if sandbox == "docker":
        samples = [with_docker_image(s, t) for s, t in zip(samples, tasks, strict=True)]
    if mode == "patch":
        steps = [bind_sample(), generate(), patch_from_completion()]
    else:
        agent = react(tools=[bash(timeout=timeout), sandbox_text_editor()])
        steps = [
            bind_sample(),
            limited_agent(agent, message_limit, token_limit, time_limit),
            patch_from_worktree(data_dir),
        ]
    return Task(
        dataset=MemoryDataset(samples),
        setup=swe_setup(data_dir),
        solver=steps,
        scorer=swe_resolved(
            criterion=criterion,  # type: ignore[arg-type]
            timeout=timeout,
            integrity=integrity,
            fresh=mode == "agent",
            data_dir=data_dir,
        ),
        sandbox=("bwrap", BwrapConfig(timeout=timeout, cpu_seconds=timeout))
        if sandbox == "bwrap"
        else None,
        metadata={
            **suite_metadata(f"{__name__}:swe_rebench"),
            "criterion": criterion,
            "integrity": integrity,
            "solver": solver,
            "quality": quality_meta,
        },  # fmt: skip
    )
