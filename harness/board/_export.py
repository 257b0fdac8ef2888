"""`harness board export`: a board from our own logs.

Logs are read through `harness.logs.read_logs` and split into comparable groups as the report
splits them (`harness.compare._pairs.comparable_groups`: same suite, task, arguments, data and
settings; only the model differs). One group becomes the board: one model per arm (replicates
pooled), one item per unit, and a unit's score is its mean over epochs and replicates with
errored epochs as 0 (`harness.compare._scores.problem_means`), exactly what the report compares.
Where the group's design nests units in clusters, each item's cluster comes along (the CSV's
`cluster` column), so that a replay treats the clusters as the independent draws.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.board._table import Board, board_from
from harness.errors import HarnessUsageError
from harness.logs import DesignLookup


def board_from_logs(
    log_dirs: Sequence[str],
    designs: DesignLookup,
    *,
    task: str | None = None,
    scorer: str | None = None,
) -> tuple[Board, str]:
    """The board of one comparable group of logs, and the group's label.

    `designs` gives a suite's design by name (the catalog's `catalog_design`, which the command
    passes); each log is read with its suite's.

    Raises:
        HarnessUsageError: no usable log; no log of `task`; several comparable groups (name
            one with `task`); a group with one model; scores outside [0, 1]; a model missing
            items the others have.

    """
    from harness.compare import comparable_groups, first_scorer, problem_means, unit_clusters
    from harness.logs import read_logs

    selection = read_logs(log_dirs, designs=designs)
    records = [r for r in selection.used if task is None or r.task == task]
    if not records:
        where = f" of task {task!r}" if task else ""
        bad = f" ({len(selection.left_out)} left out)" if selection.left_out else ""
        raise HarnessUsageError(f"no usable log{where} under {', '.join(log_dirs)}{bad}")
    groups, _ = comparable_groups(records)
    if len(groups) > 1:
        labels = "; ".join(g.label for g in groups[:4])
        raise HarnessUsageError(
            f"the logs hold {len(groups)} groups that cannot share a board ({labels}); name one "
            "task with --task, or export from a folder holding one group"
        )
    group = groups[0]
    name = scorer or first_scorer(group.records)
    if not name:
        raise HarnessUsageError(f"{group.label}: the logs have no scores")
    cells: dict[str, dict[str, float]] = {}
    for arm, arm_records in group.arms.items():
        if scorer is not None and not any(scorer in r.scorers for r in arm_records):
            raise HarnessUsageError(f"{arm}: no scorer {scorer!r} in its logs")
        means = problem_means(arm_records, name)
        for unit, value in means.items():
            if not 0.0 <= value <= 1.0:
                raise HarnessUsageError(
                    f"{arm}, item {unit!r}: score {value:g} from {name} is outside [0, 1]; a "
                    "board holds scores in [0, 1]"
                )
        cells[arm] = means
    clusters = unit_clusters(group.records, group.design)
    board = board_from(cells, source=group.label, clusters=clusters)
    return board, f"{group.label} ({name})"
