"""The storage target's control phase (storage-apps-spec §3.7 "Target") and its lifetime.

:func:`run_target` loads the content, opens the device, allocates the storage, listens on
TCP, accepts **one** client and runs a :class:`TargetSession` on it. The session answers
the requests positionally (:class:`~apps.storage.wire.control.PhaseChecker`): query, init,
``2 × cores`` RDMA connection requests, start, stop, shutdown. A request of the wrong type
gets ``UNEXPECTED`` and still consumes its position; a failed one gets the error of the
failure; the target never retries a phase.

Before the session, :func:`accept_requester` guards the control port: every client is accepted
and served side by side (up to :data:`MAX_PENDING_CLIENTS`; the listen backlog is
:data:`LISTEN_BACKLOG`, not the reference's 1), and the first one whose first message is a
well-formed ``query_storage_request`` gets the session.
A client that closes, sends bytes that are not a 16-byte ``query_storage_request`` frame, or
sends nothing complete within ``--first-message-timeout`` seconds is dropped with a WARNING
naming its address, and the target keeps listening. The control protocol has no
authentication (as in the reference): restrict who can reach the port with
``--listen-address``, a firewall or a network namespace.

Endings:

* ``shutdown_request`` answered → statistics, exit status 0 (as the reference);
* the client closes the connection (or dies) before that → the workers are stopped and
  destroyed, statistics printed, ``EXCEPTION: ...`` and exit status 1 (the reference does
  not notice and waits forever);
* the client stays silent for ``--control-timeout`` seconds (a stopped or hung requester, whose
  connection stays open) → the same teardown and ``EXCEPTION: The requester (...) sent nothing for
  N s ...``. Silent means: no control message while the target expects one outside the data path;
  while the data path runs, no io message and no control message since the last io message (a target
  the requester has sent no io in this data path — the parity target of a read-only run — cannot tell
  an idle requester from a stopped one, and waits for the stop as the reference does). A stop of
  the target itself (:mod:`apps.common.runtime.stall`) restarts the count instead of being blamed on
  the requester;
* with ``--idle-timeout`` (off by default), the requester sends nothing at all (no control message,
  no io message) for that long, in any phase → the same teardown and ``EXCEPTION: The requester (...)
  sent nothing for N s (--idle-timeout) ...``, saying it may be stopped or only idle: the storage
  protocol has no message, and the connections no property, that tells a stopped requester from an
  idle one (TCP keepalive and RDMA are answered by the requester's kernel and NIC, not by it);
* Ctrl-C / ``SIGTERM`` in any phase → the same clean teardown,
  ``EXCEPTION: Aborted: User requested abort`` and exit status 1 (the reference only
  honours Ctrl-C in control-phase waits).
"""

from __future__ import annotations

import logging
import resource
import selectors
import socket
import threading
import time
from collections.abc import Callable

import doca_py as d
from doca_py.errors import DocaError, ErrorCode
from doca_py.types import AccessFlag

from apps.storage.channels.control_channel import ControlChannel, TcpTransport
from apps.storage.wire.control import (
    HEADER_SIZE, PREFIX_SIZE, ControlMessage, InitStorage, MessageType, PhaseChecker, RdmaConnection,
    RdmaConnectionRole, StorageDetails, decode_body, encode_frame, error_response_for_exception,
    make_error_response, make_response, unexpected_message_text,
)
from apps.common.runtime.device import open_device
from apps.common.runtime.doca_features import doca_features
from apps.common.runtime.live_stats import live_stats
from apps.common.runtime.stall import LoopClock, describe_stall
from apps.common.errors import PeerClosedError, ProtocolError, StorageAppError
from apps.storage.wire.sbc import SbcFile, load_storage_content
from apps.common.runtime.stats import WorkerStats, format_worker_stats

from .config import TargetConfig
from .worker import MAX_TRANSACTIONS, StorageRegion, Worker

__all__ = ["TargetSession", "run_target", "load_content", "allocate_storage", "listen", "accept_requester",
           "ABORTED_TEXT", "LISTENING_PREFIX", "DROPPED_PREFIX", "START_TIMEOUT", "DRAIN_TIMEOUT", "LISTEN_BACKLOG",
           "MAX_PENDING_CLIENTS"]

