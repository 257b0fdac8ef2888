"""A board: every model's score on every item, read from and written to a long CSV.

The CSV has a header naming `model`, `item` and `score` (other columns are ignored) and one row
per model and item, with the score in [0, 1]. It is read row by row (never whole into memory),
with the size of a field and the number of rows capped, and every mistake is one usage error
naming the line: a missing cell, a score that is not a number in [0, 1], a second score for one
model and item, text that is not UTF-8, a model that lacks an item others have.

An optional `cluster` column says where items nest (a clustered design: mas-prove's cells in a
problem, team's prompts in a seed); every row then names one, and an item's cluster is the
same for every model. Sequential replay then treats the clusters, not the items, as the
independent draws.
"""

from __future__ import annotations

import csv
import math
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from harness.errors import HarnessUsageError
from harness.spreadsheet import csv_cell, csv_text

COLUMNS = ("model", "item", "score")
CLUSTER = "cluster"  # the optional column naming each item's cluster
MAX_LINE = 1 << 20  # characters in one row
MAX_FIELD = 64 << 10  # a model or item name; csv's own default is 128 KiB
MAX_CELLS = 20_000_000  # 60 models x 300k items; the matrix is 160 MB of float64


@dataclass(frozen=True)
class Board:
    """Scores of models on items: a full matrix.

    Attributes:
        models: Model names, sorted.
        items: Item names, in the order first seen.
        scores: (models, items) float64, each in [0, 1].
        clusters: The cluster of each item, where items nest in clusters; None when they are
            independent draws.

    """

    models: tuple[str, ...]
    items: tuple[str, ...]
    scores: np.ndarray
    clusters: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        """Refuse a matrix that does not match the names or leaves [0, 1]."""
        if self.scores.shape != (len(self.models), len(self.items)):
            raise ValueError(f"scores {self.scores.shape} vs {len(self.models)}x{len(self.items)}")
        if self.clusters is not None and len(self.clusters) != len(self.items):
            raise ValueError(f"{len(self.clusters)} cluster labels for {len(self.items)} items")
        if self.scores.size and not (0.0 <= self.scores.min() and self.scores.max() <= 1.0):
            raise ValueError("scores must lie in [0, 1]")

    @property
    def binary(self) -> bool:
        """Whether every score is 0 or 1."""
        return bool(np.all((self.scores == 0.0) | (self.scores == 1.0)))

    def by_model(self) -> dict[str, dict[str, float]]:
        """Per model, each item's score: the comparison engine's input."""
        return {
            m: dict(zip(self.items, row.tolist(), strict=True))
            for m, row in zip(self.models, self.scores, strict=True)
        }


