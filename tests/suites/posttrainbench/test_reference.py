"""The instruct reference reproduces (issue 31): training is deterministic for its seed, and on a
clean cache the reference learns both benchmarks (add2 came out 0.08, against 0.96 documented)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.suites.posttrainbench.anticheat import weights_digest
from harness.suites.posttrainbench.tiny import (
    TinyConfig,
    deterministic,
    train_base,
    train_instruct,
)

# a few steps of both trainings, small enough for the default run
_SMALL = TinyConfig(
    n_layer=1, n_embd=16, n_head=2, pretrain_steps=6, instruct_steps=6, batch_size=4
)


def _train(folder: Path) -> tuple[str | None, str | None]:
    with deterministic(_SMALL.threads):
        base = train_base(folder / "base", _SMALL)
        instruct = train_instruct(base, folder / "instruct", _SMALL)
    return weights_digest(base), weights_digest(instruct)


def _fit_small(seed: int) -> dict:
    from transformers import GPT2Config, GPT2LMHeadModel

    from harness.suites.posttrainbench.benchmarks import rows, splits
    from harness.suites.posttrainbench.sft import fit
    from harness.suites.posttrainbench.tiny import build_tokenizer

    tok = build_tokenizer()
    with deterministic(1):
        import torch

        torch.manual_seed(seed)
        model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=16,
                                           n_layer=1, n_head=2))  # fmt: skip
        fit(model, tok, rows(splits("add2").train)[:64], steps=4, batch_size=8, seed=seed)
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.slow
def test_fitting_twice_under_the_pinned_settings_gives_the_same_weights() -> None:
    """About 20 s here, mostly importing transformers: slow."""
    import torch

    first, second, other = _fit_small(3), _fit_small(3), _fit_small(4)
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)  # the seed does matter
    assert not torch.are_deterministic_algorithms_enabled()  # restored afterwards


@pytest.mark.slow
def test_training_the_references_twice_gives_the_same_weights(tmp_path: Path) -> None:
    """Both trainings end to end, at a small size (about 1 minute here, mostly tokenising)."""
    import torch

    first, second = _train(tmp_path / "one"), _train(tmp_path / "two")
    assert None not in first and first == second
    assert not torch.are_deterministic_algorithms_enabled()  # restored afterwards
    other = TinyConfig(**{**_SMALL.__dict__, "seed": _SMALL.seed + 1})
    with deterministic(other.threads):
        moved = weights_digest(train_base(tmp_path / "other", other))
    assert moved != first[0]  # the digest does see the seed


@pytest.mark.long
def test_the_instruct_reference_learns_both_benchmarks_on_a_clean_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trains tiny-base and the instruct reference from nothing (about 5-8 minutes here), then
    evaluates both with the pristine evaluator, as a run's first sample does."""
    from harness.suites.posttrainbench.evaluator import evaluate_checkpoint
    from harness.suites.posttrainbench.tiny import base_checkpoint, instruct_checkpoint
    from harness.suites.posttrainbench.weights import benchmark_weights

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    base, instruct = base_checkpoint(), instruct_checkpoint()
    scores = {}
    for bench in ("add2", "copyfmt"):
        for name, folder in (("base", base), ("instruct", instruct)):
            metrics = asyncio.run(evaluate_checkpoint(folder, bench, (32, 16, 8)))
            scores[bench, name] = metrics.accuracy
    print("clean-cache references", scores)
    for bench in ("add2", "copyfmt"):
        assert scores[bench, "base"] <= 0.05, scores
        assert scores[bench, "instruct"] >= 0.9, scores
    weights = benchmark_weights(
        {b: scores[b, "instruct"] for b in ("add2", "copyfmt")},
        {b: scores[b, "base"] for b in ("add2", "copyfmt")},
    )
    assert all(0.4 <= w <= 0.6 for w in weights.weights.values()), weights