log = logging.getLogger("apps.storage_target")

Printer = Callable[[str], None]
ABORTED_TEXT = "Aborted: User requested abort"
LISTENING_PREFIX = "Listening on port "
"""Start of the stdout line that reports the TCP port (useful with ``--listen-port 0``)."""
START_TIMEOUT = 10.0
"""Seconds ``start_storage_request`` waits at least for every RDMA context to be RUNNING (longer with a
longer ``--control-timeout``: the requester waits for that answer meanwhile, and the operator allowed it
that much)."""
DRAIN_TIMEOUT = 5.0
"""Seconds ``stop_storage_request`` lets in-flight io messages complete."""
ABORT_DRAIN_TIMEOUT = 0.5
LISTEN_BACKLOG = 8
"""Connections the kernel queues for the control port (the reference uses 1, so one stray
client in the queue made the real requester's connection fail)."""
MAX_PENDING_CLIENTS = 512
"""Connected clients that may be waiting at once for their first message (16 bytes of buffer
each); one more pushes out the one that has waited longest, so a client that sends its query at
once always gets through."""
_ACCEPT_BATCH = 64
DROPPED_PREFIX = "dropping control client "
"""Start of the WARNING logged when a client is refused before a session starts."""
_FIRST_FRAME_SIZE = HEADER_SIZE + PREFIX_SIZE  # a query_storage_request frame: no payload
_TICK = 0.1
_STATS_APP = "doca_storage_target_rdma"  # the "app" of its live statistics


def _aborted() -> StorageAppError:
    return StorageAppError(ErrorCode.CONNECTION_ABORTED, ABORTED_TEXT)


def load_content(config: TargetConfig) -> SbcFile:
    """The initial content and geometry (§2.4): an ``.sbc`` file, a raw file or nothing."""
    return load_storage_content(config.binary_content, config.block_size, config.block_count)


def allocate_storage(dev: d.Dev, content: SbcFile) -> StorageRegion:
    """A page-aligned storage of ``block_size × block_count`` bytes holding *content*
    (zeros without a file), registered for local access and remote read/write."""
    size = content.storage_size
    mm = d.Mmap()
    try:
        mem = mm.allocate(size)
        if content.content:
            mem[:len(content.content)] = content.content
        del mem
        mm.set_permissions(AccessFlag.LOCAL_READ_WRITE | AccessFlag.RDMA_READ | AccessFlag.RDMA_WRITE)
        if doca_features().mmap_thread_safety:  # 3.0+; DOCA 2.6 has no such switch: nothing to enable there
            mm.enable_thread_safety()
        mm.add_dev(dev)
        mm.start()
    except BaseException:
        mm.close()
        raise
    return StorageRegion(mm, mm.get_memrange()[0], size)


