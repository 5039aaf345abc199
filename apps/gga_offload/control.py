"""The gga service's control phase (storage-apps-spec §3.7 "Service (gga)") and its lifetime.

:func:`run_service` opens the device and the host representor, connects to the data_1,
data_2 and data_p targets (TCP, retrying while they refuse, as the reference), starts the
comch server and waits for one initiator, then answers the initiator's requests
**positionally** (query, init, start, stop, shutdown), relaying each to the three targets:

* query → the targets must agree; the initiator is told ``2 × capacity`` and ``2 × block
  size`` (the "doubling");
* init → ``N = 2·T`` transactions per worker, a local region of ``cores × N × 2.5·B`` bytes
  exported for RDMA, the host's PCI export imported; ``init{N, cores, blob}`` relayed; then
  per core a worker and two ``create_rdma_connection`` rounds (io_data, io_control);
* start → relayed; then wait for the initiator's consumers and every context to run;
* stop → relayed; workers drained, their comch objects destroyed;
* shutdown → wait for the initiator's consumers to expire, relay, destroy the workers.

A request out of order gets ``UNEXPECTED`` (and consumes its position); a failure gets the
error (a target's error response is passed on with the target's code and text).

Endings: 0 after ``shutdown``; otherwise ``EXCEPTION: ...`` and status 1 — a target that
closes its control connection or does not answer within ``--control-timeout`` (before the data
path runs; the initiator gets an error response naming the target first when it waits for
one), the initiator going away (noticed at once, also while a request is relayed), or Ctrl-C
(in any phase, including the data path; teardown is bounded). The targets are watched while
the service waits for its initiator to connect, too: a lost one is logged and ends the service.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import doca_py as d
from doca_py.comch import ComchConnection
from doca_py.errors import DocaError, ErrorCode
from doca_py.types import AccessFlag

from apps.storage.wire.addressing import ChunkLayout, TargetRole, doubled_storage_details, merge_target_details
from apps.storage.channels.control_channel import ControlChannel, TcpTransport, close_target_channel, connect_tcp
from apps.storage.channels.comch_transport import ComchTransport, listen_comch_server
from apps.common.cli.config import Ipv4Endpoint
from apps.storage.wire.control import (
    ControlMessage, ErrorPayload, IdAllocator, InitStorage, MessageType, PhaseChecker, RdmaConnection,
    RdmaConnectionRole, StorageDetails, make_response, unexpected_message_text,
)
from apps.common.runtime.device import open_device
from apps.common.runtime.doca_features import doca_features
from apps.common.errors import PeerClosedError, ProtocolError, StorageAppError
from apps.storage.runtime.service_control import (
    ABORT_DRAIN_TIMEOUT, ABORTED_TEXT, DRAIN_TIMEOUT, TICK, BridgeControl, Printer, TargetFailure,
    open_host_representor, serve_session,
)
from apps.common.runtime.retry_log import RetryLog
from apps.common.runtime.stall import LoopClock, describe_stall, stall_note
from apps.common.runtime.stats import WorkerStats

from .config import GgaOffloadConfig
from .health import TargetHealth
from .planning import check_target_geometry
from .worker import SharedResources, Worker

__all__ = ["GgaService", "run_service", "ABORTED_TEXT", "TargetLink", "DRAIN_TIMEOUT", "ABORT_DRAIN_TIMEOUT"]

log = logging.getLogger("apps.gga_offload")

_TICK = TICK
CONNECT_RETRY_INTERVAL = 0.1
"""Seconds between two connection attempts to a target that is not listening yet."""
REGION_PERMISSIONS = (AccessFlag.LOCAL_READ_WRITE | AccessFlag.PCI_READ_WRITE | AccessFlag.RDMA_READ
                      | AccessFlag.RDMA_WRITE)
M = MessageType


@dataclass
class TargetLink:
    """The control connection to one target."""

    role: TargetRole
    endpoint: Ipv4Endpoint
    channel: ControlChannel

    @property
    def name(self) -> str:
        """``data_1 (a.b.c.d:port)``."""
        return f"{self.role.name.lower()} ({self.endpoint})"


@dataclass
class GgaService(BridgeControl[Worker]):
    """One initiator's session (runs on the control thread)."""

    log = log

    config: GgaOffloadConfig
    dev: d.Dev
    pe: d.Pe
    targets: list[TargetLink]
    client: ControlChannel
    comch: ComchTransport
    connection: ComchConnection
    abort: threading.Event
    write_flow: bool = True
    phases: PhaseChecker = field(default_factory=PhaseChecker.service)
    ids: IdAllocator = field(default_factory=IdAllocator)
    workers: list[Worker] = field(default_factory=list)
    stats: list[WorkerStats] = field(default_factory=list)
    target_details: StorageDetails | None = None
    region: d.Mmap | None = None
    host: d.Mmap | None = None
    _reported_worker_errors: set[int] = field(default_factory=set)
    health: TargetHealth = field(default_factory=TargetHealth)
    data_path_started: bool = False

    def may_degrade(self, link: TargetLink) -> bool:
        """Whether losing *link* leaves a degraded service (the data path runs and the two
        others are usable) rather than ending it."""
        return self.data_path_started and not (self.health.out - {link.role})

    def _lose_target(self, link: TargetLink, error: StorageAppError) -> None:
        """*link* failed: take it out (degraded mode) if possible, else end the service."""
        if not self.may_degrade(link):
            raise TargetFailure(error.code, str(error) + stall_note()) from None
        self.health.mark_out(link.role, f"was lost ({error})")

    def live_targets(self) -> list[TargetLink]:
        """The targets that are not out."""
        return [link for link in self.targets if link.role not in self.health.out]

    def _watch_targets(self) -> None:
        """Raise :class:`TargetFailure` if a target closed its connection (or sent garbage) and
        the service cannot go on degraded; log (and drop) unsolicited target messages."""
        for link in self.live_targets():
            try:
                msg = link.channel.poll(0.0)
            except PeerClosedError:
                self._lose_target(link, StorageAppError(ErrorCode.CONNECTION_RESET, f"storage target {link.name} "
                                                                                     f"closed its control connection"))
                continue
            except ProtocolError as exc:
                self._lose_target(link, StorageAppError(exc.code, f"storage target {link.name}: {exc}"))
                continue
            if msg is not None:
                log.warning("ignoring an unsolicited %s from storage target %s", msg, link.name)

    def relay(self, mtype: MessageType, correlation_id: int, payloads: Sequence[object] | None = None,
              links: Sequence[TargetLink] | None = None) -> list[ControlMessage]:
        """Send one *mtype* request to each target (own message ids, the client's correlation
        id) and wait ≤ ``--control-timeout`` for all responses (matched by message id).

        A target's ``error_response`` becomes a :class:`StorageAppError` with its code and
        text; a wrong type is ``UNEXPECTED``; a closed connection or the timeout ends the
        service (:class:`TargetFailure`) — unless the data path has run and the two other
        targets are usable: then that target is taken out (degraded mode) and the others answer.
        Targets that are out are skipped.
        """
        links = list(self.live_targets() if links is None else links)
        requests: dict[int, tuple[TargetLink, ControlMessage]] = {}
        for i, link in enumerate(links):
            payload = None if payloads is None else payloads[i]
            msg = ControlMessage(mtype, self.ids.next(), correlation_id, payload)  # type: ignore[arg-type]
            try:
                link.channel.send(msg)
            except StorageAppError as exc:
                self._lose_target(link, StorageAppError(exc.code, f"storage target {link.name}: {exc}"))
                continue
            requests[msg.message_id] = (link, msg)
        responses: dict[int, ControlMessage] = {}
        deadline = time.monotonic() + self.timeout
        # Once the data path runs, a target silent for --target-io-timeout is stalled: take it out then,
        # so the initiator's own wait for this answer does not run out first.
        io_limit = float(self.config.target_io_timeout) if self.data_path_started else 0.0
        degrade_at = min(deadline, time.monotonic() + io_limit) if io_limit > 0 else deadline
        clock = LoopClock(_TICK)
        while True:
            stall = clock.tick()
            if stall:  # this process did not run: the targets had no chance to be heard meanwhile
                deadline += stall
                degrade_at += stall
                log.warning("%s; the wait for the %s of the targets starts again", describe_stall(stall),
                            mtype.response_type.wire_name)
            for mid in [m for m, (link, _r) in requests.items() if link.role in self.health.out]:
                del requests[mid]  # taken out meanwhile (here or by a worker): not awaited any more
            if all(m in responses for m in requests):
                break
            self._check_abort()
            progressed = False
            answered = {responses[m_id].message_id for m_id in responses}
            for mid, (link, _req) in requests.items():
                if mid in answered:
                    continue
                if link.role in self.health.out:
                    continue
                try:
                    msg2 = link.channel.poll(0.0)
                except PeerClosedError:
                    self._lose_target(link, StorageAppError(ErrorCode.CONNECTION_RESET, f"storage target "
                                                            f"{link.name} closed its control connection"))
                    progressed = True
                    continue
                except ProtocolError as exc:
                    self._lose_target(link, StorageAppError(exc.code, f"storage target {link.name}: {exc}"))
                    progressed = True
                    continue
                if msg2 is None:
                    continue
                progressed = True
                if msg2.message_id not in requests or requests[msg2.message_id][0] is not link:
                    log.warning("ignoring %s from storage target %s (not awaited)", msg2, link.name)
                    continue
                responses[msg2.message_id] = msg2
            if progressed:
                continue
            now = time.monotonic()
            if now >= degrade_at:
                late = [requests[m][0] for m in requests if m not in responses]
                if len(late) == 1 and self.may_degrade(late[0]):
                    waited = self.timeout if degrade_at >= deadline else io_limit
                    self.health.mark_out(late[0].role, f"({late[0].endpoint}) did not answer a "
                                         f"{mtype.wire_name} within {waited:g} s")
                    continue
            if now >= deadline:
                waiting = [f"{requests[m][0].name} mid {m}" for m in requests if m not in responses]
                raise TargetFailure(ErrorCode.TIME_OUT, f"Timed out after {self.timeout:g} s waiting for the "
                                                        f"{mtype.response_type.wire_name} of {', '.join(waiting)}"
                                                        + stall_note())
            # Sleep on the sockets (and keep the comch Pe moving, watching the initiator) for a tick.
            self._relay_idle()
            fds = [link.channel.transport.fileno() for link, _ in requests.values()
                   if isinstance(link.channel.transport, TcpTransport)]
            select.select([f for f in fds if f >= 0], [], [], min(_TICK, max(0.0, deadline - time.monotonic())))
        out = []
        for mid, (link, req) in requests.items():
            if mid not in responses:
                continue
            resp = responses[mid]
            if resp.type is M.ERROR_RESPONSE:
                assert isinstance(resp.payload, ErrorPayload)
                raise StorageAppError(resp.payload.code, resp.payload.message)
            if resp.type is not req.type.response_type:
                raise StorageAppError(ErrorCode.UNEXPECTED, f"storage target {link.name}: "
                                      + unexpected_message_text(resp.type, req.type.response_type))
            out.append(resp)
        return out

    def relay_simple(self, mtype: MessageType, correlation_id: int) -> None:
        self.relay(mtype, correlation_id)

    # ------------------------------------------------------------------ handlers
    def _query(self, msg: ControlMessage) -> ControlMessage:
        responses = self.relay(M.QUERY_STORAGE_REQUEST, msg.correlation_id)
        details = [r.payload for r in responses]
        assert all(isinstance(p, StorageDetails) for p in details)
        common = merge_target_details([p for p in details if isinstance(p, StorageDetails)])
        problem = check_target_geometry(common.total_size, common.block_size)
        if problem is not None:
            raise StorageAppError(ErrorCode.BAD_STATE, problem)
        self.target_details = common
        doubled = doubled_storage_details(common)
        log.info("targets: %d bytes in blocks of %d; initiator sees %d bytes in blocks of %d", common.total_size,
                 common.block_size, doubled.total_size, doubled.block_size)
        return make_response(msg, doubled)

    def _init(self, msg: ControlMessage) -> ControlMessage:
        p, n = self._init_request(msg, self.target_details is not None)
        assert self.target_details is not None
        b = self.target_details.block_size * 2
        layout = ChunkLayout(block_size=b, transactions_per_worker=n, write_flow=self.write_flow)
        size = layout.region_size(p.core_count)
        self._release_memory()
        self.region = region = d.Mmap()
        region.allocate(size)
        region.set_permissions(REGION_PERMISSIONS)
        if doca_features().mmap_thread_safety:  # 3.0+; DOCA 2.6 has no such switch: nothing to enable there
            region.enable_thread_safety()
        region.add_dev(self.dev)
        region.start()
        try:
            self.host = host = d.Mmap.create_from_export(p.mmap_export_blob, self.dev)
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Failed to import the initiator's memory (export blob of "
                                            f"{len(p.mmap_export_blob)} bytes): {exc}") from None
        host_base, host_size = host.get_memrange()
        blob = region.export_rdma(self.dev)
        self.relay(M.INIT_STORAGE_REQUEST, msg.correlation_id, [InitStorage(n, p.core_count, blob)] * 3)
        shared = SharedResources(self.dev, self.connection, region, region.get_memrange()[0], host, host_base,
                                 host_size, layout, 2 * self.target_details.total_size, self.config.matrix_type,
                                 self.config.trigger_recovery_read_every_n, float(self.config.target_io_timeout),
                                 self.health)
        self._start_workers(lambda i, cpu: Worker(i, cpu, shared, self.abort), p.core_count, msg.correlation_id)
        log.info("initialised %d worker(s), %d transactions each, region of %d bytes; host region of %d bytes",
                 p.core_count, n, size, host_size)
        return make_response(msg)

    def _connect_rdma(self, w: Worker, role: RdmaConnectionRole, correlation_id: int) -> None:
        blobs = w.export(role)
        responses = self.relay(M.CREATE_RDMA_CONNECTION_REQUEST, correlation_id,
                               [RdmaConnection(w.index, role, blob) for blob in blobs])
        peer: list[bytes] = []
        for link, resp in zip(self.targets, responses):
            rp = resp.payload
            assert isinstance(rp, RdmaConnection)
            if rp.context_idx != w.index or rp.known_role is not role:
                raise StorageAppError(ErrorCode.UNEXPECTED, f"storage target {link.name} answered the {role.name} "
                                                            f"connection of context {w.index} for context "
                                                            f"{rp.context_idx} role {int(rp.role)}")
            peer.append(rp.connection_details)
        w.connect(role, peer)

    def _unexpected_during_start(self, other: ControlMessage) -> str:
        return "Received an unexpected control message while waiting for the data path to be ready"

    def _data_path_started(self) -> None:
        self.data_path_started = True  # from now on, one lost target degrades the service instead of ending it

    def _after_close_workers(self) -> None:
        self._release_memory()

    def release_resources(self) -> None:
        self._release_memory()

    def _release_memory(self) -> None:
        for mm in (self.host, self.region):
            if mm is not None:
                try:
                    mm.close()
                except DocaError as exc:
                    log.error("closing an mmap: %s", exc)
        self.host = self.region = None


