"""The zero-copy bridge's control phase (storage-apps-spec §11.3, §11.4) and its lifetime.

:func:`run_service` opens the device and the host representor, creates the comch server
**before** connecting to the storage target (as the reference: an initiator may connect while
the bridge still waits for the target), connects to the one target named by
``--storage-server`` (retrying every 100 ms while it refuses), waits for one initiator, then
answers the initiator's requests **positionally** (query, init, start, stop, shutdown),
relaying each to the target with the bridge's own message ids (one counter from 0) and the
initiator's correlation id:

* query → the target's ``query_storage_response`` is passed on unchanged (no doubling);
* init → ``N = 2·T``; the host's PCI export is imported (``Mmap.create_from_export``) and
  **re-exported for RDMA** (``export_rdma``): that blob goes to the target in
  ``init{N, C, blob}``, so the target reads and writes host memory directly; then per core a
  worker and two ``create_rdma_connection`` requests (io_data, then io_control);
* start → relayed; then wait (bounded) until the initiator has announced one consumer per
  core and every worker context runs; worker *i* answers the *i*-th consumer;
* stop → relayed; the workers drain (their requests are tracked) and destroy their comch
  producer and consumer;
* shutdown → wait (bounded) for the initiator's consumers to expire, relay, destroy the
  workers; the statistics follow the response.

A request out of order gets ``UNEXPECTED`` (and consumes its position); a failure gets its
error code and text; a target's ``error_response`` is passed on with the target's code and
text.

Endings: 0 after ``shutdown``; otherwise ``EXCEPTION: ...`` and status 1 — the target
closing its control connection or not answering within ``--control-timeout`` (the initiator
gets an error response first when it is waiting for one), the initiator going away, or
Ctrl-C (any phase, including the data path; teardown is bounded).
"""

from __future__ import annotations

import errno
import logging
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import doca_py as d
from doca_py.comch import ComchConnection, ComchServer
from doca_py.errors import DocaAlreadyExist, DocaError, ErrorCode

from apps.common.runtime.stall import LoopClock, describe_stall, stall_note
from apps.storage.channels.control_channel import ControlChannel, TcpTransport, close_target_channel
from apps.storage.channels.comch_transport import CONNECT_POLL_INTERVAL, ComchTransport
from apps.common.cli.config import Ipv4Endpoint
from apps.storage.wire.control import (
    HEADER_SIZE, ControlMessage, ErrorPayload, IdAllocator, InitStorage, MessageType, Payload, PhaseChecker,
    RdmaConnection, RdmaConnectionRole, StorageDetails, make_response,
    unexpected_message_text,
)
from apps.common.runtime.device import open_device
from apps.common.errors import PeerClosedError, ProtocolError, StorageAppError
from apps.storage.runtime.service_control import (
    ABORT_DRAIN_TIMEOUT, ABORTED_TEXT, DRAIN_TIMEOUT, TICK, BridgeControl, Printer, TargetFailure, aborted,
    open_host_representor, serve_session,
)
from apps.common.runtime.retry_log import RetryLog, errno_reason
from apps.common.runtime.stats import WorkerStats

from .config import ZeroCopyConfig
from .worker import SharedResources, Worker

__all__ = ["ZeroCopyService", "TargetLink", "TargetFailure", "run_service", "connect_target", "open_comch_server",
           "ABORTED_TEXT", "DRAIN_TIMEOUT", "ABORT_DRAIN_TIMEOUT", "RETRY_INTERVAL"]

log = logging.getLogger("apps.zero_copy")

RETRY_INTERVAL = 0.1
"""Seconds between connection attempts to the target (the reference's 100 ms)."""
_TICK = TICK
_RETRY_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.ENOTCONN, errno.ETIMEDOUT,
                 errno.EHOSTUNREACH, errno.ENETUNREACH}
M = MessageType


class _TargetClosed(Exception):
    """The target's control connection closed (turned into a reconnect or a failure)."""


