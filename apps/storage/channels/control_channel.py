"""Control channel: length-prefixed control frames over a byte transport (§3.1).

Layers:

* [`FrameDecoder`][apps.storage.channels.control_channel.FrameDecoder] — sans-IO: feed received bytes, take whole messages out. An
  announced body length above ``max_body`` is rejected as soon as the 4-byte header is
  seen, before anything is allocated or awaited.
* [`Transport`][apps.storage.channels.control_channel.Transport] — what carries the bytes: ``send(frame)``, ``pump(timeout)`` which
  delivers whatever arrived to a [`TransportSink`][apps.storage.channels.control_channel.TransportSink] (``data_received`` /
  ``connection_lost``), and ``close()``. [`TcpTransport`][apps.storage.channels.control_channel.TcpTransport] is the TCP one; a comch
  transport implements the same protocol, its ``pump`` progressing the PE so that the
  comch receive events call ``data_received`` with each message.
* [`ControlChannel`][apps.storage.channels.control_channel.ControlChannel] — a decoder bound to a transport: [`send`][apps.storage.channels.control_channel.ControlChannel.send],
  [`poll`][apps.storage.channels.control_channel.ControlChannel.poll], [`receive`][apps.storage.channels.control_channel.ControlChannel.receive] (with a deadline).

Unlike the reference, a peer closing the connection is detected
([`PeerClosedError`][apps.common.errors.PeerClosedError]), and a half-received frame at close is a [`ProtocolError`][apps.common.errors.ProtocolError].
"""

from __future__ import annotations

import errno
import select
import socket
import time
from collections.abc import Callable
from typing import Protocol

from doca_py.errors import ErrorCode

from apps.storage.wire.control import (HEADER_SIZE, PREFIX_SIZE, ControlMessage, MessageType, check_response, decode_body,
                                       encode_frame)
from apps.common.errors import PeerClosedError, ProtocolError, StorageAppError
from apps.common.runtime.retry_log import RetryLog, errno_reason

__all__ = [
    "DEFAULT_MAX_BODY", "FrameDecoder", "TransportSink", "Transport", "TcpTransport", "ControlChannel",
    "TcpListener", "connect_tcp", "close_target_channel",
]

DEFAULT_MAX_BODY = 1 << 20
"""Largest control body accepted by default (1 MiB; real bodies are a few hundred bytes)."""
_RECV_CHUNK = 64 << 10
_RETRY_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.ENOTCONN, errno.ETIMEDOUT}


class FrameDecoder:
    """Extract control messages from a byte stream (sans-IO).

    ```pycon
    >>> dec = FrameDecoder()
    >>> dec.feed(bytes.fromhex("0000000c00000001000000000000000000"))
    >>> dec.next_message()
    ControlMessage(type=<MessageType.QUERY_STORAGE_REQUEST: 1>, message_id=0, correlation_id=0, payload=None)

    ```

    A malformed frame raises [`ProtocolError`][apps.common.errors.ProtocolError]; the decoder is then unusable
    (the stream position is lost), so the connection must be dropped.
    """

    def __init__(self, max_body: int = DEFAULT_MAX_BODY) -> None:
        if max_body < PREFIX_SIZE:
            raise ValueError(f"max_body must be at least {PREFIX_SIZE}")
        self.max_body = max_body
        """Largest body length accepted; longer announced frames are rejected."""
        self._buf = bytearray()
        self._failed: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet consumed."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes; reject an oversized length header immediately."""
        if self._failed is not None:
            raise self._failed
        self._buf += data
        self._check_header()

    def _fail(self, exc: ProtocolError) -> ProtocolError:
        self._failed = exc
        self._buf.clear()
        return exc

    def _check_header(self) -> int | None:
        if len(self._buf) < HEADER_SIZE:
            return None
        size = int.from_bytes(self._buf[:HEADER_SIZE], "big")
        if size > self.max_body:
            raise self._fail(ProtocolError(f"control frame announces a {size}-byte body, more than the "
                                           f"{self.max_body}-byte limit"))
        if size < PREFIX_SIZE:
            raise self._fail(ProtocolError(f"control frame announces a {size}-byte body, shorter than the "
                                           f"{PREFIX_SIZE}-byte prefix"))
        return size

    def next_message(self) -> ControlMessage | None:
        """The next complete message, or ``None`` if more bytes are needed."""
        if self._failed is not None:
            raise self._failed
        size = self._check_header()
        if size is None or len(self._buf) < HEADER_SIZE + size:
            return None
        body = bytes(self._buf[HEADER_SIZE:HEADER_SIZE + size])
        del self._buf[:HEADER_SIZE + size]
        try:
            return decode_body(body)
        except ProtocolError as exc:
            raise self._fail(exc) from None


