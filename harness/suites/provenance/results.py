"""The provenance part of `harness report`: the spec's five checks, tables and claims.

One result per preset, made from the newest detect, select and distill logs of that preset
(a check whose log is missing says so). Numbers are read from the runs' metadata; intervals
come from the comparison engine (`harness.stats._compare`): Wilson for a false-positive rate or
a power (binary per text), t over seeds for student detection at matched KL, kept to each
metric's support (−log10 p >= 0: on the log scale; v̄ − γ in [−γ, 1 − γ]: clipped; below 20
seeds the engine's rules apply, and ADFP - KGW is the exact sign-flip test, "not estimable"
where the seeds are too few for 95%).

Checks (specs/provenance.md §5): 1-4 are gates, 5 is reported whichever way it comes out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.logs import LogRecord, load_training_runs
from harness.sections import log_heading, preset_of
from harness.stats import POSITIVE, Design, Interval, estimate, pair_family
from harness.suites.catalog import suite_of_task

# unit: seed; scores unbounded (-log10 p, excess)
DESIGN = suite_of_task(f"{__package__}.task:provenance_detect").design
PER_TEXT = dataclasses.replace(DESIGN, unit="item", score="binary")  # detected or not, per text
# −log10 p of a p in (0, 1] is >= 0: its mean over seeds gets the engine's t interval on the log
# scale, which never passes 0 (issue 40: a t interval at 2 seeds printed [−25.1, 30.3])
NEG_LOG10_P = dataclasses.replace(DESIGN, bounds=POSITIVE, direction="higher")
FPR_CAPS = {"0.01": 21, "0.05": 73}  # N = 1,000: exceeded with probability < 1e-3 at the rate
SPEC_GAMMAS = (0.25, 0.5)  # check 2's grid
METRICS = ("excess", "neg_log10_p")
TESTS = ("open_supervised", "open_unsupervised")


@dataclass(frozen=True)
class Check:
    """One acceptance check: its number, whether it is a gate, its outcome and its figures."""

    number: int
    gate: bool
    passed: bool | None  # None: not run (its log is missing) or not a gate
    text: str


@dataclass(frozen=True)
class MatchedRow:
    """One method's detection at one matched KL, over seeds."""

    arch: str
    epoch: int
    test: str
    metric: str
    kl: float
    method: str
    interval: Interval  # mean over seeds, t 95% (engine); nan where a seed cannot reach the KL
    seeds_reached: int


@dataclass(frozen=True)
class ProvenanceReport:
    """The provenance section of one preset."""

    heading: str
    preset: str
    counts: tuple[tuple[str, int, int], ...]  # (task, runs, errored)
    fpr: dict[str, Any] | None
    cells: tuple[dict[str, Any], ...]
    selection: dict[str, Any] | None
    runs: tuple[dict[str, Any], ...]
    matched: tuple[MatchedRow, ...]
    pairs: tuple[tuple[str, Any], ...]  # (label, PairEstimate) ADFP - KGW at matched KL
    checks: tuple[Check, ...]
    claims: tuple[str, ...]


def _runs(record: LogRecord) -> list[dict[str, Any]]:
    return load_training_runs(record.path, ("kind", "params"))


def _newest(records: list[LogRecord], suffix: str) -> LogRecord | None:
    mine = [r for r in records if r.task.endswith(suffix)]
    return max(mine, key=lambda r: r.created) if mine else None


def build_reports(records: list[LogRecord]) -> list[ProvenanceReport]:
    """One report per preset among the logs."""
    by_preset: dict[str, list[LogRecord]] = {}
    for r in records:
        by_preset.setdefault(preset_of(r) or "unknown", []).append(r)
    return [build_report(preset, recs) for preset, recs in sorted(by_preset.items())]


def build_report(preset: str, records: list[LogRecord]) -> ProvenanceReport:
    """The checks of one preset from its newest detect, select and distill logs."""
    logs = {name: _newest(records, f"_{name}") for name in ("detect", "select", "distill")}
    runs = {name: _runs(rec) if rec else [] for name, rec in logs.items()}
    distill = logs["distill"]
    settings = (distill.metadata.get("settings") or {}) if distill else {}
    names = [log_heading(r) for r in logs.values() if r is not None]
    return report_from_runs(preset, "; ".join(names), runs, settings)


