"""IWG's report: per orchestrator, metrics, paired comparisons, entropy curves and the fit.

The fit is a placeholder model of ours, not the paper's equation.

One result per group of comparable logs (all but the model agree: same instances, same task
arguments); each log's model is one orchestrator.

- Metrics: the rows `harness.compare._scores` prints (Wilson for task success, t over instances
  for the others; errored samples count in n and as 0).
- Pairs: every pair of orchestrators on every metric, on the instances both have, from the
  comparison engine (`harness.stats._compare.Tally` over the suite's design: unit instance, an
  instance's epochs averaged, an errored epoch 0; McNemar for 0/1; a paired t from 20
  shared instances; the exact sign-flip test and its interval below), Holm-corrected per
  metric.
- Dynamics: H(t) and c(t) of every trajectory, fitted per orchestrator with intervals
  clustered by instance (`harness.suites.iwg.dynamics`), and labelled by `ROBUSTNESS_RULE`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.compare import SummaryRow, comparable_groups, p_text, score_rows
from harness.logs import LogRecord, parse_score, read_samples
from harness.sections import pyplot, save_figure
from harness.stats import PairedTest, Tally
from harness.suites.catalog import suite_of_task
from harness.suites.iwg.dynamics import (
    PLACEHOLDER_LABEL,
    ROBUSTNESS_RULE,
    DynamicsFit,
    ParamEstimate,
    PlaceholderMeanField,
    Series,
)
from harness.suites.iwg.identify import NOT_IDENTIFIABLE

# unit: instance; bounded scores; a Holm family per metric
DESIGN = suite_of_task(f"{__package__}.task:iwg").design


@dataclass(frozen=True)
class PairRow:
    """Orchestrator a against b on one metric."""

    metric: str  # scorer name
    model_a: str  # first orchestrator
    model_b: str  # second
    test: PairedTest | None  # a - b with interval and raw p; None: not tested
    p_holm: float  # Holm over this metric's tested pairs; nan: not tested


@dataclass(frozen=True)
class Curve:
    """Mean H(t) and c(t) per round of one orchestrator, and the fit's H(t)."""

    model: str  # orchestrator
    mean_entropy: tuple[float, ...]  # mean H over trajectories that reached round t
    mean_context: tuple[float, ...]  # mean c at round t
    reached: tuple[int, ...]  # trajectories that reached round t
    fitted: tuple[float, ...]  # the fitted model iterated from the mean H(0) on mean c(t)
    observed_step: tuple[float, ...]  # every ΔH_t (for the goodness-of-fit plot)
    predicted_step: tuple[float, ...]  # the fit's ΔH_t on the same rows


@dataclass(frozen=True)
class IwgReport:
    """One group of comparable IWG logs."""

    heading: str  # task, arguments, instances
    scores: tuple[SummaryRow, ...]  # per orchestrator and metric
    pairs: tuple[PairRow, ...]  # per metric and pair of orchestrators
    fits: tuple[tuple[str, DynamicsFit], ...]  # per orchestrator
    curves: tuple[Curve, ...]  # per orchestrator
    failures: tuple[tuple[str, str], ...]  # per orchestrator: failures by class, stop reasons
    settings: tuple[str, ...]  # the logs' settings worth saying (embedder, entropy, prompts)


def metric_rows(record: LogRecord) -> list[SummaryRow]:
    """`score_rows` per scorer, each row named by its scorer.

    The generic table says "accuracy" for every 0/1 scorer; here each keeps its name.
    """
    rows = []
    for name in record.scorers:
        samples = tuple(
            dataclasses.replace(s, raw=tuple((k, v) for k, v in s.raw if k == name))
            for s in record.samples
        )
        for row in score_rows(dataclasses.replace(record, samples=samples)):
            label = name if row.metric in ("accuracy", name) else f"{name} {row.metric}"
            rows.append(dataclasses.replace(row, metric=label))
    return rows


def metric_tally(records: list[LogRecord], metric: str) -> Tally:
    """Every orchestrator's instances on one metric, added to the engine's tally.

    An epoch that errored, or has no readable score from the metric's scorer, adds 0: an
    error counts as wrong, and `metric_rows` counts it. A metric whose every value is 0 or 1
    (task success) is binary; the others are bounded, as the design declares.
    """
    added = []
    for record in records:
        for s in record.samples:
            raw = dict(s.raw)
            value = 0.0 if s.error or metric not in raw else parse_score(raw[metric])[0]
            added.append((record.model, s.id, value))
    binary = all(v in (0.0, 1.0) for _, _, v in added)
    tally = Tally(dataclasses.replace(DESIGN, score="binary") if binary else DESIGN, metric=metric)
    for model, unit, value in added:
        tally.add(model, unit, value)
    return tally


