"""The suite's report: every configuration against its pattern without verification.

Built from a log's per-sample data (`harness.logs`): the configuration is in each sample's
metadata (`mp_*`), the score is the sample's first scorer, and an errored sample counts as
wrong and is counted. Per configuration:

- accuracy with the comparison engine's interval over the suite's design (unit: item, a
  problem at one seed; cluster: `mp_problem`): Wilson, clustered by problem where a problem has
  several seeds;
- the paired difference against the same pattern with verifier `none`, on the items both have,
  from the engine (`harness.stats._compare.pair_family`): McNemar for 0/1 items that do not nest;
  with several seeds, the test runs on the problems' mean differences (a paired bootstrap from
  20 problems, else the exact sign-flip test and its interval); Holm over the grid;
- the spread across seeds: the standard deviation of the per-seed accuracies;
- the verifier's agreement with the outcome: the share of samples where the last kept
  candidate's process label equals the final score; and its skill on mixed sets (a);
- the verification cost: verifier tokens per sample, and the extra tokens against the
  baseline (agents and verifier together), paired like the accuracy (its own family).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.logs import LogRecord, SampleScore, parse_score
from harness.sections import pyplot, save_figure
from harness.stats import POSITIVE, Interval, PairedTest, estimate, pair_family
from harness.suites.catalog import suite_of_task
from harness.suites.mas_prove.toy_check import COUNT_KEYS, ToyCheck, toy_check

CONFIG_KEYS = ("mp_pattern", "mp_verifier", "mp_granularity", "mp_context")
# unit: item (problem, seed); cluster: mp_problem
DESIGN = suite_of_task(f"{__package__}.task:mas_prove").design
TOKENS = dataclasses.replace(DESIGN, score="unbounded", bounds=POSITIVE, direction="lower")


@dataclass(frozen=True)
class ConfigRow:
    """One configuration of the grid."""

    pattern: str  # MAS pattern
    verifier: str  # verifier (`none`: the baseline)
    granularity: str  # agent, iteration, or "-" for the baseline
    context: str  # context strategy, or "-"
    n: int  # samples (problems x seeds)
    errors: int  # errored samples (counted wrong)
    accuracy: Interval  # the engine's: Wilson, clustered by problem where problems nest items
    seed_accuracies: tuple[float, ...]  # accuracy per seed
    diff: PairedTest | None  # accuracy - baseline's, per problem; None: no baseline or untested
    p_holm: float  # Holm over the grid's tested differences; nan: not tested
    extra_tokens: PairedTest | None  # tokens per sample - baseline's, per problem
    tokens: float  # mean tokens per sample (agents and verifier)
    verifier_tokens: float  # mean verifier tokens per sample
    verifier_calls: float  # mean verifier model calls per sample
    searches: float  # mean searches per sample
    agreement: Interval | None  # last kept candidate right == sample right; None: no search
    skill: Interval | None  # kept a right candidate on mixed sets; None: no mixed set
    fallbacks: int  # searches that kept candidate 0 because the verifier failed
    unparsed: int  # judged searches whose ranking could not be parsed (identity ranking)

    @property
    def label(self) -> str:
        """`pattern / verifier / granularity / context`."""
        return f"{self.pattern} / {self.verifier} / {self.granularity} / {self.context}"

    @property
    def seed_sd(self) -> float:
        """Standard deviation of the per-seed accuracies (nan below two seeds)."""
        if len(self.seed_accuracies) < 2:
            return math.nan
        return statistics.stdev(self.seed_accuracies)


@dataclass(frozen=True)
class MasReport:
    """One log's grid."""

    heading: str  # the log
    benchmark: str  # chain, aime2024, aime2025
    n: int  # candidates per search
    rows: tuple[ConfigRow, ...]  # every configuration, baselines included
    toy: tuple[ToyCheck, ...]  # the toy model against each verified configuration


def _score(sample: SampleScore) -> float:
    if sample.error or not sample.raw:
        return 0.0
    return parse_score(sample.raw[0][1])[0]


def _config(sample: SampleScore) -> tuple[str, str, str, str] | None:
    meta = sample.metadata
    if not all(k in meta for k in CONFIG_KEYS):
        return None
    return tuple(str(meta[k]) for k in CONFIG_KEYS)  # type: ignore[return-value]


def _problem(sample: SampleScore) -> str:
    return str(sample.metadata.get("mp_problem", sample.id))


def _tokens(sample: SampleScore) -> float:
    meta = sample.metadata
    return float(meta.get("mp_agent_tokens", 0) or 0) + float(
        meta.get("mp_verifier_tokens", 0) or 0
    )


def _item(sample: SampleScore) -> str:
    """The unit: a problem at one seed (its epochs are averaged)."""
    return f"{_problem(sample)}|s{sample.metadata.get('mp_seed', 0)}"


def _per_item(
    samples: list[SampleScore], value: Callable[[SampleScore], float]
) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        groups[_item(s)].append(value(s))
    return {k: sum(v) / len(v) for k, v in groups.items()}


def _right(sample: SampleScore) -> float:
    return float(_score(sample) > 0.5)


