"""How a ``DocaPair`` run failed: each side's ``SideReport`` and the ``PairError`` that carries them. Part of
``doca_py.testing.pair``, which re-exports every name."""

from __future__ import annotations

import dataclasses
import signal
from typing import Any

__all__ = ["PairError", "SideReport"]

_LOG_TAIL = 60


class PairError(AssertionError):
    """A side of a ``DocaPair`` run failed: raised, crashed or timed out.

    :ivar reports: the ``SideReport`` of each side, host first.
    """

    def __init__(self, message: str, reports: list[SideReport]) -> None:
        super().__init__(message)
        self.reports = reports


PairError.__module__ = "doca_py.testing"  # its public name, in reports


@dataclasses.dataclass
class SideReport:
    """How one side of a run ended, with its forensics."""

    role: str
    """``"host"`` or ``"dpu"``."""
    status: str = "running"
    """``"ok"``, ``"raised"``, ``"crashed"``, ``"timed out"`` or ``"ended"`` (stopped because the other
    side failed)."""
    detail: str = ""
    """The traceback, the exit status, or where the side was when it was ended."""
    log: str = ""
    """The side's stdout, stderr and log records."""
    tail: str = ""
    """The side's last task events, as text."""
    findings: list[str] = dataclasses.field(default_factory=list)
    """Strict-mode findings of the side."""
    trace: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """The side's events as Chrome trace events (see ``doca_py.emulated.trace``)."""
    pid: int = 0
    """The side's process id."""

    def format(self) -> str:
        """The report as text sections."""
        parts = [f"=== {self.role} side (pid {self.pid}): {self.status} ==="]
        if self.detail:
            parts.append(self.detail.rstrip())
        parts.append(f"--- {self.role} side: strict-mode findings ---\n" + ("\n".join(self.findings) or "none"))
        log = "\n".join(self.log.rstrip().splitlines()[-_LOG_TAIL:])
        parts.append(f"--- {self.role} side: log (last {_LOG_TAIL} lines) ---\n{log or '(empty)'}")
        parts.append(f"--- {self.role} side: last task events ---\n{self.tail or '(none: the process died)'}")
        return "\n".join(parts)


def _what(rep: SideReport) -> str:
    """``raised ValueError: …``, ``crashed: killed by SIGSEGV``, ``timed out after 60 s`` …"""
    lines = [ln for ln in rep.detail.strip().splitlines() if ln.strip()]
    if rep.status == "raised" and lines:
        return f"raised {lines[-1].strip() if lines[0].startswith('Traceback') else lines[0]}"
    if rep.status == "crashed":
        return f"crashed: {rep.detail.removeprefix('the process died: ')}"
    if rep.status == "timed out" and lines:
        return lines[0].split(";")[0]
    return rep.status


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code} (it left without returning, e.g. os._exit or sys.exit in a thread)"
