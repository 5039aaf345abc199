"""The emulated ``doca_comch_consumer`` and ``doca_comch_producer``: the producer → consumer data path."""

from __future__ import annotations

from collections import deque
from typing import Any

from ..._backend.protocols.core import BufHandle, MmapHandle
from ...errors import (
    DocaBadState,
    DocaInvalidValue,
    DocaNotConnected,
)
from ..buf import EmuBuf
from ..ctx import FLUSHED, EmuTask, TaskPool
from ..mmap import EmuMmap, dev_key
from .wire import (
    HDR,
    T_CONSUMER_GONE,
    T_CONSUMER_NEW,
)
from .connection import EmuComchConnection
from .tasks import EmuComchConsumerTaskPostRecv, EmuComchProducerTaskSend
from .config import (
    MAX_BUF_LIST_LEN, MAX_CONSUMERS, MAX_IMM_DATA_LEN, MAX_PRODUCERS, IDLE, RESET, RUNNING, STARTING, STOPPING,
    has_imm, ids, need_imm,
)
from .endpoints import OrderedCtx, Sender
from .common import complete_soft, connection_lost, post_done

class EmuComchConsumer(OrderedCtx):
    """Emulated ``doca_comch_consumer``: receives producer data into its mmap's buffers."""

    def __init__(self, conn: Any, mmap: MmapHandle) -> None:
        super().__init__()
        if not isinstance(conn, EmuComchConnection):
            raise DocaInvalidValue("not a comch connection")
        if not isinstance(mmap, EmuMmap):
            raise DocaInvalidValue("not an emulated mmap")
        if conn.closed or not conn.alive:  # DOCA: BAD_STATE, "comch_connection is not established"
            raise DocaBadState("the comch connection is not established")
        if len(conn.consumers) >= MAX_CONSUMERS:
            raise DocaInvalidValue(f"a connection has at most {MAX_CONSUMERS} consumers")
        self.conn = conn
        conn.users.add(self)
        self.mmap = mmap
        self.id = next(ids)
        self.imm_data_len = MAX_IMM_DATA_LEN
        self.post_recv = TaskPool(self, EmuComchConsumerTaskPostRecv)
        self.posted: deque[EmuComchConsumerTaskPostRecv] = deque()
        self.unsent = 0  # receives posted and not yet announced to the peer
        self.credit_posted = False
        self.dev_key = dev_key(conn.ctx.dev)

    def get_id(self) -> int:
        return self.id

    def destroy(self) -> None:
        super().destroy()
        self.conn.users.discard(self)

    def set_imm_data_len(self, n: int) -> None:
        if not has_imm() and n != 0:
            raise need_imm(f"imm_data_len={n} (doca_comch_consumer_set_imm_data_len)")
        self._configurable("set_imm_data_len")
        if not 0 <= n <= MAX_IMM_DATA_LEN:
            raise DocaInvalidValue(f"imm_data_len must be 0..{MAX_IMM_DATA_LEN}, got {n}")
        self.imm_data_len = n

    def get_imm_data_len(self) -> int:
        return self.imm_data_len if has_imm() else 0  # DOCA 2.6 has no immediate data

    def start(self) -> int:
        if self.pe is None:
            raise DocaNotConnected("connect the ctx to a Pe before start")
        if self.state != IDLE:
            raise DocaBadState(f"ctx is in state {self.state}, not IDLE")
        conn = self.conn
        if conn.closed:
            raise DocaNotConnected("the comch connection is closed")
        for pool in self.pools:
            pool.build()
        self.unsent = 0
        conn.consumers[self.id] = self
        # Announced at once (the peer's new_consumer); receives are credited as they are posted.
        if not conn.send_now(HDR.pack(T_CONSUMER_NEW, 0, 0, 0, self.id, 0)):
            conn.consumers.pop(self.id, None)
            raise DocaNotConnected("the comch connection is closed")
        self._set_state(STARTING)  # DOCA: start returns IN_PROGRESS
        self.pe.post(self._started, None)
        return self.state

    def _started(self, _: object) -> None:
        if self.state == STARTING:
            self._set_state(RUNNING)

    def _on_stop(self) -> None:
        conn = self.conn
        self.unsent = 0
        if conn.consumers.pop(self.id, None) is not None:
            conn.send_now(HDR.pack(T_CONSUMER_GONE, 0, 0, 0, self.id, 0))
        pe = self.pe
        assert pe is not None
        while True:
            try:
                t = self.posted.popleft()
            except IndexError:
                break
            pe.post_item(t.done)  # flushed: the ctx is stopping

    def conn_lost(self, _: object) -> None:
        if self.state not in (RUNNING, STARTING) or self.destroyed:
            return
        # Posted receives fail with CONNECTION_RESET while the ctx still runs; whatever the
        # callbacks re-post (or was submitted before the loss and not yet launched) is flushed by the
        # stop that follows, with the loss's status: a dead peer never reads as a retry window.
        self.flush_status = self.conn.loss or FLUSHED
        self.stopped_by(connection_lost(self.flush_status))
        drained = []
        while self.posted:
            drained.append(self.posted.popleft())
        for t in drained:
            t.status = RESET
            complete_soft(t)
        if self.state in (RUNNING, STARTING):
            self._set_state(STOPPING)
            self._on_stop()
            self._maybe_idle()

    def task_post_recv_alloc_init(self, buf: BufHandle) -> EmuComchConsumerTaskPostRecv:
        if not isinstance(buf, EmuBuf) or buf.mmap is not self.mmap:
            raise DocaInvalidValue("the receive buffer must belong to the consumer's mmap")
        if buf.next is not None:
            raise DocaInvalidValue(f"consumer buffers are lists of at most {MAX_BUF_LIST_LEN} element")
        t = self.post_recv.alloc()
        assert isinstance(t, EmuComchConsumerTaskPostRecv)
        t.buf = buf
        t.imm = b""
        t.producer_id = 0
        return t


