"""The subcommands in modules of their own: registered by name (kind "command"), loaded on use.

Importing `harness.cli` stays cheap, which matters to every process that the training pools
spawn (spawn imports the `harness` script's module again in each worker). A suite's own command
group is declared by its catalog entry (`Suite.commands`), which registers it under the suite's
name; `eval`, `report`, `suites` and `doctor` register on `harness.cli.main` when it loads.
"""

from __future__ import annotations

from harness import registry

for _name, _command in (
    ("board", "harness.cli.board:board"),
    ("judge", "harness.cli.judge:judge"),
    ("leaderboard", "harness.cli.leaderboard:leaderboard"),
    ("manifest", "harness.cli.manifest:manifest"),
    ("reproduce", "harness.cli.reproduce:reproduce"),
    ("sage", "harness.cli.sage:sage"),
    ("suco", "harness.cli.suco:suco"),
    ("validate", "harness.cli.validate:validate"),
):
    registry.register("command", _name, _command)
