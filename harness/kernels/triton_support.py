"""What every Triton kernel module here shares: the guarded import and the interpreter switch.

Kernels are not decorated at import: `triton.jit` reads TRITON_INTERPRET when it wraps a
function, so each module wraps its kernel on first launch, once per interpreter mode, through
`jit_for_mode`; and the modules import (and dispatch to their references) without triton.
Kernel bodies call triton.language builtins only: library helpers such as tl.cdiv, tl.zeros and
tl.sigmoid are themselves @jit functions, wrapped when triton was imported, and fail under an
interpreter switched on later (the tests import the modules before they set TRITON_INTERPRET,
so they catch such a call).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: dispatch falls back to the references
    triton = None
    tl = None

# The dtypes the kernels take (all inputs of a launch in one of them).
KERNEL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def interpreting() -> bool:
    """Whether triton runs kernels through its CPU interpreter now."""
    knobs = getattr(triton, "knobs", None)  # triton >= 3.3; older releases read the variable
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@functools.cache
def jit_for_mode(kernel: Callable[..., Any], interpret: bool) -> Any:
    """`triton.jit(kernel)` for one interpreter mode; `interpret` is the cache key."""
    del interpret  # triton.jit consults the same knob that produced the key
    return triton.jit(kernel)
