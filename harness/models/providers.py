"""The model providers this package registers with inspect-ai.

`local/`, `replay/`, `scripted/`, and the method wrappers `pdr/`, `sr/`, `suco/`
(see `harness.models.methods`).

Heavy imports (torch, transformers) happen inside the factories, so listing providers is cheap.
"""

from __future__ import annotations

from inspect_ai.model import ModelAPI, modelapi

from harness.errors import HarnessUsageError

# the classes of the providers defined here, whose -M arguments `harness eval` checks against
# their constructors' signatures (imported on demand: `local/` needs torch)
PROVIDER_CLASSES = {
    "local": "harness.models.local:LocalTorchAPI",
    "replay": "harness.models.replay:ReplayAPI",
    "scripted": "harness.models.scripted:ScriptedAPI",
    "pdr": "harness.models.methods.refine_api:RefineAPI",
    "sr": "harness.models.methods.refine_api:SequentialRefineAPI",
    "suco": "harness.models.methods.suco_exit:SucoExitAPI",
}


def provider_class(name: str) -> type[ModelAPI] | None:
    """The ModelAPI class of a harness provider, or None for any other provider."""
    import importlib

    if name not in PROVIDER_CLASSES:
        return None
    module, _, attr = PROVIDER_CLASSES[name].partition(":")
    return getattr(importlib.import_module(module), attr)


@modelapi(name="local")
def local() -> type[ModelAPI]:
    """In-process torch models: built-in tiny models and Hugging Face checkpoints on disk."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise HarnessUsageError(
            "local/ needs torch and transformers: pip install 'torch==2.13.0' transformers"
        ) from None
    from harness.models.local import LocalTorchAPI

    return LocalTorchAPI


@modelapi(name="replay")
def replay() -> type[ModelAPI]:
    """Recorded outputs from a JSONL file or an inspect log."""
    from harness.models.replay import ReplayAPI

    return ReplayAPI


@modelapi(name="scripted")
def scripted() -> type[ModelAPI]:
    """Scripted answers with token usage, for tests."""
    from harness.models.scripted import ScriptedAPI

    return ScriptedAPI


@modelapi(name="pdr")
def pdr() -> type[ModelAPI]:
    """Parallel-Distill-Refine around an inner model: `pdr/INNER -M rounds=8,4,1`."""
    from harness.models.methods.refine_api import RefineAPI

    return RefineAPI


@modelapi(name="sr")
def sr() -> type[ModelAPI]:
    """Sequential Refinement around an inner model: `sr/INNER -M rounds=3`."""
    from harness.models.methods.refine_api import SequentialRefineAPI

    return SequentialRefineAPI


@modelapi(name="suco")
def suco() -> type[ModelAPI]:
    """Sufficiency-guided early exit around an inner model (our derivation from SuCo)."""
    from harness.models.methods.suco_exit import SucoExitAPI

    return SucoExitAPI
