"""mas-prove's report section: the grid against no verification, the toy-model check, the plot.

Declared in the catalog (`Suite.section`); one result per log (`harness.sections`).
"""

from __future__ import annotations

import math

from harness.compare import p_text
from harness.sections import Figure, Table, per_log_section, section_view
from harness.stats import Interval, PairedTest, rejects
from harness.suites.mas_prove.results import (
    DESIGN,
    MasReport,
    build_mas_report,
    plot_gain_vs_tokens,
)

NOTES = (
    "How to read it (intervals 95%; differences paired per item, clustered by problem, against "
    "the same pattern without verification, Holm over the grid; an errored sample counts wrong)"
)


def _diff_text(test: PairedTest | None, scale: float = 1.0, spec: str = "+.3f") -> str:
    if test is None:
        return "–"
    est = format(scale * test.estimate, spec)
    if math.isnan(test.low) or math.isnan(test.high):
        return f"{est} (no interval at n = {test.n})"
    return f"{est} [{format(scale * test.low, spec)}, {format(scale * test.high, spec)}]"


def _ci(interval: Interval | None, spec: str = ".3f") -> str:
    return "–" if interval is None else interval.text(spec)


def _sd(value: float) -> str:
    return "not estimable (< 2 seeds)" if math.isnan(value) else f"{value:.3f}"


def grid_table(report: MasReport) -> Table:
    """One row per configuration."""
    head = [
        "pattern / verifier / granularity / context",
        "n",
        "errors",
        "accuracy [95% CI]",
        "vs. no verification [95% CI]",
        "p (Holm)",
        "sd across seeds",
        "agreement with outcome",
        "skill a on mixed sets",
        "verifier tokens / sample",
        "extra tokens / sample [95% CI]",
        "fallbacks / unparsed",
    ]
    rows = [
        [
            r.label,
            str(r.n),
            str(r.errors),
            r.accuracy.text(),
            _diff_text(r.diff),
            p_text(r.p_holm) if r.diff is not None else "–",
            _sd(r.seed_sd),
            _ci(r.agreement),
            _ci(r.skill),
            f"{r.verifier_tokens:.0f}",
            _diff_text(r.extra_tokens, spec="+.0f"),
            f"{r.fallbacks} / {r.unparsed}",
        ]
        for r in report.rows
    ]
    methods = sorted({r.diff.method for r in report.rows if r.diff is not None})
    caption = (
        f"Grid ({report.benchmark}, N = {report.n} candidates per search); differences by "
        f"{'; '.join(methods) or 'no test'}; accuracy: Wilson over items (clustered by problem "
        "where a problem has several seeds)"
    )
    return caption, head, rows


def toy_table(report: MasReport) -> Table:
    """The spec's toy model from the measured p and a, against the observed kept-right rate."""
    head = [
        "configuration",
        "searches",
        "p (candidates right)",
        "a (skill on mixed sets)",
        "mixed sets: observed / binomial",
        "kept right: toy model",
        "kept right: observed",
        "observed - toy",
        "chain right: toy q^K",
        "chain right: observed",
    ]
    rows = [
        [
            t.label,
            str(t.searches),
            t.p.text(),
            t.a.text(),
            f"{t.mixed_observed:.3f} / {t.mixed_predicted:.3f}",
            t.predicted.text(),
            t.observed.text(),
            t.difference.text("+.3f"),
            _ci(t.chain_predicted),
            _ci(t.chain_observed),
        ]
        for t in report.toy
    ]
    caption = (
        "Toy model check (spec §3): P(kept right) = p^N + (1 - p^N - (1 - p)^N) a from the "
        "measured p and a; intervals by cluster bootstrap over problems, from 50 problems up"
    )
    return caption, head, rows


def notes(report: MasReport) -> tuple[str, ...]:
    """What the grid says, in words, from the numbers above."""
    out = []
    tested = [r for r in report.rows if r.diff is not None]
    alpha = DESIGN.alpha
    up = [r.label for r in tested if rejects(r.p_holm, alpha) and r.diff.estimate > 0]  # type: ignore[union-attr]
    down = [r.label for r in tested if rejects(r.p_holm, alpha) and r.diff.estimate < 0]  # type: ignore[union-attr]
    out.append(
        f"{len(tested)} verified configurations: {len(up)} better than no verification and "
        f"{len(down)} worse after Holm at {alpha:.0%} (Holm p <= {alpha:g})"
        + (f" (better: {', '.join(up[:6])}{'...' if len(up) > 6 else ''})" if up else "")
        + (f" (worse: {', '.join(down[:6])}{'...' if len(down) > 6 else ''})" if down else "")
    )
    fallbacks = sum(r.fallbacks for r in report.rows)
    unparsed = sum(r.unparsed for r in report.rows)
    if fallbacks or unparsed:
        out.append(
            f"{fallbacks} searches kept candidate 0 because the verifier failed or timed out, "
            f"and {unparsed} because the judge's ranking could not be parsed (identity ranking); "
            "such a verifier adds cost and no selection"
        )
    out.append(
        "Agreement with outcome: the share of samples whose last kept candidate's process label "
        "(right for its own input) equals the final score; skill a: the share of mixed sets in "
        "which the verifier kept a right candidate (chance is about the share of right ones)"
    )
    out.append(
        "Reconstructed: the patterns, context strategies and prompts are ours; the toy model is "
        "the spec's (see the log's `reconstructed` metadata)"
    )
    return tuple(out)


def tables(report: MasReport) -> list[Table]:
    """The grid, and the toy-model check where the log has one."""
    return [grid_table(report)] + ([toy_table(report)] if report.toy else [])


view = section_view(
    heading=lambda report: report.heading,
    tables=tables,
    notes_caption=NOTES,
    notes=notes,
    figures=[Figure("accuracy gained against extra tokens, one point per configuration with "
                    "95% intervals", plot_gain_vs_tokens)],
)  # fmt: skip
SECTION = per_log_section("mas-prove", "mas-prove", build_mas_report, view)
