"""Stopping signals as Ctrl-C: SIGTERM and SIGHUP raise KeyboardInterrupt, so that every
`finally` (a run's network going down, a half-written file removed) runs whatever stops
isthmus; and the window in which they must wait (while a network is taken down)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOPPING_NAMES = tuple(s.name for s in STOPPING)  # how a run says which one stopped it


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def terminate_as_interrupt() -> None:
    """From now on SIGTERM and SIGHUP end this process as Ctrl-C does (Python's default
    for them is to die at once, leaving namespaces and routers behind)."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold stopping signals until the block is done (a teardown interrupted half-way
    would leave what it was removing); they are delivered when it ends."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
