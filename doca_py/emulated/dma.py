"""Emulated ``doca_dma``: memcpy between any two buffers the device can reach.

Local maps, PCI-imported maps (another process's exported memory) and maps of
this process all resolve through :meth:`EmuMmap.ptr`, which enforces range,
permission and revocation; the copy itself is one ``memmove``.
"""

from __future__ import annotations

import ctypes

from ..abc import BufHandle, DevHandle, DevInfoHandle
from ..errors import DocaInvalidValue, ErrorCode
from .buf import EmuBuf
from .ctx import OFFLOAD, EmuCtx, EmuSrcDstTask, EmuTask, TaskPool, unreachable_ok
from .mmap import EmuMmap, dev_key

__all__ = ["EmuDma", "EmuDmaTaskMemcpy", "dma_create", "cap_task_memcpy_is_supported",
           "cap_task_memcpy_get_max_buf_size", "cap_task_memcpy_get_max_buf_list_len",
           "cap_get_max_num_tasks", "MAX_BUF_SIZE", "MAX_BUF_LIST_LEN"]

MAX_BUF_SIZE = 1 << 31
MAX_BUF_LIST_LEN = 1
MAX_NUM_TASKS = 1 << 16
_memmove = ctypes.memmove
_INVALID = int(ErrorCode.INVALID_VALUE)
_NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)
_SMALL = 1 << 16


class EmuDmaTaskMemcpy(EmuSrcDstTask):
    """``doca_dma_task_memcpy``."""

    __slots__ = ("reached_src", "reached_dst")
    offload_bytes = 16 << 20  # copies run at tens of GB/s: a thread hop costs more below this
    kind = "dma_memcpy"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.reached_src: EmuMmap | None = None  # maps last found reachable by the ctx's device
        self.reached_dst: EmuMmap | None = None

    def _validate(self) -> None:
        src, dst = self.src, self.dst
        if src is None or dst is None or not src.refcount or not dst.refcount:
            raise DocaInvalidValue("memcpy task needs a source and a destination buffer")
        if src.next is not None or dst.next is not None:
            raise DocaInvalidValue(f"memcpy supports buffer lists of at most {MAX_BUF_LIST_LEN} element")
        if not src.data_len:
            raise DocaInvalidValue("memcpy source has no data")
        if src.data_len > MAX_BUF_SIZE:
            raise DocaInvalidValue(f"memcpy source exceeds the maximum buffer size {MAX_BUF_SIZE}")
        if dst.data + dst.data_len + src.data_len > dst.head + dst.len:
            raise DocaInvalidValue(f"memcpy destination has {dst.head + dst.len - dst.data - dst.data_len} "
                                   f"bytes free after its data, source holds {src.data_len}")

    def _execute(self) -> int:
        src, dst = self.src, self.dst
        if src is None or dst is None or src.next is not None or dst.next is not None:
            self.reason = "memcpy needs one source and one destination buffer (no lists)"
            return _INVALID
        n = src.data_len
        s = src.data
        d = dst.data + dst.data_len
        sm, dm = src.mmap, dst.mmap
        if not 0 < n <= MAX_BUF_SIZE or d + n > dst.head + dst.len or sm is None or dm is None:
            self.reason = (f"memcpy of {n} bytes: the source must hold 1..{MAX_BUF_SIZE} bytes and the "
                           f"destination has {dst.head + dst.len - d} bytes free after its data")
            return _INVALID
        if (sm is not self.reached_src or dm is not self.reached_dst):  # checked once per pair of maps
            if not unreachable_ok(self, src, dst):
                return _NOT_PERMITTED
            self.reached_src, self.reached_dst = sm, dm
        # Fast path: two started local maps. A buf lies inside its map (checked when the buf is set up;
        # a map's range never changes), so with the room check above the copy needs no bounds check.
        if n <= _SMALL and sm.fast and dm.fast and dm.writable:
            so, do = s - sm.addr, d - dm.addr
            dm.mv[do:do + n] = sm.mv[so:so + n]  # type: ignore[index]
        elif self._offload(n):
            return OFFLOAD
        else:
            _memmove(dm.ptr(d, n, True), sm.ptr(s, n, False), n)  # releases the GIL for big copies
        dst.data_len += n
        return 0


class EmuDma(EmuCtx):
    """Emulated ``doca_dma`` context."""

    def __init__(self) -> None:
        super().__init__()
        self.memcpy = TaskPool(self, EmuDmaTaskMemcpy)

    def task_memcpy_alloc_init(self, src: BufHandle, dst: BufHandle) -> EmuDmaTaskMemcpy:
        t = self.memcpy.alloc()
        assert isinstance(t, EmuDmaTaskMemcpy) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.src, t.dst = src, dst
        return t


def dma_create(dev: DevHandle) -> EmuDma:
    """``doca_dma_create``."""
    dma = EmuDma()
    dma.dev_key = dev_key(dev)
    return dma


def cap_task_memcpy_is_supported(devinfo: DevInfoHandle) -> bool:
    return True


def cap_task_memcpy_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_SIZE


def cap_task_memcpy_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS
