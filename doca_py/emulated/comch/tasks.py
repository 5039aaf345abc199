"""The emulated comch tasks and the submission-order queue they run through."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._backend.protocols.core import BufHandle
from ...errors import (
    DocaAgain,
    DocaBadState,
    DocaInvalidValue,
    lookup,
)
from .. import strict
from ..buf import EmuBuf
from ..ctx import EmuTask, TaskPool, complete_task
from ..mmap import reachable
from .wire import (
    HDR_SIZE,
)
from .config import MAX_BUF_SIZE, MAX_IMM_DATA_LEN, INVALID, NOT_CONNECTED, NOT_PERMITTED, SUCCESS
from .common import complete_soft, flush_credits, flush_ctx

if TYPE_CHECKING:
    from .common import Remote
    from .connection import EmuComchConnection
    from .datapath import EmuComchConsumer, EmuComchProducer
    from .endpoints import Sender

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


# -- tasks ----------------------------------------------------------------------------------------
class EmuComchTaskSend(_OrderedTask):
    """``doca_comch_task_send``: one control message, copied at allocation, queued on its
    connection when the task runs (in ``progress``)."""

    __slots__ = ("conn", "frame", "end")
    kind = "comch_send"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.conn: EmuComchConnection | None = None
        self.frame = b""
        self.end = 0

    def _check_submit(self) -> None:
        if self.conn is None:
            raise DocaBadState("the send task has no connection")
        self.lane = self.conn.lane

    def _run(self) -> None:
        conn = self.conn
        assert conn is not None
        frame = self.frame
        with conn.lock:
            ok = not conn.closed
            if ok:
                conn.out += frame
                self.end = conn.enq = conn.enq + len(frame)
                conn.wq.append(self)
                conn.nmsgs += 1
                conn.nframe_bytes += len(frame)
        if ok:
            sender: Sender = self.ctx  # type: ignore[assignment]
            sender.dirty.add(conn)
            if not sender.flush_posted:
                sender.flush_posted = True
                sender.pe.post(flush_ctx, sender)  # type: ignore[union-attr]
        else:
            self.status = NOT_CONNECTED
            self.reason = "the connection is closed"
            complete_soft(self)

    def get_connection(self) -> EmuComchConnection | None:
        return self.conn

    def get_msg(self) -> bytes:
        return self.frame[HDR_SIZE:]


class EmuComchConsumerTaskPostRecv(_OrderedTask):
    """``doca_comch_consumer_task_post_recv``: a buffer offered to the peer's producers.

    Queued on the consumer when the task runs (in ``progress``), which also announces it
    to the peer (a credit)."""

    __slots__ = ("buf", "imm", "producer_id")
    if TYPE_CHECKING:
        ctx: EmuComchConsumer
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
            ctx.pe.post(flush_credits, ctx)  # type: ignore[union-attr]

    def set_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.buf = buf


class EmuComchProducerTaskSend(_OrderedTask):
    """``doca_comch_producer_task_send``: the buffer's data into a remote consumer's buffer.

    ``submit`` spends one credit of the remote consumer (``DocaAgain`` if it has none: no
    receive posted); the source is read when the task runs, in ``progress``."""

    __slots__ = ("buf", "imm", "consumer_id", "credit")
    if TYPE_CHECKING:
        ctx: EmuComchProducer
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
        if strict.FAULTS:
            code = strict.draw(self.submit_fault_kind, self.ctx.pe.rng)  # type: ignore[union-attr]
            if code:
                raise lookup(code)(f"producer send refused: fault injected by DOCA_PY_EMU_FAULTS "
                                   f"(seed {strict.SEED})")
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
            ctx.pe.post(flush_ctx, ctx)  # type: ignore[union-attr]
        if st:
            self.status = st
            complete_task(self)

    def set_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.buf = buf

    def set_imm_data(self, imm: bytes) -> None:
        if len(imm) > MAX_IMM_DATA_LEN:
            raise DocaInvalidValue(f"immediate data is at most {MAX_IMM_DATA_LEN} bytes, got {len(imm)}")
        self.imm = bytes(imm)

    def set_consumer_id(self, consumer_id: int) -> None:
        if not 0 < consumer_id <= 0xFFFFFFFF:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        self.consumer_id = consumer_id
