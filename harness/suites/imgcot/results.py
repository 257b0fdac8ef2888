"""ImgCoT's report (reconstructed): accuracy and tokens per arm, the spec's direction pairs, checks.

For each `imgcot` log:
- one row per arm: seeds, errored runs, test accuracy over seeds (the comparison engine's
  interval for the suite's design: unit seed, accuracy bounded in [0, 1]), mean tokens spent
  before the answer and the arm's nominal budget;
- the per-seed accuracies, so every paired claim can be checked by eye;
- the spec's direction pairs (specs/imgcot.md §5 checks 4 and 5), one Holm family, from the
  engine (`harness.stats._compare.pair_family`): below 20 seeds the exact sign-flip p over all
  2^n flips and the interval inverting it (none below 6 seeds: "not estimable"). The spec also
  asks for a paired t-test and Wilcoxon; the engine gives the sign-flip test instead, and no
  suite writes its own test;
- the checks, each a line saying met, NOT met or not run: stage-1 learning (3), the image target
  against the text target (4), Loose ImgCoT against ImgCoT, random and the token budget (5), and
  the bounds no-CoT ≤ latent arms ≤ explicit CoT + 0.02 (6), with the encoder-input identity of
  check 2. A check that fails is reported as failed, never tuned away.

An errored run counts as the design says (the worst accuracy, 0) and is counted in its row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.logs import load_training_runs
from harness.sections import pyplot
from harness.stats import Interval, PairEstimate, estimate, pair_family
from harness.suites.catalog import suite_of_task
from harness.suites.imgcot.runs import ARMS, LATENT_ARMS

# unit: seed; accuracy in [0, 1]; the spec's pairs
DESIGN = suite_of_task(f"{__package__}.task:imgcot").design
PAIRS = (
    ("imgcot", "text_latents"),  # check 4: the image target
    ("loose_lowest", "imgcot"),  # check 5: the kept low-likelihood step
    ("loose_lowest", "loose_random"),  # check 5: the rule against a random step
    ("loose_lowest", "loose_highest"),  # the rule against the opposite rule
)


@dataclass(frozen=True)
class ImgArm:
    """One arm of one log."""

    arm: str  # one of runs.ARMS
    seeds: int  # runs, errored ones included
    errors: int  # runs that errored (scored as the design's worst value)
    accuracy: Interval  # test accuracy over seeds, the engine's interval
    tokens: float  # mean tokens before the answer, over the runs that finished
    budget: float  # nominal tokens: k + kept text (17 for explicit CoT, 0 for no-CoT)
    per_seed: tuple[tuple[int, float], ...]  # (seed, accuracy), errored runs as scored


@dataclass(frozen=True)
class ImgReport:
    """One imgcot log's tables and checks."""

    label: str  # task and log file
    arms: tuple[ImgArm, ...]  # in runs.ARMS order
    pairs: tuple[PairEstimate, ...]  # the spec's direction pairs, one Holm family
    checks: tuple[str, ...]  # the spec's checks, one line each


def load_imgcot_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample runs of an imgcot log, read by `harness.logs`; an errored one has `error`."""
    return [{**r, "seed": int(r["seed"])} for r in load_training_runs(location, ("arm", "seed"))]


def _score(run: dict[str, Any]) -> float:
    if "error" in run:
        value = DESIGN.error_value()
        return math.nan if value is None else float(value)
    return float(run["score"])


def build_imgcot_report(label: str, runs: list[dict[str, Any]]) -> ImgReport:
    """Arms, the spec's pairs from the engine, and the checks."""
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(runs, key=lambda r: (ARMS.index(r["arm"]), r["seed"])):
        by_arm.setdefault(r["arm"], []).append(r)
    arms, scores = [], {}
    for name, rs in by_arm.items():
        scored = [(r["seed"], _score(r)) for r in rs if not math.isnan(_score(r))]
        ok = [r for r in rs if "error" not in r]
        scores[name] = {str(seed): v for seed, v in scored}
        arms.append(ImgArm(name, len(rs), len(rs) - len(ok),
                           estimate(DESIGN, [v for _, v in scored]),
                           float(np.mean([r["tokens"] for r in ok])) if ok else math.nan,
                           float(np.mean([r["budget"] for r in ok])) if ok else math.nan,
                           tuple(scored)))  # fmt: skip
    family = [(a, b, scores[a], scores[b]) for a, b in PAIRS if a in scores and b in scores]
    pairs = pair_family(DESIGN, family)
    return ImgReport(label, tuple(arms), pairs, tuple(_checks(arms, pairs, by_arm)))


