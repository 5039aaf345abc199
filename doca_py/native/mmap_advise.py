"""Native ``doca_mmap_advise`` (``doca_mmap_advise.h``, libdoca_common; DOCA 2.8 and later).

The ctx and its cache invalidate task over the engine plumbing of :mod:`.engine`. On a runtime
without the header's symbols (2.6) every call raises ``DocaNotSupported`` naming the versions that
export them.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import cast

from .._backend.protocols.core import BufHandle, DevInfoHandle
from ..errors import check
from ._common import lib
from .ctx import NativeCtx
from .engine import EngineTask, EngineTaskPool, buf_ptr, devinfo_ptr, get_u64, init_ctx, is_supported

__all__ = ["NativeMmapAdvise", "NativeMmapAdviseTaskInvalidateCache", "mmap_advise_create",
           "cap_task_cache_invalidate_is_supported", "task_cache_invalidate_get_max_buf_size"]

_byref = ctypes.byref


class NativeMmapAdviseTaskInvalidateCache(EngineTask):
    """``doca_mmap_advise_task_invalidate_cache *``."""

    __slots__ = ()

    def set_buf(self, buf: BufHandle) -> None:
        lib().doca_mmap_advise_task_invalidate_cache_set_buf(self.ptr, buf_ptr(buf))

    def get_buf(self) -> int | None:
        """The ``doca_buf *`` to invalidate."""
        return lib().doca_mmap_advise_task_invalidate_cache_get_buf(self.ptr)


class NativeMmapAdvise(NativeCtx):
    """``doca_mmap_advise *`` and its ctx."""

    def __init__(self, ptr: int | None) -> None:
        l = lib()
        self.ptr = ptr
        init_ctx(self, ptr, l.doca_mmap_advise_as_ctx, l.doca_mmap_advise_destroy, "doca_mmap_advise")
        self.invalidate_cache = EngineTaskPool(
            self, partial(l.doca_mmap_advise_task_invalidate_cache_set_conf, ptr),
            "doca_mmap_advise_task_invalidate_cache_set_conf", l.doca_mmap_advise_task_invalidate_cache_as_doca_task,
            NativeMmapAdviseTaskInvalidateCache, "invalidate_cache")
        self._alloc = l.doca_mmap_advise_task_invalidate_cache_alloc_init

    def task_invalidate_cache_alloc_init(self, buf: BufHandle) -> NativeMmapAdviseTaskInvalidateCache:
        pool = self.invalidate_cache
        rc = self._alloc(self.ptr, buf_ptr(buf), 0, _byref(pool.out))
        return cast(NativeMmapAdviseTaskInvalidateCache, pool.take(rc, "doca_mmap_advise_task_invalidate_cache_alloc_init"))


def mmap_advise_create(dev: object) -> NativeMmapAdvise:
    """``doca_mmap_advise_create`` on a native dev handle."""
    out = ctypes.c_void_p()
    check(lib().doca_mmap_advise_create(getattr(dev, "ptr"), _byref(out)), "doca_mmap_advise_create")
    return NativeMmapAdvise(out.value)


def cap_task_cache_invalidate_is_supported(devinfo: DevInfoHandle) -> bool:
    """``False`` also on a runtime that does not export the function (DOCA 2.6)."""
    return is_supported(lib().doca_mmap_advise_cap_task_cache_invalidate_is_supported, devinfo)


def task_cache_invalidate_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return get_u64(lib().doca_mmap_advise_task_cache_invalidate_get_max_buf_size, devinfo_ptr(devinfo))
