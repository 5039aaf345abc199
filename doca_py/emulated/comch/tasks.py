"""The emulated comch tasks and the submission-order queue they run through; the peer's consumers
as producers see them (:class:`Remote`: credits); and how the tasks see their connection and ctx."""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from ..._backend.protocols.core import BufHandle
from ...errors import (
    DocaAgain,
    DocaBadState,
    DocaInvalidValue,
    lookup,
)
from .. import strict, trace
from ..buf import EmuBuf
from ..ctx import EmuTask, TaskPool, _flush_or_fault, complete_task, pin_bufs
from ..completion import _SUCCESS
from ..mmap import EmuMmap, reachable
from ..pe import QUIET, SHUFFLED, EmuPe, Lane
from .wire import (
    HDR,
    HDR_SIZE,
    T_CREDIT,
)
from .config import (MAX_BUF_SIZE, MAX_IMM_DATA_LEN, INVALID, NOT_CONNECTED, NOT_PERMITTED, RUNNING, SUCCESS, has_imm,
                     need_imm)
from .common import complete_soft


# -- what the tasks see of their connection and ctx ------------------------------------------------
class SendQueue(Protocol):
    """A connection as its tasks see it (:class:`.connection.EmuComchConnection` is one)."""

    out: bytearray
    enq: int
    nmsgs: int
    nframe_bytes: int
    wq_n: int
    wq_cap: int

    @property
    def lock(self) -> threading.Lock: ...
    @property
    def closed(self) -> bool: ...
    @property
    def lane(self) -> Lane: ...
    @property
    def wq(self) -> list[EmuComchTaskSend]: ...
    def wq_room_locked(self, t: EmuComchTaskSend) -> int: ...
    @property
    def remote(self) -> dict[int, Remote]: ...
    def flush(self) -> None: ...
    def refund(self, r: Remote) -> None: ...
    def queue_data_locked(self, t: EmuComchProducerTaskSend) -> int: ...
    def grant_locked(self, r: Remote, n: int) -> bool: ...


class Batching(Protocol):
    """A ctx whose tasks queue frames on connections, flushed once per batch
    (:class:`.endpoints.Sender` is one)."""

    dirty: set[Any]  # of connections
    flush_posted: bool

    @property
    def pe(self) -> EmuPe | None: ...


class DataSide(Protocol):
    """A producer or consumer as its tasks see it: one connection, one queue, one device."""

    @property
    def pe(self) -> EmuPe | None: ...
    @property
    def conn(self) -> SendQueue: ...
    @property
    def lane(self) -> Lane: ...
    @property
    def dev_key(self) -> str: ...
    @property
    def id(self) -> int: ...


class ProducerSide(Batching, DataSide, Protocol):
    """A producer as its send tasks see it (:class:`.datapath.EmuComchProducer` is one)."""


class ConsumerSide(DataSide, Protocol):
    """A consumer as its post-recv tasks see it (:class:`.datapath.EmuComchConsumer` is one)."""

    unsent: int
    credit_posted: bool

    @property
    def mmap(self) -> EmuMmap: ...
    @property
    def posted(self) -> deque[EmuComchConsumerTaskPostRecv]: ...
    @property
    def state(self) -> int: ...


def flush_ctx(ctx: Batching) -> None:
    """Posted once per batch by ``submit``: push every dirty connection's output."""
    ctx.flush_posted = False
    dirty, ctx.dirty = ctx.dirty, set()
    for conn in dirty:
        conn.flush()


def flush_credits(c: ConsumerSide) -> None:
    """Posted once per batch by post-recv tasks: announce the receives just posted."""
    c.credit_posted = False
    n, c.unsent = c.unsent, 0
    if not n or c.state != RUNNING:
        return  # a stopped consumer's receives were flushed (and its expiry announced)
    conn = c.conn
    with conn.lock:
        if conn.closed:
            return
        conn.out += HDR.pack(T_CREDIT, 0, 0, 0, c.id, n)
        conn.enq += HDR_SIZE
    conn.flush()


