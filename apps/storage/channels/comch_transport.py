"""Control channel over a comch client/server connection (storage-apps-spec §3.1).

The initiator is a comch **client** and the services are comch **servers**; control
messages travel as comch control messages, **one whole frame** (the u32 BE body length
plus the body) per message, as the C++ apps send them. Received messages are appended
to the same reassembly buffer as TCP bytes, so the framing is parsed exactly as on TCP
([`FrameDecoder`][apps.storage.channels.control_channel.FrameDecoder]).

`ComchTransport` implements [`Transport`][apps.storage.channels.control_channel.Transport] on a
[`doca_py.ComchClient`][doca_py.comch.ComchClient] or [`doca_py.ComchServer`][doca_py.comch.ComchServer]:

* ``send(frame)`` submits one comch send task (a pool of
  `MAX_CONCURRENT_CONTROL_MESSAGES` = 8 as in the reference). The frame leaves at
  the next ``Pe.progress()`` of the transport's PE (any `pump`).
  A frame larger than one comch message is refused with ``INVALID_VALUE``.
* ``pump(timeout)`` progresses the PE (sleeping on its notification handle, never
  spinning) and delivers received frames, then a peer disconnect, to the sink. The comch
  callbacks only record; delivery happens after ``Pe.progress()`` returns, so a
  malformed frame raises `ProtocolError` from ``pump``,
  not from inside the PE.
* The peer disconnecting (client: the ctx leaves RUNNING; server: the disconnect event
  of this connection) or a send failing with ``CONNECTION_RESET`` is delivered as
  ``connection_lost``; the channel then raises
  `PeerClosedError` once the messages already received
  have been taken.

It also records the peer's **consumer events** (the data path of §8 pairs workers by
the order in which they arrive): `ComchTransport.remote_consumer_ids` (arrival
order), `ComchTransport.expired_consumer_ids`, and the optional hooks
`ComchTransport.on_new_consumer` / `ComchTransport.on_expired_consumer`,
called from ``pump`` (outside the PE callbacks).

A server serves **one** client, the first whose first message is a well-formed
``query_storage_request``, as the storage target chooses its requester: until then every
connected client waits side by side (at most `MAX_PENDING_CLIENTS`; one more pushes out the
one that has waited longest), so a client that connects and says nothing never keeps the
initiator out. A client whose first message is anything else is disconnected, and so are the
others once the session has started, and any later one (WARNING each, `ComchTransport.refused_clients`).

The helpers `connect_comch_client` (initiator) and `listen_comch_server`
(services; exactly one client) build everything and return the channel plus the comch
objects, which the caller owns and closes (after the channel). Producers and consumers
are created by the caller on the returned connection.

Everything here runs on the thread that progresses *pe* (a ``Pe`` is single-threaded).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import doca_py
from doca_py.comch import ComchClient, ComchConnection, ComchServer, ComchTaskSend
from doca_py.errors import DocaAlreadyExist, DocaError, DocaInvalidValue, DocaNoMemory, ErrorCode
from doca_py.types import CtxState

from apps.storage.channels.control_channel import ControlChannel, TransportSink
from apps.storage.wire.control import HEADER_SIZE, PREFIX_SIZE, MessageType
from apps.common.errors import PeerClosedError, StorageAppError
from apps.common.runtime.doca_features import doca_features

__all__ = ["ComchTransport", "connect_comch_client", "listen_comch_server", "MAX_CONCURRENT_CONTROL_MESSAGES",
           "CONNECT_POLL_INTERVAL", "SEND_POOL_TIMEOUT", "MAX_PENDING_CLIENTS"]

MAX_CONCURRENT_CONTROL_MESSAGES = 8
"""Send tasks of the control channel (``max_concurrent_control_messages`` of the reference)."""
CONNECT_POLL_INTERVAL = 0.1
"""Longest sleep between checks while connecting / waiting for a client (and for aborts)."""
SEND_POOL_TIMEOUT = 5.0
"""How long `ComchTransport.send` waits for a free send task before failing."""
MAX_PENDING_CLIENTS = 64
"""Comch clients a server keeps waiting for their first message at once."""
#: The one frame that starts a session: ``query_storage_request`` (no payload), any ids.
_SESSION_START_HEAD = PREFIX_SIZE.to_bytes(HEADER_SIZE, "big") + int(MessageType.QUERY_STORAGE_REQUEST).to_bytes(4, "big")
_SESSION_START_SIZE = HEADER_SIZE + PREFIX_SIZE

_log = logging.getLogger("apps.storage.comch")

#: ``hook(remote_consumer_id)``.
ConsumerHook = Callable[[int], None]


class ComchTransport:
    """A [`Transport`][apps.storage.channels.control_channel.Transport] over one comch connection.

    Build it on an **idle** client or server (it registers the send task pool, the
    message and consumer events, and on a server the connection events), connected to
    *pe*; then start the ctx and `attach` the connection (the helpers do all this).
    """

    def __init__(self, ctx: ComchClient | ComchServer, pe: doca_py.Pe, *, name: str = "comch",
                 send_tasks: int = MAX_CONCURRENT_CONTROL_MESSAGES) -> None:
        self.ctx = ctx
        self.pe = pe
        self.name = name
        self._conn: ComchConnection | None = None
        self._sink: TransportSink | None = None
        self._inbox: list[bytes] = []
        self._lost = False  # the loss was seen (not yet necessarily delivered)
        self._lost_exc: BaseException | None = None
        self._lost_delivered = False
        self._sink_deliveries = 0
        self._closed = False
        self._ever_running = False
        self._is_client = isinstance(ctx, ComchClient)
        self._inflight = 0
        self._candidates: dict[ComchConnection, None] = {}  # server: clients before their first message
        self._to_refuse: list[tuple[ComchConnection, str]] = []
        self._pending_new: list[int] = []
        self._pending_expired: list[int] = []
        #: Remote consumer ids in the order their "new consumer" events arrived.
        self.remote_consumer_ids: list[int] = []
        #: Remote consumer ids whose "expired consumer" event arrived.
        self.expired_consumer_ids: list[int] = []
        #: Called from `pump` for each new / expired remote consumer.
        self.on_new_consumer: ConsumerHook | None = None
        self.on_expired_consumer: ConsumerHook | None = None
        #: Clients refused because this server already serves one (server side).
        self.refused_clients = 0
        # DOCA 2.6 has no doca_comch_server_disconnect: there a refused client stays connected (ignored) and
        # closing leaves the client to disconnect.
        self._can_disconnect = doca_features().comch_server_disconnect
        ctx.task_send_set_conf(self._sent, self._send_failed, send_tasks)
        ctx.event_msg_recv_register(self._on_msg)
        ctx.event_consumer_register(self._on_new_consumer, self._on_expired_consumer)
        if isinstance(ctx, ComchServer):
            ctx.event_connection_status_changed_register(self._on_connect, self._on_disconnect)

    # -- comch callbacks (inside Pe.progress: record only) ---------------------------------------
    def _sent(self, task: ComchTaskSend, user_data: object, ctx_user_data: object) -> None:
        self._inflight -= 1
        task.free()

    def _send_failed(self, task: ComchTaskSend, user_data: object, ctx_user_data: object) -> None:
        self._inflight -= 1
        status = task.get_status()
        task.free()
        if not self._lost:
            self._lost = True
            self._lost_exc = StorageAppError(status, f"sending a control message failed: {status.name}")

    def _ours(self, conn: ComchConnection) -> bool:
        """Whether an event of *conn* is for this channel. A client has one connection, which
        may deliver messages in the same progress call that makes the ctx RUNNING."""
        if self._conn is None and self._is_client:
            self._conn = conn
        return conn is self._conn

    def _on_msg(self, msg: memoryview, conn: ComchConnection) -> None:
        if self._ours(conn):
            self._inbox.append(bytes(msg))
        elif conn in self._candidates:
            del self._candidates[conn]
            if len(msg) == _SESSION_START_SIZE and bytes(msg[:len(_SESSION_START_HEAD)]) == _SESSION_START_HEAD:
                self._conn = conn  # the session: its first message is the first of the channel
                self._inbox.append(bytes(msg))
                self._to_refuse += [(c, "the session with another client has started") for c in self._candidates]
                self._candidates.clear()
            else:
                self._to_refuse.append((conn, f"its first message ({len(msg)} bytes) is not a query_storage_request"))

    def _on_new_consumer(self, conn: ComchConnection, consumer_id: int) -> None:
        if self._ours(conn):
            self._pending_new.append(consumer_id)

    def _on_expired_consumer(self, conn: ComchConnection, consumer_id: int) -> None:
        if self._ours(conn):
            self._pending_expired.append(consumer_id)

    def _on_connect(self, conn: ComchConnection, ok: bool) -> None:
        if not ok:
            return
        if self._conn is None:
            self._candidates[conn] = None  # at once: its first message may follow in this progress call
            if len(self._candidates) > MAX_PENDING_CLIENTS:
                oldest = next(iter(self._candidates))
                del self._candidates[oldest]
                self._to_refuse.append((oldest, f"the longest-waiting of {MAX_PENDING_CLIENTS + 1} clients without a "
                                                f"first message made room for a new one"))
        elif conn is not self._conn:
            self._to_refuse.append((conn, "this service serves one initiator"))

    def _on_disconnect(self, conn: ComchConnection, ok: bool) -> None:
        if conn is self._conn and not self._lost:
            self._lost = True
        self._candidates.pop(conn, None)

    # -- state ----------------------------------------------------------------------------------------
    @property
    def connection(self) -> ComchConnection | None:
        """The attached connection (``None`` until the client is RUNNING / a client sent its
        ``query_storage_request``)."""
        return self._conn

    @property
    def unanswered(self) -> bool:
        """Whether the connection was lost because a control send failed with ``IO_FAILED``: the peer did
        not answer within the transport's retry window (stopped, hung or cut off), not that it closed."""
        exc = self._lost_exc
        return isinstance(exc, StorageAppError) and exc.code == ErrorCode.IO_FAILED

    @property
    def is_connected(self) -> bool:
        """Whether a connection is attached and no disconnect has been seen."""
        return self._conn is not None and not self._lost and not self._closed

    @property
    def max_frame_size(self) -> int:
        """Largest frame (header + body) this side sends in one comch message."""
        return self.ctx.get_max_msg_size()

    def attach(self, connection: ComchConnection) -> None:
        """Use *connection* for this channel (done by the helpers)."""
        self._conn = connection
        if isinstance(self.ctx, ComchClient):
            self._ever_running = True

    def _check_state(self) -> None:
        """After progress: turn a client leaving RUNNING into a loss; handle new clients."""
        ctx = self.ctx
        if isinstance(ctx, ComchClient):
            if ctx.get_state() == CtxState.RUNNING:
                self._ever_running = True
            elif self._ever_running and not self._lost:
                self._lost = True
            return
        refuse, self._to_refuse = self._to_refuse, []
        for conn, why in refuse:
            # One client only (the services serve one initiator): refuse the others.
            if not conn.is_connected():
                continue
            self.refused_clients += 1
            _log.warning("%s: refusing a comch client: %s", self.name, why)
            if not self._can_disconnect:
                continue
            try:
                ctx.disconnect(conn)
            except DocaError as exc:
                _log.debug("%s: could not disconnect the client: %s", self.name, exc)

    def _deliver(self) -> bool:
        """Hand recorded events to their receivers; whether anything was delivered."""
        got = False
        while self._pending_new or self._pending_expired:
            new, self._pending_new = self._pending_new, []
            for cid in new:
                self.remote_consumer_ids.append(cid)
                if self.on_new_consumer is not None:
                    self.on_new_consumer(cid)
            expired, self._pending_expired = self._pending_expired, []
            for cid in expired:
                self.expired_consumer_ids.append(cid)
                if self.on_expired_consumer is not None:
                    self.on_expired_consumer(cid)
            got = True
        sink = self._sink
        if sink is None:
            return got
        while self._inbox:
            data = self._inbox.pop(0)
            got = True
            self._sink_deliveries += 1
            sink.data_received(data)
        if self._lost and not self._lost_delivered:
            self._lost_delivered = True
            got = True
            self._sink_deliveries += 1
            sink.connection_lost(self._lost_exc)
        return got

    def progress(self) -> bool:
        """Progress the PE once (non-blocking) and deliver what it produced."""
        ran = self.pe.progress()
        self._check_state()
        return self._deliver() or ran

    # -- Transport -------------------------------------------------------------------------------------
    def set_sink(self, sink: TransportSink) -> None:
        """Where `pump` delivers frames and the disconnect."""
        self._sink = sink

    def send(self, frame: bytes) -> None:
        """Queue one whole *frame* as one comch message (it leaves at the next progress).

        Raise `PeerClosedError` when the connection is gone, ``INVALID_VALUE`` for a
        frame larger than a comch message, ``TIME_OUT`` when no send task frees up.
        """
        conn = self._conn
        if self._closed or conn is None:
            raise PeerClosedError(f"{self.name}: control connection is closed")
        if self._lost:
            raise PeerClosedError(f"{self.name}: control connection closed by the peer")
        limit = self.max_frame_size
        if len(frame) > limit:
            raise StorageAppError(ErrorCode.INVALID_VALUE,
                                  f"{self.name}: control frame of {len(frame)} bytes does not fit in one comch "
                                  f"message (at most {limit} bytes)")
        deadline = time.monotonic() + SEND_POOL_TIMEOUT
        while True:
            try:
                task = self.ctx.task_send_alloc_init(conn, frame)
                break
            except DocaNoMemory:
                # All send tasks are in flight: let some complete.
                if time.monotonic() >= deadline:
                    raise StorageAppError(ErrorCode.TIME_OUT, f"{self.name}: no control send task became free "
                                                              f"within {SEND_POOL_TIMEOUT} s") from None
                self._wait(min(CONNECT_POLL_INTERVAL, max(0.0, deadline - time.monotonic())))
                if self._lost:
                    raise PeerClosedError(f"{self.name}: control connection closed by the peer") from None
            except DocaInvalidValue as exc:
                raise StorageAppError(ErrorCode.INVALID_VALUE,
                                      f"{self.name}: control frame of {len(frame)} bytes refused: {exc}") from None
            except DocaError as exc:
                raise PeerClosedError(f"{self.name}: cannot send a control message: {exc}") from None
        try:
            task.submit()
        except DocaError as exc:
            task.free()
            raise PeerClosedError(f"{self.name}: cannot send a control message: {exc}") from None
        self._inflight += 1

    def _wait(self, timeout: float) -> bool:
        """Progress once; if idle, sleep up to *timeout* on the PE's notification handle."""
        if self.progress():
            return True
        if timeout <= 0:
            return False
        self.pe.wait(timeout)
        return self.progress()

    def pump(self, timeout: float | None) -> None:
        """Progress the PE and deliver what arrived, waiting up to *timeout* seconds
        (``None``: until something arrives) if nothing has."""
        if self._closed:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        before = self._sink_deliveries
        self._deliver()
        while self._sink_deliveries == before:
            left = CONNECT_POLL_INTERVAL * 10 if deadline is None else deadline - time.monotonic()
            self._wait(max(0.0, left))
            if deadline is not None and time.monotonic() >= deadline:
                return

    def flush(self, timeout: float = 1.0) -> bool:
        """Progress until every sent message has left (bounded); whether they all did."""
        deadline = time.monotonic() + timeout
        while self._inflight > 0 and not self._lost:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._wait(min(left, CONNECT_POLL_INTERVAL))
        return self._inflight <= 0

    def close(self) -> None:
        """Stop using the connection (idempotent): pending messages are flushed briefly; a
        server disconnects its client. The client / server objects stay the caller's."""
        if self._closed:
            return
        if self._conn is not None and not self._lost:
            try:
                self.flush(0.5)
            except DocaError:
                pass
        self._closed = True
        if isinstance(self.ctx, ComchServer) and self._conn is not None and not self._lost and self._can_disconnect:
            try:
                self.ctx.disconnect(self._conn)
            except DocaError:
                pass  # producers/consumers still exist on it: closing the server ends it


