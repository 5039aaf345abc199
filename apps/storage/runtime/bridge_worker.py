"""What the bridges' workers (gga offload, zero copy) share: the comch side and the data-path skeleton.

A bridge worker owns a ``Pe``, a buffer inventory, an io-message mmap and, on the initiator's
comch connection, a consumer (the initiator's requests) and a producer (the answers); the
rest of its data path (RDMA towards its target(s), offload engines) is the bridge's own.
:class:`BridgeWorkerThread` holds the shared parts:

* the control-thread API: :attr:`~BridgeWorkerThread.name`, :meth:`~BridgeWorkerThread.start`,
  :meth:`~BridgeWorkerThread.start_data_path` and :meth:`~BridgeWorkerThread.stop_data_path`;
* :meth:`~BridgeWorkerThread._open_comch`, the start of a worker's ``_create``;
* the data-path loop (``_step``): progress until idle, a command, the exit or a backlog for the
  housekeeping, then sleep (shortly while there is a backlog); and the drain of a stop;
* :meth:`~BridgeWorkerThread._fail` and :meth:`~BridgeWorkerThread._close_quietly`.

A bridge supplies what differs (hooks): ``_create``, ``_state_cb``, ``_start_data_path``,
``_close_comch``, ``_housekeeping`` (run before every round of the data path and of the
drain), ``_drain_over`` (when a drain gives up, with the bridge's own warning), the logger
:attr:`~BridgeWorkerThread._log` and the cap :attr:`~BridgeWorkerThread._SPIN_ROUNDS`.

The data-path loop reads only attributes (no hook calls per progress round): a bridge's
backlog is ``_retry`` (answers the initiator could not take yet) plus, for a bridge with
offload engines, ``_blocked`` (transactions parked until an engine runs again) and
``_restart`` (engines to restart); those two are empty by default.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sized
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import doca_py as d
from doca_py.comch import ComchConnection, ComchConsumer, ComchConsumerTaskPostRecv, ComchProducer, \
    ComchProducerTaskSend
from doca_py.ctx import TaskCallback
from doca_py.errors import ErrorCode
from doca_py.types import AccessFlag, CtxState

from apps.common.runtime.worker_thread import WorkerThread

__all__ = ["BridgeShared", "BridgeWorkerThread", "IO_MESSAGE_PERMISSIONS", "SPIN", "DATA_SLEEP", "IDLE_SLEEP",
           "RETRY_SLEEP", "ABORT_DRAIN"]

IO_MESSAGE_PERMISSIONS = AccessFlag.LOCAL_READ_WRITE | AccessFlag.PCI_READ_WRITE
"""The io-message mmap: the initiator's comch messages land in it and are sent from it."""
SPIN = 32            # consecutive empty progress() calls before the data path sleeps
DATA_SLEEP = 0.02    # longest sleep of the data path (woken early by completions)
IDLE_SLEEP = 0.1     # longest sleep while the data path is not running
RETRY_SLEEP = 0.001  # sleep while the housekeeping has a backlog
ABORT_DRAIN = 0.3    # longest drain once Ctrl-C was pressed


class BridgeShared(Protocol):
    """What a bridge worker needs of the resources its control thread shares."""

    @property
    def dev(self) -> d.Dev: ...

    @property
    def connection(self) -> ComchConnection: ...


S = TypeVar("S", bound=BridgeShared)


