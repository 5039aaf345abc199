"""The gga worker's offload engines: EC create / recover, LZ4-stream decompress, DMA memcpy.

Each transaction owns one task of each kind and the buffers they use, allocated once when the
data path starts (§8.2 "per transaction: 1 decompress task, 1 EC recover task, 1 EC create task,
1 DMA memcpy task") and re-aimed per block: a chunk buffer moves with ``Buf.set_data`` inside
its transaction's chunk, a host buffer with ``reuse_by_addr`` / ``reuse_by_data`` onto exactly
the block (DOCA 3.2+), the recover task gets the matrix of its read mode with ``set_recover_matrix``.
No buffer or task is created per IO (ARCHITECTURE §8). Older DOCA has no re-aim (chosen once, in
:meth:`Engines.prepare`): the DMA source spans the whole host region and only its data region moves
(``set_data``), and the decompress destination is a new buffer over exactly the block per IO (an
LZ4 decoder may write scratch bytes past its output, up to the end of the window, so the window
must end with the block).

A failed task stops its context (DOCA's rule). Its IO is answered with the error; the other
tasks of that context are freed (a context stops only once all are), it is started again at the
next housekeeping round and its tasks are allocated anew; transactions whose step was flushed
by that stop, or that wanted the engine meanwhile, wait in :attr:`Engines.blocked` and run their
step again afterwards.
"""

from __future__ import annotations

import logging
import struct
from collections import deque
from collections.abc import Callable
from typing import Any

import doca_py as d
from doca_py.compress import CompressTaskDecompressLz4Stream
from doca_py.dma import DmaTaskMemcpy
from doca_py.ec import EcTaskCreate, EcTaskRecover
from doca_py.errors import DocaError
from doca_py.types import CtxState

from apps.common.runtime.doca_features import doca_features
from apps.storage.runtime.offload import matrix_type_from_name
from apps.storage.wire import lz4_blocks
from apps.storage.wire.addressing import ChunkLayout, ReadMode, TargetRole
from apps.storage.wire.compressed_block import HEADER_SIZE, OVERHEAD

from .planning import check_compressed_size, recovery_roles
from .transaction import ADVANCE, DECOMPRESS, FETCH_FROM_INITIATOR, IO_FAILED, PRODUCE_EC, RECOVER, REPLY, \
    SUCCESS, Transaction

__all__ = ["Engines", "EngineSlot"]

log = logging.getLogger("apps.gga_offload")

_HEADER = struct.Struct(">II")  # compressed block: original size, compressed size
_SIZE = struct.Struct(">I")
_STEPS = (RECOVER, DECOMPRESS, FETCH_FROM_INITIATOR, PRODUCE_EC)
_LAST_BLOCK_DONE = ADVANCE | REPLY  # a read's block decompressed: advance, and reply if it was the last

#: ``(buf, addr, length)``: aim the DMA source at one host block.
AimSource = Callable[[d.Buf, int, int], None]


class EngineSlot:
    """One transaction's engine tasks and buffers (``None`` while their context restarts)."""

    __slots__ = ("recover", "decompress", "fetch", "create", "rec_src", "rec_src2", "rec_dst", "rec_mode",
                 "dec_src", "dec_dst", "dma_src", "dma_dst", "ec_src", "ec_dst", "running", "dec_submit",
                 "dec_src_lane", "dec_dst_lane")

    def __init__(self, rec_src: d.Buf, rec_src2: d.Buf, rec_dst: d.Buf, dec_src: d.Buf, dec_dst: d.Buf,
                 dma_src: d.Buf, dma_dst: d.Buf, ec_src: d.Buf, ec_dst: d.Buf) -> None:
        self.rec_src, self.rec_src2, self.rec_dst = rec_src, rec_src2, rec_dst  # survivors (chained), output
        self.dec_src, self.dec_dst = dec_src, dec_dst
        self.dma_src, self.dma_dst = dma_src, dma_dst
        self.ec_src, self.ec_dst = ec_src, ec_dst
        self.recover: EcTaskRecover | None = None
        self.decompress: CompressTaskDecompressLz4Stream | None = None
        self.fetch: DmaTaskMemcpy | None = None
        self.create: EcTaskCreate | None = None
        self.rec_mode: ReadMode | None = None  # the recover matrix the task holds
        self.running = 0                        # the step whose task is in flight (0: none)
        # The fast lane of a read's decompress: the task's one-call submit (with the task), its buffers' functions.
        self.dec_submit: Callable[[], None] | None = None
        self.dec_src_lane = dec_src.fast_lane()
        self.dec_dst_lane = dec_dst.fast_lane()


