"""The input side of a comch connection (I/O thread): read, parse and validate frames, land producer data."""

from __future__ import annotations

import array
import socket as _socket
from typing import TYPE_CHECKING, Any, Protocol, cast


from ...errors import (
    DocaError,
    error_name,
)
from ...log import logger
from .wire import (
    HDR,
    HDR_SIZE,
    MAGIC,
    T_ACK,
    T_CONSUMER_GONE,
    T_CONSUMER_NEW,
    T_CREDIT,
    T_DATA,
    T_HELLO,
    T_MSG,
    T_WELCOME,
    VERSION,
)
from .config import (
    MAX_BUF_SIZE, MAX_CONSUMERS, MAX_IMM_DATA_LEN, MAX_NAME_LEN, AGAIN, NOT_FOUND, RESET, RUNNING, SUCCESS,
    TOO_BIG, monotonic,
)
from .common import device_view, post, post_complete, post_done
from .tasks import EmuComchProducerTaskSend, EmuComchTaskSend, ProducerSide, Remote
from . import shm as _shm

_FDS_SPACE = _socket.CMSG_SPACE(3 * array.array("i").itemsize)


_LENS = 32  # slots a message run's lengths list grows by
_ZEROS = [0] * _LENS


def _recv_with_fds(sock: _socket.socket, buf: memoryview) -> tuple[int, list[int]]:
    """``recv_into`` that also takes the descriptors passed with the bytes (handshake only)."""
    n, anc, _flags, _addr = sock.recvmsg_into([buf], _FDS_SPACE)
    fds: list[int] = []
    for level, typ, data in anc:
        if level == _socket.SOL_SOCKET and typ == _socket.SCM_RIGHTS:
            a = array.array("i")
            a.frombytes(data[:len(data) - len(data) % a.itemsize])
            fds += a
    return n, fds


if TYPE_CHECKING:
    import socket
    import threading
    from collections import deque

    from ..dev import EmuDev
    from ..pe import EmuPe
    from .tasks import EmuComchConsumerTaskPostRecv


class ConnectionOwner(_shm.LinkOwner, Protocol):
    """The server or client as its connections see it (:class:`.endpoints.Endpoint` is one).
    A connection given as ``Any`` is an :class:`.connection.EmuComchConnection`."""

    @property
    def max_msg_size(self) -> int: ...
    @property
    def recv_queue_size(self) -> int: ...
    @property
    def dev(self) -> EmuDev: ...
    def deliver_msgs(self, arg: tuple[Any, bytearray, list[int]]) -> None: ...
    def deliver_consumer(self, arg: tuple[Any, int, bool]) -> None: ...
    def conn_gone(self, conn: Any) -> None: ...


class HelloServer(Protocol):
    """The server, which answers a client's HELLO (:class:`.endpoints.EmuComchServer`)."""

    def accept_hello(self, conn: Any, name: bytes, peer_max: int, flags: int) -> bool: ...


class RefusedClient(Protocol):
    """The client, which logs the first refusal of a retry series (:class:`.endpoints.EmuComchClient`)."""

    refusal_logged: bool


class LocalProducer(ProducerSide, Protocol):
    """A producer on the connection (:class:`.datapath.EmuComchProducer` is one)."""

    def conn_lost(self, _: object) -> None: ...


class LocalConsumer(Protocol):
    """A consumer on the connection, which its data lands in (:class:`.datapath.EmuComchConsumer` is one)."""

    @property
    def pe(self) -> EmuPe | None: ...
    def conn_lost(self, _: object) -> None: ...
    @property
    def state(self) -> int: ...
    @property
    def imm_data_len(self) -> int: ...
    @property
    def posted(self) -> deque[EmuComchConsumerTaskPostRecv]: ...


