"""A worker thread pinned to one CPU that owns its DOCA objects, driven through a mailbox.

DOCA objects of a worker (its ``Pe`` and everything connected to it) are created,
progressed and destroyed in the worker's own thread; the control thread asks for
work with `WorkerThread._call`, which ends with the work, with the worker thread, or
with the abort flag (Ctrl-C, SIGTERM, a failed control phase). Subclasses implement
`_step` (one round of the data path) and `_teardown` (destroy everything, in the
worker thread).

Local work has no time budget. The reference gives every control-thread → worker
command a fixed 3 s; on a loaded machine creating a target's contexts takes longer,
and a constant would fail every process at once although nothing is wrong. What
waits for a peer is bounded by the configured time-outs where it waits (the control
channel, the RDMA connection); a worker that really hangs is reported every
`STILL_WAITING_EVERY` seconds and ended with Ctrl-C. A caller that wants a bound
passes a timeout, to which ``work_units=N`` (the transaction count) adds
`WORK_UNIT_BUDGET` per unit (`WorkerThread.budget`): the teardown's join uses it.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
# The builtin TimeoutError from 3.11 on; a class of its own on 3.10.
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

import doca_py as d
from doca_py.errors import ErrorCode

from apps.common.errors import StorageAppError
from apps.common.runtime.live_stats import LiveCounters, register
from apps.common.runtime.wakeup import Wakeup

__all__ = ["WorkerThread", "COMMAND_TIMEOUT", "STILL_WAITING_EVERY", "WORK_UNIT_BUDGET", "work_budget"]

T = TypeVar("T")
log = logging.getLogger("apps.storage")

#: The base of the teardown's bound (`WorkerThread.destroy`), plus the work budget: at exit a stuck
#: worker is abandoned (a daemon thread) rather than keeping the process alive.
COMMAND_TIMEOUT = 3.0
#: How often an unbounded call logs that it is still waiting for the worker.
STILL_WAITING_EVERY = 30.0
#: Seconds added to every call's budget per unit of work (transaction) the worker holds.
#: Measured on the emulated backend: preparing a target transaction (4 buffers, 4 tasks, one
#: posted receive) takes 0.12 ms, 0.3 ms in strict mode; 2 ms leaves room for slower cores
#: and a loaded machine (65,535 transactions: 3 s + 131 s).
WORK_UNIT_BUDGET = 2e-3
_TICK = 0.1  # how often blocking waits look at the abort flag


def work_budget(timeout: float, work_units: int) -> float:
    """*timeout* plus `WORK_UNIT_BUDGET` per unit of work.

    ```pycon
    >>> work_budget(3.0, 65535)
    134.07

    ```
    """
    return round(timeout + max(0, work_units) * WORK_UNIT_BUDGET, 6)


class WorkerThread:
    """Base of the storage apps' per-core workers.

    *work_units* (usually the transaction count) scales every call's budget, see
    `budget`; *pin* false leaves the thread unpinned (tests on a machine with fewer CPUs).
    """

    def __init__(self, cpu: int, abort: threading.Event, thread_name: str, *, work_units: int = 0,
                 pin: bool = True) -> None:
        if work_units < 0:
            raise ValueError(f"work_units must be >= 0, got {work_units}")
        self.cpu = cpu
        self.work_units = work_units
        self.pin = pin
        self._abort = abort
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        # Commands queued (bumped after each put, under _post_lock: several threads may post) and the count
        # _run_commands last saw before draining: a data loop compares the two, plain reads instead of a
        # SimpleQueue.empty() call per poll. A put always precedes its bump, so no command is missed.
        self._posted = 0
        self._taken = 0
        self._post_lock = threading.Lock()
        self._wakeup = Wakeup()
        self._thread = threading.Thread(target=self._main, name=thread_name, daemon=True)
        self._exit = False
        self._running = False  # the data path accepts work
        self._pe: d.Pe | None = None
        self.error: str | None = None
        #: `_step` rounds completed (written by the worker thread only; others read it, see
        #: ``BridgeWorkerThread.progress_mark``).
        self.rounds = 0
        register(self)  # sampled by live statistics (apps.common.runtime.live_stats) while it lives

    @property
    def name(self) -> str:
        """How the worker is named in messages."""
        return self._thread.name

    @property
    def alive(self) -> bool:
        """Whether the worker thread is running."""
        return self._thread.is_alive()

    def live_counters(self) -> LiveCounters:
        """The running totals live statistics sample, read from another thread without locking
        (the subclasses' counters, which their data path keeps anyway)."""
        return LiveCounters(0, 0, 0, 0)

    def budget(self, timeout: float) -> float:
        """What a call with *timeout* may take: *timeout* plus the work budget
        (`work_budget` of `work_units`)."""
        return work_budget(timeout, self.work_units)

    def destroy(self, timeout: float = COMMAND_TIMEOUT + 12.0) -> None:
        """Destroy every object in the worker thread and join it (bounded by
        `budget` of *timeout*; never raises)."""
        if self._thread.is_alive():
            self._exit = True
            self._wake()
            timeout = self.budget(timeout)
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.error("%s did not stop within %.0f s; abandoning it", self.name, timeout)
                return
        self._wakeup.close()

    def _wake(self) -> None:
        self._wakeup.set()

    def _post(self, fn: Callable[[], T]) -> Future[T]:
        """Queue *fn* for the worker thread without waiting; its future."""
        fut: Future[T] = Future()
        with self._post_lock:
            self._commands.put((fn, fut))
            self._posted += 1
        self._wakeup.set()
        return fut

    def _call(self, fn: Callable[[], T], timeout: float | None, what: str, *, abortable: bool = True) -> T:
        """Run *fn* in the worker thread; its result or exception.

        *timeout* ``None`` (local work) sets no deadline: the call ends with *fn*, with the worker
        thread, or with the abort flag if *abortable*, and logs every `STILL_WAITING_EVERY` seconds
        while it waits. A number bounds it by `budget` of *timeout* (``TIME_OUT`` after that)."""
        budget = None if timeout is None else self.budget(timeout)
        if not self._thread.is_alive():
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} is not running"
                                  + (f" ({self.error})" if self.error else ""))
        fut = self._post(fn)
        start = time.monotonic()
        report = start + STILL_WAITING_EVERY
        while True:
            now = time.monotonic()
            wait = _TICK if budget is None else max(0.0, min(_TICK, start + budget - now))
            try:
                return fut.result(timeout=wait)
            except FutureTimeout:  # concurrent.futures' own TimeoutError on 3.10
                pass
            if abortable and self._abort.is_set():
                raise StorageAppError(ErrorCode.CONNECTION_ABORTED, "Aborted: User requested abort")
            if not self._thread.is_alive() and not fut.done():
                raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} ended while asked to {what}")
            now = time.monotonic()
            if budget is not None and now >= start + budget and not fut.done():
                raise StorageAppError(ErrorCode.TIME_OUT, f"{self.name} did not {what} within {budget:g} s"
                                      + (f" (budget for {self.work_units} transactions)" if self.work_units
                                         else ""))
            if budget is None and now >= report:
                log.warning("still waiting for %s to %s (%.0f s so far)", self.name, what, now - start)
                report = now + STILL_WAITING_EVERY

    # -- worker thread ------------------------------------------------------------------------
    def _pin(self) -> None:
        """Pin the calling (worker) thread to `cpu`; a warning if the machine refuses."""
        if not self.pin:
            return
        try:
            os.sched_setaffinity(0, {self.cpu})  # pid 0: this thread
        except (OSError, ValueError) as exc:  # e.g. fewer CPUs in the test machine / container
            log.warning("%s: could not pin the thread to cpu %d (%s); running unpinned", self.name, self.cpu, exc)

    def _main(self) -> None:
        self._pin()
        try:
            while not self._exit:
                self._run_commands()
                if self._exit:
                    break
                self._step()
                self.rounds += 1
        except Exception as exc:  # noqa: BLE001 - a worker must never take the process down
            log.exception("%s failed", self.name)
            self.error = self.error or f"{type(exc).__name__}: {exc}"
        finally:
            self._running = False
            self._teardown()
            while True:  # nobody will run these any more
                try:
                    _, fut = self._commands.get_nowait()
                except queue.Empty:
                    break
                fut.set_exception(StorageAppError(ErrorCode.BAD_STATE, f"{self.name} has stopped"))

    def _run_commands(self) -> None:
        self._taken = self._posted  # read before draining: a command posted meanwhile is seen next round
        while True:
            try:
                fn, fut = self._commands.get_nowait()
            except queue.Empty:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the control thread
                fut.set_exception(exc)

    def _sleep(self, timeout: float) -> bool:
        """Wait for a completion (which then has run) or a wake-up (at most *timeout* s);
        whether a wake-up ended it."""
        return self._wakeup.sleep(self._pe, timeout)

    def _step(self) -> None:
        """One round of the data path (progress, maybe sleep)."""
        raise NotImplementedError

    def _teardown(self) -> None:
        """Destroy the worker's DOCA objects (in the worker thread)."""
        raise NotImplementedError
