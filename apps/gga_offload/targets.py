"""The gga worker's RDMA side: the three storage targets (data_1, data_2, data_p) and their health.

Per target an **io_control** ``Rdma`` context (one send task per transaction on its own 64-byte
request slot, one receive task per transaction for the responses) and an **io_data** one (no
tasks: only the target reads and writes the worker's chunks through it). Requests are packed in
place into their slots and sent with their pre-allocated tasks; a response is read from its slot
with one unpack and its receive posted again (§8.2, §4.3).

Health (degraded mode, see :mod:`apps.gga_offload.health`): a target whose task or context
fails, or whose request is not answered within ``--target-io-timeout``, is taken out for the
session; the requests of this worker still waiting for it are written off — a read fetches the
block again from the two others, anything else is answered with an error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import doca_py as d
from doca_py.errors import DocaError, ErrorCode
from doca_py.rdma import Rdma, RdmaConnection, RdmaTaskReceive, RdmaTaskSend
from doca_py.types import AccessFlag

from apps.common.errors import StorageAppError
from apps.common.runtime.stall import LoopClock, describe_stall
from apps.storage.wire.addressing import ChunkLayout, TargetRole
from apps.storage.wire.control import RdmaConnectionRole
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessageType, pack_io_message_into, unpack_io_head_from

from .health import TargetHealth, role_name
from .lateness import LateTargets
from .transaction import ADVANCE, DECOMPRESS, REPLY, SUCCESS, Transaction

__all__ = ["Targets", "RDMA_PERMISSIONS", "MAX_WARNINGS"]

log = logging.getLogger("apps.gga_offload")

RDMA_PERMISSIONS = AccessFlag.LOCAL_READ_WRITE | AccessFlag.RDMA_READ | AccessFlag.RDMA_WRITE
MAX_WARNINGS = 8        # IO failures logged as WARNING per worker; the rest at DEBUG
_DEADLINE_SCAN = 0.1    # seconds between two scans for target requests past --target-io-timeout
_RESULT = int(IoMessageType.RESULT)
_DECOMPRESS_NEXT = DECOMPRESS | ADVANCE | REPLY  # a plain read whose halves are in: decompress is its next step
_NAMES = tuple(r.name.lower() for r in TargetRole)

StateCallback = Callable[[Any, d.Ctx, Any, Any], None]


class Targets:
    """One worker's io_control / io_data contexts towards the three targets, and which are out."""

    def __init__(self, dev: d.Dev, pe: d.Pe, n: int, state_cb: Callable[[str], StateCallback],
                 progress: Callable[[Transaction], None], accepting: Callable[[], bool],
                 running: Callable[[], bool], worker_name: str, health: TargetHealth, io_timeout: float,
                 layout: ChunkLayout) -> None:
        self._progress = progress
        # A plain read's next step once its halves are in, done from the completion that brought the last of
        # them (the worker sets it to Engines.decompress); None: every transaction goes through _progress.
        self.decompress: Callable[[Transaction], None] | None = None
        self._accepting = accepting  # whether responses are still expected (running or IOs in flight)
        self._running = running      # whether the data path takes requests
        self._name = worker_name
        self.health = health
        self.io_timeout = io_timeout
        self.block_size, self.half = layout.block_size, layout.half
        self.closing = False
        self.ctrl: list[Rdma] = []
        self.data: list[Rdma] = []
        self._conns: dict[RdmaConnectionRole, list[RdmaConnection | None]] = {
            RdmaConnectionRole.IO_CONTROL: [None, None, None], RdmaConnectionRole.IO_DATA: [None, None, None]}
        for role in TargetRole:
            ctrl, data = Rdma(dev, role), Rdma(dev, role)
            for ctx, kind in ((ctrl, "ctrl"), (data, "data")):
                pe.connect_ctx(ctx)
                ctx.set_permissions(RDMA_PERMISSIONS)
                ctx.set_state_changed_cb(state_cb(f"{role.name.lower()}/{kind}"))
            ctrl.task_send_set_conf(self._on_sent, self._on_send_error, n)
            ctrl.task_receive_set_conf(self._on_response, self._on_receive_error, n)
            self.ctrl.append(ctrl)
            self.data.append(data)
        self._txns: list[Transaction] = []
        self._n_txns = 0
        self.req_slots: list[list[memoryview]] = []     # [transaction][role]
        self.sends: list[list[RdmaTaskSend]] = []       # [transaction][role]
        self.send_submits: list[list[Callable[[], None]]] = []  # their one-call submits (fast lane)
        # [role][transaction]: a response slot's buffer reset and its receive's submit, one call each (fast lane)
        self._resp_lanes: list[list[tuple[Callable[[], None], Callable[[], None]]]] = []
        self._resp_lens: list[list[Callable[[], int]]] = []  # each receive's result_len_reader, by [r][j]
        self._resp_slots: list[list[memoryview]] = []    # [role][transaction]
        self._resp_tasks: list[list[RdmaTaskReceive]] = []
        self._resp_bufs: list[list[d.Buf]] = []          # each receive's buffer (its slot, fixed)
        self.dead: set[TargetRole] = set()  # targets out, as applied by this worker
        self.health_version = 0
        self._next_scan = 0.0
        self._clock = LoopClock(_DEADLINE_SCAN)  # the data path's rounds: a stop of this process is not a late target
        self.late = LateTargets()  # which target a late request blames (when each was last heard)
        self._answers = self.late.answers  # completions per role, counted by the callbacks below
        self.io_warnings = 0

    @property
    def contexts(self) -> list[Rdma]:
        """Every RDMA context (io_control ones first)."""
        return [*self.ctrl, *self.data]

    # ------------------------------------------------------------------ control phase
    def export(self, role: RdmaConnectionRole) -> list[bytes]:
        """Export the *role* context towards each target (data_1, data_2, data_p)."""
        conns = self._conns[role]
        blobs = []
        for r, ctx in enumerate(self.ctrl if role is RdmaConnectionRole.IO_CONTROL else self.data):
            if conns[r] is not None:
                raise StorageAppError(ErrorCode.BAD_STATE, f"{self._name}: {role.name.lower()} already exported")
            blob, conn = ctx.export()
            conns[r] = conn
            blobs.append(blob)
        return blobs

    def connect(self, role: RdmaConnectionRole, blobs: list[bytes]) -> None:
        """Connect the *role* contexts with the targets' blobs."""
        conns = self._conns[role]
        for r, (ctx, blob) in enumerate(zip(self.ctrl if role is RdmaConnectionRole.IO_CONTROL else self.data,
                                            blobs)):
            conn = conns[r]
            if conn is None:
                raise StorageAppError(ErrorCode.BAD_STATE, f"{self._name}: {role.name.lower()} was not exported")
            try:
                ctx.connect(bytes(blob), conn)
            except DocaError as exc:
                raise StorageAppError(exc.code, f"{self._name}: connecting the {role.name.lower()} context to "
                                                f"{role_name(r)} failed: {exc}") from None

    def prepare(self, inv: d.BufInventory, io_mm: d.Mmap, txns: list[Transaction], req_offset: int,
                resp_offset: int) -> None:
        """Allocate the tasks: request ``(j, r)`` at *req_offset* + ``(3j + r)·64`` of *io_mm*,
        its response at *resp_offset* + ``(3j + r)·64``; then post every receive."""
        base = io_mm.get_memrange()[0]
        mem = io_mm.buffer
        m = IO_MESSAGE_SIZE
        self._txns = txns
        self._n_txns = len(txns)
        self._clock.restart()
        self.late.restart(time.monotonic())
        conns = self._conns[RdmaConnectionRole.IO_CONTROL]
        for t in txns:
            slots, sends = [], []
            for r, ctrl in enumerate(self.ctrl):
                off = req_offset + (t.index * 3 + r) * m
                slots.append(mem[off:off + m])
                conn = conns[r]
                assert conn is not None
                sends.append(ctrl.task_send_allocate_init(conn, inv.buf_get_by_data(io_mm, base + off, m), t))
            self.req_slots.append(slots)
            self.sends.append(sends)
            self.send_submits.append([task.submitter() for task in sends])
        for r, ctrl in enumerate(self.ctrl):
            rslots, tasks, bufs = [], [], []
            for j in range(len(txns)):
                off = resp_offset + (j * 3 + r) * m
                rslots.append(mem[off:off + m])
                buf = inv.buf_get_by_addr(io_mm, base + off, m)
                bufs.append(buf)
                tasks.append(ctrl.task_receive_allocate_init(buf, (r, j)))
            self._resp_slots.append(rslots)
            self._resp_tasks.append(tasks)
            self._resp_bufs.append(bufs)
            self._resp_lanes.append([(buf.fast_lane().reset_data_len, task.submitter())
                                     for buf, task in zip(bufs, tasks)])
            self._resp_lens.append([task.result_len_reader() for task in tasks])
        for r in range(3):
            for j in range(len(txns)):
                self._post_receive(r, j)

    # ------------------------------------------------------------------ requests
    def send(self, t: Transaction, kind: int, roles: tuple[int, ...]) -> None:
        """Send the half-block requests of block ``t.block`` to *roles* (what ``BlockPlan.read_requests``
        / ``write_requests`` build), packed in place; a target that is out fails the transaction."""
        if self.dead and t.refused_roles(roles, self.dead):
            return
        h = self.half
        storage = (t.storage_offset // self.block_size + t.block) * h  # Transaction.target_storage_offset
        where = t.where
        if self.io_timeout:
            t.deadline = time.monotonic() + self.io_timeout
        slots, sends = self.req_slots[t.index], self.send_submits[t.index]
        for r in roles:
            pack_io_message_into(slots[r], 0, kind, t.index, 0, h, where[r], storage)
            try:
                sends[r]()
            except DocaError as exc:
                t.set_error(exc.code, f"sending to {_NAMES[r]} failed: {exc}")
                continue
            bit = 1 << r
            t.send_mask |= bit
            t.resp_mask |= bit

    def _post_receive(self, r: int, j: int) -> None:
        # The slot is not zeroed: a response is used only when it filled all 64 bytes.
        self._resp_bufs[r][j].reset_data_len()
        try:
            self._resp_tasks[r][j].submit()
        except DocaError as exc:
            self.target_failed(TargetRole(r), f"posting a receive failed: {exc}")

    # ------------------------------------------------------------------ completions
    def _on_sent(self, task: RdmaTaskSend, t: Transaction, role: Any) -> None:
        r = int(role)
        self._answers[r] += 1  # the target took the request: it is alive
        bit = 1 << r  # Transaction.sent() inline
        if not t.send_mask & bit:
            return  # written off: its target was taken out meanwhile
        t.send_mask &= ~bit
        if t.op_busy or t.send_mask or t.resp_mask or self.closing:
            return
        # the last of the block's completions (its answers came first): the next step inline
        decompress = self.decompress
        if decompress is not None and t.pending == _DECOMPRESS_NEXT and t.error == SUCCESS:
            decompress(t)
            if t.op_busy:
                return
        self._progress(t)

    def _on_send_error(self, task: RdmaTaskSend, t: Transaction, role: Any) -> None:
        r = int(role)
        if not t.send_mask & (1 << r):
            return  # written off: its target was taken out meanwhile
        # Taking the target out writes this request off too (a read is served again from the others).
        self.target_failed(TargetRole(r), f"a send failed: {task.get_status().name}")
        if t.send_mask & (1 << r):  # closing (or the target was already out): fail the transaction
            status = task.get_status()
            if t.send_failed(r, status, f"sending to {_NAMES[r]} failed") and not self.closing:
                self._progress(t)

    def _on_response(self, task: RdmaTaskReceive, where: tuple[int, int], _role: Any) -> None:
        if self.closing:
            return
        r, j = where
        self._answers[r] += 1  # heard from the target
        n = self._resp_lens[r][j]()
        if n == IO_MESSAGE_SIZE:
            typ, ud, result = unpack_io_head_from(self._resp_slots[r][j])
        else:
            typ, ud, result = _RESULT, -1, 0
        t = self._txns[ud] if 0 <= ud < self._n_txns else None
        # A busy transaction is an IO in flight: responses are still expected (what _accepting() says).
        if (t is not None and t.busy) or self._accepting():  # the slot takes the next response (_post_receive)
            reset, submit = self._resp_lanes[r][j]
            reset()  # a response is used only when it filled all 64 bytes
            try:
                submit()
            except DocaError as exc:
                self.target_failed(TargetRole(r), f"posting a receive failed: {exc}")
        if t is None or not t.resp_mask & (1 << r):
            if TargetRole(r) in self.dead:  # a late answer of a target that is out: written off
                log.debug("%s: ignoring a late response from %s (out)", self._name, _NAMES[r])
            else:
                log.warning("%s: ignoring an unexpected response from %s (%d bytes, user_data %d)", self._name,
                            _NAMES[r], n, ud)
            return
        t.resp_mask &= ~(1 << r)  # Transaction.answered() inline; its error texts on the slow path
        if typ != _RESULT or result != SUCCESS:
            t.answered(r, typ, result, _RESULT)
        if t.op_busy or t.send_mask or t.resp_mask:
            return
        # the last of the block's completions: the next step inline
        decompress = self.decompress
        if decompress is not None and t.pending == _DECOMPRESS_NEXT and t.error == SUCCESS:
            decompress(t)
            if t.op_busy:
                return
        self._progress(t)

    def _on_receive_error(self, task: RdmaTaskReceive, where: tuple[int, int], _role: Any) -> None:
        if not self.closing and self._running():
            self.target_failed(TargetRole(where[0]), f"a receive failed: {task.get_status().name}")

    # ------------------------------------------------------------------ health
    def target_failed(self, role: TargetRole, why: str) -> None:
        """Target *role* is lost (an RDMA task or context failed)."""
        self.target_out(role, f"was lost ({why})", ErrorCode.CONNECTION_RESET)

    def target_out(self, role: TargetRole, why: str, code: ErrorCode) -> None:
        """Take *role* out for the session (every thread), then write off this worker's requests to it."""
        if self.closing:
            return
        self.health.mark_out(role, why)  # logs the WARNING once per target
        self._apply_out(role, why, code)

    def sync_health(self) -> bool:
        """Apply the targets taken out by other threads; whether any target is out."""
        health = self.health
        if health.version != self.health_version:
            self.health_version = health.version
            for role in sorted(health.out - self.dead):
                self._apply_out(role, health.reasons.get(role, "is out"), ErrorCode.CONNECTION_RESET)
        return bool(self.dead)

    def _apply_out(self, role: TargetRole, why: str, code: ErrorCode) -> None:
        """Nothing is sent to *role* any more; requests of it still unanswered are written off: a read
        fetches its block again from the two others (degraded), anything else is answered with *code*.

        A stalled target may still RDMA-write its late answer into the transaction's chunk, at the
        normal place of its half; degraded reads never use that place (see ``Transaction.alt_offsets``,
        and data_p's place is unused by plain reads), writes are refused, and the target is never used
        again: so the chunk stays safe to reuse at once."""
        if self.closing or role in self.dead:
            return
        self.dead.add(role)
        log.info("%s: storage target %s is out; %s", self._name, role_name(role),
                 "serving reads from the two others" if len(self.dead) == 1 else "failing every IO")
        readable = len(self.dead) == 1
        text = f"storage target {role_name(role)} {why}"
        for t in self._txns:
            failed = t.write_off(int(role), readable, int(code), text)
            if failed is None:
                continue
            if failed:
                self.warn_io(t, code, text)
            if not t.outstanding:
                self._progress(t)

    def check_deadlines(self) -> None:
        """Every ≤ 0.1 s: with a request past ``--target-io-timeout``, take out the target silent the longest
        (:mod:`apps.gga_offload.lateness`), at the next round, once what had come in was progressed. When this
        round comes far too late (this process did not run: SIGSTOP, suspended, starved), the requests in flight
        get their deadline again from now instead: the targets had no chance to be heard."""
        if not self.io_timeout or not self._txns:
            return
        stall = self._clock.tick()
        if stall:
            waiting = [t for t in self._txns if t.send_mask | t.resp_mask]
            for t in waiting:
                t.deadline += stall
            self.late.suspect = False
            log.warning("%s: %s%s", self._name, describe_stall(stall),
                        f"; its {len(waiting)} target request(s) in flight get their --target-io-timeout again from now"
                        if waiting else "")
            return
        now = time.monotonic()
        if now < self._next_scan:
            return
        r = self.late.scan(self._txns, now)
        # a request found late is judged again at the next round, after this worker progressed its completions
        self._next_scan = now if self.late.suspect else now + min(_DEADLINE_SCAN, self.io_timeout / 4)
        if r is None:
            return
        late = [t for t in self._txns if (t.send_mask | t.resp_mask) and t.deadline <= now]
        self.target_out(TargetRole(r), f"did not answer an IO request within {self.io_timeout:g} s "
                                       f"(--target-io-timeout)", ErrorCode.TIME_OUT)
        for t in late:
            if (t.send_mask | t.resp_mask) and t.deadline <= now:
                t.deadline = now + self.io_timeout

    def warn_io(self, t: Transaction, code: ErrorCode, why: str) -> None:
        """Log an IO answered with an error (WARNING for the first few, then DEBUG)."""
        self.io_warnings += 1
        level = logging.WARNING if self.io_warnings <= MAX_WARNINGS else logging.DEBUG
        log.log(level, "%s: answering transaction %d with %s: %s", self._name, t.index, code.name, why)

    # ------------------------------------------------------------------ teardown
    def named_contexts(self) -> list[tuple[str, Rdma]]:
        """``(name, context)`` of every context, for closing."""
        return [(f"{role_name(r)} io_control context", c) for r, c in enumerate(self.ctrl)] + \
            [(f"{role_name(r)} io_data context", c) for r, c in enumerate(self.data)]

    def release(self) -> None:
        """Drop the slot views (after the contexts were closed)."""
        for group in (*self.req_slots, *self._resp_slots):
            for s in group:
                s.release()
        self.req_slots.clear()
        self.sends.clear()
        self.send_submits.clear()
        self._resp_lanes.clear()
        self._resp_lens.clear()
        self._resp_slots.clear()
        self._resp_tasks.clear()
        self._resp_bufs.clear()
        self._txns = []
        self._n_txns = 0
        self.ctrl, self.data = [], []