def _watch_while_listening(targets: Sequence[TargetLink], abort: threading.Event) -> Callable[[], bool]:
    """The ``should_abort`` check of the wait for the initiator to connect: whether Ctrl-C
    came, after checking the targets (a closed or broken control connection is logged at once
    and ends the service with :class:`TargetFailure`; unsolicited messages are dropped)."""

    def check() -> bool:
        for link in targets:
            try:
                msg = link.channel.poll(0.0)
            except PeerClosedError:
                exc = TargetFailure(ErrorCode.CONNECTION_RESET, f"storage target {link.name} closed its control "
                                                                f"connection")
            except ProtocolError as err:
                exc = TargetFailure(err.code, f"storage target {link.name}: {err}")
            else:
                if msg is not None:
                    log.warning("ignoring an unsolicited %s from storage target %s", msg, link.name)
                continue
            log.error("%s while waiting for an initiator to connect; ending the service", exc)
            raise exc
        return abort.is_set()

    return check


def _connect_targets(config: GgaOffloadConfig, abort: threading.Event) -> list[TargetLink]:
    """Connect to data_1, data_2 and data_p in turn, retrying each while it refuses, all within
    ``--target-connect-timeout`` seconds of the call (0: for ever); the attempts go to the log."""
    links: list[TargetLink] = []
    limit = float(config.target_connect_timeout)
    deadline = time.monotonic() + limit if limit > 0 else None
    try:
        for role, ep in zip(TargetRole, (config.data_1_storage, config.data_2_storage, config.data_p_storage)):
            log.info("connecting to storage target %s at %s", role.name.lower(), ep)
            what = f"storage target {role.name.lower()} ({ep})"
            retries = RetryLog(log, what, CONNECT_RETRY_INTERVAL, bound=f"for up to {limit:g} s from the start "
                               f"(--target-connect-timeout)" if deadline is not None else "")
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                channel = connect_tcp(ep.host, ep.port, timeout=left, retry_interval=CONNECT_RETRY_INTERVAL,
                                      should_abort=abort.is_set, retries=retries)
            except StorageAppError as exc:
                if exc.code != ErrorCode.TIME_OUT:
                    raise
                reached = ", ".join(link.name for link in links) or "none"
                raise StorageAppError(ErrorCode.TIME_OUT, f"{what} was not reachable within {limit:g} s "
                                      f"(--target-connect-timeout): {retries.attempts} attempt(s) failed, the "
                                      f"last with {retries.last_reason or 'a time-out'}; targets reached: "
                                      f"{reached}") from None
            links.append(TargetLink(role, ep, channel))
    except BaseException:
        for link in links:
            link.channel.close()
        raise
    return links


def run_service(config: GgaOffloadConfig, abort: threading.Event, out: Printer = print) -> int:
    """Serve one initiator (§3.7); 0 after ``shutdown_request``, else raise (→ ``EXCEPTION:``)."""
    with open_device(config.device) as dev:
        rep = open_host_representor(dev, config.device, config.representor)
        with rep, d.Pe() as pe:
            targets = _connect_targets(config, abort)
            try:
                out(f"Connected to the storage targets; waiting for an initiator on comch "
                    f"'{config.command_channel_name}'")
                client, server, conn = listen_comch_server(dev, rep, config.command_channel_name, pe,
                                                           timeout=None,
                                                           should_abort=_watch_while_listening(targets, abort))
                transport = client.transport
                assert isinstance(transport, ComchTransport)
                try:
                    serve_session(GgaService(config, dev, pe, targets, client, transport, conn, abort), out)
                finally:
                    client.close()
                    try:
                        server.close()
                    except DocaError as exc:
                        log.warning("closing the comch server: %s", exc)
            finally:
                for link in targets:
                    close_target_channel(link.channel)  # a target with no session yet ends too
    return 0
