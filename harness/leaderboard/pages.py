"""HTML pages of the leaderboard site: the index, a page per suite and a page per model.

Plain HTML tables with captions and `scope` attributes; sorting and the filter box are a little
JavaScript in `assets/site.js` that only enhances the page (with JavaScript off the tables are
all there, in score order, and the filter box stays hidden). No CDN, no web fonts.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from html import escape
from pathlib import Path

from harness.leaderboard.collect import BadLog
from harness.leaderboard.ranking import ModelRow, TaskTable
from harness.report.pairs import NotComparable

SITE_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#111}
table{border-collapse:collapse;margin:1rem 0}
caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}
thead th{background:#f3f5f8}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.ci{color:#555;font-size:.9em}.err{color:#a33;font-size:.85em}.rank{color:#0b5e2a;font-size:.85em}
th button{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer}
th[aria-sort] button::after{content:" \\2195"}
#filter{margin:.5rem 0;padding:.3rem;width:20rem}
img{max-width:100%;height:auto}
.scroll{overflow-x:auto;max-width:100%}
nav{display:flex;flex-wrap:wrap;gap:.3rem 1rem}
"""

SITE_JS = """
document.querySelectorAll('table.sortable').forEach(function (t) {
  t.querySelectorAll('thead th button').forEach(function (btn) {
    btn.addEventListener('click', function () {
      var col = +btn.dataset.col, body = t.tBodies[0];
      var dir = btn.dataset.dir === 'desc' ? 'asc' : 'desc';
      t.querySelectorAll('thead th').forEach(function (th) { th.removeAttribute('aria-sort'); });
      btn.dataset.dir = dir;
      btn.parentElement.setAttribute('aria-sort', dir === 'asc' ? 'ascending' : 'descending');
      var key = function (r) {
        var c = r.cells[col], v = c.dataset.value, text = c.textContent.trim();
        if (v !== undefined) return parseFloat(v);
        if (/^[-+]?[0-9.]/.test(text) && !isNaN(parseFloat(text))) return parseFloat(text);
        return text.toLowerCase();
      };
      var rows = Array.prototype.slice.call(body.rows).sort(function (a, b) {
        var x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (dir === 'asc' ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
var filter = document.getElementById('filter');
if (filter) {
  filter.hidden = false;
  filter.addEventListener('input', function () {
    var q = filter.value.toLowerCase();
    document.querySelectorAll('#board tbody tr').forEach(function (r) {
      r.hidden = r.textContent.toLowerCase().indexOf(q) < 0;
    });
  });
}
"""


def slug(name: str) -> str:
    """A file-name-safe form of a suite, task or model name, distinct for distinct names."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "x"
    if clean == name:
        return clean
    return f"{clean}-{hashlib.sha1(name.encode()).hexdigest()[:6]}"  # "a/b" and "a-b" differ


def _num(x: float, digits: int = 3) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def _p(x: float) -> str:
    if math.isnan(x):
        return "not tested"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def page(title: str, body: str, root: str) -> str:
    """A whole page; `root` is the relative path to the site root ("" or "../")."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="icon" href="data:,">'
        f'<link rel="stylesheet" href="{root}assets/site.css"></head><body>'
        f'<nav><a href="{root}index.html">Leaderboard</a>'
        f'<a href="{root}leaderboard.json">leaderboard.json</a>'
        f'<a href="{root}leaderboard.csv">leaderboard.csv</a></nav>\n'
        f"{body}\n"
        f'<script src="{root}assets/site.js"></script></body></html>\n'
    )


def _view_link(href: str | None) -> str:
    """A link from a page one folder down to a log in the viewer, or a dash."""
    return f'<a href="../{escape(href)}">view</a>' if href else "–"