def _check_abort(should_abort: Callable[[], bool] | None) -> None:
    if should_abort is not None and should_abort():
        raise StorageAppError(ErrorCode.CONNECTION_ABORTED, "Aborted: User requested abort")


def _close_quietly(ctx: ComchClient | ComchServer) -> None:
    try:
        ctx.close()
    except DocaError as exc:
        _log.debug("closing comch ctx: %s", exc)


def connect_comch_client(dev: doca_py.Dev, name: str, pe: doca_py.Pe, *, timeout: float,
                         should_abort: Callable[[], bool] | None = None
                         ) -> tuple[ControlChannel, ComchClient]:
    """Connect to the comch server *name* (§3.7 step 1), polling every 100 ms.

    Raise ``TIME_OUT`` after *timeout* seconds, ``CONNECTION_ABORTED`` when
    *should_abort* returns true. The channel's transport is a `ComchTransport`
    (``channel.transport``); close the channel, then the client.
    """
    client = ComchClient(dev, name)
    try:
        pe.connect_ctx(client)
        transport = ComchTransport(client, pe, name=f"comch client '{name}'")
        client.start()
        deadline = time.monotonic() + timeout
        while (state := client.get_state()) != CtxState.RUNNING:
            if state in (CtxState.STOPPING, CtxState.IDLE):
                raise StorageAppError(ErrorCode.CONNECTION_RESET,
                                      f"the comch server {name!r} dropped the connection (does it already serve "
                                      f"another client?)")
            _check_abort(should_abort)
            left = deadline - time.monotonic()
            if left <= 0:
                raise StorageAppError(ErrorCode.TIME_OUT,
                                      f"Timed out after {timeout:g} s connecting to the comch server {name!r}")
            transport._wait(min(CONNECT_POLL_INTERVAL, left))
        transport.attach(client.get_connection())
        channel = ControlChannel(transport, max_body=transport.max_frame_size - HEADER_SIZE,
                                 name=transport.name)
    except BaseException:
        _close_quietly(client)
        raise
    return channel, client


