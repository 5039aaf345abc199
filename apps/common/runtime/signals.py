"""Ctrl-C and ``SIGTERM`` for the storage apps: a flag, never an exception mid-call.

Each app's waits (control phase, workers, the data path) look at the flag at least every
100 ms, so a signal stops any phase promptly and cleanly.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["abort_on_signals"]


@contextmanager
def abort_on_signals(abort: threading.Event, *, announce: str | None = None,
                     second_interrupt_raises: bool = False) -> Iterator[threading.Event]:
    """Make ``SIGINT`` and ``SIGTERM`` set *abort* (main thread only; restored on exit).

    *announce* is written to stderr on the first signal; with *second_interrupt_raises*
    a second ``SIGINT`` raises ``KeyboardInterrupt`` as usual (for a user who insists)."""
    if threading.current_thread() is not threading.main_thread():
        yield abort
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if second_interrupt_raises and abort.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if announce is not None and not abort.is_set():
            sys.stderr.write(announce)
            sys.stderr.flush()
        abort.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield abort
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
