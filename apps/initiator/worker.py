"""One initiator worker: a thread with its own ``Pe``, a comch producer and consumer on the
client's connection, and the transaction engine of storage-apps-spec §7.2 / §8.1.

Every DOCA object of a worker is created, progressed and destroyed on the worker's
thread (a ``Pe`` is single-threaded). The thread is a
:class:`~apps.common.runtime.worker_thread.WorkerThread`, as the target's and the bridges'
workers are (pinning, the wake-up and the sleep on the ``Pe``, the teardown in the thread);
each of its steps runs the current phase. The control thread drives it through events:

1. :meth:`Worker.launch` — the thread pins itself, builds its objects and progresses until
   the producer and consumer are RUNNING (:attr:`Worker.ready`, or :attr:`Worker.error`);
2. :meth:`Worker.go` with the remote consumer id — the data path runs until the run limit,
   an error, or :meth:`Worker.stop` (Ctrl-C); then :attr:`Worker.finished` is set;
3. :meth:`Worker.teardown` — the objects are destroyed and the thread exits.

The data path (the transaction engine, the IO deadline) is :class:`~apps.initiator.transactions.DataPath`,
this worker's base.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

import doca_py as d
from doca_py.comch import ComchConnection, ComchConsumer, ComchConsumerTaskPostRecv, ComchProducer, \
    ComchProducerTaskSend
from doca_py.errors import DocaError, ErrorCode
from doca_py.types import CtxState

from apps.common.errors import StorageAppError
from apps.common.runtime.live_stats import LiveCounters
from apps.storage.wire.io_message import IO_MESSAGE_SIZE

from .plan import Action, WorkerPlan
from .transactions import (  # noqa: F401 - re-exported: their home was this module
    _IDLE_SLEEP as _IDLE_SLEEP,
    DRAIN_TIMEOUT as DRAIN_TIMEOUT,
    HEX_WINDOW as HEX_WINDOW,
    TIMED_OUT_SHOWN as TIMED_OUT_SHOWN,
    DataPath as DataPath,
    WorkerResult as WorkerResult,
    _Txn as _Txn,
)

__all__ = ["Worker", "WorkerResult", "DRAIN_TIMEOUT", "HEX_WINDOW", "TIMED_OUT_SHOWN"]

_log = logging.getLogger("apps.initiator")


class Worker(DataPath):
    """One worker thread (see the module documentation); the public methods run on the control thread."""

    def __init__(self, plan: WorkerPlan, *, steps: tuple[Action, ...], io_size: int, dev: d.Dev,
                 connection: ComchConnection, region: memoryview, expected: bytes | None,
                 pin: bool = True, io_timeout: float = 0.0) -> None:
        self.index = plan.index
        # The control thread only ever waits on the events below, so the mailbox abort flag stays unset.
        super().__init__(plan.cpu, threading.Event(), f"initiator-worker-{plan.index}",
                         work_units=plan.transaction_count, pin=pin)
        self.plan = plan
        self.steps = steps
        self.io_size = io_size
        self.dev = dev
        self.connection = connection
        self.region = region
        self.expected = memoryview(expected) if expected is not None else None
        self.io_timeout = io_timeout
        self.timed_out: list[str] = []
        """The IOs that timed out (``read of storage offset 12288 (transaction 3)``), if any."""
        self._connection_failed = False  # a receive failed because the connection went away
        self.unanswered = False
        """Whether they timed out because the service did not answer within the comch retry window (a
        send failed with ``IO_FAILED``; the connection was dropped), rather than `io_timeout`."""
        self.result = WorkerResult()
        self.aborted = False
        self.ready = threading.Event()
        self.finished = threading.Event()
        self.exited = threading.Event()
        self._go = threading.Event()
        self._stop = threading.Event()
        self.remote_consumer_id: int | None = None
        self.consumer_id: int | None = None
        self._txns = [_Txn(i) for i in range(plan.transaction_count)]
        self._n_txns = plan.transaction_count
        # Producer sends refused by submit with AGAIN (the service's consumer has no receive
        # posted yet, DOCA 3.x), submitted again after a later progress; built once.
        self._retry: deque[ComchProducerTaskSend] = deque()
        self._started = 0
        self._inflight_ios = 0
        self._one_io = False  # set when the data path starts (DataPath._start_data_path)
        self._first_kind = 0
        # Per-IO lookups done once: the records of each IO kind, the receive buffers by slot.
        self._io_read = self.result.io["read"]
        self._io_write = self.result.io["write"]
        self._recv_bufs: list[d.Buf] = []
        self._msg_mmap: d.Mmap | None = None
        self._inv: d.BufInventory | None = None
        self._consumer: ComchConsumer | None = None
        self._producer: ComchProducer | None = None
        self._mem: memoryview = memoryview(b"")
        self._req_base = 0
        self._phase: Callable[[], None] = self._create

    # -- control thread API -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """``worker <index> (cpu <id>)``."""
        return f"worker {self.index} (cpu {self.cpu})"

    @property
    def completed(self) -> int:
        """Transactions completed so far (read without locking: an int)."""
        return self.result.completed

    def live_counters(self) -> LiveCounters:
        """Transactions completed, their bytes, those started and not completed, failed IOs."""
        res = self.result
        return LiveCounters(res.completed, res.completed * self.io_size, max(0, self._started - res.completed),
                            res.failed_ios)

    def launch(self) -> None:
        """Start the thread (it builds its objects and sets :attr:`ready`)."""
        self._thread.start()

    def go(self, remote_consumer_id: int) -> None:
        """Start the data path towards *remote_consumer_id*."""
        self.remote_consumer_id = remote_consumer_id
        self._go.set()
        self._wake()

    def stop(self) -> None:
        """Abort the data path (Ctrl-C or a fatal control error); idempotent."""
        self._stop.set()
        self._wake()

    def teardown(self) -> None:
        """Destroy the objects and end the thread (also valid before :meth:`go`)."""
        self._stop.set()
        self._exit = True
        self._wake()

    def join(self, timeout: float) -> bool:
        """Wait up to *timeout* for the thread to end; whether it did."""
        if self._thread.ident:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return False
        self._wakeup.close()  # by the control thread, once nobody can wake the worker
        return True

    # -- thread: one phase per step (WorkerThread runs the steps until teardown) ---------------------
    def _step(self) -> None:
        try:
            self._phase()
        except Exception as exc:  # noqa: BLE001 - reported by the control thread, no traceback spew
            self._fail(f"{type(exc).__name__}: {exc}" if not isinstance(exc, (DocaError, StorageAppError))
                       else str(exc))
            self._exit = True  # the objects are destroyed at once (_teardown)

    def _create(self) -> None:
        t_w = self.plan.transaction_count
        n_recv = 2 * t_w
        self._pe = pe = d.Pe()
        self._msg_mmap = msg_mmap = d.Mmap()
        self._mem = msg_mmap.allocate(3 * t_w * IO_MESSAGE_SIZE)
        msg_mmap.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
        msg_mmap.add_dev(self.dev)
        msg_mmap.start()
        self._inv = d.BufInventory(n_recv + t_w)
        self._consumer = consumer = ComchConsumer(self.connection, msg_mmap)
        self._producer = producer = ComchProducer(self.connection)
        pe.connect_ctx(consumer)
        pe.connect_ctx(producer)
        consumer.task_post_recv_set_conf(self._on_recv, self._on_recv_error, n_recv)
        producer.task_send_set_conf(self._on_sent, self._on_send_error, t_w)
        consumer.start()
        producer.start()
        self._phase = self._starting

    def _starting(self) -> None:
        consumer, producer = self._consumer, self._producer
        assert consumer is not None and producer is not None
        if consumer.get_state() == CtxState.RUNNING and producer.get_state() == CtxState.RUNNING:
            self.consumer_id = consumer.get_id()
            self._phase = self._waiting_for_go
            self.ready.set()
            return
        if consumer.get_state() == CtxState.IDLE or producer.get_state() == CtxState.IDLE:
            raise StorageAppError(ErrorCode.CONNECTION_RESET, "the comch connection went away while the "
                                                              "producer and consumer were starting")
        self._sleep(_IDLE_SLEEP)

    def _waiting_for_go(self) -> None:
        """Keep progressing until the go (or a stop)."""
        if self._stop.is_set():
            self._end_phase()
        elif self._go.is_set():
            self._prepare_data_path()
        else:
            self._sleep(_IDLE_SLEEP)

    def _prepare_data_path(self) -> None:
        """Every task and buffer of the data path, once: the IOs re-use them."""
        inv, mmap, consumer, producer = self._inv, self._msg_mmap, self._consumer, self._producer
        assert inv is not None and mmap is not None and consumer is not None and producer is not None
        assert self.remote_consumer_id is not None
        n_recv = 2 * self.plan.transaction_count
        base = mmap.get_memrange()[0]
        recv_tasks: list[ComchConsumerTaskPostRecv] = []
        try:
            for j in range(n_recv):
                buf = inv.buf_get_by_addr(mmap, base + j * IO_MESSAGE_SIZE, IO_MESSAGE_SIZE)
                self._recv_bufs.append(buf)
                recv_tasks.append(consumer.task_post_recv_alloc_init(buf, user_data=j))
            for txn in self._txns:
                off = (n_recv + txn.index) * IO_MESSAGE_SIZE
                buf = inv.buf_get_by_data(mmap, base + off, IO_MESSAGE_SIZE)
                txn.task = producer.task_send_alloc_init(buf, None, self.remote_consumer_id, user_data=txn)
        except DocaError as exc:
            self._fail(f"preparing the data path failed: {exc}")
            self._end_phase()
            return
        self._req_base = n_recv * IO_MESSAGE_SIZE
        self._start_data_path(recv_tasks)

    def _teardown(self) -> None:
        self._running = False
        try:
            for ctx in (self._consumer, self._producer):
                if ctx is not None:
                    try:
                        ctx.close()
                    except DocaError as exc:
                        _log.debug("%s: closing %s: %s", self.name, type(ctx).__name__, exc)
            self._consumer = self._producer = None
            for obj in (self._inv, self._msg_mmap, self._pe):
                if obj is not None:
                    obj.close()
        except Exception as exc:  # noqa: BLE001 - reported by the control thread
            self._fail(f"{type(exc).__name__}: {exc}" if not isinstance(exc, DocaError) else str(exc))
        finally:
            self._inv = self._msg_mmap = self._pe = None
            self._recv_bufs.clear()
            self.ready.set()
            self.finished.set()
            self.exited.set()
