r"""Text from logs made safe for a terminal.

Model, task and metric names come from other people's logs. A name holding an escape sequence
(`\x1b]8;;...`, `\x1b[2J`) or a newline would reach the terminal raw: it could rewrite what
the user sees, clear the screen or forge a row. Rich would also read `[bold]` in it as markup.
`printable` shows every control character as its escape (`\x1b`, `\n`) and escapes markup.
"""

from __future__ import annotations

import re

from rich.markup import escape

# C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators and bidi
# overrides, which reorder or break what a terminal shows
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    return match.group(0).encode("unicode_escape").decode("ascii")


def printable(text: str, *, markup: bool = True) -> str:
    """`text` with every control character written as its escape.

    Args:
        text: Text from a log.
        markup: Whether it goes to Rich, whose markup (`[bold]`) is escaped too; False for
            plain output (`click.echo`).

    """
    plain = _CONTROL.sub(_escaped, str(text))
    return escape(plain) if markup else plain
