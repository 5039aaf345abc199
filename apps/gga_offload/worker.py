"""One gga-service worker: a thread owning a ``Pe`` and every context of its data path (§8.2).

Per worker (``N = 2·T`` transactions):

* a comch **consumer** (N receive tasks, transaction *j* bound to its 64-byte initiator slot)
  and a comch **producer** (N send tasks on the *same* slots, to the initiator consumer
  paired with this worker);
* per target (data_1, data_2, data_p) an **io_control** ``Rdma`` context (N send tasks, one
  per transaction, and N receive tasks for the responses) and an **io_data** ``Rdma`` context
  (no tasks: only the targets read and write through it);
* ``Ec`` (create and recover), ``Compress`` (LZ4 stream decompress) and ``Dma`` (memcpy).

Every transaction owns one chunk of the shared local region (:class:`~apps.storage.wire.addressing.ChunkLayout`)
and runs the state machine of §8.2: read = two half-block fetches (or one half + parity and an EC
recover with a **real** recover matrix), then LZ4 decompress straight into the initiator's memory;
write = DMA from the initiator, software LZ4 compress, EC create, three half-block writes.

Differences from the reference, all for robustness: a malformed initiator message is answered
with an error (never dropped, never used to address memory), a failed block ends the IO with its
error instead of being overwritten by the next block's success, a compressed-block header read
back from storage is checked before decompressing, a target that fails fails exactly the
transactions waiting for it (each answered with an error), and an engine (Ec/Compress/Dma)
whose task failed is restarted instead of stopping the worker.

Threading: all DOCA objects of a worker are created, progressed and destroyed in its thread (a
``Pe`` is single-threaded); the control thread drives it through a one-command mailbox
(:meth:`Worker._call`), bounded by a deadline. Python threads suffice on the emulated backend:
the engines do their I/O on their own threads, and the copy-heavy paths (RDMA between processes,
decompression through liblz4, EC kernels) run outside the interpreter. On hardware the same
structure holds; a process per core would only be needed for more CPU-side throughput.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.comch import ComchConnection, ComchConsumerTaskPostRecv, ComchProducerTaskSend
from doca_py.compress import CompressTaskDecompressLz4Stream
from doca_py.dma import DmaTaskMemcpy
from doca_py.ec import EcTaskCreate, EcTaskRecover
from doca_py.errors import DocaError, ErrorCode
from doca_py.rdma import Rdma, RdmaConnection, RdmaTaskReceive, RdmaTaskSend
from doca_py.types import AccessFlag, CtxState

from apps.storage.wire import compressed_block as cb
from apps.storage.wire import lz4_blocks
from apps.storage.wire.addressing import COMPRESSED_DATA_OFFSET, COMPRESSED_SIZE_OFFSET, ChunkLayout, ReadMode, \
    TargetRole
from apps.storage.runtime.bridge_worker import ABORT_DRAIN, BridgeWorkerThread
from apps.storage.wire.control import RdmaConnectionRole
from apps.storage.errors import StorageAppError
from apps.storage.runtime.worker_thread import COMMAND_TIMEOUT
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessage, IoMessageType, make_response_in_place
from apps.storage.runtime.offload import matrix_type_from_name
from apps.storage.runtime.stats import WorkerStats

from .health import TargetHealth, role_name
from .planning import BlockPlan, RecoverySchedule, RequestProblem, check_compressed_size, check_initiator_request, \
    recovery_roles

__all__ = ["SharedResources", "Worker", "COMMAND_TIMEOUT", "RDMA_PERMISSIONS", "Transaction"]

log = logging.getLogger("apps.gga_offload")

"""Seconds the control thread waits for a worker command (as the reference's mailbox)."""
RDMA_PERMISSIONS = AccessFlag.LOCAL_READ_WRITE | AccessFlag.RDMA_READ | AccessFlag.RDMA_WRITE
_MAX_WARNINGS = 8
_MAX_SPIN_LOOPS = 1024  # progress rounds between two housekeeping rounds under continuous load
_DEADLINE_SCAN = 0.1    # seconds between two scans for target requests past --target-io-timeout
_U32 = struct.Struct(">I")
# The io message (apps.storage.wire.io_message), packed and unpacked here without building IoMessage objects
# on the data path: type, user_data, result, io_size, requester_offset, storage_offset (padding zeroed).
_IO_MSG = struct.Struct(">I4xQIIQQ24x")
_IO_HEAD = struct.Struct(">I4xQI")  # type, user_data, result
_ZERO_MSG = bytes(IO_MESSAGE_SIZE)
_RESULT = int(IoMessageType.RESULT)
_SUCCESS = int(ErrorCode.SUCCESS)
_AGAIN = int(ErrorCode.AGAIN)
_READ_TYPE = int(IoMessageType.READ)
_WRITE_TYPE = int(IoMessageType.WRITE)
_READ_ROLES = {ReadMode.NORMAL: (int(TargetRole.DATA_1), int(TargetRole.DATA_2)),
               ReadMode.RECOVER_A: (int(TargetRole.DATA_P), int(TargetRole.DATA_2)),
               ReadMode.RECOVER_B: (int(TargetRole.DATA_1), int(TargetRole.DATA_P))}
_WRITE_ROLES = tuple(int(r) for r in TargetRole)
_ROLE_NAMES = tuple(r.name.lower() for r in TargetRole)

# action bits (§8.2; recover_a/recover_b are one bit plus the transaction's read mode)
REPLY = 1 << 0
ADVANCE = 1 << 2
FETCH_FROM_STORAGE = 1 << 8
RECOVER = 1 << 9
DECOMPRESS = 1 << 11
FETCH_FROM_INITIATOR = 1 << 16
PRODUCE_EC = 1 << 17
COMMIT = 1 << 18
READ_ACTIONS = FETCH_FROM_STORAGE | DECOMPRESS | ADVANCE | REPLY
WRITE_ACTIONS = FETCH_FROM_INITIATOR | PRODUCE_EC | COMMIT | ADVANCE | REPLY
_SLOTS_PER_TXN = 4  # initiator message, data_1 / data_2 / data_p requests


@dataclass(frozen=True)
class SharedResources:
    """What the control thread creates at init and every worker uses (read-only)."""

    dev: d.Dev
    connection: ComchConnection
    region: d.Mmap          # local chunks, RDMA-exported to the targets
    region_base: int
    host: d.Mmap            # the initiator's memory, imported from its PCI export
    host_base: int
    host_size: int
    layout: ChunkLayout
    capacity: int           # initiator-visible bytes (2 × target capacity)
    matrix_type: str
    recovery_every_n: int
    target_io_timeout: float = 0.0  # seconds; 0 = no per-IO deadline towards the targets
    health: TargetHealth = field(default_factory=TargetHealth)  # targets that are out (degraded mode)


class Transaction:
    """One of the worker's ``N`` transactions: its slots, tasks and progress."""

    __slots__ = ("index", "slot_addr", "slot", "req_slots", "recv_task", "send_task", "rdma_sends", "pending",
                 "actions", "request", "blocks", "block", "mode", "error", "error_text", "send_mask", "resp_mask",
                 "op_busy", "busy", "chunk_base", "half_offsets", "alt_offsets", "alt_base", "where", "data_base",
                 "deadline")

    def __init__(self, index: int, slot_addr: int, slot: memoryview, req_slots: list[memoryview],
                 chunk_base: int = 0, half_offsets: tuple[int, int, int] = (0, 0, 0),
                 alt_offsets: tuple[int, int, int] | None = None) -> None:
        self.index = index
        self.slot_addr = slot_addr
        self.slot = slot
        self.req_slots = req_slots
        self.chunk_base = chunk_base          # this transaction's chunk in the local region
        self.half_offsets = half_offsets      # where data_1 / data_2 / data_p halves live in it
        # Degraded recovery reads put the halves at 1.5·B (data_1) and 2·B (data_2) of the chunk (the
        # parity stays at B): a stalled target's late RDMA write lands at its normal place, never there.
        self.alt_offsets = alt_offsets
        self.alt_base = alt_offsets[0] if alt_offsets is not None else chunk_base
        self.recv_task: ComchConsumerTaskPostRecv | None = None
        self.send_task: ComchProducerTaskSend | None = None
        self.rdma_sends: list[RdmaTaskSend] = []
        self.reset()

    def reset(self) -> None:
        """Idle again (after the reply completed)."""
        self.pending = 0
        self.actions = 0
        self.request: IoMessage | None = None
        self.blocks = 0
        self.block = 0
        self.mode = ReadMode.NORMAL
        self.error = int(ErrorCode.SUCCESS)
        self.error_text = ""
        self.send_mask = 0
        self.resp_mask = 0
        self.op_busy = False
        self.busy = False
        self.where = self.half_offsets        # the data_1 / data_2 / data_p places of the current block
        self.data_base = self.chunk_base      # where the current block's compressed form starts
        self.deadline = 0.0                   # when the current target requests are overdue

    @property
    def outstanding(self) -> bool:
        """Whether an asynchronous step is still running."""
        return self.op_busy or bool(self.send_mask or self.resp_mask)

    def set_error(self, code: ErrorCode | int, text: str) -> None:
        """Record the first failure; the transaction then only replies."""
        if self.error == ErrorCode.SUCCESS:
            self.error = int(code) if int(code) != 0 else int(ErrorCode.UNKNOWN)
            self.error_text = text


class Worker(BridgeWorkerThread[SharedResources]):
    """A worker thread; the public methods run on the control thread."""

    _log = log
    _SPIN_ROUNDS = range(_MAX_SPIN_LOOPS)

    def __init__(self, index: int, cpu: int, shared: SharedResources, abort: threading.Event) -> None:
        super().__init__(index, cpu, shared, abort, f"gga-worker-{index}", shared.layout.transactions_per_worker)
        self._ctrl: list[Rdma] = []
        self._data: list[Rdma] = []
        self._ctrl_conns: list[RdmaConnection | None] = [None, None, None]
        self._data_conns: list[RdmaConnection | None] = [None, None, None]
        self._ec: d.Ec | None = None
        self._compress: d.Compress | None = None
        self._dma: d.Dma | None = None
        self._matrices: dict[str, d.EcMatrix] = {}
        self._txns: list[Transaction] = []
        self._resp_slots: list[list[memoryview]] = []
        self._resp_tasks: list[list[RdmaTaskReceive]] = []
        self._resp_bufs: list[list[tuple[d.Buf, int]]] = []  # each receive's buffer and its fixed address
        self._retry: deque[Transaction] = deque()
        self._blocked: deque[Transaction] = deque()
        self._restart: set[int] = set()  # id() of offload contexts to start again
        self.schedule = RecoverySchedule(shared.recovery_every_n)
        self.dead_targets: set[TargetRole] = set()  # targets out, as applied by this worker
        self._health_version = 0
        self._io_timeout = float(shared.target_io_timeout)
        self._next_scan = 0.0
        self.degraded_reads = 0
        self.io_warnings = 0

    # ------------------------------------------------------------------ control-thread API
    @property
    def ready(self) -> bool:
        """Whether the comch producer/consumer and the six RDMA contexts are RUNNING."""
        return len(self._states) == 8 and all(s == CtxState.RUNNING for s in self._states.values())

    def not_ready(self) -> list[str]:
        """Contexts that are not RUNNING (for error texts)."""
        names = ["consumer", "producer"] + [f"{r.name.lower()}/{k}" for r in TargetRole for k in ("ctrl", "data")]
        return [n for n in names if self._states.get(n) != CtxState.RUNNING]

    def stats(self) -> WorkerStats:
        """The §7.4 counters."""
        return WorkerStats(self.cpu, self.operation_count, self.pe_hits, self.pe_misses,
                           recovery_count=self.schedule.recovery_count, degraded_read_count=self.degraded_reads)

    def export(self, role: RdmaConnectionRole) -> list[bytes]:
        """Export the *role* context towards each target (data_1, data_2, data_p)."""
        return self._call(lambda: self._export(role), COMMAND_TIMEOUT, f"export its {role.name} contexts")

    def connect(self, role: RdmaConnectionRole, blobs: list[bytes]) -> None:
        """Connect the *role* contexts with the targets' blobs."""
        self._call(lambda: self._connect(role, blobs), COMMAND_TIMEOUT, f"connect its {role.name} contexts")

    # ------------------------------------------------------------------ thread main loop
    def _housekeeping(self) -> None:
        """Apply targets taken out elsewhere, fail over overdue target requests, restart failed
        engines, resume transactions that waited for them, retry replies."""
        self._sync_health()
        if self._io_timeout and self._txns:
            now = time.monotonic()
            if now >= self._next_scan:
                self._next_scan = now + min(_DEADLINE_SCAN, self._io_timeout / 4)
                self._check_deadlines(now)
        if self._restart:
            for ctx in (self._ec, self._compress, self._dma):
                if ctx is not None and id(ctx) in self._restart and ctx.get_state() == CtxState.IDLE:
                    try:
                        ctx.start()
                        self._restart.discard(id(ctx))
                        log.info("%s: restarted %s after a failed task", self.name, type(ctx).__name__)
                    except DocaError as exc:
                        self._fail(f"could not restart {type(ctx).__name__}: {exc}")
                        self._restart.discard(id(ctx))
        if self._blocked and not self._restart:
            blocked, self._blocked = self._blocked, deque()
            for t in blocked:
                t.op_busy = False
                self._progress(t)
        retry = self._retry
        for _ in range(len(retry)):  # only those queued before: a refused one waits for the next round
            self._submit_reply(retry.popleft())

    # ------------------------------------------------------------------ creation
    def _state_cb(self, name: str) -> Callable[[Any, d.Ctx, CtxState, CtxState], None]:
        def changed(_ud: Any, _ctx: d.Ctx, prev: CtxState, nxt: CtxState) -> None:
            was = self._states.get(name)
            self._states[name] = nxt
            if was == CtxState.RUNNING and nxt != CtxState.RUNNING and not self._closing:
                if "/" in name:
                    role = TargetRole[name.split("/")[0].upper()]
                    self._target_failed(role, f"its {name.split('/')[1]} RDMA context left RUNNING ({nxt.name})")
                elif self._running:
                    self._fail(f"the comch {name} left RUNNING ({nxt.name})")
        return changed

    def _create(self) -> None:
        sh = self.shared
        dev, n = sh.dev, self.n
        # comch fast path on the initiator's connection
        pe, consumer, producer = self._open_comch(12 * n + 16, (_SLOTS_PER_TXN + 3) * n * IO_MESSAGE_SIZE,
                                                  self._on_request, self._on_request_error, self._on_replied,
                                                  self._on_reply_error, n)
        # engines
        self._ec = ec = d.Ec(dev)
        pe.connect_ctx(ec)
        ec.task_create_set_conf(self._on_ec_created, self._on_engine_error, n)
        ec.task_recover_set_conf(self._on_recovered, self._on_engine_error, n)
        self._compress = comp = d.Compress(dev)
        pe.connect_ctx(comp)
        comp.task_decompress_lz4_stream_set_conf(self._on_decompressed, self._on_engine_error, n)
        self._dma = dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(self._on_fetched, self._on_engine_error, n)
        # RDMA towards the three targets
        for role in TargetRole:
            ctrl, data = Rdma(dev, role), Rdma(dev, role)
            for ctx, kind in ((ctrl, "ctrl"), (data, "data")):
                pe.connect_ctx(ctx)
                ctx.set_permissions(RDMA_PERMISSIONS)
                ctx.set_state_changed_cb(self._state_cb(f"{role.name.lower()}/{kind}"))
            ctrl.task_send_set_conf(self._on_storage_sent, self._on_storage_send_error, n)
            ctrl.task_receive_set_conf(self._on_storage_response, self._on_storage_receive_error, n)
            self._ctrl.append(ctrl)
            self._data.append(data)
        startable: list[d.Ctx] = [consumer, producer, ec, comp, dma, *self._ctrl, *self._data]
        for c in startable:
            c.start()
        coding = ec.matrix_create(matrix_type_from_name(sh.matrix_type), 2, 1)
        self._matrices = {"coding": coding,
                          ReadMode.RECOVER_A.value: ec.matrix_create_recover(coding, [int(TargetRole.DATA_1)]),
                          ReadMode.RECOVER_B.value: ec.matrix_create_recover(coding, [int(TargetRole.DATA_2)])}
        pe.progress()

    def _export(self, role: RdmaConnectionRole) -> list[bytes]:
        ctxs, conns = (self._ctrl, self._ctrl_conns) if role is RdmaConnectionRole.IO_CONTROL else \
            (self._data, self._data_conns)
        if not ctxs:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} was not created")
        blobs = []
        for r, ctx in enumerate(ctxs):
            if conns[r] is not None:
                raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: {role.name.lower()} already exported")
            blob, conn = ctx.export()
            conns[r] = conn
            blobs.append(blob)
        return blobs

    def _connect(self, role: RdmaConnectionRole, blobs: list[bytes]) -> None:
        ctxs, conns = (self._ctrl, self._ctrl_conns) if role is RdmaConnectionRole.IO_CONTROL else \
            (self._data, self._data_conns)
        for r, (ctx, blob) in enumerate(zip(ctxs, blobs)):
            conn = conns[r]
            if conn is None:
                raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: {role.name.lower()} was not exported")
            try:
                ctx.connect(bytes(blob), conn)
            except DocaError as exc:
                raise StorageAppError(exc.code, f"{self.name}: connecting the {role.name.lower()} context to "
                                                f"{TargetRole(r).name.lower()} failed: {exc}") from None

    # ------------------------------------------------------------------ data path start / stop
    def _start_data_path(self, remote_consumer_id: int) -> None:
        inv, io_mm, consumer, producer = self._inv, self._io_mm, self._consumer, self._producer
        if inv is None or io_mm is None or consumer is None or producer is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} was not created")
        if not self.ready:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: not running: {', '.join(self.not_ready())}")
        n = self.n
        base = io_mm.get_memrange()[0]
        mem = io_mm.buffer
        m = IO_MESSAGE_SIZE
        layout = self.shared.layout
        for j in range(n):
            off = j * _SLOTS_PER_TXN * m
            chunk = layout.chunk_base(self.index, j)
            where = layout.offsets(chunk)
            b, h = layout.block_size, layout.half
            alt = (chunk + b + h, chunk + 2 * b, chunk + b) if layout.chunk_size >= 2 * b + h else None
            t = Transaction(j, base + off, mem[off:off + m],
                            [mem[off + (1 + r) * m:off + (2 + r) * m] for r in range(3)],
                            chunk, (where[TargetRole.DATA_1], where[TargetRole.DATA_2], where[TargetRole.DATA_P]),
                            alt)
            t.recv_task = consumer.task_post_recv_alloc_init(inv.buf_get_by_addr(io_mm, t.slot_addr, m), t)
            t.send_task = producer.task_send_alloc_init(inv.buf_get_by_data(io_mm, t.slot_addr, m), None,
                                                        remote_consumer_id, t)
            for r, ctrl in enumerate(self._ctrl):
                conn = self._ctrl_conns[r]
                assert conn is not None
                src = inv.buf_get_by_data(io_mm, t.slot_addr + (1 + r) * m, m)
                t.rdma_sends.append(ctrl.task_send_allocate_init(conn, src, t))
            self._txns.append(t)
        resp_base = _SLOTS_PER_TXN * n * m
        for r, ctrl in enumerate(self._ctrl):
            slots, tasks, bufs = [], [], []
            for j in range(n):
                off = resp_base + (j * 3 + r) * m
                slots.append(mem[off:off + m])
                buf = inv.buf_get_by_addr(io_mm, base + off, m)
                bufs.append((buf, base + off))
                tasks.append(ctrl.task_receive_allocate_init(buf, (r, j)))
            self._resp_slots.append(slots)
            self._resp_tasks.append(tasks)
            self._resp_bufs.append(bufs)
        self._running = True
        for r in range(3):
            for j in range(n):
                self._post_response_receive(r, j)
        for t in self._txns:
            self._post_request_receive(t)
        if self.error is not None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: {self.error}")

    def _drain_over(self, start: float, drain_timeout: float) -> bool:
        now = time.monotonic()
        if self._abort.is_set() and now >= start + ABORT_DRAIN:
            log.warning("%s: aborted with %d transactions in flight", self.name, self._in_flight)
            return True
        if now >= start + drain_timeout:
            log.warning("%s: %d transactions still in flight after %.1f s; dropping them", self.name,
                        self._in_flight, drain_timeout)
            return True
        return False

    def _close_comch(self) -> None:
        for name, ctx in (("consumer", self._consumer), ("producer", self._producer)):
            if ctx is None:
                continue
            self._states.pop(name, None)
            try:
                ctx.close()
            except Exception as exc:  # noqa: BLE001 - keep closing
                log.error("%s: closing its comch %s failed: %s", self.name, name, exc)
        for t in self._txns:
            t.recv_task = None
            t.send_task = None
        self._consumer = self._producer = None

    # ------------------------------------------------------------------ initiator side
    def _post_request_receive(self, t: Transaction) -> None:
        task = t.recv_task
        if task is None:
            return
        t.slot[:] = _ZERO_MSG
        task.get_buf().reuse_by_addr(t.slot_addr, IO_MESSAGE_SIZE)
        try:
            task.submit()
        except DocaError as exc:
            self._fail(f"failed to post a comch receive: {exc}")

    def _on_request(self, task: ComchConsumerTaskPostRecv, t: Transaction, _ud: Any) -> None:
        if self._closing:
            return
        if t.busy:  # cannot happen: a receive is re-posted only after its reply completed
            self._fail(f"transaction {t.index} received a request while busy")
            return
        t.busy = True
        self._in_flight += 1
        sh = self.shared
        checked = check_initiator_request(t.slot, task.get_buf().get_data_len(), block_size=sh.layout.block_size,
                                          capacity=sh.capacity, host_size=sh.host_size)
        if isinstance(checked, RequestProblem):
            self._refuse(t, checked.code, checked.reason)
        elif not self._running or self.error is not None:
            self._refuse(t, ErrorCode.BAD_STATE, f"the service cannot serve requests now ({self.error or 'stopped'})")
        elif self._sync_health() and checked.kind is IoMessageType.WRITE:
            self._refuse(t, ErrorCode.NOT_PERMITTED, f"write refused: degraded mode, storage target(s) "
                                                     f"{self.shared.health.describe()} out")
        elif len(self.dead_targets) > 1:
            self._refuse(t, ErrorCode.CONNECTION_RESET, f"storage targets {self.shared.health.describe()} are out")
        else:
            t.request = checked.message
            t.blocks = checked.blocks
            t.block = 0
            t.actions = READ_ACTIONS if checked.kind is IoMessageType.READ else WRITE_ACTIONS
            t.pending = t.actions
            self._progress(t)

    def _refuse(self, t: Transaction, code: ErrorCode, why: str) -> None:
        self.refused_count += 1
        level = logging.WARNING if self.refused_count <= _MAX_WARNINGS else logging.DEBUG
        log.log(level, "%s: answering transaction %d with %s: %s", self.name, t.index, code.name, why)
        t.set_error(code, why)
        t.pending = REPLY
        self._progress(t)

    def _on_request_error(self, task: ComchConsumerTaskPostRecv, t: Transaction, _ud: Any) -> None:
        if self._running and not self._closing:
            self._fail(f"a comch receive failed: {task.get_status().name}")

    def _reply(self, t: Transaction) -> None:
        t.pending = 0
        make_response_in_place(t.slot, t.error)
        if t.error != ErrorCode.SUCCESS:
            log.debug("%s: transaction %d fails with %s: %s", self.name, t.index, t.error, t.error_text)
        t.op_busy = True
        self._submit_reply(t)

    def _submit_reply(self, t: Transaction) -> None:
        task = t.send_task
        if task is None:
            self._reply_lost(t, "the comch producer is gone")
            return
        task.get_buf().reuse_by_data(t.slot_addr, IO_MESSAGE_SIZE)
        try:
            task.submit()
        except DocaError as exc:
            if exc.code == _AGAIN:
                # DOCA 3.x: the initiator's consumer has no receive posted yet. The task stays
                # ours; submit it again on a later round (the reference loops on AGAIN).
                self._retry.append(t)
                return
            self._reply_lost(t, f"submitting the reply failed: {exc}")
            self._fail(f"the comch producer cannot send: {exc}")

    def _reply_lost(self, t: Transaction, why: str) -> None:
        log.error("%s: the reply of transaction %d is lost: %s", self.name, t.index, why)
        self._in_flight -= 1
        t.reset()

    def _on_replied(self, task: ComchProducerTaskSend, t: Transaction, _ud: Any) -> None:
        self._in_flight -= 1
        self.operation_count += 1
        t.reset()
        if self._running:
            self._post_request_receive(t)

    def _on_reply_error(self, task: ComchProducerTaskSend, t: Transaction, _ud: Any) -> None:
        # Fatal: AGAIN (no receive posted) is returned by submit itself, never reported here.
        status = task.get_status()
        self._reply_lost(t, status.name)
        self._fail(f"a comch producer send failed: {status.name}")

    # ------------------------------------------------------------------ the state machine
    def _progress(self, t: Transaction) -> None:
        """Run the next steps of *t* until one is asynchronous (§8.2 priority order)."""
        while not (t.op_busy or t.send_mask or t.resp_mask):  # not t.outstanding
            p = t.pending
            if p == 0:
                return
            if t.error != _SUCCESS and p != REPLY:
                t.pending = REPLY
                continue
            if p & FETCH_FROM_STORAGE:
                self._fetch_from_storage(t)
            elif p & FETCH_FROM_INITIATOR:
                self._fetch_from_initiator(t)
            elif p & RECOVER:
                self._recover(t)
            elif p & DECOMPRESS:
                self._decompress(t)
            elif p & PRODUCE_EC:
                self._produce_ec(t)
            elif p & COMMIT:
                self._commit(t)
            elif p & ADVANCE:
                t.block += 1
                t.pending = t.actions if t.block < t.blocks else REPLY
            elif p & REPLY:
                self._reply(t)
            else:
                raise AssertionError(f"unknown pending actions {p:#x}")

    def _plan(self, t: Transaction) -> BlockPlan:
        assert t.request is not None
        return BlockPlan(self.shared.layout, self.index, t.index, t.request, t.block)

    def _send_to_targets(self, t: Transaction, kind: int, roles: tuple[int, ...]) -> None:
        """Send the half-block requests of block ``t.block`` to *roles* (what
        :meth:`BlockPlan.read_requests` / :meth:`BlockPlan.write_requests` build, packed in place)."""
        if self.dead_targets:
            dead = [r for r in roles if TargetRole(r) in self.dead_targets]
            if dead:
                t.set_error(ErrorCode.NOT_PERMITTED if kind == _WRITE_TYPE else ErrorCode.CONNECTION_RESET,
                            f"storage target {_ROLE_NAMES[dead[0]]} is out (degraded mode)")
                return
        req = t.request
        assert req is not None
        layout = self.shared.layout
        h = layout.half
        # target_storage_offset(): (s / B)·H + k·H (s is a multiple of B: checked on arrival)
        storage = (req.storage_offset // layout.block_size + t.block) * h
        where = t.where
        if self._io_timeout:
            t.deadline = time.monotonic() + self._io_timeout
        pack = _IO_MSG.pack_into
        for r in roles:
            pack(t.req_slots[r], 0, kind, t.index, 0, h, where[r], storage)
            try:
                t.rdma_sends[r].submit()
            except DocaError as exc:
                t.set_error(exc.code, f"sending to {_ROLE_NAMES[r]} failed: {exc}")
                continue
            t.send_mask |= 1 << r
            t.resp_mask |= 1 << r

    def _fetch_from_storage(self, t: Transaction) -> None:
        t.pending &= ~(FETCH_FROM_STORAGE | RECOVER)
        out = self.dead_targets
        if not out:
            t.mode = mode = self.schedule.next_mode()
            t.where, t.data_base = t.half_offsets, t.chunk_base
        else:
            # Degraded read: the two survivors (data_p out: a plain read; data_1 / data_2 out: the other
            # half and the parity, recovered into the alternative places of the chunk).
            lost = next(iter(out))
            if len(out) > 1 or (lost is not TargetRole.DATA_P and t.alt_offsets is None):
                t.set_error(ErrorCode.CONNECTION_RESET, f"storage target(s) {self.shared.health.describe()} out")
                return
            self.degraded_reads += 1
            if lost is TargetRole.DATA_P:
                t.mode = mode = ReadMode.NORMAL
                t.where, t.data_base = t.half_offsets, t.chunk_base
            else:
                assert t.alt_offsets is not None
                t.mode = mode = ReadMode.RECOVER_A if lost is TargetRole.DATA_1 else ReadMode.RECOVER_B
                t.where, t.data_base = t.alt_offsets, t.alt_base
        if mode is not ReadMode.NORMAL:
            t.pending |= RECOVER
        self._send_to_targets(t, _READ_TYPE, _READ_ROLES[mode])

    def _commit(self, t: Transaction) -> None:
        t.pending &= ~COMMIT
        t.where = t.half_offsets
        self._send_to_targets(t, _WRITE_TYPE, _WRITE_ROLES)

    def _engine_ready(self, t: Transaction, ctx: d.Ctx | None) -> bool:
        """Whether *ctx* takes tasks now; otherwise park *t* until it is restarted."""
        if ctx is not None and ctx.get_state() == CtxState.RUNNING and id(ctx) not in self._restart:
            return True
        if ctx is None:
            t.set_error(ErrorCode.BAD_STATE, "engine not created")
            return False
        t.op_busy = True
        self._blocked.append(t)
        return False

    def _region_buf(self, offset: int, length: int, *, data: bool) -> d.Buf:
        sh = self.shared
        inv = self._inv
        assert inv is not None
        if data:
            return inv.buf_get_by_data(sh.region, sh.region_base + offset, length)
        return inv.buf_get_by_addr(sh.region, sh.region_base + offset, length)

    def _submit_engine(self, t: Transaction, bit: int, what: str, make: Callable[[], d.Task]) -> None:
        try:
            task = make()
        except DocaError as exc:
            t.set_error(exc.code, f"{what}: {exc}")
            return
        try:
            task.submit()
        except DocaError as exc:
            _release(task)
            t.set_error(exc.code, f"{what}: {exc}")
            return
        t.pending &= ~bit
        t.op_busy = True

    def _recover(self, t: Transaction) -> None:
        ec = self._ec
        if not self._engine_ready(t, ec):
            return
        assert ec is not None
        # BlockPlan.recover_spans(), at the transaction's current places (normal or alternative)
        h = self.shared.layout.half
        where = t.where
        survivors = [(where[r], h) for r in recovery_roles(t.mode)]
        out_off, out_len = where[TargetRole.DATA_1 if t.mode is ReadMode.RECOVER_A else TargetRole.DATA_2], h
        matrix = self._matrices[t.mode.value]

        def make() -> d.Task:
            bufs = [self._region_buf(o, n, data=True) for o, n in survivors]
            for extra in bufs[1:]:
                bufs[0].chain_list(extra)
            return ec.task_recover_allocate_init(matrix, bufs[0], self._region_buf(out_off, out_len, data=False), t)

        self._submit_engine(t, RECOVER, "EC recover", make)

    def _decompress(self, t: Transaction) -> None:
        comp = self._compress
        if not self._engine_ready(t, comp):
            return
        assert comp is not None
        sh = self.shared
        b = sh.layout.block_size
        base = t.data_base
        assert t.request is not None
        host_offset = t.request.requester_offset + t.block * b  # ChunkLayout.host_offset
        (size,) = _U32.unpack_from(sh.region.buffer, base + COMPRESSED_SIZE_OFFSET)
        problem = check_compressed_size(size, b)
        if problem is not None:
            t.set_error(ErrorCode.IO_FAILED, f"block at storage offset {t.request.storage_offset if t.request else 0}"
                                             f" + {t.block}: {problem}")
            return
        inv = self._inv
        assert inv is not None

        def make() -> d.Task:
            src = self._region_buf(base + COMPRESSED_DATA_OFFSET, size, data=True)
            dst = inv.buf_get_by_addr(sh.host, sh.host_base + host_offset, b)
            return comp.task_decompress_lz4_stream_alloc_init(False, True, src, dst, t)

        self._submit_engine(t, DECOMPRESS, "LZ4 decompress", make)

    def _fetch_from_initiator(self, t: Transaction) -> None:
        dma = self._dma
        if not self._engine_ready(t, dma):
            return
        assert dma is not None and t.request is not None
        sh = self.shared
        b = sh.layout.block_size
        host_offset = t.request.requester_offset + t.block * b  # ChunkLayout.host_offset
        base = t.chunk_base
        inv = self._inv
        assert inv is not None

        def make() -> d.Task:
            src = inv.buf_get_by_data(sh.host, sh.host_base + host_offset, b)
            return dma.task_memcpy_alloc_init(src, self._region_buf(base, b, data=False), t)

        self._submit_engine(t, FETCH_FROM_INITIATOR, "DMA from the initiator", make)

    def _produce_ec(self, t: Transaction) -> None:
        ec = self._ec
        if not self._engine_ready(t, ec):
            return
        assert ec is not None
        base = t.chunk_base
        layout = self.shared.layout
        coding = self._matrices["coding"]

        def make() -> d.Task:
            return ec.task_create_allocate_init(coding, self._region_buf(base, layout.block_size, data=True),
                                                self._region_buf(base + layout.block_size, layout.half, data=False),
                                                t)

        self._submit_engine(t, PRODUCE_EC, "EC create", make)

    # ------------------------------------------------------------------ engine completions
    def _engine_done(self, task: d.Task, t: Transaction, problem: str | None = None) -> None:
        _release(task)
        t.op_busy = False
        if problem is not None:
            t.set_error(ErrorCode.IO_FAILED, problem)
        if not self._closing:
            self._progress(t)

    def _on_recovered(self, task: EcTaskRecover, t: Transaction, _ud: Any) -> None:
        n = task.get_recovered_data().get_data_len()
        t.pending &= ~RECOVER
        self._engine_done(task, t, None if n == self.shared.layout.half else f"EC recover produced {n} bytes")

    def _on_decompressed(self, task: CompressTaskDecompressLz4Stream, t: Transaction, _ud: Any) -> None:
        n = task.get_dst().get_data_len()
        b = self.shared.layout.block_size
        self._engine_done(task, t, None if n == b else f"the block decompressed to {n} bytes instead of {b}")

    def _on_fetched(self, task: DmaTaskMemcpy, t: Transaction, _ud: Any) -> None:
        problem = None
        if not self._closing:
            base = t.chunk_base
            b = self.shared.layout.block_size
            region = self.shared.region.buffer
            try:
                block = cb.pack_compressed_block(b, lz4_blocks.compress(region[base:base + b]))
            except cb.NotCompressibleError as exc:
                problem = f"Data is not compressible enough: {exc}"
            else:
                region[base:base + b] = block
        self._engine_done(task, t, problem)

    def _on_ec_created(self, task: EcTaskCreate, t: Transaction, _ud: Any) -> None:
        n = task.get_rdnc_blocks().get_data_len()
        self._engine_done(task, t, None if n == self.shared.layout.half else f"EC create produced {n} bytes")

    def _on_engine_error(self, task: d.Task, t: Transaction, _ud: Any) -> None:
        status = task.get_status()
        ctx = task.get_ctx()
        if not self._closing and id(ctx) in self._restart:
            # Flushed by the stop an earlier failure caused: run the step again after the restart.
            t.pending |= _STEP_OF_TASK[type(task)]
            _release(task)
            self._blocked.append(t)  # op_busy stays set until then
            return
        if not self._closing:
            self._restart.add(id(ctx))  # a failed task stops its context (DOCA's rule)
            log.warning("%s: %s task of transaction %d failed: %s", self.name, type(task).__name__, t.index,
                        status.name)
        _release(task)
        t.op_busy = False
        t.set_error(status, f"{type(task).__name__} failed with {status.name}")
        if not self._closing:
            self._progress(t)

    # ------------------------------------------------------------------ target completions
    def _post_response_receive(self, r: int, j: int) -> None:
        task = self._resp_tasks[r][j]
        self._resp_slots[r][j][:] = _ZERO_MSG
        buf, addr = self._resp_bufs[r][j]
        buf.reuse_by_addr(addr, IO_MESSAGE_SIZE)
        try:
            task.submit()
        except DocaError as exc:
            self._target_failed(TargetRole(r), f"posting a receive failed: {exc}")

    def _on_storage_sent(self, task: RdmaTaskSend, t: Transaction, role: Any) -> None:
        bit = 1 << int(role)
        if not t.send_mask & bit:
            return  # written off: its target was taken out meanwhile
        t.send_mask &= ~bit
        if not t.outstanding and not self._closing:
            self._progress(t)

    def _on_storage_send_error(self, task: RdmaTaskSend, t: Transaction, role: Any) -> None:
        r = int(role)
        bit = 1 << r
        if not t.send_mask & bit:
            return  # written off: its target was taken out meanwhile
        # Taking the target out writes this request off too (a read is served again from the others).
        self._target_failed(TargetRole(r), f"a send failed: {task.get_status().name}")
        if t.send_mask & bit:  # closing (or the target was already out): fail the transaction
            t.send_mask &= ~bit
            t.resp_mask &= ~bit  # no response can come for a request that was not sent
            t.set_error(task.get_status(), f"sending to {TargetRole(r).name.lower()} failed")
            if not t.outstanding and not self._closing:
                self._progress(t)

    def _on_storage_response(self, task: RdmaTaskReceive, where: tuple[int, int], _role: Any) -> None:
        if self._closing:
            return
        r, j = where
        n = task.get_result_len()
        if n == IO_MESSAGE_SIZE:
            typ, ud, result = _IO_HEAD.unpack_from(self._resp_slots[r][j])
        else:
            typ, ud, result = _RESULT, -1, 0
        if self._running or self._in_flight:
            self._post_response_receive(r, j)
        txns = self._txns
        bit = 1 << r
        if not 0 <= ud < len(txns) or not txns[ud].resp_mask & bit:
            if TargetRole(r) in self.dead_targets:  # a late answer of a target that is out: written off
                log.debug("%s: ignoring a late response from %s (out)", self.name, _ROLE_NAMES[r])
                return
            log.warning("%s: ignoring an unexpected response from %s (%d bytes, user_data %d)", self.name,
                        _ROLE_NAMES[r], n, ud)
            return
        t = txns[ud]
        t.resp_mask &= ~bit
        if typ != _RESULT:
            t.set_error(ErrorCode.UNEXPECTED, f"{_ROLE_NAMES[r]} answered with io message type {typ}")
        elif result != ErrorCode.SUCCESS:
            t.set_error(result, f"{_ROLE_NAMES[r]} answered with error {result}")
        if not (t.op_busy or t.send_mask or t.resp_mask):  # not t.outstanding
            self._progress(t)

    def _on_storage_receive_error(self, task: RdmaTaskReceive, where: tuple[int, int], _role: Any) -> None:
        if self._running and not self._closing:
            self._target_failed(TargetRole(where[0]), f"a receive failed: {task.get_status().name}")

    def _target_failed(self, role: TargetRole, why: str) -> None:
        """Target *role* is lost (an RDMA task or context failed)."""
        self._target_out(role, f"was lost ({why})", ErrorCode.CONNECTION_RESET)

    def _target_out(self, role: TargetRole, why: str, code: ErrorCode) -> None:
        """Take *role* out for the session (every thread), then write off this worker's requests to it."""
        if self._closing:
            return
        self.shared.health.mark_out(role, why)  # logs the WARNING once per target
        self._apply_out(role, why, code)

    def _sync_health(self) -> bool:
        """Apply the targets taken out by other threads; whether any target is out."""
        health = self.shared.health
        if health.version != self._health_version:
            self._health_version = health.version
            for role in sorted(health.out - self.dead_targets):
                self._apply_out(role, health.reasons.get(role, "is out"), ErrorCode.CONNECTION_RESET)
        return bool(self.dead_targets)

    def _apply_out(self, role: TargetRole, why: str, code: ErrorCode) -> None:
        """Nothing is sent to *role* any more; requests of it still unanswered are written off: a read
        fetches its block again from the two others (degraded), anything else is answered with *code*.

        A stalled target may still RDMA-write its late answer into the transaction's chunk, at the
        normal place of its half; degraded reads never use that place (see :attr:`Transaction.alt_offsets`,
        and data_p's place is unused by plain reads), writes are refused, and the target is never used
        again: so the chunk stays safe to reuse at once."""
        if self._closing or role in self.dead_targets:
            return
        self.dead_targets.add(role)
        log.info("%s: storage target %s is out; %s", self.name, role_name(role),
                 "serving reads from the two others" if len(self.dead_targets) == 1 else "failing every IO")
        bit = 1 << int(role)
        readable = len(self.dead_targets) == 1
        for t in self._txns:
            if not (t.send_mask | t.resp_mask) & bit:
                continue
            t.send_mask &= ~bit
            t.resp_mask &= ~bit
            if t.actions == READ_ACTIONS and readable and t.error == _SUCCESS:
                t.pending = (t.pending | FETCH_FROM_STORAGE) & ~RECOVER  # this block again, degraded
            else:
                text = f"storage target {role_name(role)} {why}"
                self._warn_io(t, code, text)
                t.set_error(code, text)
            if not t.outstanding:
                self._progress(t)

    def _check_deadlines(self, now: float) -> None:
        """Take out the target with the most requests past ``--target-io-timeout`` (one per scan: a
        target that is merely slow behind a stalled one gets a new window, not the blame)."""
        late = [t for t in self._txns if (t.send_mask | t.resp_mask) and t.deadline <= now]
        if not late:
            return
        counts = [sum(1 for t in late if (t.send_mask | t.resp_mask) & (1 << r)) for r in range(3)]
        r = max(range(3), key=counts.__getitem__)
        self._target_out(TargetRole(r), f"did not answer an IO request within {self._io_timeout:g} s "
                                        f"(--target-io-timeout)", ErrorCode.TIME_OUT)
        for t in late:
            if (t.send_mask | t.resp_mask) and t.deadline <= now:
                t.deadline = now + self._io_timeout

    def _warn_io(self, t: Transaction, code: ErrorCode, why: str) -> None:
        self.io_warnings += 1
        level = logging.WARNING if self.io_warnings <= _MAX_WARNINGS else logging.DEBUG
        log.log(level, "%s: answering transaction %d with %s: %s", self.name, t.index, code.name, why)

    # ------------------------------------------------------------------ teardown
    def _teardown(self) -> None:
        self._closing = True
        self._running = False
        self._close_comch()
        objs: list[tuple[str, Any]] = [(f"{r.name.lower()} io_control context", c)
                                       for r, c in zip(TargetRole, self._ctrl)]
        objs += [(f"{r.name.lower()} io_data context", c) for r, c in zip(TargetRole, self._data)]
        objs += [("Ec", self._ec), ("Compress", self._compress), ("Dma", self._dma),
                 ("buffer inventory", self._inv)]
        self._close_quietly(objs)
        for t in self._txns:
            t.slot.release()
            for s in t.req_slots:
                s.release()
        for slots in self._resp_slots:
            for s in slots:
                s.release()
        self._txns.clear()
        self._resp_slots.clear()
        self._resp_tasks.clear()
        self._resp_bufs.clear()
        self._close_quietly((("io-message mmap", self._io_mm), ("progress engine", self._pe)))
        self._ctrl, self._data = [], []
        self._ec = self._compress = self._dma = None
        self._inv = self._io_mm = self._pe = None
        self._in_flight = 0


_STEP_OF_TASK: dict[type, int] = {EcTaskRecover: RECOVER, EcTaskCreate: PRODUCE_EC,
                                   CompressTaskDecompressLz4Stream: DECOMPRESS, DmaTaskMemcpy: FETCH_FROM_INITIATOR}


def _release(task: d.Task) -> None:
    """Free an engine task and drop its buffers (a chained source goes with its head)."""
    bufs: list[d.Buf] = []
    if isinstance(task, (EcTaskCreate, EcTaskRecover)):
        if isinstance(task, EcTaskCreate):
            bufs = [task.get_original_data_blocks(), task.get_rdnc_blocks()]
        else:
            bufs = [task.get_available_blocks(), task.get_recovered_data()]
    elif isinstance(task, (CompressTaskDecompressLz4Stream, DmaTaskMemcpy)):
        bufs = [task.get_src(), task.get_dst()]
    try:
        task.free()
    finally:
        for b in bufs:
            if not b.closed:
                b.dec_refcount()
