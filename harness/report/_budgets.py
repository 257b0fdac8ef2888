"""Accuracy against token budgets, per task and model, for `harness report`.

For a task where some model ran through a method wrapper (`pdr/`, `sr/`, `suco/`), every model of
the task gets a row: accuracy with its interval (Wilson for 0/1 scores, else t) and the mean
per-unit budgets with their intervals, in both conventions (`io`: input + output tokens; `out`:
output tokens only):
- wrapped models: B_seq and B_total from the sample metadata the wrapper recorded;
- direct models: B_seq = B_total = the sample's token usage summed over its model calls.

Budgets are per unit of the log's design (a problem, mostly): a unit's budget is its mean over
the epochs that recorded one, and the interval is the cost rows' (`cost.positive_interval`, the
engine's `estimate` with support (0, inf)): a t interval over units, clustered where the design
clusters, on the log scale of the mean, so it never passes 0. Units without a budget (an
errored wrapped sample records none) are left out of the budget means, and `n_budget` says how
many remain; accuracy keeps them, as wrong. Accuracy is the score table's row for the log
(`harness.compare._scores`).

`BUDGETS` is the report's generic section, and the budgets are one view of the cost rows
(`harness.report._cost`): a direct model's tokens are counted by the same function, and every
comparable group (not only those with a method) gets its cost and latency rows and its
accuracy-cost frontier (`harness.report._frontier`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.compare import score_rows, unit_clusters
from harness.logs import LogRecord
from harness.report._cost import (
    CostRow,
    cost_row,
    cost_table,
    positive_interval,
    sample_tokens,
    unit_costs,
)
from harness.report._frontier import Frontier, frontier_table, task_frontier
from harness.sections import Plot, ReportSection, SectionView
from harness.stats import Interval

BUDGET_KEYS = ("seq_io", "seq_out", "total_io", "total_out")


@dataclass(frozen=True)
class BudgetRow:
    """One model on one task: accuracy and mean budgets."""

    task: str  # task name
    model: str  # model spec
    method: str  # "direct", "pdr", "sr", "suco"
    n: int  # problems scored, errored ones included
    errors: int  # problems with an errored epoch
    accuracy: Interval  # score with its 95% interval
    n_budget: int  # problems with a recorded budget
    budgets: dict[str, Interval]  # mean per-unit budget by key (BUDGET_KEYS), with intervals


def _usage_budget(usage: dict[str, Any]) -> tuple[float, float]:
    """(io, out) of a sample's `model_usage`, as the cost rows count tokens."""
    if not usage:
        return math.nan, math.nan
    tokens = sample_tokens(usage)
    return tokens["total"], tokens["output"]


def has_method_budgets(record: LogRecord) -> bool:
    """Whether a log's samples carry wrapper budgets."""
    return any("budget_seq_io" in s.metadata for s in record.samples)