class BridgeWorkerThread(WorkerThread, Generic[S]):
    """A bridge's worker thread; the public methods run on the control thread."""

    #: The bridge's logger (every line keeps its bridge's logger name).
    _log: ClassVar[logging.Logger]
    #: What one round of the data path iterates over: at most that many progress rounds before
    #: the next housekeeping round under continuous load (endless by default: until idle).
    _SPIN_ROUNDS: ClassVar[Iterable[object]] = itertools.repeat(None)
    #: Backlog of the housekeeping besides ``_retry``: parked transactions and engines to restart
    #: (a bridge with offload engines sets them; nothing by default).
    _blocked: Sized = ()
    _restart: Sized = ()
    _retry: Sized

    def __init__(self, index: int, cpu: int, shared: S, abort: threading.Event, thread_name: str,
                 transactions: int) -> None:
        self.index = index
        self.shared = shared
        self.n = transactions
        super().__init__(cpu, abort, thread_name, work_units=transactions)  # budgets scale with the count
        self._inv: d.BufInventory | None = None
        self._io_mm: d.Mmap | None = None
        self._consumer: ComchConsumer | None = None
        self._producer: ComchProducer | None = None
        self._states: dict[str, CtxState] = {}
        self._closing = False        # teardown: completions are flushes, not work
        self._in_flight = 0          # requests received and not yet answered
        self.operation_count = 0
        self.refused_count = 0       # requests the bridge answered itself
        self.bytes_requested = 0     # io_size of the requests accepted (live statistics)
        self.pe_hits = 0
        self.pe_misses = 0
        #: Set when a comch send to the initiator failed with ``IO_FAILED``: the transport's retry window
        #: ran out, the initiator did not answer (stopped, hung, unreachable) and the connection was dropped.
        self.initiator_unanswered = False

    # ------------------------------------------------------------------ control-thread API
    @property
    def name(self) -> str:
        """``worker <index> (cpu <id>)``."""
        return f"worker {self.index} (cpu {self.cpu})"

    def start(self) -> None:
        """Start the thread and create the worker's objects (raises what creation raised)."""
        self._thread.start()
        self._call(self._create, None, "create its contexts")

    def start_data_path(self, remote_consumer_id: int) -> None:
        """Allocate the tasks (answers go to *remote_consumer_id*) and post every receive."""
        self._call(lambda: self._start_data_path(remote_consumer_id), None, "start its data path")

    def progress_mark(self) -> int:
        """A mark for :meth:`progressed_past`, taken now by the control thread.

        Every round of the worker's loop (and of a stop's drain) runs at least one whole ``Pe.progress()``
        (when it has a Pe), which delivers every completion its Pe held when it began: the round after the one under way now
        began after now, so two rounds on, whatever the Pe held now has reached the worker's callbacks."""
        return self.rounds + 2

    def progressed_past(self, mark: int) -> bool:
        """Whether the worker delivered every completion its Pe held when *mark* was taken (or its thread
        has ended: it will deliver nothing more)."""
        return self.rounds >= mark or not self.alive

    def stop_data_path(self, drain_timeout: float) -> None:
        """Stop taking requests, let those in flight be answered (≤ *drain_timeout*), destroy
        the comch consumer and producer (the initiator waits for them to expire)."""
        self._call(lambda: self._stop_data_path(drain_timeout), None, "stop its data path",
                   abortable=False)  # the worker bounds the drain by drain_timeout itself

    # ------------------------------------------------------------------ thread main loop
    def _step(self) -> None:
        pe = self._pe
        if pe is None:
            self._sleep(IDLE_SLEEP)
            return
        self._housekeeping()
        if self._running or self._in_flight:
            idle = 0
            for _ in self._SPIN_ROUNDS:
                if pe.progress():
                    self.pe_hits += 1
                    idle = 0
                else:
                    self.pe_misses += 1
                    idle += 1
                if idle >= SPIN or self._posted != self._taken or self._exit or self._retry or self._blocked \
                        or self._restart:
                    break
            if self._retry or self._restart or self._blocked:
                self._sleep(RETRY_SLEEP)
            elif idle >= SPIN:
                self._sleep(DATA_SLEEP)
        elif not pe.progress():
            self._sleep(IDLE_SLEEP)

    # ------------------------------------------------------------------ creation
    def _open_comch(self, buffers: int, io_bytes: int,
                    on_request: TaskCallback[ComchConsumerTaskPostRecv],
                    on_request_error: TaskCallback[ComchConsumerTaskPostRecv],
                    on_sent: TaskCallback[ComchProducerTaskSend], on_send_error: TaskCallback[ComchProducerTaskSend],
                    sends: int) -> tuple[d.Pe, ComchConsumer, ComchProducer]:
        """The ``Pe``, an inventory of *buffers*, the io-message mmap of *io_bytes* and, on the
        initiator's connection, the consumer (``n`` receives) and the producer (*sends* sends),
        each reporting its state changes to ``_state_cb``; neither started yet."""
        sh = self.shared
        self._pe = pe = d.Pe()
        self._inv = d.BufInventory(buffers)
        self._io_mm = io_mm = d.Mmap()
        io_mm.allocate(io_bytes)
        io_mm.set_permissions(IO_MESSAGE_PERMISSIONS)
        io_mm.add_dev(sh.dev)
        io_mm.start()
        self._consumer = consumer = ComchConsumer(sh.connection, io_mm)
        pe.connect_ctx(consumer)
        consumer.set_state_changed_cb(self._state_cb("consumer"))
        consumer.task_post_recv_set_conf(on_request, on_request_error, self.n)
        self._producer = producer = ComchProducer(sh.connection)
        pe.connect_ctx(producer)
        producer.set_state_changed_cb(self._state_cb("producer"))
        producer.task_send_set_conf(on_sent, on_send_error, sends)
        return pe, consumer, producer

    # ------------------------------------------------------------------ data path stop
    def _stop_data_path(self, drain_timeout: float) -> None:
        self._running = False
        pe = self._pe
        if pe is not None:
            start = time.monotonic()
            while self._in_flight > 0 and not self._drain_over(start, drain_timeout):
                self._housekeeping()
                if pe.progress():
                    self.pe_hits += 1
                else:
                    self.pe_misses += 1
                    self._sleep(RETRY_SLEEP if self._retry or self._blocked else DATA_SLEEP)
                self.rounds += 1
        # The reference destroys the comch producer/consumer at stop: the initiator waits for
        # the consumer to expire before it shuts down.
        self._close_comch()

    def _reply_failed(self, status: ErrorCode) -> None:
        """A comch producer send to the initiator failed with *status* (fatal for the worker)."""
        if status == ErrorCode.IO_FAILED:
            self.initiator_unanswered = True
        self._fail(f"a comch producer send failed: {status.name}")

    def _fail(self, reason: str) -> None:
        """A fatal problem of this worker: it stops taking requests (in-flight ones still get
        their answers; the control thread reports it)."""
        if self._closing:
            return
        if self.error is None:
            self._log.error("%s: %s; it stops taking requests", self.name, reason)
            self.error = reason
        self._running = False

    def _close_quietly(self, objs: Iterable[tuple[str, Any]]) -> None:
        """Close every ``(name, object)`` that is not ``None``; a failure is logged, the rest still closed."""
        for name, obj in objs:
            if obj is None:
                continue
            try:
                obj.close()
            except Exception as exc:  # noqa: BLE001 - keep closing the rest
                self._log.error("%s: closing its %s failed: %s", self.name, name, exc)

    # ------------------------------------------------------------------ hooks
    def _create(self) -> None:
        """Create every DOCA object of the worker (in its thread); usually starts with `_open_comch`."""
        raise NotImplementedError

    def _state_cb(self, name: str) -> Callable[[Any, d.Ctx, CtxState, CtxState], None]:
        """The state-change callback of the context *name* (``consumer``, ``producer``, ...)."""
        raise NotImplementedError

    def _start_data_path(self, remote_consumer_id: int) -> None:
        """Allocate the tasks and post every receive (in the worker thread)."""
        raise NotImplementedError

    def _close_comch(self) -> None:
        """Destroy the comch consumer and producer (the end of a stop, and of the teardown)."""
        raise NotImplementedError

    def _housekeeping(self) -> None:
        """Work off the backlog (before every round of the data path and of a stop's drain)."""
        raise NotImplementedError

    def _drain_over(self, start: float, drain_timeout: float) -> bool:
        """Whether a stop's drain, begun at *start*, gives up now (and says so) with requests in flight."""
        raise NotImplementedError
