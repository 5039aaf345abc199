"""The child process of a ``DocaPair`` side: it sets up its environment, knobs, trace and device, runs the
side's function and sends its result or failure, with its forensics, to the parent. Part of
``doca_py.testing.pair``, which re-exports every name."""

from __future__ import annotations

import dataclasses
import faulthandler
import gc
import logging
import os
import pickle
import signal
import sys
import traceback
import warnings
from multiprocessing.connection import Connection
from typing import Any

from .knobs import Knobs
from .leaks import _leaks
from .side import FnRef, Side, open_side

__all__ = ["STACKS"]

_TRACE_TAIL = 40
STACKS = ".stacks"  # beside a side's log: its threads' stacks when it was asked to end


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
    stacks = open(spec.log_path + STACKS, "w")  # noqa: SIM115 - open until the process ends
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
