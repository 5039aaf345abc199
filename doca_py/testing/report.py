"""How a ``DocaPair`` run failed: each side's ``SideReport`` and the ``PairError`` that carries them. Part of
``doca_py.testing.pair``, which re-exports every name."""

from __future__ import annotations

import dataclasses
import signal
from typing import Any

__all__ = ["PairError", "SideReport", "Failure", "failures", "first_failure", "headline"]

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
    raised_in_callbacks: list[str] = dataclasses.field(default_factory=list)
    """Every exception a callback of the side raised (it left ``progress()``), with its traceback, oldest
    first: also those the side's code caught."""
    crashed_at: float = 0.0
    """When the kit found the side dead (monotonic µs, the trace's clock), for a crashed side."""

    def format(self) -> str:
        """The report as text sections."""
        parts = [f"=== {self.role} side (pid {self.pid}): {self.status} ==="]
        if self.detail:
            parts.append(self.detail.rstrip())
        if self.raised_in_callbacks:
            parts.append(f"--- {self.role} side: exceptions raised by callbacks inside progress() ---\n"
                         + "\n".join(t.rstrip() for t in self.raised_in_callbacks))
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


@dataclasses.dataclass(frozen=True)
class Failure:
    """A failure of a side, with its time: a strict-mode finding, an injected fault, an exception (raised
    by a callback, or by the side's function), a crash."""

    ts: float
    """When (monotonic µs: the clock of every process's trace)."""
    text: str
    """What, in one line."""
    ends: bool = False
    """Whether it is what ended the side (its function's exception, its crash)."""


def failures(rep: SideReport) -> list[Failure]:
    """*rep*'s failures, oldest first, from its trace (a ``PeerGone`` is no failure of its own: the peer
    ended first)."""
    out: list[Failure] = []
    for ev in rep.trace:
        cat, name = ev.get("cat"), str(ev.get("name", ""))
        if ev.get("ph") != "i" or not isinstance(ev.get("ts"), (int, float)):
            continue
        if cat == "strict":
            out.append(Failure(ev["ts"], f"strict mode: {ev.get('args', {}).get('what', name)}"))
        elif cat in ("fault", "raised"):
            out.append(Failure(ev["ts"], name))
        elif cat == "kit" and name.startswith(f"{rep.role} side raised ") and not name.endswith(" PeerGone"):
            ends = rep.status == "raised"
            out.append(Failure(ev["ts"], _what(rep) if ends else name.removeprefix(f"{rep.role} side "), ends))
    if rep.status == "crashed" and rep.crashed_at:
        out.append(Failure(rep.crashed_at, _what(rep), True))
    return sorted(out, key=lambda f: f.ts)


def first_failure(reports: list[SideReport]) -> tuple[SideReport, Failure] | None:
    """The side that failed first and its first failure: the side whose first failure came first, however
    it ended (a side the kit ended while it handled its failure would have returned ``ok`` a moment later:
    how a side ended depends on timing, which failures came first does not); ``None`` when no side has a
    failure with a time (both timed out, say)."""
    found = [(fs[0], r) for r in reports for fs in [failures(r)] if fs]
    if not found:
        return None
    f, r = min(found, key=lambda x: x[0].ts)
    return r, f


def headline(first: SideReport, failure: Failure | None, reports: list[SideReport]) -> list[str]:
    """The first lines of a ``PairError``: the side that failed first and how, side and exception first
    (pytest's summary line is the first one); then what followed, on the other side too."""
    ended_by_itself = first.status == "crashed" or (first.status == "raised" and not _peer_gone(first))
    if failure is None or ended_by_itself:
        both = all(r.status == "timed out" for r in reports)
        lines = [f"both sides {_what(first)}" if both else f"{first.role} side {_what(first)}"]
    else:
        lines = [f"{first.role} side: {failure.text}"]
    if failure is None:
        return lines
    if ended_by_itself and not failure.ends:
        lines.append(f"its first failure: {failure.text}")
    elif first.status == "timed out":
        lines.append(f"then the {first.role} side {_what(first)}")
    for other in reports:
        if other is first:
            continue
        later = failures(other)
        if other.status == "crashed" or (other.status == "raised" and not _peer_gone(other)):
            what = f"{other.role} side {_what(other)}"
        elif later:  # a PeerGone is no failure of its own: the side saw this one end
            what = f"{other.role} side: {later[0].text}"
        else:
            continue
        when = f", {(later[0].ts - failure.ts) / 1000:.1f} ms later" if later else ""
        lines.append(f"the {other.role} side's failure followed{when}: {what}")
    return lines


def _peer_gone(rep: SideReport) -> bool:
    """Whether the side's function raised ``PeerGone``: it found the other side ended."""
    lines = [ln for ln in rep.detail.strip().splitlines() if ln.strip()]
    return bool(lines) and lines[-1].lstrip().startswith(("doca_py.testing.PeerGone", "PeerGone"))


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code} (it left without returning, e.g. os._exit or sys.exit in a thread)"