def _diff(p: PairEstimate) -> str:
    t = p.test
    if t is None:
        return f"{p.arm_a} − {p.arm_b}: {p.note or 'not tested'}"
    ci = (f"[{t.low:+.3f}, {t.high:+.3f}] ({100 * t.confidence:.1f}%)" if not math.isnan(t.low)
          else f"(no 95% interval at n = {t.n})")  # fmt: skip
    p_raw = "not tested" if math.isnan(t.p_value) else f"{t.p_value:.3g}"
    p_holm = "not tested" if math.isnan(p.p_holm) else f"{p.p_holm:.3g}"
    return f"{p.arm_a} − {p.arm_b} {t.estimate:+.3f} {ci}, sign-flip p {p_raw}, Holm p {p_holm}"


def _per_seed_diffs(arms: dict[str, ImgArm], a: str, b: str) -> list[float]:
    x, y = dict(arms[a].per_seed), dict(arms[b].per_seed)
    return [x[s] - y[s] for s in sorted(set(x) & set(y))]


def _checks(arms_list: list[ImgArm], pairs: tuple[PairEstimate, ...],
            by_arm: dict[str, list[dict[str, Any]]]) -> list[str]:  # fmt: skip
    arms = {a.arm: a for a in arms_list}
    pair = {(p.arm_a, p.arm_b): p for p in pairs}
    out = []
    text_runs = [r for r in by_arm.get("text_latents", []) if "error" not in r]
    img_runs = [r for r in by_arm.get("imgcot", []) if "error" not in r]
    if text_runs:
        accs = [r["text_recon_acc"] for r in text_runs]
        ok = min(accs) >= 0.95
        listed = ", ".join(f"{a:.3f}" for a in accs)
        out.append(f"Check 3, text autoencoder token accuracy ≥ 0.95 on every seed: "
                   f"{'met' if ok else 'NOT met'} ({listed})")  # fmt: skip
    if img_runs:
        gaps = [(r["image_bce"], r["mean_image_bce"]) for r in img_runs]
        ok = all(b < m for b, m in gaps)
        out.append("Check 3, image BCE below the mean image's on every seed: "
                   f"{'met' if ok else 'NOT met'} ("
                   + ", ".join(f"{b:.4f} vs {m:.4f}" for b, m in gaps) + ")")  # fmt: skip
    if text_runs and img_runs:
        sha = {r["seed"]: r["encoder_input_sha"] for r in text_runs}
        same = all(sha.get(r["seed"]) == r["encoder_input_sha"] for r in img_runs
                   if r["seed"] in sha)  # fmt: skip
        out.append(f"Check 2, text and image autoencoders see byte-identical encoder inputs: "
                   f"{'met' if same else 'NOT met'} (sha256 per seed)")  # fmt: skip
    p4 = pair.get(("imgcot", "text_latents"))
    if p4 is not None:
        d = _per_seed_diffs(arms, "imgcot", "text_latents")
        way = "same sign as the paper" if p4.test and p4.test.estimate > 0 else "NOT above 0"
        out.append(f"Check 4 (paper: ImgCoT − text-target > 0; not a hard gate): {_diff(p4)}; "
                   f"{way}; per seed {', '.join(f'{v:+.3f}' for v in d)}")  # fmt: skip
    p5 = pair.get(("loose_lowest", "imgcot"))
    if p5 is not None:
        d = _per_seed_diffs(arms, "loose_lowest", "imgcot")
        above = sum(v > 0 for v in d)
        need = math.ceil(0.8 * len(d))
        out.append(
            f"Check 5, Loose (lowest ℓ) − ImgCoT > 0 in ≥ {need} of {len(d)} seeds: "
            f"{'met' if above >= need else 'NOT met'} ({above} of {len(d)}; {_diff(p5)})"
        )
    p5r = pair.get(("loose_lowest", "loose_random"))
    if p5r is not None and p5r.test is not None:
        ok = p5r.test.estimate >= 0
        out.append(
            f"Check 5, Loose (lowest ℓ) ≥ Loose (random), paired: "
            f"{'met' if ok else 'NOT met'} ({_diff(p5r)})"
        )
    loose = arms.get("loose_lowest")
    cot = arms.get("explicit_cot")
    if loose is not None and cot is not None:
        ok = loose.tokens < cot.tokens
        out.append(f"Check 5, Loose ImgCoT's tokens strictly below explicit CoT's: "
                   f"{'met' if ok else 'NOT met'} ({loose.tokens:.2f} vs {cot.tokens:.2f} mean "
                   f"tokens at test; nominal {loose.budget:g} vs {cot.budget:g})")  # fmt: skip
    nocot = arms.get("no_cot")
    latent = [arms[a] for a in LATENT_ARMS if a in arms]
    if nocot is not None and cot is not None and latent:
        low, high = nocot.accuracy.estimate, cot.accuracy.estimate + 0.02
        bad = [a.arm for a in latent if not low <= a.accuracy.estimate <= high]
        out.append(f"Check 6, no-CoT ({low:.3f}) ≤ every latent arm ≤ explicit CoT + 0.02 "
                   f"({high:.3f}) in the seed mean: {'met' if not bad else 'NOT met'}"
                   + (f" (outside: {', '.join(bad)})" if bad else ""))  # fmt: skip
    return out


