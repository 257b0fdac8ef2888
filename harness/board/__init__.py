"""Boards: every model's score on every item, and sequential evaluation replayed on them.

Everything other packages use is named here (`__all__`); the modules behind it are private
(`_name.py`) and nothing outside this package imports them (tests/test_layout.py). Names load on
first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.board._add_model import add_model, fixed_srs_items
    from harness.board._export import board_from_logs
    from harness.board._replay import (
        MARGIN,
        SECONDS_LIMIT,
        ReplayResult,
        estimated_seconds,
        pair_list,
        replay,
    )
    from harness.board._table import Board, read_board, write_board

# each public name and the private module that defines it
_HOME = {
    "Board": "_table",
    "MARGIN": "_replay",
    "ReplayResult": "_replay",
    "SECONDS_LIMIT": "_replay",
    "add_model": "_add_model",
    "board_from_logs": "_export",
    "estimated_seconds": "_replay",
    "fixed_srs_items": "_add_model",
    "pair_list": "_replay",
    "read_board": "_table",
    "replay": "_replay",
    "write_board": "_table",
}

__all__ = [
    "Board",
    "MARGIN",
    "ReplayResult",
    "SECONDS_LIMIT",
    "add_model",
    "board_from_logs",
    "estimated_seconds",
    "fixed_srs_items",
    "pair_list",
    "read_board",
    "replay",
    "write_board",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
