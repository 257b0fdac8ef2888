"""`harness leaderboard build` and `harness leaderboard serve`."""

from __future__ import annotations

from pathlib import Path

import click

from harness.errors import HarnessUsageError, exit_on_usage_error
from harness.paths import port_number


@click.group("leaderboard")
def leaderboard() -> None:
    """Publish results as a static site: every number with its interval, honest ranks."""


@leaderboard.command("build")
@click.argument("log_dirs", nargs=-1, required=True)
@click.option("-o", "--output", "out", required=True, help="Site folder to write.")
@click.option("--title", default="Leaderboard", show_default=True, help="Page title.")
@click.option("--no-viewer", is_flag=True, help="Skip bundling inspect's log viewer.")
@click.option(
    "--alpha", type=float, default=0.05, show_default=True, help="Holm family-wise error rate."
)
@click.option("--force", is_flag=True, help="Build into a folder holding files not ours.")
@exit_on_usage_error
def build(
    log_dirs: tuple[str, ...], out: str, title: str, no_viewer: bool, alpha: float, force: bool
) -> None:
    """Build the site from the logs under LOG_DIRS."""
    from harness.leaderboard.build import build_site
    from harness.logs import log_files
    from harness.output_paths import site_folder
    from harness.suites.catalog import catalog_design

    if not 0 < alpha < 1:
        raise HarnessUsageError(f"--alpha must be in (0, 1), got {alpha}")
    log_files(log_dirs)  # a missing folder is named before the output is checked
    folder = site_folder(out, "-o", force=force)
    result = build_site(
        list(log_dirs),
        catalog_design,
        out,
        title=title,
        viewer=not no_viewer,
        alpha=alpha,
        checked=folder,
    )
    for bad in result.left_out:
        click.echo(f"left out {bad.path}: {bad.reason}", err=True)
    if folder.foreign:
        names = ", ".join(folder.foreign)
        click.echo(f"--force: built {out} over what the harness had not written: {names}", err=True)
    click.echo(result.summary())


@leaderboard.command("serve")
@click.argument("site")
@click.option("--port", type=int, default=8000, show_default=True, help="Port on 127.0.0.1.")
@exit_on_usage_error
def serve(site: str, port: int) -> None:
    """Serve a built site on 127.0.0.1 (with range requests, for the log viewer)."""
    from harness.leaderboard.serve import serve as run_server

    port_number(port)
    if not (Path(site) / "index.html").is_file():
        raise HarnessUsageError(f"'{site}' is not a built site (no index.html); run `build`")
    run_server(Path(site), port)
