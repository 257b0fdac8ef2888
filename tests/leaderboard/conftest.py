"""A leaderboard site built once from real logs (2 tasks x 3 models, plus 3 bad logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.leaderboard.build import BuildResult, build_site
from harness.suites.catalog import catalog_design
from tests.leaderboard.logs import template_log, write_variant

MODELS = {"openai/strong": 0.95, "local/middle": 0.9, "scripted/weak": 0.2}
TASKS = ("arith_easy", "arith_hard")
N_SAMPLES = 60


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildResult]:
    """The site folder and the build's result."""
    work = tmp_path_factory.mktemp("leaderboard")
    template = template_log(work, N_SAMPLES)
    logs = work / "logs"
    for t, task in enumerate(TASKS):
        for m, (model, acc) in enumerate(MODELS.items()):
            write_variant(
                template,
                logs / f"{task}-{m}.eval",
                task=task,
                model=model,
                accuracy=acc,
                seed=10 * t + m,
                errored_samples=m,  # 0, 1, 2 errored samples
            )
    write_variant(template, logs / "errored.eval", task="arith_easy", model="x/e", accuracy=0.5,
                  seed=1, status="error")  # fmt: skip
    write_variant(template, logs / "cancelled.eval", task="arith_easy", model="x/c", accuracy=0.5,
                  seed=2, status="cancelled")  # fmt: skip
    half = write_variant(template, logs / "half.eval", task="arith_easy", model="x/h",
                         accuracy=0.5, seed=3)  # fmt: skip
    half.write_bytes(half.read_bytes()[: half.stat().st_size // 2])
    site = work / "site"
    return site, build_site([str(logs)], catalog_design, str(site), title="Test board")