def connect_target(endpoint: Ipv4Endpoint, should_abort: Callable[[], bool],
                   idle: Callable[[], object] | None = None, retry_interval: float = RETRY_INTERVAL,
                   timeout: float | None = None, retries: RetryLog | None = None) -> ControlChannel:
    """Connect to the target at *endpoint* (§11.3 step 6): a non-blocking connect polled every
    *retry_interval* seconds, a new attempt after a refusal, reset or timeout; no overall
    timeout by default (the target may start later), else ``TIME_OUT`` after *timeout*
    seconds. *should_abort* is checked at every poll (``CONNECTION_ABORTED``); *idle* runs at
    every poll too (the bridge keeps its comch server moving). Other errors are fatal
    (``CONNECTION_ABORTED`` "Unable to connect ..."). Each failed attempt goes to *retries* (a
    rate-limited log with its reason), when given."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if should_abort():
            raise aborted("while connecting to the storage target")
        if deadline is not None and time.monotonic() >= deadline:
            raise StorageAppError(ErrorCode.TIME_OUT, f"Unable to connect to {endpoint} within {timeout:g} s")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            err = sock.connect_ex((endpoint.host, endpoint.port))
            while err in (errno.EINPROGRESS, errno.EALREADY, errno.EWOULDBLOCK):
                if should_abort():
                    raise aborted("while connecting to the storage target")
                if deadline is not None and time.monotonic() >= deadline:
                    err = errno.ETIMEDOUT
                    break
                if idle is not None:
                    idle()
                _, writable, _ = select.select([], [sock], [], retry_interval)
                if writable:
                    err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err == 0:
                sock.setblocking(True)
                if retries is not None:
                    retries.succeeded()
                return ControlChannel(TcpTransport(sock), name=f"storage target {endpoint}")
        except BaseException:
            sock.close()
            raise
        sock.close()
        if err not in _RETRY_ERRNOS:
            raise StorageAppError(ErrorCode.CONNECTION_ABORTED,
                                  f"Unable to connect to {endpoint}: {os.strerror(err)}")
        if retries is not None:
            retries.failed(errno_reason(err))
        retry_at = time.monotonic() + retry_interval
        while (left := retry_at - time.monotonic()) > 0:
            if should_abort():
                raise aborted("while connecting to the storage target")
            if idle is not None:
                idle()
            select.select([], [], [], min(left, _TICK))


@dataclass
class TargetLink:
    """The control connection to the storage target.

    ``used`` tells whether a request went out on it: before that, the target dropping the
    connection (its ``--first-message-timeout``) is harmless and the bridge reconnects.
    """

    endpoint: Ipv4Endpoint
    channel: ControlChannel
    used: bool = False

    @property
    def name(self) -> str:
        """``storage target a.b.c.d:port``."""
        return f"storage target {self.endpoint}"

    def fileno(self) -> int:
        """The socket's descriptor (``-1`` once closed)."""
        t = self.channel.transport
        return t.fileno() if isinstance(t, TcpTransport) else -1

    def reconnect(self, should_abort: Callable[[], bool], idle: Callable[[], object] | None, timeout: float) -> None:
        """A fresh connection (nothing was sent on the old one), within *timeout* seconds
        (else :class:`TargetFailure`)."""
        self.channel.close()
        try:
            self.channel = connect_target(self.endpoint, should_abort, idle, timeout=timeout)
        except StorageAppError as exc:
            if exc.code == ErrorCode.CONNECTION_ABORTED:
                raise
            raise TargetFailure(exc.code, f"{self.name} closed its control connection and cannot be reached "
                                          f"again: {exc}") from None
        self.used = False

    def close(self) -> None:
        """Close the connection (idempotent); a target with no session yet ends too
        (`close_target_channel`)."""
        close_target_channel(self.channel)


def open_comch_server(dev: d.Dev, rep: d.DevRep, name: str, pe: d.Pe) -> tuple[ComchServer, ComchTransport]:
    """Create and start the comch server *name* for the host function *rep* (§11.3 step 4);
    clients are accepted as the transport progresses. ``ALREADY_EXIST`` if the name is taken."""
    server = ComchServer(dev, rep, name)
    try:
        pe.connect_ctx(server)
        transport = ComchTransport(server, pe, name=f"comch server '{name}'")
        try:
            server.start()
        except DocaAlreadyExist:
            raise StorageAppError(ErrorCode.ALREADY_EXIST, f"the comch server name {name!r} is already in use") \
                from None
    except BaseException:
        try:
            server.close()
        except DocaError as exc:
            log.debug("closing the comch server: %s", exc)
        raise
    return server, transport


