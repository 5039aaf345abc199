"""The emulated comch server and client, and the ctx bases they share with consumers and producers."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from ...errors import (
    DocaBadState,
    DocaInUse,
    DocaInvalidValue,
    DocaNotConnected,
    DocaNotSupported,
    DocaOperatingSystem,
    error_name,
)
from ...log import logger
from .. import version as emu_version
from ..ctx import FLUSHED, EmuCtx, TaskPool
from ..pe import Lane
from ..dev import EmuDev
from ..transport.reactor import reactor
from .wire import (
    HDR,
    HDR_SIZE,
    MAGIC,
    T_HELLO,
    T_MSG,
    T_WELCOME,
    VERSION,
    NameLock,
    is_refused,
    socket_path,
)
from .config import (
    DEFAULT_RECV_QUEUE_SIZE, MAX_CLIENTS, MAX_MSG_SIZE, MAX_RECV_QUEUE_SIZE, BAD_STATE, FULL, IDLE, MSG_HDRS,
    PEERCRED, RUNNING, STARTING, STOPPING, SUCCESS, shm_enabled,
)
from .connection import EmuComchConnection
from .tasks import EmuComchTaskSend
from .common import check_name, connection_lost, post
from . import shm as _shm
from .caps import cap_client_is_supported, cap_server_is_supported

# -- contexts -------------------------------------------------------------------------------------
class OrderedCtx(EmuCtx):
    """A comch ctx (its tasks are :class:`_OrderedTask`); a consumer's or producer's tasks form one queue."""

    def __init__(self) -> None:
        super().__init__()
        self.lane = Lane()


class Sender(OrderedCtx):
    """A ctx whose tasks queue frames on connections and flush them once per batch."""

    def __init__(self) -> None:
        super().__init__()
        self.dirty: set[EmuComchConnection] = set()
        self.flush_posted = False


def _no_wrap(conn: EmuComchConnection) -> object:
    return conn


class Endpoint(Sender):
    """What the server and the client share: send tasks, messages and consumer events."""

    dev: EmuDev

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.name_raw = check_name(name)
        self.send = TaskPool(self, EmuComchTaskSend)
        self.max_msg_size = MAX_MSG_SIZE
        self.recv_queue_size = DEFAULT_RECV_QUEUE_SIZE
        self.r = reactor()
        self.wrap: Callable[[EmuComchConnection], object] = _no_wrap
        self.poller: _shm.CommPoller | None = None  # the ring connections its Pe polls
        self.cbs: dict[str, Callable[..., None] | None] = dict.fromkeys(
            ("msg_recv", "connect", "disconnect", "new_consumer", "expired_consumer"))

    # -- configuration ---------------------------------------------------------------------------
    def set_max_msg_size(self, value: int) -> None:
        self._configurable("set_max_msg_size")
        if not 0 < value <= MAX_MSG_SIZE:
            raise DocaInvalidValue(f"max_msg_size must be 1..{MAX_MSG_SIZE}, got {value}")
        self.max_msg_size = value

    def get_max_msg_size(self) -> int:
        return self.max_msg_size

    def set_recv_queue_size(self, value: int) -> None:
        self._configurable("set_recv_queue_size")
        if not 0 < value <= MAX_RECV_QUEUE_SIZE:
            raise DocaInvalidValue(f"recv_queue_size must be 1..{MAX_RECV_QUEUE_SIZE}, got {value}")
        self.recv_queue_size = value

    def get_recv_queue_size(self) -> int:
        return self.recv_queue_size

    def set_wrap(self, wrap: Callable[[Any], object]) -> None:
        self.wrap = wrap

    def set_event_cb(self, kind: str, cb: Callable[..., None] | None) -> None:
        self._configurable(f"register the {kind} event")
        if kind not in self.cbs:
            raise DocaInvalidValue(f"unknown comch event {kind!r}")
        self.cbs[kind] = cb

    # -- tasks -----------------------------------------------------------------------------------
    def task_send_alloc_init(self, conn: Any, data: Any) -> EmuComchTaskSend:
        if conn.__class__ is not EmuComchConnection or conn.ctx is not self:
            raise DocaInvalidValue("the connection does not belong to this comch ctx")
        if data.__class__ is bytes:
            n = len(data)
        else:
            with memoryview(data) as mv:
                data = mv.tobytes()
            n = len(data)
        if n > conn.max_send:
            raise DocaInvalidValue(f"message of {n} bytes exceeds the connection's max_msg_size {conn.max_send}")
        if conn.closed or not conn.alive:
            raise DocaNotConnected("the connection is closed")
        t: EmuComchTaskSend = self.send.alloc()  # type: ignore[assignment]
        t.conn = conn
        hdr = MSG_HDRS.get(n)
        if hdr is None:
            hdr = MSG_HDRS[n] = HDR.pack(T_MSG, 0, 0, n, 0, 0)
        t.frame = hdr + data
        t.flen = len(t.frame)
        return t

    # -- events (Pe thread) -----------------------------------------------------------------------
    def _owner(self, conn: EmuComchConnection) -> object:
        o = conn.owner
        if o is None:
            o = conn.owner = self.wrap(conn)
        return o

    def deliver_msgs(self, arg: tuple[EmuComchConnection, bytearray, list[int]]) -> None:
        conn, data, lens = arg
        done = 0
        cb = self.cbs["msg_recv"]
        try:
            if cb is None or self.state != RUNNING or self.destroyed:
                done = len(data)
                return
            owner = self._owner(conn)
            pos, i, count = 0, 0, len(lens)
            with memoryview(data) as mv:
                try:
                    for ln in lens:
                        pos += HDR_SIZE
                        m = mv[pos:pos + ln]
                        pos += ln
                        i += 1
                        try:
                            cb(m, owner)
                        finally:
                            m.release()
                finally:
                    done = pos
                    if i < count:  # a callback raised: the rest is delivered on the next progress
                        self.pe.post(self.deliver_msgs, (conn, data[pos:], lens[i:]))  # type: ignore[union-attr]
        finally:
            conn.delivered_bytes(done)

    def deliver_consumer(self, arg: tuple[EmuComchConnection, int, bool]) -> None:
        conn, cid, new = arg
        cb = self.cbs["new_consumer" if new else "expired_consumer"]
        if cb is not None and not self.destroyed and self.state in (RUNNING, STOPPING):
            cb(self._owner(conn), cid)

    def deliver_conn(self, arg: tuple[EmuComchConnection, bool]) -> None:
        """Connection up or down (the server's status callbacks; the client's state)."""
        raise NotImplementedError

    def conn_gone(self, conn: EmuComchConnection) -> None:
        """A connection was torn down (I/O thread)."""
        raise NotImplementedError


class EmuComchServer(Endpoint):
    """Emulated ``doca_comch_server``: listens for clients of one host function."""

    def __init__(self, dev: Any, rep: Any, name: str) -> None:
        super().__init__(name)
        info = dev.devinfo
        if not cap_server_is_supported(info):
            raise DocaNotSupported(f"device {info.pci_addr_str()} cannot run a comch server "
                                   "(servers run on the DPU device, which lists host representors)")
        self.dev, self.rep = dev, rep
        self.key = rep.devinfo_rep.pci_addr_str()
        self.path = ""
        self.name_lock: NameLock | None = None
        self.lsock: socket.socket | None = None
        self.lmask = 0
        self.conns: set[EmuComchConnection] = set()  # accepted and not torn down (I/O thread)

    def _on_start(self) -> None:
        path = socket_path(self.key, self.name)
        lock = NameLock(path, self.name)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        try:
            try:
                os.unlink(path)  # a dead server's socket (we hold the name lock)
            except FileNotFoundError:
                pass
            s.bind(path)
            s.listen(128)
        except OSError as exc:
            s.close()
            lock.release(path)
            raise DocaOperatingSystem(f"cannot listen on {path}: {exc.strerror}") from None
        self.path, self.name_lock, self.lsock = path, lock, s
        self.r.call_soon(lambda: self._listen(s))

    def _listen(self, s: socket.socket) -> None:
        if self.lsock is s:
            self.lmask = self.r.set_mask(s, 0, 1, lambda mask: self._accept(s))

    def _accept(self, s: socket.socket) -> None:
        while True:
            try:
                c, _ = s.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                logger.warning("comch server %r: accept failed: %s", self.name, exc.strerror)
                return
            try:
                pid = PEERCRED.unpack(c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, PEERCRED.size))[0]
            except OSError:
                pid = 0
            conn = EmuComchConnection(self, True, f"{self.name!r}<-pid {pid}")
            self.conns.add(conn)
            conn.attach(c)

    def accept_hello(self, conn: EmuComchConnection, name: bytes, peer_max: int, flags: int) -> bool:
        """A client introduced itself (I/O thread); answer and report the connection. *flags* 1: it
        offered rings (:mod:`.shm`)."""
        if name != self.name_raw:
            conn.bad_input(f"hello for server {name!r}, this is {self.name_raw!r}")
            return False
        status = SUCCESS
        if self.state != RUNNING:
            status = BAD_STATE
        elif sum(1 for c in self.conns if c.alive) >= MAX_CLIENTS:
            status = FULL
        welcome = HDR.pack(T_WELCOME, status, VERSION, 0, MAGIC, self.max_msg_size)
        if peer_max:
            conn.max_send = min(conn.max_send, peer_max)
        ringed: bool | None = None
        if flags & 1 and not status:
            ringed = _shm.accept(conn, welcome)
            if ringed is False:
                return False
        else:
            for fd in conn.fds_in:
                os.close(fd)
            conn.fds_in = []
        if not ringed:
            conn.send_now(welcome)
        if status:
            logger.info("comch server %r: refused %s (%s)", self.name, conn.peer, error_name(status))
            conn.die(status, None)
            return False
        if ringed:
            return False  # up and announced by the switch; the rest of the socket is nudges (accept reset it)
        conn.alive = True
        post(self.pe, self.deliver_conn, (conn, True))
        return True

    def deliver_conn(self, arg: tuple[EmuComchConnection, bool]) -> None:
        conn, up = arg
        cb = self.cbs["connect" if up else "disconnect"]
        if cb is not None and not self.destroyed:
            cb(self._owner(conn), True)

    def conn_gone(self, conn: EmuComchConnection) -> None:
        self.conns.discard(conn)
        if conn.alive:
            post(self.pe, self.deliver_conn, (conn, False))

    def _unlisten(self, s: socket.socket) -> None:
        if self.lmask:
            try:
                self.r.sel.unregister(s)
            except (KeyError, ValueError):
                pass
            self.lmask = 0
        s.close()

    def _on_stop(self) -> None:
        s, self.lsock = self.lsock, None
        if self.name_lock is not None:
            self.name_lock.release(self.path)
            self.name_lock = None
        if s is not None:
            self.r.call_soon(lambda: self._unlisten(s))
        for c in list(self.conns):
            c.close_local()

    def disconnect(self, conn: Any) -> None:
        emu_version.require("doca_comch_server_disconnect", (3, 0),
                            "DOCA 2.6's server cannot close a connection: its client disconnects by stopping")
        if not isinstance(conn, EmuComchConnection) or conn.ctx is not self:
            raise DocaInvalidValue("the connection does not belong to this server")
        if conn.users:
            raise DocaInUse(f"{len(conn.users)} consumer(s)/producer(s) still use this connection; "
                            "destroy them first")
        if conn.closed:
            raise DocaNotConnected("the connection is already closed")
        conn.close_local()

    def get_connections(self) -> list[EmuComchConnection]:
        return [c for c in list(self.conns) if c.alive and not c.closed]


class EmuComchClient(Endpoint):
    """Emulated ``doca_comch_client``: connects to the named server of its host function."""

    def __init__(self, dev: Any, name: str) -> None:
        super().__init__(name)
        info = dev.devinfo
        if not cap_client_is_supported(info):
            raise DocaNotSupported(f"device {info.pci_addr_str()} cannot run a comch client "
                                   "(clients run on the host device)")
        self.dev = dev
        self.key = info.pci_addr_str()
        self.path = ""
        self.conn: EmuComchConnection | None = None
        self.backoff = 0.002
        self.refusal_logged = False

    def start(self) -> int:
        if self.pe is None:
            raise DocaNotConnected("connect the ctx to a Pe before start")
        if self.state != IDLE:
            raise DocaBadState(f"ctx is in state {self.state}, not IDLE")
        self.path = socket_path(self.key, self.name)
        for pool in self.pools:
            pool.build()
        self.backoff = 0.002
        self.refusal_logged = False
        self._set_state(STARTING)
        self.r.call_soon(self._dial)
        return self.state

    def _dial(self) -> None:
        """Try to reach the server (I/O thread); retried with back-off while STARTING."""
        if self.state != STARTING or (self.conn is not None and not self.conn.torn_down):
            return
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        try:
            s.connect(self.path)
        except OSError as exc:
            s.close()
            if not is_refused(exc):
                logger.warning("comch client %r: cannot connect to %s: %s", self.name, self.path, exc.strerror)
            self._retry()
            return
        conn = EmuComchConnection(self, False, f"{self.name!r}->{self.path}")
        self.conn = conn
        conn.attach(s)
        ln, mx = len(self.name_raw), self.max_msg_size
        # small=1: rings offered (their descriptors ride with the HELLO)
        if not (shm_enabled() and _shm.offer(conn, HDR.pack(T_HELLO, 1, VERSION, ln, MAGIC, mx) + self.name_raw)):
            conn.send_now(HDR.pack(T_HELLO, 0, VERSION, ln, MAGIC, mx) + self.name_raw)

    def _retry(self) -> None:
        delay, self.backoff = self.backoff, min(self.backoff * 2, 0.1)
        self.r.call_later(delay, self._dial)

    def deliver_conn(self, arg: tuple[EmuComchConnection, bool]) -> None:
        conn, up = arg
        if up and self.state == STARTING and self.conn is conn and not conn.closed:
            self._set_state(RUNNING)

    def conn_gone(self, conn: EmuComchConnection) -> None:
        if self.conn is not conn:
            return
        if not conn.alive:
            if self.state == STARTING:
                self._retry()
            return
        post(self.pe, self._lost, conn)

    def _lost(self, conn: EmuComchConnection) -> None:
        """The server went away: STOPPING, then IDLE once every task is freed."""
        # Also while STARTING: the drop may overtake the event that would have made it RUNNING.
        if self.conn is not conn or self.state not in (RUNNING, STARTING):
            return
        self.flush_status = conn.loss or FLUSHED  # sends launched from now on fail as the connection did
        self.stopped_by(connection_lost(self.flush_status))
        self._set_state(STOPPING)
        self._maybe_idle()

    def _on_stop(self) -> None:
        self.r.call_soon(self._close_conn)

    def _close_conn(self) -> None:
        c = self.conn
        if c is not None:
            c.close_local()

    def get_connection(self) -> EmuComchConnection:
        c = self.conn
        if self.state != RUNNING or c is None or not c.alive:
            raise DocaBadState("the client has no connection until its ctx is RUNNING")
        return c


def server_create(dev: Any, rep: Any, name: str) -> EmuComchServer:
    """``doca_comch_server_create``."""
    return EmuComchServer(dev, rep, name)


def client_create(dev: Any, name: str) -> EmuComchClient:
    """``doca_comch_client_create``."""
    return EmuComchClient(dev, name)
