"""Both ends of a connection's stream on the I/O thread: the requester parses responses, the acceptor
serves requests (receives, remote access, atomics, RNR stalls)."""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import (
    DocaError,
)
from .. import export as ex
from ..completion import complete_batch
from ..mmap import EmuMmap, mmap_create_from_export
from ..transport.stream import RX_SIZE, Stream
from .config import (
    C_BROKEN, C_CLOSED, F_CAS, F_IMM, F_NODATA, MAX_MESSAGE_SIZE, OP_RECV_SEND, OP_RECV_SEND_WITH_IMM,
    OP_RECV_WRITE_WITH_IMM, R_ACK, R_DATA, R_ERR, R_RNR, T_ATOMIC, T_DISC, T_MAP, T_PING, T_READ, T_SEND, T_WRITE,
    INVALID, IO_FAILED, NOT_PERMITTED, NOT_SUPPORTED, RDMA_ATOMIC, RDMA_READ, RDMA_WRITE, RESET, SUCCESS,
    TIME_OUT, TOO_BIG,
)
from .connection import ConnectionOwner, EmuRdmaConnection
from .tasks import Q2, U64
from .work import ReceiveWork, Work
from .wire import HDR, HDR_SIZE, put_frame
from . import ring_poll
from .segments import grow_data, land, recv_segments, scatter, tail, target_view

# -- the requester's side of a stream: responses ------------------------------------------------
def conn_responses(conn: EmuRdmaConnection) -> Callable[[Stream], None]:
    def on_data(st: Stream) -> None:
        _responses(conn, st)
    return on_data


def req_closed(conn: EmuRdmaConnection) -> Callable[[Stream, int], None]:
    def on_close(st: Stream, code: int) -> None:
        conn.ctx.break_connection(conn, RESET)
    return on_close


def _responses(conn: EmuRdmaConnection, st: Stream) -> None:
    ctx = conn.ctx
    pe = ctx.pe
    if pe is None:
        return
    # The completions this batch of responses brings: posted once, as one Pe item, when it is parsed.
    done: list[Work] = []
    try:
        _parse_responses(conn, st, pe, done)
    finally:
        if done:
            pe.post(complete_batch, done)


def _parse_responses(conn: EmuRdmaConnection, st: Stream, pe: Any, done: list[Work]) -> None:
    rx, mv = st.rx, st.mv
    pos, end = st.rpos, st.rend
    pending = conn.pending
    post_item = pe.post_item
    while end - pos >= HDR_SIZE:
        typ, flags, aux, length, a, b = HDR.unpack_from(rx, pos)
        if typ == R_ACK:
            pos += HDR_SIZE
            with st.lock:
                acked = [pending.popleft() for _ in range(min(a, len(pending)))]
            for at in acked:
                at.succeed()
            done += acked
        elif typ == R_RNR:
            pos += HDR_SIZE  # the peer lives (Stream.heard), its receive queue is empty
        elif typ == R_ERR:
            pos += HDR_SIZE
            with st.lock:
                et = pending.popleft() if pending else None
            if et is not None:
                et.status = int(a) or IO_FAILED
                done.append(et)
        elif typ == R_DATA:
            body = pos + HDR_SIZE
            avail = end - body
            with st.lock:
                t: Work | None = pending[0] if pending else None
            segs: list[memoryview] = getattr(t, "segs", []) if t is not None else []
            if t is None or length != t.nbytes:
                st.rpos = pos
                _post_now(pe, done)  # what this batch completed goes before what the close fails
                st.close(IO_FAILED)  # protocol violation: the peer answered something we did not ask
                return
            if avail >= length:
                scatter(segs, mv[body:body + length])
                pos = body + length
                with st.lock:
                    mine = bool(pending) and pending[0] is t
                    if mine:
                        pending.popleft()
                if mine:
                    t.succeed()
                    done.append(t)
                continue
            if HDR_SIZE + length <= RX_SIZE:
                break  # wait for the rest of the frame
            # Stream the payload straight into the destination.
            scatter(segs, mv[body:end])
            rest = tail(segs, avail)
            st.rpos = st.rend = 0
            task = t
            _post_now(pe, done)  # before the streamed one's

            def streamed() -> None:
                with st.lock:
                    mine = bool(pending) and pending[0] is task
                    if mine:
                        pending.popleft()
                if mine:
                    task.succeed()
                    post_item(task.done)
            st.sink.extend(rest)
            st.sink_done = streamed
            return
        else:
            st.rpos = pos
            _post_now(pe, done)
            st.close(IO_FAILED)
            return
    st.rpos = pos


def _post_now(pe: Any, done: list[Work]) -> None:
    if done:
        pe.post(complete_batch, done[:])
        done.clear()


