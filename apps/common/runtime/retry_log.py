"""A rate-limited log of the attempts to reach a peer that is not up yet.

A bridge retries its storage targets every 100 ms until they listen (as the reference). Each
failed attempt goes to :meth:`RetryLog.failed` with its reason: the first is logged at INFO,
then at most one WARNING per :data:`RETRY_LOG_INTERVAL` seconds with the attempts made and the
number not logged since; success after retries is logged at INFO.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable

__all__ = ["RetryLog", "RETRY_LOG_INTERVAL", "errno_reason"]

RETRY_LOG_INTERVAL = 10.0
"""Seconds between two log lines about the same peer's retries."""


def errno_reason(err: int | None, fallback: str = "timed out") -> str:
    """``ECONNREFUSED (Connection refused)`` for an errno, *fallback* for none."""
    if not err:
        return fallback
    return f"{errno.errorcode.get(err, f'errno {err}')} ({os.strerror(err)})"


class RetryLog:
    """The retries towards one peer, *what* (``storage target data_1 (127.0.0.1:12001)``)."""

    def __init__(self, log: logging.Logger, what: str, retry_interval: float, *,
                 interval: float = RETRY_LOG_INTERVAL, clock: Callable[[], float] = time.monotonic,
                 bound: str = "") -> None:
        self.log, self.what, self.retry_interval, self.interval, self.clock = log, what, retry_interval, interval, clock
        self.bound = bound
        """How long the retries may go on, for the first line (``"for up to 60 s (--target-connect-timeout)"``)."""
        self.attempts = 0
        """Failed attempts so far."""
        self.last_reason = ""
        """Why the last attempt failed (empty before the first failure)."""
        self._first: float | None = None
        self._logged_at = 0.0
        self._unlogged = 0

    def failed(self, reason: str) -> None:
        """One attempt failed because of *reason*."""
        now = self.clock()
        self.attempts += 1
        self.last_reason = reason
        if self._first is None:
            self._first = self._logged_at = now
            self.log.info("%s is not reachable: %s; retrying every %g s%s", self.what, reason, self.retry_interval,
                          f" {self.bound}" if self.bound else "")
        elif now - self._logged_at >= self.interval:
            self.log.warning("%s is still not reachable after %d attempts in %.0f s: %s (%d attempt(s) not logged "
                             "since the last message); retrying", self.what, self.attempts, now - self._first,
                             reason, self._unlogged)
            self._logged_at, self._unlogged = now, 0
        else:
            self._unlogged += 1

    def succeeded(self) -> None:
        """The peer answered: say so if it took retries."""
        if self._first is not None:
            self.log.info("%s reached after %d failed attempt(s) in %.1f s", self.what, self.attempts,
                          self.clock() - self._first)
