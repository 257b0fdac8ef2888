"""The SAGE LLMBar validation table, on the shipped data (hashing embeddings for speed)."""

import numpy as np

from harness.sage.retrieval import HashingEmbedder, knn
from harness.stats._auroc import auroc
from harness.validation.sage_llmbar import K, build_table, judge_scores, load_pool


def test_table_rows_and_an_independent_auroc():
    pool = load_pool(None)  # HARNESS_DATA_DIR points at ../shared/data in make test
    assert len(pool.human) == 885
    emb = HashingEmbedder().encode(pool.text)
    found = knn(emb, emb, K, exclude_self=True)
    assert not (found.indices == np.arange(len(pool.human))[:, None]).any()  # never itself
    rows = build_table(pool, found.indices, found.similarities)
    assert len(rows) == 4 * 9 and all(len(r) == 10 for r in rows)
    # GPT-4 on LLMBar_Natural, direct score: a brute-force Mann-Whitney over error/correct pairs
    s = judge_scores(pool, "GPT-4", found.indices, found.similarities)["direct"]
    m = pool.subset == "LLMBar_Natural"
    err = (pool.verdicts["GPT-4"] != pool.human)[m]
    x = -s[m]
    pos, neg = x[err], x[~err]
    brute = np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg])
    assert abs(auroc(x, err.astype(int)) - brute) < 1e-12
    row = next(r for r in rows if r[0] == "GPT-4" and r[1] == "LLMBar_Natural")
    assert row[4].startswith(f"{brute:.3f}")
