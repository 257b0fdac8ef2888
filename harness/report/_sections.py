"""The suites' report sections rendered to Markdown and HTML.

A suite declares its section (`harness.sections`: `ReportSection`, `SectionView`); this
module holds a section with its results (`SectionOutput`) and renders any view the same way.
A suite whose section is its table (`Suite.own_table`, the suites that train) gets no row in the
generic score table.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.sections import ReportSection


@dataclass(frozen=True)
class SectionOutput:
    """A section and its results, as the report holds them."""

    section: ReportSection  # the section
    results: tuple[Any, ...] = field(default_factory=tuple)  # what `build` returned


def markdown_text(text: str) -> str:
    """Text from logs made inert in Markdown: no raw HTML, no link, no line break.

    A model or task name is another's text: `<img onerror=...>` would run in a viewer that
    renders HTML, and `[x](javascript:...)` would be a link. `<`, `>` and `&` become entities,
    `](` loses its meaning, and a newline becomes a space.
    """
    text = html.escape(text, quote=False).replace("](", "]\\(")
    return text.replace("\r", " ").replace("\n", " ")


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; every cell inert (`markdown_text`), `|` escaped."""

    def cell(text: str) -> str:
        return markdown_text(text).replace("|", "\\|")

    lines = ["| " + " | ".join(map(cell, head)) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
    return "\n".join(lines)


def html_table(caption: str, head: list[str], rows: list[list[str]]) -> str:
    """An HTML table with its caption, every cell escaped."""
    th = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><caption>{html.escape(caption)}</caption><tr>{th}</tr>{body}</table>"


def write_plots(output: SectionOutput, stem: Path) -> list[list[str]]:
    """Write every plot of every result beside `stem`; the files per result, PNG first."""
    files: list[list[str]] = []
    n = 0
    for result in output.results:
        mine: list[str] = []
        for plot in output.section.view(result).plots:
            n += 1
            mine += plot.write(stem.with_name(f"{stem.name}.{output.section.tag}-{n}"))
        files.append(mine)
    return files


def section_markdown(output: SectionOutput, plot_files: list[list[str]]) -> str:
    """The section in Markdown, pointing at its plots by file name."""
    if not output.results:
        return ""
    parts = [f"\n## {markdown_text(output.section.title)}\n"]
    for result, files in zip(output.results, plot_files, strict=True):
        view = output.section.view(result)
        parts.append(f"\n### {markdown_text(view.heading)}\n")
        for caption, head, rows in view.tables:
            parts.append(f"\n{markdown_text(caption)}.\n\n{markdown_table(head, rows)}\n")
        if view.notes:
            notes = "".join(f"- {markdown_text(n)}\n" for n in view.notes)
            parts.append(f"\n{markdown_text(view.notes_caption)}:\n\n" + notes)
        pngs = [f for f in files if f.endswith(".png")]
        for plot, png in zip(view.plots, pngs, strict=False):
            parts.append(f"\n![{plot.alt}]({Path(png).name})\n")
    return "".join(parts)


def section_html(output: SectionOutput, plot_files: list[list[str]]) -> str:
    """The section in HTML, its plots embedded."""
    if not output.results:
        return ""
    parts = [f"<h2>{html.escape(output.section.title)}</h2>"]
    for result, files in zip(output.results, plot_files, strict=True):
        view = output.section.view(result)
        parts.append(f"<h3>{html.escape(view.heading)}</h3>")
        parts += [html_table(*t) for t in view.tables]
        if view.notes:
            parts.append(f"<p>{html.escape(view.notes_caption)}:</p><ul>")
            parts += [f"<li>{html.escape(n)}</li>" for n in view.notes]
            parts.append("</ul>")
        pngs = [f for f in files if f.endswith(".png")]
        for plot, png in zip(view.plots, pngs, strict=False):
            data = base64.b64encode(Path(png).read_bytes()).decode()
            parts.append(f'<img alt="{html.escape(plot.alt)}" src="data:image/png;base64,{data}">')
    return "".join(parts)