# Internal work: no progress in doca_pe_progress's sense (the completions they lead to are).
QUIET.update({flush_ctx: False, flush_credits: False})

class Remote:
    """A consumer of the peer, as this side's producers see it: receive credits, and the
    producer tasks (in flight) waiting for one because their data found no receive posted."""

    __slots__ = ("credits", "waiting")

    def __init__(self) -> None:
        self.credits = 0
        self.waiting: deque[EmuComchProducerTaskSend] = deque()


# -- task base -------------------------------------------------------------------------------------
class _OrderedTask(EmuTask):
    """A comch task: its work (:meth:`_run`) happens at its launch, inside ``progress()``.

    Comch queues are FIFOs; transport launches keep their submission order on the Pe (they are not
    shuffled, :mod:`..ctx`), so a ctx's tasks put bytes on the wire or post receives in that order."""

    __slots__ = ()

    def _begin(self) -> None:
        self._run()

    def _run(self) -> None:
        """Do the work; complete now (on failure) or later."""
        raise NotImplementedError


def _launch(task: _OrderedTask) -> None:
    """How the Pe starts a comch task: the generic launch (``completion._launch``) with
    :meth:`_OrderedTask._begin` inlined, one frame per task less. Its name is the generic launch's:
    shuffling keys an item on its function's name, so a seed orders the launches as before."""
    if task.ctx.state != RUNNING or strict.FAULTS_ON:
        if _flush_or_fault(task):
            return
    task.status = _SUCCESS  # a transfer reports only failures
    task._run()


_OrderedTask.launch_fn = staticmethod(_launch)
SHUFFLED[_launch] = False  # as the generic launch: a queue's launches keep their order
QUIET[_launch] = True  # as the generic launch: progress only when it completed the task at once


# -- tasks ----------------------------------------------------------------------------------------
class EmuComchTaskSend(_OrderedTask):
    """``doca_comch_task_send``: one control message, copied at allocation, queued on its
    connection when the task runs (in ``progress``)."""

    __slots__ = ("conn", "frame", "flen", "end")
    kind = "comch_send"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.conn: SendQueue | None = None
        self.frame = b""
        self.flen = 0  # len(frame), set with it: no len() per message
        self.end = 0

    def _check_submit(self) -> None:
        if self.conn is None:
            raise DocaBadState("the send task has no connection")
        self.lane = self.conn.lane

    def submit(self) -> None:
        # EmuTask.submit with _check_submit inlined: one frame per message.
        ctx = self.ctx
        if ctx.state != RUNNING or self.inflight or not self.allocated:
            self._refuse_submit()
        conn = self.conn
        if conn is None:
            raise DocaBadState("the send task has no connection")
        self.lane = lane = conn.lane
        if strict.STRICT:
            pin_bufs(self)
        pool = self.pool
        self.nth = pool.submitted
        pool.submitted += 1
        self.seq = lane.submitted
        lane.submitted += 1
        self.inflight = self.submitted = True
        ctx.inflight += 1
        if trace.ON: trace.submit(self)  # trace hook: task submit
        if self.reason:
            self.reason = ""
        pe: EmuPe = ctx.pe  # type: ignore[assignment]  # running implies connected
        pe.ready.append(self.launch)  # unlocked: a submit runs on the Pe's own thread (EmuTask.submit)
        if pe.armed:
            pe.wake()

    def _run(self) -> None:
        """The frame joins the connection's output; the ctx flushes once per batch (the launch,
        :func:`_launch_send`, does the same inline: keep the two in step)."""
        conn = self.conn
        assert conn is not None
        n = self.flen
        with conn.lock:
            ok = not conn.closed
            if ok:
                conn.out += self.frame
                self.end = conn.enq = conn.enq + n
                k = conn.wq_n  # stored, not appended (EmuComchConnection.wq)
                if k == conn.wq_cap:
                    k = conn.wq_room_locked(self)
                conn.wq[k] = self
                conn.wq_n = k + 1
                conn.nmsgs += 1
                conn.nframe_bytes += n
        if ok:
            sender: Batching = self.ctx  # type: ignore[assignment]
            dirty = sender.dirty
            if conn not in dirty:  # once per batch, not per message
                dirty.add(conn)
            if not sender.flush_posted:
                sender.flush_posted = True
                sender.pe.defer(flush_ctx, sender)  # type: ignore[union-attr]
        else:
            self.status = NOT_CONNECTED
            self.reason = "the connection is closed"
            complete_soft(self)

    def get_connection(self) -> SendQueue | None:
        return self.conn

    def get_msg(self) -> bytes:
        return self.frame[HDR_SIZE:]


