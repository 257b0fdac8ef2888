"""`harness validate --suite swe-rebench`: check that every task's gold patch resolves it.

The catalog names `validate_tasks` as this suite's validator; `harness.cli.validate` runs it.

For each task, the repository is materialised at its base commit, copied into a fresh bwrap
sandbox, and run twice: with the gold patch, which must resolve the task, and with an empty
patch, which must not (else the FAIL_TO_PASS tests do not test the fix). A task whose
repository cannot be materialised is reported with that reason, and the others still run.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessUsageError
from harness.sandbox import BwrapConfig, bwrap_available
from harness.suites.swe_rebench.repos import RepoUnavailableError, materialise
from harness.suites.swe_rebench.runner import bwrap_sandbox, copy_into_sandbox, run_candidate
from harness.suites.swe_rebench.scoring import Criterion
from harness.suites.swe_rebench.task_format import SweTask, find_task_files, load_tasks


@dataclass(frozen=True, slots=True)
class ValidationRow:
    """The check of one task."""

    instance_id: str
    gold_resolved: bool | None  # None when the task could not be run
    empty_resolved: bool | None  # None when the task could not be run
    ok: bool  # the gold patch resolves the task and the empty patch does not
    reason: str | None  # why the task failed the check; None when it passed

    def summary(self) -> str:
        """One line: the verdict, the id and the reason."""
        verdict = "ok  " if self.ok else "FAIL"
        return f"{verdict} {self.instance_id}" + (f": {self.reason}" if self.reason else "")


async def _validate_one(
    task: SweTask, data_dir: str | None, config: BwrapConfig, criterion: Criterion
) -> ValidationRow:
    with tempfile.TemporaryDirectory(prefix="harness-swe-validate-") as scratch:
        repo = Path(scratch) / "repo"
        try:
            materialise(task, data_dir, repo)
        except RepoUnavailableError as ex:
            reason = str(ex).removeprefix(f"{task.instance_id}: ")
            return ValidationRow(task.instance_id, None, None, False, reason)
        async with bwrap_sandbox(config) as box:
            await copy_into_sandbox(box, repo)
            gold = await run_candidate(
                box, task, task.patch, criterion=criterion, timeout=config.timeout
            )
            empty = await run_candidate(box, task, "", criterion=criterion, timeout=config.timeout)
    reasons = []
    if not gold.score.resolved:
        reasons.append(f"gold patch {gold.score.summary()}")
    if empty.score.resolved:
        reasons.append(
            "the empty patch resolves the task (FAIL_TO_PASS tests pass without the fix)"
        )
    return ValidationRow(
        task.instance_id,
        gold.score.resolved,
        empty.score.resolved,
        not reasons,
        "; ".join(reasons) or None,
    )


def validate_tasks(
    data_dir: str | Path | None = None,
    *,
    timeout: int = 600,
    criterion: Criterion = "standard",
) -> list[ValidationRow]:
    """Run every task's gold and empty patches; one row per task, in file order.

    Raises:
        HarnessUsageError: No task files, a bad row, or no working bwrap here.

    """
    reason = bwrap_available()
    if reason is not None:
        raise HarnessUsageError(
            f"validate runs tasks in the bwrap sandbox, which cannot run: {reason}"
        )
    folder = None if data_dir is None else str(data_dir)
    tasks = [t for path in find_task_files(folder) for t in load_tasks(path)]
    config = BwrapConfig(timeout=timeout, cpu_seconds=timeout)

    async def run_all() -> list[ValidationRow]:
        return [await _validate_one(t, folder, config, criterion) for t in tasks]

    return asyncio.run(run_all())