class ConnectionInput:
    """What :class:`EmuComchConnection` does with the bytes it reads (I/O thread only)."""

    if TYPE_CHECKING:  # state and output of the connection (:mod:`.connection`), which sets them
        ctx: ConnectionOwner
        server_side: bool
        peer: str
        sock: socket.socket | None
        lock: threading.Lock
        pq: deque[EmuComchProducerTaskSend | None]
        closed: bool
        torn_down: bool
        alive: bool
        rx: bytearray | None
        mv: memoryview | None
        rpos: int
        rend: int
        ack_status: int
        ack_count: int
        max_recv: int
        max_send: int
        high: int
        posted: int
        delivered: int
        paused: bool
        consumers: dict[int, LocalConsumer]
        remote: dict[int, Remote]
        live: list[int]
        heard: float

        shm: _shm.ShmLink | None
        fds_in: list[int]
        nudge_mv: memoryview | None

        def die(self, code: int, reason: str | None) -> None: ...
        def send_now(self, frame: bytes) -> bool: ...
        def update_mask(self) -> None: ...
        def requeue(self, t: EmuComchProducerTaskSend) -> None: ...
        def grant_locked(self, r: Remote, n: int) -> bool: ...
        def kick_locked(self) -> list[EmuComchTaskSend] | None: ...

    # -- input (I/O thread) ------------------------------------------------------------------------
    def read_ready(self) -> None:
        sock, mv = self.sock, self.mv
        if sock is None or mv is None:
            return
        link = self.shm
        try:
            if link is not None:  # ring mode: nudges and EOF only
                nmv = self.nudge_mv
                if nmv is None:
                    nmv = self.nudge_mv = memoryview(bytearray(256))
                n = sock.recv_into(nmv)
                if n:
                    _shm.nudged(cast("_shm.LinkedConnection", self), link, nmv[:n])
                    return
                _shm.drain(cast("_shm.LinkedConnection", self))  # what the peer published before it went
                if self.torn_down:
                    return
            elif not self.alive:  # the handshake may carry a ring and a doorbell (SCM_RIGHTS)
                n, fds = _recv_with_fds(sock, mv[self.rend:])
                if fds:
                    self.fds_in += fds
                    if len(self.fds_in) > 2:
                        self.bad_input("too many descriptors in the handshake")
                        return
            else:
                n = sock.recv_into(mv[self.rend:])
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionResetError:
            logger.debug("comch: connection %s reset by the peer", self.peer)
            self.die(RESET, None)
            return
        except OSError as exc:
            self.die(RESET, f"receive failed: {exc.strerror}")
            return
        if not n:
            if self.rend > self.rpos:
                self.die(RESET, f"the peer closed the stream inside a frame ({self.rend - self.rpos} bytes "
                                 "of a truncated frame)")
            else:
                self.die(RESET, None)
            return
        self.rend += n
        self.heard = monotonic()
        self.parse_input()

    def bad_input(self, why: str) -> None:
        self.die(RESET, f"malformed frame: {why}")

    def parse_input(self) -> None:
        rx = self.rx
        assert rx is not None
        unpack = HDR.unpack_from
        pos, end = self.rpos, self.rend
        # The lengths of a run of messages, posted with it: a list grown _LENS slots at a time and filled by
        # index (no append call per message), trimmed to its *nl* lengths before it is posted.
        lens: list[int] | None = None
        nl = cap = 0
        mstart = 0
        alive = self.alive
        max_recv = self.max_recv
        while end - pos >= HDR_SIZE:
            typ, small, aux, ln, a, b = unpack(rx, pos)
            if typ == T_MSG:
                if not alive:
                    return self.bad_input("message before the handshake")
                if ln > max_recv:
                    return self.bad_input(f"message of {ln} bytes exceeds max_msg_size {max_recv}")
                if end - pos - HDR_SIZE < ln:
                    break
                if lens is None:
                    lens, nl, cap = [0] * _LENS, 0, _LENS
                    mstart = pos
                elif nl == cap:
                    lens += _ZEROS
                    cap += _LENS
                lens[nl] = ln
                nl += 1
                pos += HDR_SIZE + ln
                continue
            # Any other frame: check its length before waiting for its body.
            if typ == T_DATA:
                if ln > MAX_IMM_DATA_LEN + MAX_BUF_SIZE or small > MAX_IMM_DATA_LEN or small > ln:
                    return self.bad_input(f"producer data of {ln} bytes (immediate {small})")
            elif typ == T_HELLO:
                if ln >= MAX_NAME_LEN:
                    return self.bad_input(f"hello with a {ln}-byte name")
            elif typ in (T_WELCOME, T_ACK, T_CONSUMER_NEW, T_CONSUMER_GONE, T_CREDIT):
                if ln:
                    return self.bad_input(f"type {typ} frame with a {ln}-byte body")
            else:
                return self.bad_input(f"unknown frame type {typ}")
            if end - pos - HDR_SIZE < ln:
                break
            if lens is not None:
                del lens[nl:]
                self._post_msgs(mstart, pos, lens)
                lens = None
            body = pos + HDR_SIZE
            pos = body + ln
            self.rpos = pos
            if not self._frame(typ, small, aux, ln, a, b, body):
                return
            alive = self.alive
        if lens is not None:
            del lens[nl:]
            self._post_msgs(mstart, pos, lens)
        if self.ack_count:
            self._send_acks()
        if self.torn_down:
            return
        # Keep the partial frame at the front: the buffer always has room for a whole frame.
        if pos == end:
            self.rpos = self.rend = 0
        else:
            if pos:
                rest = end - pos
                rx[:rest] = self.mv[pos:end]  # type: ignore[index]
                pos, end = 0, rest
            self.rpos, self.rend = pos, end
        if self.posted - self.delivered > self.high:
            self.paused = True
            if self.posted - self.delivered <= self.high:  # the Pe caught up meanwhile
                self.paused = False
            self.update_mask()

    def _post_msgs(self, start: int, end: int, lens: list[int]) -> None:
        rx = self.rx
        assert rx is not None
        data = rx[start:end]
        n = end - start
        self.posted += n
        count = len(lens)
        live = self.live
        live[3] += count
        live[4] += n - HDR_SIZE * count
        ctx = self.ctx
        post(ctx.pe, ctx.deliver_msgs, (self, data, lens))

    def _frame(self, typ: int, small: int, aux: int, ln: int, a: int, b: int, body: int) -> bool:
        """Handle one non-message frame; False if the rest of the buffer must not be parsed: the
        connection was dropped, or its handshake switched it to the rings (which reset the buffer)."""
        ctx = self.ctx
        if typ == T_DATA:
            if not self.alive:
                self.bad_input("producer data before the handshake")
                return False
            st = self._data(a, b, small, ln, body)
            if self.ack_count and st != self.ack_status:
                self._send_acks()
            self.ack_status = st
            self.ack_count += 1
            return True
        if typ == T_ACK:
            pq = self.pq
            with self.lock:  # a stopping producer's thread replaces its entries meanwhile
                ok = self.alive and 0 < a <= len(pq)
                acked = [pq.popleft() for _ in range(a)] if ok else None
            if acked is None:
                self.bad_input(f"acknowledgement of {a} producer sends ({len(pq)} in flight)")
                return False
            if small == AGAIN:  # stale credits: the data waits for the next one, in flight
                for t in acked:
                    if t is not None:
                        self.requeue(t)
                return True
            for t in acked:
                if t is not None:  # None: flushed by its producer's stop
                    t.status = small
                    post_complete(t)
            return True
        if typ == T_CREDIT:
            if not self.alive or not b:
                self.bad_input(f"credit of {b} receives" if self.alive else "credit before the handshake")
                return False
            done = None
            with self.lock:
                r = self.remote.get(a)
                # Unknown: the consumer expired after posting (its credits died with it).
                if r is not None and not self.closed and self.grant_locked(r, b):
                    done = self.kick_locked()
            if done:
                post_done(done)
            return True
        if typ in (T_CONSUMER_NEW, T_CONSUMER_GONE):
            if not self.alive:
                self.bad_input("consumer event before the handshake")
                return False
            if typ == T_CONSUMER_NEW:
                with self.lock:
                    known = a in self.remote
                    room = len(self.remote) < MAX_CONSUMERS
                    if not known and room:
                        self.remote[a] = Remote()
                if not (known or room):
                    self.bad_input(f"more than {MAX_CONSUMERS} consumers announced")
                    return False
            else:
                with self.lock:
                    gone = self.remote.pop(a, None)
                    waiting = list(gone.waiting) if gone is not None else []
                    if gone is not None:
                        gone.waiting.clear()
                for t in waiting:
                    t.status = NOT_FOUND
                    t.reason = f"remote consumer {a} expired while the data waited for a receive"
                    post_complete(t)
            post(ctx.pe, ctx.deliver_consumer, (self, a, typ == T_CONSUMER_NEW))
            return True
        if typ == T_HELLO:
            if self.alive or not self.server_side:
                self.bad_input("unexpected hello")
                return False
            assert self.rx is not None
            name = bytes(self.rx[body:body + ln])
            if a != MAGIC or aux != VERSION:
                self.bad_input(f"hello with magic {a:#x} version {aux} (expected {MAGIC:#x} version {VERSION})")
                return False
            return cast("HelloServer", ctx).accept_hello(self, name, b, small)
        if typ == T_WELCOME:
            if self.alive or self.server_side or a != MAGIC:
                self.bad_input("unexpected welcome")
                return False
            if small:
                client = cast("RefusedClient", ctx)
                if not client.refusal_logged:
                    client.refusal_logged = True
                    logger.warning("comch: server %s refused the connection (%s); retrying",
                                   self.peer, error_name(small))
                self.die(small, None)
                return False
            self.max_send = min(self.max_send, b) if b else self.max_send
            if not _shm.adopt(cast("_shm.LinkedConnection", self)):
                return False
            if self.shm is not None:
                return False  # announced by the switch; the rest of the socket is nudges (adopt reset it)
            self.alive = True
            post(ctx.pe, ctx.deliver_conn, (self, True))
            return True
        return True  # unreachable: types are checked by parse_input

    def _data(self, cid: int, pid: int, imm_len: int, ln: int, body: int) -> int:
        """Land producer data in the consumer's next posted buffer; returns the ACK status."""
        c = self.consumers.get(cid)
        if c is None:
            return NOT_FOUND
        if c.state != RUNNING:
            return AGAIN  # starting: no receive posted yet (the producer waits for a credit)
        if imm_len > c.imm_data_len:
            if c.posted:  # the receive stays posted: give the producer side its credit back
                self.send_now(HDR.pack(T_CREDIT, 0, 0, 0, cid, 1))
            return TOO_BIG
        try:
            t = c.posted.popleft()
        except IndexError:
            return AGAIN
        n = ln - imm_len
        buf = t.buf
        assert buf is not None and self.mv is not None
        status = SUCCESS
        if n > buf.head + buf.len - buf.data - buf.data_len:
            status = TOO_BIG
        elif n:
            try:
                mm = buf.mmap
                assert mm is not None
                dst = device_view(mm, buf.data + buf.data_len, n, True)
                dst[:] = self.mv[body + imm_len: body + ln]
            except DocaError as exc:
                status = exc.code
        if status == SUCCESS:
            buf.data_len += n
            t.imm = bytes(self.mv[body: body + imm_len]) if imm_len else b""
            t.producer_id = pid
        t.status = status
        post_complete(t)  # its prebuilt item: no tuple per message
        return status

    def _send_acks(self) -> None:
        st, n = self.ack_status, self.ack_count
        self.ack_count = 0
        self.send_now(HDR.pack(T_ACK, st, 0, 0, n, 0))