class EmuComchProducer(Sender):
    """Emulated ``doca_comch_producer``: sends buffers to the peer's consumers."""

    def __init__(self, conn: Any) -> None:
        super().__init__()
        if not isinstance(conn, EmuComchConnection):
            raise DocaInvalidValue("not a comch connection")
        if conn.closed or not conn.alive:  # DOCA: BAD_STATE, "comch_connection is not established"
            raise DocaBadState("the comch connection is not established")
        if len(conn.producers) >= MAX_PRODUCERS:
            raise DocaInvalidValue(f"a connection has at most {MAX_PRODUCERS} producers")
        self.conn = conn
        conn.users.add(self)
        self.id = next(ids)
        self.dev_key = dev_key(conn.ctx.dev)
        self.tasks: list[EmuComchProducerTaskSend] = []  # every descriptor of the pool
        self.send = TaskPool(self, self._new_task)

    def _new_task(self, pool: TaskPool[EmuTask]) -> EmuComchProducerTaskSend:
        t = EmuComchProducerTaskSend(pool)
        self.tasks.append(t)
        return t

    def destroy(self) -> None:
        super().destroy()
        self.conn.users.discard(self)

    def get_id(self) -> int:
        return self.id

    def _on_start(self) -> None:
        conn = self.conn
        with conn.lock:
            if conn.closed:
                raise DocaNotConnected("the comch connection is closed")
            conn.producers.add(self)

    def _on_stop(self) -> None:
        """Flush the tasks waiting for a credit and those sent and not yet acknowledged (hardware
        flushes the queue's outstanding work on stop: a stopped or dead peer must not hold the stop
        for a retry window); give back the credits of tasks that will be flushed before they ran."""
        conn = self.conn
        mine: list[EmuComchProducerTaskSend] = []
        done = None
        with conn.lock:
            conn.producers.discard(self)
            pq = conn.pq
            for i, t in enumerate(pq):
                if t is not None and t.ctx is self:
                    mine.append(t)
                    pq[i] = None  # its ACK, if the peer still sends one, completes nothing
            for r in conn.remote.values():
                w = r.waiting
                for _ in range(len(w) if w else 0):
                    t = w.popleft()
                    (mine if t.ctx is self else w).append(t)
            queued = False
            for t in self.tasks:
                held = t.credit
                if held is not None:
                    t.credit = None
                    if not conn.closed:
                        queued |= conn.grant_locked(held, 1)
            if queued:
                done = conn.kick_locked()
        if done:
            post_done(done)
        pe = self.pe
        assert pe is not None
        for t in mine:
            pe.post_item(t.done)  # flushed: the ctx is stopping

    def conn_lost(self, _: object) -> None:
        if self.state == RUNNING and not self.destroyed:
            # Sends submitted before the loss and launched after it are flushed with the loss's status
            # (CONNECTION_RESET when the peer closed: not the IO_FAILED of a retry window).
            self.flush_status = self.conn.loss or FLUSHED
            self.stopped_by(connection_lost(self.flush_status))
            self._set_state(STOPPING)
            self._on_stop()
            self._maybe_idle()

    def task_send_alloc_init(self, buf: BufHandle, imm: bytes, consumer_id: int) -> EmuComchProducerTaskSend:
        if not isinstance(buf, EmuBuf):
            raise DocaInvalidValue("not an emulated buffer")
        if len(imm) > MAX_IMM_DATA_LEN:
            raise DocaInvalidValue(f"immediate data is at most {MAX_IMM_DATA_LEN} bytes, got {len(imm)}")
        if imm and not has_imm():
            raise need_imm(f"a producer send with {len(imm)} bytes of immediate data")
        if not 0 < consumer_id <= 0xFFFFFFFF:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        t = self.send.alloc()
        assert isinstance(t, EmuComchProducerTaskSend)
        t.buf, t.imm, t.consumer_id = buf, bytes(imm), consumer_id
        return t


def consumer_create(conn: Any, mmap: MmapHandle) -> EmuComchConsumer:
    """``doca_comch_consumer_create``."""
    return EmuComchConsumer(conn, mmap)


def producer_create(conn: Any) -> EmuComchProducer:
    """``doca_comch_producer_create``."""
    return EmuComchProducer(conn)
