"""What `harness report` shows, computed from logs through `samples_df` and `harness.stats`.

- One score row per suite, task and model (the latest finished log of each), as `harness eval`
  prints it: n, errors, value and its 95% interval.
- For tasks run through a method wrapper, accuracy against the token budgets of every model of
  the task (`harness.budget_report`).
- For each task, every pair of models on the samples both have: the difference, its paired
  interval and p-value (McNemar exact for 0/1 scores, a paired bootstrap otherwise), and the
  p-value corrected by Holm over the task's pairs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from harness.budget_report import BudgetRow, budget_rows
from harness.errors import HarnessUsageError
from harness.l2a_report import L2AReport, build_l2a_report, load_l2a_runs
from harness.lokra_report import LokraReport, build_lokra_report, load_lokra_runs
from harness.parity_report import ParityReport, build_parity_report, load_runs
from harness.run import SummaryRow, score_to_float, summarize_log
from harness.stats.multiple import holm
from harness.stats.paired import PairedTest, mcnemar, paired_bootstrap_diff
from harness.team_report import TeamReport, build_team_report, load_team_runs


@dataclass(frozen=True)
class PairRow:
    """Model a against model b on one task's shared samples."""

    suite: str  # suite name
    task: str  # task name
    model_a: str  # first model
    model_b: str  # second model
    test: PairedTest  # difference a - b, its interval and raw p-value
    p_holm: float  # p-value corrected by Holm over the task's pairs


@dataclass(frozen=True)
class ReportData:
    """Everything the report renders."""

    scores: tuple[SummaryRow, ...]  # one per suite, task, model and metric
    pairs: tuple[PairRow, ...]  # one per task and pair of models
    logs: tuple[str, ...]  # the logs used
    parity: tuple[ParityReport, ...] = ()  # k-parity arms, one per k-parity log
    budgets: tuple[BudgetRow, ...] = ()  # accuracy against token budgets, where methods ran
    lokra: tuple[LokraReport, ...] = ()  # LoRA/LoKRA/LoKRA+ arms, one per lokra log
    team: tuple[TeamReport, ...] = ()  # TEAM variants against vanilla, one per team log
    l2a: tuple[L2AReport, ...] = ()  # full, SWA and L2A arms, one per l2a-recall log


def find_logs(dirs: list[str]) -> list[dict]:
    """Finished logs under the folders: one per task and model, the newest."""
    from inspect_ai.analysis import evals_df
    from inspect_ai.log import list_eval_logs

    paths: list[str] = []
    for d in dirs:
        if not Path(d).is_dir():
            raise HarnessUsageError(f"log folder '{d}' does not exist")
        # inspect knows which files are logs (eval_set also writes logs.json, eval-set.json)
        paths += [info.name for info in list_eval_logs(d, recursive=True)]
    if not paths:
        raise HarnessUsageError(f"no inspect logs under {', '.join(dirs)}; run `harness eval`")
    df = evals_df(paths, quiet=True)
    df = df[df["status"] == "success"].sort_values("created")
    latest: dict[tuple[str, str], dict] = {}
    for row in df.to_dict("records"):
        meta = json.loads(row["metadata"]) if isinstance(row.get("metadata"), str) else {}
        suite = (meta or {}).get("harness_suite") or row["task_name"].split("/")[-1]
        task = row["task_name"].split("/")[-1]
        latest[(task, row["model"])] = {"suite": suite, "task": task, "meta": meta or {}, **row}
    if not latest:
        raise HarnessUsageError("no finished logs found; finish the runs with `harness eval`")
    return list(latest.values())


def _per_sample(location: str) -> dict[str, float]:
    """Each sample's score (mean over epochs), errored samples as 0."""
    from inspect_ai.analysis import samples_df

    df = samples_df(location, quiet=True)
    col = next(c for c in df.columns if c.startswith("score_"))
    values = df[col].map(score_to_float)
    return values.groupby(df["id"].astype(str)).mean().to_dict()


def build_report(dirs: list[str]) -> ReportData:
    """Scores and Holm-corrected paired comparisons for every log under `dirs`."""
    logs = find_logs(dirs)
    scores: list[SummaryRow] = []
    per_task: dict[str, list[dict]] = {}
    parity: list[ParityReport] = []
    lokra: list[LokraReport] = []
    team: list[TeamReport] = []
    l2a: list[L2AReport] = []
    for log in logs:
        scores += summarize_log(log["log"], log["suite"], log["task"], log["model"])
        if log["suite"] == "k-parity":
            label = f"{log['task']} ({Path(log['log']).name})"
            preset = log["meta"].get("preset")
            parity.append(build_parity_report(label, load_runs(log["log"]), preset))
            continue  # one model (none); its arms are compared below instead
        if log["suite"] == "lokra":
            label = f"{log['task']} ({Path(log['log']).name})"
            lokra.append(build_lokra_report(label, load_lokra_runs(log["log"])))
            continue  # one model (none); its arms are compared against LoRA instead
        if log["suite"] == "team":
            label = f"{log['task']} ({Path(log['log']).name})"
            team.append(build_team_report(label, load_team_runs(log["log"])))
            continue  # one model (none); its variants are compared against vanilla instead
        if log["suite"] == "l2a-recall":
            label = f"{log['task']} ({Path(log['log']).name})"
            l2a.append(build_l2a_report(label, load_l2a_runs(log["log"])))
            continue  # one model (none); its arms are compared with full-global instead
        per_task.setdefault(log["task"], []).append(log)
    pairs: list[PairRow] = []
    for task, task_logs in sorted(per_task.items()):
        tests = []
        for la, lb in combinations(sorted(task_logs, key=lambda x: x["model"]), 2):
            sa, sb = _per_sample(la["log"]), _per_sample(lb["log"])
            shared = sorted(set(sa) & set(sb))
            if len(shared) < 2:
                continue
            a = np.array([sa[i] for i in shared])
            b = np.array([sb[i] for i in shared])
            binary = bool(np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all())
            test = mcnemar(a, b) if binary else paired_bootstrap_diff(a, b)
            tests.append((la, lb, test))
        if not tests:
            continue
        adjusted = holm([t.p_value for _, _, t in tests]).adjusted
        for (la, lb, test), p in zip(tests, adjusted, strict=True):
            pairs.append(PairRow(la["suite"], task, la["model"], lb["model"], test, p))
    budgets = budget_rows(
        [log for log in logs if log["suite"] not in ("k-parity", "lokra", "team", "l2a-recall")]
    )
    return ReportData(
        tuple(scores),
        tuple(pairs),
        tuple(log["log"] for log in logs),
        tuple(parity),
        tuple(budgets),
        tuple(lokra),
        tuple(team),
        tuple(l2a),
    )
