"""The `suco/` provider, registered by suco itself (with inspect-ai and with `harness.registry`).

The wrapper (`harness.suco.early_exit`) uses SuCo's segmenter, sufficiency and calibrators and
calls its inner model through `harness.models`, so it sits in `suco/`, above `models/`, and
`models/` never imports `suco/`.
"""

from __future__ import annotations

from inspect_ai.model import ModelAPI

from harness.models.providers import register_provider


@register_provider("suco", "harness.suco.early_exit:SucoExitAPI")
def suco() -> type[ModelAPI]:
    """Sufficiency-guided early exit around an inner model (our derivation from SuCo)."""
    from harness.suco.early_exit import SucoExitAPI

    return SucoExitAPI