class TargetSession:
    """One client's session: the positional control phase and the workers it creates."""

    def __init__(self, config: TargetConfig, dev: d.Dev, storage: StorageRegion, block_size: int,
                 abort: threading.Event) -> None:
        self.config, self.dev, self.storage, self.block_size = config, dev, storage, block_size
        self.abort = abort
        self.phases = PhaseChecker.target()
        self.workers: list[Worker] = []
        self.stats: list[WorkerStats] = []
        self.shut_down = False
        self.data_path_running = False
        self._heard = time.monotonic()  # the requester's last sign of life (a control or an io message)
        self._clock = LoopClock(_TICK)  # restarted with _heard: a stop of this process after it is seen
        self._io_seen = 0               # io messages received by the workers, as last counted
        self._io_in_data_path = False   # the running data path has carried io

    # ------------------------------------------------------------------ phase loop
    def serve(self, channel: ControlChannel, first: ControlMessage | None = None) -> None:
        """Answer requests until ``shutdown_request`` has been handled; *first* is a request
        already read from *channel* (the one :func:`accept_requester` checked).

        Raise :class:`PeerClosedError` when the client goes away first, ``TIME_OUT`` when it stays
        silent past ``--control-timeout`` (:meth:`next_request`), ``CONNECTION_ABORTED`` on Ctrl-C,
        :class:`~apps.common.errors.ProtocolError` for a malformed frame.
        """
        while not self.phases.done:
            expected = self.phases.expected
            assert expected is not None
            try:
                if first is not None:
                    msg, first = first, None
                else:
                    msg = self.next_request(channel, expected)
            except PeerClosedError:
                raise PeerClosedError(f"The requester closed the control connection while the target was "
                                      f"expecting a {expected.wire_name}") from None
            log.debug("received %s", msg)
            response = self.phases.check(msg)
            if response is None:
                response = self.handle(msg)
            else:
                log.warning("%s", getattr(response.payload, "message", response))
            channel.send(response)
            self._heard = time.monotonic()  # the requester could not speak before it had our answer
            self._clock.restart()

    def next_request(self, channel: ControlChannel, expected: MessageType) -> ControlMessage:
        """The requester's next control message; ``TIME_OUT`` once it has been silent for
        ``--control-timeout`` or ``--idle-timeout`` seconds (see the module's endings),
        ``CONNECTION_ABORTED`` on Ctrl-C."""
        limit = float(self.config.control_timeout)
        idle = float(self.config.idle_timeout)
        clock = self._clock
        log.debug("waiting for a %s (the requester may stay silent for %s%s)", expected.wire_name,
                  f"{limit:g} s" if limit else "ever", f"; idle for {idle:g} s" if idle else "")
        while True:
            if self.abort.is_set():
                raise _aborted()
            msg = channel.poll(_TICK)
            if msg is not None:
                return msg
            now = time.monotonic()
            stall = clock.tick()
            if stall:
                log.warning("%s; the requester's silence is counted again from now", describe_stall(stall))
                self._heard = now
            io = sum(w.received for w in self.workers)
            if io != self._io_seen:
                self._io_seen, self._heard = io, now
                self._io_in_data_path = self._io_in_data_path or self.data_path_running
            silent = now - self._heard
            if limit and silent >= limit and (self._io_in_data_path or not self.data_path_running):
                raise StorageAppError(ErrorCode.TIME_OUT, self._silence_text(channel, expected, limit))
            if idle and silent >= idle:
                raise StorageAppError(ErrorCode.TIME_OUT, self._idle_text(channel, expected, idle))

    def _silence_text(self, channel: ControlChannel, expected: MessageType, limit: float) -> str:
        peer = getattr(channel.transport, "peer", "?")
        if self.data_path_running:
            return (f"The requester ({peer}) sent no io message for {limit:g} s (--control-timeout) since its last one, "
                    f"and no {expected.wire_name}, while the data path ran; ending the session")
        return (f"The requester ({peer}) sent nothing for {limit:g} s (--control-timeout) while the target was "
                f"expecting a {expected.wire_name}; ending the session")

    def _idle_text(self, channel: ControlChannel, expected: MessageType, idle: float) -> str:
        peer = getattr(channel.transport, "peer", "?")
        if self.data_path_running:
            what = (f"no io message since its last one and no {expected.wire_name}" if self._io_in_data_path else
                    f"no io message since the data path started and no {expected.wire_name}")
        else:
            what = f"no {expected.wire_name}"
        return (f"The requester ({peer}) sent nothing for {idle:g} s (--idle-timeout): {what}. It may be stopped or "
                f"hung, or only idle (nothing tells them apart: an idle requester sends nothing either); ending the "
                f"session")

    def handle(self, msg: ControlMessage) -> ControlMessage:
        """The response to an in-order request (an ``error_response`` if it fails)."""
        handlers: dict[MessageType, Callable[[ControlMessage], ControlMessage]] = {
            MessageType.QUERY_STORAGE_REQUEST: self._query,
            MessageType.INIT_STORAGE_REQUEST: self._init,
            MessageType.CREATE_RDMA_CONNECTION_REQUEST: self._create_rdma_connection,
            MessageType.START_STORAGE_REQUEST: self._start,
            MessageType.STOP_STORAGE_REQUEST: self._stop,
            MessageType.SHUTDOWN_REQUEST: self._shutdown,
        }
        try:
            return handlers[msg.type](msg)
        except (StorageAppError, DocaError) as exc:
            if self.abort.is_set():
                raise _aborted() from None
            log.error("%s failed: %s", msg.type.wire_name, exc)
            return error_response_for_exception(msg, exc)
        except Exception as exc:  # noqa: BLE001 - a bug here must not leave the requester without an answer
            if self.abort.is_set():
                raise _aborted() from None
            log.exception("%s failed unexpectedly", msg.type.wire_name)
            return error_response_for_exception(msg, exc)

    # ------------------------------------------------------------------ handlers
    def _query(self, msg: ControlMessage) -> ControlMessage:
        return make_response(msg, StorageDetails(self.storage.size, self.block_size))

    def _init(self, msg: ControlMessage) -> ControlMessage:
        p = msg.payload
        assert isinstance(p, InitStorage)
        cpus = self.config.cpu
        if not 0 < p.core_count <= len(cpus):
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"Requested storage to use {p.core_count} cores but "
                                                           f"only {len(cpus)} are configured")
        if not 0 < p.transaction_count <= MAX_TRANSACTIONS:
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"transaction_count {p.transaction_count} must be from 1 "
                                                           f"to {MAX_TRANSACTIONS}")
        if not p.mmap_export_blob:
            raise StorageAppError(ErrorCode.INVALID_VALUE, "the mmap export blob is empty")
        workers: list[Worker] = []
        try:
            for i in range(p.core_count):
                w = Worker(i, cpus[i], self.dev, self.storage, p.mmap_export_blob, p.transaction_count, self.abort)
                workers.append(w)
                w.start()
        except BaseException:
            for w in workers:
                w.destroy()
            raise
        self.workers = workers
        self.phases.set_count(MessageType.CREATE_RDMA_CONNECTION_REQUEST, 2 * p.core_count)
        log.info("initialised %d worker(s) with %d transactions each; requester region of %d bytes",
                 p.core_count, p.transaction_count, workers[0].remote_size)
        return make_response(msg)

    def _create_rdma_connection(self, msg: ControlMessage) -> ControlMessage:
        p = msg.payload
        assert isinstance(p, RdmaConnection)
        if not self.workers:
            raise StorageAppError(ErrorCode.BAD_STATE, "the storage is not initialised")
        if p.context_idx >= len(self.workers):  # the reference lets context_idx == cores through
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"context_idx {p.context_idx} is out of range: the "
                                                           f"storage uses {len(self.workers)} cores")
        role = p.known_role
        if role is None:
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"unknown rdma connection role {int(p.role)}")
        if not p.connection_details:
            raise StorageAppError(ErrorCode.INVALID_VALUE, "the connection details are empty")
        blob = self.workers[p.context_idx].connect(role, p.connection_details)
        return make_response(msg, RdmaConnection(p.context_idx, role, blob))

    def _start(self, msg: ControlMessage) -> ControlMessage:
        if not self.workers:
            raise StorageAppError(ErrorCode.BAD_STATE, "the storage is not initialised")
        missing = [f"{w.index}/{r.name.lower()}" for w in self.workers for r in RdmaConnectionRole
                   if r not in w.connected]
        if missing:
            raise StorageAppError(ErrorCode.BAD_STATE, f"missing RDMA connections (context/role): "
                                                       f"{', '.join(missing)}")
        limit = max(START_TIMEOUT, float(self.config.control_timeout))
        deadline = time.monotonic() + limit
        while not all(w.ready for w in self.workers):
            if self.abort.is_set():
                raise _aborted()
            dead = [w.name for w in self.workers if not w.alive]
            if dead:
                raise StorageAppError(ErrorCode.BAD_STATE, f"{', '.join(dead)} stopped")
            if time.monotonic() >= deadline:
                waiting = [w.name for w in self.workers if not w.ready]
                raise StorageAppError(ErrorCode.TIME_OUT, f"RDMA contexts of {', '.join(waiting)} did not reach "
                                                          f"RUNNING within {limit:g} s")
            self.abort.wait(0.01)
        for w in self.workers:
            w.start_data_path()
        self.data_path_running, self._io_in_data_path = True, False
        log.info("data path started on %d worker(s)", len(self.workers))
        return make_response(msg)

    def _stop(self, msg: ControlMessage) -> ControlMessage:
        self.data_path_running = False
        self._stop_workers(DRAIN_TIMEOUT)
        return make_response(msg)

    def _shutdown(self, msg: ControlMessage) -> ControlMessage:
        self.close()
        self.shut_down = True
        return make_response(msg)

    # ------------------------------------------------------------------ teardown
    def _stop_workers(self, drain_timeout: float) -> None:
        for w in self.workers:
            if not w.alive:
                continue
            try:
                w.stop_data_path(drain_timeout)
            except StorageAppError as exc:
                log.error("stopping %s: %s", w.name, exc)
            if w.error:
                log.warning("%s stopped after an error: %s", w.name, w.error)

    def close(self) -> None:
        """Stop (draining briefly when aborted) and destroy every worker; keep their stats."""
        if not self.workers:
            return
        self._stop_workers(ABORT_DRAIN_TIMEOUT if self.abort.is_set() else DRAIN_TIMEOUT)
        for w in self.workers:
            w.destroy()
        self.stats = [w.stats() for w in self.workers]
        self.workers = []


