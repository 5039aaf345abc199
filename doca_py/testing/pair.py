"""Run a host function and a DPU function in two processes, each with its own emulated side.

``DocaPair.run`` starts both sides with ``multiprocessing``. By default (``"warm"``) each side
is forked from a zygote that has imported doca_py and the emulator and holds no emulator state
(``doca_py.testing.warm``): a fresh emulator per side, as a host and a BlueField each run their
own DOCA, without a fresh interpreter's start-up. ``"spawn"`` starts a fresh interpreter per side;
``"fork"`` copies the test process, whose emulator may already hold threads and objects. Each
function gets one ``Side``: its device, the DPU's representor of the host PF, and a pipe to the
peer. Both results come back; an exception, a crash or a timeout on either side ends the other
side and raises ``PairError`` with that side's traceback, log and last task events.

Functions are sent by module and name (``FnRef``), so a module-level function of a
test file works under ``warm`` and ``spawn`` even when the file is not importable as a package. A
closure or a lambda needs ``start_method="fork"`` (it is not pickled then).
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection as mpc
import multiprocessing.process as mp_process
import os
import pickle
import secrets
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

from .child import STACKS as _STACKS
from .child import _child, _fn_name, _Spec
from .knobs import Knobs, check_impl
from .native import NativeDoca
from .native import resolve as resolve_native
from .leaks import describe_leaks, open_objects  # noqa: F401 - re-exported: their home was this module
from .report import PairError, SideReport, _exit_text, first_failure, headline
from .side import ROLES, FnRef, PeerGone, Side, open_side  # noqa: F401 - re-exported

__all__ = ["Side", "DocaPair", "PairError", "PeerGone", "SideReport", "FnRef", "open_side", "ROLES",
           "START_METHODS", "open_objects", "describe_leaks"]

START_METHODS = ("warm", "spawn", "forkserver", "fork")
"""How ``DocaPair`` starts a side (see the module's text); ``"warm"`` is the default."""
H = TypeVar("H")
D = TypeVar("D")
GRACE = 5.0
"""Seconds a side gets to report where it is after being asked to end, before SIGKILL."""
STARTUP = 60.0
"""Seconds a side may take to start (interpreter, imports, device) before its function runs."""
KIT_TID = 1 << 20
"""The thread id of the kit's own track (in the process that runs ``DocaPair``) in a Chrome trace."""


# -- the parent --------------------------------------------------------------------------------------
class DocaPair:
    """Runs two-sided tests: the ``doca_pair`` fixture, usable outside pytest too.

    :param knobs: the emulator knobs of both sides (default: from the environment, strict on).
    :param start_method: ``"warm"`` (default), ``"spawn"``, ``"forkserver"`` or ``"fork"``
        (``START_METHODS``).
    :param impl: the sides' path, ``"emulated"`` or ``"native"`` (default: the knobs', ``--doca-impl``):
        a native side runs the native backend over a real DOCA when one loads, else over libdoca served by
        the emulator in the side's process, under the same knobs (``doca_py.testing.native``).
    """

    def __init__(self, knobs: Knobs | None = None, start_method: str = "warm", impl: str | None = None) -> None:
        self.knobs = knobs if knobs is not None else Knobs.resolve()
        self.start_method = _check_method(start_method)
        #: The sides' path, ``"emulated"`` or ``"native"``.
        self.impl = check_impl(impl or self.knobs.impl)
        #: The path of one side (``{"dpu": "native"}``), over ``impl``: a pair with a side on each path.
        self.side_impl: dict[str, str] = {}
        #: The ``SideReport`` of each side of the last ``run``, host first.
        self.reports: list[SideReport] = []
        #: Every run's reports, in order (the trace file of a test holds them all).
        self.history: list[list[SideReport]] = []
        #: Extra environment variables for both sides.
        self.env: dict[str, str] = {}
        #: Extra environment variables for one side (``{"dpu": {...}}``), over ``env``.
        self.side_env: dict[str, dict[str, str]] = {}
        #: The command that replays the run, for the failure message (the plugin names the test).
        self.replay = f"{self.knobs.replay()} <test>"
        #: The test's name in usage errors (the plugin sets its node id).
        self.name = ""
        #: The sides' logging level (``logging.INFO`` or ``"DEBUG"`` …; the plugin passes pytest's ``--log-level``).
        self.log_level: int | str = logging.INFO
        #: In strict mode, a side whose function returns with DOCA objects still open fails (``False``: off).
        self.leak_check = True
        #: The kit's own events of every run, as Chrome trace events (see ``trace_events``).
        self.timeline: list[dict[str, Any]] = []
        #: Where the native sides' DOCA came from, per DOCA version (``doca_py.testing.native``).
        self.natives: dict[str, NativeDoca] = {}

    def trace_events(self, process: bool = True) -> list[dict[str, Any]]:
        """Every run as Chrome trace events: the kit's track in this process (sides started, ended,
        timed out, and where each was then), then each side's own events (its process track).
        *process*: include this process's ``process_name`` (leave it out to add the events to a trace
        of this process that has one)."""
        pid = os.getpid()
        out: list[dict[str, Any]] = []
        if process:
            out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                        "args": {"name": f"test process (pid {pid})"}})
        if self.timeline:
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": KIT_TID, "args": {"name": "doca_pair"}})
            out += self.timeline
        for run in self.history:
            for rep in run:
                out += rep.trace
        return out

    def _kit(self, name: str, **args: Any) -> dict[str, Any]:
        """Record one of the kit's own events on its track (returned: details may follow)."""
        ev = {"ph": "i", "s": "t", "name": name, "cat": "kit", "ts": time.monotonic_ns() / 1000.0,
              "pid": os.getpid(), "tid": KIT_TID, "args": args}
        self.timeline.append(ev)
        return ev

    def _where(self, role: str) -> dict[str, str]:
        """Where a side was, as far as the kit knows: its status, its innermost frame, its last event."""
        rep = self._report(role)
        out = {"status": rep.status}
        if "it was at:" in rep.detail:
            frames = [ln for ln in rep.detail.split("it was at:", 1)[1].splitlines() if ln.strip()]
            out["where"] = "\n".join(frames[-2:])
        elif rep.detail.strip():
            out["detail"] = rep.detail.strip().splitlines()[-1]
        events = [ln for ln in rep.tail.splitlines() if ln.startswith("+")]
        if events:
            out["last event"] = events[-1].split("ms", 1)[-1].strip()
        return out

    def run(self, host_fn: Callable[[Side], H], dpu_fn: Callable[[Side], D], *, timeout: float = 60.0,
            args: Any = None, start_method: str | None = None) -> tuple[H, D]:
        """Run ``host_fn(side)`` and ``dpu_fn(side)`` in two processes; return ``(host_result, dpu_result)``.

        Results and *args* must be picklable. Raises ``PairError`` if a side raises, dies or
        is still running after *timeout* seconds; the other side is then ended and reports
        where it was.
        """
        __tracebackhide__ = True  # pytest: the failure shows the test's line, not the kit's source
        method = _check_method(start_method or self.start_method)
        # typeshed's BaseContext lacks Process; a warm side is a Process of the kit's zygote
        ctx: Any = multiprocessing.get_context("forkserver" if method == "warm" else method)
        process_cls = ctx.Process
        if method == "warm":
            from .warm import WarmProcess

            process_cls = WarmProcess
        fns: dict[str, Callable[[Side], Any]] = {"host": host_fn, "dpu": dpu_fn}
        targets: dict[str, Any] = {}
        for role, fn in fns.items():
            ref = FnRef.of(fn)
            if ref is None and method != "fork":
                raise TypeError(f"doca_pair: the {role} function {fn!r} is a closure or a lambda; under "
                                f"{method!r} a side's function must be found by module and name: define it at "
                                f"module level, or run with start_method='fork'")
            targets[role] = fn if method == "fork" else ref
        if method != "fork":  # checked here: a side that cannot start would leave the other one waiting
            try:
                pickle.dumps(args)
            except Exception as exc:  # noqa: BLE001 - pickle raises many kinds
                raise TypeError(f"doca_pair{f' ({self.name})' if self.name else ''}: args={args!r} cannot be sent "
                                f"to the sides ({exc}); under {method!r} they must be picklable") from None
        impls = {role: check_impl(self.side_impl.get(role, self.impl)) for role in ROLES}
        native_env = self._native_env() if "native" in impls.values() else {}
        if native_env and method == "warm":
            from .warm import start

            start(native=True)  # a zygote started now preloads the native backend too
        if os.environ.get("DOCA_PY_TRACE", "").strip():
            _trace_at_exit(self)  # the sides' events go into the process's trace file (DOCA_PY_TRACE)
        token = secrets.token_hex(6)
        with tempfile.TemporaryDirectory(prefix="doca-pair-") as tmp:
            env = {"DOCA_PY_COMCH_DIR": os.environ.get("DOCA_PY_COMCH_DIR") or str(Path(tmp) / "comch"), **self.env}
            a, b = ctx.Pipe(duplex=True)
            peers = {"host": a, "dpu": b}
            procs: dict[str, Any] = {}
            ctls: dict[str, Connection] = {}
            self.reports = [SideReport(role) for role in ROLES]
            self.history.append(self.reports)
            self._kit(f"doca_pair run {len(self.history)}", host=_fn_name(host_fn), dpu=_fn_name(dpu_fn),
                      timeout=timeout, start_method=method, impl=impls["host"] if len(set(impls.values())) == 1
                      else impls, **({"native": self._native_text()} if native_env else {}))
            try:
                for role in ROLES:
                    log_path = str(Path(tmp) / f"{role}.log")
                    Path(log_path).touch()
                    mine, theirs = ctx.Pipe(duplex=False)
                    side_env = {**env, **(native_env if impls[role] == "native" else {}), **self.side_env.get(role, {})}
                    spec = _Spec(role, targets[role], args, self.knobs, side_env, log_path, token,
                                 dict(os.environ) if method == "warm" else None, _level(self.log_level),
                                 self.leak_check, impls[role])
                    p = process_cls(target=_child, args=(spec, theirs, peers[role]), name=f"doca_pair-{role}",
                                    daemon=True)
                    p.start()
                    self._kit(f"{role} side process started", role=role, pid=p.pid)
                    theirs.close()
                    procs[role], ctls[role] = p, mine
                for c in peers.values():
                    c.close()
                self._wait(procs, ctls, timeout)
            finally:
                self._stop(procs, ctls)
                for role in procs:
                    rep = self._report(role)
                    rep.log = (Path(tmp) / f"{role}.log").read_text(errors="replace")
                    stacks = Path(tmp) / f"{role}.log{_STACKS}"
                    if rep.status in ("ended", "timed out") and "it was at:" not in rep.detail and stacks.exists():
                        dump = stacks.read_text(errors="replace").strip()
                        rep.detail = (f"{rep.detail}; " if rep.detail else "") + (
                            f"it did not say where it was within {GRACE} s (stuck in C code?); every thread's "
                            f"Python stack when it was asked to end (faulthandler):\n{dump or '(none written)'}")
                for c in ctls.values():
                    c.close()
            failed = [r for r in self.reports if r.status != "ok"]
            if failed:
                raise PairError(self._message(failed), self.reports)
        return self._results["host"], self._results["dpu"]

    def _report(self, role: str) -> SideReport:
        return self.reports[ROLES.index(role)]

    def _take(self, role: str, msg: tuple[str, Any, dict[str, Any]]) -> None:
        rep = self._report(role)
        status, value, extra = msg
        rep.status = status
        last = str(value).strip().splitlines()[-1:] if status != "ok" else []
        self._kit(f"{role} side {status}", role=role, **({"detail": last[0]} if last else {}))
        if status == "ok":
            self._results[role] = value
        else:
            rep.detail = value
        rep.tail = extra.get("tail", rep.tail)
        rep.findings = extra.get("findings", rep.findings)
        rep.trace = extra.get("trace", rep.trace)
        rep.raised_in_callbacks = extra.get("raised_in_callbacks", rep.raised_in_callbacks)

    def _wait(self, procs: dict[str, Any], ctls: dict[str, Connection], timeout: float) -> None:
        self._results: dict[str, Any] = {}
        self._first = "host"  # the side that failed first (both time out together)
        for role, p in procs.items():
            self._report(role).pid = p.pid
        started: set[str] = set()
        deadline = time.monotonic() + STARTUP  # until both sides run their functions
        pending = set(procs)
        while pending:
            left = deadline - time.monotonic()
            waitables: list[Any] = [ctls[r] for r in pending] + [procs[r].sentinel for r in pending]
            ready = mpc.wait(waitables, timeout=left) if left > 0 else []
            if not ready:
                why = (f"timed out after {timeout} s" if len(started) == len(procs) else
                       f"did not start within {STARTUP} s")
                for role in pending:
                    self._report(role).status = "timed out"
                timed_out = self._kit(f"time-out: {why}")
                self._stop(procs, ctls, why=why)
                timed_out["args"].update({role: self._where(role) for role in procs})
                return
            for role in list(pending):
                rep = self._report(role)
                dead = procs[role].sentinel in ready
                while ctls[role].poll():
                    try:
                        msg = ctls[role].recv()
                    except (EOFError, OSError):  # it died: its end of the pipe closed
                        dead = True
                        break
                    if msg[0] == "started":
                        started.add(role)
                        self._kit(f"{role} side runs its function", role=role)
                        if len(started) == len(procs):
                            deadline = time.monotonic() + timeout
                        continue
                    self._take(role, msg)
                    pending.discard(role)
                    procs[role].join(GRACE)
                    if rep.status != "ok":
                        self._first = role
                        return
                    break
                if role in pending and dead:
                    rep.status = "crashed"
                    rep.detail = self._ended_how(role, procs[role])
                    rep.crashed_at = self._kit(f"{role} side crashed", role=role, detail=rep.detail)["ts"]
                    self._first = role
                    return

    def _ended_how(self, role: str, proc: Any) -> str:
        """How a side whose control pipe closed (or whose process ended) before it reported ended: its exit, once
        the process is gone. Its pipe may close before the process ends (it closed the pipe, or lost it): waited
        for ``GRACE`` seconds, then killed, never waited for without a bound."""
        proc.join(GRACE)
        if proc.exitcode is not None:
            return f"the process died: {_exit_text(proc.exitcode)}"
        proc.kill()
        self._kit(f"{role} side killed by the kit (SIGKILL)", role=role,
                  why=f"its control pipe closed but the process was still running {GRACE} s later")
        unreported = self._unreported_exit(role, proc)
        return (f"its control pipe to the kit closed without a result, but the process did not end within "
                f"{GRACE} s; the kit killed it (SIGKILL)" + (f"; {unreported}" if unreported else ""))

    def _unreported_exit(self, role: str, proc: Any) -> str:
        """After SIGKILL: wait ``GRACE`` seconds for the side's exit to be reported (by the kernel, or by the zygote
        its process was forked from), and say so if it was not (a side never keeps ``run`` waiting for ever)."""
        proc.join(GRACE)
        if proc.exitcode is not None:
            return ""
        parent = _parent_of(proc.pid)
        text = (f"its exit was not reported within {GRACE} s of SIGKILL (pid {proc.pid}, parent "
                f"{parent if parent is not None else 'unknown'}): the kit stopped waiting for it")
        self._kit(f"{role} side exit not reported", role=role, detail=text)
        # multiprocessing joins the children it still lists at interpreter exit, without a bound: not this one.
        mp_process._children.discard(proc)  # type: ignore[attr-defined]
        return text

    def _drain(self, role: str, ctl: Connection, wait: float = 0.0) -> bool:
        """Take what a side sent (waiting up to *wait* s for its last word); whether it said it."""
        end = time.monotonic() + wait
        try:
            while ctl.poll(max(end - time.monotonic(), 0)):
                msg = ctl.recv()
                if msg[0] != "started":
                    self._take(role, msg)
                    return True
        except (EOFError, OSError):
            pass
        return False

    def _stop(self, procs: dict[str, Any], ctls: dict[str, Connection], why: str = "") -> None:
        """End the sides that still run, all at once: each reports where it was (SIGTERM), or is
        killed after ``GRACE`` seconds."""
        running = [r for r in procs if self._report(r).status in ("running", "timed out")]
        stopping = [r for r in running if not self._drain(r, ctls[r]) and procs[r].exitcode is None]
        ended: dict[str, dict[str, Any]] = {}
        for role in stopping:
            procs[role].terminate()
            ended[role] = self._kit(f"{role} side ended by the kit (SIGTERM)", role=role,
                                    why=why or "the other side failed")
        deadline = time.monotonic() + GRACE
        for role in stopping:
            rep = self._report(role)
            self._drain(role, ctls[role], max(deadline - time.monotonic(), 0))  # "ended", or what it sent meanwhile
            ended[role]["args"].update(self._where(role))
            if why:
                rep.status = "timed out"
                rep.detail = f"{why}; {rep.detail}" if rep.detail else why
        for role, p in procs.items():
            p.join(max(deadline - time.monotonic(), 0.1))
            if p.exitcode is None:
                p.kill()
                self._kit(f"{role} side killed by the kit (SIGKILL)", role=role,
                          why=f"it did not answer SIGTERM within {GRACE} s")
                unreported = self._unreported_exit(role, p)
                rep = self._report(role)
                if unreported and rep.status not in ("ok", "raised"):  # a side that reported keeps its own words
                    rep.detail = f"{rep.detail}; {unreported}" if rep.detail else unreported
            rep = self._report(role)
            if rep.status == "running":
                if role in stopping:
                    rep.status = "ended"
                else:  # it died by itself, unnoticed while the other side's failure was handled
                    rep.status = "crashed"
                    rep.detail = f"the process died: {_exit_text(p.exitcode)}"
                    rep.crashed_at = self._kit(f"{role} side crashed", role=role, detail=rep.detail)["ts"]

    def _message(self, failed: list[SideReport]) -> str:
        # The side whose first failure (a strict-mode finding, an injected fault, an exception, a crash)
        # came first, from the sides' traces; the side that ended first otherwise (both timed out …).
        found = first_failure(self.reports)
        if found is not None:
            first, failure = found
        else:
            first, failure = self._report(self._first), None
            crashed = [r for r in self.reports if r.status == "crashed"]
            if crashed and "PeerGone" in first.detail:  # the peer's death came first; this side only saw it
                first = crashed[0]
        # The first line is pytest's summary line: which side, and what it raised.
        knobs = f"doca_pair: knobs: {self.knobs.describe()}"
        if "native" in (self.impl, *self.side_impl.values()):
            knobs += f" ({self._native_text()})"
        lines = [*headline(first, failure, self.reports), f"{knobs}; replay: {self.replay}"]
        return "\n".join(lines + [r.format() for r in sorted(self.reports, key=lambda r: r is not first)])

    # -- the native path ---------------------------------------------------------------------------------
    def _native_version(self) -> str:
        from ..emulated import version as emu_version

        return self.knobs.version or "{}.{}".format(*emu_version._DEFAULT)

    def _native_env(self) -> dict[str, str]:
        """The environment of a native side for this run's DOCA version (built on first use)."""
        version = self._native_version()
        native = self.natives.get(version)
        if native is None:
            native = self.natives[version] = resolve_native(version)
        return native.env()

    def _native_text(self) -> str:
        native = self.natives.get(self._native_version())
        return f"native sides: {native.describe()}" if native is not None else "native sides: not resolved yet"


