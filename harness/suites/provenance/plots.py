"""The provenance section's plots: power curves with the model, the Pareto front, students."""

from __future__ import annotations

from pathlib import Path

from harness.sections import pyplot, save_figure
from harness.suites.provenance.results import ProvenanceReport, rate_interval


def plot_power(report: ProvenanceReport, stem: Path) -> list[str]:
    """One panel per γ: measured power against n (Wilson bars), predicted as lines."""
    plt = pyplot()
    gammas = sorted({c["gamma"] for c in report.cells})
    fig, axes = plt.subplots(1, len(gammas), figsize=(4.4 * len(gammas), 3.4), squeeze=False)
    for ax, gamma in zip(axes[0], gammas, strict=True):
        for i, c in enumerate(sorted((c for c in report.cells if c["gamma"] == gamma),
                                     key=lambda c: c["delta"])):  # fmt: skip
            pts = [n for n in c["cells"] if n["texts"]]
            ns = [n["n"] for n in pts]
            cis = [rate_interval(n["detected"], n["texts"]) for n in pts]
            # Wilson bounds can sit a rounding error inside the estimate at 0 or 1: clip at 0
            err = [[max(0.0, ci.estimate - ci.low) for ci in cis],
                   [max(0.0, ci.high - ci.estimate) for ci in cis]]  # fmt: skip
            colour = f"C{i}"
            ax.errorbar(ns, [ci.estimate for ci in cis], yerr=err, fmt="o", color=colour,
                        capsize=3, label=f"δ={c['delta']:g} measured")  # fmt: skip
            ax.plot(ns, [n["predicted"] for n in pts], "-", color=colour, alpha=0.8)
            ax.plot(ns, [n["predicted_key_averaged"] for n in pts], ":", color=colour, alpha=0.6)
        ax.set_xscale("log")
        ns_all = sorted({n["n"] for c in report.cells for n in c["cells"]})
        ax.set_xticks(ns_all, [str(n) for n in ns_all])
        ax.minorticks_off()
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("scored tokens n")
        ax.set_ylabel("power at α = 1e-3")
        ax.set_title(f"γ = {gamma:g} (line: model; dotted: key-avg p̄)")
        ax.legend(fontsize=7)
    fig.suptitle(f"provenance {report.preset}: power, measured and predicted")
    fig.tight_layout()
    return save_figure(fig, stem)


def plot_pareto(report: ProvenanceReport, stem: Path) -> list[str]:
    """Measured (KL, power at n = 100) per grid cell, predicted curves, the selected point."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    gammas = sorted({c["gamma"] for c in report.cells})
    sel = report.selection
    for i, gamma in enumerate(gammas):
        pts = sorted(((c["kl"], n["power"]) for c in report.cells if c["gamma"] == gamma
                      for n in c["cells"] if n["n"] == 100 and n["texts"]))  # fmt: skip
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", color=f"C{i}",
                label=f"γ={gamma:g} measured")  # fmt: skip
        curve = (sel or {}).get("predicted_curves", {}).get(str(gamma))
        if curve:
            ax.plot([p["kl"] for p in curve], [p["power"] for p in curve], "-", color=f"C{i}",
                    alpha=0.6)  # fmt: skip
    if sel and "chosen" in sel:
        ch = sel["chosen"]
        ax.plot([ch["kl"]], [ch["measured"]["power"]], "k*", markersize=14,
                label=f"selected γ={ch['gamma']:g}, δ={ch['delta']:.2f}")  # fmt: skip
        ax.axhline(sel["target"], color="grey", linestyle=":", linewidth=0.8)
    ax.set_xscale("log")
    ticks = [0.01, 0.03, 0.1, 0.3, 1.0]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("mean KL(p_wm ‖ p) per token, nats")
    ax.set_ylabel("power at n = 100, α = 1e-3")
    ax.set_title(f"provenance {report.preset}: power–distortion")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, stem)


def plot_students(report: ProvenanceReport, stem: Path) -> list[str]:
    """−log10 p and v̄ − γ (open, supervised) at matched KL, per student and epoch count."""
    plt = pyplot()
    groups = sorted({(m.arch, m.epoch) for m in report.matched})
    fig, axes = plt.subplots(2, len(groups), figsize=(3.6 * len(groups), 6.0), squeeze=False)
    for col, (arch, epoch) in enumerate(groups):
        for row, metric in enumerate(("neg_log10_p", "excess")):
            ax = axes[row][col]
            for j, method in enumerate(("kgw", "adfp")):
                rows = sorted((m for m in report.matched if (m.arch, m.epoch, m.metric,
                               m.method, m.test) == (arch, epoch, metric, method,
                                                     "open_supervised")),
                              key=lambda m: m.kl)  # fmt: skip
                xs = [m.kl * (0.97 if j == 0 else 1.03) for m in rows]
                ys = [m.interval.estimate for m in rows]
                lo = [max(0.0, m.interval.estimate - m.interval.low)
                      if m.interval.estimable else 0.0 for m in rows]  # fmt: skip
                hi = [max(0.0, m.interval.high - m.interval.estimate)
                      if m.interval.estimable else 0.0 for m in rows]  # fmt: skip
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", capsize=3, label=method.upper())
            kls = sorted({m.kl for m in report.matched})
            ax.set_xticks(kls, [f"{k:g}" for k in kls])
            ax.set_xlabel("matched KL, nats/token")
            ax.set_ylabel("−log10 p" if metric == "neg_log10_p" else "v̄ − γ")
            ax.set_title(f"{arch}, {epoch} epoch(s)")
            if metric == "neg_log10_p":
                ax.axhline(2.0, color="grey", linestyle=":", linewidth=0.8)
            ax.legend(fontsize=7)
    fig.suptitle(f"provenance {report.preset}: students, open mode, supervised")
    fig.tight_layout()
    return save_figure(fig, stem)