def listen(address: str, port: int, backlog: int = LISTEN_BACKLOG) -> socket.socket:
    """A non-blocking IPv4 listening socket on *address*:*port* (``SO_REUSEADDR``, as §3.1)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise StorageAppError(ErrorCode.OPERATING_SYSTEM,
                              f"Failed to listen on {address}:{port}: {exc.strerror or exc}") from None
    return sock


class _Pending:
    """A connected client that has not yet sent a whole first frame."""

    __slots__ = ("sock", "peer", "deadline", "buf")

    def __init__(self, sock: socket.socket, peer: str, deadline: float | None) -> None:
        self.sock, self.peer, self.deadline = sock, peer, deadline
        self.buf = bytearray()

    def drop(self, reason: str) -> None:
        log.warning("%s%s: %s", DROPPED_PREFIX, self.peer, reason)
        self.sock.close()

    def read(self) -> ControlMessage | str | None:
        """Take what arrived: the first message once whole, a reason to drop the client, or
        ``None`` (more bytes needed). Never reads past the first frame."""
        try:
            data = self.sock.recv(_FIRST_FRAME_SIZE - len(self.buf))
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:
            return f"connection failed before a request: {exc.strerror or exc}"
        if not data:
            return "closed the connection before sending a request" + \
                (f" ({len(self.buf)} bytes of a frame received)" if self.buf else "")
        self.buf += data
        if len(self.buf) >= HEADER_SIZE:
            size = int.from_bytes(self.buf[:HEADER_SIZE], "big")
            if size != PREFIX_SIZE:
                return (f"its first frame announces a {size}-byte body; a session starts with a "
                        f"query_storage_request, whose body is {PREFIX_SIZE} bytes")
        if len(self.buf) < _FIRST_FRAME_SIZE:
            return None
        try:
            msg = decode_body(bytes(self.buf[HEADER_SIZE:]))
        except ProtocolError as exc:
            return f"sent a malformed first frame: {exc}"
        if msg.type is not MessageType.QUERY_STORAGE_REQUEST:
            self._refuse(msg)
            return f"sent a {msg.type.wire_name} first; a session starts with a query_storage_request"
        return msg

    def _refuse(self, msg: ControlMessage) -> None:
        """Best effort: tell a confused requester why it is dropped."""
        text = unexpected_message_text(msg.type, MessageType.QUERY_STORAGE_REQUEST)
        try:
            self.sock.send(encode_frame(make_error_response(msg, ErrorCode.UNEXPECTED, text)))
        except OSError:
            pass


def _peer_name(sock: socket.socket) -> str:
    try:
        return "%s:%d" % sock.getpeername()[:2]
    except OSError:
        return "?"


def _pending_limit(wanted: int = MAX_PENDING_CLIENTS) -> int:
    """*wanted*, or fewer when the descriptor limit would not leave half of it to the rest of the target."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return wanted if soft == resource.RLIM_INFINITY else max(1, min(wanted, soft // 2))


