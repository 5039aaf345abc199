"""Run a host function and a DPU function in two processes, each with its own emulated side.

``DocaPair.run`` starts both sides with ``multiprocessing`` (``spawn`` by default: a
fresh interpreter per side, so each side imports its own emulator with the kit's knobs,
as a host and a BlueField each run their own DOCA; ``fork`` copies a process whose
emulator may already hold threads and objects). Each function gets one ``Side``: its
device, the DPU's representor of the host PF, and a pipe to the peer. Both results come
back; an exception, a crash or a timeout on either side ends the other side and raises
``PairError`` with that side's traceback, log and last task events.

Functions are sent by module and name (``FnRef``), so a module-level function of a
test file works under ``spawn`` even when the file is not importable as a package. A
closure or a lambda needs ``start_method="fork"`` (it is not pickled then).
"""

from __future__ import annotations

import dataclasses
import faulthandler
import importlib
import importlib.util
import logging
import multiprocessing
import multiprocessing.connection as mpc
import os
import pickle
import secrets
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .knobs import Knobs

__all__ = ["Side", "DocaPair", "PairError", "PeerGone", "SideReport", "FnRef", "open_side", "ROLES"]

ROLES = ("host", "dpu")
"""The two sides, in the order of results."""
GRACE = 5.0
"""Seconds a side gets to report where it is after being asked to end, before SIGKILL."""
STARTUP = 60.0
"""Seconds a side may take to start (interpreter, imports, device) before its function runs."""
_LOG_TAIL = 60
_TRACE_TAIL = 40


class PairError(AssertionError):
    """A side of a ``DocaPair`` run failed: raised, crashed or timed out.

    :ivar reports: the ``SideReport`` of each side, host first.
    """

    def __init__(self, message: str, reports: list[SideReport]) -> None:
        super().__init__(message)
        self.reports = reports


class PeerGone(EOFError):
    """``Side.recv`` found the peer side ended: it returned, failed or died."""


def open_side(role: str) -> tuple[Any, Any]:
    """``(dev, rep)`` of one side of the emulated BlueField: the DPU's device (one with a NET
    representor) and its representor of the host PF, or the host's device (that PF) and ``None``."""
    import doca_py as d

    for info in d.devinfo_create_list():
        dev = info.open()
        reps = dev.rep_create_list(d.DevinfoRepFilter.NET)
        if not reps:
            dev.close()
            continue
        host_pci = reps[0].get_pci_addr_str()
        if role == "dpu":
            return dev, dev.open_rep_by_pci_addr(host_pci)
        dev.close()
        return d.Dev.open_by_pci_addr(host_pci), None
    raise LookupError("no emulated device with a host representor (see DOCA_PY_EMU_DEVICES)")


class Side:
    """What a side's function gets: its role, device, representor and a pipe to the peer.

    :ivar role: ``"host"`` or ``"dpu"``.
    :ivar dev: the side's open ``doca_py.Dev`` (closed by the kit when the function returns).
    :ivar rep: on the DPU side, the ``doca_py.DevRep`` of the host PF; ``None`` on the host.
    :ivar args: the ``args`` given to ``DocaPair.run``.
    :ivar token: a string unique to this run, the same on both sides (for comch server names …).
    :ivar seed: the emulator seed of this run.
    :ivar log: a ``logging.Logger`` whose records end up in the side's log.
    """

    def __init__(self, role: str, dev: Any, rep: Any, peer: Connection, args: Any, token: str, seed: int) -> None:
        self.role = role
        self.dev = dev
        self.rep = rep
        self.args = args
        self.token = token
        self.seed = seed
        self.log = logging.getLogger(f"doca_pair.{role}")
        self._peer = peer

    @property
    def peer_role(self) -> str:
        """The other side's role."""
        return "dpu" if self.role == "host" else "host"

    def send(self, obj: Any) -> None:
        """Send a picklable object (an export blob, a descriptor, a result) to the peer."""
        try:
            self._peer.send(obj)
        except (BrokenPipeError, ConnectionResetError):
            raise PeerGone(f"{self.role} side: the {self.peer_role} side has ended; nothing can be sent") from None

    def recv(self, timeout: float = 30.0) -> Any:
        """The next object the peer sent; ``TimeoutError`` after *timeout* seconds, ``PeerGone``
        if the peer ended first."""
        try:
            if not self._peer.poll(timeout):
                raise TimeoutError(f"{self.role} side: nothing from the {self.peer_role} side within {timeout} s")
            return self._peer.recv()
        except (EOFError, ConnectionResetError):
            raise PeerGone(f"{self.role} side: the {self.peer_role} side has ended") from None

    def __repr__(self) -> str:
        return f"<Side {self.role} dev={self.dev!r}>"


