"""Score rows: n, errors, the score and its 95% interval, one row per metric, over the unit.

`harness eval`'s summary, `harness report` and the leaderboard all print these rows, so one log
gives the same numbers everywhere. Every number is over the suite's declared unit
(`harness.stats._design.Design`, from the catalog), never over sample x epoch:

- n counts units (sample ids); `errors` counts units with at least one errored epoch. A sample
  errors when its solver or model call raised, or when its score cannot be read as a number
  (None, NaN, an unknown string): that is an error with its reason, and it counts as wrong.
- A unit's score is its mean over epochs (and over the replicates of a configuration, when
  several logs are pooled: `arm_rows`). The interval is the comparison engine's
  (`harness.stats._compare.estimate`): Wilson for 0/1 units (clustered where the design
  clusters units), else t over units, clipped to [0, 1] for proportions and named so.
- pass@K for 0/1 scores with several epochs: K is the fewest epochs any unit has, so units with
  more epochs use the unbiased estimator over all of theirs.
- A calibrated judge's verdicts give the naive share and the Rogan-Gladen corrected one over the
  test units (`judge_scores`): the correction is made over the answered epochs, then the
  errored ones count as wrong. A unit with a human label is calibration, never a test item,
  even where its answer errored (see `judge_scores`).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.logs import HUMAN_LABEL_KEY, LogRecord, judge_verdict, parse_score
from harness.stats import Design, Interval, estimate, pass_at_k

UNLABELLED = -1  # a verdict's `human` where the sample has no human label (a test item)


@dataclass(frozen=True)
class SummaryRow:
    """One score line of `harness eval` and `harness report`."""

    suite: str  # suite name
    task: str  # task name
    model: str  # model spec (with its arguments, where it has any)
    metric: str  # "accuracy" (with several scorers, "accuracy (SCORER)"), "pass@K",
    # "judge (naive)", "judge (corrected)", or the scorer's name
    n: int  # units scored (errored ones included), the design's unit
    errors: int  # units with an errored epoch (raised, or a score that cannot be read)
    value: float  # the score
    ci_low: float  # lower end of the 95% interval
    ci_high: float  # upper end of the 95% interval
    ci_method: str  # how the interval was made
    log: str  # the inspect log it came from (logs joined by ", " for pooled replicates)
    unit: str = "problem"  # what n counts
    flagged: int = 0  # units with an integrity flag on an epoch (SWE tampering), shown beside
    # why the log's outputs or scores do not match its own manifest ("" when they do), shown
    # beside the score (`harness.log_integrity`)
    tampered: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (nan becomes None)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }


def design_of(record: LogRecord) -> Design:
    """The design attached to the log where it was read (`harness.logs.read_log`)."""
    return record.design


@dataclass(frozen=True)
class JudgeScores:
    """A calibrated judge's naive and corrected shares over the test units."""

    naive: Interval  # share of test units the judge calls correct, errors as wrong
    corrected: Interval  # Rogan-Gladen over the answered, times the answered share
    refused: str  # why the correction was refused ("" when it was made)
    n_test: int  # test units (no human label), errored ones included
    n_calibration: int  # units with a human label and a judge verdict (errored ones included)
    errors: int = 0  # test units with an errored epoch
    unjudged: int = 0  # units with a human label but no judge verdict: in neither set


