"""CausalDPO's library part: the spec's unit vectors, the K = 1, λ = 0 equality, IRMv1, metrics."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness.suites.causaldpo import losses, metrics
from harness.suites.causaldpo.units import unit_checks
from harness.suites.causaldpo.world import make_world


@pytest.mark.parametrize("check", unit_checks(), ids=lambda u: u.name)
def test_spec_unit_vectors(check):
    # specs/causaldpo.md §3, to 1e-6 (the equalities of §5 check 1 to 1e-7)
    assert abs(check.value - check.expected) <= check.tol, (check.value, check.expected)


def test_unit_values_are_the_spec_numbers():
    # the expected values typed from the spec, so that units.py cannot drift from it
    expected = {u.name: u.expected for u in unit_checks()}
    assert expected["DPO, β 0.1, Δ_w 0.5, Δ_l −0.5"] == 0.644397
    assert expected["S-DPO, β 0.1, Δ_l ∈ {−0.5, 0, 1}"] == 1.362856
    assert expected["clamp: Δ_w 30, Δ_l −30 = softplus(−2)"] == 0.126928
    assert expected["NDCG@10 at r = 9"] == 0.289065


def _batch(n=48, j=1, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    d_w = 4 * torch.randn(n, generator=g, dtype=dtype)
    d_l = 4 * torch.randn(n, j, generator=g, dtype=dtype)
    return d_w, (d_l[:, 0] if j == 1 else d_l), torch.randn(n, 10, generator=g, dtype=dtype)


@pytest.mark.parametrize("mmd", ["weighted", "single_point"])
def test_causal_dpo_with_one_environment_and_no_penalty_is_dpo(mmd):
    # §5 check 1: K = 1, λ = 0 gives DPO's loss on the same batch (float32: a mean of 48 terms
    # of size ~1 agrees to a few ulp)
    d_w, d_l, feats = _batch()
    q = torch.ones(len(d_w), 1)
    got = losses.causal_dpo_loss(d_w, d_l, q, feats, beta=0.1, lam=0.0, mmd=mmd)
    ref = -F.logsigmoid(0.1 * (d_w.clamp(-10, 10) - d_l.clamp(-10, 10))).mean()
    eps = torch.finfo(torch.float32).eps
    assert float(got.total) == pytest.approx(float(ref), abs=8 * eps)
    assert float(got.total) == pytest.approx(float(losses.dpo_loss(d_w, d_l, 0.1)), abs=8 * eps)
    # any penalty with one environment is zero: there is no pair to match
    with_lam = losses.causal_dpo_loss(d_w, d_l, q, feats, beta=0.1, lam=5.0, mmd=mmd)
    assert float(with_lam.invariance) == 0.0


def test_per_environment_losses_average_the_environments_not_the_examples():
    d_w, d_l, feats = _batch(n=6, dtype=torch.float64)
    env = torch.tensor([0, 0, 0, 0, 1, 1])
    q = F.one_hot(env, 2).double()
    got = losses.causal_dpo_loss(d_w, d_l, q, feats, beta=1.0, lam=0.0).preference
    ell = F.softplus(-(d_w.clamp(-10, 10) - d_l.clamp(-10, 10)))
    assert float(got) == pytest.approx(float((ell[:4].mean() + ell[4:].mean()) / 2), abs=1e-12)
    assert float(got) != pytest.approx(float(ell.mean()), abs=1e-6)  # not DPO's plain mean


def test_sdpo_is_the_softmax_over_negatives():
    d_w, d_l, _ = _batch(n=5, j=3, dtype=torch.float64)
    beta = 0.5
    z = beta * (d_l.clamp(-10, 10) - d_w.clamp(-10, 10)[:, None])
    expected = torch.log1p(torch.exp(z).sum(dim=1)).mean()
    assert float(losses.sdpo_loss(d_w, d_l, beta)) == pytest.approx(float(expected), abs=1e-12)


def test_weighted_mmd_is_zero_for_equal_weights_and_grows_with_separation():
    _, _, feats = _batch(n=40, dtype=torch.float64)
    same = torch.full((40, 2), 0.5, dtype=torch.float64)
    assert float(losses.weighted_mmd(feats, same)) == pytest.approx(0.0, abs=1e-12)
    split = F.one_hot(torch.arange(40) % 2, 2).double()
    apart = feats.clone()
    apart[::2] += 3.0
    assert float(losses.weighted_mmd(apart, split)) > float(losses.weighted_mmd(feats, split)) > 0


def test_point_mmd_is_the_single_point_kernel_of_the_environment_means():
    feats = torch.tensor([[0.0, 0.0], [2.0, 2.0], [1.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    q = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    # both environments' means are (1, 1): no difference
    assert float(losses.point_mmd(feats, q)) == pytest.approx(0.0, abs=1e-12)
    q2 = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    assert float(losses.point_mmd(feats[:2], q2)) == pytest.approx(2 - 2 * math.exp(-4), abs=1e-12)


def test_irm_v1_penalty_is_the_squared_scale_gradient():
    d_w, d_l, _ = _batch(n=30, dtype=torch.float64)
    env = torch.arange(30) % 3
    beta, lam = 0.3, 2.0
    m = beta * (d_w.clamp(-10, 10) - d_l.clamp(-10, 10))
    expected = 0.0
    for e in range(3):
        me = m[env == e]
        risk = F.softplus(-me).mean()
        grad = (-me * torch.sigmoid(-me)).mean()  # d/ds softplus(-s m) at s = 1
        expected += float(risk + lam * grad**2)
    got = losses.irm_v1_loss(d_w, d_l, env, beta=beta, lam=lam).detach()
    assert float(got) == pytest.approx(expected, abs=1e-12)
    plain = losses.irm_v1_loss(d_w, d_l, env, beta=beta, lam=0.0)
    assert float(plain) == pytest.approx(sum(float(F.softplus(-m[env == e]).mean())
                                             for e in range(3)), abs=1e-12)  # fmt: skip


def test_bad_library_arguments_raise():
    d_w, d_l, feats = _batch()
    with pytest.raises(ValueError, match="lam must be >= 0"):
        losses.causal_dpo_loss(d_w, d_l, torch.ones(48, 1), feats, beta=0.1, lam=-1.0)
    with pytest.raises(ValueError, match="K >= 1"):
        losses.causal_dpo_loss(d_w, d_l, torch.ones(48, 0), feats, beta=0.1, lam=0.0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        losses.dpo_loss(d_w, d_l, 0.0)
    with pytest.raises(ValueError, match="k must be at least 1"):
        losses.kmeans_centres(feats, 0)


def test_kmeans_finds_separated_clusters():
    g = torch.Generator().manual_seed(1)
    centres = torch.tensor([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    labels = torch.arange(90) % 3
    x = centres[labels] + 0.3 * torch.randn(90, 2, generator=g)
    found = losses.kmeans_centres(x, 3, generator=torch.Generator().manual_seed(0))
    hard = losses.soft_assign(x, found).argmax(dim=1)
    assert metrics.adjusted_rand_index(hard.numpy(), labels.numpy()) == pytest.approx(1.0)


def test_ranking_metrics():
    scores = np.array([[0.1, 0.9, 0.5], [0.7, 0.2, 0.1]])
    r = metrics.ranks(scores, np.array([2, 0]))
    assert r.tolist() == [1, 0]
    assert metrics.hit_rate(r, 1) == 0.5
    assert metrics.ndcg(r, 10) == pytest.approx((1 / math.log2(3) + 1) / 2)
    assert metrics.pop_at_1(scores, np.array([1])) == 0.5
    assert metrics.top_k(scores, 2).tolist() == [[1, 2], [0, 1]]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # sklearn.metrics.adjusted_rand_score(a, b), scikit-learn 1.9.1
        ([0, 0, 0, 1, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2, 2, 2], 0.18181818181818182),
        ([0, 0, 1, 1], [1, 1, 0, 0], 1.0),  # a relabelling
        ([0, 1, 2, 3], [0, 0, 0, 0], 0.0),
    ],
)
def test_adjusted_rand_index_matches_sklearn(a, b, expected):
    assert metrics.adjusted_rand_index(np.array(a), np.array(b)) == pytest.approx(
        expected, abs=1e-12
    )


def test_world_follows_the_spec():
    w = make_world(3)
    assert len(w.hot) == 24 and set(w.splits) == {"train", "val", "iid", "ood", "ood_h2"}
    train, ood = w.splits["train"], w.splits["ood"]
    assert train.history.shape == (6000, 8) and set(np.unique(train.env)) == {0, 1, 2}
    # OOD: no exposure, so every target is a genre item not in its history
    assert (ood.env == -1).all()
    assert not any(t in h for t, h in zip(ood.target, ood.history, strict=True))
    # hot targets: ρ_e ∈ {0.2, 0.5, 0.8}, plus the genre items that happen to be hot (24 of 120)
    hot = np.isin(train.target, w.hot)
    for e, rho in enumerate((0.2, 0.5, 0.8)):
        assert hot[train.env == e].mean() == pytest.approx(rho + (1 - rho) * 0.2, abs=0.06)
    again = make_world(3)
    assert (again.splits["iid"].history == w.splits["iid"].history).all()
