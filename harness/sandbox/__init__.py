"""Sandboxes for model-written code; importing this registers `bwrap` with inspect-ai."""

from harness.sandbox.bwrap import BwrapSandboxEnvironment, bwrap_available
from harness.sandbox.config import BwrapConfig
from harness.sandbox.limits import limit_reason

__all__ = ["BwrapConfig", "BwrapSandboxEnvironment", "bwrap_available", "limit_reason"]
