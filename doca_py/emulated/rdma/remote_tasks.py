"""The emulated one-sided rdma tasks: read, write (and write-with-immediate) and the atomics."""

from __future__ import annotations

from ..._backend.protocols.core import BufHandle
from ...errors import DocaError
from ..buf import EmuBuf
from ..ctx import EmuTask, TaskPool, _complete
from ..mmap import Access
from .config import (
    C_ESTABLISHED, F_CAS, F_IMM, F_NODATA, MAX_MESSAGE_SIZE, T_ATOMIC, T_READ, T_WRITE, INVALID, NOT_PERMITTED,
    RDMA_READ, RDMA_WRITE, RESET, TOO_BIG, memmove,
)
from .segments import Fail, copy_from, copy_to, grow_data, list_len, buf_segments
from .tasks import Q2, U64, RdmaTask, check_reach
from .wire import HDR, put_frame

_hdr = HDR.pack

__all__ = ["EmuRdmaTaskRead", "EmuRdmaTaskWrite", "EmuRdmaTaskAtomic"]


class _DstTask(RdmaTask):
    """A one-sided task with a destination buffer (local for a read; remote for a write or an atomic),
    re-aimable between runs."""

    __slots__ = ("dst",)

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.dst: EmuBuf | None = None

    def set_dst_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.dst = buf


class _SrcDstTask(_DstTask):
    """A one-sided transfer from a source buffer (remote for a read, local for a write) to the destination."""

    __slots__ = ("src",)

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.src, self.dst

    def set_src_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.src = buf


class EmuRdmaTaskRead(_SrcDstTask):
    """``doca_rdma_task_read``: remote *src* (its head: the remote side is one buffer) into local *dst*."""

    __slots__ = ("segs",)
    kind = "rdma_read"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.segs: list[memoryview] = []

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
            check_reach(self, dst)
        n = src.data_len
        if n > MAX_MESSAGE_SIZE:
            raise Fail(TOO_BIG, f"read of {n} bytes exceeds the maximum {MAX_MESSAGE_SIZE}")
        dm = dst.mmap
        at = dst.data + dst.data_len
        fast = dst.next is None and dm is not None and dm.fast and dm.writable and dm.addr <= at and \
            at + n <= dm.hi and at + n <= dst.head + dst.len
        st = conn.req
        if conn.state != C_ESTABLISHED or st is None:
            st = conn.request_stream()  # raises the connection's failure
        self.nbytes = n
        if fast and conn.same_host:
            if not conn.peer_perms & RDMA_READ:
                raise Fail(NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_READ")
            try:
                p = rm.ptr(src.data, n, False)
            except DocaError as exc:
                raise Fail(exc.code, exc.detail) from None
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
                raise Fail(exc.code, exc.detail) from None
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


class EmuRdmaTaskWrite(_SrcDstTask):
    """``doca_rdma_task_write`` (and write-with-immediate when *has_imm*): local *src* to remote *dst*
    (its head: the remote side is one buffer)."""

    __slots__ = ("imm", "has_imm")
    kind = "rdma_write"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.imm = 0
        self.has_imm = False

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
            check_reach(self, src)
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
        st = conn.req
        if conn.state != C_ESTABLISHED or st is None:
            st = conn.request_stream()  # raises the connection's failure
        self.nbytes = n
        if conn.same_host:
            if not conn.peer_perms & RDMA_WRITE:
                raise Fail(NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_WRITE")
            try:
                p = rm.ptr(d, n, True)
            except DocaError as exc:
                raise Fail(exc.code, exc.detail) from None
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
        # The hot path of a write to another host: map_id's cache hit, put_frame, push and schedule inlined.
        with st.lock:
            if st.closed:
                raise Fail(RESET, "the connection is down")
            blob = rm.blob
            mid = conn.last_mid if blob is conn.last_blob and blob is not None else conn.map_id(st, rm)
            out = st.out
            out += _hdr(T_WRITE, F_IMM if self.has_imm else 0, mid, n, d, self.imm)
            if sm is not None and sm.mv is not None:
                out += sm.mv[src.data - sm.addr:src.data - sm.addr + n]
            for s in segs:
                out += s
            pending = conn.pending
            if not pending:
                conn.start_waiting()
            pending.append(self)
        if not st.flush_posted:
            conn.schedule(st)

    def succeed(self) -> None:
        dst = self.dst
        if dst is not None:
            dst.data_len += self.nbytes


class EmuRdmaTaskAtomic(_DstTask):
    """``doca_rdma_task_atomic_cmp_swp`` / ``_fetch_add``: 64-bit, at the peer."""

    __slots__ = ("result", "cmp", "swap", "add", "is_cas", "segs")
    kind = "rdma_atomic"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
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
            check_reach(self, res)
        segs, room = buf_segments(res, True)
        if room < 8:
            raise Fail(INVALID, "the atomic result buffer needs 8 bytes free")
        st = conn.req
        if conn.state != C_ESTABLISHED or st is None:
            st = conn.request_stream()  # raises the connection's failure
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

    def set_result_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.result = buf
