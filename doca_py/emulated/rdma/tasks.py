"""The emulated rdma tasks: their base and the two-sided ones (receive, send); the one-sided ones are in
:mod:`.remote_tasks`, the allocators in :mod:`.task_alloc`."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..._backend.protocols.core import BufHandle
from ...errors import (
    DocaError,
    DocaInvalidValue,
    DocaNotConnected,
)
from ..buf import EmuBuf
from .. import strict, trace
from ..ctx import EmuTask, TaskPool, _complete, _flush_or_fault, pin_bufs, unreachable_ok
from ..completion import _RUNNING, _SUCCESS
from ..pe import QUIET, SHUFFLED, EmuPe
from ..mmap import EmuMmap
from ..transport.reactor import reactor
from .config import C_ESTABLISHED, C_NEW, F_IMM, MAX_MESSAGE_SIZE, T_SEND, INVALID, NOT_PERMITTED, RESET, TOO_BIG
from .connection import EmuRdmaConnection, Fifo
from .segments import Fail, list_len, buf_segments
from ..transport.shmring import MAX_RECORD
from .wire import HDR
from .settings import RdmaSettings
from .work import ReceiveWork, Work

if TYPE_CHECKING:
    import socket
    import threading
    from collections import deque

    from ..transport.stream import Stream
    from .ring_poll import RdmaPoller

_hdr = HDR.pack

def check_reach(task: RdmaTask, buf: EmuBuf) -> None:
    """A local buffer list must lie in maps that have the ctx's device added (a single
    buffer's map is remembered on the task: checked once per map, not per submit)."""
    key = task.ctx.dev_key
    if not key:
        return
    b: EmuBuf | None = buf
    while b is not None:
        m = b.mmap
        if m is not None and key not in m.reach:
            unreachable_ok(task, b)  # records the reason
            raise Fail(NOT_PERMITTED, task.reason)
        b = b.next
    task.reached = buf.mmap if buf.next is None else None


class RdmaTask(Work):
    """Base of the emulated rdma tasks.

    ``submit`` checks, puts the task on its queue (:class:`Fifo`) and queues the launch. In
    ``progress()`` the launch (:func:`_launch`, :meth:`_begin` inlined) starts the task when it is its
    turn and the connection is up, else marks it ready and leaves it to the queue
    (:meth:`go`); its completion comes later from the I/O thread, or at once for
    same-host work and refusals.
    """

    __slots__ = ("conn", "nbytes", "fifo", "ready", "reached")
    if TYPE_CHECKING:
        ctx: RdmaTaskCtx

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.conn: EmuRdmaConnection | None = None  # None for receives
        self.nbytes = 0
        self.fifo: Fifo | None = None
        self.ready = False
        self.reached: EmuMmap | None = None  # the local map last found reachable by the ctx's device

    #: Receives queue on the ctx's receive queue, the others on their connection's send queue.
    receives = False

    def submit(self) -> None:
        # EmuTask.submit with the queueing checks (_check_submit, _enqueue) inlined: one frame per submit.
        ctx = self.ctx
        if ctx.state != _RUNNING or self.inflight or not self.allocated:
            self._refuse_submit()
        if self.receives:
            q = ctx.rq
        else:
            c = self.conn
            if c is None or c.ctx is not ctx:
                raise DocaInvalidValue("the task's connection does not belong to this rdma ctx")
            if c.state == C_NEW:
                raise DocaNotConnected(f"connection {c.id} was exported but not connected: call Rdma.connect "
                                       f"with the peer's blob before submitting tasks on it")
            q = c.sq
        f = self.fifo
        if f is not None:
            f.remove(self)
        # Its queue, whose launches run in submission order (the lane): nothing after this refuses. It
        # enters the queue's list only if it must wait there for its turn (see _launch).
        self.fifo = self.lane = q
        if strict.STRICT:
            pin_bufs(self)
        pool = self.pool
        self.nth = pool.submitted
        pool.submitted += 1
        self.seq = q.submitted
        q.submitted += 1
        self.inflight = self.submitted = True
        ctx.inflight += 1
        if trace.ON: trace.submit(self)  # trace hook: task submit
        if self.reason:
            self.reason = ""
        pe: EmuPe = ctx.pe  # type: ignore[assignment]  # running implies connected
        pe.ready.append(self.launch)  # unlocked: a submit runs on the Pe's own thread (EmuTask.submit)
        if pe.armed:
            pe.wake()

    def _unqueue(self) -> None:
        if self.fifo is not None:
            self.fifo.remove(self)

    def _begin(self) -> None:
        q = self.fifo
        if q is None:  # not queued (cannot happen while the ctx runs): start it now
            self.go()
            return
        c = self.conn  # None for receives: their queue has no gate
        if not q.nready and (c is None or c.state == C_ESTABLISHED):  # its turn (see _launch)
            self.fifo = None
            try:
                self._start()
            except Fail as f:
                self.status = f.code
                self.reason = str(f)
                _complete(self)
            except DocaError as exc:
                self.status = exc.code
                self.reason = exc.detail
                _complete(self)
            return
        q.tasks.append(self)
        self.ready = True
        q.nready += 1
        q.run()

    def go(self) -> None:
        """Start the work (Pe thread, inside ``progress()``); a refusal completes the task now."""
        try:
            self._start()
        except Fail as f:
            self.status = f.code
            self.reason = str(f)
            _complete(self)
        except DocaError as exc:
            self.status = exc.code
            self.reason = exc.detail
            _complete(self)

    def _start(self) -> None:
        raise NotImplementedError

    def set_rdma_connection(self, conn: Any) -> None:
        assert isinstance(conn, EmuRdmaConnection)
        self.conn = conn

    def get_rdma_connection(self) -> EmuRdmaConnection | None:
        return self.conn


