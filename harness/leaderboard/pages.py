"""HTML pages of the leaderboard site: the index, a page per suite and a page per model.

The pages are Jinja2 templates in `templates/`, rendered with autoescaping on: model, task and
suite names, task arguments, paths and reasons all come from logs that other people wrote, and
each is escaped where a template writes it. No template marks text safe (`|safe`), and no page
is assembled from strings here; this module only orders rows and formats numbers.

Plain HTML tables with captions and `scope` attributes; sorting and the filter box are a little
JavaScript in `assets/site.js` that only enhances the page (with JavaScript off the tables are
all there, in score order, and the filter box stays hidden). No CDN, no web fonts.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from harness.compare import NotComparable
from harness.leaderboard.collect import BadLog
from harness.leaderboard.ranking import ModelRow, TaskTable

ASSETS = ("site.css", "site.js")  # copied as they are to the site's assets/
SLUG_MAX = 80  # characters of a name kept in a file name, before its digest


def slug(name: str) -> str:
    """A file-name-safe form of a suite, task or model name, distinct for distinct names."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "x"
    if clean == name and len(clean) <= SLUG_MAX:
        return clean
    # "a/b" and "a-b" differ; a long name is cut (a file name has at most 255 bytes)
    return f"{clean[:SLUG_MAX].rstrip('-.')}-{hashlib.sha1(name.encode()).hexdigest()[:6]}"


def _num(x: float, digits: int = 3) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def _p(x: float) -> str:
    if math.isnan(x):
        return "not tested"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def _sort_key(x: float) -> str:
    """A score as a cell's `data-value`; a missing score sorts below every real one."""
    return f"{-1.0 if math.isnan(x) else x:.6f}"


def _ci_text(ci: Any, spec: str = ".6f") -> str:
    """An interval as `est [low, high]`; its reason where the estimate is unknown."""
    if ci is None:
        return "–"
    if math.isnan(ci.estimate):
        return "unknown" if ci.method.startswith("unknown") else ci.method
    return str(ci.text(spec))


@functools.cache
def environment() -> jinja2.Environment:
    """The templates, autoescaped, with the number formats the pages share as filters."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.leaderboard", "templates"),
        autoescape=True,  # every template is HTML or SVG
        undefined=jinja2.StrictUndefined,  # a misspelt name fails the build, not the page
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        num=_num,
        p_value=_p,
        sort_key=_sort_key,
        slug=slug,
        basename=lambda path: Path(path).name,
        xy=lambda v: f"{v:.1f}",  # an SVG coordinate
        ci_text=_ci_text,
    )
    return env


def render(template: str, **context: object) -> str:
    """One template of `templates/`, rendered with autoescaping."""
    return environment().get_template(template).render(**context)


def asset(name: str) -> str:
    """The text of a static file the site serves from `assets/` (one of `ASSETS`)."""
    if name not in ASSETS:
        raise ValueError(f"unknown site asset {name!r}; the assets are {', '.join(ASSETS)}")
    return (files("harness.leaderboard") / "templates" / name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class BoardRow:
    """One model's row of the index."""

    model: str  # model spec
    overall: float  # mean rank over the tasks the model ran, lower is better
    tasks: int  # tasks the model ran
    cells: tuple[tuple[ModelRow | None, str | None], ...]  # per task: the row and its log link


def _mean_or_low(values: list[float]) -> float:
    """The mean of the scores that are numbers; -inf when none is (it sorts last)."""
    real = [v for v in values if not math.isnan(v)]
    return sum(real) / len(real) if real else -math.inf


def board_rows(tables: list[TaskTable], links: Callable[[str], str | None]) -> tuple[BoardRow, ...]:
    """The index's rows in Overall order: mean rank, then mean score, more tasks, the name."""
    ranks: dict[str, list[int]] = {}
    for t in tables:
        for r in t.rows:
            ranks.setdefault(r.model, []).append(r.rank)
    overall = {m: sum(rs) / len(rs) for m, rs in ranks.items()}
    scores: dict[str, list[float]] = {}
    for t in tables:
        for r in t.rows:
            scores.setdefault(r.model, []).append(r.score.estimate)
    mean = {m: _mean_or_low(v) for m, v in scores.items()}
    # tied on the mean rank: the higher mean score first, then more tasks, then the name
    models = sorted(overall, key=lambda m: (overall[m], -mean[m], -len(ranks[m]), m))
    cells = {(t.task, r.model): r for t in tables for r in t.rows}
    rows = []
    for m in models:
        found = [cells.get((t.task, m)) for t in tables]
        row_cells = tuple((r, links(r.log) if r else None) for r in found)
        rows.append(BoardRow(m, overall[m], len(ranks[m]), row_cells))
    return tuple(rows)


def index_page(
    title: str,
    tables: list[TaskTable],
    bad: list[BadLog],
    links: Callable[[str], str | None],
    n_logs: int,
    not_comparable: tuple[NotComparable, ...] = (),
) -> str:
    """Models down, tasks across; every cell is a score, its interval, errors and rank.

    Logs of one task that differ in more than the model are separate columns, and each such
    pair of logs is listed with the reason they are not compared.
    """
    return render(
        "index.html.j2",
        title=title,
        root="",
        tables=tables,
        board=board_rows(tables, links),
        bad=bad,
        n_logs=n_logs,
        not_comparable=not_comparable,
    )


def suite_page(
    suite: str,
    tables: list[TaskTable],
    links: Callable[[str], str | None],
    costs: dict[tuple[str, str], Any] | None = None,
    manifests: Callable[[str], str | None] | None = None,
) -> str:
    """Per task: the ranked table, judge scores, the plots and the accuracy-cost frontier.

    The ranked table carries each model's cost and a link to its log's manifest; the plots are
    the forest plot, the p-value heat map and the frontier, which has a table of its own.
    """
    return render(
        "suite.html.j2", title=f"Suite {suite}", root="../", suite=suite, tables=tables,
        links=links, costs=costs or {}, manifests=manifests or (lambda _: None),
    )  # fmt: skip


def model_page(model: str, tables: list[TaskTable], links: Callable[[str], str | None]) -> str:
    """The model's score, interval, rank and errors on every task it ran."""
    rows = [(t, r) for t in tables for r in t.rows if r.model == model]
    return render(
        "model.html.j2", title=f"Model {model}", root="../", model=model, rows=rows, links=links
    )
