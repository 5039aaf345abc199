"""One gga worker: a thread owning a ``Pe`` and every context of its data path (§8.2).

Per worker (``N = 2·T`` transactions) the thread holds

* the comch side (this module): a consumer (N receive tasks, transaction *j* bound to its
  64-byte initiator slot) and a producer (N send tasks on the *same* slots, to the initiator
  consumer paired with this worker) — the loop itself is
  :class:`~apps.storage.runtime.bridge_worker.BridgeWorkerThread`;
* the targets (:class:`~apps.gga_offload.targets.Targets`): per target an io_control and an
  io_data ``Rdma`` context, and which targets are out (degraded mode);
* the engines (:class:`~apps.gga_offload.engines.Engines`): ``Ec``, ``Compress`` and ``Dma``,
  with one pre-allocated task of each kind per transaction;
* the transactions (:class:`~apps.gga_offload.transaction.Transaction`, pure logic): this
  module asks each what to do next and does it with the objects above.

Per IO nothing is allocated but what Python cannot avoid (unpacked tuples, floats): messages are
packed and unpacked in place in their slots, tasks and buffers are re-aimed, nothing is logged
unless the IO fails.

Differences from the reference, all for robustness: a malformed initiator message is answered
with an error (never dropped, never used to address memory), a failed block ends the IO with its
error instead of being overwritten by the next block's success, a compressed-block header read
back from storage is checked before decompressing, a target that fails fails exactly the
transactions waiting for it (each answered with an error), and an engine (Ec/Compress/Dma)
whose task failed is restarted instead of stopping the worker.

Threading: all DOCA objects of a worker are created, progressed and destroyed in its thread (a
``Pe`` is single-threaded); the control thread drives it through a one-command mailbox
(``Worker._call``), bounded by a deadline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.comch import ComchConnection, ComchConsumerTaskPostRecv, ComchProducerTaskSend
from doca_py.errors import DocaError, ErrorCode
from doca_py.types import CtxState

from apps.common.runtime.live_stats import LiveCounters
from apps.common.errors import StorageAppError
from apps.storage.runtime.bridge_worker import ABORT_DRAIN, BridgeWorkerThread
from apps.common.runtime.stats import WorkerStats
from apps.storage.wire.addressing import MAX_BLOCKS_PER_IO, ChunkLayout, ReadMode, TargetRole
from apps.storage.wire.control import RdmaConnectionRole
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, RESULT_TYPE, IoMessageType, pack_io_message_into, \
    pack_u32_into, unpack_io_message_from

from .engines import Engines
from .health import TargetHealth
from .planning import RecoverySchedule, RequestProblem, check_initiator_request
from .targets import MAX_WARNINGS, RDMA_PERMISSIONS, Targets
from .transaction import COMMIT, DECOMPRESS, FETCH_FROM_INITIATOR, FETCH_FROM_STORAGE, PRODUCE_EC, READ_ACTIONS, \
    RECOVER, REPLY, WRITE_ACTIONS, Transaction

__all__ = ["SharedResources", "Worker", "RDMA_PERMISSIONS", "Transaction"]

log = logging.getLogger("apps.gga_offload")

_MAX_SPIN_LOOPS = 1024  # progress rounds between two housekeeping rounds under continuous load
_AGAIN = int(ErrorCode.AGAIN)
_READ = int(IoMessageType.READ)
_WRITE = int(IoMessageType.WRITE)
_RESULT = RESULT_TYPE
_pack_u32 = pack_u32_into
_READ_PAIR = (int(TargetRole.DATA_1), int(TargetRole.DATA_2))  # a plain read's targets (READ_ROLES[NORMAL])
_ROLE_NAMES = tuple(r.name.lower() for r in TargetRole)
_NORMAL = ReadMode.NORMAL
_monotonic = time.monotonic
_SLOTS_PER_TXN = 7  # the initiator's message; data_1 / data_2 / data_p requests; their responses


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


class Worker(BridgeWorkerThread[SharedResources]):
    """A worker thread; the public methods run on the control thread."""

    _log = log
    _SPIN_ROUNDS = range(_MAX_SPIN_LOOPS)

    def __init__(self, index: int, cpu: int, shared: SharedResources, abort: threading.Event) -> None:
        super().__init__(index, cpu, shared, abort, f"gga-worker-{index}", shared.layout.transactions_per_worker)
        self._targets: Targets | None = None
        self._engines: Engines | None = None
        self._txns: list[Transaction] = []
        self._slots: list[memoryview] = []         # each transaction's initiator message
        self._recv_tasks: list[ComchConsumerTaskPostRecv] = []
        self._send_tasks: list[ComchProducerTaskSend] = []
        self._recv_bufs: list[d.Buf] = []
        # The fast lane, per transaction: its receive's and its reply's one-call submits, its receive buffer's
        # one-call functions (bound when the data path starts).
        self._recv_submits: list[Callable[[], None]] = []
        self._send_submits: list[Callable[[], None]] = []
        self._recv_lanes: list[d.BufLane] = []
        self._steps: dict[int, Callable[[Transaction], None]] = {}
        self._retry: deque[Transaction] = deque()
        self._blocked: deque[Transaction] = deque()  # the engines' (set at creation)
        self._restart: set[d.Ctx] = set()
        self.schedule = RecoverySchedule(shared.recovery_every_n)
        self._next_mode = self.schedule.next_mode       # bound once: no bound-method object per block
        self._recovering = shared.recovery_every_n > 0  # reads then go through the schedule (_progress)
        self._describe_out = shared.health.describe
        b = shared.layout.block_size
        self._limits = (b, MAX_BLOCKS_PER_IO * b, shared.capacity, shared.host_size)
        self.degraded_reads = 0
        self.error_count = 0  # IOs answered with an error (live statistics)

    # ------------------------------------------------------------------ control-thread API
    @property
    def ready(self) -> bool:
        """Whether the comch producer/consumer and the six RDMA contexts are RUNNING."""
        return len(self._states) == 8 and all(s == CtxState.RUNNING for s in self._states.values())

    def not_ready(self) -> list[str]:
        """Contexts that are not RUNNING (for error texts)."""
        names = ["consumer", "producer"] + [f"{r.name.lower()}/{k}" for r in TargetRole for k in ("ctrl", "data")]
        return [n for n in names if self._states.get(n) != CtxState.RUNNING]

    @property
    def dead_targets(self) -> set[TargetRole]:
        """The targets this worker no longer uses."""
        return self._targets.dead if self._targets is not None else set()

    def stats(self) -> WorkerStats:
        """The §7.4 counters."""
        return WorkerStats(self.cpu, self.operation_count, self.pe_hits, self.pe_misses,
                           recovery_count=self.schedule.recovery_count, degraded_read_count=self.degraded_reads)

    def live_counters(self) -> LiveCounters:
        """IOs answered, bytes, in flight, errors and degraded reads, for live statistics."""
        return LiveCounters(self.operation_count, self.bytes_requested, self._in_flight, self.error_count,
                            self.degraded_reads)

    def export(self, role: RdmaConnectionRole) -> list[bytes]:
        """Export the *role* context towards each target (data_1, data_2, data_p)."""
        return self._call(lambda: self._created_targets().export(role), None,
                          f"export its {role.name} contexts")

    def connect(self, role: RdmaConnectionRole, blobs: list[bytes]) -> None:
        """Connect the *role* contexts with the targets' blobs."""
        self._call(lambda: self._created_targets().connect(role, blobs), None,
                   f"connect its {role.name} contexts")

    def _created_targets(self) -> Targets:
        if self._targets is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} was not created")
        return self._targets

    # ------------------------------------------------------------------ thread main loop
    def _housekeeping(self) -> None:
        """Apply targets taken out elsewhere, fail over overdue target requests, restart failed
        engines, resume transactions that waited for them, retry replies."""
        targets, engines = self._targets, self._engines
        if targets is not None:
            targets.sync_health()
            targets.check_deadlines()
        if engines is not None:
            if engines.restart:
                engines.restart_stopped(self._fail)
            if engines.blocked and not engines.restart:
                engines.resume_blocked()
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
                    role, kind = name.split("/")
                    if self._targets is not None:
                        self._targets.target_failed(TargetRole[role.upper()],
                                                    f"its {kind} RDMA context left RUNNING ({nxt.name})")
                elif self._running:
                    self._fail(f"the comch {name} left RUNNING ({nxt.name})")
        return changed

    def _create(self) -> None:
        sh = self.shared
        n = self.n
        pe, consumer, producer = self._open_comch(
            19 * n + 16, _SLOTS_PER_TXN * n * IO_MESSAGE_SIZE, self._on_request, self._on_request_error,
            self._on_replied, self._on_reply_error, n)
        self._engines = engines = Engines(sh.dev, pe, n, sh.matrix_type, self._progress, self.name, self._reply)
        self._blocked, self._restart = engines.blocked, engines.restart  # the loop's backlog
        self._targets = targets = Targets(sh.dev, pe, n, self._state_cb, self._progress, self._accepting,
                                          self._is_running, self.name, sh.health, float(sh.target_io_timeout),
                                          sh.layout)
        targets.decompress = engines.decompress  # a plain read's step after its fetch, from the last completion
        for c in (consumer, producer, *engines.contexts, *targets.contexts):
            c.start()
        engines.create_matrices()
        self._steps = {FETCH_FROM_STORAGE: self._fetch_from_storage, FETCH_FROM_INITIATOR: engines.fetch,
                       RECOVER: engines.recover, DECOMPRESS: engines.decompress, PRODUCE_EC: engines.produce_ec,
                       COMMIT: self._commit, REPLY: self._reply}
        pe.progress()

    def _accepting(self) -> bool:
        return self._running or self._in_flight > 0

    def _is_running(self) -> bool:
        return self._running

    # ------------------------------------------------------------------ data path start / stop
    def _start_data_path(self, remote_consumer_id: int) -> None:
        inv, io_mm, consumer, producer = self._inv, self._io_mm, self._consumer, self._producer
        targets, engines = self._targets, self._engines
        if inv is None or io_mm is None or consumer is None or producer is None or targets is None \
                or engines is None:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name} was not created")
        if not self.ready:
            raise StorageAppError(ErrorCode.BAD_STATE, f"{self.name}: not running: {', '.join(self.not_ready())}")
        n, m = self.n, IO_MESSAGE_SIZE
        sh = self.shared
        layout = sh.layout
        base = io_mm.get_memrange()[0]
        mem = io_mm.buffer
        b, h = layout.block_size, layout.half
        for j in range(n):
            chunk = layout.chunk_base(self.index, j)
            where = layout.offsets(chunk)
            alt = (chunk + b + h, chunk + 2 * b, chunk + b) if layout.chunk_size >= 2 * b + h else None
            t = Transaction(j, chunk, (where[TargetRole.DATA_1], where[TargetRole.DATA_2], where[TargetRole.DATA_P]),
                            alt)
            addr = base + j * m
            self._slots.append(mem[j * m:(j + 1) * m])
            recv_buf = inv.buf_get_by_addr(io_mm, addr, m)
            send_buf = inv.buf_get_by_data(io_mm, addr, m)
            self._recv_bufs.append(recv_buf)
            self._recv_tasks.append(consumer.task_post_recv_alloc_init(recv_buf, t))
            self._send_tasks.append(producer.task_send_alloc_init(send_buf, None, remote_consumer_id, t))
            self._recv_submits.append(self._recv_tasks[-1].submitter())
            self._send_submits.append(self._send_tasks[-1].submitter())
            self._recv_lanes.append(recv_buf.fast_lane())
            self._txns.append(t)
        engines.prepare(inv, sh.region, sh.region_base, sh.host, sh.host_base, sh.host_size, layout, self._txns)
        self._running = True
        targets.prepare(inv, io_mm, self._txns, n * m, 4 * n * m)
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
        self._recv_tasks.clear()
        self._send_tasks.clear()
        self._recv_submits.clear()
        self._send_submits.clear()
        self._consumer = self._producer = None

    # ------------------------------------------------------------------ initiator side
    def _post_request_receive(self, t: Transaction) -> None:
        j = t.index
        if j >= len(self._recv_tasks):
            return  # the consumer is gone
        # The slot is not zeroed: a request is used only when it filled all 64 bytes.
        self._recv_bufs[j].reset_data_len()
        try:
            self._recv_tasks[j].submit()
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
        slot = self._slots[t.index]
        received = self._recv_lanes[t.index].get_data_len()
        typ, _user, _res, size, requester, storage = unpack_io_message_from(slot)
        b, most, capacity, host_size = self._limits
        # check_initiator_request() inline; it only runs (for its text) when something is wrong
        if received != IO_MESSAGE_SIZE or (typ != _READ and typ != _WRITE) or not 0 < size <= most or size % b \
                or storage % b or storage + size > capacity or requester + size > host_size:
            if received < IO_MESSAGE_SIZE:  # the answer echoes the slot: not the rest of an earlier message
                slot[received:] = bytes(IO_MESSAGE_SIZE - received)
            checked = check_initiator_request(slot, received, block_size=b, capacity=capacity, host_size=host_size)
            if isinstance(checked, RequestProblem):
                self._refuse(t, checked.code, checked.reason)
                return
        targets = self._targets
        assert targets is not None
        if not self._running or self.error is not None:
            self._refuse(t, ErrorCode.BAD_STATE, f"the service cannot serve requests now ({self.error or 'stopped'})")
            return
        if targets.health.version == targets.health_version and not targets.dead and typ == _READ \
                and not self._recovering:
            self._read(t, targets, size, requester, storage)
        elif targets.sync_health() and typ == _WRITE:
            self._refuse(t, ErrorCode.NOT_PERMITTED, f"write refused: degraded mode, storage target(s) "
                                                     f"{self.shared.health.describe()} out")
        elif len(targets.dead) > 1:
            self._refuse(t, ErrorCode.CONNECTION_RESET, f"storage targets {self.shared.health.describe()} are out")
        else:
            self.bytes_requested += size
            t.begin(READ_ACTIONS if typ == _READ else WRITE_ACTIONS, typ, size // b, requester, storage)
            self._progress(t)

    def _read(self, t: Transaction, targets: Targets, size: int, requester: int, storage: int) -> None:
        """Serve a checked read with every target in and no recovery scheduled: ``Transaction.begin``, then its
        first step inline, the two half-block requests of its first block (what ``_progress`` →
        ``_fetch_from_storage`` → ``Transaction.plan_read`` → ``Targets.send`` do in that case)."""
        self.bytes_requested += size
        b = self._limits[0]
        t.actions, t.kind = READ_ACTIONS, _READ
        t.pending = READ_ACTIONS & ~FETCH_FROM_STORAGE
        t.blocks = size // b
        t.block = 0
        t.requester_offset = requester
        t.storage_offset = storage
        t.mode = _NORMAL
        t.where = where = t.half_offsets
        t.data_base = t.chunk_base
        h = targets.half
        at = storage // b * h  # Transaction.target_storage_offset of block 0
        if targets.io_timeout:
            t.deadline = _monotonic() + targets.io_timeout
        slots, sends = targets.req_slots[t.index], targets.send_submits[t.index]
        for r in _READ_PAIR:
            pack_io_message_into(slots[r], 0, _READ, t.index, 0, h, where[r], at)
            try:
                sends[r]()
            except DocaError as exc:
                t.set_error(exc.code, f"sending to {_ROLE_NAMES[r]} failed: {exc}")
                continue
            bit = 1 << r
            t.send_mask |= bit
            t.resp_mask |= bit
        if not (t.send_mask or t.resp_mask):  # nothing went out: answer with the error
            self._progress(t)

    def _refuse(self, t: Transaction, code: ErrorCode, why: str) -> None:
        self.refused_count += 1
        level = logging.WARNING if self.refused_count <= MAX_WARNINGS else logging.DEBUG
        log.log(level, "%s: answering transaction %d with %s: %s", self.name, t.index, code.name, why)
        t.refuse(code, why)
        self._progress(t)

    def _on_request_error(self, task: ComchConsumerTaskPostRecv, t: Transaction, _ud: Any) -> None:
        if self._running and not self._closing:
            self._fail(f"a comch receive failed: {task.get_status().name}")

    def _reply(self, t: Transaction) -> None:
        slot = self._slots[t.index]
        _pack_u32(slot, 0, _RESULT)  # make_response_in_place: type and result, the rest echoed
        _pack_u32(slot, 16, t.error)
        if t.error:
            self.error_count += 1
            log.debug("%s: transaction %d fails with %s: %s", self.name, t.index, t.error, t.error_text)
        t.op_busy = True
        submits = self._send_submits  # every transaction's, or none once the comch producer is gone
        if not submits:
            self._reply_lost(t, "the comch producer is gone")
            return
        try:  # _submit_reply() inline; the send buffer always covers the whole slot: the answer is made in place
            submits[t.index]()
        except DocaError as exc:
            if exc.code == _AGAIN:
                self._retry.append(t)  # DOCA 3.x: no receive posted by the initiator yet; a later round
                return
            self._reply_lost(t, f"submitting the reply failed: {exc}")
            self._fail(f"the comch producer cannot send: {exc}")

    def _submit_reply(self, t: Transaction) -> None:
        j = t.index
        if j >= len(self._send_tasks):
            self._reply_lost(t, "the comch producer is gone")
            return
        try:  # the send buffer always covers the whole slot: the answer is made in place
            self._send_tasks[j].submit()
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
        if not self._running:
            return
        j = t.index  # the slot takes the next request (_post_request_receive, inline)
        if not self._recv_submits:
            return  # the consumer is gone (every transaction's receive with it)
        self._recv_lanes[j].reset_data_len()  # not zeroed: a request is used only when it filled all 64 bytes
        try:
            self._recv_submits[j]()
        except DocaError as exc:
            self._fail(f"failed to post a comch receive: {exc}")

    def _on_reply_error(self, task: ComchProducerTaskSend, t: Transaction, _ud: Any) -> None:
        # Fatal: AGAIN (no receive posted) is returned by submit itself, never reported here.
        status = task.get_status()
        self._reply_lost(t, status.name)
        self._reply_failed(status)

    # ------------------------------------------------------------------ the state machine's steps
    def _progress(self, t: Transaction) -> None:
        """Do the next steps of *t* until one is asynchronous (§8.2 priority order)."""
        steps = self._steps
        step = t.next_step()
        while step:
            steps[step](t)
            if t.op_busy or t.send_mask or t.resp_mask:  # asynchronous now: its completion goes on
                return
            step = t.next_step()

    def _fetch_from_storage(self, t: Transaction) -> None:
        targets = self._targets
        assert targets is not None
        dead = targets.dead
        roles = t.plan_read(dead, self._next_mode, self._describe_out)
        if roles is not None:
            if dead:
                self.degraded_reads += 1
            targets.send(t, _READ, roles)

    def _commit(self, t: Transaction) -> None:
        targets = self._targets
        assert targets is not None
        targets.send(t, _WRITE, t.plan_commit())

    # ------------------------------------------------------------------ teardown
    def _teardown(self) -> None:
        self._closing = True
        self._running = False
        targets, engines = self._targets, self._engines
        if targets is not None:
            targets.closing = True
        if engines is not None:
            engines.closing = True
        self._close_comch()
        objs: list[tuple[str, Any]] = list(targets.named_contexts()) if targets is not None else []
        if engines is not None:
            objs += [("Ec", engines.ec), ("Compress", engines.compress), ("Dma", engines.dma)]
        self._close_quietly(objs)
        if engines is not None:
            engines.release()
        self._close_quietly((("buffer inventory", self._inv),))
        if targets is not None:
            targets.release()
        for s in self._slots:
            s.release()
        self._slots.clear()
        self._txns.clear()
        self._recv_bufs.clear()
        self._recv_lanes.clear()
        self._close_quietly((("io-message mmap", self._io_mm), ("progress engine", self._pe)))
        self._targets = self._engines = None
        self._inv = self._io_mm = self._pe = None
        self._in_flight = 0
