"""``doca_dma``: memory copies between buffers a device can reach.

```pycon
>>> dma = Dma(dev); pe.connect_ctx(dma)
>>> dma.task_memcpy_set_conf(on_done, on_error, num_tasks=64)
>>> dma.start()
>>> dma.task_memcpy_alloc_init(src, dst).submit()   # dst data grows by src's data_len

```
"""

from __future__ import annotations

from typing import Any

from ._args import expect, wrong_type
from ._backend import backend
from ._backend.protocols.engines import DmaHandle, DmaTaskMemcpyHandle
from .buf import Buf, freed_buf
from .ctx import Ctx, Task, TaskCallback
from .dev import Dev, DevInfo, devinfo_handle

__all__ = ["Dma", "DmaTaskMemcpy"]


class DmaTaskMemcpy(Task):
    """``doca_dma_task_memcpy``: copy *src*'s data after *dst*'s data."""

    __slots__ = ("_src", "_dst")
    _h: DmaTaskMemcpyHandle

    def get_src(self) -> Buf:
        """``doca_dma_task_memcpy_get_src``: the src."""
        return self._src

    def get_dst(self) -> Buf:
        """``doca_dma_task_memcpy_get_dst``: the dst."""
        return self._dst

    def set_src(self, src: Buf) -> None:
        """``doca_dma_task_memcpy_set_src``: set the src to *src*."""
        if not isinstance(src, Buf):
            raise wrong_type("DmaTaskMemcpy.set_src", Buf, src=src)
        if src._closed:
            raise freed_buf("DmaTaskMemcpy.set_src", src=src)
        self._h.set_src(src._h)
        self._src = src

    def set_dst(self, dst: Buf) -> None:
        """``doca_dma_task_memcpy_set_dst``: set the dst to *dst*."""
        if not isinstance(dst, Buf):
            raise wrong_type("DmaTaskMemcpy.set_dst", Buf, dst=dst)
        if dst._closed:
            raise freed_buf("DmaTaskMemcpy.set_dst", dst=dst)
        self._h.set_dst(dst._h)
        self._dst = dst


class Dma(Ctx):
    """``doca_dma`` context on *dev*."""

    @classmethod
    def from_handle(cls, dev: Dev, handle: DmaHandle | int, user_data: Any = None) -> Dma:
        """Python-only: wrap an existing ``doca_dma`` on *dev* without taking ownership (it keeps its state,
        configuration and Pe; connect this wrapper to that Pe's wrapper with ``Pe.connect_ctx`` only if it is not
        connected).

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_dma`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        c = cls(dev, user_data, _handle=backend.borrow_dma(handle) if isinstance(handle, int) else handle)
        c._borrow()
        return c

    def __init__(self, dev: Dev, user_data: Any = None, *, _handle: DmaHandle | None = None) -> None:
        expect("Dma", Dev, dev=dev)
        dev._check_open()
        self._h: DmaHandle = backend.dma.dma_create(dev._h) if _handle is None else _handle
        super().__init__(self._h, user_data)
        dev._adopt(self)
        self._dev = dev

    def task_memcpy_set_conf(self, success: TaskCallback[DmaTaskMemcpy], error: TaskCallback[DmaTaskMemcpy],
                             num_tasks: int) -> None:
        """``doca_dma_task_memcpy_set_conf``: register the completion callbacks and size the task pool (before
        start)."""
        self._set_conf(self._h.memcpy, success, error, num_tasks)

    def set_ordered_completions(self, ordered: bool = True) -> None:
        """``doca_dma_set_ordered_completions`` (DOCA 3.2): deliver this ctx's memcpy completions in
        submission order (*ordered*) or as they finish. Unordered unless asked: applications that read
        a later copy's completion as "the earlier ones are done too" (as NVIDIA's virtiofs
        application does) set it. Configure before ``start`` (``DocaBadState`` after); on a runtime
        older than 3.2 (the emulator's 2.6 and 3.0 modes too) ``DocaNotSupported`` naming the version."""
        if not isinstance(ordered, bool):
            raise wrong_type("Dma.set_ordered_completions", bool, ordered=ordered)
        self._h.set_ordered_completions(ordered)

    def get_ordered_completions(self) -> bool:
        """``doca_dma_get_ordered_completions`` (DOCA 3.2): whether this ctx delivers its memcpy completions in
        submission order ([`set_ordered_completions`][doca_py.dma.Dma.set_ordered_completions]). On a runtime
        older than 3.2, ``DocaNotSupported`` naming the version (both backends)."""
        self._check_open()
        return self._h.get_ordered_completions()

    def task_memcpy_alloc_init(self, src: Buf, dst: Buf, user_data: Any = None) -> DmaTaskMemcpy:
        """``doca_dma_task_memcpy_alloc_init``: a memcpy task from the pool (``DocaNoMemory`` when it is empty)."""
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Dma.task_memcpy_alloc_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Dma.task_memcpy_alloc_init", src=src, dst=dst)
        h = self._h.task_memcpy_alloc_init(src._h, dst._h)
        t = self._wrap_task(h, DmaTaskMemcpy, user_data)
        t._src, t._dst = src, dst
        return t

    @staticmethod
    def cap_task_memcpy_is_supported(devinfo: DevInfo) -> bool:
        """``doca_dma_cap_task_memcpy_is_supported``: whether *devinfo* supports task memcpy."""
        return backend.dma.cap_task_memcpy_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_task_memcpy_get_max_buf_size(devinfo: DevInfo) -> int:
        """``doca_dma_cap_task_memcpy_get_max_buf_size``: the largest buf size *devinfo* supports."""
        return backend.dma.cap_task_memcpy_get_max_buf_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_task_memcpy_get_max_buf_list_len(devinfo: DevInfo) -> int:
        """``doca_dma_cap_task_memcpy_get_max_buf_list_len``: the largest buf list len *devinfo* supports."""
        return backend.dma.cap_task_memcpy_get_max_buf_list_len(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_num_tasks(devinfo: DevInfo) -> int:
        """``doca_dma_cap_get_max_num_tasks``: the largest num tasks *devinfo* supports."""
        return backend.dma.cap_get_max_num_tasks(devinfo_handle(devinfo))

    def __enter__(self) -> Dma:
        return self