@dataclass
class ZeroCopyService(BridgeControl[Worker]):
    """One initiator's session (runs on the control thread)."""

    log = log
    tell_client_on_target_failure = True
    initiator_close_ends = True
    start_timeout_code = ErrorCode.INITIALIZATION

    config: ZeroCopyConfig
    dev: d.Dev
    target: TargetLink
    client: ControlChannel
    comch: ComchTransport
    connection: ComchConnection
    abort: threading.Event
    phases: PhaseChecker = field(default_factory=PhaseChecker.service)
    ids: IdAllocator = field(default_factory=IdAllocator)
    workers: list[Worker] = field(default_factory=list)
    stats: list[WorkerStats] = field(default_factory=list)
    details: StorageDetails | None = None
    host: d.Mmap | None = None
    _reported_worker_errors: set[int] = field(default_factory=set)

    def _pump_comch(self) -> None:
        self.comch.progress()

    def _watch_targets(self) -> None:
        self.watch_target()

    def _target_closed(self) -> TargetFailure:
        return TargetFailure(ErrorCode.CONNECTION_RESET, f"{self.target.name} closed its control connection")

    def watch_target(self) -> None:
        """Raise :class:`TargetFailure` if the target closed its connection during a session
        (or sent garbage); reconnect if it closed before the first request; drop (and log)
        unsolicited messages."""
        try:
            msg = self.target.channel.poll(0.0)
        except PeerClosedError:
            if self.target.used:
                raise self._target_closed() from None
            log.info("%s closed the idle control connection (no request was sent yet); reconnecting", self.target.name)
            self.target.reconnect(self.abort.is_set, self._pump_comch, self.timeout)
            return
        except ProtocolError as exc:
            raise TargetFailure(exc.code, f"{self.target.name}: {exc}") from None
        if msg is not None:
            log.warning("ignoring an unsolicited %s from %s", msg, self.target.name)

    def _await_target(self, request: ControlMessage) -> ControlMessage:
        deadline = time.monotonic() + self.timeout
        clock = LoopClock(_TICK)
        while True:
            self._check_abort()
            stall = clock.tick()
            if stall:  # this process did not run: the target had no chance to be heard meanwhile
                deadline += stall
                log.warning("%s; the wait for the %s of %s starts again", describe_stall(stall),
                            request.type.response_type.wire_name, self.target.name)
            try:
                msg = self.target.channel.poll(0.0)
            except PeerClosedError:
                raise _TargetClosed() from None
            except ProtocolError as exc:
                raise TargetFailure(exc.code, f"{self.target.name}: {exc}") from None
            if msg is not None:
                if msg.message_id == request.message_id:
                    return msg
                log.warning("ignoring %s from %s (waiting for the answer to mid %d)", msg, self.target.name,
                            request.message_id)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise TargetFailure(ErrorCode.TIME_OUT, f"Timed out after {self.timeout:g} s waiting for the "
                                                        f"{request.type.response_type.wire_name} of {self.target.name}"
                                                        f" (mid {request.message_id})" + stall_note())
            self._relay_idle()  # keeps the comch PE moving; ends at once if the initiator left
            fd = self.target.fileno()
            select.select([fd] if fd >= 0 else [], [], [], min(_TICK, left))

    def relay(self, mtype: MessageType, correlation_id: int, payload: Payload | None = None) -> ControlMessage:
        """Send one *mtype* request to the target (the bridge's next message id, the client's
        correlation id) and wait ≤ ``--control-timeout`` for its answer (matched by message id).

        The target's ``error_response`` becomes a :class:`StorageAppError` with its code and
        text; a wrong type is ``UNEXPECTED``; a closed connection or the timeout is a
        :class:`TargetFailure` (the bridge ends).
        """
        msg = ControlMessage(mtype, self.ids.next(), correlation_id, payload)
        for attempt in range(2):
            fresh = not self.target.used
            if fresh:
                self.watch_target()  # reconnects if the target dropped the idle connection
            try:
                try:
                    self.target.channel.send(msg)
                except PeerClosedError:
                    raise _TargetClosed() from None
                except StorageAppError as exc:  # a send that timed out
                    raise TargetFailure(exc.code, f"{self.target.name}: {exc}") from None
                self.target.used = True
                resp = self._await_target(msg)
                break
            except _TargetClosed:
                if not (fresh and attempt == 0):
                    raise self._target_closed() from None
                # The target dropped the connection just as the first request went out
                # (its first-message timeout): nothing was processed, so try once more.
                log.info("%s closed the control connection before the first request; reconnecting",
                         self.target.name)
                self.target.reconnect(self.abort.is_set, self._pump_comch, self.timeout)
        if resp.type is M.ERROR_RESPONSE:
            assert isinstance(resp.payload, ErrorPayload)
            raise StorageAppError(resp.payload.code, resp.payload.message)
        if resp.type is not mtype.response_type:
            raise StorageAppError(ErrorCode.UNEXPECTED, unexpected_message_text(resp.type, mtype.response_type))
        return resp

    def relay_simple(self, mtype: MessageType, correlation_id: int) -> None:
        self.relay(mtype, correlation_id)

    # ------------------------------------------------------------------ handlers
    def _query(self, msg: ControlMessage) -> ControlMessage:
        resp = self.relay(M.QUERY_STORAGE_REQUEST, msg.correlation_id)
        p = resp.payload
        assert isinstance(p, StorageDetails)
        if p.block_size == 0 or p.total_size == 0:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.target.name} reports an empty storage "
                                                       f"({p.total_size} bytes in blocks of {p.block_size})")
        self.details = p
        log.info("Storage reports capacity of: %d using a block size of: %d", p.total_size, p.block_size)
        return make_response(msg, p)  # unchanged: nothing is doubled (§11.4.2)

    def _init(self, msg: ControlMessage) -> ControlMessage:
        p, n = self._init_request(msg, self.details is not None)
        assert self.details is not None
        self._release_host()
        try:
            self.host = host = d.Mmap.create_from_export(p.mmap_export_blob, self.dev)
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Failed to import the host's memory (export blob of "
                                            f"{len(p.mmap_export_blob)} bytes): {exc}") from None
        host_base, host_size = host.get_memrange()
        try:
            rdma_blob = host.export_rdma(self.dev)
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Failed to re-export host mmap for rdma: {exc}") from None
        self.relay(M.INIT_STORAGE_REQUEST, msg.correlation_id, InitStorage(n, p.core_count, rdma_blob))
        shared = SharedResources(self.dev, self.connection, self.details.total_size, host_size, n)
        self._start_workers(lambda i, cpu: Worker(i, cpu, shared, self.abort), p.core_count, msg.correlation_id)
        log.info("initialised %d worker(s) of %d slots; the host region [%#x, +%d) is re-exported to %s",
                 p.core_count, n, host_base, host_size, self.target.name)
        return make_response(msg)

    def _connect_rdma(self, w: Worker, role: RdmaConnectionRole, correlation_id: int) -> None:
        blob = w.export(role)
        resp = self.relay(M.CREATE_RDMA_CONNECTION_REQUEST, correlation_id, RdmaConnection(w.index, role, blob))
        rp = resp.payload
        assert isinstance(rp, RdmaConnection)
        if rp.context_idx != w.index or rp.known_role is not role:
            raise StorageAppError(ErrorCode.UNEXPECTED, f"{self.target.name} answered the {role.name.lower()} "
                                                        f"connection of context {w.index} for context "
                                                        f"{rp.context_idx} role {int(rp.role)}")
        w.connect(role, rp.connection_details)

    def _report_closed_workers(self) -> None:
        for w in self.workers:
            if w.refused_count or w.target_error_count:
                log.info("%s: %d request(s) answered by the bridge, %d target error(s) passed on", w.name,
                         w.refused_count, w.target_error_count)

    def release_resources(self) -> None:
        self._release_host()

    def _release_host(self) -> None:
        host, self.host = self.host, None
        if host is not None:
            try:
                host.close()
            except DocaError as exc:
                log.error("closing the imported host mmap: %s", exc)