def _budget(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _per_problem(record: LogRecord, values: np.ndarray) -> dict[str, float]:
    """Each unit's mean over its epochs that recorded a budget (nan when none did)."""
    by_problem: dict[str, list[float]] = {}
    for s, v in zip(record.samples, values, strict=True):
        by_problem.setdefault(s.id, [])
        if not math.isnan(v):
            by_problem[s.id].append(float(v))
    return {u: float(np.mean(v)) if v else math.nan for u, v in by_problem.items()}


def budget_row(record: LogRecord) -> BudgetRow:
    """Accuracy (as the score table gives it) and mean budgets of one log, over problems.

    A unit's budget is its mean over the epochs that recorded one; the interval runs over the
    design's units (its clusters, where it has them), on the log scale of the mean.
    """
    [accuracy, *_] = score_rows(record)
    acc = Interval(accuracy.value, accuracy.ci_low, accuracy.ci_high, 0.95, accuracy.ci_method,
                   accuracy.n)  # fmt: skip
    if has_method_budgets(record):
        methods = [s.metadata["method"] for s in record.samples if s.metadata.get("method")]
        method = str(methods[0]) if methods else "?"
        values = {
            k: np.array([_budget(s.metadata.get(f"budget_{k}")) for s in record.samples])
            for k in BUDGET_KEYS
        }
    else:
        method = "direct"
        pairs = np.array([_usage_budget(s.usage) for s in record.samples], dtype=float)
        pairs = pairs.reshape(-1, 2)
        values = {"seq_io": pairs[:, 0], "total_io": pairs[:, 0],
                  "seq_out": pairs[:, 1], "total_out": pairs[:, 1]}  # fmt: skip
    per_problem = {k: _per_problem(record, v) for k, v in values.items()}
    keep = {u for u, v in per_problem["seq_io"].items() if not math.isnan(v)}
    clusters = unit_clusters([record], record.design)
    budgets = {k: positive_interval(record.design, {u: v[u] for u in keep}, clusters,
                                    "no budget recorded")
               for k, v in per_problem.items()}  # fmt: skip
    return BudgetRow(
        record.task, record.model, method, accuracy.n, accuracy.errors, acc, len(keep), budgets,
    )  # fmt: skip


def budget_rows(records: list[LogRecord]) -> list[BudgetRow]:
    """Rows for every task where some log has wrapper budgets; every model of such a task."""
    by_task: dict[str, list[LogRecord]] = {}
    for record in records:
        by_task.setdefault(record.task, []).append(record)
    rows: list[BudgetRow] = []
    for _, task_logs in sorted(by_task.items()):
        if any(has_method_budgets(r) for r in task_logs):
            rows += [budget_row(r) for r in sorted(task_logs, key=lambda r: r.model)]
    return rows


def budget_table(rows: list[BudgetRow]) -> tuple[str, list[str], list[list[str]]]:
    """Caption, header and rows of the budget table."""

    def ci(i: Interval, digits: int = 0) -> str:
        if math.isnan(i.estimate):
            return "n/a"
        return f"{i.estimate:.{digits}f} [{i.low:.{digits}f}, {i.high:.{digits}f}]"

    head = ["task", "model", "method", "n", "errors", "accuracy (95% CI)",
            "B_seq io", "B_total io", "B_seq out", "B_total out", "n budget"]  # fmt: skip
    body = [
        [r.task, r.model, r.method, str(r.n), str(r.errors), ci(r.accuracy, 3),
         ci(r.budgets["seq_io"]), ci(r.budgets["total_io"]), ci(r.budgets["seq_out"]),
         ci(r.budgets["total_out"]), str(r.n_budget)]
        for r in rows
    ]  # fmt: skip
    caption = (
        "Accuracy against mean tokens per problem (95% t intervals over problems, clustered t "
        "where the design clusters, on the log scale of the mean, which never passes 0): B_seq "
        "counts the critical path, B_total every call; io = input + output tokens, out = output "
        "tokens"
    )
    return caption, head, body


def plot_budgets(rows: list[BudgetRow], path: Path) -> str:
    """Accuracy against B_seq and B_total (io), one point per model, both with 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r.task for r in rows})
    fig, axes = plt.subplots(len(tasks), 2, figsize=(10, 3.8 * len(tasks)), squeeze=False)
    colors = {"direct": "#444444", "sr": "#1f5fa8", "pdr": "#b8420f", "suco": "#2a7f3a"}
    for ax_row, task in zip(axes, tasks, strict=True):
        for ax, key, name in ((ax_row[0], "seq_io", "B_seq"), (ax_row[1], "total_io", "B_total")):
            for r in (r for r in rows if r.task == task):
                b, a = r.budgets[key], r.accuracy
                if math.isnan(b.estimate):
                    continue
                ax.errorbar(
                    [b.estimate], [a.estimate],
                    xerr=[[max(0.0, b.estimate - b.low)], [max(0.0, b.high - b.estimate)]],
                    yerr=[[max(0.0, a.estimate - a.low)], [max(0.0, a.high - a.estimate)]],
                    fmt="o", capsize=3, color=colors.get(r.method, "#7a3fa0"), label=r.model,
                )  # fmt: skip
            ax.set_xscale("log")
            ax.set_xlabel(f"{name}: mean tokens per problem (input + output), log scale")
            ax.set_ylabel("accuracy")
            ax.set_title(f"{task}: accuracy against {name}")
            ax.grid(alpha=0.3)
        ax_row[1].legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


@dataclass(frozen=True)
class BudgetReport:
    """Every budget row of a report."""

    rows: tuple[BudgetRow, ...]


@dataclass(frozen=True)
class CostReport:
    """One comparable group's cost rows and its accuracy-cost frontier."""

    task: str  # the group's label
    rows: tuple[CostRow, ...]  # one per arm (replicates pooled)
    frontier: Frontier  # its points, with intervals and P(on frontier)


def cost_reports(records: list[LogRecord]) -> list[CostReport]:
    """A cost report per comparable group: each arm's cost row and the group's frontier."""
    from harness.compare import comparable_groups

    groups, _ = comparable_groups(records)
    return [group_cost_report(group) for group in groups]


def group_cost_report(group: Any) -> CostReport:
    """The cost rows and frontier of one comparable group (`harness.compare._pairs.Group`)."""
    from harness.compare import arm_rows

    arms = {}
    for name, logs in group.arms.items():
        [accuracy, *_] = arm_rows(list(logs), group.design)
        acc = Interval(accuracy.value, accuracy.ci_low, accuracy.ci_high, 0.95,
                       accuracy.ci_method, accuracy.n)  # fmt: skip
        row = dataclasses.replace(cost_row(list(logs), group.design), task=group.label,
                                  model=name)  # fmt: skip
        arms[name] = (unit_costs(list(logs)), row, acc)
    design = group.design
    clusters = unit_clusters(list(group.records), design)
    frontier = task_frontier(group.suite, group.label, arms, clusters, design.cluster)
    return CostReport(group.label, tuple(r for _, r, _ in arms.values()), frontier)


def _build(records: list[LogRecord]) -> list[BudgetReport | CostReport]:
    rows = budget_rows(records)
    budgets: list[BudgetReport | CostReport] = [BudgetReport(tuple(rows))] if rows else []
    return budgets + list(cost_reports(records))


def _plot(report: BudgetReport, stem: Path) -> list[str]:
    return [plot_budgets(list(report.rows), stem.with_name(stem.name + ".png"))]


def _view(report: BudgetReport | CostReport) -> SectionView:
    if isinstance(report, CostReport):
        from harness.report._frontier_plot import frontier_png

        f = report.frontier
        return SectionView(
            heading=f"{report.task}: cost, latency and the accuracy-cost frontier",
            tables=(cost_table(list(report.rows)), frontier_table(f)),
            plots=(Plot(f"Accuracy against {f.axis} per {f.unit} on {f.task}, both with 95% "
                        "intervals; frontier points ringed",
                        lambda stem: [frontier_png(f, stem.with_name(stem.name + ".png"))]),),
        )  # fmt: skip
    alt = "Accuracy against B_seq and B_total, with 95% intervals"
    return SectionView(
        heading="Accuracy against B_seq and B_total",
        tables=(budget_table(list(report.rows)),),
        plots=(Plot(alt, lambda stem: _plot(report, stem)),),
    )


# the generic section: token budgets of wrapped methods are one view of the cost rows
BUDGETS = ReportSection(
    "Accuracy against token budgets, cost and latency", "budgets", _build, _view
)
