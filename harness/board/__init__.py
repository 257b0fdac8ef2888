"""Boards: every model's score on every item, and sequential evaluation replayed on them.

The public face (docs/layout.md): `__all__` names what other packages use, from private modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.registry import lazy_face

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


__getattr__, __dir__ = lazy_face(__name__, _HOME)
