"""`harness leaderboard build`: a self-contained static site from eval logs.

Layout of the site folder:
- `index.html`: models × tasks, each cell the score, its 95% interval, errors and rank;
- `suite/<suite>.html` (with each task's cost per problem and accuracy-cost frontier),
  `model/<model>.html`, `plots/*.svg`, `assets/site.{css,js}`;
- `manifests/<log>.json`: each log's manifest, linked from its row;
- `leaderboard.json` and `leaderboard.csv`, the same numbers as the pages;
- `viewer/`: inspect's log viewer (`inspect view bundle`) holding every log used.

A log that cannot be used is listed with its reason (index page and `leaderboard.json`); the
others build all the same.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.compare import NotComparable
from harness.errors import HarnessUsageError
from harness.leaderboard.collect import BadLog, collect
from harness.leaderboard.frontier_svg import frontier_svg
from harness.leaderboard.labels import public_label, public_tables
from harness.leaderboard.pages import ASSETS, asset, index_page, model_page, slug, suite_page
from harness.leaderboard.ranking import TaskTable, task_tables
from harness.leaderboard.site_costs import (
    TaskCosts,
    cost_json,
    frontier_json,
    manifest_link,
    task_costs,
    write_manifests,
)
from harness.leaderboard.svg import forest_svg, heatmap_svg
from harness.leaderboard.viewer import VIEWER_DIR
from harness.logs import DesignLookup
from harness.output_paths import OutputFolder, mark_site, site_folder, unlink_links
from harness.spreadsheet import csv_cell  # noqa: F401 (re-exported: the site writes CSV)


@dataclass(frozen=True)
class BuildResult:
    """What a build wrote."""

    site: str  # the site folder
    tasks: int  # task tables
    models: int  # distinct models
    logs: int  # logs used
    left_out: tuple[BadLog, ...]  # logs not used, with reasons
    viewer: bool  # whether viewer/ was built
    seconds: float  # wall time of the build

    def summary(self) -> str:
        """One line for the terminal."""
        extra = f", {len(self.left_out)} left out" if self.left_out else ""
        viewer = "" if self.viewer else " (no viewer)"
        return (
            f"wrote {self.site}/index.html{viewer}: {self.models} models, {self.tasks} tasks, "
            f"{self.logs} logs{extra} in {self.seconds:.1f} s"
        )


def _clean(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def to_json(
    title: str,
    tables: list[TaskTable],
    bad: list[BadLog],
    links: dict[str, str],
    not_comparable: tuple[NotComparable, ...] = (),
    costs: dict[tuple[str, str], TaskCosts] | None = None,
    manifests: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The numbers of the site, as `leaderboard.json` holds them."""
    tasks = []
    for t in tables:
        rows = []
        mine = (costs or {}).get((t.suite, t.task))
        for r in t.rows:
            row: dict[str, Any] = {
                "model": r.model,
                "score": _clean(r.score.estimate),
                "ci_low": _clean(r.score.low),
                "ci_high": _clean(r.score.high),
                "ci_method": r.score.method,
                "n": r.n,
                "errors": r.errors,
                "flagged": r.flagged,
                "tampered": r.tampered or None,
                "rank": r.rank,
                "groups": r.groups,
                "log": Path(r.log).name,
                "viewer": links.get(r.log),
                "cost": cost_json(mine.rows.get(r.model) if mine else None),
                "manifest": manifest_link(manifests or {}, r.log),
            }
            if r.judge is not None:
                j = r.judge
                row["judge_naive"] = _clean(j.naive.estimate)
                row["judge_corrected"] = _clean(j.corrected.estimate)
                row["judge_corrected_ci"] = (
                    None if j.refused else [_clean(j.corrected.low), _clean(j.corrected.high)]
                )
                row["judge_refused"] = j.refused or None
            rows.append(row)
        pairs = [
            {
                "model_a": p.model_a,
                "model_b": p.model_b,
                "diff": _clean(p.diff),
                "ci_low": _clean(p.low),
                "ci_high": _clean(p.high),
                "p": _clean(p.p),
                "p_holm": _clean(p.p_holm),
                "method": p.method,
                "n": p.n,
            }
            for p in t.pairs
        ]
        tasks.append(
            {"suite": t.suite, "task": t.task, "alpha": t.alpha, "rows": rows, "pairs": pairs,
             "frontier": frontier_json(mine.frontier) if mine else None}
        )  # fmt: skip
    return {
        "title": title,
        "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tasks": tasks,
        "left_out": [{"log": b.path, "reason": b.reason} for b in bad],
        "not_comparable": [
            {
                "suite": n.suite,
                "task": n.task,
                "log_a": Path(n.log_a).name,
                "log_b": Path(n.log_b).name,
                "reason": n.reason,
            }
            for n in not_comparable
        ],  # fmt: skip
    }


