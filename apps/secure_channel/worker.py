"""The fast path of Secure Channel: one producer thread and one consumer thread, each with its own
progress engine, as NVIDIA's C app runs them (``run_producer`` / ``run_consumer``).

The **producer** sends one buffer of ``--msg-size`` bytes ``--num-msgs`` times to the consumer the
peer announced, with up to `MAX_FASTPATH_TASKS` sends in flight: each completed send is submitted
again until enough are on their way. The **consumer** posts up to `MAX_FASTPATH_TASKS` receive
buffers of the size the peer announced and posts each again once it completed, until the
announced number of messages arrived. Each thread records when it started and ended and how many
messages it sent or received (`ThreadResult`), the statistics the app prints.

Beyond the C app: the buffer sent holds a byte pattern rather than uninitialised memory; a
received message whose length is not the announced size fails the consumer; the threads stop
with an error when the main thread asks (the comch connection went away, Ctrl-C) instead of
spinning for ever.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import doca_py as d
from doca_py.comch import (ComchConnection, ComchConsumer, ComchConsumerTaskPostRecv, ComchProducer,
                           ComchProducerTaskSend)
from doca_py.errors import DocaAgain, DocaError, DocaInvalidValue, ErrorCode

__all__ = ["MAX_FASTPATH_TASKS", "FastPathState", "ThreadResult", "ProducerThread", "ConsumerThread",
           "message_pattern", "STOP_TIMEOUT", "LOSS_CODES"]

LOSS_CODES = frozenset({ErrorCode.CONNECTION_RESET, ErrorCode.NOT_CONNECTED, ErrorCode.CONNECTION_ABORTED,
                        ErrorCode.IO_FAILED})
"""What a task or a call fails with when the comch connection is gone (creating a producer or consumer on
it: also ``BAD_STATE``, "the comch connection is not established")."""
MAX_FASTPATH_TASKS = 1024
"""Most producer or consumer tasks in flight (the C app's ``MAX_FASTPATH_TASKS``)."""
STOP_TIMEOUT = 10.0
"""Seconds a producer or consumer may take to stop (flush its tasks)."""
_POLL = 0.05

log = logging.getLogger("apps.secure_channel")


class FastPathState(enum.Enum):
    """``enum transfer_state`` of the fast path."""

    IDLE = 0
    IN_PROGRESS = 1
    COMPLETE = 2
    ERROR = 3


@dataclass
class ThreadResult:
    """``struct t_results``: what one thread did."""

    error: str | None = None
    """Why the thread failed (``None``: it succeeded)."""
    start: float = 0.0
    """``time.perf_counter()`` when sending began / the first message arrived."""
    end: float = 0.0
    """``time.perf_counter()`` when the thread was done."""
    processed: int = 0
    """Messages sent (acknowledged) or received."""
    unanswered: bool = False
    """Whether a task failed with ``IO_FAILED``: the peer did not answer within the transport's retry
    window (it stopped or hangs) and the connection was dropped."""
    lost: bool = False
    """Whether the failure is a symptom of the connection's loss (`LOSS_CODES`: a task failed, or the
    connection refused the thread's producer or consumer): the loss is certain, and the comch channel's
    progress engine reports it, however late."""

    @property
    def elapsed_ms(self) -> float:
        """Milliseconds between `start` and `end` (0 when the thread never started)."""
        return (self.end - self.start) * 1e3 if self.start and self.end else 0.0


def message_pattern(size: int) -> bytes:
    """The bytes of the producer's message: ``0, 1, …, 255, 0, 1, …``."""
    return (bytes(range(256)) * (size // 256 + 1))[:size]


class _FastPath:
    """A thread with its own ``Pe`` running one producer or consumer until *total* messages."""

    kind = "fast path"

    def __init__(self, connection: ComchConnection, dev: d.Dev, total: int, msg_size: int,
                 stop: threading.Event) -> None:
        self.connection = connection
        self.dev = dev
        self.total = total
        self.msg_size = msg_size
        self.n_tasks = min(total, MAX_FASTPATH_TASKS)
        self.stop = stop
        self.state = FastPathState.IDLE
        self.result = ThreadResult()
        self.done = threading.Event()
        """Set when the thread finished (successfully or not)."""
        self.thread = threading.Thread(target=self._main, name=f"secure-channel-{self.kind}", daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self.thread.start()

    def _main(self) -> None:
        try:
            self._run()
            if self.state is FastPathState.ERROR and self.result.error is None:
                self.result.error = f"{self.kind} datapath failed"
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            self.result.error = str(exc) if isinstance(exc, DocaError) else f"{type(exc).__name__}: {exc}"
            if isinstance(exc, DocaError) and (exc.code in LOSS_CODES or exc.code == ErrorCode.BAD_STATE):
                self.result.lost = True  # the connection refused the producer / consumer, or a call on it
        finally:
            if self.result.end == 0.0:
                self.result.end = time.perf_counter()
            self.done.set()

    def _run(self) -> None:
        raise NotImplementedError

    def _prepare(self, max_buf_size: int, mm: d.Mmap, mem: bytearray, permissions: d.AccessFlag) -> None:
        """Check the device's *max_buf_size* for this side's messages; register *mem* in *mm*."""
        if max_buf_size < self.msg_size:
            raise DocaInvalidValue(f"{self.kind} does not support message size. Requested: {self.msg_size}, "
                                   f"max: {max_buf_size}")
        mm.set_memrange(mem)
        mm.set_permissions(permissions)
        mm.add_dev(self.dev)
        mm.start()

    def _fail(self, text: str, *, lost: bool = False) -> None:
        """The thread failed (*lost*: because the connection is gone)."""
        if self.state is not FastPathState.ERROR:
            self.state = FastPathState.ERROR
            self.result.error = text
            self.result.lost = lost

    def _poll(self, pe: d.Pe, busy: bool = False) -> None:
        if self.stop.is_set():
            self._fail(f"{self.kind} stopped before it was done ({self.result.processed} of {self.total} "
                       "messages)")
            return
        pe.wait(0 if busy else _POLL)

    @staticmethod
    def _stop_ctx(pe: d.Pe, ctx: d.Ctx) -> None:
        if ctx.get_state() in (d.CtxState.RUNNING, d.CtxState.STARTING):
            ctx.stop()  # tasks in flight are flushed to the error callback, which frees them
        deadline = time.monotonic() + STOP_TIMEOUT
        while ctx.get_state() is not d.CtxState.IDLE and time.monotonic() < deadline:
            pe.wait(_POLL)


class ProducerThread(_FastPath):
    """``run_producer``: *total* sends of one *msg_size*-byte buffer to the peer's consumer, whose id
    the main thread hands over with `set_consumer` (the new-consumer event of the comch Pe)."""

    kind = "producer"

    def __init__(self, connection: ComchConnection, dev: d.Dev, total: int, msg_size: int,
                 stop: threading.Event) -> None:
        super().__init__(connection, dev, total, msg_size, stop)
        self.consumer_id = 0
        self._consumer_ready = threading.Event()
        self.submitted = 0
        """Sends submitted so far (each message once: never more than *total*)."""
        self._retry: list[ComchProducerTaskSend] = []

    def set_consumer(self, consumer_id: int) -> None:
        """The peer's consumer to send to (``new_consumer_callback``)."""
        self.consumer_id = consumer_id
        self._consumer_ready.set()

    def _submit(self, task: ComchProducerTaskSend) -> None:
        self.submitted += 1
        try:
            task.submit()
        except DocaAgain:  # no receive posted by the consumer yet: keep the task, submit it again later
            self._retry.append(task)
        except DocaError as exc:
            task.free()
            self._fail(f"failed to submit producer send task: {exc}", lost=exc.code in LOSS_CODES)

    def _sent(self, task: ComchProducerTaskSend, user_data: Any, ctx_user_data: Any) -> None:
        if self.state is not FastPathState.IN_PROGRESS:
            task.free()
            return
        self.result.processed += 1
        if self.result.processed == self.total:
            self.state = FastPathState.COMPLETE
            task.free()
        elif self.submitted == self.total:
            task.free()  # enough are in flight
        else:
            self._submit(task)  # one more message on its way

    def _failed(self, task: ComchProducerTaskSend, user_data: Any, ctx_user_data: Any) -> None:
        status = task.get_status()
        task.free()
        if status is ErrorCode.IO_FAILED:
            self.result.unanswered = True
        if self.state is FastPathState.IN_PROGRESS:  # flushed tasks after the end are expected
            self._fail(f"received a producer send task completion error: {status.name}", lost=status in LOSS_CODES)

    def _run(self) -> None:
        with d.Pe() as pe, d.Mmap() as mm, d.BufInventory(1) as inv:
            self._prepare(ComchProducer.cap_get_max_buf_size(self.dev.as_devinfo()), mm,
                          bytearray(message_pattern(self.msg_size)), d.AccessFlag.PCI_READ_ONLY)
            producer = ComchProducer(self.connection)
            pe.connect_ctx(producer)
            producer.task_send_set_conf(self._sent, self._failed, self.n_tasks)
            producer.start()
            buf = inv.buf_get_by_data(mm, mm.get_memrange()[0], self.msg_size)
            try:
                self._send_all(pe, producer, buf)
            finally:
                for task in self._retry:
                    task.free()
                self._retry.clear()
                self._stop_ctx(pe, producer)
                buf.dec_refcount()
                producer.close()

    def _send_all(self, pe: d.Pe, producer: ComchProducer, buf: d.Buf) -> None:
        while not self._consumer_ready.wait(_POLL):  # the peer's consumer comes up (comch Pe, main thread)
            if self.stop.is_set():
                self._fail("stopped while waiting for the peer's consumer")
                return
        self.state = FastPathState.IN_PROGRESS
        self.result.start = time.perf_counter()
        for _ in range(self.n_tasks):
            self._submit(producer.task_send_alloc_init(buf, None, self.consumer_id))
            if self.state is not FastPathState.IN_PROGRESS:
                break
        while self.state is FastPathState.IN_PROGRESS:
            if self._retry:
                waiting, self._retry = self._retry, []
                for task in waiting:
                    self.submitted -= 1  # counted when it was refused: _submit counts it again
                    self._submit(task)
            self._poll(pe, busy=bool(self._retry))
        self.result.end = time.perf_counter()


class ConsumerThread(_FastPath):
    """``run_consumer``: receive the *total* messages of *msg_size* bytes the peer announced.

    It also counts the messages that hold `message_pattern` (`intact`): every one when the peer is
    this app; the C app sends uninitialised memory, so that count is informational."""

    kind = "consumer"

    def __init__(self, connection: ComchConnection, dev: d.Dev, total: int, msg_size: int,
                 stop: threading.Event) -> None:
        super().__init__(connection, dev, total, msg_size, stop)
        self._pattern = message_pattern(msg_size)
        self.intact = 0
        """Messages received whose bytes are `message_pattern`."""

    def _received(self, task: ComchConsumerTaskPostRecv, user_data: Any, ctx_user_data: Any) -> None:
        buf = task.get_buf()
        if self.state is not FastPathState.IN_PROGRESS:
            task.free()
            buf.dec_refcount()
            return
        if self.result.processed == 0:
            self.result.start = time.perf_counter()
        self.result.processed += 1
        n = buf.get_data_len()
        if n != self.msg_size:
            task.free()
            buf.dec_refcount()
            self._fail(f"received a message of {n} bytes where the peer announced {self.msg_size}")
            return
        if buf.data_view() == self._pattern:
            self.intact += 1
        if self.result.processed == self.total:
            self.state = FastPathState.COMPLETE
            task.free()
            buf.dec_refcount()
            return
        buf.reset_data_len()  # the next message fills it again
        try:
            task.submit()
        except DocaError as exc:
            task.free()
            buf.dec_refcount()
            self._fail(f"failed to resubmit post_recv task: {exc}", lost=exc.code in LOSS_CODES)

    def _recv_failed(self, task: ComchConsumerTaskPostRecv, user_data: Any, ctx_user_data: Any) -> None:
        status = task.get_status()
        buf = task.get_buf()
        task.free()
        buf.dec_refcount()
        if status is ErrorCode.IO_FAILED:
            self.result.unanswered = True
        if self.state is FastPathState.IN_PROGRESS:  # flushed receives after the end are expected
            self._fail(f"received a consumer post recv completion error: {status.name}", lost=status in LOSS_CODES)

    def _run(self) -> None:
        with d.Pe() as pe, d.Mmap() as mm, d.BufInventory(self.n_tasks) as inv:
            self._prepare(ComchConsumer.cap_get_max_buf_size(self.dev.as_devinfo()), mm,
                          bytearray(self.msg_size * self.n_tasks),
                          d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
            consumer = ComchConsumer(self.connection, mm)
            pe.connect_ctx(consumer)
            consumer.task_post_recv_set_conf(self._received, self._recv_failed, self.n_tasks)
            consumer.start()
            try:
                self._receive_all(pe, consumer, mm, inv)
            finally:
                self._stop_ctx(pe, consumer)
                consumer.close()

    def _receive_all(self, pe: d.Pe, consumer: ComchConsumer, mm: d.Mmap, inv: d.BufInventory) -> None:
        while consumer.get_state() is not d.CtxState.RUNNING:
            if consumer.get_state() is d.CtxState.IDLE:
                self._fail("the consumer stopped while starting (the comch connection went away)", lost=True)
                return
            self._poll(pe)
            if self.state is FastPathState.ERROR:
                return
        self.state = FastPathState.IN_PROGRESS
        base = mm.get_memrange()[0]
        for i in range(self.n_tasks):
            buf = inv.buf_get_by_addr(mm, base + i * self.msg_size, self.msg_size)
            task: ComchConsumerTaskPostRecv | None = None
            try:
                task = consumer.task_post_recv_alloc_init(buf)
                task.submit()
            except DocaError:
                if task is not None:
                    task.free()
                buf.dec_refcount()
                raise
        while self.state is FastPathState.IN_PROGRESS:
            self._poll(pe)
        self.result.end = time.perf_counter()
