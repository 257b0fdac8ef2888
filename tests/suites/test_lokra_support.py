"""Issue 40 for LoKRA: a relative error (>= 0) and an accuracy (in [0, 1]) keep to their support."""

from harness.suites.lokra.results import build_lokra_report, lokra_tables


def _runs(experiment, scores, method, lam=0.0):
    return [
        {"experiment": experiment, "method": method, "lam": lam, "seed": i,
         "target": "flat" if experiment == "fit" else "gmm", "score": s, "optimum": 0.01,
         "krank": 4, "sigma": 0.1, "params": 1024}
        for i, s in enumerate(scores)
    ]  # fmt: skip


def test_arm_intervals_stay_in_the_score_support():
    # before: LoRA's relative error 0.255 [-2.858, 3.368] and accuracy 0.675 [-2.819, 4.169]
    runs = _runs("fit", [0.01, 0.5], "lora") + _runs("fit", [0.02, 0.03], "lokra", 1e-2)
    runs += _runs("transfer", [0.95, 0.4], "lora") + _runs("transfer", [0.9, 0.92], "lokra", 1e-2)
    rep = build_lokra_report("t", runs)
    for a in rep.arms:
        high = float("inf") if a.experiment == "fit" else 1.0
        assert 0.0 <= a.score.low <= a.score.estimate <= a.score.high <= high, a
        want = "log scale" if a.experiment == "fit" else "clipped to [0, 1]"
        assert want in a.score.method or a.score.low == a.score.high, a.score.method
    (_, _, rows), _ = lokra_tables(rep)
    assert not any("[-" in r[5] for r in rows), rows
