"""The clip rules the suite compares, by arm name.

- `clip`: GRPO's fixed clipping, eps 0.2/0.2 (the baseline of every pair);
- `clip-higher`: eps 0.2/0.28;
- `dcpo-dac`: DCPO's dynamic adaptive clipping;
- `band{kl,tv,chi2}-<delta>`: the band at that radius, upper bound capped at 10 (the authors'
  training scripts); `band{kl,tv,chi2}` alone is delta 0.05, the authors' setting;
- `bandkl-relax`: BandKL at delta 0.05 widened to at least [0.8, 1.2] (the relax switch with
  GRPO's epsilons; which epsilons the authors pair with relax is reconstructed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import HarnessUsageError

if TYPE_CHECKING:
    from harness.models.methods.band_clip import ClipRule

BASELINE = "clip"
DELTAS = (0.02, 0.05, 0.1)
ALL_ARMS = (
    "clip",
    "clip-higher",
    "dcpo-dac",
    *(f"band{f}-{d:g}" for f in ("kl", "tv", "chi2") for d in DELTAS),
    "bandkl-relax",
)


def rule_of(arm: str) -> ClipRule:
    """The clip rule an arm name stands for; an unknown name is a usage error listing them."""
    # torch is imported here, where a run is configured: every inspect command imports the task
    from harness.models.methods.band_clip import band_rule, dcpo_rule, fixed_rule

    fixed = {
        "clip": fixed_rule(0.2, 0.2),
        "clip-higher": fixed_rule(0.2, 0.28),
        "dcpo-dac": dcpo_rule(),
        "bandkl-relax": band_rule("kl", 0.05, relax=True),
    }
    if arm in fixed:
        return fixed[arm]
    name, _, delta = arm.partition("-")
    divergence = name.removeprefix("band")
    if name.startswith("band") and divergence in ("kl", "tv", "chi2"):
        try:
            value = float(delta) if delta else 0.05
        except ValueError:
            value = -1.0
        if value > 0:
            return band_rule(divergence, value)  # type: ignore[arg-type]
    raise HarnessUsageError(
        f"bandpo: unknown arm {arm!r}; arms: {', '.join(ALL_ARMS)} (any delta > 0 after "
        "bandkl-, bandtv-, bandchi2-)"
    )


def parse_arms(arms: str) -> tuple[str, ...]:
    """Comma-separated arm names, checked, the baseline first."""
    names = [a.strip() for a in str(arms).split(",") if a.strip()]
    if not names:
        raise HarnessUsageError("bandpo: arms is empty; give at least one, such as clip,bandkl")
    for name in names:
        rule_of(name)
    unique = list(dict.fromkeys(names))
    return tuple(sorted(unique, key=lambda a: a != BASELINE))
