"""Model names as a published site shows them: no local folders, and never two alike.

A model's name can carry the user's folders: `replay//home/ann/runs/answers.jsonl`, or
`scripted/x (outputs="/tmp/ann/o.jsonl")` from `-M outputs=...`. The site shows what
identifies the run, not where it lay: each absolute path becomes its file name with a short
digest of the whole path (`answers.jsonl~3f2a1c`), so two files of one name in two folders
stay two models. The same label goes to every page, file name, plot, CSV and JSON.

Plots have room for a few dozen characters; `short_labels` cuts names in the middle (the
provider at the front and the arguments at the end both tell models apart), and keeps the
whole name wherever two cut names would read the same.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import Counter
from collections.abc import Iterable

from harness.leaderboard.ranking import TaskTable

# an absolute path: a `/` not preceded by a name character, then segments
_ABSOLUTE = re.compile(r"(?<![\w.~-])(?:~/|/)(?:[^\s/\"',)=]+/)*([^\s/\"',)=]+)")


def public_label(name: str) -> str:
    """`name` with every absolute path replaced by its file name and a digest of the path."""

    def short(match: re.Match[str]) -> str:
        path = match.group(0)
        if path.count("/") < 2:
            return path  # a one-segment "/x" is not a folder of the user's
        digest = hashlib.sha256(path.encode()).hexdigest()[:6]
        return f"{match.group(1)}~{digest}"

    return _ABSOLUTE.sub(short, name)


def public_tables(tables: Iterable[TaskTable]) -> list[TaskTable]:
    """The tables with every model name and log path made public (`public_label`)."""
    out = []
    for t in tables:
        rows = tuple(dataclasses.replace(r, model=public_label(r.model)) for r in t.rows)
        pairs = tuple(
            dataclasses.replace(p, model_a=public_label(p.model_a), model_b=public_label(p.model_b))
            for p in t.pairs
        )
        out.append(dataclasses.replace(t, rows=rows, pairs=pairs))
    return out


def cut_middle(name: str, width: int) -> str:
    """`name` in at most `width` characters, cut in the middle with an ellipsis."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    tail = width - 1 - head
    return f"{name[:head]}…{name[-tail:]}"


def short_labels(names: list[str], width: int) -> list[str]:
    """Each name cut to `width` characters, or whole where two cuts would read the same."""
    cut = [cut_middle(n, width) for n in names]
    clashes = Counter(cut)
    return [c if clashes[c] == 1 else n for n, c in zip(names, cut, strict=True)]