class TransportSink(Protocol):
    """What a transport delivers received bytes and its closure to."""

    def data_received(self, data: bytes) -> None:
        """Bytes arrived (any split: part of a frame, several frames)."""

    def connection_lost(self, exc: BaseException | None) -> None:
        """The peer closed (``None``) or the connection failed (*exc*)."""


class Transport(Protocol):
    """A bidirectional byte carrier for control frames (TCP, comch …)."""

    def set_sink(self, sink: TransportSink) -> None:
        """Where [`pump`][apps.storage.channels.control_channel.Transport.pump] delivers received data and closure."""

    def send(self, frame: bytes) -> None:
        """Send one whole frame; raise [`StorageAppError`][apps.common.errors.StorageAppError] if it cannot be sent."""

    def pump(self, timeout: float | None) -> None:
        """Deliver what arrived, waiting up to *timeout* seconds (``None``: forever) if nothing has."""

    def close(self) -> None:
        """Release the connection (idempotent)."""


class TcpTransport:
    """A connected TCP socket as a [`Transport`][apps.storage.channels.control_channel.Transport].

    Sends block for at most *send_timeout* seconds (then fail), reads never block longer
    than the ``pump`` timeout. A read of 0 bytes is the peer closing.
    """

    def __init__(self, sock: socket.socket, *, send_timeout: float = 5.0) -> None:
        self._sock: socket.socket | None = sock
        self._sink: TransportSink | None = None
        self.send_timeout = send_timeout
        """Seconds a send may block before it fails."""
        sock.settimeout(send_timeout)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.peer = "%s:%d" % sock.getpeername()[:2]
            """``host:port`` of the peer (``?`` if unknown)."""
        except OSError:
            self.peer = "?"

    def set_sink(self, sink: TransportSink) -> None:
        """Set where received data goes."""
        self._sink = sink

    def fileno(self) -> int:
        """The socket's descriptor (``-1`` once closed)."""
        return -1 if self._sock is None else self._sock.fileno()

    def send(self, frame: bytes) -> None:
        """Send the whole *frame* or raise ``CONNECTION_RESET`` / ``TIME_OUT``."""
        if self._sock is None:
            raise PeerClosedError("control connection is closed")
        try:
            self._sock.sendall(frame)
        except TimeoutError:
            raise StorageAppError(
                ErrorCode.TIME_OUT,
                f"Failed to send control message to {self.peer} within {self.send_timeout} s") from None
        except OSError as exc:
            raise PeerClosedError(f"Failed to send control message to {self.peer}: {exc.strerror or exc}") from None

    def pump(self, timeout: float | None) -> None:
        """Read what is available (waiting up to *timeout*) and deliver it."""
        sock, sink = self._sock, self._sink
        if sock is None or sink is None:
            return
        ready, _, _ = select.select([sock], [], [], timeout)
        if not ready:
            return
        try:
            data = sock.recv(_RECV_CHUNK)
        except (BlockingIOError, InterruptedError, TimeoutError):
            return
        except OSError as exc:
            self.close()
            sink.connection_lost(exc)
            return
        if not data:
            self.close()
            sink.connection_lost(None)
            return
        sink.data_received(data)

    def close(self) -> None:
        """Close the socket (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()


class ControlChannel:
    """Control messages over a [`Transport`][apps.storage.channels.control_channel.Transport] (one framing for TCP and comch)."""

    def __init__(self, transport: Transport, *, max_body: int = DEFAULT_MAX_BODY, name: str = "control") -> None:
        self.transport = transport
        """The transport messages go over."""
        self.name = name
        """Name used in messages and logs."""
        self._decoder = FrameDecoder(max_body)
        self._closed = False
        self._lost: BaseException | None = None
        self.sent = 0
        """How many messages went out (a target connection with none has no session yet)."""
        transport.set_sink(self)

    # -- TransportSink -------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        """Transport callback: bytes arrived."""
        self._decoder.feed(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        """Transport callback: the peer closed or the connection failed."""
        self._closed = True
        self._lost = exc

    # -- API -------------------------------------------------------------------------------------
    @property
    def is_closed(self) -> bool:
        """Whether the peer closed (messages already received can still be polled)."""
        return self._closed

    def send(self, msg: ControlMessage) -> None:
        """Send one message."""
        self.transport.send(encode_frame(msg))
        self.sent += 1

    def poll(self, timeout: float | None = 0.0) -> ControlMessage | None:
        """One received message, or ``None`` if none arrived within *timeout* seconds.

        Raise [`PeerClosedError`][apps.common.errors.PeerClosedError] once the peer has closed and every whole message
        has been taken, [`ProtocolError`][apps.common.errors.ProtocolError] for a malformed frame or a frame cut short
        by the closure.
        """
        msg = self._decoder.next_message()
        if msg is not None:
            return msg
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._closed:
                return self._after_close()
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self.transport.pump(left)
            msg = self._decoder.next_message()
            if msg is not None:
                return msg
            if deadline is not None and time.monotonic() >= deadline and not self._closed:
                return None

    def _after_close(self) -> ControlMessage | None:
        msg = self._decoder.next_message()
        if msg is not None:
            return msg
        if self._decoder.buffered:
            raise ProtocolError(f"{self.name} connection closed in the middle of a frame "
                                f"({self._decoder.buffered} bytes buffered)", ErrorCode.CONNECTION_RESET)
        detail = f": {self._lost}" if self._lost is not None else ""
        raise PeerClosedError(f"{self.name} connection closed by the peer{detail}")

    def receive(self, timeout: float | None, should_abort: Callable[[], bool] | None = None,
                tick: float = 0.1) -> ControlMessage:
        """Wait for one message; raise ``TIME_OUT`` after *timeout* seconds (``None``: forever).

        *should_abort* is checked every *tick* seconds (Ctrl-C handling of §8.5) and makes
        the wait raise ``CONNECTION_ABORTED``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if should_abort is not None and should_abort():
                raise StorageAppError(ErrorCode.CONNECTION_ABORTED, "Aborted: User requested abort")
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            wait = left if should_abort is None else (tick if left is None else min(tick, left))
            msg = self.poll(wait)
            if msg is not None:
                return msg
            if deadline is not None and time.monotonic() >= deadline:
                raise StorageAppError(ErrorCode.TIME_OUT,
                                      f"Timed out after {timeout} s waiting for a control message on {self.name}")

    def request(self, msg: ControlMessage, timeout: float | None = 5.0) -> ControlMessage:
        """Send a request and wait for its response; validated with [`check_response`][apps.storage.wire.control.check_response]."""
        self.send(msg)
        return check_response(msg, self.receive(timeout))

    def close(self) -> None:
        """Close the transport (idempotent)."""
        self.transport.close()

    def __enter__(self) -> ControlChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def close_target_channel(channel: ControlChannel) -> None:
    """Close a bridge's connection to a storage target so that the target ends too.

    A target ends when its session's requester goes away; a client that connects and closes
    without a request is, to it, a port scanner, and it keeps listening. So a bridge that ends
    before it sent anything (Ctrl-C or a failure while it waits for its initiator) first starts
    the session with a ``query_storage_request``, then closes: the target answers and ends with
    the closed connection, as it would mid-session — as NVIDIA's target does when its one client
    leaves. Best effort: a target already gone is fine.
    """
    if channel.sent == 0 and not channel.is_closed:
        try:
            channel.send(ControlMessage(MessageType.QUERY_STORAGE_REQUEST, 0, 0))
        except (StorageAppError, OSError):
            pass
    channel.close()