def _launch(task: RdmaTask) -> None:
    """How the Pe starts an rdma task: the generic launch (``completion._launch``) with
    :meth:`RdmaTask._begin` inlined, one frame per task. Its name is the generic launch's: shuffling
    keys an item on its function's name, so a seed orders the launches as before."""
    if task.ctx.state != _RUNNING or strict.FAULTS_ON:
        if _flush_or_fault(task):
            return
    task.status = _SUCCESS  # a transfer reports only failures
    q = task.fifo
    if q is None:  # not queued (cannot happen while the ctx runs): start it now
        task.go()
        return
    c = task.conn  # None for receives: their queue has no gate
    # A queue's launches run in submission order, so every task before this one has launched: started,
    # completed, or waiting in q.tasks for the connection (nready). None waits and the connection is
    # up: its turn, the hot path (go inlined, the queue's list untouched).
    if not q.nready and (c is None or c.state == C_ESTABLISHED):
        task.fifo = None
        try:
            task._start()
        except Fail as f:
            task.status = f.code
            task.reason = str(f)
            _complete(task)
        except DocaError as exc:
            task.status = exc.code
            task.reason = exc.detail
            _complete(task)
        return
    q.tasks.append(task)  # it waits behind the ones waiting, in order
    task.ready = True
    q.nready += 1
    q.run()


RdmaTask.launch_fn = staticmethod(_launch)
SHUFFLED[_launch] = False  # as the generic launch: a queue's launches keep their order
QUIET[_launch] = True  # as the generic launch: progress only when it completed the task at once


_result_len_of: Callable[[EmuRdmaTaskReceive], int] = attrgetter("result_len")


