"""How a suite declares its report section: what a result shows, and how it is built from logs.

A suite names its section in the catalog (`Suite.section`, a `module:NAME` path to a
`ReportSection`); the catalog's design lookup attaches it to each log's record
(`record.design.section`), and `harness report` loads it (`load_section`) and renders it
(`harness.report`), so the report never names a suite and no suite imports the report. This
module sits at the top of the package, below both:

- `build(records)` turns the suite's logs into frozen results, one per log it reports
  (`per_log_section`) or one per group of logs;
- `view(result)` says what a result shows: a title, tables, notes under a caption, and plot
  writers (`section_view` builds the usual one).

Plot writers save their figure with `save_figure`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.logs import LogRecord
from harness.registry import resolve

R = TypeVar("R")
Table = tuple[str, list[str], list[list[str]]]  # caption, header, rows


@dataclass(frozen=True)
class Plot:
    """A plot of a result: `write(stem)` saves it and returns the files (PNG first)."""

    alt: str  # alt text, saying what the plot shows
    write: Callable[[Path], list[str]]  # stem (no suffix) -> files written


@dataclass(frozen=True)
class SectionView:
    """What one result of a section shows."""

    heading: str  # a line naming the log (file, preset)
    tables: tuple[Table, ...]  # (caption, header, rows)
    notes_caption: str = ""  # what the notes are (claims, checks)
    notes: tuple[str, ...] = ()  # one line each
    plots: tuple[Plot, ...] = ()  # written beside the report


@dataclass(frozen=True)
class ReportSection:
    """A suite's part of `harness report`."""

    title: str  # the section heading
    tag: str  # file-name tag of its plots
    build: Callable[[list[LogRecord]], list[Any]]  # the suite's logs -> frozen results
    view: Callable[[Any], SectionView]  # a result -> what it shows


@dataclass(frozen=True)
class Figure:
    """A plot as a section declares it: alt text and a writer of one result's files."""

    alt: str | Callable[[Any], str]  # what the plot shows (of a result, where that varies)
    write: Callable[[Any, Path], list[str]]  # (result, stem without suffix) -> files, PNG first


def load_section(path: str) -> ReportSection:
    """The `ReportSection` at `module:NAME`."""
    section = resolve(path)
    if not isinstance(section, ReportSection):
        raise TypeError(f"{path} is not a ReportSection")
    return section


def preset_of(record: LogRecord) -> str:
    """The preset a log ran, from its task arguments or metadata ("" when it names none)."""
    args = dict(record.identity.task_args)
    return args.get("preset", "").strip('"') or str(record.metadata.get("preset") or "")


def log_heading(record: LogRecord) -> str:
    """`task (preset P; file name)`, the heading of a result made from one log."""
    preset = preset_of(record)
    extra = f"preset {preset}; " if preset else ""
    return f"{record.task} ({extra}{Path(record.path).name})"


def per_log_section(
    title: str,
    tag: str,
    build: Callable[[str, LogRecord], Any],
    view: Callable[[Any], SectionView],
) -> ReportSection:
    """A section with one result per log, in the order the report lists the logs.

    `build(heading, record)` makes a log's result; the heading is `log_heading(record)`.
    """

    def build_all(records: list[LogRecord]) -> list[Any]:
        return [build(log_heading(r), r) for r in records]

    return ReportSection(title, tag, build_all, view)


def runs_section(
    title: str,
    tag: str,
    load: Callable[[str], Any],
    build: Callable[[str, Any], Any],
    view: Callable[[Any], SectionView],
) -> ReportSection:
    """One result per log from the runs it holds: `build(heading, load(log path))`."""
    return per_log_section(title, tag, lambda heading, r: build(heading, load(r.path)), view)


def section_view(
    heading: Callable[[R], str],
    tables: Callable[[R], Iterable[Table]],
    notes_caption: str,
    notes: Callable[[R], Iterable[str]],
    figures: Iterable[Figure] = (),
) -> Callable[[R], SectionView]:
    """The view of a result: its heading, its tables, its notes, and each figure drawn from it."""
    declared = tuple(figures)

    def view(result: R) -> SectionView:
        def plot(figure: Figure) -> Plot:
            alt = figure.alt(result) if callable(figure.alt) else figure.alt
            return Plot(alt, lambda stem: figure.write(result, Path(stem)))

        return SectionView(
            heading=heading(result),
            tables=tuple(tables(result)),
            notes_caption=notes_caption,
            notes=tuple(notes(result)),
            plots=tuple(plot(f) for f in declared),
        )

    return view


def png_figure(alt: str, draw: Callable[[Any, Path], str]) -> Figure:
    """A figure whose writer `draw(result, path)` saves one PNG at the path it is given."""
    return Figure(alt, lambda result, stem: [draw(result, stem.with_name(stem.name + ".png"))])


def pyplot() -> Any:
    """Matplotlib's pyplot on the Agg backend (no display; imported only when a plot is made)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, stem: Path, formats: tuple[str, ...] = ("png", "svg")) -> list[str]:
    """Save `fig` beside `stem` once per format (PNG first), close it, and return the files."""
    paths = [str(stem.parent / f"{stem.name}.{suffix}") for suffix in formats]
    for path in paths:
        fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return paths
