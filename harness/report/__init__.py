"""The public face of harness.report.

Everything other packages use is named here (`__all__`); the modules behind it are private
(`_name.py`) and nothing outside this package imports them (tests/test_layout.py). Names load on
first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.report._budgets import CostReport, group_cost_report
    from harness.report._cost import TOKEN_KINDS, CostRow, cost_row, money
    from harness.report._data import build_report
    from harness.report._export import eval_json
    from harness.report._frontier import Frontier
    from harness.report._render import write_report

# each public name and the private module that defines it
_HOME = {
    "CostReport": "_budgets",
    "CostRow": "_cost",
    "Frontier": "_frontier",
    "TOKEN_KINDS": "_cost",
    "build_report": "_data",
    "cost_row": "_cost",
    "eval_json": "_export",
    "group_cost_report": "_budgets",
    "money": "_cost",
    "write_report": "_render",
}

__all__ = [
    "CostReport",
    "CostRow",
    "Frontier",
    "TOKEN_KINDS",
    "build_report",
    "cost_row",
    "eval_json",
    "group_cost_report",
    "money",
    "write_report",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
