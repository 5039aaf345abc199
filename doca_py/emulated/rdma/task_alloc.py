"""The allocators of the emulated rdma tasks (``doca_rdma_task_*_allocate_init``), a base of :class:`.ctx.EmuRdma`."""

from __future__ import annotations

from typing import Any

from ..._backend.protocols.core import BufHandle
from ..buf import EmuBuf
from ..ctx import EmuTask, TaskPool
from .remote_tasks import EmuRdmaTaskAtomic, EmuRdmaTaskRead, EmuRdmaTaskWrite
from .tasks import U64, EmuRdmaTaskReceive, EmuRdmaTaskSend, RdmaTaskCtx, check_conn, u32

__all__ = ["RdmaTaskAlloc"]


class RdmaTaskAlloc(RdmaTaskCtx):
    """``doca_rdma_task_*_allocate_init`` of :class:`EmuRdma` (its task pools are made by its ``__init__``)."""

    # -- tasks --------------------------------------------------------------------------------------
    def task_receive_allocate_init(self, dst: BufHandle | None) -> EmuRdmaTaskReceive:
        t = self.receive.alloc()
        assert isinstance(t, EmuRdmaTaskReceive) and (dst is None or isinstance(dst, EmuBuf))
        t.dst = dst
        return t

    def _send_alloc(self, pool: TaskPool[EmuTask], conn: Any, src: BufHandle | None, imm: int | None) \
            -> EmuRdmaTaskSend:
        check_conn(self, conn)
        t = pool.alloc()
        assert isinstance(t, EmuRdmaTaskSend) and (src is None or isinstance(src, EmuBuf))
        t.conn, t.src = conn, src
        t.has_imm, t.imm = imm is not None, u32(imm or 0)
        return t

    def task_send_allocate_init(self, conn: Any, src: BufHandle | None) -> EmuRdmaTaskSend:
        return self._send_alloc(self.send, conn, src, None)

    def task_send_imm_allocate_init(self, conn: Any, src: BufHandle | None, imm: int) -> EmuRdmaTaskSend:
        return self._send_alloc(self.send_imm, conn, src, imm)

    def task_read_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> EmuRdmaTaskRead:
        check_conn(self, conn)
        t = self.read.alloc()
        assert isinstance(t, EmuRdmaTaskRead) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.conn, t.src, t.dst = conn, src, dst
        return t

    def _write_alloc(self, pool: TaskPool[EmuTask], conn: Any, src: BufHandle, dst: BufHandle, imm: int | None) \
            -> EmuRdmaTaskWrite:
        check_conn(self, conn)
        t = pool.alloc()
        assert isinstance(t, EmuRdmaTaskWrite) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.conn, t.src, t.dst = conn, src, dst
        t.has_imm, t.imm = imm is not None, u32(imm or 0)
        return t

    def task_write_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> EmuRdmaTaskWrite:
        return self._write_alloc(self.write, conn, src, dst, None)

    def task_write_imm_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle, imm: int) -> EmuRdmaTaskWrite:
        return self._write_alloc(self.write_imm, conn, src, dst, imm)

    def task_atomic_cmp_swp_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle, cmp: int,
                                          swap: int) -> EmuRdmaTaskAtomic:
        check_conn(self, conn)
        t = self.atomic_cmp_swp.alloc()
        assert isinstance(t, EmuRdmaTaskAtomic) and isinstance(dst, EmuBuf) and isinstance(result, EmuBuf)
        t.conn, t.dst, t.result, t.cmp, t.swap, t.is_cas = conn, dst, result, cmp & U64, swap & U64, True
        return t

    def task_atomic_fetch_add_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle,
                                            add: int) -> EmuRdmaTaskAtomic:
        check_conn(self, conn)
        t = self.atomic_fetch_add.alloc()
        assert isinstance(t, EmuRdmaTaskAtomic) and isinstance(dst, EmuBuf) and isinstance(result, EmuBuf)
        t.conn, t.dst, t.result, t.add, t.is_cas = conn, dst, result, add & U64, False
        return t
