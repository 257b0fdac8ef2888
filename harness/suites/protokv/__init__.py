"""ProtoKV: constant-footprint summary-state KV memory, its token-retention baselines, a suite.

The library part is usable on its own: `ProtoBank` (with `BankConfig`, `budget_split`,
`log_mass_bias`) and the cache policies (`ProtoKVCache`, `SlidingWindow`, `SinkWindow`,
`HeavyHitters`, `UniformThinning`, `FullCache`), each taking frames of (P, D) keys and values.
"""

from harness.suites.protokv.bank import (
    BankConfig,
    Budget,
    ProtoBank,
    PseudoFrames,
    budget_split,
    log_mass_bias,
)
from harness.suites.protokv.policies import (
    Exposed,
    FullCache,
    HeavyHitters,
    ProtoKVCache,
    SinkWindow,
    SlidingWindow,
    UniformThinning,
)

__all__ = [
    "BankConfig",
    "Budget",
    "Exposed",
    "FullCache",
    "HeavyHitters",
    "ProtoBank",
    "ProtoKVCache",
    "PseudoFrames",
    "SinkWindow",
    "SlidingWindow",
    "UniformThinning",
    "budget_split",
    "log_mass_bias",
]