class TcpListener:
    """A listening TCP socket (``SO_REUSEADDR``); [`accept`][apps.storage.channels.control_channel.TcpListener.accept] hands out channels.

    ``port=0`` picks a free port, readable from [`port`][apps.storage.channels.control_channel.TcpListener.port].
    """

    def __init__(self, port: int, host: str = "0.0.0.0", backlog: int = 1) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(backlog)
        except OSError as exc:
            sock.close()
            raise StorageAppError(ErrorCode.OPERATING_SYSTEM,
                                  f"Failed to listen on {host}:{port}: {exc.strerror or exc}") from None
        self._sock: socket.socket | None = sock
        self.port: int = sock.getsockname()[1]
        """The port listened on (the actual one when 0 was asked)."""

    def accept(self, timeout: float | None, *, max_body: int = DEFAULT_MAX_BODY) -> ControlChannel | None:
        """The next client as a [`ControlChannel`][apps.storage.channels.control_channel.ControlChannel], or ``None`` after *timeout* seconds."""
        if self._sock is None:
            raise StorageAppError(ErrorCode.BAD_STATE, "listener is closed")
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            return None
        conn, _ = self._sock.accept()
        return ControlChannel(TcpTransport(conn), max_body=max_body, name="tcp")

    def close(self) -> None:
        """Stop listening (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __enter__(self) -> TcpListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_tcp(host: str, port: int, *, timeout: float | None = None, retry_interval: float = 0.1,
                should_abort: Callable[[], bool] | None = None,
                max_body: int = DEFAULT_MAX_BODY, retries: RetryLog | None = None) -> ControlChannel:
    """Connect to a storage target, retrying while it refuses (so it may start later, §3.1).

    Give up with ``TIME_OUT`` after *timeout* seconds (``None``: retry forever), with
    ``CONNECTION_ABORTED`` when *should_abort* returns true; other errors are fatal. Each refused
    attempt goes to *retries* (a rate-limited log with its reason), when given.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if should_abort is not None and should_abort():
            raise StorageAppError(ErrorCode.CONNECTION_ABORTED, "Aborted: User requested abort")
        left = None if deadline is None else deadline - time.monotonic()
        try:
            sock = socket.create_connection((host, port), timeout=5.0 if left is None else max(0.01, min(left, 5.0)))
        except OSError as exc:
            if exc.errno not in _RETRY_ERRNOS and not isinstance(exc, TimeoutError):
                raise StorageAppError(ErrorCode.OPERATING_SYSTEM,
                                      f"Failed to connect to {host}:{port}: {exc.strerror or exc}") from None
            if deadline is not None and time.monotonic() >= deadline:
                raise StorageAppError(ErrorCode.TIME_OUT,
                                      f"Timed out connecting to {host}:{port}: {exc.strerror or exc}") from None
            if retries is not None:
                retries.failed(errno_reason(exc.errno))
            # Refused: the target is not up yet. Wait a little (without busy-spinning).
            wait = retry_interval if deadline is None else min(retry_interval, max(0.0, deadline - time.monotonic()))
            select.select([], [], [], wait)
            continue
        if retries is not None:
            retries.succeeded()
        return ControlChannel(TcpTransport(sock), max_body=max_body, name=f"tcp {host}:{port}")