class EmuRdmaTaskReceive(RdmaTask, ReceiveWork):
    """``doca_rdma_task_receive``: posted to the ctx's receive queue in submission order."""

    __slots__ = ("dst", "opcode", "result_len", "imm", "result_conn")
    kind = "rdma_receive"
    receives = True

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.dst: EmuBuf | None = None
        self.opcode = 0
        self.result_len = 0
        self.imm = 0
        self.result_conn: EmuRdmaConnection | None = None

    def result_len_reader(self) -> Callable[[], int]:
        # As the C getter bound to the task: the field read in C, no Python frame per call.
        return partial(_result_len_of, self)

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.dst,)

    def _start(self) -> None:
        ctx = self.ctx
        dst = self.dst
        if dst is not None and (dst.mmap is not self.reached or dst.next is not None):
            check_reach(self, dst)
        self.result_len = self.imm = 0
        self.result_conn = None
        with ctx.lock:
            ctx.posted.append(self)
            wake = bool(ctx.stalled)
        if wake:
            reactor().call(ctx.resume_stalled)

    def _validate(self) -> None:
        if list_len(self.dst) > self.ctx.recv_list_len:
            raise DocaInvalidValue("receive destination list is longer than the configured dst_buf_list_len")

    def set_dst_buf(self, buf: BufHandle | None) -> None:
        assert buf is None or isinstance(buf, EmuBuf)
        self.dst = buf


class EmuRdmaTaskSend(RdmaTask):
    """``doca_rdma_task_send`` (and send-with-immediate when *has_imm*)."""

    __slots__ = ("src", "imm", "has_imm")
    kind = "rdma_send"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None
        self.imm = 0
        self.has_imm = False

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.src,)

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        src = self.src
        seg: memoryview | None = None  # the one segment of the common case (no list per send)
        segs: Sequence[memoryview] = ()
        n = 0
        if src is not None:
            if src.next is not None and list_len(src) > self.ctx.send_list_len:
                raise Fail(INVALID, "source list is longer than max_send_buf_list_len")
            sm = src.mmap
            if sm is not self.reached or src.next is not None:
                check_reach(self, src)
            if src.next is None and sm is not None and sm.fast and sm.addr <= src.data and \
                    src.data + src.data_len <= sm.hi and (smv := sm.mv) is not None:
                n = src.data_len  # a started local map: its view, no lookups
                seg = smv[src.data - sm.addr:src.data - sm.addr + n]
            else:
                segs, n = buf_segments(src, False)
        if n > MAX_MESSAGE_SIZE:
            raise Fail(TOO_BIG, f"message of {n} bytes exceeds the maximum {MAX_MESSAGE_SIZE}")
        st = conn.req
        if conn.state != C_ESTABLISHED or st is None:
            st = conn.request_stream()  # raises the connection's failure
        tx = conn.tx
        if tx is not None:  # same host: the shared-memory ring (:mod:`.shm`)
            tx.send(conn, self, segs if seg is None else (seg,), n, F_IMM if self.has_imm else 0, self.imm)
            return
        # The hot path of every message: put_frame, push and schedule inlined.
        with st.lock:
            if st.closed:
                raise Fail(RESET, "the connection is down")
            out = st.out
            out += _hdr(T_SEND, F_IMM if self.has_imm else 0, 0, n, self.imm, 0)  # one call: no len, no pack_into
            if seg is not None:
                out += seg
            else:
                for s in segs:
                    out += s
            p = conn.pending
            if not p:
                conn.start_waiting()
            p.append(self)
        if not st.flush_posted:
            conn.schedule(st)

    def set_src_buf(self, buf: BufHandle | None) -> None:
        assert buf is None or isinstance(buf, EmuBuf)
        self.src = buf


def _launch_receive(task: EmuRdmaTaskReceive) -> None:
    """How the Pe starts a receive: :func:`_launch`, and for one whose turn it is with a destination
    already checked (the steady state) the posting of :meth:`EmuRdmaTaskReceive._start` inlined (keep
    the two in step): one frame per receive. Named as the launch: shuffling keys an item on its
    function's name, so a seed orders the launches as before."""
    ctx = task.ctx
    q = task.fifo
    dst = task.dst
    if ctx.state != _RUNNING or strict.FAULTS_ON or q is None or q.nready or \
            (dst is not None and (dst.mmap is not task.reached or dst.next is not None)):
        _launch(task)
        return
    task.status = _SUCCESS  # a transfer reports only failures
    task.fifo = None
    task.result_len = task.imm = 0
    task.result_conn = None
    with ctx.lock:
        ctx.posted.append(task)
        wake = bool(ctx.stalled)
    if wake:
        reactor().call(ctx.resume_stalled)


