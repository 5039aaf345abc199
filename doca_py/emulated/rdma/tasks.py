"""The emulated rdma tasks: receive, send, read, write and atomics."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._backend.protocols.core import BufHandle
from ...errors import (
    DocaError,
    DocaInvalidValue,
    DocaNotConnected,
)
from ..buf import EmuBuf
from ..ctx import EmuTask, TaskPool, _complete, unreachable_ok
from ..mmap import Access, EmuMmap
from ..transport.reactor import reactor
from .config import (
    C_ESTABLISHED, C_NEW, F_CAS, F_IMM, F_NODATA, MAX_MESSAGE_SIZE, T_ATOMIC, T_READ, T_SEND, T_WRITE, INVALID,
    NOT_PERMITTED, RDMA_READ, RDMA_WRITE, RESET, TOO_BIG, memmove,
)
from .connection import EmuRdmaConnection, Fifo
from .segments import Fail, copy_from, copy_to, grow_data, list_len, buf_segments
from .wire import HDR, ZERO_HDR, put_frame
from .settings import RdmaSettings
from .work import ReceiveWork, Work

if TYPE_CHECKING:
    import socket
    import threading
    from collections import deque

    from ..transport.stream import Stream
    from .shm import RdmaPoller

_pack_hdr = HDR.pack_into

def _reach(task: RdmaTask, buf: EmuBuf) -> None:
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

    The base ``submit`` checks and queues the launch; the last of its checks
    (:meth:`_check_submit`) also puts the task on its queue (:class:`Fifo`). In
    ``progress()`` the launch (:meth:`_begin`) starts the task when it is its turn and
    the connection is up, else marks it ready and leaves it to the queue
    (:meth:`go`); its completion comes later from the I/O thread, or at once for
    same-host work and refusals.
    """

    __slots__ = ("conn", "nbytes", "fifo", "ready", "reached")
    if TYPE_CHECKING:
        ctx: RdmaTaskAlloc

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.conn: EmuRdmaConnection | None = None  # None for receives
        self.nbytes = 0
        self.fifo: Fifo | None = None
        self.ready = False
        self.reached: EmuMmap | None = None  # the local map last found reachable by the ctx's device

    def _check_submit(self) -> None:
        c = self.conn
        if c is None or c.ctx is not self.ctx:
            raise DocaInvalidValue("the task's connection does not belong to this rdma ctx")
        if c.state == C_NEW:
            raise DocaNotConnected(f"connection {c.id} was exported but not connected: call Rdma.connect with "
                                   f"the peer's blob before submitting tasks on it")
        if self.fifo is None:  # _enqueue inlined (the hot path)
            self.fifo = self.lane = q = c.sq
            q.tasks.append(self)
        else:
            self._enqueue(c.sq)

    def _enqueue(self, q: Fifo) -> None:
        """Take a place in *q*, in submission order (the last submit check: nothing after it refuses)."""
        if self.fifo is not None:
            self.fifo.remove(self)
        self.fifo = self.lane = q
        q.tasks.append(self)

    def _unqueue(self) -> None:
        if self.fifo is not None:
            self.fifo.remove(self)

    def _begin(self) -> None:
        q = self.fifo
        if q is None:  # not queued (cannot happen while the ctx runs): start it now
            self.go()
            return
        tasks = q.tasks
        c = self.conn  # None for receives: their queue has no gate
        if tasks[0] is self and (c is None or c.state == C_ESTABLISHED):
            tasks.popleft()  # its turn, and the connection is up: the hot path (go inlined)
            self.fifo = None
            try:
                self._start()
            except Fail as f:
                self.status = f.code
                self.reason = str(f)
                _complete(self)
            except DocaError as exc:
                self.status = exc.code
                self.reason = str(exc)
                _complete(self)
            if q.nready:  # tasks launched before their turn wait behind
                q.run()
            return
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
            self.reason = str(exc)
            _complete(self)

    def _start(self) -> None:
        raise NotImplementedError

    def succeed(self) -> None:
        """Success response arrived (I/O thread): account the bytes."""

    def set_rdma_connection(self, conn: Any) -> None:
        assert isinstance(conn, EmuRdmaConnection)
        self.conn = conn

    def get_rdma_connection(self) -> EmuRdmaConnection | None:
        return self.conn


