"""`PairFamily`: the stopping rule fed one item at a time, as a live run would feed it."""

from __future__ import annotations

import numpy as np
import pytest

from harness.board._family import PairFamily


def test_a_clearly_worse_model_stops_and_the_tie_runs_to_the_budget() -> None:
    rng = np.random.default_rng(0)
    family = PairFamily(["strong", "twin", "weak"], margin=0.0, budget=400)
    asked = []
    while family.active():
        active = family.active()
        asked.append(active)
        p = {"strong": 0.8, "twin": 0.8, "weak": 0.1}
        family.observe({m: float(rng.random() < p[m]) for m in active})
    states = {(s.a, s.b): s for s in family.states()}
    assert states["strong", "weak"].resolution == "a > b"
    assert states["twin", "weak"].resolution == "a > b"
    assert states["strong", "twin"].resolution == "unresolved"
    assert states["strong", "twin"].items == 400
    items = family.model_items()
    assert items["strong"] == items["twin"] == 400
    weak_done = max(states["strong", "weak"].items, states["twin", "weak"].items)
    assert items["weak"] == weak_done < 100
    assert "weak" not in asked[-1]
    strong_weak = states["strong", "weak"]
    assert strong_weak.low >= 0.0 and strong_weak.low <= 0.7 <= strong_weak.high


def test_observe_needs_every_active_model_and_refuses_after_the_end() -> None:
    family = PairFamily(["a", "b"], budget=1)
    with pytest.raises(ValueError, match="no score for b"):
        family.observe({"a": 1.0})
    family.observe({"a": 1.0, "b": 0.0})
    assert family.active() == ()
    with pytest.raises(ValueError, match="nothing is asked"):
        family.observe({"a": 1.0, "b": 0.0})
    with pytest.raises(ValueError, match="distinct"):
        PairFamily(["a", "a"])
