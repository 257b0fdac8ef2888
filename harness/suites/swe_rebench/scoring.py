"""Scoring a SWE-rebench V2 run: the task's test lists against the parsed test log.

`score_run` takes a task and the parser's map of test name to status (`swe_rebench.log_parsers`)
and applies one of the authors' two criteria (`specs/swe-rebench.md`, section 2, step 6):

- `standard` (the default, as in the authors' RL wrapper): resolved iff every FAIL_TO_PASS and
  every PASS_TO_PASS test is PASSED. A listed test missing from the log is not passed.
- `strict` (the authors' evaluator script): resolved iff the set of PASSED names equals
  FAIL_TO_PASS ∪ PASS_TO_PASS exactly, so an extra passing test also fails the task.

Names on both sides go through `normalise_test_name` first, so timing suffixes and ANSI codes do
not get in the way. A run that failed before its tests could count, such as a test patch that did
not apply, is scored with a `reason`: it is never resolved and earns no credit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, get_args

from harness.suites.swe_rebench.log_parsers import PASSED, normalise_test_name
from harness.suites.swe_rebench.task_format import SweTask

Criterion = Literal["standard", "strict"]
CRITERIA: Final[tuple[str, ...]] = get_args(Criterion)

# Reasons a runner reports for a run that produced no usable log. Others are allowed, such as
# "limit: memory" for a run stopped by a resource limit.
PATCH_APPLY_FAILED: Final = "patch_apply_failed"
TEST_PATCH_APPLY_FAILED: Final = "test_patch_apply_failed"
TIMEOUT: Final = "timeout"


@dataclass(frozen=True, slots=True)
class SweScore:
    """The outcome of one run of one task.

    Notes:
        A rate over an empty list is 1.0: a task with no PASS_TO_PASS tests breaks none of them.
        With a failure `reason` every rate and passed count is 0, whatever the log held; the
        name lists still describe that log, for diagnosis (with no log, every listed test is
        missing). `missing` and `failed` are disjoint: together they are the listed tests that
        did not pass. Names are normalised and each list is sorted.

    """

    resolved: bool  # the reward: whether the run meets `criterion`
    criterion: Criterion  # "standard" or "strict", always recorded
    f2p_passed: int  # distinct FAIL_TO_PASS names that are PASSED in the log
    f2p_total: int  # distinct FAIL_TO_PASS names
    p2p_passed: int  # distinct PASS_TO_PASS names that are PASSED in the log
    p2p_total: int  # distinct PASS_TO_PASS names
    f2p_rate: float  # f2p_passed / f2p_total; 1.0 when the list is empty, 0.0 with a reason
    p2p_rate: float  # p2p_passed / p2p_total; 1.0 when the list is empty, 0.0 with a reason
    missing: tuple[str, ...]  # listed tests absent from the log
    failed: tuple[str, ...]  # listed tests in the log with a status other than PASSED
    extra_passed: tuple[str, ...]  # PASSED tests in the log that neither list names
    reason: str | None  # why the run failed before its tests could count; None if it did not

    def summary(self) -> str:
        """One line of text: the verdict, the criterion and the pass counts."""
        verdict = "resolved" if self.resolved else "not resolved"
        because = f" ({self.reason})" if self.reason is not None else ""
        return (
            f"{verdict}{because} [{self.criterion}]: "
            f"FAIL_TO_PASS {self.f2p_passed}/{self.f2p_total}, "
            f"PASS_TO_PASS {self.p2p_passed}/{self.p2p_total}, "
            f"{len(self.missing)} missing, {len(self.failed)} failed, "
            f"{len(self.extra_passed)} extra passed"
        )


def _check_criterion(criterion: str) -> None:
    if criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}; valid criteria: {', '.join(CRITERIA)}")


def _normalised(names: Iterable[str]) -> list[str]:
    """Normalised names without repeats, in their first order."""
    return list(dict.fromkeys(normalise_test_name(name) for name in names))


def _normalised_results(results: Mapping[str, str]) -> dict[str, str]:
    """The log's names normalised; where two names become one, a status other than PASSED wins."""
    merged: dict[str, str] = {}
    for name, status in results.items():
        key = normalise_test_name(name)
        if merged.get(key, PASSED) == PASSED:
            merged[key] = status
    return merged