# -- the acceptor's side of a stream: requests -----------------------------------------------------
class SrvState:
    """Per-stream state of a connection's incoming requests (I/O thread only)."""

    __slots__ = ("conn", "maps", "acks", "stall_token", "rnr_fail", "scratch", "sink_task")

    def __init__(self, conn: EmuRdmaConnection) -> None:
        self.conn = conn
        self.maps: dict[int, EmuMmap | int] = {}
        self.acks = 0
        self.stall_token = 0
        self.rnr_fail = False
        self.scratch: memoryview | None = None
        self.sink_task: ReceiveWork | None = None  # a receive being filled straight from the socket

    def discard_segs(self, n: int) -> list[memoryview]:
        if self.scratch is None:
            self.scratch = memoryview(bytearray(RX_SIZE))
        segs = []
        while n > 0:
            k = min(n, RX_SIZE)
            segs.append(self.scratch[:k])
            n -= k
        return segs

    def close_maps(self) -> None:
        for m in self.maps.values():
            if isinstance(m, EmuMmap):
                try:
                    m.destroy()
                except DocaError:
                    pass
        self.maps.clear()


def srv_closed(st: Stream, code: int) -> None:
    srv: SrvState = st.ctx
    srv.close_maps()
    conn = srv.conn
    t, srv.sink_task = srv.sink_task, None
    pe = conn.ctx.pe
    if t is not None and pe is not None:
        t.status = RESET
        pe.post_item(t.done)
    req = conn.req
    if req is not None and not req.closed and conn.pending:
        # A peer that stops closes both streams; the answers to our sends come on the other one and
        # may be read after this EOF. Its own EOF (which follows them) breaks the connection; the
        # timer bounds a peer that closed only this stream.
        st.r.call_later(1.0, lambda: conn.ctx.break_connection(conn, RESET))
        return
    conn.ctx.break_connection(conn, RESET)


def answer_and_close(st: Stream) -> None:
    """Close the stream the peer sends on, after answering what was received (I/O thread).

    On hardware the acknowledgement leaves when the data lands, before the receiver's
    software even sees its completion: a receiver that stops right after its receive
    completed must not turn the sender's delivered send into CONNECTION_RESET."""
    srv = st.ctx
    if isinstance(srv, SrvState):
        with st.lock:
            _respond_acks(st, srv)
    st.flush()  # what the socket takes now is delivered before the FIN
    st.close()


def _respond_acks(st: Stream, srv: SrvState) -> None:
    if srv.acks:
        put_frame(st.out, R_ACK, 0, 0, 0, srv.acks, 0)
        srv.acks = 0