def _launch_send(task: EmuComchTaskSend) -> None:
    """How the Pe starts a message task: :func:`_launch` with :meth:`EmuComchTaskSend._run` inlined, one
    frame per message. Named as the launch: shuffling keys an item on its function's name, so a seed
    orders the launches as before."""
    ctx = task.ctx
    if ctx.state != RUNNING or strict.FAULTS_ON:
        if _flush_or_fault(task):
            return
    task.status = _SUCCESS  # a transfer reports only failures
    conn = task.conn
    assert conn is not None
    n = task.flen
    with conn.lock:
        ok = not conn.closed
        if ok:
            conn.out += task.frame
            task.end = conn.enq = conn.enq + n
            k = conn.wq_n  # stored, not appended (EmuComchConnection.wq)
            if k == conn.wq_cap:
                k = conn.wq_room_locked(task)
            conn.wq[k] = task
            conn.wq_n = k + 1
            conn.nmsgs += 1
            conn.nframe_bytes += n
    if ok:
        sender: Batching = ctx  # type: ignore[assignment]
        dirty = sender.dirty
        if conn not in dirty:  # once per batch, not per message
            dirty.add(conn)
        if not sender.flush_posted:
            sender.flush_posted = True
            sender.pe.defer(flush_ctx, sender)  # type: ignore[union-attr]
    else:
        task.status = NOT_CONNECTED
        task.reason = "the connection is closed"
        complete_soft(task)


_launch_send.__name__ = _launch_send.__qualname__ = "_launch"  # the shuffle's replay key (see _item_key)
EmuComchTaskSend.launch_fn = staticmethod(_launch_send)
SHUFFLED[_launch_send] = False  # as the generic launch: a queue's launches keep their order
QUIET[_launch_send] = True  # as the generic launch: progress only when it completed the task at once


class EmuComchConsumerTaskPostRecv(_OrderedTask):
    """``doca_comch_consumer_task_post_recv``: a buffer offered to the peer's producers.

    Queued on the consumer when the task runs (in ``progress``), which also announces it
    to the peer (a credit)."""

    __slots__ = ("buf", "imm", "producer_id")
    if TYPE_CHECKING:
        ctx: ConsumerSide  # type: ignore[assignment]  # an EmuCtx too
    kind = "comch_consumer_post_recv"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.buf: EmuBuf | None = None
        self.imm = b""
        self.producer_id = 0

    def _check_submit(self) -> None:
        buf = self.buf
        if buf is None or not buf.refcount or buf.mmap is not self.ctx.mmap:
            raise DocaInvalidValue("post-recv buffer must be a live buffer of the consumer's mmap")
        self.lane = self.ctx.lane

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.buf,)

    def _run(self) -> None:
        ctx = self.ctx
        buf = self.buf
        assert buf is not None and buf.mmap is not None
        if not reachable(buf.mmap, ctx.dev_key):
            self.status = NOT_PERMITTED
            self.reason = (f"{buf.mmap!r} has no device {ctx.dev_key} added (Mmap.add_dev): the comch "
                           f"device cannot write into it")
            complete_task(self)
            return
        self.imm = b""
        self.producer_id = 0
        ctx.posted.append(self)  # before its credit leaves: data never overtakes the receive
        ctx.unsent += 1
        if not ctx.credit_posted:
            ctx.credit_posted = True
            ctx.pe.defer(flush_credits, ctx)  # type: ignore[union-attr]

    def set_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.buf = buf


