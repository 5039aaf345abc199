"""Which storage targets the gga service may still use (degraded mode, beyond the reference).

A target is **out** once it is lost (its control connection closed, an RDMA task or context
failed) or stalled (a request of it was not answered within ``--target-io-timeout``, or a
stop/shutdown relay was not answered within ``--control-timeout``). With one target out the
service is *degraded*: reads are served from the two others (data_1 or data_2 out: the other
half plus the parity and an EC recover; data_p out: plain reads), writes are refused. With two
out nothing can be served. A target stays out for the rest of the session: it may hold stale
data (writes were refused or partially applied while it was out) and a stalled one may still
answer late, so nothing is ever sent to it again.

One :class:`TargetHealth` is shared by the control thread and every worker; :meth:`mark_out`
logs the WARNING once per target, whoever notices first. Workers compare :attr:`version` with
the one they last applied, so a target taken out by another thread is routed around at their
next housekeeping round.
"""

from __future__ import annotations

import logging
import threading

from apps.common.runtime.stall import stall_note
from apps.storage.wire.addressing import TargetRole

__all__ = ["TargetHealth", "role_name"]

log = logging.getLogger("apps.gga_offload")


def role_name(role: TargetRole | int) -> str:
    """``data_1``, ``data_2`` or ``data_p``."""
    return TargetRole(role).name.lower()


class TargetHealth:
    """The set of targets that are out, shared between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.out: frozenset[TargetRole] = frozenset()
        self.reasons: dict[TargetRole, str] = {}
        self.version = 0

    @property
    def degraded(self) -> bool:
        """Whether any target is out."""
        return bool(self.out)

    def mark_out(self, role: TargetRole, why: str) -> bool:
        """Take *role* out (for the session); ``True`` if it was not out before."""
        role = TargetRole(role)
        why += stall_note()  # a target lost right after this process was stopped may have dropped a silent bridge
        with self._lock:
            if role in self.out:
                return False
            self.out = self.out | {role}
            self.reasons[role] = why
            self.version += 1
            out = self.out
        if len(out) == 1:
            others = " and ".join(role_name(r) for r in TargetRole if r is not role)
            how = "plain reads" if role is TargetRole.DATA_P else "the other half plus the parity, EC-recovered"
            log.warning("storage target %s %s: entering degraded mode — reads are served from %s (%s); writes "
                        "are refused", role_name(role), why, others, how)
        else:
            log.error("storage target %s %s: %s are out, every IO is answered with an error", role_name(role), why,
                      " and ".join(role_name(r) for r in sorted(out)))
        return True

    def describe(self) -> str:
        """``data_2 (lost: ...)`` for each target that is out."""
        return ", ".join(f"{role_name(r)} ({self.reasons.get(r, '?')})" for r in sorted(self.out))
