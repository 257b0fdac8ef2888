"""The comparison engine over logs: score rows per arm, comparable groups, pairs with Holm.

It reads logs through `harness.logs` and the design attached to each, and calls
`harness.stats._compare`; `harness eval`'s summary, `harness report`, the leaderboard, the board
and the suites' sections all take their numbers from here. It imports only the bottom floor
(`harness.logs`, `harness.stats`), so every floor above may use it.

The public face (docs/layout.md): `__all__` names what other packages use, from private modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.registry import lazy_face

if TYPE_CHECKING:
    from harness.compare._pairs import (
        Group,
        NotComparable,
        PairResult,
        comparable_groups,
        group_pairs,
        p_text,
    )
    from harness.compare._scores import (
        JudgeScores,
        SummaryRow,
        arm_rows,
        design_of,
        error_reasons,
        first_scorer,
        headline_rows,
        problem_means,
        record_judge,
        score_rows,
        unit_clusters,
    )

# each public name and the private module that defines it
_HOME = {
    "Group": "_pairs",
    "JudgeScores": "_scores",
    "NotComparable": "_pairs",
    "PairResult": "_pairs",
    "SummaryRow": "_scores",
    "arm_rows": "_scores",
    "comparable_groups": "_pairs",
    "design_of": "_scores",
    "error_reasons": "_scores",
    "first_scorer": "_scores",
    "group_pairs": "_pairs",
    "headline_rows": "_scores",
    "p_text": "_pairs",
    "problem_means": "_scores",
    "record_judge": "_scores",
    "score_rows": "_scores",
    "unit_clusters": "_scores",
}

__all__ = [
    "Group",
    "JudgeScores",
    "NotComparable",
    "PairResult",
    "SummaryRow",
    "arm_rows",
    "comparable_groups",
    "design_of",
    "error_reasons",
    "first_scorer",
    "group_pairs",
    "headline_rows",
    "p_text",
    "problem_means",
    "record_judge",
    "score_rows",
    "unit_clusters",
]


__getattr__, __dir__ = lazy_face(__name__, _HOME)