def report_from_runs(
    preset: str, heading: str, runs: dict[str, list[dict[str, Any]]], settings: dict[str, Any]
) -> ProvenanceReport:
    """The report from the runs of each task (a run with "error" is counted, not used)."""
    ok = {name: [r for r in rs if "error" not in r] for name, rs in runs.items()}
    counts = tuple((name, len(rs), len(rs) - len(ok[name])) for name, rs in runs.items())
    fpr = next((r for r in ok.get("detect", []) if r.get("kind") == "fpr"), None)
    cells = tuple(r for r in ok.get("detect", []) if r.get("kind") == "cell")
    selection = ok["select"][0] if ok.get("select") else None
    students = tuple(ok.get("distill", []))
    targets = settings.get("kl_targets", [0.02, 0.05, 0.1])
    matched, pairs = _matched(students, targets, settings.get("gamma"))
    checks = (
        _check1(fpr),
        _check2(cells),
        _check3(selection, cells),
        _check4(students),
        _check5(matched, pairs),
    )
    return ProvenanceReport(f"preset {preset}: {heading}", preset, counts, fpr, cells, selection,
                            students, tuple(matched), tuple(pairs), checks,
                            _claims(checks))  # fmt: skip


def metric_design(metric: str, gamma: float | None) -> Design:
    """The design of a student-detection metric: its support and direction.

    −log10 p lies in [0, inf); v̄ − γ, a green fraction less γ, in [−γ, 1 − γ] (in [−1, 1]
    where the runs do not record γ), a bounded score whose t interval the engine clips.
    """
    if metric == "neg_log10_p":
        return NEG_LOG10_P
    low, high = (-1.0, 1.0) if gamma is None else (-float(gamma), 1.0 - float(gamma))
    return dataclasses.replace(DESIGN, score="bounded", bounds=(low, high), direction="higher")


def rate_interval(hits: int, n: int) -> Interval:
    """A rate over n texts with its Wilson interval (the engine's binary estimate)."""
    return estimate(PER_TEXT, [1.0] * hits + [0.0] * (n - hits))


def _check1(fpr: dict[str, Any] | None) -> Check:
    if fpr is None:
        return Check(1, True, None, "FPR: not run (no detect log with its FPR run)")
    parts, ok = [], True
    for gamma, res in fpr["by_gamma"].items():
        fresh = res["fresh_key"]
        for alpha, cap in FPR_CAPS.items():
            hits = fresh["hits"][alpha]
            ok &= hits <= cap
            parts.append(f"γ={gamma} α={alpha}: {hits}/{fresh['texts']} hits (cap {cap})")
    low = fpr["low_diversity"]
    extra = (
        f"; report only, low-diversity text ({low['successors']} successors, {low['keys']} "
        f"fresh keys) at α=0.01: {low['dedup']['hits']['0.01']} hits with dedup, "
        f"{low['no_dedup']['hits']['0.01']} without"
    )
    return Check(1, True, ok, "FPR, fresh key per text, exact p, dedup: " + "; ".join(parts)
                 + extra)  # fmt: skip


def _spec_cells(cells: tuple[dict[str, Any], ...]) -> list[tuple[dict, dict]]:
    return [(c, n) for c in cells if c["gamma"] in SPEC_GAMMAS for n in c["cells"]
            if n["texts"] > 0]  # fmt: skip


def _check2(cells: tuple[dict[str, Any], ...]) -> Check:
    rows = _spec_cells(cells)
    if not rows:
        return Check(2, True, None, "power vs model: not run (no grid cells)")
    errors = [n["power"] - n["predicted"] for _, n in rows]
    within = [abs(e) <= 0.03 + 3 * n["se"] for e, (_, n) in zip(errors, rows, strict=True)]
    mean_err = float(np.mean(errors))
    bound_over = sum(n["predicted_kgw_bound"] > n["power"] + 3 * n["se"] for _, n in rows)
    key_avg = max(abs(n["power"] - n["predicted_key_averaged"]) for _, n in rows)
    no_corr = max(n["predicted_no_dedup_correction"] - n["power"] for _, n in rows)
    passed = all(within) and abs(mean_err) <= 0.02
    return Check(2, True, passed, (
        f"{sum(within)}/{len(rows)} cells within 0.03 + 3·SE of the conditional model; "
        f"largest |error| {max(abs(e) for e in errors):.3f}; mean signed error {mean_err:+.4f} "
        f"(gate ±0.02); report only: KGW-bound power above measured + 3·SE in {bound_over} "
        f"cells, key-averaged model's largest |error| {key_avg:.3f}, no dedup correction "
        f"over-predicts by up to {no_corr:+.3f}"))  # fmt: skip


