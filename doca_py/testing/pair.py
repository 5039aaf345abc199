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

import dataclasses
import faulthandler
import gc
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
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .knobs import Knobs

if TYPE_CHECKING:
    from doca_py import Dev, DevRep

__all__ = ["Side", "DocaPair", "PairError", "PeerGone", "SideReport", "FnRef", "open_side", "ROLES",
           "START_METHODS", "open_objects", "describe_leaks"]

ROLES = ("host", "dpu")
"""The two sides, in the order of results."""
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
_LOG_TAIL = 60
_TRACE_TAIL = 40
_LEAKS_SHOWN = 20
_STACKS = ".stacks"  # beside a side's log: its threads' stacks when it was asked to end


class PairError(AssertionError):
    """A side of a ``DocaPair`` run failed: raised, crashed or timed out.

    :ivar reports: the ``SideReport`` of each side, host first.
    """

    def __init__(self, message: str, reports: list[SideReport]) -> None:
        super().__init__(message)
        self.reports = reports


class PeerGone(EOFError):
    """``Side.recv`` found the peer side ended: it returned, failed or died."""


PairError.__module__ = PeerGone.__module__ = "doca_py.testing"  # their public name, in reports


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

    def __init__(self, role: str, dev: Dev, rep: DevRep | None, peer: Connection, args: Any, token: str,
                 seed: int) -> None:
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
    environ: dict[str, str] | None = None  # a warm side's whole environment: the zygote's is older
    log_level: int = logging.INFO
    leak_check: bool = True


def _forensics() -> dict[str, Any]:
    from ..emulated import trace

    return {"tail": trace.format_tail(_TRACE_TAIL), "findings": trace.findings(), "trace": trace.chrome()}


def open_objects(exclude: tuple[Any, ...] = ()) -> list[Any]:
    """The DOCA objects of this process that are open (``close()`` not called), after a garbage
    collection, but those in *exclude* and borrowed wrappers (``from_handle``)."""
    from .._lifetime import DocaObject

    from ..errors import DocaError

    def held(o: DocaObject) -> bool:
        try:
            return not o._closed and not o.borrowed
        except DocaError:  # a freed Buf refuses every use: its descriptor went home, nothing leaks
            return False

    gc.collect()
    skip = {id(o) for o in exclude if o is not None}
    return [o for o in gc.get_objects() if isinstance(o, DocaObject) and id(o) not in skip and held(o)]


def describe_leaks(objs: list[Any], unclosed: list[str]) -> list[str]:
    """One line per leaked object (``repr``), and the ``unclosed X`` warnings of objects collected open."""
    lines = [f"  {o!r}" for o in objs[:_LEAKS_SHOWN]]
    if len(objs) > _LEAKS_SHOWN:
        lines.append(f"  ... and {len(objs) - _LEAKS_SHOWN} more")
    return lines + [f"  {w} (garbage collected without close())" for w in unclosed]


def _leaks(role: str, exclude: tuple[Any, ...], caught: list[warnings.WarningMessage]) -> str:
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
                and str(w.message).startswith("unclosed ")]
    objs = open_objects(exclude)
    if not objs and not unclosed:
        return ""
    return "\n".join([f"DocaLeakError: the {role} function returned with DOCA objects still open (strict mode; "
                      f"--doca-no-leak-check turns this check off):", *describe_leaks(objs, unclosed)])


