"""The provenance report section: tables, plots, the five checks and one line per paper claim.

Declared in the catalog (`Suite.section`). One result per preset (`results.build_reports`).
"""

from __future__ import annotations

import math
from pathlib import Path

from harness.sections import Plot, ReportSection, SectionView, Table
from harness.suites.provenance.plots import plot_pareto, plot_power, plot_students
from harness.suites.provenance.results import (
    Check,
    ProvenanceReport,
    build_reports,
    fmt,
    rate_interval,
)


def _fpr_table(r: ProvenanceReport) -> Table | None:
    if r.fpr is None:
        return None
    rows = []
    for gamma, res in r.fpr["by_gamma"].items():
        for label, key in (("exact, dedup, fresh key per text", "fresh_key"),
                           ("z-test, dedup, fresh key (report only)", "z_test"),
                           ("exact, no dedup, fresh key (report only)", "no_dedup"),
                           ("exact, dedup, one fixed key (report only)", "fixed_key")):  # fmt: skip
            part = res[key]
            for alpha, hits in part["hits"].items():
                ci = rate_interval(hits, part["texts"])
                rows.append([gamma, label, alpha, f"{hits}/{part['texts']}", ci.text(".4f")])
    low = r.fpr["low_diversity"]
    for label in ("dedup", "no_dedup"):
        for alpha, hits in low[label]["hits"].items():
            ci = rate_interval(hits, low["keys"])
            rows.append([str(low["gamma"]), f"low-diversity source, {label.replace('_', ' ')}, "
                         f"{low[label]['mean_scored']:.0f} scored", alpha, f"{hits}/{low['keys']}",
                         ci.text(".4f")])  # fmt: skip
    caption = (f"False-positive rate on {r.fpr['texts']} unwatermarked teacher texts, first "
               f"{r.fpr['scored']} scored tuples (Wilson 95%); the exact test's rate should sit "
               "at or below α")  # fmt: skip
    return caption, ["γ", "test", "α", "hits", "FPR (Wilson)"], rows


def _power_table(r: ProvenanceReport) -> Table | None:
    if not r.cells:
        return None
    rows = []
    for c in sorted(r.cells, key=lambda c: (c["gamma"], c["delta"])):
        for n in c["cells"]:
            ci = rate_interval(n["detected"], n["texts"]) if n["texts"] else None
            rows.append([f"{c['gamma']:g}", f"{c['delta']:g}", str(n["n"]), str(n["texts"]),
                         ci.text(".3f") if ci else "–", fmt(n["predicted"]),
                         f"{n['power'] - n['predicted']:+.3f}" if n["texts"] else "–",
                         fmt(n["predicted_no_dedup_correction"]),
                         fmt(n["predicted_key_averaged"]), fmt(n["predicted_kgw_bound"]),
                         f"{c['kl']:.4f}"])  # fmt: skip
    return ("Power at α = 1e-3 by (γ, δ, n): measured (Wilson 95%) against the conditional model "
            "(ours) with its dedup correction, without it, the key-averaged p̄ model and KGW's "
            "bound; texts: those with at least n scored tuples",
            ["γ", "δ", "n", "texts", "measured (Wilson)", "predicted", "error",
             "no dedup corr.", "key-avg p̄", "KGW bound", "KL nats/token"], rows)  # fmt: skip


def _selection_table(r: ProvenanceReport) -> Table | None:
    s = r.selection
    if s is None:
        return None
    rows = [[f"{x['gamma']:g}", fmt(x["delta"]), fmt(x["kl"], ".4f"), fmt(x["power"]),
             "yes" if x["feasible"] else "infeasible"] for x in s["rows"]]  # fmt: skip
    return (f"Selection on {s['calibration_texts']} clean calibration texts: δ*(γ) for power "
            f"{s['target']} at n = {s['n']}, α = {s['alpha']:g}, and D(γ) = mean KL at δ*",
            ["γ", "δ*", "KL at δ*", "predicted power", "feasible"], rows)  # fmt: skip