def imgcot_tables(report: ImgReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """Caption, header and rows of the arm, per-seed and pair tables."""
    seeds = sorted({s for a in report.arms for s, _ in a.per_seed})
    arm_rows = [[a.arm, str(a.seeds), str(a.errors), a.accuracy.text(".3f"),
                 f"{a.tokens:.2f}", f"{a.budget:g}"] for a in report.arms]  # fmt: skip
    seed_rows = [[a.arm, *(f"{dict(a.per_seed)[s]:.3f}" if s in dict(a.per_seed) else "–"
                           for s in seeds)] for a in report.arms]  # fmt: skip
    pair_rows = []
    for p in report.pairs:
        t = p.test
        if t is None:
            pair_rows.append([f"{p.arm_a} − {p.arm_b}", p.note, "not tested", "not tested"])
            continue
        ci = Interval(t.estimate, t.low, t.high, t.confidence, t.method, t.n)
        cell = f"{ci.text('+.3f')} ({100 * t.confidence:.1f}%)" if ci.estimable else ci.text("+.3f")
        pv = "not tested" if math.isnan(t.p_value) else f"{t.p_value:.3g}"
        ph = "not tested" if math.isnan(p.p_holm) else f"{p.p_holm:.3g}"
        pair_rows.append([f"{p.arm_a} − {p.arm_b}", cell, pv, ph])
    return [
        (f"ImgCoT (reconstructed), {report.label}: test accuracy per arm over seeds (the "
         "engine's interval; an errored run counts as 0 and is counted), mean tokens before the "
         "answer at test, and the nominal budget",
         ["arm", "seeds", "errored", "accuracy", "tokens", "budget"], arm_rows),
        (f"ImgCoT (reconstructed), {report.label}: test accuracy per seed",
         ["arm", *(f"seed {s}" for s in seeds)], seed_rows),
        (f"ImgCoT (reconstructed), {report.label}: the spec's direction pairs on the same seeds "
         "(exact sign-flip interval at the level it attains, not estimable below 6 seeds; exact "
         "sign-flip p over all 2^n flips; Holm over these pairs)",
         ["pair", "a − b (sign-flip)", "p (sign-flip)", "p (Holm)"], pair_rows),
    ]  # fmt: skip


def plot_accuracy_tokens(report: ImgReport, path: Path) -> str:
    """Accuracy against tokens spent before the answer: each arm's seeds and mean with interval."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    colours = plt.get_cmap("tab10")
    for i, a in enumerate(report.arms):
        s = a.accuracy
        jitter = 0.12 * (i - len(report.arms) / 2)
        ax.scatter([a.tokens + jitter] * len(a.per_seed), [v for _, v in a.per_seed], s=10,
                   alpha=0.35, color=colours(i))  # fmt: skip
        err = [[s.estimate - s.low], [s.high - s.estimate]] if s.estimable else None
        ax.errorbar([a.tokens + jitter], [s.estimate], yerr=err, fmt="o", capsize=3,
                    color=colours(i), label=a.arm)  # fmt: skip
    ax.set_xlabel("tokens before the answer (latents + emitted text), mean at test")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title("ImgCoT (reconstructed): accuracy against tokens; dots are seeds, bars the "
                 "engine's interval", fontsize=8)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