def _series(record: LogRecord) -> list[Series]:
    """Each sample's H(t), c(t), from the summaries or, where they were thinned, the log."""
    metas = [(s.id, s.metadata) for s in record.samples if not s.error]
    if any(not isinstance(m.get("iwg_entropy"), list) for _, m in metas):
        metas = [(str(s.id), s.metadata or {}) for s in read_samples(record.path) if not s.error]
    return [
        Series(sid, tuple(m.get("iwg_entropy") or ()), tuple(m.get("iwg_context") or ()))
        for sid, m in metas
    ]


def _failures(record: LogRecord) -> str:
    counts: dict[str, int] = {}
    for s in record.samples:
        failures = s.metadata.get("iwg_failures")
        for kind, k in failures.items() if isinstance(failures, dict) else ():
            counts[kind] = counts.get(kind, 0) + int(k)
    errored = sum(1 for s in record.samples if s.error)
    text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
    return text + (f"; {errored} samples errored" if errored else "")


def _curve(model: str, series: list[Series], fit: DynamicsFit) -> Curve:
    length = max((len(s.entropy) for s in series), default=0)
    mean_h, mean_c, reached = [], [], []
    for t in range(length):
        hs = [s.entropy[t] for s in series if len(s.entropy) > t]
        cs = [s.context[t] for s in series if len(s.context) > t]
        mean_h.append(float(np.mean(hs)))
        mean_c.append(float(np.mean(cs)))
        reached.append(len(hs))
    model_ = PlaceholderMeanField()
    fitted = tuple(model_.predict(fit, mean_h[0], mean_c)) if length else ()
    observed, predicted = [], []
    for s in series:
        for t in range(len(s.entropy) - 1):
            observed.append(s.entropy[t + 1] - s.entropy[t])
            step = model_.predict(fit, s.entropy[t], [s.context[t], 0.0])
            predicted.append(float(step[1] - step[0]))
    return Curve(
        model,
        tuple(mean_h),
        tuple(mean_c),
        tuple(reached),
        fitted,
        tuple(observed),
        tuple(predicted),
    )


def build_group(records: list[LogRecord], n_boot: int = 2000) -> IwgReport:
    """The report of logs that differ only in the orchestrator."""
    records = sorted(records, key=lambda r: r.model)
    first = records[0]
    scores = tuple(row for r in records for row in metric_rows(r))
    metrics = list(dict.fromkeys(name for r in records for name in r.scorers))
    pairs: list[PairRow] = []
    for metric in metrics:
        comparison = metric_tally(records, metric).result()
        pairs += [PairRow(metric, p.arm_a, p.arm_b, p.test, p.p_holm) for p in comparison.pairs]
    fits, curves = [], []
    for r in records:
        series = _series(r)
        fit = PlaceholderMeanField().fit(series, n_boot=n_boot, seed=0)
        fits.append((r.model, fit))
        curves.append(_curve(r.model, series, fit))
    meta = first.metadata
    args = first.identity.args_text() or "defaults"
    settings = tuple(
        f"{k}: {meta[k]}"
        for k in ("instances", "prompt_version", "entropy", "consistency_embedder")
        if k in meta
    )
    heading = f"{first.task} ({args}; {first.identity.n_ids} instances)"
    return IwgReport(
        heading,
        scores,
        tuple(pairs),
        tuple(fits),
        tuple(curves),
        tuple((r.model, _failures(r)) for r in records),
        settings,
    )


def build_reports(records: list[LogRecord]) -> list[IwgReport]:
    """One report per group of comparable logs (the comparison engine's groups)."""
    groups, _ = comparable_groups(records)
    return [build_group(list(group.records)) for group in groups]


def _num(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.4g}"


def _ci(low: float, high: float) -> str:
    return "not estimable" if math.isnan(low) else f"[{low:.4g}, {high:.4g}]"