def _score_cell(row: ModelRow, href: str | None) -> str:
    text = (
        f'{_num(row.score.estimate)} <span class="ci">[{_num(row.score.low)}, '
        f'{_num(row.score.high)}]</span> <span class="err">{row.errors} err</span> '
        f'<span class="rank">#{row.rank}</span>'
    )
    if href:
        text = f'<a href="{escape(href)}" title="open the log in the viewer">{text}</a>'
    value = -1.0 if math.isnan(row.score.estimate) else row.score.estimate
    return f'<td class="num" data-value="{value:.6f}">{text}</td>'


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
    ranks: dict[str, list[int]] = {}
    for t in tables:
        for r in t.rows:
            ranks.setdefault(r.model, []).append(r.rank)
    overall = {m: sum(rs) / len(rs) for m, rs in ranks.items()}
    models = sorted(overall, key=lambda m: (overall[m], -len(ranks[m]), m))
    cells = {(t.task, r.model): r for t in tables for r in t.rows}
    head = ['<th scope="col"><button type="button" data-col="0">Model</button></th>',
            '<th scope="col"><button type="button" data-col="1">Overall</button></th>']  # fmt: skip
    for i, t in enumerate(tables, start=2):
        head.append(
            f'<th scope="col"><button type="button" data-col="{i}">{escape(t.task)}</button> '
            f'<a href="suite/{slug(t.suite)}.html#{slug(t.task)}">({escape(t.suite)})</a></th>'
        )
    body = []
    for m in models:
        n_tasks = f"{len(ranks[m])} task{'s' * (len(ranks[m]) != 1)}"
        tds = [f'<th scope="row"><a href="model/{slug(m)}.html">{escape(m)}</a></th>',
               f'<td class="num" data-value="{overall[m]:.4f}">{overall[m]:.2f} '
               f'<span class="ci">({n_tasks})</span></td>']  # fmt: skip
        for t in tables:
            row = cells.get((t.task, m))
            if row is None:
                tds.append('<td class="num" data-value="-1">–</td>')
            else:
                tds.append(_score_cell(row, links(row.log)))
        body.append("<tr>" + "".join(tds) + "</tr>")
    left_out = ""
    if bad:
        rows = "".join(
            f"<tr><td>{escape(b.path)}</td><td>{escape(b.reason)}</td></tr>" for b in bad
        )
        left_out = (
            '<div class="scroll"><table><caption>Logs left out, and why</caption><thead><tr>'
            '<th scope="col">Log</th><th scope="col">Reason</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
        )
    if not_comparable:
        rows = "".join(
            f"<tr><td>{escape(n.task)}</td><td>{escape(Path(n.log_a).name)}</td>"
            f"<td>{escape(Path(n.log_b).name)}</td><td>{escape(n.reason)}</td></tr>"
            for n in not_comparable
        )
        left_out += (
            '<div class="scroll"><table><caption>Logs not compared (their identities differ in '
            'more than the model)</caption><thead><tr><th scope="col">Task</th>'
            '<th scope="col">Log</th><th scope="col">Log</th><th scope="col">Why not</th>'
            f"</tr></thead><tbody>{rows}</tbody></table></div>"
        )
    n_models, n_tasks = len(models), len(tables)
    return page(
        title,
        f"<h1>{escape(title)}</h1>"
        f"<p>{n_models} models on {n_tasks} tasks, from {n_logs} logs"
        f"{f'; {len(bad)} left out (listed below)' if bad else ''}. Each cell: score "
        "[95% interval], errored samples (counted as wrong) and rank. Models share a rank when "
        "no paired test, Holm-corrected over the task's pairs, separates them. A cell opens its "
        'log in the <a href="viewer/index.html">log viewer</a>.</p>'
        '<label for="filter" hidden>Filter models</label>'
        '<input id="filter" type="search" placeholder="Filter models…" hidden>'
        '<div class="scroll"><table id="board" class="sortable"><caption>Scores by model and '
        "task (95% intervals). Overall: the model's mean rank over the tasks it ran, lower is "
        "better; rows are in that order, fewer tasks breaking no tie</caption>"
        f"<thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        f"{left_out}",
        "",
    )


def _judge_table(table: TaskTable) -> str:
    rows = [r for r in table.rows if r.judge is not None]
    if not rows:
        return ""
    out = []
    for r in rows:
        j = r.judge
        assert j is not None
        corrected = (
            f"{_num(j.corrected.estimate)} [{_num(j.corrected.low)}, {_num(j.corrected.high)}]"
            if not j.refused
            else f"refused: {escape(j.refused)}"
        )
        out.append(
            f'<tr><th scope="row">{escape(r.model)}</th><td class="num">{_num(j.naive.estimate)}'
            f" [{_num(j.naive.low)}, {_num(j.naive.high)}]</td><td>{corrected}</td></tr>"
        )
    return (
        f"<table><caption>{escape(table.task)}: judge scores, naive (Wilson) and corrected "
        "for the judge's errors (Rogan-Gladen)</caption><thead><tr>"
        '<th scope="col">Model</th><th scope="col">Naive</th><th scope="col">Corrected</th>'
        f"</tr></thead><tbody>{''.join(out)}</tbody></table>"
    )