def _launch_send(task: EmuRdmaTaskSend) -> None:
    """How the Pe starts a send: :func:`_launch`, and for a message of one record from one buffer of a
    started local map over a same-host ring (the common same-host send) the work of
    :meth:`EmuRdmaTaskSend._start` inlined (keep the two in step): one frame per message. Named as the
    launch, as :func:`_launch_receive`."""
    q = task.fifo
    conn = task.conn
    src = task.src
    if task.ctx.state != _RUNNING or strict.FAULTS_ON or q is None or q.nready or conn is None \
            or conn.state != C_ESTABLISHED or (tx := conn.tx) is None or conn.req is None or src is None \
            or src.next is not None or (sm := src.mmap) is not task.reached or sm is None or not sm.fast \
            or (smv := sm.mv) is None or sm.addr > src.data or src.data + (n := src.data_len) > sm.hi \
            or n > MAX_RECORD:
        _launch(task)
        return
    task.status = _SUCCESS  # a transfer reports only failures
    task.fifo = None
    at = src.data - sm.addr
    try:
        tx.send_one(conn, task, smv[at:at + n], n, F_IMM if task.has_imm else 0, task.imm)
    except Fail as f:
        task.status = f.code
        task.reason = str(f)
        _complete(task)


for _own, _cls in ((_launch_receive, EmuRdmaTaskReceive), (_launch_send, EmuRdmaTaskSend)):
    _own.__name__ = _own.__qualname__ = "_launch"  # the shuffle's replay key (pe._item_key)
    _cls.launch_fn = staticmethod(_own)
    SHUFFLED[_own] = False  # as the generic launch: a queue's launches keep their order
    QUIET[_own] = True  # as the generic launch: progress only when it completed the task at once


Q2 = struct.Struct("<QQ")
U64 = (1 << 64) - 1


class RdmaTaskCtx(RdmaSettings):
    """The rdma ctx as its tasks see it: its pools and what the tasks and connections use (set or defined
    by :class:`.ctx.EmuRdma`); the allocators are :class:`.task_alloc.RdmaTaskAlloc`."""

    if TYPE_CHECKING:
        receive: TaskPool[EmuTask]
        send: TaskPool[EmuTask]
        send_imm: TaskPool[EmuTask]
        read: TaskPool[EmuTask]
        write: TaskPool[EmuTask]
        write_imm: TaskPool[EmuTask]
        atomic_cmp_swp: TaskPool[EmuTask]
        atomic_fetch_add: TaskPool[EmuTask]
        # What the tasks and the connections use of the ctx (:class:`.connection.ConnectionOwner`),
        # set or defined by :class:`.ctx.EmuRdma`.
        dev: object
        lock: threading.Lock
        rq: Fifo
        posted: deque[EmuRdmaTaskReceive]
        stalled: deque[Stream]
        conns: list[EmuRdmaConnection]
        poller: RdmaPoller
        serial: int
        epoch: int
        perms: int
        retry_window: float
        rnr_retry: int
        send_list_len: int
        recv_list_len: int

        def dial(self, conn: EmuRdmaConnection, addr: tuple[str, int], peer_key: bytes, unix: str = "") -> None: ...
        def window_expired(self, arg: tuple[EmuRdmaConnection, int]) -> None: ...
        def break_connection(self, conn: EmuRdmaConnection, code: int, local: bool = False,
                             reason: str = "") -> None: ...
        def accept_socket(self, sock: socket.socket) -> None: ...
        def resume_stalled(self) -> None: ...


def u32(v: int) -> int:
    if not 0 <= v <= 0xFFFFFFFF:
        raise DocaInvalidValue(f"immediate data {v} does not fit in 32 bits")
    return v


def check_conn(ctx: object, conn: Any) -> None:
    if not isinstance(conn, EmuRdmaConnection) or conn.ctx is not ctx:
        raise DocaInvalidValue("the connection does not belong to this rdma ctx")