def _students_table(r: ProvenanceReport) -> Table | None:
    if not r.matched:
        return None
    pairs = dict(r.pairs)
    rows = []
    for m in r.matched:
        if m.method != "adfp":
            continue
        kgw = next(x for x in r.matched if (x.arch, x.epoch, x.test, x.metric, x.kl) ==
                   (m.arch, m.epoch, m.test, m.metric, m.kl) and x.method == "kgw")  # fmt: skip
        label = f"{m.arch} e{m.epoch} {m.test} {m.metric} KL={m.kl:g}"
        pe = pairs.get(label)
        diff = "not tested" if pe is None or pe.test is None else (
            f"{pe.test.estimate:+.3f} " + ("[" + f"{pe.test.low:+.3f}, {pe.test.high:+.3f}]"
                                           if not math.isnan(pe.test.low) else
                                           f"(no 95% interval at n = {pe.test.n})"))  # fmt: skip
        rows.append([m.arch, str(m.epoch), m.test.replace("_", " "),
                     "v̄ − γ" if m.metric == "excess" else "−log10 p", f"{m.kl:g}",
                     f"{kgw.interval.text('.3f')} ({kgw.seeds_reached})",
                     f"{m.interval.text('.3f')} ({m.seeds_reached})", diff])  # fmt: skip
    return ("Student detection at matched KL (linear in log δ or log λ between the sweep's "
            "points): mean over seeds with t 95%, kept to the metric's support (−log10 p: "
            "on the log scale of the mean, never below 0; v̄ − γ: clipped to [−γ, 1 − γ]; "
            "seeds reaching that KL in brackets); "
            "ADFP − KGW paired by seed, exact sign-flip (no interval below 6 seeds)",
            ["student", "epochs", "test", "metric", "KL", "KGW", "ADFP", "ADFP − KGW"],
            rows)  # fmt: skip


def _runs_table(r: ProvenanceReport) -> Table | None:
    if not r.runs:
        return None
    rows = []
    for run in sorted(r.runs, key=lambda x: (x["arch"], x["method"], x["strength"], x["seed"])):
        t = run["traces"]
        for epoch, res in sorted(run["epochs"].items(), key=lambda kv: int(kv[0])):
            o, c, rd = res["open_supervised"], res["closed_supervised"], res["reading_supervised"]
            rows.append([run["arch"], run["method"], f"{run['strength']:g}", str(run["seed"]),
                         epoch, f"{t['kl']:.4f}", f"{t['source_nll']:.3f}",
                         f"{t['error_rate']:.4f}", f"{t['teacher_perplexity']:.3f}",
                         f"{o['excess']:+.4f}", f"{o['neg_log10_p']:.2f}",
                         f"{res['open_unsupervised']['neg_log10_p']:.2f}",
                         f"{-math.log10(max(c['p_exact'], 1e-300)):.2f}",
                         f"{rd['neg_log10_p']:.2f}"])  # fmt: skip
    return ("Every student: trace distortion (exact KL, source NLL, off-support rate, perplexity "
            "under the clean teacher) and −log10 p per test",
            ["student", "method", "strength", "seed", "epochs", "KL", "source NLL", "off-support",
             "teacher ppl", "open v̄−γ", "open sup.", "open unsup.", "closed (exact)",
             "reading"], rows)  # fmt: skip


def _counts_table(r: ProvenanceReport) -> Table:
    rows = [[task, str(n), str(n - bad), str(bad)] for task, n, bad in r.counts]
    return ("Runs per task (an errored run is left out of every figure and counted here)",
            ["task", "runs", "finished", "errored"], rows)  # fmt: skip


def _verdict(check: Check) -> str:
    if not check.gate:
        return "reported, whichever way it came out"
    return {True: "PASS", False: "FAIL", None: "not run"}[check.passed]


def view(report: ProvenanceReport) -> SectionView:
    """Tables, checks, claims and plots of one preset."""
    parts = (_counts_table(report), _fpr_table(report), _power_table(report),
             _selection_table(report), _students_table(report), _runs_table(report))  # fmt: skip
    tables = [t for t in parts if t]
    checks = [f"Check {c.number} ({'gate' if c.gate else 'reported'}): "
              f"{_verdict(c)} — {c.text}"
              for c in report.checks]  # fmt: skip
    plots = []
    if report.cells:
        plots.append(Plot("Power against n per (γ, δ): measured with Wilson intervals, the "
                          "conditional model's prediction as lines",
                          lambda stem: plot_power(report, Path(stem))))  # fmt: skip
        plots.append(Plot("Power at n = 100 against mean KL: measured grid points, the "
                          "calibration model's curves, the selected point",
                          lambda stem: plot_pareto(report, Path(stem))))  # fmt: skip
    if report.matched:
        plots.append(Plot("Student detection at matched KL: −log10 p and v̄ − γ, KGW and ADFP, "
                          "mean over seeds with t intervals",
                          lambda stem: plot_students(report, Path(stem))))  # fmt: skip
    return SectionView(
        heading=report.heading,
        tables=tuple(tables),
        notes_caption="The spec's five checks, then one line per paper claim",
        notes=tuple(checks) + report.claims,
        plots=tuple(plots),
    )


SECTION = ReportSection("provenance: watermark power and distillation fingerprints",
                        "provenance", build_reports, view)  # fmt: skip
