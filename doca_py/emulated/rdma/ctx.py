"""The emulated ``doca_rdma`` context: lifecycle, export/connect, RDMA-CM, receive matching, task allocation."""

from __future__ import annotations

import errno
import os
import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ...errors import (
    DocaBadState,
    DocaConnectionAborted,
    DocaError,
    DocaFull,
    DocaInvalidValue,
    DocaNotConnected,
    DocaNotFound,
    ErrorCode,
)
from ...log import logger
from .. import version as emu_version
from ..ctx import FLUSHED, TaskPool
from ..mmap import dev_key
from ..transport.shmring import usable as rings_usable
from ..transport.stream import Listener, Stream
from .config import (
    C_BROKEN, C_CLOSED, C_CONNECTING, C_ESTABLISHED, C_NEW, C_REQUESTED, DEFAULT_QUEUE_SIZE, EV_DISCONNECTION,
    EV_ESTABLISHED, EV_FAILURE, EV_REQUEST, ABORTED, BAD_STATE, IDLE, LOCAL_RW, RESET, RUNNING, STARTING, TIME_OUT,
    cfg, host_id, rnr_window,
)
from .wire import (
    ConnBlob, HELLO, HELLO_MAGIC, K_CM_REQUEST, K_CONNECT, REPLY, REPLY_MAGIC, VERSION,
    advertised, close_all, dial_peer, drop_data, pack_ip, serials, unpack_ip, used_keys, used_lock,
    decode_blob, encode_blob, unix_path,
)
from .connection import (CONNECTIONS_SINCE, EmuRdmaConnection, Fifo, fifo_retry, ignore_close, need_connections,
                         send_reply_and_close)
from .remote_tasks import EmuRdmaTaskAtomic, EmuRdmaTaskRead, EmuRdmaTaskWrite
from .task_alloc import RdmaTaskAlloc
from .tasks import EmuRdmaTaskReceive, EmuRdmaTaskSend
from .serve import SrvState, answer_and_close, req_closed, serve_stream, srv_closed, conn_responses
from . import ring_poll, shm
from .work import Work