def listen_comch_server(dev: doca_py.Dev, rep: doca_py.DevRep, name: str, pe: doca_py.Pe, *,
                        timeout: float | None, should_abort: Callable[[], bool] | None = None
                        ) -> tuple[ControlChannel, ComchServer, ComchConnection]:
    """Serve *name* for the host function *rep* and accept exactly one client: the first
    whose first message is a ``query_storage_request`` (which the channel then delivers).

    Wait up to *timeout* seconds (``None``: forever) for it, checking *should_abort* every
    100 ms (``CONNECTION_ABORTED``); the other clients are disconnected. A name already served
    gives ``ALREADY_EXIST``. Close the channel, then the server.
    """
    server = ComchServer(dev, rep, name)
    try:
        pe.connect_ctx(server)
        transport = ComchTransport(server, pe, name=f"comch server '{name}'")
        try:
            server.start()
        except DocaAlreadyExist:
            raise StorageAppError(ErrorCode.ALREADY_EXIST,
                                  f"the comch server name {name!r} is already in use") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        while transport.connection is None:
            _check_abort(should_abort)
            left = CONNECT_POLL_INTERVAL if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise StorageAppError(ErrorCode.TIME_OUT,
                                      f"Timed out after {timeout:g} s waiting for a comch client on {name!r}")
            transport._wait(min(CONNECT_POLL_INTERVAL, left))
        conn = transport.connection
        assert conn is not None
        channel = ControlChannel(transport, max_body=transport.max_frame_size - HEADER_SIZE,
                                 name=transport.name)
    except BaseException:
        _close_quietly(server)
        raise
    return channel, server, conn