def _row(key, samples) -> ConfigRow:
    scores = [_score(s) for s in samples]
    items = _per_item(samples, _right)
    clusters = {_item(s): _problem(s) for s in samples}
    accuracy = estimate(DESIGN, list(items.values()), [clusters[u] for u in items])
    by_seed: dict[int, list[float]] = defaultdict(list)
    for s, v in zip(samples, scores, strict=True):
        by_seed[int(s.metadata.get("mp_seed", 0))].append(v)
    searched = [s for s in samples if int(s.metadata.get("mp_searches", 0) or 0) > 0]
    agreement = None
    if searched:
        agree = [
            int(int(s.metadata.get("mp_last_pick_correct", -1)) == int(_score(s) > 0.5))
            for s in searched
        ]
        agreement = estimate(DESIGN, agree, [_problem(s) for s in searched])
    mixed_rows = [
        (
            _problem(s),
            int(s.metadata.get("mp_mixed", 0) or 0),
            int(s.metadata.get("mp_mixed_pick_correct", 0) or 0),
        )
        for s in samples
    ]
    flags, clusters = [], []
    for problem, m, ok in mixed_rows:
        flags += [1] * ok + [0] * (m - ok)
        clusters += [problem] * m
    skill = estimate(DESIGN, flags, clusters) if flags else None

    def mean(key: str) -> float:
        return float(np.mean([float(s.metadata.get(key, 0) or 0) for s in samples]))

    return ConfigRow(
        pattern=key[0],
        verifier=key[1],
        granularity=key[2],
        context=key[3],
        n=len(samples),
        errors=sum(1 for s in samples if s.error),
        accuracy=accuracy,
        seed_accuracies=tuple(float(np.mean(v)) for _, v in sorted(by_seed.items())),
        diff=None,
        p_holm=math.nan,
        extra_tokens=None,
        tokens=float(np.mean([_tokens(s) for s in samples])),
        verifier_tokens=mean("mp_verifier_tokens"),
        verifier_calls=mean("mp_verifier_calls"),
        searches=mean("mp_searches"),
        agreement=agreement,
        skill=skill,
        fallbacks=int(sum(int(s.metadata.get("mp_fallbacks", 0) or 0) for s in samples)),
        unparsed=int(sum(int(s.metadata.get("mp_unparsed", 0) or 0) for s in samples)),
    )


def _toy(key, samples, n: int) -> ToyCheck | None:
    counts: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(len(COUNT_KEYS)))
    chain: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for s in samples:
        counts[_problem(s)] += np.array([float(s.metadata.get(k, 0) or 0) for k in COUNT_KEYS])
        steps = int(s.metadata.get("mp_chain_steps", 0) or 0)
        chain[_problem(s)].append((steps, int(_score(s) > 0.5)))
    if not sum(c[2] for c in counts.values()):
        return None
    single = key[0] == "single" and all(steps for v in chain.values() for steps, _ in v)
    label = " / ".join(key)
    return toy_check(label, n, dict(counts), dict(chain) if single else None)


def build_mas_report(heading: str, record: LogRecord) -> MasReport:
    """Every configuration of one log, its paired differences Holm-corrected over the grid."""
    groups: dict[tuple[str, str, str, str], list[SampleScore]] = defaultdict(list)
    for s in record.samples:
        key = _config(s)
        if key is not None:
            groups[key].append(s)
    baselines = {k[0]: v for k, v in groups.items() if k[1] == "none"}
    keys = sorted(groups)
    rows = [_row(k, groups[k]) for k in keys]
    verified = [i for i, k in enumerate(keys) if k[1] != "none" and k[0] in baselines]
    clusters = {_item(s): _problem(s) for s in record.samples}
    for value, design, field in ((_right, DESIGN, "diff"), (_tokens, TOKENS, "extra_tokens")):
        family = pair_family(design, [
            (rows[i].label, "none", _per_item(groups[keys[i]], value),
             _per_item(baselines[keys[i][0]], value))
            for i in verified
        ], clusters)  # fmt: skip
        for i, p in zip(verified, family, strict=True):
            extra = {"p_holm": p.p_holm} if field == "diff" else {}
            rows[i] = dataclasses.replace(rows[i], **{field: p.test}, **extra)
    n = int(record.metadata.get("n") or _task_n(record))
    toys = [t for k, v in sorted(groups.items()) if k[1] != "none" and (t := _toy(k, v, n))]
    benchmark = str(dict(record.identity.task_args).get("benchmark", '"chain"')).strip('"')
    return MasReport(heading, benchmark, n, tuple(rows), tuple(toys))


def _task_n(record: LogRecord) -> int:
    return int(str(dict(record.identity.task_args).get("n", "3")).strip('"'))


def plot_gain_vs_tokens(report: MasReport, stem: Path) -> list[str]:
    """Accuracy gained against extra tokens, one point per configuration with its intervals."""
    plt = pyplot()
    rows = [r for r in report.rows if r.diff is not None and r.extra_tokens is not None]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    verifiers = sorted({r.verifier for r in rows})
    markers = {"agent": "o", "iteration": "s"}
    for r in rows:
        d, t = r.diff, r.extra_tokens
        assert d is not None and t is not None
        colour = f"C{verifiers.index(r.verifier) % 10}"
        yerr = None
        if not (math.isnan(d.low) or math.isnan(d.high)):
            yerr = [[d.estimate - d.low], [d.high - d.estimate]]
        xerr = None
        if not (math.isnan(t.low) or math.isnan(t.high)):
            xerr = [[t.estimate - t.low], [t.high - t.estimate]]
        marker = markers.get(r.granularity, "^")
        ax.errorbar(
            t.estimate, d.estimate, yerr=yerr, xerr=xerr, fmt=marker, color=colour, alpha=0.75,
            capsize=2, markersize=5,
        )  # fmt: skip
    for i, v in enumerate(verifiers):
        ax.plot([], [], "o", color=f"C{i % 10}", label=v)
    ax.plot([], [], "o", color="grey", label="agent level")
    ax.plot([], [], "s", color="grey", label="iteration level")
    ax.axhline(0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("extra tokens per sample vs. no verification (95% CI)")
    ax.set_ylabel("accuracy gained vs. no verification (95% CI)")
    ax.set_title(f"mas-prove ({report.benchmark}): gain against cost, one point per configuration")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return save_figure(fig, stem)
