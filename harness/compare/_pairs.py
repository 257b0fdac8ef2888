"""Which logs may be compared, and every pair of arms among them: shared by report and site.

Logs are compared only when their identities agree on everything but the model
(`harness.logs.LogIdentity.comparable`: suite, task, task arguments less the suite's declared
settings, epochs and limits, the generate config less its seed, solver, scorers and the data's
content). A task whose logs fall into several such groups becomes one table per group,
labelled by the fields that tell the groups apart, and each pair of logs across groups is
listed as not comparable with every field that differs named.

Within a group, an arm is a configuration: a model with its arguments. Logs that differ only in
the generation seed are replicates of one arm; they pool (ours): each unit's score is the mean
over every epoch of every replicate, so two replicates of one epoch weigh as one run of two
epochs. Each replicate keeps its own score row, and none supersedes another.

The pairs of a group are one family of the comparison engine (`harness.stats._compare`), on the
first scorer, over the suite's declared unit and cluster: the test and interval are chosen by
score type and n, and Holm corrects over the group's tested pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

from harness.compare._scores import design_of, first_scorer, problem_means, unit_clusters
from harness.logs import LogIdentity, LogRecord
from harness.stats import Comparison, Design, PairedTest, PairEstimate, bonferroni_level, compare


@dataclass(frozen=True)
class Group:
    """Logs of one task that may be compared with each other."""

    suite: str  # suite name
    task: str  # task name
    label: str  # the task, with what tells it from the task's other groups
    records: tuple[LogRecord, ...]  # sorted by model, then replicate

    @property
    def arms(self) -> dict[str, tuple[LogRecord, ...]]:
        """The group's logs by arm (model and arguments); replicates share an arm."""
        out: dict[str, list[LogRecord]] = {}
        for r in self.records:
            out.setdefault(r.identity.arm_label, []).append(r)
        return {k: tuple(v) for k, v in out.items()}

    @property
    def design(self) -> Design:
        """The design the group's suite declares."""
        return design_of(self.records[0])


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
    """Arm a against arm b on the units both have."""

    suite: str  # suite name
    task: str  # the group's label
    model_a: str  # first arm
    model_b: str  # second arm
    test: PairedTest | None  # difference a - b, its interval and raw p-value; None: not tested
    p_holm: float  # corrected by Holm over the group's tested pairs; nan: not tested
    note: str = ""  # why it was not tested

    @property
    def p(self) -> float:
        """The raw p-value (nan: not tested)."""
        return self.test.p_value if self.test else math.nan


def differences(a: LogIdentity, b: LogIdentity) -> list[str]:
    """Every field, other than the model, in which two identities differ: `name a vs b`."""
    fa, fb = a.fields(), b.fields()
    return [
        f"{key} {fa.get(key, '(unset)')} vs {fb.get(key, '(unset)')}"
        for key in sorted(set(fa) | set(fb))
        if fa.get(key) != fb.get(key)
    ]


def _label(task: str, identity: LogIdentity, others: list[LogIdentity]) -> str:
    """The task, plus the fields in which its group differs from the task's other groups."""
    if not others:
        return task
    mine = identity.fields()
    keys = sorted({k for o in others for k, v in o.fields().items() if mine.get(k) != v}
                  | {k for k in mine if any(k not in o.fields() for o in others)})  # fmt: skip
    if len(keys) > 1:  # the data differs with the arguments that made it: name those
        keys = [k for k in keys if k != "data"]
    parts = [f"{k.removeprefix('task_args.')}={mine.get(k, '(unset)')}" for k in keys]
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
            ordered = sorted(rs, key=lambda r: (r.identity.arm_label, r.identity.replicate))
            groups.append(Group(suite, task, label, tuple(ordered)))
        for ka, kb in combinations(sorted(keyed, key=str), 2):
            for ra in keyed[ka]:
                for rb in keyed[kb]:
                    parts = differences(ra.identity, rb.identity)
                    reason = "differ in " + "; ".join(parts) if parts else "identities differ"
                    refused.append(NotComparable(suite, task, ra.path, rb.path, reason))
    return groups, refused


def group_comparison(group: Group) -> Comparison:
    """The engine's comparison of a group's arms on the first scorer, over the design's unit."""
    arms = group.arms
    scorer = first_scorer(group.records)
    design = group.design.metric(scorer)
    scores = {arm: problem_means(records, scorer) for arm, records in arms.items()}
    clusters = unit_clusters(group.records, design)
    return compare(design, scores, clusters=clusters, metric=scorer or "score")


def group_pairs(group: Group) -> list[PairResult]:
    """Every pair of arms of a group, Holm-corrected over the group's tested pairs.

    A group that ran `--until decided` has no fixed-n test: its pairs are the run's own
    decisions (`decided_pairs`).
    """
    if group.records[0].sequential:
        return decided_pairs(group)
    return [_result(group, p) for p in group_comparison(group).pairs]


def decided_pairs(group: Group) -> list[PairResult]:
    """The decisions a `--until decided` run recorded, one per pair.

    Each carries its resolution, the items it took and its anytime-valid confidence sequence.
    There is no p-value (p and Holm read "not tested"); the resolution is in the method. Each
    sequence is at 1 - alpha / k for k pairs (Bonferroni), so its confidence is that, not
    1 - alpha: the method says both.
    """
    summary = max((r.stopping for r in group.records), key=lambda s: s.get("items_observed", 0))
    names = {str(r.identity.model): r.identity.arm_label for r in group.records}
    alpha = float(group.records[0].sequential.get("alpha", 0.05))
    out = []
    pairs = summary.get("pairs")
    pairs = [p for p in pairs if _decision_ok(p)] if isinstance(pairs, list) else []
    n_pairs = max(1, len(pairs))
    cluster = summary.get("cluster")
    for p in pairs:  # another's log: a malformed decision is left out
        low, high, est = (math.nan if p.get(k) is None else float(p[k])
                          for k in ("low", "high", "estimate"))  # fmt: skip
        clusters = p.get("clusters")
        within = (f" ({clusters} {cluster} clusters, one observation each)"
                  if isinstance(clusters, int) and isinstance(cluster, str) else "")  # fmt: skip
        method = (
            f"{p['resolution']} after {p['items']} items{within}; betting confidence sequence "
            f"at {bonferroni_level(alpha, n_pairs)} (Bonferroni over pairs), anytime-valid"
        )
        level = 1 - alpha / n_pairs
        test = PairedTest(est, low, high, level, math.nan, method, int(p["items"]), 0, 0)
        a, b = names.get(p["a"], p["a"]), names.get(p["b"], p["b"])
        out.append(PairResult(group.suite, group.label, a, b, test, math.nan, p["resolution"]))
    return out


def _decision_ok(p: object) -> bool:
    """Whether a recorded decision has the form `harness.board._live` writes."""
    if not isinstance(p, dict):
        return False
    names = isinstance(p.get("a"), str) and isinstance(p.get("b"), str)
    resolution = p.get("resolution") in ("a > b", "b > a", "equivalent", "unresolved")
    items = isinstance(p.get("items"), int) and not isinstance(p.get("items"), bool)
    numbers = all(p.get(k) is None or isinstance(p.get(k), int | float)
                  for k in ("low", "high", "estimate"))  # fmt: skip
    return names and resolution and items and numbers


def _result(group: Group, p: PairEstimate) -> PairResult:
    return PairResult(group.suite, group.label, p.arm_a, p.arm_b, p.test, p.p_holm, p.note)


def p_text(p: float) -> str:
    """A p-value for a table: "not tested" for nan, never 0."""
    return "not tested" if math.isnan(p) else f"{p:.4g}"