def _nan_interval(method: str, n: int) -> Interval:
    return Interval(math.nan, math.nan, math.nan, 0.95, method, n)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def judge_scores(
    units: dict[str, list[tuple[dict[str, int] | None, bool]]],
    labelled: Collection[str] = (),
) -> JudgeScores:
    """Naive and corrected judge shares from each unit's (verdict, errored) per epoch.

    A unit with a human label is a calibration unit, whether or not its answer errored: the
    label is about the judge, not the answer. The label is read from any of its verdicts,
    errored epochs included, or the unit is named in `labelled` (its label was recorded beside
    the sample, but the judge gave no verdict). Its q0 or q1 share is the mean of the judge's
    verdicts over its epochs that have one, errored or not; a labelled unit with no verdict at
    all tells nothing of the judge and is in neither set. m0, m1 count units. Every other unit
    is a test unit, and n counts those. The naive share is the mean over test units of the
    judge's verdicts, errored epochs counted 0. The corrected share is the one rule for errors:
    Rogan-Gladen over the answered epochs of the test units (each unit's mean), theta, then
    the errored epochs count as wrong: a * theta with a the mean answered share of a test
    unit. Its interval combines Rogan-Gladen's adjusted-Wald half-widths (times a) with the
    uncertainty of a by the delta method (a and theta rest on disjoint parts of the data).
    """
    from scipy import stats

    from harness.stats import CalibrationError, rogan_gladen

    test_naive: list[float] = []  # per test unit: judge mean, errors as 0
    answered_means: list[float] = []  # per test unit with an answer: judge mean over answers
    answered_share: list[float] = []  # per test unit: answered epochs / epochs
    calib: dict[int, list[float]] = {0: [], 1: []}  # human label -> per-unit judge means
    known = set(labelled)
    errors = 0
    unjudged = 0  # labelled units the judge gave no verdict
    for uid, epochs in units.items():
        judged = [v for v, _ in epochs if v is not None]
        labels = {v["human"] for v in judged if v["human"] != UNLABELLED}
        if labels:  # a calibration unit: every verdict informs q0/q1, errored epochs included
            human = labels.pop()
            calib[1 if human else 0].append(_mean([v["judge"] for v in judged]))
            continue
        if uid in known:  # labelled, but no verdict: neither calibration nor a test item
            unjudged += 1
            continue
        answered = [v for v, errored in epochs if v is not None and not errored]
        errors += len(answered) < len(epochs)
        test_naive.append(math.fsum(v["judge"] for v in answered) / len(epochs))
        answered_share.append(len(answered) / len(epochs))
        if answered:
            answered_means.append(_mean([v["judge"] for v in answered]))
    n_test = len(test_naive)
    binary = Design("problem", "binary")
    naive = estimate(binary, test_naive) if test_naive else _nan_interval("no test items", 0)
    m0, m1 = len(calib[0]), len(calib[1])
    n_calibration = m0 + m1
    method = "rogan-gladen over the answered, x answered share (delta method)"
    try:
        if not answered_means:
            raise CalibrationError("no answered test items")
        q0 = 1 - _mean(calib[0]) if m0 else 0.0
        q1 = _mean(calib[1]) if m1 else 0.0
        p_hat = _mean(answered_means)
        if max(len(e) for e in units.values()) > 1:  # units average epochs: effective sizes
            n_eff = _effective_size(answered_means, epochs_max(units))
            m0, m1 = (_effective_size(calib[h], epochs_max(units)) for h in (0, 1))
        else:
            n_eff = len(answered_means)
        est = rogan_gladen(p_hat, n_eff, q0, q1, m0, m1)
        a = _mean(answered_share)
        sd_a = 0.0
        if n_test > 1:
            sd_a = math.sqrt(
                math.fsum((x - a) ** 2 for x in answered_share) / (n_test - 1) / n_test
            )
        z = float(stats.norm.ppf(0.975))
        value = a * est.estimate
        down = math.hypot(a * (est.estimate - est.low), z * est.estimate * sd_a)
        up = math.hypot(a * (est.high - est.estimate), z * est.estimate * sd_a)
        low, high = max(0.0, value - down), min(1.0, value + up)
        if a == 1.0:
            value, low, high, method = est.estimate, est.low, est.high, "rogan-gladen"
        corrected = Interval(value, low, high, 0.95, method, n_test)
        refused = ""
    except (CalibrationError, ValueError) as ex:
        refused = str(ex)
        corrected = _nan_interval(f"refused: {ex}", n_test)
    return JudgeScores(naive, corrected, refused, n_test, n_calibration, errors, unjudged)


def epochs_max(units: dict[str, list[Any]]) -> int:
    """The most epochs any unit has."""
    return max(len(e) for e in units.values())


def _effective_size(means: list[float], epochs: int) -> int:
    """The binomial sample size with the variance of these unit means: n p(1-p) / s**2.

    A unit that averages several epochs of a 0/1 verdict varies less than one verdict; the
    binomial variance p(1-p)/n of Rogan-Gladen's formulas would then overstate it. The size is
    floored at the number of units (each unit counts once at least) and capped at units x
    epochs, which it is when the means do not spread at all. Coverage at 4 epochs: see
    tests/test_experimental_design.py.
    """
    n = len(means)
    if n < 2:
        return n
    p = _mean(means)
    s2 = math.fsum((x - p) ** 2 for x in means) / (n - 1)
    if s2 == 0.0:
        return n * epochs
    return int(min(n * epochs, max(n, math.floor(n * p * (1 - p) / s2))))