class EmuComchProducerTaskSend(_OrderedTask):
    """``doca_comch_producer_task_send``: the buffer's data into a remote consumer's buffer.

    ``submit`` spends one credit of the remote consumer (``DocaAgain`` if it has none: no
    receive posted); the source is read when the task runs, in ``progress``."""

    __slots__ = ("buf", "imm", "consumer_id", "credit")
    if TYPE_CHECKING:
        ctx: ProducerSide  # type: ignore[assignment]  # an EmuCtx too
    #: Faults of this task are drawn at submit (``AGAIN`` is a submit result in DOCA 3.x), so
    #: the launch-time draw of :class:`EmuTask` (``kind``) stays off.
    kind = ""
    submit_fault_kind = "comch_producer_send"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.buf: EmuBuf | None = None
        self.imm = b""
        self.consumer_id = 0
        self.credit: Remote | None = None  # the credit taken at submit, until the task runs

    def _check_submit(self) -> None:
        if strict.FAULTS_ON:
            # The submit that would be the pool's next task; a submit refused by a fault is tried again
            # by the application, so the refusals of that task are counted (a refusal for want of
            # credit, which depends on the peer's timing, is not).
            pool = self.pool
            n = pool.submitted
            at, refused = pool.refused
            if at != n:
                refused = 0
            ident = strict.task_id(pool.uid, n) + (f".{refused}" if refused else "")
            code = strict.fault(self.submit_fault_kind, ident)
            if code:
                pool.refused = (n, refused + 1)
                raise lookup(code)(f"producer send refused: fault injected by DOCA_PY_EMU_FAULTS into task "
                                   f"{ident} (seed {strict.SEED})")
        conn = self.ctx.conn
        cid = self.consumer_id
        with conn.lock:
            r = conn.remote.get(cid)
            if r is not None:  # unknown ids go out and fail at the peer (NOT_FOUND)
                if r.credits <= 0:
                    raise DocaAgain(f"remote consumer {cid} has no receive posted; submit again later")
                r.credits -= 1
            self.credit = r
        self.lane = self.ctx.lane

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.buf,)

    def _run(self) -> None:
        ctx = self.ctx
        conn = ctx.conn
        r, self.credit = self.credit, None
        buf = self.buf
        st = SUCCESS
        if buf is None or buf.next is not None or buf.mmap is None or not buf.refcount:
            st, self.reason = INVALID, "producer send needs one live, unchained source buffer"
        elif buf.data_len > MAX_BUF_SIZE:
            st, self.reason = INVALID, f"producer buffer of {buf.data_len} bytes exceeds {MAX_BUF_SIZE}"
        elif not reachable(buf.mmap, ctx.dev_key):
            st, self.reason = NOT_PERMITTED, (f"{buf.mmap!r} has no device {ctx.dev_key} added "
                                               f"(Mmap.add_dev): the comch device cannot read it")
        if st:
            if r is not None:
                conn.refund(r)
            self.status = st
            complete_task(self)
            return
        with conn.lock:
            if conn.closed:
                st = NOT_CONNECTED
            else:
                st = conn.queue_data_locked(self)
                if st and r is not None:
                    conn.grant_locked(r, 1)  # the credit was not used
        if st == NOT_CONNECTED:
            self.status, self.reason = st, "the connection is closed"
            complete_soft(self)
            return
        ctx.dirty.add(conn)
        if not ctx.flush_posted:
            ctx.flush_posted = True
            ctx.pe.defer(flush_ctx, ctx)  # type: ignore[union-attr]
        if st:
            self.status = st
            complete_task(self)

    def set_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.buf = buf

    def set_imm_data(self, imm: bytes) -> None:
        if imm and not has_imm():
            raise need_imm("doca_comch_producer_task_send_set_imm_data")
        if len(imm) > MAX_IMM_DATA_LEN:
            raise DocaInvalidValue(f"immediate data is at most {MAX_IMM_DATA_LEN} bytes, got {len(imm)}")
        self.imm = bytes(imm)

    def set_consumer_id(self, consumer_id: int) -> None:
        if not 0 < consumer_id <= 0xFFFFFFFF:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        self.consumer_id = consumer_id