def serve_stream(st: Stream) -> None:
    """Process the requests buffered in *st* (I/O thread)."""
    srv: SrvState = st.ctx
    conn = srv.conn
    ctx = conn.ctx
    pe = ctx.pe
    if pe is None or conn.state in (C_BROKEN, C_CLOSED):
        st.rpos = st.rend
        return
    rx, mv = st.rx, st.mv
    pos, end = st.rpos, st.rend
    out = st.out
    lock = st.lock
    # Receive completions become visible only after this batch's acks are on the wire: the receiver's
    # NIC acknowledges a message before software sees it, so a callback that disconnects at once must
    # not overtake the ack (the sender would fail a delivered send with CONNECTION_RESET).
    landed: list[Work] = []
    try:
        while end - pos >= HDR_SIZE:
            typ, flags, aux, length, a, b = HDR.unpack_from(rx, pos)
            body = pos + HDR_SIZE
            avail = end - body
            big = HDR_SIZE + length > RX_SIZE
            if length and avail < length and not big:
                break  # wait for the whole frame
            if typ == T_SEND or (typ == T_WRITE and flags & F_IMM):
                # Validate a write's target before it may consume a receive.
                target = 0
                if typ == T_WRITE and not flags & F_NODATA:
                    code, target = _resolve(srv, ctx, aux, a, length, True)
                    if code:
                        with lock:
                            _respond_acks(st, srv)
                            put_frame(out, R_ERR, 0, 0, 0, code, 0)
                        pos = _skip(st, srv, pos, length)
                        if pos < 0:
                            return
                        continue
                if srv.rnr_fail:  # the receiver-not-ready window ran out for this frame
                    srv.rnr_fail = False
                    with lock:
                        _respond_acks(st, srv)
                        put_frame(out, R_ERR, 0, 0, 0, TIME_OUT, 0)
                    pos = _skip(st, srv, pos, length if not flags & F_NODATA else 0)
                    if pos < 0:
                        return
                    continue
                task: ReceiveWork | None
                try:
                    task = ctx.posted.popleft()  # atomic; only an empty queue needs the lock
                except IndexError:
                    with ctx.lock:  # the Pe thread posts and looks for stalled streams under it
                        task = ctx.posted.popleft() if ctx.posted else None
                        if task is None:
                            ctx.stalled.append(st)
                if task is None:
                    st.rpos = pos
                    srv.stall_token += 1
                    token = srv.stall_token
                    st.pause()
                    st.r.call_later(max(conn.peer_rnr, 0.001), lambda: _rnr_expired(st, token))
                    st.r.call_later(_nak_interval(ctx), functools.partial(_rnr_nak, st, token))
                    return
                task.result_conn = conn
                if typ == T_SEND:
                    task.opcode = OP_RECV_SEND_WITH_IMM if flags & F_IMM else OP_RECV_SEND
                    task.imm = a if flags & F_IMM else 0
                else:
                    task.opcode = OP_RECV_WRITE_WITH_IMM
                    task.imm = b
                nbytes = length if typ == T_SEND else (a if flags & F_NODATA else length)
                task.result_len = nbytes
                if typ == T_SEND and avail >= length and land(task.dst, mv, body, length):
                    # The whole frame is here and the receive is one buffer of a started local map.
                    pos = body + length
                    task.status = SUCCESS
                    landed.append(task)
                    srv.acks += 1
                    continue
                if typ == T_SEND:
                    code, segs = recv_segments(task, length)
                else:
                    code, segs = 0, ([target_view(target, length)] if length else [])
                if code:
                    task.status = code
                    post_code = IO_FAILED
                    with lock:
                        _respond_acks(st, srv)
                        put_frame(out, R_ERR, 0, 0, 0, post_code, 0)
                    landed.append(task)
                    pos = _skip(st, srv, pos, length)
                    if pos < 0:
                        return
                    continue
                if typ == T_SEND and length:
                    if avail >= length:
                        scatter(segs, mv[body:body + length])
                        grow_data(task.dst, length)
                    else:
                        scatter(segs, mv[body:end])
                        srv.sink_task = task
                        _sink(st, tail(segs, avail), functools.partial(_finish_recv, st, srv, task, length))
                        return
                elif length:
                    if avail >= length:
                        scatter(segs, mv[body:body + length])
                    else:
                        scatter(segs, mv[body:end])
                        srv.sink_task = task
                        _sink(st, tail(segs, avail), functools.partial(_finish_recv, st, srv, task, 0))
                        return
                pos = body + length
                task.status = SUCCESS
                landed.append(task)
                srv.acks += 1
            elif typ == T_WRITE:
                code, target = _resolve(srv, ctx, aux, a, length, True)
                if code:
                    with lock:
                        _respond_acks(st, srv)
                        put_frame(out, R_ERR, 0, 0, 0, code, 0)
                    pos = _skip(st, srv, pos, length)
                    if pos < 0:
                        return
                    continue
                if avail >= length:
                    if length:
                        target_view(target, length)[:] = mv[body:body + length]
                    pos = body + length
                    srv.acks += 1
                else:
                    view = target_view(target, length)
                    view[:avail] = mv[body:end]
                    _sink(st, [view[avail:]], lambda: _finish_ack(st, srv))
                    return
            elif typ == T_READ:
                pos = body
                code, target = _resolve(srv, ctx, aux, a, b, False)
                with lock:
                    _respond_acks(st, srv)
                    if code:
                        put_frame(out, R_ERR, 0, 0, 0, code, 0)
                    else:
                        put_frame(out, R_DATA, 0, 0, b, 0, 0)
                        if b:
                            out += target_view(target, b)
            elif typ == T_MAP:
                if length > 4096:
                    st.close(IO_FAILED)
                    return
                srv.maps[aux] = _import_map(ctx, bytes(mv[body:body + length]))
                pos = body + length
            elif typ == T_ATOMIC:
                if length != 16:
                    st.close(IO_FAILED)
                    return
                a1, a2 = Q2.unpack_from(rx, body)
                pos = body + length
                code, target = _resolve(srv, ctx, aux, a, 8, True, atomic=True)
                with lock:
                    _respond_acks(st, srv)
                    if code:
                        put_frame(out, R_ERR, 0, 0, 0, code, 0)
                    else:
                        cell = ctypes.c_uint64.from_address(target)
                        old = cell.value
                        if flags & F_CAS:
                            if old == a1:
                                cell.value = a2
                        else:
                            cell.value = (old + a1) & U64
                        put_frame(out, R_DATA, 0, 0, 8, 0, 0)
                        out += struct.pack("<Q", old)
            elif typ == T_PING:  # the requester's ring sends wait: this process lives, and serves them
                pos = body
                if conn.rx is not None:
                    ring_poll.io_serve(conn)  # our Pe may not be progressing: the receives are posted anyway
                with lock:
                    put_frame(out, R_RNR, 0, 0, 0, 0, 0)
            elif typ == T_DISC:
                st.rpos = st.rend
                req = conn.req
                if req is not None:
                    req.drain()  # the acks the peer sent before it disconnected complete our sends first
                ctx.break_connection(conn, RESET)
                return
            else:
                st.close(IO_FAILED)  # not our protocol
                return
        st.rpos = pos
    finally:
        if not st.closed:
            with lock:
                _respond_acks(st, srv)
            st.flush()
        if landed:
            pe.post(complete_batch, landed)  # (I/O thread) one Pe item for the batch


