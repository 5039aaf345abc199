"""One storage-target worker: a thread that owns a ``Pe`` and two RDMA contexts (§8.3).

Each worker has

* an **io_control** :class:`~doca_py.rdma.Rdma` context with ``T'`` receive and ``T'`` send
  tasks, one per 64-byte io-message slot (receive and send share the slot's bytes);
* an **io_data** context with ``T'`` RDMA read and ``T'`` RDMA write tasks, each pair using
  two buffers per slot: one over the storage, one over the requester's exported region
  (imported with :meth:`Mmap.create_from_export`). Their windows span the whole region, so an
  IO only moves their data section (``set_data``; the reference re-aims with
  ``reuse_by_data`` / ``reuse_by_addr``).

Per IO the worker does only what the IO needs: every buffer and task of a slot is allocated
once (`_start_data_path`); the response is written over the request in place and sent by the
slot's send buffer, which never moves; the receive buffer is only emptied
(``reset_data_len``) before it is posted again; nothing is logged but refusals and failures.

Data path: receive → check → transfer (``read`` = RDMA *write* from storage to the
requester, ``write`` = RDMA *read* from the requester into storage) → the received buffer
turned into the response and sent back → on send completion the receive is re-posted.
Unlike the reference every message is bounds-checked first
(:func:`~apps.storage.wire.addressing.target_transfer_error`); a refused one is answered at once
with ``INVALID_VALUE`` and touches no memory.

Threading: everything DOCA-side is created, progressed and destroyed inside the worker
thread (an emulated ``Pe`` refuses to be progressed from two threads). The control thread
talks to it only through :meth:`Worker._call`, a one-command-at-a-time mailbox, as the
reference's command mailbox does; each call is bounded by a deadline. Python threads are
enough here: the emulated backend does its I/O on its own thread and copies outside the
GIL-heavy paths, and one process keeps storage memory shared without extra plumbing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import doca_py as d
from doca_py.errors import DocaError, ErrorCode
from doca_py.rdma import Rdma, RdmaConnection, RdmaTaskRead, RdmaTaskReceive, RdmaTaskSend, RdmaTaskWrite
from doca_py.types import AccessFlag, CtxState

from apps.common.runtime.doca_features import doca_features
from apps.common.runtime.live_stats import LiveCounters
from apps.storage.wire.addressing import target_transfer_error
from apps.storage.wire.control import RdmaConnectionRole
from apps.common.errors import StorageAppError
from apps.common.runtime.worker_thread import WorkerThread
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, RESULT_TYPE, IoMessage, IoMessageType, \
    make_response_in_place, pack_u32_into, unpack_io_message_from
from apps.common.runtime.stats import WorkerStats

__all__ = ["StorageRegion", "Worker", "MAX_TRANSACTIONS", "RDMA_PERMISSIONS"]

log = logging.getLogger("apps.storage_target")

"""Seconds the control thread waits for a worker command (as the reference's mailbox)."""
MAX_TRANSACTIONS = 0xFFFF
"""Largest ``transaction_count`` accepted (the services send ``2·T``, a u16)."""
RDMA_PERMISSIONS = AccessFlag.LOCAL_READ_WRITE | AccessFlag.RDMA_READ | AccessFlag.RDMA_WRITE
_SPIN = 32           # consecutive empty progress() calls before the data path sleeps
_DATA_SLEEP = 0.02   # longest sleep of the data path (woken early by completions)
_IDLE_SLEEP = 0.1
_MAX_WARNINGS = 8    # refused io messages logged at WARNING per worker, then DEBUG
_ABORT_DRAIN = 0.5   # longest drain once Ctrl-C was pressed
_ZERO_MSG = bytes(IO_MESSAGE_SIZE)
_RESULT = RESULT_TYPE
_pack_u32 = pack_u32_into
_READ = int(IoMessageType.READ)
_WRITE = int(IoMessageType.WRITE)


@dataclass(frozen=True, slots=True)
class StorageRegion:
    """The target's storage: a started, thread-safe mmap shared (read-only) by the workers."""

    mmap: d.Mmap
    base: int
    size: int


class _Slot:
    """One io-message slot: its 64 bytes, buffers and the four tasks that use them."""

    __slots__ = ("index", "addr", "io", "recv_buf", "send_buf", "storage_buf", "remote_buf", "recv_task",
                 "send_task", "write_task", "read_task", "recv_submit", "send_submit", "write_submit", "read_submit",
                 "recv_reset", "storage_set", "remote_set", "recv_len")

    def __init__(self, index: int, addr: int, io: memoryview) -> None:
        self.index, self.addr, self.io = index, addr, io
        self.recv_buf: d.Buf | None = None
        self.send_buf: d.Buf | None = None
        self.storage_buf: d.Buf | None = None
        self.remote_buf: d.Buf | None = None
        self.recv_task: RdmaTaskReceive | None = None
        self.send_task: RdmaTaskSend | None = None
        self.write_task: RdmaTaskWrite | None = None
        self.read_task: RdmaTaskRead | None = None
        # The fast lane (Task.submitter, Buf.fast_lane): each per-IO step one call, bound once the tasks exist.
        self.recv_submit: Callable[[], None] = _no_tasks
        self.send_submit: Callable[[], None] = _no_tasks
        self.write_submit: Callable[[], None] = _no_tasks
        self.read_submit: Callable[[], None] = _no_tasks
        self.recv_reset: Callable[[], None] = _no_tasks
        self.storage_set: Callable[[int, int], None] = _no_tasks
        self.remote_set: Callable[[int, int], None] = _no_tasks
        self.recv_len: Callable[[], int] = _no_tasks

    def bind_fast_lane(self) -> None:
        """Keep the one-call submit of each task and the re-aim functions of the buffers (tasks allocated)."""
        assert self.recv_task is not None and self.send_task is not None and self.write_task is not None \
            and self.read_task is not None and self.recv_buf is not None and self.storage_buf is not None \
            and self.remote_buf is not None
        self.recv_submit = self.recv_task.submitter()
        self.send_submit = self.send_task.submitter()
        self.write_submit = self.write_task.submitter()
        self.read_submit = self.read_task.submitter()
        self.recv_reset = self.recv_buf.fast_lane().reset_data_len
        self.storage_set = self.storage_buf.fast_lane().set_data
        self.remote_set = self.remote_buf.fast_lane().set_data
        self.recv_len = self.recv_task.result_len_reader()


def _no_tasks(*_args: int) -> NoReturn:
    raise StorageAppError(ErrorCode.BAD_STATE, "the slot's tasks are not allocated")


class Worker(WorkerThread):
    """A worker thread and its DOCA objects; the public methods run on the control thread.

    *abort* (set by Ctrl-C) makes waits of abortable calls raise ``CONNECTION_ABORTED``.
    """

    def __init__(self, index: int, cpu: int, dev: d.Dev, storage: StorageRegion, remote_blob: bytes,
                 transaction_count: int, abort: threading.Event) -> None:
        self.index, self.cpu = index, cpu
        self._dev, self._storage, self._remote_blob = dev, storage, bytes(remote_blob)
        self.transaction_count = transaction_count
        super().__init__(cpu, abort, f"storage-target-worker-{index}", work_units=transaction_count)
        # -- worker-thread state (read by the control thread only as plain values) --
        self._pe: d.Pe | None = None
        self._inv: d.BufInventory | None = None
        self._io_mm: d.Mmap | None = None
        self._remote_mm: d.Mmap | None = None
        self._ctrl: Rdma | None = None
        self._data: Rdma | None = None
        self._conns: dict[RdmaConnectionRole, RdmaConnection] = {}
        self._slots: list[_Slot] = []
        self._remote_base = 0
        self.remote_size = 0
        self._max_message = 0
        self._running = False      # the data path accepts io messages
        self._closing = False      # teardown: completions are flushes, not work
        self._in_flight = 0        # accepted io messages whose response has not completed
        self.error: str | None = None
        self.operation_count = 0   # RDMA read/write transfers completed (successful or not)
        self.refused_count = 0     # io messages answered with INVALID_VALUE without a transfer
        self.transfer_errors = 0   # transfers that failed or could not be submitted
        self.bytes_requested = 0   # io_size of the io messages accepted
        self.received = 0          # io messages received (the requester's sign of life in the data path)
        self.pe_hits = 0
        self.pe_misses = 0
        self._ctx_running: dict[RdmaConnectionRole, bool] = {r: False for r in RdmaConnectionRole}
        self.connected: set[RdmaConnectionRole] = set()   # roles whose connect() succeeded

    # ------------------------------------------------------------------ control-thread API
    @property
    def name(self) -> str:
        """``worker <index> (cpu <id>)``."""
        return f"worker {self.index} (cpu {self.cpu})"

    @property
    def ready(self) -> bool:
        """Both RDMA contexts are RUNNING."""
        return all(self._ctx_running.values())

    def stats(self) -> WorkerStats:
        """Counters for the §7.4 statistics block."""
        return WorkerStats(self.cpu, self.operation_count, self.pe_hits, self.pe_misses)

    def live_counters(self) -> LiveCounters:
        """Transfers, bytes, in flight and errors (refused or failed), for live statistics."""
        return LiveCounters(self.operation_count, self.bytes_requested, self._in_flight,
                            self.refused_count + self.transfer_errors)

    def start(self) -> None:
        """Start the thread and create the worker's objects (raises what creation raised)."""
        self._thread.start()
        self._call(self._create, None, "create its RDMA contexts")

    def connect(self, role: RdmaConnectionRole, peer_blob: bytes) -> bytes:
        """Export this worker's context of *role*, connect it to *peer_blob*; our blob."""
        blob = self._call(lambda: self._connect(role, peer_blob), None, f"connect its {role.name} "
                          "context")
        self.connected.add(role)
        return blob

    def start_data_path(self) -> None:
        """Allocate the tasks and post every receive (both contexts must be RUNNING)."""
        self._call(self._start_data_path, None, "start its data path")

    def stop_data_path(self, drain_timeout: float) -> None:
        """Stop accepting io messages and wait (≤ *drain_timeout* s) for in-flight ones."""
        self._call(lambda: self._stop_data_path(drain_timeout), None, "stop its data path",
                   abortable=False)  # the worker bounds the drain by drain_timeout itself

    # ------------------------------------------------------------------ worker thread
    def _step(self) -> None:
        pe = self._pe
        if pe is None:
            self._sleep(_IDLE_SLEEP)
            return
        if self._running or self._in_flight:
            idle = 0
            while idle < _SPIN:
                if pe.progress():
                    self.pe_hits += 1
                    idle = 0
                else:
                    self.pe_misses += 1
                    idle += 1
                if self._posted != self._taken or self._exit:  # a command waits (no call per poll)
                    return
            self._sleep(_DATA_SLEEP)
        elif not pe.progress():
            self._sleep(_IDLE_SLEEP)

    # -- creation ---------------------------------------------------------------------------
    def _create(self) -> None:
        dev = self._dev
        n = self.transaction_count
        self._pe = pe = d.Pe()
        self._inv = d.BufInventory(4 * n)
        self._io_mm = io_mm = d.Mmap()
        io_mm.allocate(n * IO_MESSAGE_SIZE)
        io_mm.set_permissions(AccessFlag.LOCAL_READ_WRITE)
        io_mm.add_dev(dev)
        io_mm.start()
        try:
            self._remote_mm = d.Mmap.create_from_export(self._remote_blob, dev)
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Failed to import the requester's memory (mmap export blob of "
                                            f"{len(self._remote_blob)} bytes): {exc}") from None
        self._remote_base, self.remote_size = self._remote_mm.get_memrange()
        self._max_message = Rdma.cap_get_max_message_size(dev.as_devinfo())
        self._ctrl = ctrl = Rdma(dev, RdmaConnectionRole.IO_CONTROL)
        self._data = data = Rdma(dev, RdmaConnectionRole.IO_DATA)
        # DOCA 2.6 has no connection callbacks: there a lost requester fails the tasks, and the ctx leaving
        # RUNNING (_on_state_changed) ends the worker.
        conn_cbs = doca_features().rdma_connection_callbacks
        for ctx in (ctrl, data):
            pe.connect_ctx(ctx)
            ctx.set_permissions(RDMA_PERMISSIONS)
            ctx.set_state_changed_cb(self._on_state_changed)
            if conn_cbs:
                ctx.set_connection_state_callbacks(None, None, self._on_connection_lost, self._on_connection_lost)
        ctrl.task_receive_set_conf(self._on_received, self._on_receive_error, n)
        ctrl.task_send_set_conf(self._on_sent, self._on_send_error, n)
        data.task_write_set_conf(self._on_transferred, self._on_transfer_error, n)
        data.task_read_set_conf(self._on_transferred, self._on_transfer_error, n)
        ctrl.start()
        data.start()

    def _connect(self, role: RdmaConnectionRole, peer_blob: bytes) -> bytes:
        ctx = self._ctrl if role is RdmaConnectionRole.IO_CONTROL else self._data
        if ctx is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} has no {role.name} context")
        if role in self._conns:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: the {role.name.lower()} connection was "
                                                       "already requested")
        blob, conn = ctx.export()
        self._conns[role] = conn
        ctx.connect(bytes(peer_blob), conn)
        return blob

    def _on_state_changed(self, role: Any, ctx: Any, prev: CtxState, nxt: CtxState) -> None:
        was = self._ctx_running[role]
        self._ctx_running[role] = nxt == CtxState.RUNNING
        if was and nxt != CtxState.RUNNING and (self._running or self._in_flight):
            self._fail(f"the {RdmaConnectionRole(role).name.lower()} context left RUNNING ({nxt.name})")

    def _on_connection_lost(self, conn: RdmaConnection, conn_ud: Any, role: Any) -> None:
        if self._running:
            self._fail(f"the {RdmaConnectionRole(role).name.lower()} connection to the requester was lost")

    # -- data path --------------------------------------------------------------------------
    def _start_data_path(self) -> None:
        ctrl, data, inv, io_mm, rmm = self._ctrl, self._data, self._inv, self._io_mm, self._remote_mm
        if ctrl is None or data is None or inv is None or io_mm is None or rmm is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} was not created")
        if not self.ready:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: the RDMA contexts are not running")
        ctrl_conn, data_conn = self._conns[RdmaConnectionRole.IO_CONTROL], self._conns[RdmaConnectionRole.IO_DATA]
        st = self._storage
        io_base = io_mm.get_memrange()[0]
        io_mem = io_mm.buffer
        for j in range(self.transaction_count):
            addr = io_base + j * IO_MESSAGE_SIZE
            s = _Slot(j, addr, io_mem[j * IO_MESSAGE_SIZE:(j + 1) * IO_MESSAGE_SIZE])
            s.recv_buf = inv.buf_get_by_addr(io_mm, addr, IO_MESSAGE_SIZE)
            s.send_buf = inv.buf_get_by_data(io_mm, addr, IO_MESSAGE_SIZE)
            s.storage_buf = inv.buf_get_by_addr(st.mmap, st.base, st.size)
            s.remote_buf = inv.buf_get_by_addr(rmm, self._remote_base, self.remote_size)
            s.recv_task = ctrl.task_receive_allocate_init(s.recv_buf, s)
            s.send_task = ctrl.task_send_allocate_init(ctrl_conn, s.send_buf, s)
            s.write_task = data.task_write_allocate_init(data_conn, s.storage_buf, s.remote_buf, s)
            s.read_task = data.task_read_allocate_init(data_conn, s.remote_buf, s.storage_buf, s)
            s.bind_fast_lane()
            self._slots.append(s)
        self._running = True
        for s in self._slots:
            self._post_receive(s)
            if not self._running:
                raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: {self.error}")

    def _stop_data_path(self, drain_timeout: float) -> None:
        self._running = False
        pe = self._pe
        if pe is None:
            return
        start = time.monotonic()
        deadline = start + drain_timeout
        while self._in_flight > 0 and self.error is None:
            if self._abort.is_set():  # Ctrl-C: do not wait the whole drain time
                deadline = min(deadline, start + _ABORT_DRAIN)
            if time.monotonic() >= deadline:
                log.warning("%s: %d io messages still in flight after %.1f s; dropping them", self.name,
                            self._in_flight, drain_timeout)
                return
            if pe.progress():
                self.pe_hits += 1
            else:
                self.pe_misses += 1
                self._sleep(_DATA_SLEEP)

    def _fail(self, reason: str) -> None:
        if self._closing:
            return
        if self.error is None:
            log.error("%s: %s; stopping its data path", self.name, reason)
            self.error = reason
        self._running = False

    def _post_receive(self, s: _Slot) -> None:
        assert s.recv_buf is not None and s.recv_task is not None
        s.recv_buf.reset_data_len()  # the window never moves: only empty the data
        try:
            s.recv_task.submit()
        except DocaError as exc:
            self._fail(f"failed to post a receive: {exc}")

    def _refuse(self, s: _Slot, why: str, msg: IoMessage | None) -> None:
        self.refused_count += 1
        level = logging.WARNING if self.refused_count <= _MAX_WARNINGS else logging.DEBUG
        log.log(level, "%s: refusing io message%s: %s", self.name,
                "" if msg is None else f" (user_data {msg.user_data})", why)
        self._respond(s, ErrorCode.INVALID_VALUE)

    def _on_received(self, task: RdmaTaskReceive, s: _Slot, _role: Any) -> None:
        if self._closing:
            return
        self.received += 1
        self._in_flight += 1
        n = s.recv_len()
        if n != IO_MESSAGE_SIZE:
            s.io[n:] = _ZERO_MSG[n:]  # the answer echoes what arrived, zero-padded (no stale bytes)
            self._refuse(s, f"{n} bytes received, an io message is {IO_MESSAGE_SIZE}", None)
            return
        typ, user_data, _result, size, requester_offset, storage_offset = unpack_io_message_from(s.io)
        st = self._storage
        # The checks of target_transfer_error() and the message size limit, inline; a refusal takes the
        # slow path below for its text.
        if not ((typ == _READ or typ == _WRITE) and 0 < size <= self._max_message
                and storage_offset + size <= st.size and requester_offset + size <= self.remote_size):
            msg = IoMessage.unpack(s.io)
            problem = target_transfer_error(msg, st.size, self.remote_size)
            if problem is None and msg.io_size > self._max_message:
                problem = f"io_size {msg.io_size} exceeds the largest RDMA message of {self._max_message} bytes"
            self._refuse(s, problem or "io message refused", msg)
            return
        local, remote = st.base + storage_offset, self._remote_base + requester_offset
        self.bytes_requested += size
        try:
            # Both windows span their whole region (checked once): only the data sections move, the
            # source's to the bytes to send, the destination's to where they land (empty).
            if typ == _READ:  # storage -> requester: RDMA write
                s.storage_set(local, size)
                s.remote_set(remote, 0)
                s.write_submit()
            else:             # requester -> storage: RDMA read
                s.remote_set(remote, size)
                s.storage_set(local, 0)
                s.read_submit()
        except DocaError as exc:
            log.error("%s: failed to submit the transfer of user_data %d: %s", self.name, user_data, exc)
            self.transfer_errors += 1
            self._respond(s, exc.code)

    def _on_receive_error(self, task: RdmaTaskReceive, s: _Slot, _role: Any) -> None:
        if self._running:
            self._fail(f"a receive failed: {task.get_status().name}")

    def _on_transferred(self, task: RdmaTaskWrite | RdmaTaskRead, s: _Slot, _role: Any) -> None:
        # The transaction's next step inline: answer (what _respond does, for SUCCESS).
        self.operation_count += 1
        if self._closing:
            return
        io = s.io
        _pack_u32(io, 0, _RESULT)   # make_response_in_place: type and result, the rest echoed
        _pack_u32(io, 16, 0)
        try:
            s.send_submit()
        except DocaError as exc:
            self._in_flight -= 1
            if self._running:
                self._fail(f"failed to send a response: {exc}")

    def _on_transfer_error(self, task: RdmaTaskWrite | RdmaTaskRead, s: _Slot, _role: Any) -> None:
        self.operation_count += 1
        self.transfer_errors += 1
        if self._running:
            log.error("%s: an RDMA %s failed: %s", self.name, "write" if isinstance(task, RdmaTaskWrite) else "read",
                      task.get_status().name)
        self._respond(s, ErrorCode.IO_FAILED)

    def _respond(self, s: _Slot, code: ErrorCode | int) -> None:
        if self._closing:  # a transfer flushed by the teardown: nobody to answer
            return
        assert s.send_task is not None
        make_response_in_place(s.io, code)  # the send buffer covers these 64 bytes for good
        try:
            s.send_task.submit()
        except DocaError as exc:
            self._in_flight -= 1
            if self._running:
                self._fail(f"failed to send a response: {exc}")

    def _on_sent(self, task: RdmaTaskSend, s: _Slot, _role: Any) -> None:
        self._in_flight -= 1
        if self._running:  # the next step inline: post the slot's receive again (_post_receive)
            s.recv_reset()  # the window never moves: only empty the data
            try:
                s.recv_submit()
            except DocaError as exc:
                self._fail(f"failed to post a receive: {exc}")

    def _on_send_error(self, task: RdmaTaskSend, s: _Slot, _role: Any) -> None:
        self._in_flight -= 1
        if self._running:
            self._fail(f"a response send failed: {task.get_status().name}")

    # -- teardown ---------------------------------------------------------------------------
    def _teardown(self) -> None:
        """Close everything this thread created, children first; log (never raise) failures."""
        self._closing = True
        self._running = False
        for name, obj in (("io_control context", self._ctrl), ("io_data context", self._data),
                          ("buffer inventory", self._inv), ("io-message mmap", self._io_mm),
                          ("imported requester mmap", self._remote_mm), ("progress engine", self._pe)):
            if obj is None:
                continue
            try:
                obj.close()
            except Exception as exc:  # noqa: BLE001 - keep closing the rest
                log.error("%s: closing its %s failed: %s", self.name, name, exc)
            if obj is self._data:  # no task can use the slots' memory any more
                for s in self._slots:
                    s.io.release()
                self._slots.clear()
        self._ctrl = self._data = None
        self._inv = None
        self._io_mm = self._remote_mm = None
        self._pe = None
        self._in_flight = 0
