"""The control phase the bridges (gga offload, zero copy) share: one initiator's session.

A bridge opens the device and the host representor (:func:`open_host_representor`), starts
a comch server, connects to its storage target(s) and waits for one initiator; then
:class:`BridgeControl` answers the initiator's requests **positionally** (query, init,
start, stop, shutdown) with :meth:`BridgeControl.serve`. The shared parts are here: the
abort check, watching the workers, waiting for the initiator's next message, dispatching an
in-order request to the bridge's handler, waiting for the data path to be ready on
``start``, draining on ``stop``, waiting for the consumers to expire on ``shutdown`` and the
bounded teardown of the workers (:func:`serve_session`).

A bridge supplies what differs: how it watches and relays to its target(s)
(:meth:`BridgeControl._watch_targets`) and its ``_query``, ``_init`` and
``_connect_rdma`` handlers.

The bridge never waits on one peer while another fails: while it waits for the initiator it
watches the target(s) every :data:`TICK` (a lost target is logged at once, then degrades or
ends the session as the bridge decides); while it waits for the target(s) during a relay, its
relay loop calls :meth:`BridgeControl._relay_idle`, which notices an initiator that left
(:class:`InitiatorGone`, the session ends at once instead of after ``--control-timeout``); and a
target failing during a relayed request gets the initiator an error response naming the target
before the session ends and any connection is closed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import doca_py as d
from doca_py.errors import DocaError, ErrorCode

from apps.storage.channels.comch_transport import ComchTransport
from apps.storage.channels.control_channel import ControlChannel
from apps.storage.wire.addressing import doubled_transaction_count
from apps.storage.wire.control import (
    ControlMessage, InitStorage, MessageType, PhaseChecker, RdmaConnectionRole, error_response_for_exception,
    make_response,
)
from apps.common.errors import PeerClosedError, StorageAppError
from apps.common.runtime.stall import LoopClock, describe_stall, stall_note
from apps.common.runtime.stats import WorkerStats, format_worker_stats

__all__ = ["ABORTED_TEXT", "DRAIN_TIMEOUT", "STOP_DRAIN_MIN", "ABORT_DRAIN_TIMEOUT", "TICK", "Printer", "TargetFailure",
           "InitiatorGone", "INITIATOR_GONE_TEXT", "INITIATOR_UNANSWERED_TEXT", "INITIATOR_LOST_TEXT", "aborted",
           "BridgeWorker", "BridgeControl", "open_host_representor", "serve_session"]

Printer = Callable[[str], None]
ABORTED_TEXT = "Aborted: User requested abort"
DRAIN_TIMEOUT = 5.0
"""Seconds ``stop_storage_request`` lets the requests in flight be answered, counted from the
arrival of the request: the relay to the target(s) and the drain share them."""
STOP_DRAIN_MIN = 0.3
"""Seconds the drain gets at least, when the relay of ``stop`` used up :data:`DRAIN_TIMEOUT`
(a stalled target taken out after ``--target-io-timeout``): the bridge answers ``stop``
within ``max(relay, DRAIN_TIMEOUT) + STOP_DRAIN_MIN`` and the initiator waits longer
(``apps.initiator.control.stop_response_timeout``)."""
ABORT_DRAIN_TIMEOUT = 0.3
TICK = 0.05
M = MessageType


def aborted(what: str = "") -> StorageAppError:
    """``CONNECTION_ABORTED`` "Aborted: User requested abort" (with *what* in parentheses)."""
    return StorageAppError(ErrorCode.CONNECTION_ABORTED, ABORTED_TEXT + (f" ({what})" if what else ""))


class TargetFailure(StorageAppError):
    """A target closed its control connection, broke the protocol or did not answer in time:
    the bridge must end."""


INITIATOR_GONE_TEXT = "the initiator closed the comch connection"
INITIATOR_UNANSWERED_TEXT = ("the initiator stopped answering: a comch send to it failed with IO_FAILED once the "
                             "transport's retry window ran out (it is stopped, hung or cut off), and the connection "
                             "was dropped")
INITIATOR_LOST_TEXT = "the initiator's comch connection was dropped"
"""The start of the message when the bridge cannot tell how (a worker did not run within ``--control-timeout``)."""


class InitiatorGone(StorageAppError):
    """The initiator's comch connection went away (while a request was being handled): the
    bridge must end. *unanswered*: it was dropped because the initiator did not answer, not closed
    by it; *note* is appended (a stop of this process just before, `stall_note`)."""

    def __init__(self, detail: str = "", *, unanswered: bool = False, note: str = "", undetermined: str = "") -> None:
        text = INITIATOR_UNANSWERED_TEXT if unanswered else INITIATOR_GONE_TEXT
        if undetermined and not unanswered:  # the evidence never came in: say so, blame nobody
            text = f"{INITIATOR_LOST_TEXT}; whether the initiator closed it or stopped answering is unknown: " \
                   f"{undetermined}"
        super().__init__(ErrorCode.CONNECTION_RESET, text + (f" ({detail})" if detail else "") + note)
        self.unanswered = unanswered


class BridgeWorker(Protocol):
    """What the control phase needs of a bridge's worker."""

    @property
    def index(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def error(self) -> object: ...

    @property
    def ready(self) -> bool: ...

    @property
    def alive(self) -> bool: ...

    @property
    def initiator_unanswered(self) -> bool: ...

    def progress_mark(self) -> int: ...

    def progressed_past(self, mark: int, /) -> bool: ...

    def not_ready(self) -> list[str]: ...

    def start_data_path(self, consumer_id: int, /) -> None: ...

    def stop_data_path(self, drain_timeout: float, /) -> None: ...

    def start(self) -> None: ...

    def destroy(self) -> None: ...

    def stats(self) -> WorkerStats: ...


W = TypeVar("W", bound=BridgeWorker)


def open_host_representor(dev: d.Dev, device: str, representor: str) -> d.DevRep:
    """The representor *representor* (a PCI address) of *dev* (named *device* in errors)."""
    try:
        return dev.open_rep_by_pci_addr(representor)
    except DocaError as exc:
        raise StorageAppError(exc.code, f"no representor with PCI address {representor!r} on "
                                        f"{device!r}: {exc}") from None


class BridgeControl(Generic[W]):
    """The positional control phase of a bridge (a mixin for the bridge's session dataclass).

    The session provides the attributes below; :attr:`log` is the bridge's logger. Class
    switches: :attr:`tell_client_on_target_failure` (answer the request that a target failure
    interrupted before ending; on by default), :attr:`initiator_close_ends` (the initiator
    closing its connection during a request ends the session instead of becoming an error
    response; on by default) and :attr:`start_timeout_code`.
    """

    config: Any
    client: ControlChannel
    comch: ComchTransport
    abort: threading.Event
    phases: PhaseChecker
    workers: list[W]
    stats: list[WorkerStats]
    _reported_worker_errors: set[int]

    log: logging.Logger = logging.getLogger("apps.storage")
    tell_client_on_target_failure: bool = True
    initiator_close_ends: bool = True
    start_timeout_code: ErrorCode = ErrorCode.TIME_OUT

    @property
    def timeout(self) -> float:
        """``--control-timeout`` in seconds (bounds every wait for the target(s) and the data path)."""
        return float(self.config.control_timeout)

    # ------------------------------------------------------------------ bridge hooks
    def _watch_targets(self) -> None:
        """Check the target connection(s) between two waits (raise :class:`TargetFailure`)."""
        raise NotImplementedError

    def _query(self, msg: ControlMessage) -> ControlMessage:
        raise NotImplementedError

    def _init(self, msg: ControlMessage) -> ControlMessage:
        raise NotImplementedError

    def relay_simple(self, mtype: MessageType, correlation_id: int) -> None:
        """Relay a payload-less *mtype* request to the target(s) and wait for the answer(s)."""
        raise NotImplementedError

    def _unexpected_during_start(self, other: ControlMessage) -> str:
        """The text of the error when the initiator sends *other* while ``start`` waits."""
        return f"Unexpected {other.type.wire_name} while processing start_storage_request"

    def _data_path_started(self) -> None:
        """Called once every worker runs its data path."""

    def _report_closed_workers(self) -> None:
        """Called after the workers were destroyed and their statistics collected."""

    def _after_close_workers(self) -> None:
        """Called at the end of :meth:`close_workers`."""

    def release_resources(self) -> None:
        """Release what the session holds besides its workers (mmaps)."""

    # ------------------------------------------------------------------ waiting
    def _check_abort(self) -> None:
        if self.abort.is_set():
            raise aborted()

    def _check_initiator(self) -> None:
        """Raise :class:`InitiatorGone` if the initiator's comch connection went away."""
        if not self.comch.is_connected:
            raise self._initiator_gone()

    def _initiator_gone(self) -> InitiatorGone:
        """Why the initiator's connection went away, as far as this bridge can tell: it did not answer (a
        comch send to it, control or data path, failed with ``IO_FAILED``), or it closed the connection;
        with a note when this bridge had itself just been stopped (its sends then went unanswered because
        of its own pause).

        Called once the loss was seen. The transport fails what waited for the initiator before it reports
        the loss: the control channel's sends on this thread's Pe ahead of the disconnect event, the workers'
        on their own Pes before it posts that event (doca_py's comch, emulated and served as libdoca:
        ``EmuComchConnection.die``). So the answer
        is certain once every worker has run a whole ``Pe.progress()`` begun after now
        (`BridgeWorkerThread.progress_mark`), however long the machine makes that take; ``--control-timeout``
        bounds the wait only in case a worker hangs, and then the message says the cause is unknown."""
        marks = [(w, w.progress_mark()) for w in self.workers]
        deadline = time.monotonic() + self.timeout
        clock = LoopClock(TICK / 5)
        while True:
            if self.comch.unanswered or any(w.initiator_unanswered for w in self.workers):
                return InitiatorGone(unanswered=True, note=stall_note())
            behind = [w.name for w, mark in marks if not w.progressed_past(mark)]
            if not behind:
                return InitiatorGone(note=stall_note())
            stall = clock.tick()
            if stall:  # this process did not run: neither did its workers
                deadline += stall
            if self.abort.is_set():
                return InitiatorGone(undetermined=f"the wait for {', '.join(behind)} to report was aborted",
                                     note=stall_note())
            if time.monotonic() >= deadline:
                return InitiatorGone(undetermined=f"{', '.join(behind)} did not run its progress engine within "
                                                  f"{self.timeout:g} s (--control-timeout) to report its sends to "
                                                  f"the initiator", note=stall_note())
            self.abort.wait(TICK / 5)

    def _relay_idle(self) -> None:
        """One idle step of a relay (the bridge waits for its target(s)): keep the comch PE
        moving and end at once if the initiator left meanwhile (:class:`InitiatorGone`)."""
        self.comch.progress()
        self._check_initiator()

    def _watch_targets_logged(self, context: str) -> None:
        """:meth:`_watch_targets`, logging a :class:`TargetFailure` at once (with *context*)."""
        try:
            self._watch_targets()
        except TargetFailure as exc:
            self.log.error("%s %s; ending the session", exc, context)
            raise

    def _watch_workers(self) -> None:
        for w in self.workers:
            if w.error is not None and w.index not in self._reported_worker_errors:
                self._reported_worker_errors.add(w.index)
                self.log.error("%s reported: %s", w.name, w.error)

    def next_client_message(self) -> ControlMessage:
        """The initiator's next control message, watching the target(s) and the workers meanwhile."""
        while True:
            self._check_abort()
            self._watch_targets_logged("while waiting for the initiator's next request")
            self._watch_workers()
            try:
                msg = self.client.poll(TICK)
            except PeerClosedError:
                raise self._initiator_gone() from None
            if msg is not None:
                return msg

    # ------------------------------------------------------------------ phase loop
    def serve(self, out: Printer) -> None:
        """Answer the initiator until ``shutdown_request`` has been handled; then print the
        statistics."""
        while not self.phases.done:
            msg = self.next_client_message()
            self.log.debug("received %s", msg)
            response = self.phases.check(msg)
            if response is None:
                try:
                    response = self.handle(msg)
                except TargetFailure as exc:
                    if self.tell_client_on_target_failure:
                        self._tell_client(error_response_for_exception(msg, exc))
                    raise
            else:
                self.log.warning("%s", getattr(response.payload, "message", response))
            try:
                self.client.send(response)
            except StorageAppError as exc:
                raise StorageAppError(exc.code, f"Failed to answer the initiator: {exc}") from None
        if self.stats:
            out(format_worker_stats(self.stats))

    def _tell_client(self, response: ControlMessage) -> None:
        """Best effort: the initiator learns why the bridge is ending."""
        try:
            self.client.send(response)
            self.comch.flush(0.5)
        except (StorageAppError, DocaError) as exc:
            self.log.debug("could not answer the initiator: %s", exc)

    def handle(self, msg: ControlMessage) -> ControlMessage:
        """The response to an in-order request (an ``error_response`` if it fails)."""
        handlers: dict[MessageType, Callable[[ControlMessage], ControlMessage]] = {
            M.QUERY_STORAGE_REQUEST: self._query,
            M.INIT_STORAGE_REQUEST: self._init,
            M.START_STORAGE_REQUEST: self._start,
            M.STOP_STORAGE_REQUEST: self._stop,
            M.SHUTDOWN_REQUEST: self._shutdown,
        }
        try:
            return handlers[msg.type](msg)
        except (TargetFailure, InitiatorGone):
            raise
        except (StorageAppError, DocaError, ValueError) as exc:
            if isinstance(exc, PeerClosedError) and self.initiator_close_ends:
                raise self._initiator_gone() from None
            if self.abort.is_set():
                raise aborted() from None
            self.log.error("%s failed: %s", msg.type.wire_name, exc)
            if isinstance(exc, ValueError):
                return error_response_for_exception(msg, StorageAppError(ErrorCode.INVALID_VALUE, str(exc)))
            return error_response_for_exception(msg, exc)

    # ------------------------------------------------------------------ shared handlers
    def _init_request(self, msg: ControlMessage, queried: bool) -> tuple[InitStorage, int]:
        """The ``init_storage_request`` payload of *msg*, checked (after a successful query —
        *queried* —, at most as many cores as ``--cpu`` names, transactions), and ``N = 2·T``."""
        p = msg.payload
        assert isinstance(p, InitStorage)
        if not queried:
            raise StorageAppError(ErrorCode.BAD_STATE, "init_storage_request before a successful query")
        cpus = self.config.cpu
        if not 0 < p.core_count <= len(cpus):
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"Requested storage to use {p.core_count} cores but "
                                                           f"only {len(cpus)} are configured")
        if p.transaction_count == 0:
            raise StorageAppError(ErrorCode.INVALID_VALUE, "transaction_count must not be 0")
        return p, doubled_transaction_count(p.transaction_count)

    def _connect_rdma(self, w: W, role: RdmaConnectionRole, correlation_id: int) -> None:
        raise NotImplementedError

    def _start_workers(self, make_worker: Callable[[int, int], W], count: int, correlation_id: int) -> None:
        """Start *count* workers (``make_worker(index, cpu)``, cpus from ``--cpu``), each
        followed by its two RDMA connections (io_data, then io_control)."""
        cpus = self.config.cpu
        for i in range(count):
            w = make_worker(i, cpus[i])
            self.workers.append(w)
            w.start()
            for role in (RdmaConnectionRole.IO_DATA, RdmaConnectionRole.IO_CONTROL):
                self._connect_rdma(w, role, correlation_id)

    def live_consumers(self) -> list[int]:
        """Announced initiator consumers that have not expired, in arrival order."""
        expired = set(self.comch.expired_consumer_ids)
        return [c for c in self.comch.remote_consumer_ids if c not in expired]

    def _start(self, msg: ControlMessage) -> ControlMessage:
        if not self.workers:
            raise StorageAppError(ErrorCode.BAD_STATE, "start_storage_request before a successful init")
        self.relay_simple(M.START_STORAGE_REQUEST, msg.correlation_id)
        deadline = time.monotonic() + self.timeout
        clock = LoopClock(TICK)
        while len(self.live_consumers()) < len(self.workers) or not all(w.ready for w in self.workers):
            self._check_abort()
            stall = clock.tick()
            if stall:  # this process did not run: nothing could be announced to it meanwhile
                deadline += stall
                self.log.warning("%s; the wait for the data path to be ready starts again", describe_stall(stall))
            self._watch_targets()
            self._check_initiator()
            other = self.client.poll(0.0)
            if other is not None:
                raise StorageAppError(ErrorCode.UNEXPECTED, self._unexpected_during_start(other))
            dead = [w.name for w in self.workers if not w.alive]
            if dead:
                raise StorageAppError(ErrorCode.BAD_STATE, f"{', '.join(dead)} stopped")
            if time.monotonic() >= deadline:
                waiting = [f"{w.name}: {', '.join(w.not_ready())}" for w in self.workers if not w.ready]
                raise StorageAppError(self.start_timeout_code,
                                      f"the data path was not ready within {self.timeout:g} s "
                                      f"({len(self.live_consumers())} of {len(self.workers)} initiator consumers "
                                      f"announced" + (f"; not running: {'; '.join(waiting)}" if waiting else "") + ")")
            self.comch.pump(TICK / 5)
        for w, consumer_id in zip(self.workers, self.live_consumers()):
            w.start_data_path(consumer_id)
        self._data_path_started()
        self.log.info("data path started on %d worker(s)", len(self.workers))
        return make_response(msg)

    def _stop(self, msg: ControlMessage) -> ControlMessage:
        drain_until = time.monotonic() + DRAIN_TIMEOUT
        self.relay_simple(M.STOP_STORAGE_REQUEST, msg.correlation_id)
        self._stop_workers(max(STOP_DRAIN_MIN, drain_until - time.monotonic()))
        return make_response(msg)

    def _shutdown(self, msg: ControlMessage) -> ControlMessage:
        deadline = time.monotonic() + self.timeout
        while self.live_consumers():
            self._check_abort()
            if time.monotonic() >= deadline:
                self.log.warning("%d initiator consumer(s) did not expire within %g s; shutting down anyway",
                                 len(self.live_consumers()), self.timeout)
                break
            self.comch.pump(TICK)
        self.relay_simple(M.SHUTDOWN_REQUEST, msg.correlation_id)
        self.close_workers()
        return make_response(msg)

    # ------------------------------------------------------------------ teardown
    def _stop_workers(self, drain_timeout: float) -> None:
        for w in self.workers:
            if not w.alive:
                continue
            try:
                w.stop_data_path(drain_timeout)
            except StorageAppError as exc:
                self.log.error("stopping %s: %s", w.name, exc)

    def close_workers(self, *, failing: bool = False) -> None:
        """Stop and destroy every worker; keep their statistics. The drain is brief when
        aborted, at most 1 s when the bridge is failing, else :data:`DRAIN_TIMEOUT`."""
        if self.workers:
            drain = ABORT_DRAIN_TIMEOUT if self.abort.is_set() else \
                min(1.0, self.timeout) if failing else DRAIN_TIMEOUT
            self._stop_workers(drain)
            for w in self.workers:
                w.destroy()
            self.stats = [w.stats() for w in self.workers]
            self._report_closed_workers()
            self.workers = []
        self._after_close_workers()


def serve_session(service: BridgeControl[Any], out: Printer) -> None:
    """Run *service* to its end; whatever way it ends, stop the workers (briefly when failing),
    print their statistics and release the session's resources."""
    try:
        service.serve(out)
    finally:
        if service.workers:
            service.close_workers(failing=True)
            if service.stats:
                out(format_worker_stats(service.stats))
        service.release_resources()
