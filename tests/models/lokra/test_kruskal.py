import math

import pytest
import torch

from harness.models.lokra.kruskal import (
    exact_krank,
    khatri_rao,
    kr_bound,
    kr_bound_holds,
    numerical_krank,
)

I4 = torch.eye(4)
E1 = I4[:, :1]


def test_spec_vectors():
    # specs/lokra.md §3
    assert exact_krank(I4) == 4
    dup = torch.cat([I4, E1], dim=1)
    assert torch.linalg.matrix_rank(dup).item() == 4
    assert exact_krank(dup) == 1
    assert exact_krank(torch.cat([I4, 2 * E1], dim=1)) == 1  # proportional, not equal: still 1


def test_zero_column_and_edge_cases():
    assert exact_krank(torch.cat([I4, torch.zeros(4, 1)], dim=1)) == 0
    assert exact_krank(torch.zeros(3, 0)) == 0
    # three coplanar columns in R^3: every pair independent, the triple not
    M = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    assert exact_krank(M) == 2
    # a near-dependent triple counts as dependent at tol 1e-3 but not at 1e-6
    M[2, 2] = 1e-5
    assert exact_krank(M) == 2
    assert exact_krank(M, tol=1e-7) == 3


def test_lemma_on_random_factors():
    # specs/lokra.md §3: random C, D in R^{3×6}, k = 3 each, k(D⊙C) = 6 >= min(5, 6)
    g = torch.Generator().manual_seed(0)
    C, D = torch.randn(3, 6, generator=g), torch.randn(3, 6, generator=g)
    b = kr_bound(C, D)
    assert (b.k_c, b.k_d, b.k_product, b.bound, b.holds) == (3, 3, 6, 5, True)
    assert kr_bound_holds(C, D)


def test_product_form_is_vacuous():
    # specs/lokra.md §3: B (4×3) of rank 2 and A (3×5) with k_A = 3 give k(BA) = 2.
    g = torch.Generator().manual_seed(1)
    B = torch.randn(4, 2, generator=g) @ torch.randn(2, 3, generator=g)
    A = torch.randn(3, 5, generator=g)
    assert torch.linalg.matrix_rank(B).item() == 2
    assert exact_krank(A) == 3
    assert exact_krank(B @ A) == 2


def test_khatri_rao_columns_are_kronecker_products():
    g = torch.Generator().manual_seed(2)
    C, D = torch.randn(3, 5, generator=g), torch.randn(2, 5, generator=g)
    P = khatri_rao(D, C)
    assert P.shape == (6, 5)
    for j in range(5):
        torch.testing.assert_close(P[:, j], torch.kron(D[:, j], C[:, j]))
    with pytest.raises(ValueError, match="equal column counts"):
        khatri_rao(D, torch.randn(3, 4))


def test_exact_refuses_more_than_16_columns():
    exact_krank(torch.randn(3, 16))
    with pytest.raises(ValueError, match="numerical_krank"):
        exact_krank(torch.randn(3, 17))


def _constructed() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    base = torch.randn(5, 9, generator=g)
    dup = base.clone()
    dup[:, 7] = -3 * dup[:, 2]  # a proportional pair: k = 1
    planar = base.clone()
    planar[:, 8] = planar[:, 0] + planar[:, 1] - planar[:, 4]  # 4 dependent columns: k = 3
    low = torch.randn(5, 2, generator=g) @ torch.randn(2, 9, generator=g)  # rank 2: k = 2
    return [base, dup, planar, low, torch.eye(6)]


@pytest.mark.parametrize("case", range(5))
def test_numerical_matches_exact_on_constructed_cases(case):
    M = _constructed()[case]
    expected = [5, 1, 3, 2, 6][case]
    assert exact_krank(M) == expected
    assert numerical_krank(M, generator=torch.Generator().manual_seed(0)) == expected


@pytest.mark.parametrize("seed", range(4))
def test_numerical_matches_exact_on_random_cases(seed):
    # At tol 1e-3 a random matrix with many columns often has a near-dependent subset, so the
    # value is not known in advance: the two functions must agree, whatever it is.
    g = torch.Generator().manual_seed(seed)
    M = torch.randn(3 + seed, 10 + seed, generator=g)
    assert numerical_krank(M, generator=g) == exact_krank(M)
    M[:, seed] = 0.5 * M[:, seed + 3]  # a proportional pair
    assert numerical_krank(M, generator=g) == exact_krank(M) == 1


def test_numerical_matches_exact_where_it_samples():
    # 8×16 of rank 5: sizes 4 and 5 have more than 2,000 subsets and are sampled; every 6-subset
    # is dependent, so any sample finds one. tol 1e-5: at 1e-3 some of the 4,368 5-subsets of a
    # 5-dim space are near-dependent and the k-rank is 4.
    g = torch.Generator().manual_seed(6)
    M = torch.randn(8, 5, generator=g, dtype=torch.float64) @ torch.randn(
        5, 16, generator=g, dtype=torch.float64
    )
    assert math.comb(16, 5) > 2000
    assert exact_krank(M, tol=1e-5) == numerical_krank(M, tol=1e-5, generator=g) == 5


def test_numerical_is_an_upper_bound_when_sampling_misses():
    # Seed 5 of the case above has a rare near-dependent 5-subset (exact k = 4) that 2,000
    # samples miss: the sampled estimate can only err upwards.
    g = torch.Generator().manual_seed(5)
    M = torch.randn(8, 5, generator=g, dtype=torch.float64) @ torch.randn(
        5, 16, generator=g, dtype=torch.float64
    )
    assert exact_krank(M, tol=1e-5) == 4
    assert numerical_krank(M, tol=1e-5, generator=g) == 5
    # with samples >= C(16, 5) = 4,368 that size is enumerated and the estimate is exact
    assert numerical_krank(M, tol=1e-5, samples=5000, generator=g) == 4


def test_numerical_samples_when_enumeration_is_too_large():
    # 40 columns in R^4 with one dependent 3-subset among C(40, 3) = 9,880; sampling 2,000
    # subsets per size misses it with probability (1 - 1/9880)^2000 ≈ 0.82, so the estimate is
    # an upper bound: a planted pair (C(40, 2) = 780 <= 2,000 subsets, enumerated) is always found.
    g = torch.Generator().manual_seed(4)
    M = torch.randn(4, 40, generator=g)
    M[:, 39] = 2 * M[:, 5]
    assert numerical_krank(M, generator=g) == 1
    assert math.comb(40, 2) <= 2000


def test_worst_subset_sigma_is_one_for_orthonormal_and_zero_for_duplicates():
    from harness.models.lokra.kruskal import worst_subset_sigma

    assert worst_subset_sigma(torch.eye(4), 4) == pytest.approx(1.0)
    dup = torch.cat([torch.eye(4), 3 * torch.eye(4)[:, :1]], dim=1)  # [I_4, 3e_1]
    assert worst_subset_sigma(dup, 2) == pytest.approx(0.0, abs=1e-7)  # {e1, 3e1} is enumerated
    g = torch.Generator().manual_seed(0)
    M = torch.randn(8, 64, generator=g)
    s = worst_subset_sigma(M, 8, generator=torch.Generator().manual_seed(1))
    assert 0 < s < 1 and s <= worst_subset_sigma(M, 4, generator=torch.Generator().manual_seed(1))
    with pytest.raises(ValueError, match="q=9"):
        worst_subset_sigma(M, 9)