def _skip(st: Stream, srv: SrvState, pos: int, length: int) -> int:
    """Consume the frame at *pos* without using its payload; -1 when the rest is streamed away."""
    body = pos + HDR_SIZE
    avail = st.rend - body
    if avail >= length:
        return body + length
    _sink(st, srv.discard_segs(length - avail), lambda: _resume_after_sink(st))
    return -1


def _sink(st: Stream, segs: list[memoryview], done: Callable[[], None]) -> None:
    st.rpos = st.rend = 0
    if not segs:
        done()
        return
    st.sink.extend(segs)
    st.sink_done = done


def _resume_after_sink(st: Stream) -> None:
    st.flush()


def _finish_recv(st: Stream, srv: SrvState, task: ReceiveWork, grow: int) -> None:
    srv.sink_task = None
    if grow:
        grow_data(task.dst, grow)
    task.status = SUCCESS
    _finish_ack(st, srv)  # the ack first, as in serve_stream
    pe = srv.conn.ctx.pe
    if pe is not None:
        pe.post_item(task.done)


def _finish_ack(st: Stream, srv: SrvState) -> None:
    srv.acks += 1
    with st.lock:
        _respond_acks(st, srv)
    st.flush()


def _nak_interval(ctx: ConnectionOwner) -> float:
    return min(ctx.retry_window / 4, 0.25)


def _rnr_nak(st: Stream, token: int) -> None:
    """While a request stalls for want of a receive, tell the requester we live (as RNR NAKs do)."""
    srv: SrvState = st.ctx
    if st.closed or srv.stall_token != token or not st.paused:
        return
    with st.lock:
        put_frame(st.out, R_RNR, 0, 0, 0, 0, 0)
    st.flush()
    st.r.call_later(_nak_interval(srv.conn.ctx), functools.partial(_rnr_nak, st, token))


def _rnr_expired(st: Stream, token: int) -> None:
    srv: SrvState = st.ctx
    if st.closed or srv.stall_token != token or not st.paused:
        return
    ctx = srv.conn.ctx
    with ctx.lock:
        if st in ctx.stalled:
            ctx.stalled.remove(st)
    srv.rnr_fail = True
    st.resume()





def _resolve(srv: SrvState, ctx: ConnectionOwner, mid: int, addr: int, n: int, write: bool,
             atomic: bool = False) -> tuple[int, int]:
    """Validate one remote access on behalf of the peer: (status, process address)."""
    mm = srv.maps.get(mid)
    if mm is None:
        return INVALID, 0
    if isinstance(mm, int):
        return mm, 0
    need = RDMA_ATOMIC if atomic else (RDMA_WRITE if write else RDMA_READ)
    if not ctx.perms & need:
        return NOT_PERMITTED, 0
    if n > MAX_MESSAGE_SIZE:
        return TOO_BIG, 0
    try:
        if atomic:
            if addr % 8:
                return INVALID, 0
            if not mm.perms & RDMA_ATOMIC:
                return NOT_PERMITTED, 0
            if addr < mm.addr or addr + 8 > mm.addr + mm.length:
                return INVALID, 0
            mm._check_live()
            return 0, addr + mm._delta
        return 0, mm.ptr(addr, n, write)
    except DocaError as exc:
        return exc.code, 0


def _import_map(ctx: ConnectionOwner, data: bytes) -> EmuMmap | int:
    """Resolve a peer's mmap blob here, as its owner would: key, revocation, kind."""
    try:
        b = ex.decode(data)
    except DocaError as exc:
        return exc.code
    if b.kind is not ex.ExportKind.RDMA:
        return NOT_PERMITTED
    if b.boot_id != ex.boot_id():
        return NOT_SUPPORTED  # memory of a third host: not reachable from here
    try:
        mm = mmap_create_from_export(data, ctx.dev)  # type: ignore[arg-type]
    except DocaError as exc:
        return exc.code
    return mm
