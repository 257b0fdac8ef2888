"""Worker entry point: one sample's run by its kind (a worker or Ray task imports only this).

It lives apart from the tasks so that a worker imports torch and numpy, not inspect.
"""

from __future__ import annotations

from typing import Any

KINDS = ("fpr", "cell", "select", "distill")


def run_kind(kind: str, params: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Run one sample of the detect, select or distill task; a JSON-ready result."""
    if kind == "fpr":
        from harness.suites.provenance.detection_runs import fpr_run

        return fpr_run(settings)
    if kind == "cell":
        from harness.suites.provenance.detection_runs import power_cell

        return power_cell(settings, float(params["gamma"]), float(params["delta"]))
    if kind == "select":
        from harness.suites.provenance.detection_runs import selection_run

        return selection_run(settings)
    if kind == "distill":
        from harness.suites.provenance.distill_runs import distill_run

        return distill_run(params["method"], float(params["strength"]), int(params["seed"]),
                           params["arch"], settings)  # fmt: skip
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