def accept_requester(listener: socket.socket, abort: threading.Event, first_message_timeout: float | None,
                     max_pending: int | None = None) -> tuple[ControlChannel, ControlMessage]:
    """Wait for the client that starts a session, and its ``query_storage_request``.

    Every client is accepted at once and served side by side (``epoll``, 16 bytes of buffer each),
    so no number of silent, slow or garbage clients delays a valid one: the first whose first
    frame is a well-formed ``query_storage_request`` wins. At most *max_pending* (default
    :data:`MAX_PENDING_CLIENTS`, fewer under a low descriptor limit) wait at once: one more
    pushes out the one that has waited longest (WARNING). Any other client is dropped (a
    WARNING with its address): one that closes, sends a frame that is not a 16-byte
    ``query_storage_request`` (garbage, oversized, malformed, another request — answered with
    ``UNEXPECTED`` first), or has not sent a whole frame *first_message_timeout* seconds
    after connecting (``None``: no limit). Clients still pending when the session starts are
    dropped too. ``CONNECTION_ABORTED`` on Ctrl-C.
    """
    limit = _pending_limit() if max_pending is None else max_pending
    pending: dict[socket.socket, _Pending] = {}  # in arrival order: the first is the longest-waiting
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)

    def remove(p: _Pending, reason: str) -> None:
        del pending[p.sock]
        sel.unregister(p.sock)
        p.drop(reason)

    try:
        while True:
            if abort.is_set():
                raise _aborted()
            now = time.monotonic()
            for p in [p for p in pending.values() if p.deadline is not None and now >= p.deadline]:
                partial = f" ({len(p.buf)} bytes of a frame received)" if p.buf else ""
                remove(p, f"no complete first message within {first_message_timeout:g} s{partial}; still listening")
            deadlines = [p.deadline for p in pending.values() if p.deadline is not None]
            wait = _TICK if not deadlines else max(0.0, min(_TICK, min(deadlines) - now))
            for key, _events in sel.select(wait):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is listener:
                    for _ in range(_ACCEPT_BATCH):
                        try:
                            conn, _addr = listener.accept()
                        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                            break
                        except OSError as exc:  # out of descriptors: the backlog keeps the rest
                            log.warning("cannot accept a control client: %s", exc.strerror or exc)
                            break
                        conn.setblocking(False)
                        if len(pending) >= limit:
                            remove(next(iter(pending.values())),
                                   f"the longest-waiting of {len(pending)} clients without a first message, the "
                                   f"most this target keeps, made room for a new one; still listening")
                        peer = _peer_name(conn)
                        log.info("control connection from %s", peer)
                        deadline = None if first_message_timeout is None else time.monotonic() + first_message_timeout
                        pending[conn] = _Pending(conn, peer, deadline)
                        sel.register(conn, selectors.EVENT_READ)
                    continue
                client = pending.get(sock)
                if client is None:
                    continue  # pushed out in this round
                got = client.read()
                if got is None:
                    continue
                if isinstance(got, str):
                    remove(client, got + "; still listening")
                    continue
                del pending[sock]
                sel.unregister(sock)
                for other in list(pending.values()):
                    remove(other, f"the session with {client.peer} has started")
                log.info("session with %s: %s received", client.peer, got)
                return ControlChannel(TcpTransport(sock), name="tcp"), got
    except BaseException:
        for p in pending.values():
            p.sock.close()
        raise
    finally:
        sel.close()