def per_problem(records: Sequence[LogRecord], scorer: str) -> dict[str, list[tuple[float, str]]]:
    """Each unit's (value, error reason) per epoch for one scorer, errors by the design's rule.

    An errored epoch (raised, no score, a score that cannot be read) takes the value the
    metric's declared error rule gives (`Design.error_value`: the worst value of the support,
    or a declared penalty), or nan where the rule excludes it (an unbounded score has no worst
    value): never a value that flatters. Several records (replicates of one configuration)
    pool their epochs per unit.
    """
    out: dict[str, list[tuple[float, str]]] = {}
    for record in records:
        on_error = record.design.metric(scorer).error_value()
        failed = math.nan if on_error is None else on_error
        for s in record.samples:
            raw = dict(s.raw)
            if s.error:
                value, reason = failed, s.error
            elif scorer not in raw:
                value, reason = failed, f"no score from {scorer}"
            else:
                value, reason = parse_score(raw[scorer])
                value = failed if reason else value
            out.setdefault(s.id, []).append((value, reason))
    return out


def _unit_means(problems: dict[str, list[tuple[float, str]]]) -> dict[str, float]:
    """Each unit's mean over its epochs that count (an excluded error is nan and left out)."""
    out = {}
    for sid, vs in problems.items():
        kept = [v for v, _ in vs if not math.isnan(v)]
        if kept:
            out[sid] = _mean(kept)
    return out


def unit_clusters(records: Sequence[LogRecord], design: Design) -> dict[str, str] | None:
    """Each unit's cluster from its metadata, where the design clusters units (else None)."""
    if not design.cluster:
        return None
    out: dict[str, str] = {}
    for record in records:
        for s in record.samples:
            out.setdefault(s.id, str(s.metadata.get(design.cluster, s.id)))
    return out


def problem_means(records: Sequence[LogRecord] | LogRecord, scorer: str | None = None) -> dict:
    """Each unit's mean score over its epochs (and replicates), errors by the design's rule."""
    records = [records] if isinstance(records, LogRecord) else list(records)
    scorer = scorer or first_scorer(records)
    return _unit_means(per_problem(records, scorer))


def first_scorer(records: Sequence[LogRecord]) -> str:
    """The first scorer of the first record that has one (the metric pairs are tested on)."""
    return next((r.scorers[0] for r in records if r.scorers), "")


def error_reasons(record: LogRecord) -> Counter[str]:
    """How many sample-epochs errored, by reason (each counted once, whatever its scorers)."""
    reasons: Counter[str] = Counter()
    for s in record.samples:
        if s.error:
            reasons[s.error] += 1
            continue
        unread = [parse_score(value)[1] for _, value in s.raw]
        first = next((reason for reason in unread if reason), "")
        if first:
            reasons[first] += 1
    return reasons


def _judge_units(records: Sequence[LogRecord], name: str) -> tuple[dict, set[str]] | None:
    """Each unit's (verdict, errored) per epoch, and the units labelled beside the sample.

    The calibrated judge records a sample's human label in its verdict and, before it asks the
    judge, in the sample's metadata, so a sample whose judge raised keeps its label.
    """
    raws = [(s, dict(s.raw).get(name)) for r in records for s in r.samples]
    if not any(judge_verdict(v) is not None for _, v in raws):
        return None
    units: dict[str, list[tuple[dict[str, int] | None, bool]]] = {}
    labelled: set[str] = set()
    for s, v in raws:
        units.setdefault(s.id, []).append((judge_verdict(v), bool(s.error)))
        if s.metadata.get(HUMAN_LABEL_KEY) in (0, 1):
            labelled.add(s.id)
    return units, labelled


def record_judge(
    record: LogRecord | Sequence[LogRecord], scorer: str | None = None
) -> tuple[JudgeScores, int] | None:
    """A calibrated judge's scores of a log (or pooled replicates) and its errored test units.

    With no scorer named, the first scorer that logged judge verdicts; None if none did.
    """
    records = [record] if isinstance(record, LogRecord) else list(record)
    names = [scorer] if scorer else list(dict.fromkeys(n for r in records for n in r.scorers))
    for name in names:
        judged = _judge_units(records, name)
        if judged is not None:
            scores = judge_scores(*judged)
            return scores, scores.errors
    return None