class Engines:
    """``Ec``, ``Compress`` and ``Dma`` of one worker, and each transaction's tasks on them."""

    def __init__(self, dev: d.Dev, pe: d.Pe, n: int, matrix_type: str,
                 progress: Callable[[Transaction], None], worker_name: str,
                 reply: Callable[[Transaction], None] | None = None) -> None:
        self._progress = progress
        # A read's next step once its last block is decompressed, done from that completion (the worker's
        # reply); None: every transaction goes through progress.
        self._reply = reply
        self._name = worker_name
        self.closing = False
        self.ec = ec = d.Ec(dev)
        pe.connect_ctx(ec)
        ec.task_create_set_conf(self._on_ec_created, self._on_error, n)
        ec.task_recover_set_conf(self._on_recovered, self._on_error, n)
        self.compress = comp = d.Compress(dev)
        pe.connect_ctx(comp)
        comp.task_decompress_lz4_stream_set_conf(self._on_decompressed, self._on_error, n)
        self.dma = dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(self._on_fetched, self._on_error, n)
        self._matrix_type = matrix_type
        self._matrices: dict[ReadMode | str, d.EcMatrix] = {}
        self._slots: list[EngineSlot] = []
        self._txns: list[Transaction] = []
        self.restart: set[d.Ctx] = set()        # contexts stopped by a failed task, to start again
        self.blocked: deque[Transaction] = deque()  # transactions waiting for a restart
        self._region: memoryview | None = None
        self._zeros = memoryview(b"")
        self._layout: ChunkLayout | None = None
        self._host_base = 0
        self._region_base = 0
        self._block_size = 0
        self._reuse = True  # the decompress destination is re-aimed (DOCA 3.2+), not replaced
        # How the host buffers are aimed at a block per IO, chosen in prepare() by the DOCA version.
        self._aim_src: AimSource = d.Buf.reuse_by_data
        self._aim_dec: Callable[[EngineSlot, int, int], None] = self._reuse_dec
        self._inv: d.BufInventory | None = None
        self._host: d.Mmap | None = None

    @property
    def contexts(self) -> tuple[d.Ctx, d.Ctx, d.Ctx]:
        """The three engine contexts (to start, and to close)."""
        return self.ec, self.compress, self.dma

    def create_matrices(self) -> None:
        """The coding matrix and the recover matrices of both recovery modes (Ec running)."""
        ec = self.ec
        coding = ec.matrix_create(matrix_type_from_name(self._matrix_type), 2, 1)
        self._matrices = {"coding": coding,
                          ReadMode.RECOVER_A: ec.matrix_create_recover(coding, [int(TargetRole.DATA_1)]),
                          ReadMode.RECOVER_B: ec.matrix_create_recover(coding, [int(TargetRole.DATA_2)])}

    # ------------------------------------------------------------------ data path start
    def prepare(self, inv: d.BufInventory, region: d.Mmap, region_base: int, host: d.Mmap, host_base: int,
                host_size: int, layout: ChunkLayout, txns: list[Transaction]) -> None:
        """Allocate every transaction's buffers and tasks."""
        self._region = region.buffer
        self._zeros = memoryview(bytes(layout.block_size))  # a slice of it is no copy
        self._layout = layout
        self._host_base = host_base
        self._region_base = region_base
        self._block_size = layout.block_size
        self._txns = txns
        self._inv, self._host = inv, host
        b, h = layout.block_size, layout.half
        first = min(b, host_size)  # host buffers are re-aimed before each use
        src_len = first
        self._reuse = doca_features().buf_reuse
        if self._reuse:
            self._aim_src, self._aim_dec = d.Buf.reuse_by_data, self._reuse_dec
        else:  # DOCA < 3.2: see the module's docstring
            src_len = host_size
            self._aim_src, self._aim_dec = d.Buf.set_data, self._new_dec_dst
        for t in txns:
            chunk = region_base + t.chunk_base
            size = layout.chunk_size
            # Chunk buffers span the transaction's chunk: set_data keeps every step inside it. Host
            # buffers are re-aimed onto exactly one block per IO (capacity B, as the reference).
            s = EngineSlot(inv.buf_get_by_addr(region, chunk, size), inv.buf_get_by_addr(region, chunk, size),
                           inv.buf_get_by_addr(region, chunk, size), inv.buf_get_by_addr(region, chunk, size),
                           inv.buf_get_by_addr(host, host_base, first), inv.buf_get_by_data(host, host_base, src_len),
                           inv.buf_get_by_addr(region, chunk, b), inv.buf_get_by_data(region, chunk, b),
                           inv.buf_get_by_addr(region, chunk + b, h))
            s.rec_src.chain_list(s.rec_src2)
            self._slots.append(s)
        for ctx in self.contexts:
            self._allocate(ctx)

    def _allocate(self, ctx: d.Ctx) -> None:
        """(Re)allocate every transaction's tasks on *ctx* (RUNNING)."""
        for t, s in zip(self._txns, self._slots):
            if ctx is self.ec:
                s.create = self.ec.task_create_allocate_init(self._matrices["coding"], s.ec_src, s.ec_dst, t)
                mode = s.rec_mode or ReadMode.RECOVER_B
                s.recover = self.ec.task_recover_allocate_init(self._matrices[mode], s.rec_src, s.rec_dst, t)
                s.rec_mode = mode
            elif ctx is self.compress:
                s.decompress = self.compress.task_decompress_lz4_stream_alloc_init(False, True, s.dec_src,
                                                                                   s.dec_dst, t)
                s.dec_submit = s.decompress.submitter()
            else:
                s.fetch = self.dma.task_memcpy_alloc_init(s.dma_src, s.dma_dst, t)

    # ------------------------------------------------------------------ steps
    def recover(self, t: Transaction) -> None:
        """EC-recover the missing half of block ``t.block`` from the two survivors at ``t.where``."""
        s = self._slots[t.index]
        task = s.recover
        if task is None or self.ec in self.restart:
            self._park(t)
            return
        assert self._layout is not None
        h = self._layout.half
        base = self._region_base
        where = t.where
        mode = t.mode
        first, second = recovery_roles(mode)  # survivors in EC index order
        s.rec_src.set_data(base + where[first], h)
        s.rec_src2.set_data(base + where[second], h)
        s.rec_dst.set_data(base + where[TargetRole.DATA_1 if mode is ReadMode.RECOVER_A else TargetRole.DATA_2], 0)
        if s.rec_mode is not mode:
            task.set_recover_matrix(self._matrices[mode])
            s.rec_mode = mode
        self._submit(t, s, task, RECOVER, "EC recover")

    def decompress(self, t: Transaction) -> None:
        """LZ4-decompress block ``t.block`` from the chunk straight into the initiator's memory."""
        s = self._slots[t.index]
        task = s.decompress
        if task is None or self.compress in self.restart:
            self._park(t)
            return
        region = self._region
        assert region is not None
        b = self._block_size
        base = t.data_base
        (size,) = _SIZE.unpack_from(region, base + 4)  # the compressed block's compressed_size
        if size == 0 or size + OVERHEAD > b:
            problem = check_compressed_size(size, b)
            t.set_error(IO_FAILED, f"block at storage offset {t.storage_offset} + {t.block}: {problem}")
            return
        s.dec_src_lane.set_data(self._region_base + base + HEADER_SIZE, size)
        dst = self._host_base + t.requester_offset + t.block * b  # ChunkLayout.host_offset
        if self._reuse:
            s.dec_dst_lane.reuse_by_args(dst, b, dst, 0)  # Buf.reuse_by_addr
        else:
            self._new_dec_dst(s, dst, b)
        submit = s.dec_submit
        assert submit is not None  # with the task
        try:  # _submit() inline
            submit()
        except DocaError as exc:
            if task.get_ctx().get_state() != CtxState.RUNNING:  # stopped by a failure not reported yet
                self._stopped(task.get_ctx())
                self._park(t)
                return
            t.set_error(exc.code, f"LZ4 decompress: {exc}")
            return
        t.pending &= ~DECOMPRESS
        s.running = DECOMPRESS
        t.op_busy = True

    @staticmethod
    def _reuse_dec(s: EngineSlot, addr: int, length: int) -> None:
        s.dec_dst.reuse_by_addr(addr, length)

    def _new_dec_dst(self, s: EngineSlot, addr: int, length: int) -> None:
        """DOCA < 3.2: the decompress task's destination becomes a new buffer over exactly the block (the old
        one goes back to the inventory first, so the inventory needs no spare)."""
        assert s.decompress is not None and self._inv is not None and self._host is not None
        s.dec_dst.dec_refcount()
        s.dec_dst = self._inv.buf_get_by_addr(self._host, addr, length)
        s.dec_dst_lane = s.dec_dst.fast_lane()
        s.decompress.set_dst(s.dec_dst)

    def fetch(self, t: Transaction) -> None:
        """DMA block ``t.block`` from the initiator into the chunk."""
        s = self._slots[t.index]
        task = s.fetch
        if task is None or self.dma in self.restart:
            self._park(t)
            return
        assert self._layout is not None
        b = self._layout.block_size
        self._aim_src(s.dma_src, self._host_base + t.requester_offset + t.block * b, b)
        s.dma_dst.reset_data_len()
        self._submit(t, s, task, FETCH_FROM_INITIATOR, "DMA from the initiator")

    def produce_ec(self, t: Transaction) -> None:
        """EC-create the parity of the compressed block in the chunk (into chunk + B)."""
        s = self._slots[t.index]
        task = s.create
        if task is None or self.ec in self.restart:
            self._park(t)
            return
        s.ec_dst.reset_data_len()
        self._submit(t, s, task, PRODUCE_EC, "EC create")

    def _submit(self, t: Transaction, s: EngineSlot, task: d.Task, step: int, what: str) -> None:
        try:
            task.submit()
        except DocaError as exc:
            if task.get_ctx().get_state() != CtxState.RUNNING:  # stopped by a failure not reported yet
                self._stopped(task.get_ctx())
                self._park(t)
                return
            t.set_error(exc.code, f"{what}: {exc}")
            return
        t.pending &= ~step
        s.running = step
        t.op_busy = True

    def _park(self, t: Transaction) -> None:
        t.op_busy = True  # until the engine runs again
        self.blocked.append(t)

    # ------------------------------------------------------------------ completions
    def _done(self, t: Transaction, problem: str | None) -> None:
        self._slots[t.index].running = 0
        t.op_busy = False
        if problem is not None:
            t.set_error(IO_FAILED, problem)
        if not self.closing:
            self._progress(t)

    def _on_recovered(self, task: EcTaskRecover, t: Transaction, _ud: Any) -> None:
        n = self._slots[t.index].rec_dst.get_data_len()
        t.pending &= ~RECOVER
        h = self._layout.half if self._layout is not None else 0
        self._done(t, None if n == h else f"EC recover produced {n} bytes")

    def _on_decompressed(self, task: CompressTaskDecompressLz4Stream, t: Transaction, _ud: Any) -> None:
        s = self._slots[t.index]
        n = s.dec_dst_lane.get_data_len()
        s.running = 0  # _done() inline
        t.op_busy = False
        b = self._block_size
        if n != b:
            t.set_error(IO_FAILED, f"the block decompressed to {n} bytes instead of {b}")
        if self.closing:
            return
        reply = self._reply
        if reply is not None and t.pending == _LAST_BLOCK_DONE and t.block + 1 >= t.blocks \
                and not (t.send_mask or t.resp_mask):
            # the next step inline (what Transaction.next_step() decides: advance past the last block, reply)
            if t.error == SUCCESS:
                t.block += 1
            t.pending = 0
            reply(t)
            return
        self._progress(t)

    def _on_fetched(self, task: DmaTaskMemcpy, t: Transaction, _ud: Any) -> None:
        self._done(t, None if self.closing else self._compress_in_place(t.chunk_base))

    def _compress_in_place(self, base: int) -> str | None:
        """Software-LZ4 the plain block at *base* into the compressed-block format, in place (§6.2)."""
        region, layout = self._region, self._layout
        assert region is not None and layout is not None
        b = layout.block_size
        stream = lz4_blocks.compress(region[base:base + b])
        c = len(stream)
        if c + OVERHEAD > b:
            return (f"Data is not compressible enough: Data was not compressible enough: {c} compressed bytes + "
                    f"{OVERHEAD} header/trailer bytes exceed the block size of {b}")
        _HEADER.pack_into(region, base, b, c)
        end = base + HEADER_SIZE + c
        region[base + HEADER_SIZE:end] = stream
        region[end:base + b] = self._zeros[:base + b - end]  # zero padding and trailer
        return None

    def _on_ec_created(self, task: EcTaskCreate, t: Transaction, _ud: Any) -> None:
        n = self._slots[t.index].ec_dst.get_data_len()
        h = self._layout.half if self._layout is not None else 0
        self._done(t, None if n == h else f"EC create produced {n} bytes")

    def _on_error(self, task: d.Task, t: Transaction, _ud: Any) -> None:
        if self.closing:
            return  # flushed by the teardown; closing the context frees the task
        s = self._slots[t.index]
        step, s.running = s.running, 0
        ctx = task.get_ctx()
        status = task.get_status()
        task.free()
        self._forget(s, task)
        if ctx in self.restart:
            # Flushed by the stop an earlier failure caused: run the step again after the restart.
            t.pending |= step
            self.blocked.append(t)  # op_busy stays set until then
            return
        log.warning("%s: %s task of transaction %d failed: %s", self._name, type(task).__name__, t.index,
                    status.name)
        self._stopped(ctx)
        t.op_busy = False
        t.set_error(status, f"{type(task).__name__} failed with {status.name}")
        self._progress(t)

    def _stopped(self, ctx: d.Ctx) -> None:
        """*ctx* left RUNNING (a failed task): free its idle tasks so that it can reach IDLE, and restart it."""
        if ctx in self.restart:
            return
        self.restart.add(ctx)
        for s in self._slots:
            for task, step in ((s.create, PRODUCE_EC), (s.recover, RECOVER), (s.decompress, DECOMPRESS),
                               (s.fetch, FETCH_FROM_INITIATOR)):
                if task is not None and task.get_ctx() is ctx and s.running != step:
                    task.free()
                    self._forget(s, task)

    @staticmethod
    def _forget(s: EngineSlot, task: d.Task) -> None:
        if task is s.create:
            s.create = None
        elif task is s.recover:
            s.recover = None
        elif task is s.decompress:
            s.decompress = s.dec_submit = None  # a freed task's submitter is called no more
        elif task is s.fetch:
            s.fetch = None

    # ------------------------------------------------------------------ housekeeping
    def restart_stopped(self, fail: Callable[[str], None]) -> bool:
        """Start the stopped contexts that reached IDLE and give their transactions tasks again;
        whether none is left to restart."""
        for ctx in list(self.restart):
            state = ctx.get_state()
            if state == CtxState.IDLE:
                try:
                    state = ctx.start()
                except DocaError as exc:
                    fail(f"could not restart {type(ctx).__name__}: {exc}")
                    self.restart.discard(ctx)
                    continue
            if state == CtxState.RUNNING:
                try:
                    self._allocate(ctx)
                except DocaError as exc:
                    fail(f"could not allocate the tasks of {type(ctx).__name__} again: {exc}")
                self.restart.discard(ctx)
                log.info("%s: restarted %s after a failed task", self._name, type(ctx).__name__)
        return not self.restart

    def resume_blocked(self) -> None:
        """Run the parked transactions' steps again (their engines run)."""
        blocked = self.blocked
        for _ in range(len(blocked)):  # one that parks again waits for the next round
            t = blocked.popleft()
            t.op_busy = False
            self._progress(t)

    def release(self) -> None:
        """Forget the tasks and buffers (after the contexts were closed; the inventory takes the buffers back)."""
        self._slots.clear()
        self._txns = []
        self._region = None
        self._inv = self._host = None
