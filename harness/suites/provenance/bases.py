"""The suite's pretrained models: teacher, proxy and student bases, trained on clean source text.

Each is trained once from its seed and cached under the harness cache folder, keyed by a hash
of everything that defines it; a file lock makes concurrent runs (local workers, Ray tasks on
one node) wait for the first one instead of training it again. Settings are ours (§5 of the
spec): a 2-layer d=128 teacher, a 2-layer d=96 proxy (seed 1), a 1-layer student base (seed 2)
and its GRU variant, AdamW on 128-token windows of source text.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from harness.paths import cache_dir
from harness.suites.provenance.lm import LMConfig, TinyLM, train_lm
from harness.suites.provenance.source import MarkovSource, MarkovTeacher, make_source

CACHE_VERSION = 1  # bump when the training below changes


@dataclass(frozen=True)
class BaseSpec:
    """One pretrained model.

    Attributes:
        lm: Its shape.
        seed: Initialisation, data and batch order.
        texts: Clean source texts it trains on.
        length: Tokens per text.
        epochs: Passes over them.
        lr: AdamW learning rate.
        batch_size: Texts per step.

    """

    lm: LMConfig
    seed: int
    texts: int = 2000
    length: int = 128
    epochs: int = 4
    lr: float = 3e-3
    batch_size: int = 32


def spec_of(settings: dict[str, Any]) -> BaseSpec:
    """A BaseSpec from the JSON-ready dict a task's settings hold."""
    fields = dict(settings)
    return BaseSpec(lm=LMConfig(**fields.pop("lm")), **fields)


def _key(spec: BaseSpec, source_seed: int) -> str:
    blob = json.dumps({"v": CACHE_VERSION, "source": source_seed, **asdict(spec)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train_base(spec: BaseSpec, source: MarkovSource) -> TinyLM:
    """Train the model of `spec` on clean text of `source` (deterministic per thread count)."""
    torch.manual_seed(spec.seed)
    model = TinyLM(spec.lm)
    rng = np.random.default_rng(10_000 + spec.seed)
    data = torch.from_numpy(source.sample(spec.texts, spec.length, rng))
    train_lm(model, data, None, epochs=spec.epochs, lr=spec.lr, batch_size=spec.batch_size,
             seed=spec.seed)  # fmt: skip
    return model


def load_base(spec: BaseSpec, source_seed: int) -> TinyLM:
    """The cached model of `spec`, trained now if it is not cached yet."""
    folder = cache_dir() / "provenance-models"
    folder.mkdir(parents=True, exist_ok=True)
    key = _key(spec, source_seed)
    path = folder / f"{key}.pt"
    with open(folder / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        model = TinyLM(spec.lm)
        if path.exists():
            model.load_state_dict(torch.load(path, weights_only=True))
        else:
            model = train_base(spec, make_source(source_seed))
            tmp = path.with_suffix(".tmp")
            torch.save(model.state_dict(), tmp)
            tmp.replace(path)
    model.eval()
    return model


def teacher_of(kind: str, spec: BaseSpec | None, source_seed: int) -> Any:
    """The teacher: the source itself (`source`) or a transformer trained on it (`trained`)."""
    if kind == "source":
        return MarkovTeacher(make_source(source_seed))
    if kind != "trained" or spec is None:
        raise ValueError(f"teacher must be 'source' or 'trained' (with a spec), got {kind!r}")
    return load_base(spec, source_seed)
