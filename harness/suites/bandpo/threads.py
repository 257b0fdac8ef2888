"""Runs of this suite train on one torch thread, whatever the pool set.

The models are tiny (a 100-logit vector, a 64-wide GRU on batches of 32-256): more intra-op
threads only add synchronisation. Measured on the 2-core development machine under load (load
average 13): a 4-iteration RLVR run took 3.4 s wall and 1.8 s CPU on one thread, against 60 s
wall and 24 s CPU on two. One thread also makes a run's result independent of the pool.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Set torch to one intra-op thread for the block, and restore the count after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
