"""CSV cells a spreadsheet will not run as formulas, and reading them back.

Model, item and task names come from other people's logs. `=HYPERLINK(...)` in a CSV opened in
a spreadsheet would be a formula: a text cell that starts with = + - @, a tab or a carriage
return gets a leading `'`, which spreadsheets show as text. Every CSV the harness writes (the
site's table, `harness board export`) passes its text cells through `csv_cell`; `harness board
replay` reads a board back through `csv_text`, so a round trip keeps the name.
"""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A text cell that cannot become a formula (a leading `'`); numbers are left as they are."""
    if isinstance(value, str) and value[:1] in FORMULA_STARTS:
        return "'" + value
    return value


def csv_text(cell: str) -> str:
    """A text cell as `csv_cell` wrote it, read back: the guarding `'` removed."""
    if cell[:1] == "'" and cell[1:2] in FORMULA_STARTS and cell[1:2] != "":
        return cell[1:]
    return cell