# -- the context -------------------------------------------------------------------------------
class EmuRdma(RdmaTaskAlloc):
    """Emulated ``doca_rdma`` context."""

    def __init__(self, dev: object) -> None:
        super().__init__()
        self.dev = dev
        self.perms = LOCAL_RW
        self.transport = 0
        self.gid_index = 0
        self.max_conns = 1
        self.mtu = 3  # 2K, the MTU the software path reports
        self.recv_queue = DEFAULT_QUEUE_SIZE
        self.send_queue = DEFAULT_QUEUE_SIZE
        self.send_list_len = 1
        self.recv_list_len = 1
        self.grh = 1
        self.sl = 0
        self.rnr_retry = 7
        self.cm_timeout_ms = 5000
        self.retry_window = cfg.retry_window  # read again at start
        self.receive = TaskPool(self, EmuRdmaTaskReceive)
        self.send = TaskPool(self, EmuRdmaTaskSend)
        self.send_imm = TaskPool(self, EmuRdmaTaskSend)
        self.read = TaskPool(self, EmuRdmaTaskRead)
        self.write = TaskPool(self, EmuRdmaTaskWrite)
        self.write_imm = TaskPool(self, EmuRdmaTaskWrite)
        self.atomic_cmp_swp = TaskPool(self, EmuRdmaTaskAtomic)
        self.atomic_fetch_add = TaskPool(self, EmuRdmaTaskAtomic)
        self.lock = threading.Lock()
        self.rq = Fifo(self, self._run_rq)  # submitted receives, in order, until posted (Pe thread)
        self.posted: deque[EmuRdmaTaskReceive] = deque()
        self.stalled: deque[Stream] = deque()
        self.conns: list[EmuRdmaConnection] = []
        #: Keys of every connection this ctx made, over all its starts (a restarted ctx keeps its Unix socket path):
        #: a dial naming one no longer held is late (failed, released, restarted since), any other key forged.
        self.issued: set[bytes] = set()
        self.next_conn_id = 0
        self.listener: Listener | None = None
        self.unix: Listener | None = None  # same-host peers dial it (rings can be handed over on it)
        self.poller = ring_poll.RdmaPoller(self)
        self.cm_listeners: dict[int, Listener] = {}
        self.conn_cb: Callable[[int, EmuRdmaConnection], None] | None = None
        self.epoch = 0
        self.host = b""
        self.serial = next(serials)
        #: DOCA 3.x rules (RUNNING without a connection) or 2.6 (RUNNING after connect), chosen at start.
        self.v3 = True

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> int:
        if self.pe is None:
            raise DocaNotConnected("connect the ctx to a Pe before start")
        if self.state != IDLE:
            raise DocaBadState("ctx is not IDLE")
        try:
            listener = Listener(cfg.bind_addr, 0, self.accept_socket)
        except (OSError, ValueError) as exc:
            raise DocaError(f"cannot listen on {cfg.bind_addr!r}: {exc}", code=int(ErrorCode.OPERATING_SYSTEM)) \
                from None
        self.listener = listener
        self.unix = shm.listen(self) if cfg.shm and rings_usable() else None
        self.epoch += 1
        self.retry_window = cfg.retry_window
        self.host = host_id()
        self.v3 = emu_version.VERSION >= (3, 0)
        for pool in self.pools:
            pool.build()
        self._set_state(STARTING)
        if self.v3:  # 3.x: RUNNING on the next progress, connected or not ("ready to export and connect")
            assert self.pe is not None
            self.pe.post(self._to_running, self.epoch)
        return self.state

    def _to_running(self, epoch: int) -> None:
        """STARTING -> RUNNING, inside ``progress()``."""
        if epoch == self.epoch and self.state == STARTING:
            self._set_state(RUNNING, now=True)

    def _on_stop(self) -> None:
        claimed: list[Work] = []
        posted = self.posted
        with self.lock:
            while posted:  # one popleft at a time: the I/O thread pops receives without the lock
                try:
                    claimed.append(posted.popleft())
                except IndexError:
                    break
            self.stalled.clear()
            conns, self.conns = self.conns, []
        claimed.extend(self.rq.drop())
        for c in conns:
            claimed.extend(c.sq.drop())
            claimed.extend(self._close_conn(c))
        pe = self.pe
        assert pe is not None
        for t in claimed:
            t.status = FLUSHED
            pe.post_item(t.done)
        self._close_listeners()
        for lst in self.cm_listeners.values():
            lst.close()
        self.cm_listeners.clear()

    def _close_listeners(self) -> None:
        for lst in (self.listener, self.unix):
            if lst is not None:
                lst.close()
        self.listener = self.unix = None

    def _close_conn(self, c: EmuRdmaConnection) -> list[Work]:
        """Detach *c* from its streams (any thread); returns the tasks that waited on it."""
        claimed: list[Work] = []
        c.state = C_CLOSED
        req = c.req
        if req is not None:
            with req.lock:
                claimed.extend(c.pending)
                c.pending.clear()
            req.r.call(req.close)
        tx = c.tx
        if tx is not None:  # the rings are unmapped by the poller (Pe thread)
            done, rest = tx.claim()
            claimed.extend(rest)
            pe = self.pe
            for t, st in done:
                t.status = st
                if not st:
                    t.succeed()
                if pe is not None:
                    pe.post_item(t.done)
        srv_st = c.srv
        if srv_st is not None:
            # Wait (briefly) for the answers to leave: a process that exits right after stopping
            # its ctx would otherwise take its I/O thread, and the sender's acknowledgement, with it.
            answered = threading.Event()

            def close_answering() -> None:
                try:
                    answer_and_close(srv_st)
                finally:
                    answered.set()

            srv_st.r.call(close_answering)
            if not srv_st.r.on_thread():
                answered.wait(1.0)
        if c.cm_sock is not None:
            c.cm_sock.r.call(c.cm_sock.close)
        return claimed

    def destroy(self) -> None:
        super().destroy()
        self._close_listeners()
        self.poller.close()

    # -- export / connect ---------------------------------------------------------------------------
    def _new_conn(self) -> EmuRdmaConnection:
        if self.state not in (STARTING, RUNNING):
            raise DocaBadState("rdma connections are made after start (ctx STARTING or RUNNING)")
        with self.lock:
            if len(self.conns) >= self.max_conns:  # a failed connection holds its slot until disconnected (DOCA)
                dead = sum(1 for c in self.conns if c.state in (C_BROKEN, C_CLOSED))
                hint = (f"; {dead} of them failed: RdmaConnection.disconnect() releases a failed connection's slot"
                        if dead else "; set_max_num_connections (before start) allows more")
                raise DocaFull(f"all {self.max_conns} connection slot(s) of this ctx are held{hint}")
            c = EmuRdmaConnection(self, self.next_conn_id)
            self.next_conn_id += 1
            self.conns.append(c)
            self.issued.add(c.key)
        return c

    def export(self) -> tuple[bytes, EmuRdmaConnection]:
        if emu_version.VERSION < CONNECTIONS_SINCE and self.conns:
            raise need_connections("a second doca_rdma_export on one started ctx")
        c = self._new_conn()
        assert self.listener is not None
        c.blob = encode_blob(ConnBlob(0, self.host, os.getpid(), self.serial, c.id, c.key, self.perms,
                                      int(rnr_window(self.rnr_retry) * 1000), advertised(self.listener),
                                      self.listener.addr[1]))
        return c.blob, c

    def connect(self, blob: bytes, conn: Any) -> None:
        if not isinstance(conn, EmuRdmaConnection) or conn.ctx is not self:
            raise DocaInvalidValue("the connection was not exported by this rdma ctx")
        if self.state not in (STARTING, RUNNING):
            raise DocaBadState("connect needs a started rdma ctx")
        if conn.joined or conn.cm_addr is not None:
            raise DocaBadState("this connection is already connected (a new connection needs a new export)")
        if not blob:
            raise DocaInvalidValue("empty connection blob")
        b = decode_blob(bytes(blob))
        with used_lock:
            if b.key in used_keys:
                raise DocaConnectionAborted("this connection blob was already used for a connection (replayed)")
        if conn.peer_key is not None and conn.peer_key != b.key:
            raise DocaConnectionAborted("another peer already connected to this connection's export")
        if conn.state in (C_BROKEN, C_CLOSED):  # the peer connected to our export, then left: doca_rdma_connect
            conn.joined = True                     # only moves the local QP and succeeds; the tasks report the loss
            with used_lock:
                used_keys.add(b.key)
            return
        # Same host: dial the peer's Unix listener, which can hand over a shared-memory ring.
        unix = unix_path(b.pid, b.serial) if b.host == self.host and self.unix is not None else ""
        self.dial(conn, (b.ip, b.port), b.key, unix)
        conn.joined = True
        if not self.v3 and self.state == STARTING:  # 2.6: the next progress moves the ctx to RUNNING
            assert self.pe is not None
            self.pe.post(self._to_running, self.epoch)

    def dial(self, conn: EmuRdmaConnection, addr: tuple[str, int], peer_key: bytes, unix: str = "") -> None:
        """Open our request stream to the peer's listener and prove we hold its key (Pe thread)."""
        assert self.listener is not None
        family, ip = pack_ip(advertised(self.listener))
        hello = HELLO.pack(HELLO_MAGIC, VERSION, K_CONNECT, peer_key, conn.key, self.host, os.getpid(),
                            self.perms, int(rnr_window(self.rnr_retry) * 1000), conn.id, ip, self.listener.addr[1],
                            family)
        try:
            reply = dial_peer(addr, hello, cfg.connect_timeout, unix)
        except DocaConnectionAborted as exc:  # no listener, or it closed: the peer's ctx stopped or its process ended
            self._peer_gone(conn, peer_key, str(exc).split(": ", 1)[-1])
            return
        sock, (magic, version, status, phost, ppid, pperms, prnr), fds = reply
        if status in (BAD_STATE, RESET):
            close_all(sock, fds)
            self._peer_gone(conn, peer_key, "its ctx is not running" if status == BAD_STATE else
                            "its side of this connection failed or was disconnected")
            return
        if status:
            close_all(sock, fds)
            name = ErrorCode(status).name if status in ErrorCode._value2member_map_ else status
            raise DocaConnectionAborted(f"the peer refused the connection ({name})")
        with used_lock:
            used_keys.add(peer_key)
        st = Stream(sock, conn_responses(conn), req_closed(conn))
        with self.lock:
            if self.state not in (STARTING, RUNNING):
                close_all(sock, fds)
                raise DocaConnectionAborted("the ctx stopped while connecting")
            if conn.state in (C_BROKEN, C_CLOSED):
                # The peer accepted, then left before we got here. doca_rdma_connect only moves
                # the local QP, so it succeeds; the loss is reported by the connection's
                # callbacks and by its tasks, as it already was.
                close_all(sock, fds)
                return
            if fds:
                try:
                    shm.attach_tx(conn, fds)
                except DocaConnectionAborted:
                    sock.close()
                    raise
            conn.req = st
            conn.peer_key = peer_key
            conn.peer_host, conn.peer_pid, conn.peer_perms, conn.peer_rnr = phost, ppid, pperms, prnr / 1000.0
            conn.peer_addr = addr
            conn.same_host = phost == self.host
            if conn.state in (C_NEW, C_REQUESTED):
                conn.state = C_CONNECTING
            self._maybe_established(conn)
        st.start()

    def _peer_gone(self, conn: EmuRdmaConnection, peer_key: bytes, why: str) -> None:
        """The peer's side of *conn* is gone (its ctx stopped or restarted since it exported, or it released the
        connection): *conn* fails, as on hardware, where ``doca_rdma_connect`` only moves the local QP and succeeds
        (refusing it made reconnections under faults fail at random where DOCA does not)."""
        with used_lock:
            used_keys.add(peer_key)
        self.break_connection(conn, RESET, reason=f"the peer's side of the connection is gone ({why}): it "
                                                 f"stopped or released it before the connection was established")

    def _maybe_established(self, conn: EmuRdmaConnection) -> None:
        """Both streams up: the connection is established (ctx.lock held)."""
        if conn.req is not None and conn.srv is not None and conn.state in (C_NEW, C_CONNECTING, C_REQUESTED):
            conn.state = C_ESTABLISHED
            if conn.tx is not None or conn.rx is not None:
                self.poller.add(conn)
            pe = self.pe
            assert pe is not None
            pe.post(self._on_established, (conn, self.epoch))

    def _on_established(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        conn, epoch = arg
        if epoch != self.epoch or conn.state != C_ESTABLISHED:
            return
        if self.state == STARTING:  # a CM connection (2.6 rules; 3.x is RUNNING already)
            self._set_state(RUNNING, now=True)
        if self.conn_cb is not None:
            self.conn_cb(EV_ESTABLISHED, conn)
        if conn.state == C_ESTABLISHED:
            conn.run_sq()  # tasks that waited for the peer

    def window_expired(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        """The connect window of tasks waiting on *conn* ended (inside ``progress()``)."""
        conn, epoch = arg
        conn.window_armed = False
        if epoch != self.epoch or conn.state in (C_ESTABLISHED, C_BROKEN, C_CLOSED):
            return
        if not conn.sq.nready:
            return  # nothing waits (any more); the connection may still come up
        self.break_connection(conn, TIME_OUT, reason=f"the peer did not connect within the connect window "
                                            f"({cfg.connect_window:g} s, DOCA_PY_RDMA_CONNECT_WINDOW)")
        conn.run_sq()

    def _post_event(self, kind: int, conn: EmuRdmaConnection) -> None:
        pe = self.pe
        if pe is None or self.conn_cb is None:
            return
        pe.post(self._deliver_event, (kind, conn, self.epoch))

    def _deliver_event(self, arg: tuple[int, EmuRdmaConnection, int]) -> None:
        kind, conn, epoch = arg
        if epoch == self.epoch and self.conn_cb is not None and not self.destroyed:
            self.conn_cb(kind, conn)

    def break_connection(self, conn: EmuRdmaConnection, code: int, local: bool = False, reason: str = "") -> None:
        """The connection died (any thread): fail its waiting tasks, report it once."""
        with self.lock:
            if conn.state in (C_BROKEN, C_CLOSED) or conn.epoch != self.epoch:
                return
            was = conn.state
            conn.err = code
            conn.err_reason = reason or ("the connection was disconnected" if local else
                                         "the connection is down (the peer went away or failed)")
            conn.state = C_BROKEN
            for st in (conn.srv,):
                if st is not None and st in self.stalled:
                    self.stalled.remove(st)
        claimed = self._close_conn(conn)
        conn.state = C_BROKEN
        if not local:
            self._post_event(EV_DISCONNECTION if was == C_ESTABLISHED else EV_FAILURE, conn)
        pe = self.pe
        if pe is not None:
            for t in claimed:
                t.status = code
                t.reason = conn.err_reason
                pe.post_item(t.done)
            if conn.sq.tasks:
                pe.post(fifo_retry, conn.sq)  # the tasks not started yet fail too

    # -- accepting streams (I/O thread) -----------------------------------------------------------
    def accept_socket(self, sock: socket.socket) -> None:
        st = Stream(sock, self._handshake, ignore_close)
        st.start()

    def _handshake(self, st: Stream) -> None:
        if st.rend - st.rpos < HELLO.size:
            return
        fields = HELLO.unpack_from(st.rx, st.rpos)
        st.rpos += HELLO.size
        magic, version, kind, target, key, phost, ppid, pperms, prnr, pconn, pip, pport, pfam = fields
        status = 0
        conn: EmuRdmaConnection | None = None
        if magic != HELLO_MAGIC or version != VERSION or kind != K_CONNECT:
            status = ABORTED
        else:
            with self.lock:
                if self.state not in (STARTING, RUNNING):
                    status = int(ErrorCode.BAD_STATE)
                else:
                    conn = next((c for c in self.conns if c.key == target), None)
                    if (target in self.issued) if conn is None else conn.state in (C_BROKEN, C_CLOSED):
                        status, conn = RESET, None  # ours, but it failed or was released (a late dial)
                    elif conn is None:
                        status = ABORTED  # a key this ctx never issued
                    elif conn.srv is not None:
                        status = ABORTED  # replayed: the connection already has its peer
                    elif conn.peer_key is not None and conn.peer_key != key:
                        status = ABORTED  # not the peer we connected to
                    else:
                        conn.srv = st
                        conn.peer_key = key
                        conn.peer_host, conn.peer_pid, conn.peer_perms = phost, ppid, pperms
                        conn.peer_rnr = prnr / 1000.0
                        conn.same_host = phost == self.host
                        try:
                            conn.peer_addr = (unpack_ip(pfam, pip), pport)
                        except ValueError:
                            conn.peer_addr = None
                        st.ctx = SrvState(conn)
                        st.on_data = serve_stream
                        st.on_close = srv_closed
                        shm.offer_rx(conn, st)
                        self._maybe_established(conn)
                        # An RDMA-CM connection (cm_addr: set before its request leaves, unlike cm_sock, which
                        # a fast server's dial-back can beat) dials back; _cm_dial re-checks on the Pe thread.
                        if conn.req is None and conn.cm_addr is not None and self.pe is not None:
                            self.pe.post(self._cm_dial, (conn, self.epoch))
        try:
            shm.send_reply(conn, st, REPLY.pack(REPLY_MAGIC, VERSION, status, self.host, os.getpid(), self.perms,
                                                 int(rnr_window(self.rnr_retry) * 1000)), not status)
        except OSError:
            status = RESET
        if status:
            if conn is not None and conn.srv is st:
                conn.srv = None
            st.on_close = ignore_close
            st.close()
            return
        if st.rend > st.rpos:
            serve_stream(st)

    # -- RDMA-CM flow -------------------------------------------------------------------------------
    def start_listen_to_port(self, port: int) -> int:
        emu_version.require("doca_rdma_start_listen_to_port", CONNECTIONS_SINCE, "RDMA-CM; added after 2.6")
        if self.state not in (STARTING, RUNNING):
            raise DocaBadState("start_listen_to_port needs a started rdma ctx")
        if port in self.cm_listeners:
            raise DocaBadState(f"already listening on port {port}")
        try:
            lst = Listener(cfg.bind_addr, port, self._cm_accept)
        except OSError as exc:
            code = int(ErrorCode.IN_USE) if exc.errno == errno.EADDRINUSE else int(ErrorCode.OPERATING_SYSTEM)
            raise DocaError(f"cannot listen on port {port}: {exc.strerror}", code=code) from None
        actual = lst.addr[1]
        self.cm_listeners[port if port else actual] = lst
        return actual

    def stop_listen_to_port(self, port: int) -> None:
        emu_version.require("doca_rdma_stop_listen_to_port", CONNECTIONS_SINCE, "RDMA-CM; added after 2.6")
        lst = self.cm_listeners.pop(port, None)
        if lst is None:
            raise DocaNotFound(f"not listening on port {port}")
        lst.close()

    def _cm_accept(self, sock: socket.socket) -> None:
        st = Stream(sock, self._cm_request, ignore_close)
        st.start()

    def _cm_request(self, st: Stream) -> None:
        if st.rend - st.rpos < HELLO.size:
            return
        fields = HELLO.unpack_from(st.rx, st.rpos)
        st.rpos += HELLO.size
        magic, version, kind, _target, key, phost, ppid, pperms, prnr, _pconn, pip, pport, pfam = fields
        st.on_data = drop_data
        if magic != HELLO_MAGIC or version != VERSION or kind != K_CM_REQUEST:
            send_reply_and_close(st, ABORTED, self)
            return
        try:
            conn = self._new_conn()
            conn.peer_addr = (unpack_ip(pfam, pip), pport)
        except (DocaError, ValueError):
            send_reply_and_close(st, int(ErrorCode.FULL), self)
            return
        conn.state = C_REQUESTED
        conn.peer_key = key
        conn.cm_sock = st
        conn.cm_addr = (1 if pfam == 6 else 0, conn.peer_addr[0], pport)
        st.on_close = lambda s, code: self.break_connection(conn, ABORTED) if conn.state == C_REQUESTED else None
        pe = self.pe
        assert pe is not None
        if self.conn_cb is None:
            pe.post(self._auto_accept, (conn, self.epoch))  # no request callback: accept
            return
        self._post_event(EV_REQUEST, conn)

    def _auto_accept(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        conn, epoch = arg
        if epoch == self.epoch and conn.state == C_REQUESTED:
            try:
                conn.accept(None)
            except DocaError as exc:
                logger.warning("rdma: accepting a connection request failed: %s", exc)

    def _cm_dial(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        """CM client: the server accepted (it dialed us); dial it back (Pe thread)."""
        conn, epoch = arg
        if epoch != self.epoch or conn.state != C_CONNECTING or conn.req is not None or conn.peer_addr is None \
                or conn.peer_key is None:
            return
        try:
            self.dial(conn, conn.peer_addr, conn.peer_key)
        except DocaError as exc:
            logger.debug("rdma: CM dial-back failed: %s", exc)
            self.break_connection(conn, ABORTED)

    def connect_to_addr(self, addr_type: int, address: str, port: int) -> EmuRdmaConnection:
        """RDMA-CM client: ask a listening peer for a connection; the result comes by callback."""
        emu_version.require("doca_rdma_connect_to_addr", CONNECTIONS_SINCE, "RDMA-CM; added after 2.6")
        if self.state not in (STARTING, RUNNING):
            raise DocaBadState("connect_to_addr needs a started rdma ctx")
        conn = self._new_conn()
        conn.state = C_CONNECTING
        conn.cm_addr = (addr_type, address, port)
        assert self.listener is not None
        family, ip = pack_ip(advertised(self.listener))
        hello = HELLO.pack(HELLO_MAGIC, VERSION, K_CM_REQUEST, bytes(16), conn.key, self.host, os.getpid(),
                            self.perms, int(rnr_window(self.rnr_retry) * 1000), conn.id, ip, self.listener.addr[1],
                            family)
        timeout = min(cfg.connect_timeout, self.cm_timeout_ms / 1000.0) if self.cm_timeout_ms else \
            cfg.connect_timeout
        try:
            sock = socket.create_connection((address, port), timeout=timeout)
        except OSError as exc:
            logger.debug("rdma connect_to_addr %s:%d failed: %s", address, port, exc)
            self.break_connection(conn, ABORTED)
            return conn
        try:
            sock.sendall(hello)
        except OSError as exc:  # the listener went away meanwhile
            sock.close()
            logger.debug("rdma connect_to_addr %s:%d failed: %s", address, port, exc)
            self.break_connection(conn, ABORTED)
            return conn
        st = Stream(sock, self._cm_reply, lambda s, code: self._cm_lost(conn))
        st.ctx = conn
        conn.cm_sock = st
        st.start()
        epoch = self.epoch
        r = st.r
        r.call(lambda: r.call_later(timeout, lambda: self._cm_timeout(conn, epoch)))
        return conn

    def _cm_reply(self, st: Stream) -> None:
        if st.rend - st.rpos < REPLY.size:
            return
        magic, version, status, *_ = REPLY.unpack_from(st.rx, st.rpos)
        st.rpos += REPLY.size
        conn: EmuRdmaConnection = st.ctx
        st.on_close = ignore_close
        st.close()
        if magic != REPLY_MAGIC or status:
            self.break_connection(conn, ABORTED)

    def _cm_lost(self, conn: EmuRdmaConnection) -> None:
        if conn.state in (C_CONNECTING, C_NEW) and conn.srv is None:
            self.break_connection(conn, ABORTED)

    def _cm_timeout(self, conn: EmuRdmaConnection, epoch: int) -> None:
        if epoch == self.epoch and conn.state == C_CONNECTING:
            self.break_connection(conn, TIME_OUT)

    # -- receive matching (I/O thread and Pe thread) -------------------------------------------------
    def _run_rq(self) -> None:
        """Post the queued receives in submission order (Pe thread, inside ``progress()``)."""
        q = self.rq
        while True:
            t = q.head()
            if t is None:
                return
            q.pop(t)
            t.go()

    def resume_stalled(self) -> None:
        while True:
            with self.lock:
                if not self.stalled or not self.posted:
                    return
                st = self.stalled.popleft()
            srv: SrvState = st.ctx
            srv.stall_token += 1
            st.resume()


def rdma_create(dev: object) -> EmuRdma:
    """``doca_rdma_create``."""
    r = EmuRdma(dev)
    r.dev_key = dev_key(dev) if hasattr(dev, "devinfo") else ""  # type: ignore[arg-type]
    return r