def run_target(config: TargetConfig, abort: threading.Event, out: Printer = print) -> int:
    """Serve one client (§3.7); 0 after ``shutdown_request``, else raise (→ ``EXCEPTION:``)."""
    content = load_content(config)
    block_size = content.block_size
    out(f"Storage: {content.block_count} blocks of {block_size} bytes ({content.storage_size} bytes)"
        + (f" from {config.binary_content}" if config.binary_content is not None else ""))
    with open_device(config.device) as dev, live_stats(_STATS_APP, config.stats_interval, config.stats_format):
        storage = allocate_storage(dev, content)
        del content
        session: TargetSession | None = None
        try:
            listener = listen(config.listen_address, config.listen_port)
            try:
                address, port = listener.getsockname()[:2]
                log.info("control port listening on %s:%d (backlog %d, first message within %s)", address, port,
                         LISTEN_BACKLOG, f"{config.first_message_timeout} s" if config.first_message_timeout
                         else "no limit")
                out(f"{LISTENING_PREFIX}{port}")
                channel, first = accept_requester(listener, abort, config.first_message_timeout or None)
            finally:
                listener.close()
            with channel:  # exactly one client: the listener is closed now
                session = TargetSession(config, dev, storage, block_size, abort)
                try:
                    session.serve(channel, first)
                finally:
                    session.close()
                    if session.stats:
                        out(format_worker_stats(session.stats))
        finally:
            storage.mmap.close()
    return 0
