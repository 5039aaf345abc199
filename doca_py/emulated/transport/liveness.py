"""Retry windows: how long work waiting for a silent peer may wait before the connection is declared dead.

Both transports fail waiting work with ``DOCA_ERROR_IO_FAILED`` when the peer showed no sign of
life (a byte read, room made in a full socket) for a whole window, as an RC queue pair whose
transport retries ran out. The timer runs on the I/O thread only while something waits.
"""

from __future__ import annotations

import time

__all__ = ["DEFAULT_RETRY_WINDOW", "window", "time_left"]

#: Hardware's window is retry_cnt (7) × the local ACK timeout (4.096 µs × 2^timeout; ~0.5 s at the usual
#: 16-18), a few seconds; 4 s keeps a loaded 2-core machine clear of false alarms.
DEFAULT_RETRY_WINDOW = 4.0


def window(value: float | None) -> float:
    """A configured window: positive seconds, else the default."""
    return value if value is not None and value > 0 else DEFAULT_RETRY_WINDOW


def time_left(span: float, *marks: float) -> float:
    """Seconds left of a *span*-second window that restarts at the latest of *marks* (``time.monotonic()``)."""
    return max(marks) + span - time.monotonic()
