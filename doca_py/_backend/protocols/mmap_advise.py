"""Protocols of ``doca_mmap_advise`` (``doca_mmap_advise.h``, module ``doca_py.<impl>.mmap_advise``): a
ctx with one task type, cache invalidate."""

from __future__ import annotations

from typing import Protocol

from .core import BufHandle, CtxHandle, DevHandle, DevInfoHandle, TaskHandle, TaskPoolHandle


class MmapAdviseTaskInvalidateCacheHandle(TaskHandle, Protocol):
    """``doca_mmap_advise_task_invalidate_cache``."""

    def set_buf(self, buf: BufHandle) -> None:
        """``doca_mmap_advise_task_invalidate_cache_set_buf``."""
        ...


class MmapAdviseHandle(CtxHandle, Protocol):
    """``doca_mmap_advise`` as a backend implements it."""

    @property
    def invalidate_cache(self) -> TaskPoolHandle:
        """Backend: the cache invalidate task type (``doca_mmap_advise_task_invalidate_cache``)."""
    def task_invalidate_cache_alloc_init(self, buf: BufHandle) -> MmapAdviseTaskInvalidateCacheHandle:
        """``doca_mmap_advise_task_invalidate_cache_alloc_init``."""


class MmapAdviseBackend(Protocol):
    """Module ``doca_py.<impl>.mmap_advise``."""

    def mmap_advise_create(self, dev: DevHandle) -> MmapAdviseHandle:
        """``doca_mmap_advise_create``."""
    def cap_task_cache_invalidate_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_mmap_advise_cap_task_cache_invalidate_is_supported``."""
    def task_cache_invalidate_get_max_buf_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_mmap_advise_task_cache_invalidate_get_max_buf_size``."""
