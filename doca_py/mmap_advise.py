"""``doca_mmap_advise`` (DOCA 2.8 and later): advice on how mapped memory will be used; its one task
invalidates the Arm cores' cache lines of a buffer, so a BlueField need not write them back to DRAM.

```pycon
>>> adv = MmapAdvise(dev); pe.connect_ctx(adv)
>>> adv.task_invalidate_cache_set_conf(on_done, on_error, num_tasks=1)
>>> adv.start()
>>> adv.task_invalidate_cache_alloc_init(buf).submit()   # buf: of a started mmap with dev added

```

The advice changes performance only, never the buffer's contents. On the emulated backend the task
makes every check the hardware makes (see [`MmapAdvise`][doca_py.mmap_advise.MmapAdvise]) and
then completes: there is no cache to advise.
"""

from __future__ import annotations

from typing import Any

from ._args import expect, wrong_type
from ._backend import backend
from ._backend.protocols.mmap_advise import MmapAdviseHandle, MmapAdviseTaskInvalidateCacheHandle
from .buf import Buf, freed_buf
from .ctx import Ctx, Task, TaskCallback
from .dev import Dev, DevInfo, devinfo_handle

__all__ = ["MmapAdvise", "MmapAdviseTaskInvalidateCache"]


class MmapAdviseTaskInvalidateCache(Task):
    """``doca_mmap_advise_task_invalidate_cache``: invalidate the cache lines of one buffer."""

    __slots__ = ("_buf",)
    _h: MmapAdviseTaskInvalidateCacheHandle

    def get_buf(self) -> Buf:
        """``doca_mmap_advise_task_invalidate_cache_get_buf``: the buffer."""
        return self._buf

    def set_buf(self, buf: Buf) -> None:
        """``doca_mmap_advise_task_invalidate_cache_set_buf``: aim the task at *buf* (between runs)."""
        if not isinstance(buf, Buf):
            raise wrong_type("MmapAdviseTaskInvalidateCache.set_buf", Buf, buf=buf)
        if buf._closed:
            raise freed_buf("MmapAdviseTaskInvalidateCache.set_buf", buf=buf)
        self._h.set_buf(buf._h)
        self._buf = buf


class MmapAdvise(Ctx):
    """``doca_mmap_advise`` context on *dev* (``doca_mmap_advise.h``: DOCA 2.8 and later; the native backend
    raises ``DocaNotSupported`` naming the versions on a 2.6 runtime).

    The cache invalidate task completes with success for a buffer that is not released, is one buffer
    (not a list), lies in a started mmap (or a live imported one) to which the ctx's device was added,
    and is no larger than [`task_cache_invalidate_get_max_buf_size`][doca_py.mmap_advise.MmapAdvise.task_cache_invalidate_get_max_buf_size].
    Otherwise its error callback runs with DOCA's status (``INVALID_VALUE``; ``NOT_PERMITTED`` for a map
    the device cannot reach or an import its exporter revoked) and, as for any failed task, the ctx stops.
    """

    @classmethod
    def from_handle(cls, dev: Dev, handle: MmapAdviseHandle | int, user_data: Any = None) -> MmapAdvise:
        """Python-only: wrap an existing ``doca_mmap_advise`` on *dev* without taking ownership, as
        [`Dma.from_handle`][doca_py.dma.Dma.from_handle] does: *handle* is another wrapper's ``handle`` (the C
        address on the native backend); ``close`` never destroys the DOCA object."""
        c = cls(dev, user_data, _handle=backend.borrow_mmap_advise(handle) if isinstance(handle, int) else handle)
        c._borrow()
        return c

    def __init__(self, dev: Dev, user_data: Any = None, *, _handle: MmapAdviseHandle | None = None) -> None:
        expect("MmapAdvise", Dev, dev=dev)
        dev._check_open()
        self._h: MmapAdviseHandle = backend.mmap_advise.mmap_advise_create(dev._h) if _handle is None else _handle
        super().__init__(self._h, user_data)
        dev._adopt(self)
        self._dev = dev

    def task_invalidate_cache_set_conf(self, success: TaskCallback[MmapAdviseTaskInvalidateCache],
                                       error: TaskCallback[MmapAdviseTaskInvalidateCache], num_tasks: int) -> None:
        """``doca_mmap_advise_task_invalidate_cache_set_conf``: the completion callbacks and the task pool's
        size (before start)."""
        self._set_conf(self._h.invalidate_cache, success, error, num_tasks)

    def task_invalidate_cache_alloc_init(self, buf: Buf, user_data: Any = None) -> MmapAdviseTaskInvalidateCache:
        """``doca_mmap_advise_task_invalidate_cache_alloc_init``: a task from the pool aimed at *buf*
        (``DocaNoMemory`` when the pool is empty)."""
        if not isinstance(buf, Buf):
            raise wrong_type("MmapAdvise.task_invalidate_cache_alloc_init", Buf, buf=buf)
        if buf._closed:
            raise freed_buf("MmapAdvise.task_invalidate_cache_alloc_init", buf=buf)
        h = self._h.task_invalidate_cache_alloc_init(buf._h)
        t = self._wrap_task(h, MmapAdviseTaskInvalidateCache, user_data)
        t._buf = buf
        return t

    @staticmethod
    def cap_task_cache_invalidate_is_supported(devinfo: DevInfo) -> bool:
        """``doca_mmap_advise_cap_task_cache_invalidate_is_supported``: whether *devinfo* supports the cache
        invalidate task (``False`` on a native runtime older than DOCA 2.8, which lacks the function)."""
        return backend.mmap_advise.cap_task_cache_invalidate_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def task_cache_invalidate_get_max_buf_size(devinfo: DevInfo) -> int:
        """``doca_mmap_advise_task_cache_invalidate_get_max_buf_size``: the largest buffer (bytes) a cache
        invalidate task on *devinfo* takes."""
        return backend.mmap_advise.task_cache_invalidate_get_max_buf_size(devinfo_handle(devinfo))

    def __enter__(self) -> MmapAdvise:
        return self
