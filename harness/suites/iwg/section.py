"""IWG's report section, declared in the catalog (`Suite.section`).

One result per group of comparable logs: the metrics, paired comparisons, the entropy-dynamics
fit (placeholder model (ours), not the paper's equation) with its robust/oscillating rule, and
a plot of H(t) with the fit beside a goodness-of-fit panel.
"""

from __future__ import annotations

from harness.sections import Figure, ReportSection, section_view
from harness.suites.iwg.results import build_reports, notes, plot_curves, tables

view = section_view(
    heading=lambda report: report.heading,
    tables=tables,
    notes_caption="What the tables rest on",
    notes=notes,
    figures=[Figure("IWG: mean scheduling entropy per round with the placeholder fit (ours, not "
                    "the paper's equation) per orchestrator, and observed against fitted entropy "
                    "steps", plot_curves)],
)  # fmt: skip
SECTION = ReportSection("iwg: orchestrators and entropy dynamics", "iwg", build_reports, view)