def _check3(sel: dict[str, Any] | None, cells: tuple[dict[str, Any], ...]) -> Check:
    if sel is None:
        return Check(3, True, None, "selection: not run (no select log)")
    if "chosen" not in sel:
        return Check(3, True, False, "selection: no feasible γ on the grid")
    ch = sel["chosen"]
    m = ch["measured"]
    p_star, se, kl_star = m["power"], m["se"], ch["kl"]
    ok_power = p_star >= sel["target"] - 3 * se
    dominating = [
        f"γ={c['gamma']:g} δ={c['delta']:g} (power {n['power']:.3f}, KL {c['kl']:.4f})"
        for c in cells for n in c["cells"] if n["n"] == sel["n"]
        and n["power"] >= p_star + 3 * se and c["kl"] <= kl_star - 0.005
    ]  # fmt: skip
    text = (
        f"chose γ*={ch['gamma']:g}, δ*={ch['delta']:.3f} (predicted power {ch['power']:.3f}, "
        f"KL {ch['kl_predicted']:.4f}); measured power {p_star:.3f} ± {se:.3f} (SE) at n = "
        f"{sel['n']} (gate ≥ {sel['target'] - 3 * se:.3f}), measured KL {kl_star:.4f}; grid "
        f"points dominating it: {', '.join(dominating) if dominating else 'none'} of "
        f"{len(cells)}"
    )
    return Check(3, True, ok_power and not dominating and bool(cells), text)


def _last(run: dict[str, Any]) -> dict[str, Any]:
    return run["epochs"][max(run["epochs"], key=int)]


def _check4(runs: tuple[dict[str, Any], ...]) -> Check:
    kgw = [r for r in runs if r["method"] == "kgw" and r["strength"] == 2.0
           and r["arch"] == "transformer"]  # fmt: skip
    ctrl = [r for r in runs if r["method"] == "control" and r["arch"] == "transformer"]
    if not kgw or not ctrl:
        return Check(4, True, None, "student detection: not run (no KGW δ=2 or control runs)")
    p_kgw = [_last(r)["open_supervised"]["p_value"] for r in kgw]
    p_ctrl = [_last(r)["open_supervised"]["p_value"] for r in ctrl]
    fpr = next((r["fpr"] for r in ctrl if "fpr" in r), None)
    ok = all(p < 0.01 for p in p_kgw) and all(p >= 0.01 for p in p_ctrl)
    text = (f"KGW δ=2 students, open supervised, last epoch: p = "
            f"{', '.join(f'{p:.2g}' for p in p_kgw)}; controls: "
            f"{', '.join(f'{p:.2g}' for p in p_ctrl)}")  # fmt: skip
    if fpr is None:
        return Check(4, True, None, text + "; FPR sweeps not run")
    ok &= fpr["clean_hits"] <= 21 and fpr["other_hits"] <= 2
    text += (f"; control reading {fpr['clean_texts']} clean texts under {fpr['keys']} keys: "
             f"{fpr['clean_hits']} hits at 0.01 (cap 21); fingerprinted traces of "
             f"{fpr['other_keys']} other keys: {fpr['other_hits']} hits (cap 2)")  # fmt: skip
    return Check(4, True, ok, text)


def interpolate(points: list[tuple[float, float, float]], kl: float) -> float:
    """A metric at a KL, linear in log strength between the sweep's points (nan outside).

    points: (strength, KL, metric) of one method and seed.
    """
    pts = sorted(p for p in points if p[0] > 0)
    for (s0, k0, m0), (s1, k1, m1) in zip(pts, pts[1:], strict=False):
        if min(k0, k1) <= kl <= max(k0, k1) and k0 != k1:
            w = (kl - k0) / (k1 - k0)  # position between the two in KL
            log_s = (1 - w) * math.log(s0) + w * math.log(s1)
            u = (log_s - math.log(s0)) / (math.log(s1) - math.log(s0))
            return (1 - u) * m0 + u * m1
    return math.nan


