"""One zero-copy bridge worker: a thread owning a ``Pe`` and the four contexts of its data path
(storage-apps-spec §8.4, §11.6, §11.7).

Per worker (``N = 2·T`` slots):

* an io-message region of ``2·N × 64`` bytes: slot *j* has **A_j** at ``128·j`` (request
  path) and **B_j** at ``128·j + 64`` (response path), one ``doca_buf`` each;
* a comch **consumer** (``N`` receives, receive *j* into A_j) and a comch **producer**
  (``2·N`` sends: send *j* of B_j forwards the target's answers, and one send per A_j answers
  a refused request itself), both on the initiator's comch connection;
* an **io_control** ``Rdma`` context (``N`` sends of A_j, ``N`` receives into B_j) and an
  **io_data** ``Rdma`` context without tasks: the target issues its RDMA reads and writes on
  it, straight into the host memory the bridge re-exported.

Data path, in completion callbacks (§11.7): an initiator message lands in A_j and, once
checked (:func:`~.forwarding.check_request`), the same buffer is sent to the target; the
target's answer lands in some B_k, is checked against its request and sent on to the
initiator from the same buffer. The bridge never touches the data.

Differences from the reference, for robustness (the wire traffic of a well-behaved session
is the same):

* every request is checked; a bad one is answered with an error by the bridge itself;
* a request is **tracked** from its arrival until it is answered (by ``user_data``; a second
  request with a ``user_data`` still in flight is refused), so A_j is received into again
  only after the target answered. This is what lets a stop drain, and lets the bridge answer
  every request in flight with ``CONNECTION_RESET`` when the target fails, instead of
  leaving the initiator waiting forever;
* the target's ``result`` is passed on (the reference forces ``DOCA_SUCCESS``); an answer
  that does not match a request in flight is dropped with a warning;
* a producer send refused with ``AGAIN`` (the initiator has no receive posted) is retried
  from the worker loop, not by spinning inside a completion callback.

Threading: every DOCA object of a worker is created, progressed and destroyed in its
thread; the control thread drives it through the one-command mailbox of
:class:`~apps.common.runtime.worker_thread.WorkerThread`, every call bounded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import doca_py as d
from doca_py.comch import ComchConnection, ComchConsumerTaskPostRecv, ComchProducerTaskSend
from doca_py.errors import DocaError, ErrorCode
from doca_py.rdma import Rdma, RdmaConnection, RdmaTaskReceive, RdmaTaskSend
from doca_py.types import AccessFlag, CtxState

from apps.common.runtime.doca_features import doca_features
from apps.common.runtime.live_stats import LiveCounters
from apps.storage.runtime.bridge_worker import ABORT_DRAIN, IO_MESSAGE_PERMISSIONS, BridgeWorkerThread
from apps.storage.wire.control import RdmaConnectionRole
from apps.common.errors import StorageAppError
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, RESULT_TYPE, IoMessageType, make_response_in_place, \
    result_at, unpack_io_message_from
from apps.common.runtime.stats import WorkerStats

from .forwarding import check_request, finish_response_in_place, user_data_of

__all__ = ["SharedResources", "Worker", "RDMA_PERMISSIONS", "IO_MESSAGE_PERMISSIONS", "SLOT_STRIDE"]

log = logging.getLogger("apps.zero_copy")

RDMA_PERMISSIONS = AccessFlag.LOCAL_READ_WRITE | AccessFlag.RDMA_READ | AccessFlag.RDMA_WRITE
SLOT_STRIDE = 2 * IO_MESSAGE_SIZE
"""Bytes per slot *j*: A_j then B_j (§11.6)."""
_MAX_WARNINGS = 8    # per kind of problem, then DEBUG
_ZERO = bytes(IO_MESSAGE_SIZE)
_SEND, _ANSWER = 1, 2   # what a tracked request still waits for: its RDMA send, the target's answer
_READ, _WRITE = int(IoMessageType.READ), int(IoMessageType.WRITE)
_RESULT = RESULT_TYPE
_AGAIN = ErrorCode.AGAIN
_CONTEXTS = ("consumer", "producer", "io_control", "io_data")


@dataclass(frozen=True)
class SharedResources:
    """What the control thread hands every worker (read-only)."""

    dev: d.Dev
    connection: ComchConnection     # the initiator's comch connection
    capacity: int                   # the target's storage size (bytes)
    host_size: int                  # the host region the target reaches through the re-export
    transactions: int               # N = 2·T slots per worker


def _no_task() -> NoReturn:
    raise StorageAppError(ErrorCode.BAD_STATE, "the slot's task is not allocated")


class _Request:
    """A_j: one initiator message, from its arrival until it is answered."""

    __slots__ = ("index", "addr", "view", "buf", "recv_task", "send_task", "refuse_task", "user_data", "waiting",
                 "failed", "size", "requester", "storage", "is_response", "lane", "recv_submit", "send_submit")

    def __init__(self, index: int, addr: int, view: memoryview, buf: d.Buf) -> None:
        self.index, self.addr, self.view, self.buf = index, addr, view, buf
        self.is_response = False  # the producer's completions tell A_j from B_k by this (no isinstance per IO)
        self.size = self.requester = self.storage = 0  # what the answer must echo (io_size, both offsets)
        # The fast lane: the buffer's one-call functions, the tasks' one-call submits (bound once allocated).
        self.lane = buf.fast_lane()
        self.recv_submit: Callable[[], None] = _no_task
        self.send_submit: Callable[[], None] = _no_task
        self.recv_task: ComchConsumerTaskPostRecv | None = None
        self.send_task: RdmaTaskSend | None = None
        self.refuse_task: ComchProducerTaskSend | None = None
        self.user_data: int | None = None    # while tracked
        self.waiting = 0                     # _SEND | _ANSWER
        self.failed: tuple[int, str] | None = None  # to answer with once the send completed


class _Response:
    """B_k: one target answer, from its arrival until the initiator has it."""

    __slots__ = ("index", "addr", "view", "buf", "recv_task", "forward_task", "is_response", "lane", "recv_submit",
                 "forward_submit", "recv_len")

    def __init__(self, index: int, addr: int, view: memoryview, buf: d.Buf) -> None:
        self.index, self.addr, self.view, self.buf = index, addr, view, buf
        self.is_response = True
        self.lane = buf.fast_lane()
        self.recv_submit: Callable[[], None] = _no_task
        self.forward_submit: Callable[[], None] = _no_task
        self.recv_len: Callable[[], int] = _no_task  # the receive's result_len_reader
        self.recv_task: RdmaTaskReceive | None = None
        self.forward_task: ComchProducerTaskSend | None = None


class Worker(BridgeWorkerThread[SharedResources]):
    """A worker thread and its DOCA objects; the public methods run on the control thread."""

    _log = log

    def __init__(self, index: int, cpu: int, shared: SharedResources, abort: threading.Event) -> None:
        super().__init__(index, cpu, shared, abort, f"zero-copy-worker-{index}", shared.transactions)
        self._ctrl: Rdma | None = None
        self._data: Rdma | None = None
        self._conns: dict[RdmaConnectionRole, RdmaConnection] = {}
        self._requests: list[_Request] = []
        self._responses: list[_Response] = []
        self._tracked: dict[int, _Request] = {}     # user_data -> request waiting for the target
        self._retry: deque[_Request | _Response] = deque()
        self._comch_closing = False  # the comch objects are being destroyed (stop)
        self.target_failed: str | None = None
        # operation_count: target answers forwarded to the initiator (producer completions)
        self.target_error_count = 0  # forwarded answers that carry an error
        self._warned: dict[str, int] = {}
        self._limits = (shared.capacity, shared.host_size)  # bound once: checked per request

    # ------------------------------------------------------------------ control-thread API
    @property
    def ready(self) -> bool:
        """Whether the comch consumer and producer and both RDMA contexts are RUNNING."""
        return all(self._states.get(c) == CtxState.RUNNING for c in _CONTEXTS)

    def not_ready(self) -> list[str]:
        """The contexts that are not RUNNING (for error texts)."""
        return [c for c in _CONTEXTS if self._states.get(c) != CtxState.RUNNING]

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered."""
        return self._in_flight

    def stats(self) -> WorkerStats:
        """The §11.8 counters (no recovery count)."""
        return WorkerStats(self.cpu, self.operation_count, self.pe_hits, self.pe_misses)

    def live_counters(self) -> LiveCounters:
        """Answers forwarded, bytes, in flight and errors (refused or the target's), for live statistics."""
        return LiveCounters(self.operation_count, self.bytes_requested, self._in_flight,
                            self.refused_count + self.target_error_count)

    def export(self, role: RdmaConnectionRole) -> bytes:
        """Export the *role* context (one connection towards the target); its blob."""
        return self._call(lambda: self._export(role), None, f"export its {role.name.lower()} context")

    def connect(self, role: RdmaConnectionRole, blob: bytes) -> None:
        """Connect the *role* context with the target's blob."""
        self._call(lambda: self._connect(role, blob), None, f"connect its {role.name.lower()} context")

    # ------------------------------------------------------------------ thread main loop
    def _housekeeping(self) -> None:
        """Send the answers the initiator could not take yet again."""
        if self._retry:
            self._resubmit()

    # ------------------------------------------------------------------ creation
    def _state_cb(self, name: str) -> Callable[[Any, d.Ctx, CtxState, CtxState], None]:
        def changed(_ud: Any, _ctx: d.Ctx, prev: CtxState, nxt: CtxState) -> None:
            was = self._states.get(name)
            self._states[name] = nxt
            if was != CtxState.RUNNING or nxt == CtxState.RUNNING or self._closing:
                return
            if name.startswith("io_"):
                self._on_target_failed(f"its {name} RDMA context left RUNNING ({nxt.name})")
            elif self._running and not self._comch_closing:
                self._fail(f"the comch {name} left RUNNING ({nxt.name}): the initiator is gone")
        return changed

    def _create(self) -> None:
        n, dev = self.n, self.shared.dev
        pe, consumer, producer = self._open_comch(2 * n, n * SLOT_STRIDE, self._on_request, self._on_request_error,
                                                  self._on_answered, self._on_answer_error, 2 * n)
        self._ctrl = ctrl = Rdma(dev, RdmaConnectionRole.IO_CONTROL)
        self._data = data = Rdma(dev, RdmaConnectionRole.IO_DATA)
        # DOCA 2.6 has no connection callbacks: there a lost target fails the tasks, and the ctx leaving
        # RUNNING (the state callback) marks the target failed.
        conn_cbs = doca_features().rdma_connection_callbacks
        for ctx, name in ((ctrl, "io_control"), (data, "io_data")):
            pe.connect_ctx(ctx)
            ctx.set_permissions(RDMA_PERMISSIONS)
            ctx.set_state_changed_cb(self._state_cb(name))
            if conn_cbs:
                ctx.set_connection_state_callbacks(None, None, self._on_connection_lost, self._on_connection_lost)
        ctrl.task_send_set_conf(self._on_forwarded, self._on_forward_error, n)
        ctrl.task_receive_set_conf(self._on_target_answer, self._on_target_receive_error, n)
        for c in (consumer, producer, ctrl, data):
            c.start()
        pe.progress()

    def _export(self, role: RdmaConnectionRole) -> bytes:
        ctx = self._ctrl if role is RdmaConnectionRole.IO_CONTROL else self._data
        if ctx is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} was not created")
        if role in self._conns:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: its {role.name.lower()} context was already "
                                                       "exported")
        try:
            blob, conn = ctx.export()
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Failed to export local RDMA connection: {exc}") from None
        self._conns[role] = conn
        return bytes(blob)

    def _connect(self, role: RdmaConnectionRole, blob: bytes) -> None:
        ctx = self._ctrl if role is RdmaConnectionRole.IO_CONTROL else self._data
        conn = self._conns.get(role)
        if ctx is None or conn is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: its {role.name.lower()} context was not "
                                                       "exported")
        try:
            ctx.connect(bytes(blob), conn)
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Failed to import remote RDMA connection ({role.name.lower()}): "
                                            f"{exc}") from None

    # ------------------------------------------------------------------ data path start / stop
    def _start_data_path(self, remote_consumer_id: int) -> None:
        inv, io_mm, consumer, producer, ctrl = self._inv, self._io_mm, self._consumer, self._producer, self._ctrl
        conn = self._conns.get(RdmaConnectionRole.IO_CONTROL)
        if inv is None or io_mm is None or consumer is None or producer is None or ctrl is None or conn is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} was not created and connected")
        if not self.ready:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: not running: {', '.join(self.not_ready())}")
        if self._requests:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: the data path was already started")
        base = io_mm.get_memrange()[0]
        mem = io_mm.buffer
        m = IO_MESSAGE_SIZE
        for j in range(self.n):
            off = j * SLOT_STRIDE
            a = _Request(j, base + off, mem[off:off + m], inv.buf_get_by_addr(io_mm, base + off, m))
            a.recv_task = consumer.task_post_recv_alloc_init(a.buf, a)
            a.send_task = ctrl.task_send_allocate_init(conn, a.buf, a)
            a.refuse_task = producer.task_send_alloc_init(a.buf, None, remote_consumer_id, a)
            a.recv_submit, a.send_submit = a.recv_task.submitter(), a.send_task.submitter()
            self._requests.append(a)
            b = _Response(j, base + off + m, mem[off + m:off + 2 * m], inv.buf_get_by_addr(io_mm, base + off + m, m))
            b.recv_task = ctrl.task_receive_allocate_init(b.buf, b)
            b.forward_task = producer.task_send_alloc_init(b.buf, None, remote_consumer_id, b)
            b.recv_submit, b.forward_submit = b.recv_task.submitter(), b.forward_task.submitter()
            b.recv_len = b.recv_task.result_len_reader()
            self._responses.append(b)
        self._running = True
        # §11.6: every consumer receive, then every RDMA receive (before the start response goes out).
        for a in self._requests:
            self._post_request_receive(a)
        for b in self._responses:
            self._post_target_receive(b)
        if self.error is not None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: {self.error}")

    def _drain_over(self, start: float, drain_timeout: float) -> bool:
        if self._abort.is_set():  # Ctrl-C: do not wait the whole drain time
            drain_timeout = min(drain_timeout, ABORT_DRAIN)
        if time.monotonic() < start + drain_timeout:
            return False
        log.warning("%s: %d request(s) still unanswered after %.1f s; dropping them", self.name, self._in_flight,
                    time.monotonic() - start)
        return True

    def _close_comch(self) -> None:
        self._comch_closing = True
        try:
            for name, ctx in (("consumer", self._consumer), ("producer", self._producer)):
                if ctx is None:
                    continue
                try:
                    ctx.close()
                except Exception as exc:  # noqa: BLE001 - keep closing
                    log.error("%s: closing its comch %s failed: %s", self.name, name, exc)
                self._states.pop(name, None)
        finally:
            self._comch_closing = False
        for a in self._requests:
            a.recv_task = a.refuse_task = None
        for b in self._responses:
            b.forward_task = None
        self._retry.clear()
        self._consumer = self._producer = None

    def _warn(self, kind: str, text: str, *args: Any) -> None:
        n = self._warned.get(kind, 0) + 1
        self._warned[kind] = n
        log.log(logging.WARNING if n <= _MAX_WARNINGS else logging.DEBUG, text, *args)

    # ------------------------------------------------------------------ initiator side
    def _post_request_receive(self, a: _Request) -> None:
        a.user_data = None
        a.waiting = 0
        a.failed = None
        task = a.recv_task
        if task is None or not self._running:
            return
        a.buf.reset_data_len()  # A_j's window never moves: only empty it
        try:
            task.submit()
        except DocaError as exc:
            self._fail(f"failed to post a comch receive: {exc}")

    def _on_request(self, task: ComchConsumerTaskPostRecv, a: _Request, _ud: Any) -> None:
        if self._closing:
            return
        self._in_flight += 1
        view = a.view
        n = a.lane.get_data_len()
        typ, ud, _res, size, requester, storage = unpack_io_message_from(view)
        capacity, host_size = self._limits
        # check_request() inline; it runs (for its text) only when something is wrong
        if n != IO_MESSAGE_SIZE or not ((typ == _READ or typ == _WRITE) and 0 < size and storage + size <= capacity
                                        and requester + size <= host_size):
            problem = check_request(view, n, capacity=capacity, host_size=host_size)
            if problem is not None:
                if n < IO_MESSAGE_SIZE:
                    view[n:] = _ZERO[n:]  # the answer echoes what arrived, zero-padded (no stale bytes)
                self._refuse(a, problem.code, problem.reason)
                return
        if not self._running:
            self._refuse(a, ErrorCode.BAD_STATE, f"the bridge is not serving requests ({self.error or 'stopped'})")
        elif self.target_failed is not None:
            self._refuse(a, ErrorCode.CONNECTION_RESET, f"the storage target failed ({self.target_failed})")
        elif ud in self._tracked:
            self._refuse(a, ErrorCode.BAD_STATE, f"user_data {ud} is already in flight")
        else:
            send = a.send_task
            assert send is not None
            a.user_data = ud
            a.waiting = _SEND | _ANSWER
            a.size, a.requester, a.storage = size, requester, storage
            self.bytes_requested += size
            self._tracked[ud] = a
            try:
                a.send_submit()  # the same buffer: the bytes go to the target as received
            except DocaError as exc:
                del self._tracked[ud]
                a.waiting = 0
                self._refuse(a, exc.code, f"forwarding to the storage target failed: {exc}")

    def _on_request_error(self, task: ComchConsumerTaskPostRecv, a: _Request, _ud: Any) -> None:
        if self._running and not self._closing and not self._comch_closing:
            self._fail(f"a comch receive failed: {task.get_status().name}")

    def _refuse(self, a: _Request, code: ErrorCode | int, why: str) -> None:
        """Answer the request in A_j with *code* from A_j itself."""
        self.refused_count += 1
        ud = user_data_of(a.view, IO_MESSAGE_SIZE)
        self._warn("refuse", "%s: answering user_data %s with %s: %s", self.name, ud,
                   getattr(code, "name", code), why)
        make_response_in_place(a.view, code)
        a.buf.set_data(a.addr, IO_MESSAGE_SIZE)  # the answer is all 64 bytes (A_j's whole window), whatever arrived
        self._submit_answer(a)

    def _submit_answer(self, slot: _Request | _Response) -> None:
        task = slot.refuse_task if isinstance(slot, _Request) else slot.forward_task
        if task is None or self._comch_closing:
            self._answer_lost(slot, "the comch producer is gone")
            return
        # A forwarded B_k holds the 64 bytes it received; a refused A_j was re-aimed by _refuse.
        try:
            task.submit()
        except DocaError as exc:
            if exc.code == ErrorCode.AGAIN:
                self._retry.append(slot)  # the initiator has no receive posted: later
                return
            self._answer_lost(slot, f"submitting it failed: {exc}")
            self._fail(f"the comch producer cannot send: {exc}")

    def _resubmit(self) -> None:
        for _ in range(len(self._retry)):
            slot = self._retry.popleft()
            self._submit_answer(slot)
            if self._retry and self._retry[-1] is slot:  # still AGAIN: keep the order, try later
                break

    def _answer_lost(self, slot: _Request | _Response, why: str) -> None:
        self._warn("lost", "%s: an answer to the initiator is lost: %s", self.name, why)
        self._in_flight -= 1
        if isinstance(slot, _Response):
            self._post_target_receive(slot)

    def _on_answered(self, task: ComchProducerTaskSend, slot: _Request | _Response, _ud: Any) -> None:
        self._in_flight -= 1
        if not slot.is_response:  # a refused request answered from A_j
            self._post_request_receive(slot)  # type: ignore[arg-type]
            return
        self.operation_count += 1
        # the next step inline: B_k takes the target's next answer (_post_target_receive)
        recv = slot.recv_task
        if recv is None or self._closing or self.target_failed is not None:
            return
        slot.lane.reset_data_len()  # B_k's window never moves; a short answer is never forwarded
        try:
            slot.recv_submit()
        except DocaError as exc:
            self._on_target_failed(f"posting an RDMA receive failed: {exc}")

    def _on_answer_error(self, task: ComchProducerTaskSend, slot: _Request | _Response, _ud: Any) -> None:
        status = task.get_status()
        if self._closing or self._comch_closing:
            return
        if status == ErrorCode.AGAIN:
            self._retry.append(slot)
            return
        self._answer_lost(slot, status.name)
        self._reply_failed(status)

    # ------------------------------------------------------------------ target side
    def _post_target_receive(self, b: _Response) -> None:
        task = b.recv_task
        if task is None or self._closing or self.target_failed is not None:
            return
        b.buf.reset_data_len()  # B_k's window never moves; a short answer is never forwarded
        try:
            task.submit()
        except DocaError as exc:
            self._on_target_failed(f"posting an RDMA receive failed: {exc}")

    def _on_forwarded(self, task: RdmaTaskSend, a: _Request, _ud: Any) -> None:
        a.waiting &= ~_SEND
        if self._closing:
            return
        if a.failed is not None:  # the target failed while the send was in flight
            code, why = a.failed
            a.failed = None
            self._refuse(a, code, why)
        elif not a.waiting:  # the answer came first: A_j takes the next request (_post_request_receive)
            a.user_data = None
            recv = a.recv_task
            if recv is None or not self._running:
                return
            a.lane.reset_data_len()  # A_j's window never moves: only empty it
            try:
                a.recv_submit()
            except DocaError as exc:
                self._fail(f"failed to post a comch receive: {exc}")

    def _on_forward_error(self, task: RdmaTaskSend, a: _Request, _ud: Any) -> None:
        a.waiting &= ~_SEND
        if self._closing:
            return
        status = task.get_status()
        if a.user_data is not None and self._tracked.get(a.user_data) is a:
            del self._tracked[a.user_data]
        a.waiting = 0
        a.failed = None
        self._refuse(a, status, f"forwarding to the storage target failed: {status.name}")
        self._on_target_failed(f"an RDMA send failed: {status.name}")

    def _on_target_answer(self, task: RdmaTaskReceive, b: _Response, _ud: Any) -> None:
        if self._closing:
            return
        n = b.recv_len()
        view = b.view
        ud: int | None
        if n == IO_MESSAGE_SIZE:
            typ, ud, result, size, requester, storage = unpack_io_message_from(view)
        else:
            typ = result = size = requester = storage = -1
            ud = user_data_of(view, n)
        a = None if ud is None else self._tracked.pop(ud, None)
        if a is None:
            self._warn("stray", "%s: dropping a %d-byte answer of the storage target for user_data %s, which is not "
                       "in flight", self.name, n, ud)
            self._post_target_receive(b)
            return
        a.waiting &= ~_ANSWER
        if n != IO_MESSAGE_SIZE:
            # Answer the request from A_j (once its send completed) and reuse B_k at once.
            self._post_target_receive(b)
            why = f"the storage target answered with {n} bytes instead of {IO_MESSAGE_SIZE}"
            if a.waiting & _SEND:
                a.failed = (int(ErrorCode.UNEXPECTED), why)
            else:
                self._refuse(a, ErrorCode.UNEXPECTED, why)
            return
        # finish_response_in_place() inline: a result that echoes the request goes on as it is
        if typ != _RESULT or size != a.size or requester != a.requester or storage != a.storage:
            problem = finish_response_in_place(view, a.view)
            if problem is not None:
                self._warn("answer", "%s: %s (user_data %d)", self.name, problem, ud)
            result = result_at(view)
        if result:
            self.target_error_count += 1
            self._warn("target_error", "%s: the storage target answered user_data %d with error %d", self.name, ud,
                       result)
        if not a.waiting:  # the send completed first: A_j takes the next request (_post_request_receive)
            a.user_data = None
            recv = a.recv_task
            if recv is not None and self._running:
                a.lane.reset_data_len()
                try:
                    a.recv_submit()
                except DocaError as exc:
                    self._fail(f"failed to post a comch receive: {exc}")
        # the answer goes to the initiator from B_k (_submit_answer)
        forward = b.forward_task
        if forward is None or self._comch_closing:
            self._answer_lost(b, "the comch producer is gone")
            return
        try:
            b.forward_submit()
        except DocaError as exc:
            if exc.code == _AGAIN:
                self._retry.append(b)  # the initiator has no receive posted: later
                return
            self._answer_lost(b, f"submitting it failed: {exc}")
            self._fail(f"the comch producer cannot send: {exc}")

    def _on_target_receive_error(self, task: RdmaTaskReceive, b: _Response, _ud: Any) -> None:
        if (self._running or self._in_flight) and not self._closing:
            self._on_target_failed(f"an RDMA receive failed: {task.get_status().name}")

    def _on_connection_lost(self, conn: RdmaConnection, _conn_ud: Any, role: Any) -> None:
        if not self._closing:
            self._on_target_failed(f"the {RdmaConnectionRole(role).name.lower()} connection to the storage target "
                                   "was lost")

    def _on_target_failed(self, why: str) -> None:
        """The target is unusable: answer every request waiting for it with ``CONNECTION_RESET``."""
        if self._closing or self.target_failed is not None:
            return
        self.target_failed = why
        if not self._running and not self._tracked:
            return
        log.error("%s: the storage target failed (%s); %d request(s) in flight are answered with an error",
                  self.name, why, len(self._tracked))
        tracked, self._tracked = self._tracked, {}
        text = f"the storage target failed ({why})"
        for a in tracked.values():
            a.waiting &= ~_ANSWER
            if a.waiting & _SEND:
                a.failed = (int(ErrorCode.CONNECTION_RESET), text)
            else:
                self._refuse(a, ErrorCode.CONNECTION_RESET, text)

    # ------------------------------------------------------------------ teardown
    def _teardown(self) -> None:
        self._closing = True
        self._running = False
        self._close_comch()
        self._close_quietly([("io_control context", self._ctrl), ("io_data context", self._data),
                             ("buffer inventory", self._inv)])
        slots: list[_Request | _Response] = [*self._requests, *self._responses]
        for slot in slots:
            slot.view.release()
        self._requests.clear()
        self._responses.clear()
        self._tracked.clear()
        self._close_quietly([("io-message mmap", self._io_mm), ("progress engine", self._pe)])
        self._ctrl = self._data = None
        self._inv = self._io_mm = self._pe = None
        self._in_flight = 0
