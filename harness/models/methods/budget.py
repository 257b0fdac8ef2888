"""Token budgets of a refinement run: sequential (critical path) and total, in two conventions.

Conventions (specs/pdr.md §2), both counted on every call:
- `io`: input tokens + output tokens;
- `out`: output tokens only.

Budgets:
- B_total sums every call, discarded drafts and rating calls included.
- B_seq sums, over rounds, the longest draft of the round plus the round's distill step. Calls
  that run in parallel cost the longest one; a distill step that rates drafts in parallel costs
  its longest rating call. This critical-path rule is ours, not the paper's.

Failed calls cost nothing here: a provider that raised reported no usage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

CallRole = Literal["draft", "distill", "rate", "reason", "probe"]


@dataclass(frozen=True)
class CallRecord:
    """One inner-model call of a refinement run."""

    role: CallRole  # what the call was for
    round: int  # 1-based round it belongs to
    index: int  # position among the round's calls of this role
    seed: int | None  # generation seed passed to the inner model
    input_tokens: int  # prompt tokens, as the inner model reported them
    output_tokens: int  # completion tokens, as the inner model reported them
    text: str  # the completion ("" when the call failed)
    error: str | None = None  # the exception, when the call failed

    @property
    def io(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def out(self) -> int:
        """Output tokens."""
        return self.output_tokens

    def as_dict(self) -> dict:
        """JSON-ready record."""
        return asdict(self)


@dataclass(frozen=True)
class Budget:
    """Sequential and total budgets of one run, in both conventions."""

    seq_io: int  # B_seq, input + output tokens along the critical path
    seq_out: int  # B_seq, output tokens only
    total_io: int  # B_total, input + output tokens of every call
    total_out: int  # B_total, output tokens of every call
    calls: int  # inner calls made, failed ones included
    failed: int = 0  # inner calls that raised

    def as_dict(self) -> dict[str, int]:
        """JSON-ready record."""
        return asdict(self)


def budget_of(rounds: list[tuple[list[CallRecord], list[CallRecord]]]) -> Budget:
    """Budgets from each round's (draft calls, distill-step calls)."""
    seq_io = seq_out = total_io = total_out = calls = failed = 0
    for drafts, distill in rounds:
        for group in (drafts, distill):
            if group:
                seq_io += max(c.io for c in group)
                seq_out += max(c.out for c in group)
            total_io += sum(c.io for c in group)
            total_out += sum(c.out for c in group)
            calls += len(group)
            failed += sum(c.error is not None for c in group)
    return Budget(seq_io, seq_out, total_io, total_out, calls, failed)
