"""Which storage target to blame for requests past ``--target-io-timeout`` (degraded mode), as pure logic.

A read asks two targets at once and both requests share the transaction's deadline, so when one
target stalls, a healthy target that is merely slow can have requests past that deadline too: the
late requests alone may not tell them apart (the same transactions, the same deadline). What does
is that a stalled target answers nothing, while a slow one keeps completing something — acknowledging
a request, answering an older one. So the target blamed is the one **silent the longest**: the one
whose last completion is the oldest; at equal silence, the one whose oldest late request is the
oldest (late the longest), then the one with the most late requests. Only when all of these are equal
(both silent for the whole ``--target-io-timeout``, as far as this worker can tell) is the first role
taken; the other then gets a new window.

A verdict is given only at the scan after the one that found a target late (:class:`LateTargets`):
the worker checks its deadlines before it progresses its completions, so an answer that came in
time but was not yet processed would otherwise be missed.
"""

from __future__ import annotations

from collections.abc import Sequence

from .transaction import Transaction

__all__ = ["pick_late_target", "LateTargets"]


def pick_late_target(txns: Sequence[Transaction], now: float, heard: Sequence[float]) -> int | None:
    """The role to take out at *now*, or ``None`` when no request is past its deadline.

    *heard*: per role, when it last completed anything (a request acknowledged or answered). Among
    the roles with a late request: the one silent the longest (oldest *heard*), then the one late the
    longest (oldest late deadline), then the one with the most late requests, then the first."""
    oldest = [now, now, now]
    counts = [0, 0, 0]
    for t in txns:
        bits = t.send_mask | t.resp_mask
        if not bits or t.deadline > now:
            continue
        for r in range(3):
            if bits & (1 << r):
                counts[r] += 1
                if t.deadline < oldest[r]:
                    oldest[r] = t.deadline
    late = [r for r in range(3) if counts[r]]
    if not late:
        return None
    return min(late, key=lambda r: (heard[r], oldest[r], -counts[r]))


class LateTargets:
    """One worker's judge of late targets: when each role was last heard, and the two-scan verdict.

    The worker's completion callbacks add one to ``answers[role]`` (a counter, no clock read per IO);
    :meth:`scan`, every ≤ 0.1 s, turns a changed counter into "heard at this scan"."""

    __slots__ = ("answers", "heard", "suspect", "_seen")

    def __init__(self) -> None:
        self.answers = [0, 0, 0]   # completions per role, counted by the worker's callbacks
        self.heard = [0.0, 0.0, 0.0]  # the scan at which each role's count last moved (time.monotonic())
        self.suspect = False       # the last scan found a late request: the next one gives the verdict
        self._seen = [0, 0, 0]

    def restart(self, now: float) -> None:
        """The data path starts (again) at *now*: every role counts as just heard."""
        self.heard = [now, now, now]
        self._seen = list(self.answers)
        self.suspect = False

    def note(self, now: float) -> None:
        """Roles that completed anything since the last call were heard at *now*."""
        answers, seen = self.answers, self._seen
        for r in range(3):
            if answers[r] != seen[r]:
                seen[r] = answers[r]
                self.heard[r] = now

    def scan(self, txns: Sequence[Transaction], now: float) -> int | None:
        """The role to take out now, or ``None``. The scan that first finds a request late only sets
        :attr:`suspect`; the next one (after the worker progressed what had come in) decides."""
        self.note(now)
        role = pick_late_target(txns, now, self.heard)
        if role is None or not self.suspect:
            self.suspect = role is not None
            return None
        self.suspect = False
        return role
