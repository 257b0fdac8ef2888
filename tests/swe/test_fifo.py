"""A FIFO planted where SWE scoring writes the candidate neither blocks nor is written (issue 20).

`git clean -fdx` leaves `.git/` alone, so an agent's shell could leave a FIFO at the path the
runner writes the candidate diff to. The host's write must refuse it at once, and the run must
end with an error that names it, not hang every sample.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.sandbox import BwrapConfig
from harness.suites.swe_rebench.repos import materialise
from harness.suites.swe_rebench.runner import (
    CANDIDATE_FILE,
    bwrap_sandbox,
    copy_into_sandbox,
    run_candidate,
)
from tests.deadline import deadline
from tests.swe.test_suite import _tasks, fixture_dir, needs_bwrap  # noqa: F401


@pytest.mark.usefixtures("needs_bwrap")
def test_a_fifo_at_the_candidate_path_is_refused_without_blocking(
    fixture_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    task = _tasks(fixture_dir)["fixture__mathlib-1"]
    repo = tmp_path / "repo"
    materialise(task, fixture_dir, repo)

    async def go() -> BaseException | None:
        async with bwrap_sandbox(BwrapConfig(timeout=60)) as box:
            await copy_into_sandbox(box, repo)
            planted = await box.exec(["mkfifo", CANDIDATE_FILE], cwd="/work")
            assert planted.success, planted
            try:
                # bounded: a write that blocked on the FIFO would fail this, not hang the run
                run = await asyncio.wait_for(run_candidate(box, task, task.patch), 60)
            except TimeoutError:
                raise AssertionError("the candidate write blocked on the FIFO") from None
            except OSError as ex:
                return ex
            assert not run.score.resolved and run.score.reason, run
            return None

    with deadline(120):  # a write that blocked the event loop would hang here otherwise
        refused = asyncio.run(go())
    if refused is not None:
        assert "FIFO" in str(refused) or "regular file" in str(refused), refused