@dataclasses.dataclass(frozen=True)
class FnRef:
    """A function named by module, file and qualified name: sent to a spawned side instead of pickling."""

    module: str
    qualname: str
    file: str | None

    @classmethod
    def of(cls, fn: Callable[[Side], Any]) -> FnRef | None:
        """The reference to *fn*, or ``None`` if it cannot be found again by name (a closure, a lambda)."""
        qual = getattr(fn, "__qualname__", "")
        mod = getattr(fn, "__module__", None)
        if not qual or mod is None or "<" in qual:
            return None
        file = getattr(sys.modules.get(mod), "__file__", None)
        return cls(mod, qual, file)

    def resolve(self) -> Callable[[Side], Any]:
        """Import the module (by name, else from its file) and look the function up."""
        try:
            obj: Any = importlib.import_module(self.module)
        except ImportError:
            if self.file is None:
                raise
            spec = importlib.util.spec_from_file_location(self.module, self.file)
            assert spec is not None and spec.loader is not None
            obj = importlib.util.module_from_spec(spec)
            sys.modules[self.module] = obj
            spec.loader.exec_module(obj)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        return obj  # type: ignore[no-any-return]


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


# -- the child ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Spec:
    role: str
    fn: Any  # a FnRef under spawn/forkserver, the function itself under fork
    args: Any
    knobs: Knobs
    env: dict[str, str]
    log_path: str
    token: str


def _forensics() -> dict[str, Any]:
    from ..emulated import trace

    return {"tail": trace.format_tail(_TRACE_TAIL), "findings": trace.findings(), "trace": trace.chrome()}


def _child(spec: _Spec, ctl: Connection, peer: Connection) -> None:
    log_fd = os.open(spec.log_path, os.O_WRONLY | os.O_APPEND)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    faulthandler.enable(file=sys.stderr)  # a segfault leaves its Python traceback in the log
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, force=True,
                        format=f"%(asctime)s {spec.role} %(levelname)s %(name)s: %(message)s")
    os.environ.update(spec.env)
    spec.knobs.write_env()  # before the emulator is imported: the side and its own children use the knobs
    from .. import _backend

    if _backend.impl != "emulated":
        _backend.use("emulated").__enter__()  # a side is always an emulated one, even where DOCA is installed
    spec.knobs.apply(token=spec.role)  # its decisions: a function of the seed, its role and its tasks
    from ..emulated import trace

    trace.enable(label=f"{spec.role} side (pid {os.getpid()})")

    finished = [False]

    def ended(signum: int, frame: Any) -> None:
        if finished[0]:
            return  # its last word is on the way: let it end by itself
        where = "".join(traceback.format_stack(frame)) if frame is not None else ""
        try:
            ctl.send(("ended", f"it was at:\n{where}", _forensics()))
        finally:
            os._exit(70)

    signal.signal(signal.SIGTERM, ended)
    dev = rep = None
    msg: tuple[str, Any, dict[str, Any]]
    try:
        fn = spec.fn.resolve() if isinstance(spec.fn, FnRef) else spec.fn
        dev, rep = open_side(spec.role)
        ctl.send(("started", None, {}))  # the run's timeout counts from here: start-up is not the side's code
        result = fn(Side(spec.role, dev, rep, peer, spec.args, spec.token, spec.knobs.seed))
        try:
            pickle.dumps(result)
            msg = ("ok", result, _forensics())
        except Exception as exc:  # noqa: BLE001 - any pickling failure is the user's result's
            msg = ("raised", f"the {spec.role} function returned an object that cannot be sent back: {exc!r}",
                   _forensics())
    except BaseException:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are failures of the side too
        msg = ("raised", traceback.format_exc(), _forensics())
    finished[0] = True
    ctl.send(msg)  # before the peer sees this side end: the parent reads its result first
    peer.close()
    for obj in (rep, dev):
        try:
            if obj is not None:
                obj.close()
        except Exception:  # noqa: BLE001 - a side that leaves objects open has reported its result already
            logging.getLogger("doca_pair").exception("closing the %s side's device", spec.role)
    ctl.close()