def _fn_name(fn: Any) -> str:
    return str(fn.qualname if isinstance(fn, FnRef) else getattr(fn, "__qualname__", fn))


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
    logging.basicConfig(level=spec.log_level, stream=sys.stderr, force=True,
                        format=f"%(asctime)s {spec.role} %(levelname)s %(name)s: %(message)s")
    if spec.environ is not None:
        os.environ.clear()
        os.environ.update(spec.environ)
    os.environ.update(spec.env)
    spec.knobs.write_env()  # before the emulator is imported: the side and its own children use the knobs
    from .. import _backend

    if _backend.impl != "emulated":
        _backend.use("emulated").__enter__()  # a side is always an emulated one, even where DOCA is installed
    # A warm side's imports saw the zygote's environment; a spawned one's may have seen the parent's too
    # (free-threaded 3.13 imports the emulator with doca_py, before the side's environment is set): re-read.
    from .warm import refresh_from_env

    refresh_from_env()
    spec.knobs.apply(token=spec.role)  # its decisions: a function of the seed, its role and its tasks
    from ..emulated import trace

    trace.enable(label=f"{spec.role} side (pid {os.getpid()})")

    finished = [False]

    def ended(signum: int, frame: Any) -> None:
        if finished[0]:
            return  # its last word is on the way: let it end by itself
        where = "".join(traceback.format_stack(frame)) if frame is not None else ""
        trace.mark(f"{spec.role} side ended by the kit (SIGTERM)\n{where}")
        try:
            ctl.send(("ended", f"it was at:\n{where}", _forensics()))
        finally:
            os._exit(70)

    signal.signal(signal.SIGTERM, ended)
    # A side stuck in C code never runs ``ended``: faulthandler, at C level, writes every thread's
    # Python stack first (then the handler above runs, if it can).
    stacks = open(spec.log_path + _STACKS, "w")  # noqa: SIM115 - open until the process ends
    faulthandler.register(signal.SIGTERM, file=stacks, all_threads=True, chain=True)
    dev = rep = None
    msg: tuple[str, Any, dict[str, Any]]
    try:
        fn = spec.fn.resolve() if isinstance(spec.fn, FnRef) else spec.fn
        dev, rep = open_side(spec.role)
        ctl.send(("started", None, {}))  # the run's timeout counts from here: start-up is not the side's code
        trace.mark(f"{spec.role} side: {_fn_name(spec.fn)} starts")
        # What exists now (imports, the side's device) is not the function's: frozen, the leak check's
        # collection skips it (milliseconds, not the whole heap: the side's result is not held up).
        gc.freeze()
        with warnings.catch_warnings(record=True) as unclosed:
            warnings.simplefilter("always", ResourceWarning)
            result = fn(Side(spec.role, dev, rep, peer, spec.args, spec.token, spec.knobs.seed))
            trace.mark(f"{spec.role} side: {_fn_name(spec.fn)} returned")
            leaks = _leaks(spec.role, (dev, rep), unclosed) if spec.leak_check and spec.knobs.strict else ""
        try:
            pickle.dumps(result)
            msg = ("ok", result, _forensics()) if not leaks else ("raised", leaks, _forensics())
        except Exception as exc:  # noqa: BLE001 - any pickling failure is the user's result's
            msg = ("raised", f"the {spec.role} function returned an object that cannot be sent back: {exc!r}",
                   _forensics())
    except BaseException:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are failures of the side too
        failure = sys.exc_info()[1]
        assert failure is not None
        trace.mark(f"{spec.role} side raised {type(failure).__name__}\n{traceback.format_exc()}")
        tb = failure.__traceback__
        # From the side's function on: the kit's own frame (this function) is not the user's code.
        msg = ("raised", "".join(traceback.format_exception(type(failure), failure, tb.tb_next if tb is not None
                                                            and tb.tb_next is not None else tb)), _forensics())
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
    :param start_method: ``"warm"`` (default), ``"spawn"``, ``"forkserver"`` or ``"fork"``
        (``START_METHODS``).
    """

    def __init__(self, knobs: Knobs | None = None, start_method: str = "warm") -> None:
        self.knobs = knobs if knobs is not None else Knobs.resolve()
        self.start_method = _check_method(start_method)
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
                      timeout=timeout, start_method=method)
            try:
                for role in ROLES:
                    log_path = str(Path(tmp) / f"{role}.log")
                    Path(log_path).touch()
                    mine, theirs = ctx.Pipe(duplex=False)
                    spec = _Spec(role, targets[role], args, self.knobs, {**env, **self.side_env.get(role, {})},
                                 log_path, token, dict(os.environ) if method == "warm" else None,
                                 _level(self.log_level), self.leak_check)
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
                    procs[role].join()
                    rep.status = "crashed"
                    rep.detail = f"the process died: {_exit_text(procs[role].exitcode)}"
                    self._kit(f"{role} side crashed", role=role, detail=rep.detail)
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
                p.join()
            rep = self._report(role)
            if rep.status == "running":
                if role in stopping:
                    rep.status = "ended"
                else:  # it died by itself, unnoticed while the other side's failure was handled
                    rep.status = "crashed"
                    rep.detail = f"the process died: {_exit_text(p.exitcode)}"
                    self._kit(f"{role} side crashed", role=role, detail=rep.detail)

    def _message(self, failed: list[SideReport]) -> str:
        first = self._report(self._first)
        crashed = [r for r in self.reports if r.status == "crashed"]
        if crashed and "PeerGone" in first.detail:  # the peer's death came first; this side only saw it
            first = crashed[0]
        # The first line is pytest's summary line: which side, and what it raised.
        both = all(r.status == "timed out" for r in self.reports)
        head = (f"both sides {_what(first)}" if both
                else f"{first.role} side {_what(first)}")
        knobs = f"doca_pair: knobs: {self.knobs.describe()}; replay: {self.replay}"
        return "\n".join([head, knobs] + [r.format() for r in sorted(self.reports, key=lambda r: r is not first)])


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


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code} (it left without returning, e.g. os._exit or sys.exit in a thread)"
