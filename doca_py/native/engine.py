"""Plumbing shared by the native engine libraries (DMA, EC, compress).

* the library object (``doca_dma *`` …) is upcast with ``*_as_ctx`` into a
  :class:`~doca_py.native.ctx.NativeCtx` (:func:`init_ctx`);
* each task type has an :class:`EngineTaskPool` whose ``set_conf`` calls the
  library's ``*_set_conf(obj, TASK_SUCCESS_CB, TASK_ERROR_CB, num)``;
* ``*_alloc_init`` returns the library task pointer; the :class:`EngineTask`
  wrapping it keeps that pointer as ``ptr`` and the ``doca_task *`` from
  ``*_as_task`` as ``task_ptr`` (used for submit/free and the user data, which
  carries the task's registry key to the completion trampolines).

Wrappers are cached per descriptor pointer, so a recycled descriptor keeps its
Python object; because ``*_alloc_init`` overwrites the task user data, the key is
written again when a cached wrapper is handed out.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from .._backend.protocols.core import BufHandle, DevInfoHandle
from ..errors import DocaInvalidValue, DocaNoMemory, ErrorCode, check
from ._common import lib
from .buf import NativeBuf
from .ctx import NativeCtx, NativeTask, NativeTaskPool
from .dev import NativeDevInfo

__all__ = ["EngineTask", "EngineTaskPool", "buf_ptr", "devinfo_ptr", "is_supported", "get_u32", "get_u64",
           "init_ctx"]

_byref = ctypes.byref



def buf_ptr(buf: BufHandle | None) -> int | None:
    """The ``doca_buf *`` of a native buffer handle (``None`` for NULL)."""
    return None if buf is None else cast(NativeBuf, buf).ptr


def devinfo_ptr(devinfo: DevInfoHandle) -> int | None:
    return cast(NativeDevInfo, devinfo).ptr


def is_supported(fn: Any, devinfo: DevInfoHandle) -> bool:
    """A ``doca_*_cap_task_*_is_supported(devinfo)`` probe: SUCCESS → True.

    ``DOCA_ERROR_NOT_SUPPORTED`` and a function the loaded library does not export
    (a task type of another DOCA version) are ``False``; other errors raise.
    """
    if not fn:
        return False
    rc = fn(devinfo_ptr(devinfo))
    if rc == ErrorCode.NOT_SUPPORTED:
        return False
    check(rc, fn.__name__)
    return True


def get_u32(fn: Any, handle: int | None) -> int:
    """Call a ``(handle, uint32_t *out)`` getter."""
    v = ctypes.c_uint32()
    check(fn(handle, _byref(v)), fn.__name__)
    return v.value


def get_u64(fn: Any, handle: int | None) -> int:
    """Call a ``(handle, uint64_t *out)`` getter."""
    v = ctypes.c_uint64()
    check(fn(handle, _byref(v)), fn.__name__)
    return v.value


def init_ctx(ctx: NativeCtx, obj_ptr: int | None, as_ctx: Any, destroy: Any, what: str) -> None:
    """Run ``NativeCtx.__init__`` for the library object *obj_ptr* (upcast with *as_ctx*).

    Destroys the object if the ctx cannot be set up, so a failed construction leaks nothing
    (unless *ctx* is borrowed: then it never destroys it).
    """
    if ctx.borrowed:
        destroy = _not_ours  # someone else destroys a borrowed object (doca_py.native.borrow)
    ctx_ptr = as_ctx(obj_ptr)
    try:
        if not ctx_ptr:
            raise DocaInvalidValue(f"{as_ctx.__name__} returned NULL for a new {what}")
        NativeCtx.__init__(ctx, ctx_ptr, partial(destroy, obj_ptr))
    except BaseException:
        destroy(obj_ptr)
        raise


def _not_ours(obj_ptr: int | None) -> int:
    return 0  # DOCA_SUCCESS: nothing to destroy


class EngineTaskPool(NativeTaskPool):
    """One task type of a library ctx: knows its ``*_as_task`` and wrapper class."""

    def __init__(
        self,
        ctx: NativeCtx,
        set_conf: Callable[[Any, Any, int], int],
        name: str,
        as_task: Callable[[int], int | None],
        task_cls: type[EngineTask],
        kind: str = "",
    ) -> None:
        super().__init__(ctx, set_conf, name)
        self.as_task = as_task
        self.task_cls = task_cls
        #: Task type as in the C names (``"memcpy"``, ``"create"``, ``"decompress_lz4_stream"`` …).
        self.kind = kind
        self.out = ctypes.c_void_p()  # the out-parameter of *_alloc_init, reused
        #: The task type's C functions by operation (``"get_result_len"`` …), resolved once when the library
        #: module fills it: a task's getter or setter is then one ctypes call, not a trip through the loader.
        self.fns: dict[str, Any] = {}

    def take(self, rc: int, what: str) -> EngineTask:
        """Wrap the task ``*_alloc_init`` just wrote to :attr:`out` (rc is its return)."""
        if rc == ErrorCode.NO_MEMORY:
            raise DocaNoMemory(f"{what}: the task pool is exhausted")
        check(rc, what)
        ptr = self.out.value
        if not ptr:
            raise DocaInvalidValue(f"{what} returned no task")
        t = self._by_ptr.get(ptr)
        if t is None:
            t = self._by_ptr[ptr] = self.task_cls(ptr, self)
        else:
            # alloc_init stored the user data we passed (0): put the registry key back.
            lib().doca_task_set_user_data(t.task_ptr, t.key)
        return cast(EngineTask, t)


class EngineTask(NativeTask):
    """A library task: ``ptr`` is the library task (``doca_dma_task_memcpy *``),
    ``task_ptr`` its ``doca_task *`` (from ``*_as_task``)."""

    __slots__ = ()

    def __init__(self, ptr: int, pool: EngineTaskPool) -> None:
        task_ptr = pool.as_task(ptr)
        if not task_ptr:
            raise DocaInvalidValue(f"{getattr(pool.as_task, '__name__', 'as_task')} returned NULL")
        # NativeTask writes the registry key into the user data of the pointer it gets:
        # that must be the doca_task *.
        super().__init__(task_ptr, pool)
        self.ptr = ptr
