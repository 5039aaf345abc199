"""``doca_dma``: memory copies between buffers a device can reach.

```pycon
>>> dma = Dma(dev); pe.connect_ctx(dma)
>>> dma.task_memcpy_set_conf(on_done, on_error, num_tasks=64)
>>> dma.start()
>>> dma.task_memcpy_alloc_init(src, dst).submit()   # dst data grows by src's data_len

```
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from . import _impl
from .abc import BufHandle, CtxHandle, DevHandle, DevInfoHandle, TaskHandle
from .buf import Buf
from .ctx import Ctx, Task, TaskCallback
from .dev import Dev, DevInfo

__all__ = ["Dma", "DmaTaskMemcpy", "DmaHandle", "DmaBackend"]


class DmaHandle(CtxHandle, Protocol):
    """``doca_dma`` as a backend implements it."""

    @property
    def memcpy(self) -> Any:
        """Backend: the memcpy task type (``doca_dma_task_memcpy``)."""
    def task_memcpy_alloc_init(self, src: BufHandle, dst: BufHandle) -> TaskHandle:
        """Backend hook behind the public ``task_memcpy_alloc_init`` (``doca_dma``)."""


class DmaBackend(Protocol):
    """Module ``doca_py.<impl>.dma``."""

    def dma_create(self, dev: DevHandle) -> DmaHandle:
        """Backend hook behind the public ``dma_create`` (``doca_dma``)."""
    def cap_task_memcpy_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """Backend hook behind the public ``cap_task_memcpy_is_supported`` (``doca_dma``)."""
    def cap_task_memcpy_get_max_buf_size(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_task_memcpy_get_max_buf_size`` (``doca_dma``)."""
    def cap_task_memcpy_get_max_buf_list_len(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_task_memcpy_get_max_buf_list_len`` (``doca_dma``)."""
    def cap_get_max_num_tasks(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_get_max_num_tasks`` (``doca_dma``)."""


def _backend() -> DmaBackend:
    return cast(DmaBackend, _impl.backend_module("dma"))


class DmaTaskMemcpy(Task):
    """``doca_dma_task_memcpy``: copy *src*'s data after *dst*'s data."""

    __slots__ = ("_src", "_dst")

    def get_src(self) -> Buf:
        """``doca_dma_task_memcpy_get_src``: the src."""
        return self._src

    def get_dst(self) -> Buf:
        """``doca_dma_task_memcpy_get_dst``: the dst."""
        return self._dst

    def set_src(self, src: Buf) -> None:
        """``doca_dma_task_memcpy_set_src``: set the src to *src*."""
        self._h.set_src(src._h)  # type: ignore[attr-defined]
        self._src = src

    def set_dst(self, dst: Buf) -> None:
        """``doca_dma_task_memcpy_set_dst``: set the dst to *dst*."""
        self._h.set_dst(dst._h)  # type: ignore[attr-defined]
        self._dst = dst


class Dma(Ctx):
    """``doca_dma`` context on *dev*."""

    def __init__(self, dev: Dev, user_data: Any = None) -> None:
        dev._check_open()
        self._h: DmaHandle = _backend().dma_create(dev._h)
        super().__init__(self._h, user_data)
        dev._adopt(self)
        self._dev = dev

    def task_memcpy_set_conf(self, success: TaskCallback[DmaTaskMemcpy], error: TaskCallback[DmaTaskMemcpy],
                             num_tasks: int) -> None:
        """Register the completion callbacks and size the task pool (before start)."""
        self._set_conf(self._h.memcpy, success, error, num_tasks)

    def task_memcpy_alloc_init(self, src: Buf, dst: Buf, user_data: Any = None) -> DmaTaskMemcpy:
        """A memcpy task from the pool (``DocaNoMemory`` when it is empty)."""
        h = self._h.task_memcpy_alloc_init(src._h, dst._h)
        t = self._wrap_task(h, DmaTaskMemcpy, user_data)
        t._src, t._dst = src, dst
        return t

    @staticmethod
    def cap_task_memcpy_is_supported(devinfo: DevInfo) -> bool:
        """``doca_dma_cap_task_memcpy_is_supported``: whether *devinfo* supports task memcpy."""
        return _backend().cap_task_memcpy_is_supported(devinfo._h)

    @staticmethod
    def cap_task_memcpy_get_max_buf_size(devinfo: DevInfo) -> int:
        """``doca_dma_cap_task_memcpy_get_max_buf_size``: the largest buf size *devinfo* supports."""
        return _backend().cap_task_memcpy_get_max_buf_size(devinfo._h)

    @staticmethod
    def cap_task_memcpy_get_max_buf_list_len(devinfo: DevInfo) -> int:
        """``doca_dma_cap_task_memcpy_get_max_buf_list_len``: the largest buf list len *devinfo* supports."""
        return _backend().cap_task_memcpy_get_max_buf_list_len(devinfo._h)

    @staticmethod
    def cap_get_max_num_tasks(devinfo: DevInfo) -> int:
        """``doca_dma_cap_get_max_num_tasks``: the largest num tasks *devinfo* supports."""
        return _backend().cap_get_max_num_tasks(devinfo._h)

    def __enter__(self) -> Dma:
        return self