def suite_page(suite: str, tables: list[TaskTable], links: Callable[[str], str | None]) -> str:
    """Per task: the ranked table, judge scores, the forest plot and the p-value heat map."""
    parts = [f"<h1>Suite {escape(suite)}</h1>"]
    for t in tables:
        rows = []
        for r in t.rows:
            log = _view_link(links(r.log))
            rows.append(
                f'<tr><td class="num">{r.rank}</td>'
                f'<th scope="row"><a href="../model/{slug(r.model)}.html">{escape(r.model)}</a>'
                f'</th><td class="num" data-value="{r.score.estimate:.6f}">'
                f"{_num(r.score.estimate)}</td>"
                f'<td class="num">[{_num(r.score.low)}, {_num(r.score.high)}]</td>'
                f"<td>{escape(r.score.method)}</td>"
                f'<td class="num">{r.n}</td><td class="num">{r.errors}</td>'
                f"<td>{r.groups}</td><td>{log}</td></tr>"
            )
        head = "".join(
            f'<th scope="col"><button type="button" data-col="{i}">{h}</button></th>'
            for i, h in enumerate(
                ["Rank", "Model", "Score", "95% CI", "Method", "n", "Errors", "Group", "Log"]
            )
        )
        pair_rows = "".join(
            f"<tr><td>{escape(p.model_a)}</td><td>{escape(p.model_b)}</td>"
            f'<td class="num">{_num(p.diff)} [{_num(p.low)}, {_num(p.high)}]</td>'
            f'<td class="num">{_p(p.p)}</td><td class="num">{_p(p.p_holm)}</td>'
            f'<td>{escape(p.method)}</td><td class="num">{p.n}</td></tr>'
            for p in t.pairs
        )
        s = slug(t.task)
        parts.append(
            f'<section id="{s}"><h2>{escape(t.task)}</h2>'
            f'<div class="scroll"><table class="sortable"><caption>{escape(t.task)}: models by '
            f"score, 95% intervals and significance groups (models sharing a letter are not "
            f"separated by a paired test, Holm-corrected at {t.alpha})</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            f"{_judge_table(t)}"
            f'<img src="../plots/{slug(t.suite)}-{s}-forest.svg" alt="Forest plot of the '
            f"scores on {escape(t.task)}: each model's score with its 95% interval, best first\">"
            f'<img src="../plots/{slug(t.suite)}-{s}-pvalues.svg" alt="Heat map of the '
            f"Holm-corrected p-values between every two models on {escape(t.task)}; darker "
            'cells are more significant">'
            f"<table><caption>{escape(t.task)}: every pair of models on their shared samples "
            "(difference a − b with its paired 95% interval; for 0/1 scores the interval is "
            "Agresti-Min's and the p-value McNemar's exact test, which is conservative, so near "
            "p = 0.05 the interval can exclude 0 while p is above 0.05; – : not tested)"
            "</caption><thead><tr>"
            '<th scope="col">Model a</th><th scope="col">Model b</th>'
            '<th scope="col">a − b</th><th scope="col">p</th><th scope="col">p (Holm)</th>'
            '<th scope="col">Test</th><th scope="col">Shared n</th></tr></thead>'
            f"<tbody>{pair_rows}</tbody></table></section>"
        )
    return page(f"Suite {suite}", "".join(parts), "../")


def model_page(model: str, tables: list[TaskTable], links: Callable[[str], str | None]) -> str:
    """The model's score, interval, rank and errors on every task it ran."""
    rows = []
    for t in tables:
        for r in t.rows:
            if r.model != model:
                continue
            log = _view_link(links(r.log))
            rows.append(
                f'<tr><td><a href="../suite/{slug(t.suite)}.html">{escape(t.suite)}</a></td>'
                f'<th scope="row">{escape(t.task)}</th>'
                f'<td class="num">{_num(r.score.estimate)}</td>'
                f'<td class="num">[{_num(r.score.low)}, {_num(r.score.high)}]</td>'
                f'<td class="num">{r.rank} of {len(t.rows)}</td><td class="num">{r.n}</td>'
                f'<td class="num">{r.errors}</td><td>{log}</td></tr>'
            )
    return page(
        f"Model {model}",
        f"<h1>Model {escape(model)}</h1>"
        f"<table><caption>{escape(model)}: scores by task (95% intervals)</caption><thead><tr>"
        '<th scope="col">Suite</th><th scope="col">Task</th><th scope="col">Score</th>'
        '<th scope="col">95% CI</th><th scope="col">Rank</th><th scope="col">n</th>'
        '<th scope="col">Errors</th><th scope="col">Log</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>",
        "../",
    )
