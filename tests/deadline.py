"""A hard deadline for a test step that could block the whole process (a FIFO, a stuck read).

`asyncio.wait_for` cannot end a call that blocks the event loop itself; SIGALRM interrupts the
blocking system call in the main thread, and its handler raises, so such a step fails the test
instead of hanging CI.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in the main thread if the block runs past `seconds`."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"blocked for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