def _open_regular(path: str) -> None:
    try:
        info = os.stat(path)
    except OSError as ex:
        raise HarnessUsageError(f"board '{path}' cannot be read ({ex.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise HarnessUsageError(f"board '{path}' is not a regular file; name a CSV file")


def _score(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise HarnessUsageError(f"{where}: score {text!r} is not a number") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise HarnessUsageError(f"{where}: score {text} is outside [0, 1]")
    return value


def _lines(f: TextIO, path: str) -> Iterator[str]:
    """The file's lines, each read with a cap, so one huge line cannot fill memory."""
    number = 0
    while True:
        line = f.readline(MAX_LINE + 1)
        number += 1
        if not line:
            return
        if len(line) > MAX_LINE:
            raise HarnessUsageError(f"{path} line {number}: longer than {MAX_LINE:,} characters")
        yield line


def read_board(path: str, *, min_models: int = 2) -> Board:
    """Read a long `model,item,score` CSV (optionally with `cluster`) into a full board.

    Raises:
        HarnessUsageError: the file cannot be read, is not UTF-8, lacks a column, has a
            missing cell, a bad score, a repeated (model, item), fewer than `min_models`, or a
            model without a score for an item another model has.

    """
    _open_regular(path)
    cells: dict[str, dict[str, float]] = {}
    first_line: dict[tuple[str, str], int] = {}
    items: dict[str, None] = {}
    clusters: dict[str, tuple[str, int]] = {}  # item -> (its cluster, the line that named it)
    csv.field_size_limit(MAX_FIELD)
    line = 1
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(_lines(f, path))
            header = next(reader, None)
            if header is None:
                raise HarnessUsageError(f"{path} is empty; it needs a header model,item,score")
            names = [h.strip() for h in header]
            missing = [c for c in COLUMNS if c not in names]
            if missing:
                raise HarnessUsageError(
                    f"{path} line 1: no column {', '.join(missing)}; the header needs "
                    "model,item,score"
                )
            at = [names.index(c) for c in COLUMNS]
            at_cluster = names.index(CLUSTER) if CLUSTER in names else None
            for row in reader:
                line = reader.line_num
                if not row:
                    continue
                where = f"{path} line {line}"
                got = [row[i].strip() if i < len(row) else "" for i in at]
                for name, value in zip(COLUMNS, got, strict=True):
                    if not value:
                        raise HarnessUsageError(f"{where}: the {name} cell is empty")
                model, item, text = csv_text(got[0]), csv_text(got[1]), got[2]
                value = _score(text, where)
                if (model, item) in first_line:
                    raise HarnessUsageError(
                        f"{where}: a second score for model {model!r} and item {item!r} "
                        f"(first on line {first_line[model, item]})"
                    )
                first_line[model, item] = line
                if len(first_line) > MAX_CELLS:
                    raise HarnessUsageError(f"{path}: more than {MAX_CELLS:,} rows")
                cells.setdefault(model, {})[item] = value
                items.setdefault(item)
                if at_cluster is not None:
                    _cluster(row, at_cluster, item, clusters, line, where)
    except UnicodeDecodeError as ex:
        raise HarnessUsageError(
            f"{path} near line {line + 1}: not UTF-8 ({ex.reason} at byte {ex.start}); "
            "save the board as UTF-8"
        ) from None
    except csv.Error as ex:
        raise HarnessUsageError(f"{path} line {line + 1}: not CSV ({ex})") from None
    labels = {item: c for item, (c, _) in clusters.items()} if at_cluster is not None else None
    return board_from(cells, list(items), source=path, min_models=min_models, clusters=labels)


def _cluster(row: list[str], at: int, item: str, seen: dict[str, tuple[str, int]], line: int,
             where: str) -> None:  # fmt: skip
    """Record the row's cluster for its item: one line per mistake."""
    label = csv_text(row[at].strip()) if at < len(row) else ""
    if not label:
        raise HarnessUsageError(f"{where}: the cluster cell is empty (a board with a cluster "
                                "column names one on every row)")  # fmt: skip
    first = seen.setdefault(item, (label, line))
    if first[0] != label:
        raise HarnessUsageError(
            f"{where}: item {item!r} is in cluster {label!r} here but in {first[0]!r} on line "
            f"{first[1]}; an item has one cluster"
        )


def board_from(
    cells: Mapping[str, Mapping[str, float]],
    items: Iterable[str] | None = None,
    *,
    source: str,
    min_models: int = 2,
    clusters: Mapping[str, str] | None = None,
) -> Board:
    """A full board from per-model scores; every model must have every item.

    `clusters` gives each item's cluster, where items nest (every item needs one).
    """
    if len(cells) < min_models:
        raise HarnessUsageError(f"{source}: {len(cells)} model(s); a board needs two or more")
    order = list(items) if items is not None else sorted({i for v in cells.values() for i in v})
    if not order:
        raise HarnessUsageError(f"{source}: no items")
    models = tuple(sorted(cells))
    scores = np.empty((len(models), len(order)))
    for r, model in enumerate(models):
        row = cells[model]
        lacking = [i for i in order if i not in row]
        if lacking:
            raise HarnessUsageError(
                f"{source}: model {model!r} has no score for item {lacking[0]!r}"
                f"{f' and {len(lacking) - 1} more' if len(lacking) > 1 else ''}; every model "
                "needs every item"
            )
        scores[r] = [row[i] for i in order]
    labels = None
    if clusters is not None:
        lacking = [i for i in order if i not in clusters]
        if lacking:
            raise HarnessUsageError(f"{source}: item {lacking[0]!r} has no cluster; every item "
                                    "of a clustered board needs one")  # fmt: skip
        labels = tuple(str(clusters[i]) for i in order)
    return Board(models, tuple(order), scores, labels)


def write_board(board: Board, out: Path | None) -> None:
    """Write the long CSV to `out` (None: standard output)."""
    import sys

    def rows(f: object) -> None:
        writer = csv.writer(f, lineterminator="\n")  # type: ignore[arg-type]
        labels = board.clusters
        writer.writerow(COLUMNS if labels is None else (*COLUMNS, CLUSTER))
        for model, row in zip(board.models, board.scores, strict=True):
            for i, (item, value) in enumerate(zip(board.items, row.tolist(), strict=True)):
                cells = (csv_cell(model), csv_cell(item), repr(float(value)))
                writer.writerow(cells if labels is None else (*cells, csv_cell(labels[i])))

    if out is None:
        rows(sys.stdout)
        return
    with open(out, "w", encoding="utf-8", newline="") as f:
        rows(f)
