"""The model providers this package registers with inspect-ai, and with `harness.registry`.

`local/`, `replay/`, `scripted/`, and the method wrappers `pdr/`, `sr/` (see
`harness.models.methods`). `suco/` registers itself (`harness.suco.provider`); a suite's own
providers (`iwg/`, `serving/`) are declared by its catalog entry, which registers them as well.

Heavy imports (torch, transformers) happen inside the factories, so listing providers is cheap.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai.model import ModelAPI, modelapi

from harness import registry
from harness.errors import HarnessUsageError

Factory = Callable[[], type[ModelAPI]]


def register_provider(name: str, api: str) -> Callable[[Factory], Factory]:
    """Register provider `name` with inspect (the decorated factory) and with the registry.

    `api` is the `module:NAME` of its class, whose constructor's signature `harness eval`
    checks -M arguments against (imported on demand: `local/` needs torch).
    """
    registry.register("provider", name, api)
    return modelapi(name=name)


def provider_class(name: str) -> type[ModelAPI] | None:
    """The ModelAPI class of a registered provider, or None for any other (inspect's own)."""
    if registry.target("provider", name) is None:
        return None
    return registry.get("provider", name)


@register_provider("local", "harness.models.local:LocalTorchAPI")
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


@register_provider("replay", "harness.models.replay:ReplayAPI")
def replay() -> type[ModelAPI]:
    """Recorded outputs from a JSONL file or an inspect log."""
    from harness.models.replay import ReplayAPI

    return ReplayAPI


@register_provider("scripted", "harness.models.scripted:ScriptedAPI")
def scripted() -> type[ModelAPI]:
    """Scripted answers with token usage, for tests."""
    from harness.models.scripted import ScriptedAPI

    return ScriptedAPI


@register_provider("pdr", "harness.models.methods.refine_api:RefineAPI")
def pdr() -> type[ModelAPI]:
    """Parallel-Distill-Refine around an inner model: `pdr/INNER -M rounds=8,4,1`."""
    from harness.models.methods.refine_api import RefineAPI

    return RefineAPI


@register_provider("sr", "harness.models.methods.refine_api:SequentialRefineAPI")
def sr() -> type[ModelAPI]:
    """Sequential Refinement around an inner model: `sr/INNER -M rounds=3`."""
    from harness.models.methods.refine_api import SequentialRefineAPI

    return SequentialRefineAPI
