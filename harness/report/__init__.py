"""The public face of harness.report.

The public face (docs/layout.md): `__all__` names what other packages use, from private modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.registry import lazy_face

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


__getattr__, __dir__ = lazy_face(__name__, _HOME)