class EmuRdmaTaskReceive(RdmaTask, ReceiveWork):
    """``doca_rdma_task_receive``: posted to the ctx's receive queue in submission order."""

    __slots__ = ("dst", "opcode", "result_len", "imm", "result_conn")
    kind = "rdma_receive"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.dst: EmuBuf | None = None
        self.opcode = 0
        self.result_len = 0
        self.imm = 0
        self.result_conn: EmuRdmaConnection | None = None

    def _check_submit(self) -> None:
        self._enqueue(self.ctx.rq)  # no connection to check

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.dst,)

    def _start(self) -> None:
        ctx = self.ctx
        dst = self.dst
        if dst is not None and (dst.mmap is not self.reached or dst.next is not None):
            _reach(self, dst)
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
                _reach(self, src)
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
            pos = len(out)
            out += ZERO_HDR
            _pack_hdr(out, pos, T_SEND, F_IMM if self.has_imm else 0, 0, n, self.imm, 0)
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


class EmuRdmaTaskRead(RdmaTask):
    """``doca_rdma_task_read``: remote *src* (its head: the remote side is one buffer) into local *dst*."""

    __slots__ = ("src", "dst", "segs")
    kind = "rdma_read"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None
        self.dst: EmuBuf | None = None
        self.segs: list[memoryview] = []

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.src, self.dst

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        src, dst = self.src, self.dst
        if src is None or dst is None:
            raise Fail(INVALID, "read needs a remote source and a local destination")
        rm = src.mmap  # a chained remote buffer: DOCA uses the head only
        if rm is None or not rm.from_export or rm.kind != Access.RDMA:
            raise Fail(INVALID, "the read source must be a buffer of an mmap created from an RDMA export")
        if dst.mmap is not self.reached or dst.next is not None:
            _reach(self, dst)
        n = src.data_len
        if n > MAX_MESSAGE_SIZE:
            raise Fail(TOO_BIG, f"read of {n} bytes exceeds the maximum {MAX_MESSAGE_SIZE}")
        dm = dst.mmap
        at = dst.data + dst.data_len
        fast = dst.next is None and dm is not None and dm.fast and dm.writable and dm.addr <= at and \
            at + n <= dm.hi and at + n <= dst.head + dst.len
        st = conn.request_stream()
        self.nbytes = n
        if fast and conn.same_host:
            if not conn.peer_perms & RDMA_READ:
                raise Fail(NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_READ")
            try:
                p = rm.ptr(src.data, n, False)
            except DocaError as exc:
                raise Fail(exc.code, str(exc)) from None
            memmove(at, p, n)
            dst.data_len += n
            _complete(self)
            return
        segs, room = buf_segments(dst, True)
        if room < n:
            raise Fail(INVALID, f"read destination has {room} bytes free, the source holds {n}")
        if conn.same_host:
            if not conn.peer_perms & RDMA_READ:
                raise Fail(NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_READ")
            try:
                p = rm.ptr(src.data, n, False)
            except DocaError as exc:
                raise Fail(exc.code, str(exc)) from None
            copy_from(segs, p, n)
            grow_data(dst, n)
            _complete(self)
            return
        self.segs = segs
        with st.lock:
            if st.closed:
                raise Fail(RESET, "the connection is down")
            mid = conn.map_id(st, rm)
            put_frame(st.out, T_READ, 0, mid, 0, src.data, n)
            conn.push(self)
        conn.schedule(st)

    def succeed(self) -> None:
        grow_data(self.dst, self.nbytes)
        self.segs = []

    def set_src_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.src = buf

    def set_dst_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.dst = buf




class EmuRdmaTaskWrite(RdmaTask):
    """``doca_rdma_task_write`` (and write-with-immediate when *has_imm*): local *src* to remote *dst*
    (its head: the remote side is one buffer)."""

    __slots__ = ("src", "dst", "imm", "has_imm")
    kind = "rdma_write"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None
        self.dst: EmuBuf | None = None
        self.imm = 0
        self.has_imm = False

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.src, self.dst

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        src, dst = self.src, self.dst
        if src is None or dst is None:
            raise Fail(INVALID, "write needs a local source and a remote destination")
        if src.next is not None and list_len(src) > self.ctx.send_list_len:
            raise Fail(INVALID, "source list is longer than max_send_buf_list_len")
        rm = dst.mmap  # a chained remote buffer: DOCA uses the head only
        if rm is None or not rm.from_export or rm.kind != Access.RDMA:
            raise Fail(INVALID, "the write destination must be a buffer of an mmap created from an RDMA export")
        sm = src.mmap
        if sm is not self.reached or src.next is not None:
            _reach(self, src)
        if src.next is None and sm is not None and sm.fast and sm.addr <= src.data and \
                src.data + src.data_len <= sm.hi:
            segs, n = list[memoryview](), src.data_len  # a started local map: its addresses are this process's
        else:
            sm = None
            segs, n = buf_segments(src, False)
        if n > MAX_MESSAGE_SIZE:
            raise Fail(TOO_BIG, f"write of {n} bytes exceeds the maximum {MAX_MESSAGE_SIZE}")
        d = dst.data + dst.data_len
        if d + n > dst.head + dst.len:
            raise Fail(INVALID, f"write destination has {dst.head + dst.len - d} bytes free, the source holds {n}")
        st = conn.request_stream()
        self.nbytes = n
        if conn.same_host:
            if not conn.peer_perms & RDMA_WRITE:
                raise Fail(NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_WRITE")
            try:
                p = rm.ptr(d, n, True)
            except DocaError as exc:
                raise Fail(exc.code, str(exc)) from None
            if sm is not None:
                memmove(p, src.data, n)
            else:
                copy_to(p, segs)
            if not self.has_imm:
                dst.data_len += n
                _complete(self)
                return
            if conn.tx is not None:  # the bytes are in place: tell the peer, which consumes a receive
                conn.tx.send_wimm(conn, self, n, self.imm)
                return
            with st.lock:  # the bytes are in place: tell the peer, which consumes a receive
                if st.closed:
                    raise Fail(RESET, "the connection is down")
                put_frame(st.out, T_WRITE, F_IMM | F_NODATA, 0, 0, n, self.imm)
                conn.push(self)
            conn.schedule(st)
            return
        with st.lock:
            if st.closed:
                raise Fail(RESET, "the connection is down")
            mid = conn.map_id(st, rm)
            out = st.out
            put_frame(out, T_WRITE, F_IMM if self.has_imm else 0, mid, n, d, self.imm)
            if sm is not None and sm.mv is not None:
                out += sm.mv[src.data - sm.addr:src.data - sm.addr + n]
            for s in segs:
                out += s
            conn.push(self)
        conn.schedule(st)

    def succeed(self) -> None:
        dst = self.dst
        if dst is not None:
            dst.data_len += self.nbytes

    def set_src_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.src = buf

    def set_dst_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.dst = buf


class EmuRdmaTaskAtomic(RdmaTask):
    """``doca_rdma_task_atomic_cmp_swp`` / ``_fetch_add``: 64-bit, at the peer."""

    __slots__ = ("dst", "result", "cmp", "swap", "add", "is_cas", "segs")
    kind = "rdma_atomic"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.dst: EmuBuf | None = None
        self.result: EmuBuf | None = None
        self.cmp = self.swap = self.add = 0
        self.is_cas = False
        self.segs: list[memoryview] = []

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.dst, self.result

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        dst, res = self.dst, self.result
        if dst is None or res is None:
            raise Fail(INVALID, "an atomic task needs a remote destination and a local result buffer")
        rm = dst.mmap  # a chained remote buffer: the head only
        if rm is None or not rm.from_export or rm.kind != Access.RDMA:
            raise Fail(INVALID, "the atomic destination must be a buffer of an RDMA-imported mmap")
        if res.mmap is not self.reached or res.next is not None:
            _reach(self, res)
        segs, room = buf_segments(res, True)
        if room < 8:
            raise Fail(INVALID, "the atomic result buffer needs 8 bytes free")
        st = conn.request_stream()
        self.segs, self.nbytes = segs, 8
        a1, a2 = (self.cmp, self.swap) if self.is_cas else (self.add, 0)
        with st.lock:
            if st.closed:
                raise Fail(RESET, "the connection is down")
            mid = conn.map_id(st, rm)
            put_frame(st.out, T_ATOMIC, F_CAS if self.is_cas else 0, mid, 16, dst.data, 0)
            st.out += Q2.pack(a1 & U64, a2 & U64)
            conn.push(self)
        conn.schedule(st)

    def succeed(self) -> None:
        grow_data(self.result, 8)
        self.segs = []

    def set_dst_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.dst = buf

    def set_result_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.result = buf


Q2 = struct.Struct("<QQ")
U64 = (1 << 64) - 1


class RdmaTaskAlloc(RdmaSettings):
    """``doca_rdma_task_*_allocate_init`` of :class:`EmuRdma` (its task pools are made by its ``__init__``)."""

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

    # -- tasks --------------------------------------------------------------------------------------
    def task_receive_allocate_init(self, dst: BufHandle | None) -> EmuRdmaTaskReceive:
        t = self.receive.alloc()
        assert isinstance(t, EmuRdmaTaskReceive) and (dst is None or isinstance(dst, EmuBuf))
        t.dst = dst
        return t

    def _send_alloc(self, pool: TaskPool[EmuTask], conn: Any, src: BufHandle | None, imm: int | None) \
            -> EmuRdmaTaskSend:
        check_conn(self, conn)
        t = pool.alloc()
        assert isinstance(t, EmuRdmaTaskSend) and (src is None or isinstance(src, EmuBuf))
        t.conn, t.src = conn, src
        t.has_imm, t.imm = imm is not None, _u32(imm or 0)
        return t

    def task_send_allocate_init(self, conn: Any, src: BufHandle | None) -> EmuRdmaTaskSend:
        return self._send_alloc(self.send, conn, src, None)

    def task_send_imm_allocate_init(self, conn: Any, src: BufHandle | None, imm: int) -> EmuRdmaTaskSend:
        return self._send_alloc(self.send_imm, conn, src, imm)

    def task_read_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> EmuRdmaTaskRead:
        check_conn(self, conn)
        t = self.read.alloc()
        assert isinstance(t, EmuRdmaTaskRead) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.conn, t.src, t.dst = conn, src, dst
        return t

    def _write_alloc(self, pool: TaskPool[EmuTask], conn: Any, src: BufHandle, dst: BufHandle, imm: int | None) \
            -> EmuRdmaTaskWrite:
        check_conn(self, conn)
        t = pool.alloc()
        assert isinstance(t, EmuRdmaTaskWrite) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.conn, t.src, t.dst = conn, src, dst
        t.has_imm, t.imm = imm is not None, _u32(imm or 0)
        return t

    def task_write_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> EmuRdmaTaskWrite:
        return self._write_alloc(self.write, conn, src, dst, None)

    def task_write_imm_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle, imm: int) -> EmuRdmaTaskWrite:
        return self._write_alloc(self.write_imm, conn, src, dst, imm)

    def task_atomic_cmp_swp_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle, cmp: int,
                                          swap: int) -> EmuRdmaTaskAtomic:
        check_conn(self, conn)
        t = self.atomic_cmp_swp.alloc()
        assert isinstance(t, EmuRdmaTaskAtomic) and isinstance(dst, EmuBuf) and isinstance(result, EmuBuf)
        t.conn, t.dst, t.result, t.cmp, t.swap, t.is_cas = conn, dst, result, cmp & U64, swap & U64, True
        return t

    def task_atomic_fetch_add_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle,
                                            add: int) -> EmuRdmaTaskAtomic:
        check_conn(self, conn)
        t = self.atomic_fetch_add.alloc()
        assert isinstance(t, EmuRdmaTaskAtomic) and isinstance(dst, EmuBuf) and isinstance(result, EmuBuf)
        t.conn, t.dst, t.result, t.add, t.is_cas = conn, dst, result, add & U64, False
        return t


def _u32(v: int) -> int:
    if not 0 <= v <= 0xFFFFFFFF:
        raise DocaInvalidValue(f"immediate data {v} does not fit in 32 bits")
    return v


def check_conn(ctx: object, conn: Any) -> None:
    if not isinstance(conn, EmuRdmaConnection) or conn.ctx is not ctx:
        raise DocaInvalidValue("the connection does not belong to this rdma ctx")
