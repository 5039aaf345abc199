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
import select
import signal
import sys
import threading
import time
from multiprocessing import forkserver, popen_forkserver, process, util
from typing import Any

__all__ = ["WarmProcess", "PRELOAD", "STOP_WAIT", "LAUNCH_WAIT", "start", "stop", "server_pid", "refresh_from_env"]

PRELOAD = ("doca_py.testing._zygote",)
"""What the zygote imports before it forks sides (``_zygote`` imports doca_py and the emulator)."""
PRELOAD_NATIVE = ("doca_py.testing._zygote_native",)
"""What a zygote for native sides imports too: the native backend and libdoca's serving modules."""

STOP_WAIT = 10.0
"""Seconds ``stop`` waits for the zygote to end before it kills it and raises."""
LAUNCH_WAIT = 60.0
"""Seconds a launch waits for the zygote to fork a side (it answers with the side's pid) before it kills it."""

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
    """End the zygote (if one runs) and wait for it, up to ``STOP_WAIT`` seconds; the next warm side starts a
    new one.

    The zygote ends when every process holding the write end of its "alive" pipe has closed it: this
    process, and every process forked from it or from the zygote since (a side, a side's child, a ``fork``
    side) that still runs. ``multiprocessing``'s own stop waits for it without a bound; this one kills a
    zygote still running after ``STOP_WAIT`` seconds and raises ``TimeoutError`` naming the processes that
    held the pipe."""
    global _server
    with _lock:
        server, _server = _server, None
    if server is None or server._forkserver_pid is None:
        return
    pid, alive, address = server._forkserver_pid, server._forkserver_alive_fd, server._forkserver_address
    server._forkserver_pid = server._forkserver_alive_fd = server._forkserver_address = None
    pipe = os.fstat(alive).st_ino
    os.close(alive)  # asks the zygote to end, once no other process holds the pipe
    ended = _reaped_within(pid, STOP_WAIT)
    if address is not None and not util.is_abstract_socket_namespace(address):
        try:
            os.unlink(address)
        except OSError:
            pass
    if ended:
        return
    holders = _holding_pipe(pipe, exclude=pid)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise TimeoutError(f"doca_py.testing: the zygote (pid {pid}) did not end within {STOP_WAIT} s of being asked "
                       f"to (the kit killed it): processes still held its 'alive' pipe: "
                       f"{', '.join(holders) or 'none found'} (a side, or a process forked from a side or from "
                       f"this process, outlived its run)")


def _reaped_within(pid: int, seconds: float) -> bool:
    """Whether child *pid* ended (and was reaped) within *seconds*."""
    deadline = time.monotonic() + seconds
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (not Linux, an old kernel): look again every 50 ms
        pidfd = None
    try:
        while True:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if pidfd is not None:
                select.select([pidfd], [], [], left)  # readable once it has ended
            else:
                time.sleep(min(left, 0.05))
    except ChildProcessError:  # reaped elsewhere
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _holding_pipe(inode: int, exclude: int) -> list[str]:
    """The processes (``/proc``) with a descriptor of the pipe *inode* open, but *exclude*, as
    ``"pid N (command line)"``."""
    out = []
    target = f"pipe:[{inode}]"
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) in (exclude, os.getpid()):
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
            if not any(os.readlink(f"/proc/{entry}/fd/{fd}") == target for fd in fds):
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        out.append(f"pid {entry} ({cmd[:200]})")
    return out


class _WarmPopen(popen_forkserver.Popen):
    """``multiprocessing``'s fork-server launcher, pointed at the kit's zygote instead of the
    process-wide fork server (it looks the connection function up on the module at each launch)."""

    def _launch(self, process_obj: Any) -> None:
        server = start()
        zygote = server._forkserver_pid
        # multiprocessing waits for the zygote's answer (the side's pid) without a bound: a zygote that does not
        # answer within LAUNCH_WAIT seconds is killed, which ends the wait (its pipe closes).
        killed: list[int] = []
        watchdog = threading.Timer(LAUNCH_WAIT, _kill_unanswering, (zygote, killed))
        watchdog.daemon = True
        with _lock:  # one launch at a time may borrow the module's entry point
            saved = forkserver.connect_to_new_process
            forkserver.connect_to_new_process = server.connect_to_new_process
            watchdog.start()
            try:
                super()._launch(process_obj)  # type: ignore[misc]  # typeshed omits it
            except (EOFError, OSError) as exc:
                if killed:
                    raise RuntimeError(f"doca_py.testing: the zygote (pid {zygote}) did not start a side within "
                                       f"{LAUNCH_WAIT} s: the kit killed it (the next side starts a new one)") from exc
                raise
            finally:
                watchdog.cancel()
                forkserver.connect_to_new_process = saved


def _kill_unanswering(pid: int, killed: list[int]) -> None:
    killed.append(pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
