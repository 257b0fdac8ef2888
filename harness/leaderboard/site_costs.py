"""The site's cost view: each task's cost rows and frontier, and each log's manifest file.

Computed once per build from the comparable groups (`harness.report._budgets.group_cost_report`,
the report's own numbers), with model names made public as on every other page
(`labels.public_label`). Each log that carries a manifest gets `manifests/<log>.json`, which the
suite pages link from the log's row.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.leaderboard.labels import public_label
from harness.leaderboard.pages import slug
from harness.logs import LogRecord
from harness.report import CostReport, CostRow, Frontier, group_cost_report

MANIFEST_DIR = "manifests"


@dataclass(frozen=True)
class TaskCosts:
    """One task's cost rows by (public) model, and its frontier."""

    rows: dict[str, CostRow]  # model -> its cost row
    frontier: Frontier  # points with public model names


def _public(report: CostReport) -> TaskCosts:
    rows = {public_label(r.model): dataclasses.replace(r, model=public_label(r.model), log="")
            for r in report.rows}  # fmt: skip
    points = tuple(dataclasses.replace(p, model=public_label(p.model), log="")
                   for p in report.frontier.points)  # fmt: skip
    return TaskCosts(rows, dataclasses.replace(report.frontier, points=points))


def task_costs(groups: Iterable[Any]) -> dict[tuple[str, str], TaskCosts]:
    """Per (suite, group label): the task's public cost rows and frontier."""
    return {(g.suite, g.label): _public(group_cost_report(g)) for g in groups}


def write_manifests(records: Iterable[LogRecord], site: Path) -> dict[str, str]:
    """Write each log's manifest to `manifests/`; the link (from the site root) by log path."""
    from harness.eval import manifest_of

    links: dict[str, str] = {}
    folder = site / MANIFEST_DIR
    for record in records:
        manifest = manifest_of(record)
        if manifest is None:
            continue
        folder.mkdir(exist_ok=True)
        # two logs may share a file name in different folders: the name carries a hash of the
        # whole path, so each row links its own log's manifest
        tag = hashlib.sha256(record.path.encode()).hexdigest()[:8]
        name = f"{slug(Path(record.path).stem)}-{tag}.json"
        data = {"digest": manifest.digest, **manifest.as_dict()}
        data["model"] = public_label(str(data["model"]))
        (folder / name).write_text(json.dumps(data, indent=1, default=str))
        links[record.path] = f"{MANIFEST_DIR}/{name}"
    return links


def manifest_link(links: dict[str, str], log: str) -> str | None:
    """The manifest of a row's log (the first log, where replicates pooled several)."""
    return links.get(log.split(", ")[0])


def _clean(x: float) -> float | None:
    return None if math.isnan(x) else x


def cost_json(row: CostRow | None) -> dict[str, Any] | None:
    """A row's cost numbers for `leaderboard.json` (null where unknown)."""
    if row is None:
        return None
    return {
        "unit": row.unit,
        "dollars": _clean(row.dollars.estimate),
        "dollars_ci": [_clean(row.dollars.low), _clean(row.dollars.high)],
        "dollars_method": row.dollars.method,
        "per_correct": _clean(row.per_correct.estimate),
        "per_correct_ci": [_clean(row.per_correct.low), _clean(row.per_correct.high)],
        "per_correct_method": row.per_correct.method,
        "input_tokens": _clean(row.tokens["input"].estimate),
        "output_tokens": _clean(row.tokens["output"].estimate),
        "reasoning_tokens": _clean(row.tokens["reasoning"].estimate),
        "working_seconds": _clean(row.seconds.estimate),
        "working_seconds_ci": [_clean(row.seconds.low), _clean(row.seconds.high)],
        "working_seconds_method": row.seconds.method,
        "ttft_seconds": _clean(row.ttft.estimate),
        "ttft_seconds_ci": [_clean(row.ttft.low), _clean(row.ttft.high)],
    }


def frontier_json(frontier: Frontier) -> dict[str, Any]:
    """A task's frontier for `leaderboard.json`."""
    return {
        "axis": frontier.axis,
        "unit": frontier.unit,
        "shared": frontier.shared,
        "resamples": frontier.resamples,
        "cluster": frontier.cluster,  # the design's cluster key: clusters were resampled
        "clusters": frontier.clusters,
        "points": [
            {"model": p.model, "accuracy": _clean(p.accuracy.estimate),
             "accuracy_ci": [_clean(p.accuracy.low), _clean(p.accuracy.high)],
             "cost": _clean(p.cost.estimate) if p.cost is not None else None,
             "cost_ci": [_clean(p.cost.low), _clean(p.cost.high)] if p.cost is not None else None,
             "cost_known": p.cost is not None, "on_frontier": p.on_frontier,
             "p_frontier": _clean(p.probability)}
            for p in frontier.points
        ],
    }  # fmt: skip
