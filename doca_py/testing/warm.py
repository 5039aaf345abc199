"""Warm sides: a zygote process that has imported doca_py and the emulator forks each side.

A spawned side pays for a fresh interpreter and every import (``doca_py``, the emulated
backend, pytest, the test module) before its function runs; a forked one is a copy of the
test process, emulator state and threads included. The ``"warm"`` start method of
``DocaPair`` (its default) takes the middle way: one zygote per test process (each pytest-xdist
worker has its own), started on first use, imports the kit's modules and creates **no** DOCA
object, no thread and no emulator state; each side is a ``fork`` of it. The side then takes the
test process's environment as it is at ``run`` (not as it was when the zygote started), the
test's knobs, re-reads what the emulator reads from the environment at import, and imports the
test module. Every side of every run is a new process: nothing one test leaves behind (a ctx left
running, an export, a knob, an environment variable) reaches the next.

The zygote is a private instance of ``multiprocessing``'s fork server (the process-wide one that
``multiprocessing.get_context("forkserver")`` uses is left alone); ``stop()`` ends it (the
plugin does at session end), and it ends by itself when the test process exits.
"""

from __future__ import annotations

import os
import sys
import threading
from multiprocessing import forkserver, popen_forkserver, process
from typing import Any

__all__ = ["WarmProcess", "PRELOAD", "start", "stop", "server_pid", "refresh_from_env"]

PRELOAD = ("doca_py.testing._zygote",)
"""What the zygote imports before it forks sides (``_zygote`` imports doca_py and the emulator)."""
PRELOAD_NATIVE = ("doca_py.testing._zygote_native",)
"""What a zygote for native sides imports too: the native backend and libdoca's serving modules."""

_lock = threading.Lock()
_server: Any = None  # forkserver.ForkServer: typeshed does not describe the class


def _preload(native: bool) -> list[str]:
    mods = list(PRELOAD) + (list(PRELOAD_NATIVE) if native else [])
    if "pytest" in sys.modules:  # a test module imports it: preload it too (not in plain programs)
        mods.append("pytest")
    return mods


def start(native: bool = False) -> Any:
    """The running zygote (started now if needed): a ``multiprocessing.forkserver.ForkServer``. *native*:
    one started now preloads the native backend too (``--doca-impl native``)."""
    global _server
    with _lock:
        if _server is None:
            server = forkserver.ForkServer()
            server.set_forkserver_preload(_preload(native))
            _server = server
        # The zygote loads no DOCA library, whatever this process's backend: each side selects its own path
        # (a libdoca_common, once loaded, stays for the process and every fork of it).
        saved = os.environ.get("DOCA_PY_IMPL")
        os.environ["DOCA_PY_IMPL"] = "emulated"
        try:
            _server.ensure_running()  # (re)starts it if it is not running
        finally:
            if saved is None:
                del os.environ["DOCA_PY_IMPL"]
            else:
                os.environ["DOCA_PY_IMPL"] = saved
        return _server


def server_pid() -> int | None:
    """The zygote's process id, ``None`` if none runs."""
    return None if _server is None else _server._forkserver_pid


def stop() -> None:
    """End the zygote (if one runs) and wait for it; the next warm side starts a new one."""
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None and server._forkserver_pid is not None:
        server._stop()


class _WarmPopen(popen_forkserver.Popen):
    """``multiprocessing``'s fork-server launcher, pointed at the kit's zygote instead of the
    process-wide fork server (it looks the connection function up on the module at each launch)."""

    def _launch(self, process_obj: Any) -> None:
        server = start()
        with _lock:  # one launch at a time may borrow the module's entry point
            saved = forkserver.connect_to_new_process
            forkserver.connect_to_new_process = server.connect_to_new_process
            try:
                super()._launch(process_obj)  # type: ignore[misc]  # typeshed omits it
            finally:
                forkserver.connect_to_new_process = saved


class WarmProcess(process.BaseProcess):
    """A ``multiprocessing`` process forked from the kit's zygote."""

    _start_method = "forkserver"

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _WarmPopen(process_obj)


def refresh_from_env() -> None:
    """Re-read what doca_py reads from the environment at import, in a side forked from the zygote
    (whose imports saw the environment of the moment it started). The knobs (seed, strict,
    shuffle, faults, version) are set by ``Knobs.apply``; this covers the rest. Only modules already
    imported are refreshed: one imported later reads the side's environment itself (importing the comch
    and RDMA emulators here cost a forked side of an unrelated test process half a second, several under
    pytest's assertion rewriter without a bytecode cache)."""
    from .. import log
    from ..emulated import version

    level = os.environ.get("DOCA_PY_LOG_LEVEL")
    log.logger.setLevel(log.to_python_level(log.parse_level(level)) if level else 0)
    text = os.environ.get("DOCA_PY_EMU_VERSION", "").strip()
    version.VERSION = version.parse(text) if text else version._DEFAULT
    comch_config: Any = sys.modules.get("doca_py.emulated.comch.config")
    if comch_config is not None:
        comch_config.configure(retry_window=float(os.environ.get("DOCA_PY_COMCH_RETRY_WINDOW", "") or 0),
                               shm=os.environ.get("DOCA_PY_COMCH_SHM", "") == "1")
    rdma_config: Any = sys.modules.get("doca_py.emulated.rdma.config")
    if rdma_config is not None:
        rdma_config.cfg.__init__()  # the one instance every module holds, re-read
