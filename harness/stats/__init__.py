"""The public face of harness.stats.

The public face (docs/layout.md): `__all__` names what other packages use, from private modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.stats._active import EXPLORE, ActiveMeanCS, selection
    from harness.stats._agreement import fleiss_kappa
    from harness.stats._asymptotic_cs import Choice, choose_cs
    from harness.stats._auroc import auroc, delong, delong_paired
    from harness.stats._cluster_quantile import cluster_quantile_interval
    from harness.stats._compare import (
        Comparison,
        PairEstimate,
        Tally,
        clean_json,
        compare,
        estimate,
        holm_adjusted,
        pair_family,
    )
    from harness.stats._design import POSITIVE, Design, rejects
    from harness.stats._exact import median_interval
    from harness.stats._intervals import Interval, ratio_interval, wilson
    from harness.stats._judge_calibration import (
        CalibrationError,
        allocate_authors,
        allocate_optimal,
        regime_ratio,
        rogan_gladen,
        rogan_gladen_from_labels,
    )
    from harness.stats._paired import PairedTest
    from harness.stats._pass_at_k import pass_at_k
    from harness.stats._ppi import ppi_mean
    from harness.stats._ratio import ratio_of_means
    from harness.stats._sequential import (
        BettingCS,
        bonferroni_alpha,
        bonferroni_level,
        sequential_holm,
    )

# each public name and the private module that defines it
_HOME = {
    "ActiveMeanCS": "_active",
    "BettingCS": "_sequential",
    "CalibrationError": "_judge_calibration",
    "Choice": "_asymptotic_cs",
    "Comparison": "_compare",
    "Design": "_design",
    "EXPLORE": "_active",
    "Interval": "_intervals",
    "POSITIVE": "_design",
    "PairEstimate": "_compare",
    "PairedTest": "_paired",
    "Tally": "_compare",
    "allocate_authors": "_judge_calibration",
    "allocate_optimal": "_judge_calibration",
    "auroc": "_auroc",
    "bonferroni_alpha": "_sequential",
    "bonferroni_level": "_sequential",
    "choose_cs": "_asymptotic_cs",
    "clean_json": "_compare",
    "cluster_quantile_interval": "_cluster_quantile",
    "compare": "_compare",
    "delong": "_auroc",
    "delong_paired": "_auroc",
    "estimate": "_compare",
    "fleiss_kappa": "_agreement",
    "holm_adjusted": "_compare",
    "median_interval": "_exact",
    "pair_family": "_compare",
    "pass_at_k": "_pass_at_k",
    "ppi_mean": "_ppi",
    "ratio_interval": "_intervals",
    "ratio_of_means": "_ratio",
    "regime_ratio": "_judge_calibration",
    "rejects": "_design",
    "rogan_gladen": "_judge_calibration",
    "rogan_gladen_from_labels": "_judge_calibration",
    "selection": "_active",
    "sequential_holm": "_sequential",
    "wilson": "_intervals",
}

__all__ = [
    "ActiveMeanCS",
    "BettingCS",
    "CalibrationError",
    "Choice",
    "Comparison",
    "Design",
    "EXPLORE",
    "Interval",
    "POSITIVE",
    "PairEstimate",
    "PairedTest",
    "Tally",
    "allocate_authors",
    "allocate_optimal",
    "auroc",
    "bonferroni_alpha",
    "bonferroni_level",
    "choose_cs",
    "clean_json",
    "cluster_quantile_interval",
    "compare",
    "delong",
    "delong_paired",
    "estimate",
    "fleiss_kappa",
    "holm_adjusted",
    "median_interval",
    "pair_family",
    "pass_at_k",
    "ppi_mean",
    "ratio_interval",
    "ratio_of_means",
    "regime_ratio",
    "rejects",
    "rogan_gladen",
    "rogan_gladen_from_labels",
    "selection",
    "sequential_holm",
    "wilson",
]


# as harness.registry.lazy_face does for the other faces: stats sits below the registry
def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
