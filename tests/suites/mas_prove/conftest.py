"""A random (untrained) character-level GPT-2 in tiny-arith's format: `local/PATH` in seconds.

It answers nonsense, but it runs every code path tiny-arith runs (generation, teacher-forced
step scoring) without the minutes of training that `local/tiny-arith` takes on first use.

Its output head is saved apart from its embedding (`tie_word_embeddings=False`): with a tied
head the file holds no `lm_head.weight` and each load re-ties it, and once in CI (one xdist
worker, after other test files) a load left the head at a fresh random init instead (transformers'
load report: `lm_head.weight MISSING`), so two loads of the same folder disagreed.
"""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def random_tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from harness.models.tiny_arith import build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tok), n_positions=64, n_embd=16, n_layer=1, n_head=2,
            bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id, tie_word_embeddings=False,
        )
    )  # fmt: skip
    path = tmp_path_factory.mktemp("random-tiny")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