def _cluster_means(
    seen: Sequence[str], values: dict[str, list[float]], clusters: dict[str, str]
) -> list[float]:
    """Each cluster's mean unit score, the clusters in the order their first unit was seen.

    A decided run of a clustered design visits clusters whole and its confidence sequences
    take one observation per cluster (`harness.board._family.ClusterMeans`): a score row's CS
    does the same, since units in a cluster are not independent draws.
    """
    by_cluster: dict[str, list[float]] = {}
    for u in seen:
        by_cluster.setdefault(clusters.get(u, u), []).append(_mean(values[u]))
    return [_mean(v) for v in by_cluster.values()]


def _excluding(ci: Interval, excluded: int, design: Design) -> Interval:
    """The interval, its method saying how many units the error rule left out."""
    if not excluded:
        return ci
    note = f"{excluded} errored unit{'s' * (excluded != 1)} excluded (no worst value)"
    return dataclasses.replace(ci, method=f"{ci.method}; {note}")


def anytime_interval(
    values: Sequence[float], alpha: float, support: tuple[float, float] = (0.0, 1.0)
) -> Interval:
    """The betting confidence sequence of a bounded mean after `values`, in the order seen.

    For a run that stopped on its decisions (`--until decided`): its n was chosen by the data,
    so a fixed-n interval would not hold; this one holds at any stopping time. The betting CS
    needs a bounded support: a score with an infinite end reads "not estimable".
    """
    from harness.stats import BettingCS

    low, high = support
    if not (math.isfinite(low) and math.isfinite(high)):
        what = "not estimable: an anytime-valid interval needs a bounded score"
        return _nan_interval(what, len(values))
    if any(not low <= v <= high for v in values):
        raise ValueError(f"a score leaves the declared support [{low:g}, {high:g}]")
    cs = BettingCS(alpha=alpha, kind="mean")
    for v in values:
        cs.update((v - low) / (high - low))
    ci = cs.interval()
    method = f"betting CS, anytime-valid (n chosen by the data; {ci.method})"

    def back(x: float) -> float:
        return low + (high - low) * x

    return Interval(back(ci.estimate), back(ci.low), back(ci.high), 1 - alpha, method, ci.n)


def _active_interval(record: LogRecord) -> Interval | None:
    """The weighted CS an `--active` run recorded for its model's mean (None if malformed).

    Its items were chosen by the model's own answers, so their plain average is biased; the
    run's early-stopping summary holds the estimate weighted by the selection probabilities.
    """
    got = record.stopping.get("active")
    if not isinstance(got, dict):
        return None
    numbers = [got.get(k) for k in ("estimate", "low", "high", "alpha")]
    if not all(isinstance(x, int | float) and math.isfinite(x) for x in numbers):
        return None
    estimate, low, high, alpha = (float(x) for x in numbers)
    if not (low <= high and 0 < alpha < 1):
        return None
    asked = got.get("asked")
    method = (
        "betting CS of the selection-weighted scores, anytime-valid (items chosen actively "
        f"from a factor model of the history; {asked} asked of {got.get('visited')} visited)"
    )
    return Interval(estimate, max(low, 0.0), min(high, 1.0), 1 - alpha, method,
                    int(asked) if isinstance(asked, int) else 0)  # fmt: skip


def score_rows(record: LogRecord) -> list[SummaryRow]:
    """The score rows of one log, one or more per scorer."""
    return arm_rows([record])


def headline_rows(rows: Sequence[SummaryRow], records: Sequence[LogRecord]) -> list[SummaryRow]:
    """The rows `harness eval` prints: each log's declared headline metrics only.

    A suite that declares no headline (its result is a table) prints none: the eval points to
    its report section instead.
    """
    designs = {r.path: r.design for r in records}
    return [r for r in rows if r.log not in designs or designs[r.log].shows(r.metric)]


def summary_rows(record: LogRecord) -> list[SummaryRow]:
    """The rows `harness eval` prints for one log (`headline_rows` of its score rows)."""
    return headline_rows(score_rows(record), [record])


