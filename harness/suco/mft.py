"""Stage I (MFT) data: SFT rows whose CoT is truncated to its minimal sufficient prefix.

Each row is `{"id", "prompt", "completion", "t_star", "empty_cot", "repaired"}` with
completion = think_open + z_MSC + think_close + answer (spec suco.md §2, secondhand). When
t* < L_min (default 5 sentences) the CoT is empty: "<think></think>answer". z_MSC is the exact
text prefix that was scored, trailing whitespace included; the answer is the trajectory's own
answer text after its CoT.

Not done: the paper repairs each truncated CoT with an LLM (Qwen3-Next-80B) and filters for
quality; the refiner prompt is unknown (spec §4), so no repair happens here and every row
carries `"repaired": false`. Trajectories scored wrong in the log are left out unless asked for
(ours: the paper's generator is a strong model whose outputs are filtered).
"""

from __future__ import annotations

from typing import Any

from harness.suco.segment import sentence_ends
from harness.suco.trajectories import Trajectory

L_MIN = 5  # MSCs shorter than this many sentences become an empty CoT (secondhand)


def msc_text(cot: str, t_star: int) -> str:
    """The first `t_star` sentences of `cot` as a string ("" for t* = 0)."""
    ends = sentence_ends(cot)
    if not 0 <= t_star <= len(ends):
        raise ValueError(f"t* = {t_star} outside 0..{len(ends)} sentences")
    return cot[: ends[t_star - 1]] if t_star else ""


def mft_row(
    traj: Trajectory,
    t_star: int,
    l_min: int = L_MIN,
    think_open: str = "<think>",
    think_close: str = "</think>",
) -> dict[str, Any]:
    """The SFT row for one trajectory whose MSC has `t_star` sentences."""
    empty = t_star < l_min
    z = "" if empty else msc_text(traj.cot, t_star)
    return {
        "id": traj.id,
        "prompt": traj.prompt,
        "completion": think_open + z + think_close + traj.answer,
        "t_star": t_star,
        "empty_cot": empty,
        "repaired": False,
    }