def to_csv(data: dict[str, Any]) -> str:
    """One line per task and model, the index's numbers."""
    out = io.StringIO()
    fields = ["suite", "task", "model", "score", "ci_low", "ci_high", "ci_method", "n"]
    fields += ["errors", "rank", "groups", "log"]
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for t in data["tasks"]:
        for r in t["rows"]:
            row = {"suite": t["suite"], "task": t["task"], **{k: r[k] for k in fields[2:]}}
            writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return out.getvalue()


def build_site(
    log_dirs: list[str],
    designs: DesignLookup,
    out: str,
    title: str = "Leaderboard",
    viewer: bool = True,
    alpha: float = 0.05,
    checked: OutputFolder | None = None,
) -> BuildResult:
    """Read the logs, rank the models per task, and write the site to `out`.

    `designs` gives a suite's design by name (the catalog's `catalog_design`, which the command
    passes); each log is read with its suite's.

    `out` must be new, empty or built by the harness (`harness.output_paths.site_folder`),
    unless `checked` says it was checked with `--force`. The site is marked as built by the
    harness, with the list of the files it wrote.

    Raises:
        HarnessUsageError: `out` holds files the harness did not write, or no log is usable.

    """
    start = time.perf_counter()
    folder = checked or site_folder(out, "the site folder", force=False)
    collected = collect(log_dirs, designs)
    if not collected.records:
        first = collected.bad[0] if collected.bad else None
        why = f"{first.path}: {first.reason}" if first else "no log could be used"
        more = f" (and {len(collected.bad) - 1} more left out)" if len(collected.bad) > 1 else ""
        raise HarnessUsageError(f"no usable log: {why}{more}; nothing written")
    tables = public_tables(task_tables(list(collected.groups), alpha))
    site = Path(out)
    foreign = [name.split(" (")[0] for name in folder.foreign]
    if foreign:
        unlink_links(site)  # --force: a link is removed, never followed
    mark_site(site, foreign)
    for sub in ("suite", "model", "plots", "assets"):
        (site / sub).mkdir(parents=True, exist_ok=True)
    links: dict[str, str] = {}
    if viewer and collected.records:
        from harness.leaderboard.viewer import bundle_viewer

        links = bundle_viewer([r.path for r in collected.records], site)
    bad = [BadLog(Path(b.path).name, public_label(b.reason)) for b in collected.bad]

    def link(path: str) -> str | None:
        return links.get(path)

    costs = task_costs(collected.groups)
    manifests = write_manifests(collected.records, site)
    for name in ASSETS:
        (site / "assets" / name).write_text(asset(name))
    index = index_page(title, tables, bad, link, len(collected.records), collected.not_comparable)
    (site / "index.html").write_text(index)
    by_suite: dict[str, list[TaskTable]] = {}
    for t in tables:
        by_suite.setdefault(t.suite, []).append(t)
        stem = f"{slug(t.suite)}-{slug(t.task)}"
        (site / "plots" / f"{stem}-forest.svg").write_text(forest_svg(t))
        (site / "plots" / f"{stem}-pvalues.svg").write_text(heatmap_svg(t))
        if (t.suite, t.task) in costs:
            (site / "plots" / f"{stem}-frontier.svg").write_text(
                frontier_svg(costs[(t.suite, t.task)].frontier)
            )
    for suite, suite_tables in by_suite.items():
        page = suite_page(suite, suite_tables, link, costs,
                          lambda log: manifest_link(manifests, log))  # fmt: skip
        (site / "suite" / f"{slug(suite)}.html").write_text(page)
    models = sorted({r.model for t in tables for r in t.rows})
    for m in models:
        (site / "model" / f"{slug(m)}.html").write_text(model_page(m, tables, link))
    data = to_json(title, tables, bad, links, collected.not_comparable, costs, manifests)
    (site / "leaderboard.json").write_text(json.dumps(data, indent=1))
    (site / "leaderboard.csv").write_text(to_csv(data))
    mark_site(site, [f for f in foreign if not f.startswith(f"{VIEWER_DIR}/")])
    return BuildResult(
        site=str(site),
        tasks=len(tables),
        models=len(models),
        logs=len(collected.records),
        left_out=tuple(collected.bad),
        viewer=bool(links),
        seconds=time.perf_counter() - start,
    )