def _param(p: ParamEstimate) -> str:
    if p.method.startswith(NOT_IDENTIFIABLE):
        return NOT_IDENTIFIABLE  # the fit's note says why
    return f"{_num(p.estimate)} {_ci(p.low, p.high)}"


def tables(report: IwgReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report's tables: (caption, header, rows)."""
    scores = [
        [
            r.model,
            r.metric,
            str(r.n),
            str(r.errors),
            _num(r.value),
            _ci(r.ci_low, r.ci_high),
            r.ci_method,
        ]
        for r in report.scores
    ]
    pairs = []
    for p in report.pairs:
        t = p.test
        pairs.append(
            [
                p.metric,
                p.model_a,
                p.model_b,
                _num(t.estimate) if t else "n/a",
                _ci(t.low, t.high) if t else "not tested",
                p_text(t.p_value if t else math.nan),
                p_text(p.p_holm),
                t.method if t else "",
            ]
        )
    fits = []
    for model, f in report.fits:
        # a fit none of whose parameters is identified is one line, its note: no numbers
        whole = all(p.method.startswith(NOT_IDENTIFIABLE) for p in f.params)
        cells = ["-"] * len(f.params) if whole else [_param(p) for p in f.params]
        fits.append(
            [
                model,
                *cells,
                str(f.n_trajectories),
                str(f.n_transitions),
                _num(f.r2),
                _num(f.rmse),
                f.label,
                f.note or "-",
            ]
        )
    return [
        (
            "Metrics per orchestrator (95% intervals over instances; errored samples count as 0)",
            ["orchestrator", "metric", "n", "errors", "value", "95% CI", "method"],
            scores,
        ),
        (
            "Paired comparisons per metric (a - b on shared instances; Holm per metric)",
            ["metric", "a", "b", "a - b", "95% CI", "p", "p (Holm)", "method"],
            pairs,
        ),
        (
            f"Entropy dynamics fit per orchestrator: {PLACEHOLDER_LABEL}; "
            "dH/dt = -a (H - H_min) + b c(t), c = the orchestrator's prompt in thousands of words",
            [
                "orchestrator",
                "a [95% CI]",
                "b [95% CI]",
                "H_min [95% CI]",
                "trajectories",
                "transitions",
                "R² of ΔH",
                "RMSE of ΔH",
                "type",
                "note",
            ],
            fits,
        ),
        (
            "Failures by class and run settings per orchestrator",
            ["orchestrator", "failures"],
            [list(f) for f in report.failures],
        ),
    ]


def notes(report: IwgReport) -> list[str]:
    """What the tables rest on."""
    methods = (p.method for _, f in report.fits for p in f.params if p.name == "b")
    interval = next((m for m in methods if not m.startswith(NOT_IDENTIFIABLE)), "")
    return [
        f"Dynamics: {PLACEHOLDER_LABEL} (spec §2.4); do not cite its parameters as the paper's.",
        f"Robust or oscillating: {ROBUSTNESS_RULE}.",
        *([f"Fit intervals: {interval}."] if interval else []),
        "H_min is an entropy floor: its interval is intersected with the entropy's range "
        "[0, ln 7] (the estimate moved into it, the table's method says so); a parameter the "
        "data cannot separate (collinear columns, an interval that excludes its estimate) is "
        "'not identifiable', without numbers.",
        *report.settings,
    ]


def plot_curves(report: IwgReport, stem: Path) -> list[str]:
    """Mean H(t) per orchestrator with the fitted curve; and observed vs fitted ΔH."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, c in enumerate(report.curves):
        color = f"C{i}"
        steps = range(1, len(c.mean_entropy) + 1)
        left.plot(steps, c.mean_entropy, "o-", color=color, label=f"{c.model} (observed)")
        left.plot(steps, c.fitted, "--", color=color, label=f"{c.model} (fit)")
        right.plot(c.observed_step, c.predicted_step, ".", color=color, alpha=0.4, label=c.model)
    left.set_xlabel("round t")
    left.set_ylabel("mean scheduling entropy H(t) (nats)")
    left.set_title("H(t) and the fit: placeholder model (ours), not the paper's", fontsize=9)
    left.legend(fontsize=7)
    right.axline((0, 0), slope=1, color="grey", linewidth=0.8)
    right.set_xlabel("observed ΔH")
    right.set_ylabel("fitted ΔH")
    right.set_title("goodness of fit (placeholder model, ours)", fontsize=9)
    right.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, stem, ("png",))
