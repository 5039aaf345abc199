"""Native ``doca_dma`` (libdoca_dma); the engine plumbing it uses is in :mod:`.engine`.

Nothing here touches DOCA at import time: libdoca_dma is opened on first use.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import TYPE_CHECKING, cast

from .._backend.protocols.core import BufHandle, DevInfoHandle
from ..errors import check
from ._common import lib
from .capi.dma import load_dma
from .ctx import NativeCtx
from .engine import EngineTask, EngineTaskPool, buf_ptr, devinfo_ptr, get_u32, get_u64, init_ctx, is_supported

if TYPE_CHECKING:
    from .capi._raw import DmaLib

__all__ = [
    "NativeDma",
    "NativeDmaTaskMemcpy",
    "dma_create",
    "cap_task_memcpy_is_supported",
    "cap_task_memcpy_get_max_buf_size",
    "cap_task_memcpy_get_max_buf_list_len",
    "cap_get_max_num_tasks",
]

_byref = ctypes.byref


def _dma() -> DmaLib:
    return load_dma()


# -- doca_dma ----------------------------------------------------------------------------------


class NativeDmaTaskMemcpy(EngineTask):
    """``doca_dma_task_memcpy *``."""

    __slots__ = ()

    def set_src(self, buf: BufHandle) -> None:
        _dma().doca_dma_task_memcpy_set_src(self.ptr, buf_ptr(buf))

    def set_dst(self, buf: BufHandle) -> None:
        _dma().doca_dma_task_memcpy_set_dst(self.ptr, buf_ptr(buf))

    def get_src(self) -> int | None:
        """The source ``doca_buf *``."""
        return _dma().doca_dma_task_memcpy_get_src(self.ptr)

    def get_dst(self) -> int | None:
        """The destination ``doca_buf *``."""
        return _dma().doca_dma_task_memcpy_get_dst(self.ptr)


class NativeDma(NativeCtx):
    """``doca_dma *`` and its ctx."""

    def __init__(self, ptr: int | None) -> None:
        l = _dma()
        self.ptr = ptr
        init_ctx(self, ptr, l.doca_dma_as_ctx, l.doca_dma_destroy, "doca_dma")
        self.memcpy = EngineTaskPool(self, partial(l.doca_dma_task_memcpy_set_conf, ptr), "doca_dma_task_memcpy_set_conf",
                                     l.doca_dma_task_memcpy_as_task, NativeDmaTaskMemcpy, "memcpy")
        self._alloc = l.doca_dma_task_memcpy_alloc_init

    def task_memcpy_alloc_init(self, src: BufHandle, dst: BufHandle) -> NativeDmaTaskMemcpy:
        pool = self.memcpy
        rc = self._alloc(self.ptr, buf_ptr(src), buf_ptr(dst), 0, _byref(pool.out))
        return cast(NativeDmaTaskMemcpy, pool.take(rc, "doca_dma_task_memcpy_alloc_init"))

    def cap_get_max_num_tasks(self) -> int:
        """``doca_dma_cap_get_max_num_tasks`` of this ctx."""
        return get_u32(_dma().doca_dma_cap_get_max_num_tasks, self.ptr)

    def set_ordered_completions(self, ordered: bool) -> None:
        """``doca_dma_set_ordered_completions`` (DOCA 3.2: ``DocaNotSupported`` naming the version on older
        runtimes)."""
        check(_dma().doca_dma_set_ordered_completions(self.ptr, 1 if ordered else 0),
              "doca_dma_set_ordered_completions")

    def get_ordered_completions(self) -> bool:
        """``doca_dma_get_ordered_completions`` (DOCA 3.2, as its setter)."""
        v = ctypes.c_uint8()
        check(_dma().doca_dma_get_ordered_completions(self.ptr, _byref(v)), "doca_dma_get_ordered_completions")
        return bool(v.value)

    def get_gpu_handle(self) -> int | None:
        """``doca_dma_get_gpu_handle`` (GPU datapath; DOCA 3.x)."""
        out = ctypes.c_void_p()
        check(_dma().doca_dma_get_gpu_handle(self.ptr, _byref(out)), "doca_dma_get_gpu_handle")
        return out.value


def dma_create(dev: object) -> NativeDma:
    """``doca_dma_create`` on a native dev handle."""
    out = ctypes.c_void_p()
    check(_dma().doca_dma_create(getattr(dev, "ptr"), _byref(out)), "doca_dma_create")
    return NativeDma(out.value)


def cap_task_memcpy_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_dma().doca_dma_cap_task_memcpy_is_supported, devinfo)


def cap_task_memcpy_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return get_u64(_dma().doca_dma_cap_task_memcpy_get_max_buf_size, devinfo_ptr(devinfo))


def cap_task_memcpy_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return get_u32(_dma().doca_dma_cap_task_memcpy_get_max_buf_list_len, devinfo_ptr(devinfo))


def cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    """Max memcpy tasks. DOCA asks a ``doca_dma`` ctx, not a devinfo, so this opens the
    device and creates a short-lived ctx on it (``NativeDma.cap_get_max_num_tasks``
    asks an existing one)."""
    c, l = lib(), _dma()
    dev = ctypes.c_void_p()
    check(c.doca_dev_open(devinfo_ptr(devinfo), _byref(dev)), "doca_dev_open")
    try:
        dma = ctypes.c_void_p()
        check(l.doca_dma_create(dev, _byref(dma)), "doca_dma_create")
        try:
            return get_u32(l.doca_dma_cap_get_max_num_tasks, dma.value)
        finally:
            l.doca_dma_destroy(dma)
    finally:
        c.doca_dev_close(dev)