# -- the parent --------------------------------------------------------------------------------------
class DocaPair:
    """Runs two-sided tests: the ``doca_pair`` fixture, usable outside pytest too.

    :param knobs: the emulator knobs of both sides (default: from the environment, strict on).
    :param start_method: ``"spawn"`` (default), ``"forkserver"`` or ``"fork"``.
    """

    def __init__(self, knobs: Knobs | None = None, start_method: str = "spawn") -> None:
        self.knobs = knobs if knobs is not None else Knobs.resolve()
        self.start_method = start_method
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

    def run(self, host_fn: Callable[[Side], Any], dpu_fn: Callable[[Side], Any], *, timeout: float = 60.0,
            args: Any = None, start_method: str | None = None) -> tuple[Any, Any]:
        """Run ``host_fn(side)`` and ``dpu_fn(side)`` in two processes; return ``(host_result, dpu_result)``.

        Results and *args* must be picklable. Raises ``PairError`` if a side raises, dies or
        is still running after *timeout* seconds; the other side is then ended and reports
        where it was.
        """
        method = start_method or self.start_method
        ctx: Any = multiprocessing.get_context(method)  # typeshed's BaseContext lacks Process
        fns = {"host": host_fn, "dpu": dpu_fn}
        targets: dict[str, Any] = {}
        for role, fn in fns.items():
            ref = FnRef.of(fn)
            if ref is None and method != "fork":
                raise TypeError(f"doca_pair: the {role} function {fn!r} is a closure or a lambda; under "
                                f"{method!r} a side's function must be found by module and name: define it at "
                                f"module level, or run with start_method='fork'")
            targets[role] = fn if method == "fork" else ref
        token = secrets.token_hex(6)
        with tempfile.TemporaryDirectory(prefix="doca-pair-") as tmp:
            env = {"DOCA_PY_COMCH_DIR": os.environ.get("DOCA_PY_COMCH_DIR") or str(Path(tmp) / "comch"), **self.env}
            a, b = ctx.Pipe(duplex=True)
            peers = {"host": a, "dpu": b}
            procs: dict[str, Any] = {}
            ctls: dict[str, Connection] = {}
            self.reports = [SideReport(role) for role in ROLES]
            self.history.append(self.reports)
            try:
                for role in ROLES:
                    log_path = str(Path(tmp) / f"{role}.log")
                    Path(log_path).touch()
                    mine, theirs = ctx.Pipe(duplex=False)
                    spec = _Spec(role, targets[role], args, self.knobs, {**env, **self.side_env.get(role, {})},
                                 log_path, token)
                    p = ctx.Process(target=_child, args=(spec, theirs, peers[role]), name=f"doca_pair-{role}",
                                    daemon=True)
                    p.start()
                    theirs.close()
                    procs[role], ctls[role] = p, mine
                for c in peers.values():
                    c.close()
                self._wait(procs, ctls, timeout)
            finally:
                self._stop(procs, ctls)
                for role in procs:
                    self._report(role).log = (Path(tmp) / f"{role}.log").read_text(errors="replace")
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
        if status == "ok":
            self._results[role] = value
        else:
            rep.detail = value
        rep.tail = extra.get("tail", rep.tail)
        rep.findings = extra.get("findings", rep.findings)
        rep.trace = extra.get("trace", rep.trace)

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
                self._stop(procs, ctls, why=why)
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
                    procs[role].join()
                    rep.status = "crashed"
                    rep.detail = f"the process died: {_exit_text(procs[role].exitcode)}"
                    self._first = role
                    return

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
        for role in stopping:
            procs[role].terminate()
        deadline = time.monotonic() + GRACE
        for role in stopping:
            rep = self._report(role)
            self._drain(role, ctls[role], max(deadline - time.monotonic(), 0))  # "ended", or what it sent meanwhile
            if why:
                rep.status = "timed out"
                rep.detail = f"{why}; {rep.detail}" if rep.detail else why
        for role, p in procs.items():
            p.join(max(deadline - time.monotonic(), 0.1))
            if p.exitcode is None:
                p.kill()
                p.join()
            rep = self._report(role)
            if rep.status == "running":
                if role in stopping:
                    rep.status = "ended"
                else:  # it died by itself, unnoticed while the other side's failure was handled
                    rep.status = "crashed"
                    rep.detail = f"the process died: {_exit_text(p.exitcode)}"

    def _message(self, failed: list[SideReport]) -> str:
        first = self._report(self._first)
        crashed = [r for r in self.reports if r.status == "crashed"]
        if crashed and "PeerGone" in first.detail:  # the peer's death came first; this side only saw it
            first = crashed[0]
        head = (f"doca_pair: the {first.role} side {first.status} "
                f"(knobs: {self.knobs.describe()}; replay: {self.replay})")
        return "\n".join([head] + [r.format() for r in sorted(self.reports, key=lambda r: r is not first)])


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code} (it left without returning, e.g. os._exit or sys.exit in a thread)"
