"""Noticing that this process itself did not run (SIGSTOP, a suspended VM, a starved CPU).

A time-out says the peer did not answer in time; that is true only if this process was there to
hear it. A process that was stopped and then resumed finds every deadline it had long past and, unless
it looks, blames its peers for its own pause. A loop that comes round every *interval* seconds tells
the difference: if far more time went by since its last round than its interval (`STALL_MIN`, or
`STALL_FACTOR` intervals, whichever is longer) **and** the process used little CPU meanwhile, the
process did not run in between. The CPU time tells a stop (or a machine that gave the process no CPU)
from a round that was merely long because the process was busy: a busy process's CPU time keeps up with
the clock, a stopped one's does not move.

`LoopClock` is that check for one loop (`tick` once per round, `restart` when the loop resumes
after work of its own that may take long); every stall it sees is also recorded process-wide, so
that another thread can add to a peer-blaming message that this process had just been stopped
(`stall_note`).
"""

from __future__ import annotations

import threading
import time

__all__ = ["LoopClock", "STALL_MIN", "STALL_FACTOR", "RECENT", "last_stall", "stall_note", "describe_stall"]

STALL_MIN = 2.0
"""Seconds a loop may come round late without being called stalled (a loaded machine delays a
100 ms round by a second or so; a stop of a few seconds is what matters)."""
STALL_FACTOR = 20.0
"""How many of its intervals a loop may take before a round is called stalled."""

RECENT = 10.0
"""Seconds after a stall during which a message blaming a peer mentions it (`stall_note`): longer than
the transports' retry windows (4 s), whose time-outs a stall of this process can trip."""

_lock = threading.Lock()
_last: tuple[float, float] = (0.0, float("-inf"))  # (length, when it ended), monotonic


def last_stall() -> tuple[float, float]:
    """``(seconds, ended_at)`` of the last stall any loop of this process saw (``(0, -inf)``: none)."""
    return _last


def _record(length: float, ended: float) -> None:
    global _last
    with _lock:
        _last = (length, ended)


def describe_stall(seconds: float) -> str:
    """``this process did not run for 12.3 s (stopped, e.g. by SIGSTOP, suspended or starved of CPU)``."""
    return f"this process did not run for {seconds:.1f} s (stopped, e.g. by SIGSTOP, suspended or starved of CPU)"


def stall_note(within: float = RECENT) -> str:
    """``"; note: this process did not run for 12.3 s until 0.4 s before"`` if a stall ended at most
    *within* seconds ago (what a message blaming a peer adds: the pause may be the cause), else ``""``."""
    length, ended = _last
    ago = time.monotonic() - ended
    if length <= 0 or ago > within:
        return ""
    return f"; note: {describe_stall(length)} until {ago:.1f} s before, which may be why"


class LoopClock:
    """The rounds of one loop that should come round every *interval* seconds."""

    def __init__(self, interval: float, *, minimum: float = STALL_MIN) -> None:
        self.interval = interval
        self.threshold = max(minimum, STALL_FACTOR * interval)
        """Seconds without running (wall time less the process's CPU time) that make a stall."""
        self._last = time.monotonic()
        self._cpu = time.process_time()

    def restart(self) -> None:
        """The loop starts (again) now: what it did since its last round was its own work, not a stall."""
        self._last, self._cpu = time.monotonic(), time.process_time()

    def tick(self) -> float:
        """One round: the seconds this process did not run since the previous round (the time gone by less
        the CPU time it used) if that is a stall, else 0."""
        now, cpu = time.monotonic(), time.process_time()
        idle = (now - self._last) - (cpu - self._cpu)
        self._last, self._cpu = now, cpu
        if idle <= self.threshold:
            return 0.0
        _record(idle, now)
        return idle