_traced: list[DocaPair] = []


def _trace_at_exit(pair: DocaPair) -> None:
    """Under ``DOCA_PY_TRACE`` (outside pytest's ``--doca-trace``): this process's trace file, written at its
    exit, holds *pair*'s runs too: the kit's track and the events each side sent (a side started by
    ``fork`` or from the zygote runs no ``atexit``, one the kit ended neither)."""
    from ..emulated import trace

    if pair in _traced:
        return
    if not _traced:
        trace.add_exit_events(_traced_events)
    _traced.append(pair)


def _traced_events() -> list[dict[str, Any]]:
    pid = os.getpid()
    kit = sorted((ev for pair in _traced for ev in pair.timeline), key=lambda ev: ev["ts"])
    out: list[dict[str, Any]] = []
    if kit:
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": KIT_TID, "args": {"name": "doca_pair"}})
        out += kit
    for pair in _traced:
        for run in pair.history:
            for rep in run:
                out += rep.trace
    return out


def _parent_of(pid: int | None) -> str | None:
    """The parent process of *pid* as ``"<pid> (<state>)"`` (``/proc``; ``None`` elsewhere, or if it is gone):
    a warm side's exit is reported by the zygote, its parent."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ppid = int(fields[1])
        with open(f"/proc/{ppid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return f"{ppid} (state {state})"


def _level(level: int | str) -> int:
    if isinstance(level, int):
        return level
    value = logging.getLevelName(level.strip().upper())
    if not isinstance(value, int):
        raise ValueError(f"doca_pair: log_level {level!r} is not a logging level")
    return value


def _check_method(method: str) -> str:
    if method not in START_METHODS:
        raise ValueError(f"doca_pair: start_method {method!r} is not one of {', '.join(START_METHODS)}")
    return method
