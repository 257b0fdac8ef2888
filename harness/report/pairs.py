"""Which logs may be compared, and every pair of models among them: shared by report and site.

Logs are compared only when their identities agree on everything but the model (suite, task,
task arguments, sample ids; `harness.logs.LogIdentity.comparable`). A task whose logs fall into
several such groups becomes one table per group, labelled by what tells the groups apart, and
each pair across groups is listed as not comparable with the reason.

Within a group, each pair of models is tested on the problems both have: McNemar exact for 0/1
scores; otherwise a paired bootstrap from 20 shared problems up, and below that the exact
sign-flip test with the interval that inverts it; the p-values are corrected by Holm over the
group's tested pairs. A pair that cannot be tested has p = nan ("not tested"), which Holm
leaves out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from harness.logs import LogIdentity, LogRecord
from harness.report.scores import problem_means
from harness.stats.exact import sign_flip_interval
from harness.stats.multiple import holm
from harness.stats.paired import PairedTest, mcnemar, paired_bootstrap_diff, paired_permutation

FEW = 20  # below this many shared problems, exact sign-flip instead of the bootstrap


@dataclass(frozen=True)
class Group:
    """Logs of one task that may be compared with each other: one per model."""

    suite: str  # suite name
    task: str  # task name
    label: str  # the task, with what tells it from the task's other groups
    records: tuple[LogRecord, ...]  # sorted by model


@dataclass(frozen=True)
class NotComparable:
    """Two logs of one task that are not paired, and why."""

    suite: str  # suite name
    task: str  # task name
    log_a: str  # one log
    log_b: str  # the other
    reason: str  # which parts of their identities differ


@dataclass(frozen=True)
class PairResult:
    """Model a against model b on the problems both have."""

    suite: str  # suite name
    task: str  # the group's label
    model_a: str  # first model
    model_b: str  # second model
    test: PairedTest | None  # difference a - b, its interval and raw p-value; None: not tested
    p_holm: float  # corrected by Holm over the group's tested pairs; nan: not tested
    note: str = ""  # why it was not tested

    @property
    def p(self) -> float:
        """The raw p-value (nan: not tested)."""
        return self.test.p_value if self.test else math.nan


def _differences(a: LogIdentity, b: LogIdentity) -> str:
    parts = []
    args_a, args_b = dict(a.task_args), dict(b.task_args)
    for key in sorted(set(args_a) | set(args_b)):
        if args_a.get(key) != args_b.get(key):
            parts.append(f"{key} {args_a.get(key, '(unset)')} vs {args_b.get(key, '(unset)')}")
    if a.sample_hash != b.sample_hash:
        parts.append(
            f"sample ids differ ({a.n_ids} ids #{a.sample_hash} vs {b.n_ids} ids #{b.sample_hash})"
        )
    return "task arguments differ: " + "; ".join(parts) if parts else "identities differ"


def _label(task: str, identity: LogIdentity, others: list[LogIdentity]) -> str:
    """The task, plus the task arguments (and sample ids) in which its groups differ."""
    if not others:
        return task
    mine = dict(identity.task_args)
    keys = sorted({k for o in others for k, v in o.task_args if mine.get(k) != v} |
                  {k for k in mine if any(k not in dict(o.task_args) for o in others)})  # fmt: skip
    parts = [f"{k}={mine.get(k, '(unset)')}" for k in keys]
    if any(o.sample_hash != identity.sample_hash for o in others) and not parts:
        parts.append(f"ids #{identity.sample_hash}")
    return f"{task} [{', '.join(parts)}]"


def comparable_groups(records: list[LogRecord]) -> tuple[list[Group], list[NotComparable]]:
    """The records split into groups that may be compared, and the pairs that may not."""
    by_task: dict[tuple[str, str], dict[tuple, list[LogRecord]]] = {}
    for r in records:
        by_task.setdefault((r.suite, r.task), {}).setdefault(r.identity.comparable, []).append(r)
    groups: list[Group] = []
    refused: list[NotComparable] = []
    for (suite, task), keyed in sorted(by_task.items()):
        firsts = {key: rs[0].identity for key, rs in keyed.items()}
        for key, rs in sorted(keyed.items(), key=lambda kv: str(kv[0])):
            others = [i for k, i in firsts.items() if k != key]
            label = _label(task, firsts[key], others)
            groups.append(Group(suite, task, label, tuple(sorted(rs, key=lambda r: r.model))))
        for ka, kb in combinations(sorted(keyed, key=str), 2):
            for ra in keyed[ka]:
                for rb in keyed[kb]:
                    reason = _differences(ra.identity, rb.identity)
                    refused.append(NotComparable(suite, task, ra.path, rb.path, reason))
    return groups, refused


def paired_test(a: dict[str, float], b: dict[str, float]) -> PairedTest | None:
    """Paired test of two models' per-problem scores on the problems both have (None: < 2)."""
    shared = sorted(set(a) & set(b))
    if len(shared) < 2:
        return None
    x = np.array([a[i] for i in shared])
    y = np.array([b[i] for i in shared])
    binary = bool(np.isin(x, (0, 1)).all() and np.isin(y, (0, 1)).all())
    if binary:
        return mcnemar(x, y)
    if len(shared) >= FEW:
        return paired_bootstrap_diff(x, y)
    # below about 20 items a percentile bootstrap does not cover 95%: the exact sign-flip test
    # and the interval that inverts it (none where n is too small for 95%)
    test = paired_permutation(x, y)
    ci = sign_flip_interval(x - y)
    method = f"{test.method}; interval: {ci.method}"
    return dataclasses.replace(
        test, low=ci.low, high=ci.high, confidence=ci.confidence, method=method
    )


def group_pairs(group: Group) -> list[PairResult]:
    """Every pair of models of a group, Holm-corrected over the group's tested pairs."""
    means = {r.model: problem_means(r) for r in group.records}
    models = sorted(means)
    raw = [(a, b, paired_test(means[a], means[b])) for a, b in combinations(models, 2)]
    tested = [t.p_value for _, _, t in raw if t is not None and not math.isnan(t.p_value)]
    adjusted = iter(holm(tested).adjusted if tested else ())
    out = []
    for a, b, test in raw:
        if test is None:
            note = "not tested (fewer than two shared problems)"
            out.append(PairResult(group.suite, group.label, a, b, None, math.nan, note))
        elif math.isnan(test.p_value):
            out.append(PairResult(group.suite, group.label, a, b, test, math.nan, "not tested"))
        else:
            out.append(PairResult(group.suite, group.label, a, b, test, float(next(adjusted))))
    return out


def p_text(p: float) -> str:
    """A p-value for a table: "not tested" for nan, never 0."""
    return "not tested" if math.isnan(p) else f"{p:.4g}"