def arm_rows(records: Sequence[LogRecord], design: Design | None = None) -> list[SummaryRow]:
    """The summary rows of one arm: one log, or the replicates of a configuration pooled."""
    first = records[0]
    design = design or design_of(first)
    clusters = unit_clusters(records, design)
    scorers = list(dict.fromkeys(n for r in records for n in r.scorers))
    rows: list[SummaryRow] = []

    flagged = len({s.id for r in records for s in r.samples if s.flags})
    tampered = "; ".join(
        dict.fromkeys(f"{r.path}: {r.tampered}" if len(records) > 1 else r.tampered
                      for r in records if r.tampered)
    )  # fmt: skip

    def row(metric: str, ci: Interval, n: int, errors: int) -> SummaryRow:
        return SummaryRow(
            suite=first.suite, task=first.task, model=first.model if len(records) == 1 else
            first.identity.arm_label + f" ({len(records)} replicates pooled)", metric=metric,
            n=n, errors=errors, value=ci.estimate, ci_low=ci.low, ci_high=ci.high,
            ci_method=ci.method, log=", ".join(r.path for r in records), unit=design.unit,
            flagged=flagged, tampered=tampered,
        )  # fmt: skip

    for scorer in scorers:
        judged = record_judge(records, scorer)
        if judged is not None:
            scores, errors = judged
            rows.append(row("judge (naive)", scores.naive, scores.n_test, errors))
            rows.append(row("judge (corrected)", scores.corrected, scores.n_test, errors))
            continue
        measure = design.metric(scorer)
        problems = per_problem(records, scorer)
        errors = sum(1 for vs in problems.values() if any(reason for _, reason in vs))
        values = {
            sid: kept for sid, vs in problems.items() if (kept := [v for v, _ in vs if v == v])
        }  # an excluded error is nan (v != v): left out
        units = sorted(values)
        excluded = len(problems) - len(units)
        # "accuracy" only for a metric its design declares binary: a latency of 0 s is not one
        binary = measure.score == "binary" and all(
            v in (0.0, 1.0) for vs in values.values() for v in vs
        )
        # a log with several scorers names each one's accuracy, so its rows tell them apart
        label = "accuracy" if len(scorers) == 1 else f"accuracy ({scorer})"
        metric = label if binary else scorer
        if not units:  # every unit errored and the rule excludes errors: nothing to estimate
            what = f"not estimable: every {design.unit} errored ({measure.error_rule_text()})"
            rows.append(row(metric, _nan_interval(what, 0), len(problems), errors))
            continue
        labels = [clusters[u] for u in units] if clusters else None
        means = [_mean(values[u]) for u in units]
        sequential = first.sequential
        active = _active_interval(first) if sequential.get("active") else None
        if active is not None:  # items chosen actively: only the weighted CS is valid
            rows.append(row(metric, active, len(units), errors))
            continue
        if sequential:  # replicates of a decided run pool in the first one's order
            order = (sequential.get("orders") or {}).get(first.task) or units
            seen = [u for u in order if u in values] + [u for u in units if u not in order]
            observed = _cluster_means(seen, values, clusters) if clusters else None
            ci = anytime_interval(
                observed if observed is not None else [_mean(values[u]) for u in seen],
                float(sequential["alpha"]),
                measure.support,
            )
            if observed is not None:  # the CS's observations were the clusters' means
                what = f"one observation per {design.cluster} ({len(observed)}), its mean"
                ci = dataclasses.replace(ci, method=f"{ci.method}; {what}")
            rows.append(row(metric, _excluding(ci, excluded, measure), len(units), errors))
            continue
        ci = _excluding(estimate(measure, means, labels), excluded, measure)
        rows.append(row(metric, ci, len(units), errors))
        fewest = min(len(vs) for vs in values.values())
        if binary and fewest > 1:
            passes = [pass_at_k(len(values[u]), int(sum(values[u])), fewest) for u in units]
            at_k = f"pass@{fewest}" if len(scorers) == 1 else f"pass@{fewest} ({scorer})"
            ci = estimate(measure, passes, labels)
            if fewest < max(len(vs) for vs in values.values()):
                ci = dataclasses.replace(ci, method=f"{ci.method}; K = fewest epochs of a unit")
            rows.append(row(at_k, ci, len(units), errors))
    return rows
