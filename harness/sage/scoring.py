"""SAGE (reconstructed) scores for an annotated pool: the reference-only score and its inputs.

Every item has a text x_i, an annotation ŷ_i and, optionally, `label_correct` (1 when the
annotation is right). Its references are its k nearest other items by cosine similarity of the
text embeddings (`harness.sage.retrieval`), ties broken by index:
- `references="verified"`: only items whose annotation is known to be correct (label 1) are
  eligible, so a reference's annotation is trusted (spec `sage.md` §2: a gold reference pool);
- `references="all"`: every other item, its annotation taken as is (the "self-reference"
  variant; no labels needed).

The reference-only score needs no language model (spec §2, classification special case with
w = 0, the SimiFeat idea): S_i = Σ_j sim_ij·1[ŷ_i = ŷ_j] / Σ_j sim_ij over the k references, the
similarity-weighted agreement of the item's annotation with its neighbours' (negative similarities
count as 0; all-zero weights fall back to the plain mean). The error score is −S_i.

Provenance: the prompt format, the trusted-pool choice, the weighting and the aggregation are
reconstructions (spec §4); label results "SAGE (reconstructed)".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from harness.data import iter_jsonl
from harness.errors import HarnessUsageError

References = Literal["verified", "all"]


@dataclass(frozen=True)
class AnnotatedItem:
    """One line of a SAGE data file."""

    id: str  # unique id
    text: str  # the input x that was annotated
    annotation: str  # the annotation ŷ to verify
    label_correct: int | None = None  # 1 correct, 0 wrong, None unknown


def read_items(path: str) -> list[AnnotatedItem]:
    """Read `{"id", "text", "annotation", "label_correct"?}` JSONL; a bad line is a usage error."""
    file = Path(path)
    if not file.is_file():
        raise HarnessUsageError(f"{path}: no such file")
    items: list[AnnotatedItem] = []
    seen: set[str] = set()
    for n, row in iter_jsonl(file):
        where = f"{path}:{n}"
        for key in ("id", "text", "annotation"):
            if key not in row:
                raise HarnessUsageError(f"{where}: missing field '{key}'")
        sid = str(row["id"])
        if sid in seen:
            raise HarnessUsageError(f"{where}: repeated id '{sid}'")
        seen.add(sid)
        label = row.get("label_correct")
        if label is not None and label not in (0, 1):
            raise HarnessUsageError(f"{where}: label_correct must be 0 or 1, got {label!r}")
        items.append(AnnotatedItem(sid, str(row["text"]), str(row["annotation"]), label))
    if not items:
        raise HarnessUsageError(f"{path}: no items (the file is empty)")
    return items


def eligible_references(items: Sequence[AnnotatedItem], references: References) -> np.ndarray:
    """Indices of the items that may serve as references."""
    if references == "all":
        return np.arange(len(items))
    if references == "verified":
        return np.array([i for i, it in enumerate(items) if it.label_correct == 1], dtype=int)
    raise HarnessUsageError(f"references must be 'verified' or 'all', got {references!r}")


def check_k(k: int, n_eligible: int, references: References) -> None:
    """K must leave at least k eligible references for every item (itself excluded)."""
    if k < 1:
        raise HarnessUsageError(f"k must be at least 1, got {k}")
    if k >= n_eligible:
        if n_eligible < 2:
            fix = "label more items correct, or pass --references all"
        else:
            fix = f"use --k {n_eligible - 1} or less"
        raise HarnessUsageError(
            f"k={k} needs k + 1 items that can be references (an item is never its own), but "
            f"{n_eligible} can (references={references}); {fix}"
        )


def neighbours(
    embeddings: np.ndarray, ref_idx: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """For every item, its k most similar eligible references other than itself.

    Returns (indices into the item list, cosine similarities), both (n, k); ties go to the lower
    index.
    """
    from harness.sage.retrieval import knn

    found = knn(
        embeddings,
        embeddings[ref_idx],
        k,
        exclude_self=True,
        query_ids=np.arange(len(embeddings)),
        ref_ids=ref_idx,
    )
    return ref_idx[found.indices], found.similarities


def similarity_weighted_mean(values: np.ndarray, sims: np.ndarray) -> np.ndarray:
    """Row-wise mean of (n, k) values weighted by similarities clipped at 0; plain if all 0."""
    w = np.clip(sims, 0.0, None)
    total = w.sum(axis=1)
    weighted = (w * values).sum(axis=1) / np.where(total > 0, total, 1.0)
    return np.where(total > 0, weighted, values.mean(axis=1))


def reference_only_scores(
    annotations: Sequence[str], nbr_idx: np.ndarray, nbr_sim: np.ndarray
) -> np.ndarray:
    """Similarity-weighted agreement of each annotation with its neighbours' (higher: correct)."""
    ann = np.asarray(annotations, dtype=object)
    return similarity_weighted_mean((ann[nbr_idx] == ann[:, None]).astype(float), nbr_sim)