def _wait_for_client(transport: ComchTransport, target: TargetLink, abort: threading.Event,
                     timeout: float) -> ComchConnection:
    """Progress the comch server until one client is connected (no timeout, §11.3 step 7);
    keep the target connection alive meanwhile (reconnect if the target drops it)."""
    while transport.connection is None:
        if abort.is_set():
            raise aborted("while waiting for the initiator")
        try:
            target.channel.poll(0.0)
        except PeerClosedError:
            log.info("%s closed the idle control connection; reconnecting", target.name)
            target.reconnect(abort.is_set, transport.progress, timeout)
        except ProtocolError as exc:
            raise TargetFailure(exc.code, f"{target.name}: {exc}") from None
        transport.pump(CONNECT_POLL_INTERVAL)
    conn = transport.connection
    assert conn is not None
    return conn


def run_service(config: ZeroCopyConfig, abort: threading.Event, out: Printer = print) -> int:
    """Serve one initiator (§11.3, §11.4); 0 after ``shutdown_request``, else raise (→ ``EXCEPTION:``)."""
    with open_device(config.device) as dev:
        rep = open_host_representor(dev, config.device, config.representor)
        with rep, d.Pe() as pe:
            server, transport = open_comch_server(dev, rep, config.command_channel_name, pe)
            target: TargetLink | None = None
            client: ControlChannel | None = None
            try:
                ep = config.storage_server
                log.info("connecting to the storage target at %s", ep)
                retries = RetryLog(log, f"storage target {ep}", RETRY_INTERVAL)
                target = TargetLink(ep, connect_target(ep, abort.is_set, transport.progress, retries=retries))
                out(f"Connected to the storage target {ep}; waiting for an initiator on comch "
                    f"'{config.command_channel_name}'")
                conn = _wait_for_client(transport, target, abort, float(config.control_timeout))
                client = ControlChannel(transport, max_body=transport.max_frame_size - HEADER_SIZE,
                                        name=transport.name)
                serve_session(ZeroCopyService(config, dev, target, client, transport, conn, abort), out)
            finally:
                if client is not None:
                    client.close()
                else:
                    transport.close()
                try:
                    server.close()
                except DocaError as exc:
                    log.warning("closing the comch server: %s", exc)
                if target is not None:
                    target.close()
    return 0