def _rate(passed: int, total: int) -> float:
    return passed / total if total else 1.0


def score_run(
    task: SweTask,
    results: Mapping[str, str],
    criterion: Criterion = "standard",
    *,
    reason: str | None = None,
) -> SweScore:
    """Score a run from its parsed test log.

    Args:
        task: The task that was run.
        results: Test name → "PASSED", "FAILED" or "SKIPPED", as a log parser returns it. Any
            status other than "PASSED" counts as not passed.
        criterion: "standard" or "strict" (see the module docstring).
        reason: Why the run failed before its tests could count, such as "timeout" for a log
            cut short. Given one, the run is not resolved and every rate is 0.

    Raises:
        ValueError: `criterion` is not one of `CRITERIA`, or `reason` is an empty string.

    """
    _check_criterion(criterion)
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        raise ValueError(f"reason must be a non-empty string or None, got {reason!r}")
    log = _normalised_results(results)
    f2p = _normalised(task.fail_to_pass)
    p2p = _normalised(task.pass_to_pass)
    listed = set(f2p) | set(p2p)
    passed = {name for name, status in log.items() if status == PASSED}
    missing = sorted(listed - log.keys())
    failed = sorted(name for name in listed & log.keys() if log[name] != PASSED)
    extra_passed = sorted(passed - listed)
    all_listed_pass = not missing and not failed
    resolved = all_listed_pass and (criterion == "standard" or not extra_passed)
    if reason is None:
        f2p_passed = sum(name in passed for name in f2p)
        p2p_passed = sum(name in passed for name in p2p)
        f2p_rate, p2p_rate = _rate(f2p_passed, len(f2p)), _rate(p2p_passed, len(p2p))
    else:
        resolved, f2p_passed, p2p_passed, f2p_rate, p2p_rate = False, 0, 0, 0.0, 0.0
    return SweScore(
        resolved=resolved,
        criterion=criterion,
        f2p_passed=f2p_passed,
        f2p_total=len(f2p),
        p2p_passed=p2p_passed,
        p2p_total=len(p2p),
        f2p_rate=f2p_rate,
        p2p_rate=p2p_rate,
        missing=tuple(missing),
        failed=tuple(failed),
        extra_passed=tuple(extra_passed),
        reason=reason,
    )


def failed_run(task: SweTask, reason: str, criterion: Criterion = "standard") -> SweScore:
    """Score a run that produced no test log, such as one whose test patch did not apply.

    Every listed test is missing, the run is not resolved, and `reason` is kept.

    Raises:
        ValueError: `reason` is empty, or `criterion` is not one of `CRITERIA`.

    """
    if reason is None:
        raise ValueError("failed_run needs a reason, such as 'test_patch_apply_failed'")
    return score_run(task, {}, criterion, reason=reason)


def git_apply_commands(patch_path: str) -> tuple[tuple[str, ...], ...]:
    """The `git apply` commands for one patch file, as argv lists, to try in turn.

    First a 3-way merge with `--recount` that ignores whitespace changes, then plain
    `git apply` as the fallback (`specs/swe-rebench.md`, section 2, step 2). The patch has
    applied once one command exits 0; if none does, the run fails with "patch_apply_failed"
    or "test_patch_apply_failed".

    Notes:
        A 3-way attempt that fails can leave conflict markers and unmerged index entries
        behind, so the runner should restore the tree to its state before that attempt (for
        example by stashing or re-applying earlier patches) before it runs the fallback.

    """
    if not isinstance(patch_path, str) or not patch_path:
        raise ValueError(f"patch_path must be a non-empty string, got {patch_path!r}")
    return (
        (
            "git",
            "apply",
            "--verbose",
            "--3way",
            "--recount",
            "--ignore-space-change",
            patch_path,
        ),
        ("git", "apply", "--verbose", patch_path),
    )
