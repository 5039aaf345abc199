"""The child process of a ``DocaPair`` side: it sets up its environment, knobs, trace and device, runs the
side's function and sends its result or failure, with its forensics, to the parent. Part of
``doca_py.testing.pair``, which re-exports every name."""

from __future__ import annotations

import dataclasses
import faulthandler
import gc
import logging
import multiprocessing
import os
import pickle
import random
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

from .knobs import Knobs
from .leaks import _leaks, collecting
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
    impl: str = "emulated"  # the side's path: the emulated backend, or the native one (its environment says
    #                         which DOCA: DOCA_PY_LIBDIR, see doca_py.testing.native)


def _forensics() -> dict[str, Any]:
    from ..emulated import trace

    return {"tail": trace.format_tail(_TRACE_TAIL), "findings": trace.findings(), "trace": trace.chrome(),
            "raised_in_callbacks": [text for _, text in trace.raised_in_callbacks()]}


_in_use: list[Any] = []  # the side's backend selection (see _child)
_MP_DIR = os.path.dirname(multiprocessing.__file__) + os.sep
_KIT_FILES = (__file__, os.path.abspath(__file__))


def where_it_was(frame: FrameType | None) -> str:
    """The stack of *frame*, outermost first, without the frames of ``multiprocessing`` and of the kit's
    own child code (they start every side): from the side's function on."""
    if frame is None:
        return ""
    stack = traceback.extract_stack(frame)
    kit = [i for i, f in enumerate(stack) if f.filename in _KIT_FILES]
    # Everything up to the kit's frame is the process's start (the fork server's or spawn's "<string>" too).
    kept = stack[kit[-1] + 1:] if kit else stack
    kept = [f for f in kept if not f.filename.startswith(_MP_DIR)]
    return "".join(traceback.format_list(kept or stack))


def _check_native_loader() -> None:
    """A native side loads the DOCA its environment names: a process it was started from (``fork``) may
    already hold another ``libdoca_common``, which cannot be unloaded."""
    from ..native import loader

    loaded = loader.loaded_path("common")
    want = [d for d in os.environ.get(loader.ENV_LIBDIR, "").split(os.pathsep) if d]
    if loaded and want and os.path.dirname(os.path.abspath(loaded)) != os.path.abspath(want[0]):
        raise RuntimeError(f"doca_pair: this native side needs libdoca_common from {want[0]}, but the process it "
                           f"was started from had loaded {loaded} (it cannot be unloaded): use the 'warm' or "
                           f"'spawn' start method")


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

    if spec.impl == "native":
        _check_native_loader()
    if _backend.impl != spec.impl:  # the side's path, whatever the process it was started from selected
        # Held for the process's life: a context manager dropped after __enter__ is finalized at once, and
        # its generator's exit restores the backend it replaced.
        _in_use.append(_backend.use(spec.impl))
        _in_use[-1].__enter__()
    # A warm side's imports saw the zygote's environment; a spawned one's may have seen the parent's too
    # (free-threaded 3.13 imports the emulator with doca_py, before the side's environment is set): re-read.
    from .warm import refresh_from_env

    refresh_from_env()
    # Its decisions: a function of the seed, its role and its tasks. On the native path over libdoca the
    # emulator runs in this process: the knobs are set before libdoca's first call attaches it (open_side).
    spec.knobs.apply(token=spec.role)
    random.seed(f"{spec.knobs.seed}/{spec.role}")  # Python's own generator too, as pytest-randomly seeds it
    from ..emulated import trace

    trace.enable(label=f"{spec.role} side (pid {os.getpid()})")
    trace.skip_exit_write()  # under DOCA_PY_TRACE the parent writes this side's events (it gets them all)

    finished = [False]

    def ended(signum: int, frame: Any) -> None:
        if finished[0]:
            return  # its last word is on the way: let it end by itself
        where = where_it_was(frame)
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
        with collecting() as collected:
            result = fn(Side(spec.role, dev, rep, peer, spec.args, spec.token, spec.knobs.seed))
            trace.mark(f"{spec.role} side: {_fn_name(spec.fn)} returned")
            leaks = _leaks(spec.role, (dev, rep), collected) if spec.leak_check and spec.knobs.strict else ""
        try:
            pickle.dumps(result)
        except Exception as exc:  # noqa: BLE001 - any pickling failure is the user's result's
            leaks = (f"{type(exc).__name__}: the {spec.role} function returned an object that cannot be sent back: "
                     f"{exc}")
        if leaks:  # a failure of the side, with its time
            trace.mark(f"{spec.role} side raised {leaks.split(':', 1)[0]}\n{leaks}")
        msg = ("ok", result, _forensics()) if not leaks else ("raised", leaks, _forensics())
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