def _matched(runs: tuple[dict[str, Any], ...], targets: list[float], gamma: float | None
             ) -> tuple[list[MatchedRow], list[tuple[str, Any]]]:  # fmt: skip
    rows: list[MatchedRow] = []
    pairs: list[tuple[str, Any]] = []
    archs = sorted({r["arch"] for r in runs})
    epochs = sorted({int(e) for r in runs for e in r["epochs"]})
    for arch in archs:
        for epoch in epochs:
            for test in TESTS:
                for metric in METRICS:
                    design = metric_design(metric, gamma)
                    family = []
                    for kl in targets:
                        by_method: dict[str, dict[str, float]] = {}
                        for method in ("kgw", "adfp"):
                            seeds: dict[str, list] = {}
                            for r in runs:
                                if r["arch"] != arch or r["method"] != method:
                                    continue
                                res = r["epochs"].get(str(epoch))
                                if res is None:
                                    continue
                                seeds.setdefault(str(r["seed"]), []).append(
                                    (r["strength"], r["traces"]["kl"], res[test][metric])
                                )
                            vals = {s: interpolate(p, kl) for s, p in seeds.items()}
                            reached = {s: v for s, v in vals.items() if not math.isnan(v)}
                            by_method[method] = reached
                            rows.append(MatchedRow(arch, epoch, test, metric, kl, method,
                                                   estimate(design, list(reached.values())),
                                                   len(reached)))  # fmt: skip
                        family.append((f"adfp@{kl:g}", f"kgw@{kl:g}", by_method["adfp"],
                                       by_method["kgw"]))  # fmt: skip
                    for (a, _, _, _), pe in zip(family, pair_family(design, family), strict=True):
                        pairs.append((f"{arch} e{epoch} {test} {metric} KL={a.split('@')[1]}",
                                      pe))  # fmt: skip
    return rows, pairs


def _check5(matched: list[MatchedRow], pairs: list[tuple[str, Any]]) -> Check:
    if not matched:
        return Check(5, False, None, "ADFP vs KGW: not run (no distill log)")
    lines = []
    for arch in sorted({m.arch for m in matched}):
        for epoch in sorted({m.epoch for m in matched}):
            sel = [m for m in matched if m.arch == arch and m.epoch == epoch
                   and m.test == "open_supervised" and m.metric == "neg_log10_p"]  # fmt: skip
            ahead = behind = level = 0
            for kl in sorted({m.kl for m in sel}):
                a = next(m for m in sel if m.kl == kl and m.method == "adfp").interval.estimate
                k = next(m for m in sel if m.kl == kl and m.method == "kgw").interval.estimate
                if math.isnan(a) or math.isnan(k):
                    continue
                ahead += a > k
                behind += a < k
                level += a == k
            lines.append(f"{arch}, {epoch} epoch(s): ADFP ahead at {ahead}, behind at {behind} "
                         f"of the matched KLs both reach")  # fmt: skip
    return Check(5, False, None, "−log10 p, open supervised, mean over seeds: " + "; ".join(lines))


def _claims(checks: tuple[Check, ...]) -> tuple[str, ...]:
    c = {ch.number: ch for ch in checks}

    def way(ch: Check) -> str:
        return {True: "holds here", False: "does not hold here", None: "not tested"}[ch.passed]

    return (
        f"(A) explicit power from (γ, δ) and length: the conditional model (ours) {way(c[2])}.",
        f"(A) the constrained choice lands on the power–distortion front (selection ours): "
        f"{way(c[3])}.",
        "KGW's z-test is anti-conservative at short lengths and repeated tuples must be scored "
        f"once (spec §3): the FPR check with the exact test and dedup {way(c[1])}; see the FPR "
        "table for the z-test and no-dedup rows.",
        f"(B) a student distilled from a fingerprinted teacher is detectable with a valid p: "
        f"{way(c[4])}.",
        "(B) ADFP is a Pareto improvement over KGW at matched distortion, also for an "
        f"unknown-architecture (GRU) student: {c[5].text}.",
    )


def fmt(value: float, spec: str = ".3f") -> str:
    """A number, or "–" for nan."""
    return (
        "–"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )
