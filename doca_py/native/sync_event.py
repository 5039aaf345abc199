"""Native ``doca_sync_event`` (libdoca_common, ``doca_sync_event.h``).

The ``uint64_t *`` a get or notify-add task writes its result to is a ``c_uint64`` of the task's
wrapper, set with ``*_set_ret_val_ptr`` / ``*_set_fetched_val_ptr`` once the wrapper exists.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import Any, cast

from .._backend.protocols.core import DevHandle, DevInfoHandle
from ..errors import DocaInvalidValue, DocaNotPermitted, check
from ._common import lib
from .ctx import NativeCtx
from .engine import EngineTask, EngineTaskPool, devinfo_ptr, init_ctx, is_supported

__all__ = ["NativeSyncEvent", "NativeSyncEventCtx", "NativeSyncEventRemoteNet", "sync_event_create",
           "sync_event_create_from_export", "sync_event_remote_net_create_from_export", "cap"]

_byref = ctypes.byref

#: ``doca_sync_event_wait_<op>[_yield]`` by (op, yield).
WAIT_FNS = {
    ("gt", False): "doca_sync_event_wait_gt",
    ("gt", True): "doca_sync_event_wait_gt_yield",
    ("eq", False): "doca_sync_event_wait_eq",
    ("eq", True): "doca_sync_event_wait_eq_yield",
    ("neq", False): "doca_sync_event_wait_neq",
    ("neq", True): "doca_sync_event_wait_neq_yield",
}

#: ``doca_sync_event_cap_<name>`` by name.
CAP_FNS = {
    "is_create_from_export_supported": "doca_sync_event_cap_is_create_from_export_supported",
    "remote_net_is_create_from_export_supported": "doca_sync_event_cap_remote_net_is_create_from_export_supported",
    "is_export_to_remote_pci_supported": "doca_sync_event_cap_is_export_to_remote_pci_supported",
    "is_export_to_remote_net_supported": "doca_sync_event_cap_is_export_to_remote_net_supported",
    "is_export_to_dpa_supported": "doca_sync_event_cap_is_export_to_dpa_supported",
    "is_export_to_gpu_supported": "doca_sync_event_cap_is_export_to_gpu_supported",
    "task_get_is_supported": "doca_sync_event_cap_task_get_is_supported",
    "task_notify_set_is_supported": "doca_sync_event_cap_task_notify_set_is_supported",
    "task_notify_add_is_supported": "doca_sync_event_cap_task_notify_add_is_supported",
    "task_wait_eq_is_supported": "doca_sync_event_cap_task_wait_eq_is_supported",
    "task_wait_neq_is_supported": "doca_sync_event_cap_task_wait_neq_is_supported",
    "task_wait_gt_is_supported": "doca_sync_event_cap_task_wait_gt_is_supported",  # DOCA 2.6 only
}


#: 3.0 functions whose DOCA 2.6 name differs (same arguments, same meaning): the library's own is called.
RENAMED_26 = {
    "doca_sync_event_add_publisher_location_remote_pci": "doca_sync_event_add_publisher_location_dpu",
    "doca_sync_event_add_subscriber_location_remote_pci": "doca_sync_event_add_subscriber_location_dpu",
    "doca_sync_event_export_to_remote_pci": "doca_sync_event_export_to_dpu",
    "doca_sync_event_cap_is_export_to_remote_pci_supported": "doca_sync_event_cap_is_export_to_dpu_supported",
}


def _fn(name: str) -> Any:
    """The bound function *name*, or its DOCA 2.6 name's when only that is exported (else *name*'s stub,
    which says which versions have it)."""
    l = lib()
    fn = getattr(l, name)
    old = RENAMED_26.get(name)
    if not fn and old is not None and getattr(l, old):
        return getattr(l, old)
    return fn


def _no_destroy(ptr: int | None) -> int:
    return 0  # the ctx belongs to its event: doca_sync_event_destroy frees both


def _dev_ptr(dev: DevHandle) -> int | None:
    return cast(int | None, getattr(dev, "ptr"))


class _SeTask(EngineTask):
    """A sync event task; ``val`` is where DOCA writes a get's or a notify-add's result."""

    __slots__ = ("val",)

    def __init__(self, ptr: int, pool: EngineTaskPool) -> None:
        super().__init__(ptr, pool)
        self.val = ctypes.c_uint64()


class NativeSyncEventTaskGet(_SeTask):
    """``doca_sync_event_task_get *``."""

    __slots__ = ()

    def get_ret_val(self) -> int:
        return self.val.value


class NativeSyncEventTaskNotifySet(_SeTask):
    """``doca_sync_event_task_notify_set *``."""

    __slots__ = ()

    def set_set_val(self, value: int) -> None:
        lib().doca_sync_event_task_notify_set_set_set_val(self.ptr, value)

    def get_set_val(self) -> int:
        return int(lib().doca_sync_event_task_notify_set_get_set_val(self.ptr))


class NativeSyncEventTaskNotifyAdd(_SeTask):
    """``doca_sync_event_task_notify_add *``."""

    __slots__ = ()

    def set_inc_val(self, value: int) -> None:
        lib().doca_sync_event_task_notify_add_set_inc_val(self.ptr, value)

    def get_inc_val(self) -> int:
        return int(lib().doca_sync_event_task_notify_add_get_inc_val(self.ptr))

    def get_fetched_val(self) -> int:
        return self.val.value


class NativeSyncEventTaskWaitEq(_SeTask):
    """``doca_sync_event_task_wait_eq *``."""

    __slots__ = ()

    def set_wait_val(self, value: int) -> None:
        lib().doca_sync_event_task_wait_eq_set_wait_val(self.ptr, value)

    def get_wait_val(self) -> int:
        return int(lib().doca_sync_event_task_wait_eq_get_wait_val(self.ptr))

    def set_mask(self, mask: int) -> None:
        lib().doca_sync_event_task_wait_eq_set_mask(self.ptr, mask)

    def get_mask(self) -> int:
        return int(lib().doca_sync_event_task_wait_eq_get_mask(self.ptr))


class NativeSyncEventTaskWaitNeq(_SeTask):
    """``doca_sync_event_task_wait_neq *``."""

    __slots__ = ()

    def set_wait_val(self, value: int) -> None:
        lib().doca_sync_event_task_wait_neq_set_wait_val(self.ptr, value)

    def get_wait_val(self) -> int:
        return int(lib().doca_sync_event_task_wait_neq_get_wait_val(self.ptr))

    def set_mask(self, mask: int) -> None:
        lib().doca_sync_event_task_wait_neq_set_mask(self.ptr, mask)

    def get_mask(self) -> int:
        return int(lib().doca_sync_event_task_wait_neq_get_mask(self.ptr))


class NativeSyncEventTaskWaitGt(_SeTask):
    """``doca_sync_event_task_wait_gt *`` (DOCA 2.6; 3.0 replaced it with wait_eq and wait_neq)."""

    __slots__ = ()

    def set_wait_val(self, value: int) -> None:
        lib().doca_sync_event_task_wait_gt_set_wait_val(self.ptr, value)

    def get_wait_val(self) -> int:
        return int(lib().doca_sync_event_task_wait_gt_get_wait_val(self.ptr))

    def set_mask(self, mask: int) -> None:
        lib().doca_sync_event_task_wait_gt_set_mask(self.ptr, mask)

    def get_mask(self) -> int:
        return int(lib().doca_sync_event_task_wait_gt_get_mask(self.ptr))


class NativeSyncEventCtx(NativeCtx):
    """``doca_sync_event_as_ctx``: the event's ctx and its five task pools."""

    def __init__(self, event_ptr: int | None) -> None:
        l = lib()
        self.ptr = event_ptr
        init_ctx(self, event_ptr, l.doca_sync_event_as_ctx, _no_destroy, "doca_sync_event")

        def pool(set_conf: Any, name: str, as_task: Any, cls: type[EngineTask], kind: str) -> EngineTaskPool:
            return EngineTaskPool(self, partial(set_conf, event_ptr), name, as_task, cls, kind)

        self.get = pool(l.doca_sync_event_task_get_set_conf, "doca_sync_event_task_get_set_conf",
                        l.doca_sync_event_task_get_as_doca_task, NativeSyncEventTaskGet, "get")
        self.notify_set = pool(l.doca_sync_event_task_notify_set_set_conf, "doca_sync_event_task_notify_set_set_conf",
                               l.doca_sync_event_task_notify_set_as_doca_task, NativeSyncEventTaskNotifySet,
                               "notify_set")
        self.notify_add = pool(l.doca_sync_event_task_notify_add_set_conf, "doca_sync_event_task_notify_add_set_conf",
                               l.doca_sync_event_task_notify_add_as_doca_task, NativeSyncEventTaskNotifyAdd,
                               "notify_add")
        self.wait_eq = pool(l.doca_sync_event_task_wait_eq_set_conf, "doca_sync_event_task_wait_eq_set_conf",
                            l.doca_sync_event_task_wait_eq_as_doca_task, NativeSyncEventTaskWaitEq, "wait_eq")
        self.wait_neq = pool(l.doca_sync_event_task_wait_neq_set_conf, "doca_sync_event_task_wait_neq_set_conf",
                             l.doca_sync_event_task_wait_neq_as_doca_task, NativeSyncEventTaskWaitNeq, "wait_neq")
        # DOCA 2.6's (a 3.x library lacks these functions: configuring the type raises DocaNotSupported).
        self.wait_gt = pool(l.doca_sync_event_task_wait_gt_set_conf, "doca_sync_event_task_wait_gt_set_conf",
                            l.doca_sync_event_task_wait_gt_as_doca_task, NativeSyncEventTaskWaitGt, "wait_gt")
        self._scratch = ctypes.c_uint64()  # the result pointer at alloc time, before the wrapper exists

    def task_get_alloc_init(self) -> NativeSyncEventTaskGet:
        p, l = self.get, lib()
        rc = l.doca_sync_event_task_get_alloc_init(self.ptr, _byref(self._scratch), 0, _byref(p.out))
        t = cast(NativeSyncEventTaskGet, p.take(rc, "doca_sync_event_task_get_alloc_init"))
        l.doca_sync_event_task_get_set_ret_val_ptr(t.ptr, _byref(t.val))
        return t

    def task_notify_set_alloc_init(self, value: int) -> NativeSyncEventTaskNotifySet:
        p = self.notify_set
        rc = lib().doca_sync_event_task_notify_set_alloc_init(self.ptr, value, 0, _byref(p.out))
        return cast(NativeSyncEventTaskNotifySet, p.take(rc, "doca_sync_event_task_notify_set_alloc_init"))

    def task_notify_add_alloc_init(self, value: int) -> NativeSyncEventTaskNotifyAdd:
        p, l = self.notify_add, lib()
        rc = l.doca_sync_event_task_notify_add_alloc_init(self.ptr, value, _byref(self._scratch), 0, _byref(p.out))
        t = cast(NativeSyncEventTaskNotifyAdd, p.take(rc, "doca_sync_event_task_notify_add_alloc_init"))
        l.doca_sync_event_task_notify_add_set_fetched_val_ptr(t.ptr, _byref(t.val))
        return t

    def task_wait_eq_alloc_init(self, value: int, mask: int) -> NativeSyncEventTaskWaitEq:
        p = self.wait_eq
        rc = lib().doca_sync_event_task_wait_eq_alloc_init(self.ptr, value, mask, 0, _byref(p.out))
        return cast(NativeSyncEventTaskWaitEq, p.take(rc, "doca_sync_event_task_wait_eq_alloc_init"))

    def task_wait_neq_alloc_init(self, value: int, mask: int) -> NativeSyncEventTaskWaitNeq:
        p = self.wait_neq
        rc = lib().doca_sync_event_task_wait_neq_alloc_init(self.ptr, value, mask, 0, _byref(p.out))
        return cast(NativeSyncEventTaskWaitNeq, p.take(rc, "doca_sync_event_task_wait_neq_alloc_init"))

    def task_wait_gt_alloc_init(self, value: int, mask: int) -> NativeSyncEventTaskWaitGt:
        p = self.wait_gt
        rc = lib().doca_sync_event_task_wait_gt_alloc_init(self.ptr, value, mask, 0, _byref(p.out))
        return cast(NativeSyncEventTaskWaitGt, p.take(rc, "doca_sync_event_task_wait_gt_alloc_init"))


def _blob(ptr: ctypes.c_void_p, size: ctypes.c_size_t, what: str) -> bytes:
    if not ptr.value or not size.value:
        raise DocaInvalidValue(f"{what} returned no data")
    return ctypes.string_at(ptr.value, size.value)


class NativeSyncEvent:
    """``doca_sync_event *``."""

    def __init__(self, ptr: int | None) -> None:
        self.ptr = ptr
        self._ctx: NativeSyncEventCtx | None = None
        self._u64 = ctypes.c_uint64()

    def add_publisher_location_cpu(self, dev: DevHandle) -> None:
        check(lib().doca_sync_event_add_publisher_location_cpu(self.ptr, _dev_ptr(dev)),
              "doca_sync_event_add_publisher_location_cpu")

    def add_publisher_location_remote_pci(self) -> None:
        fn = _fn("doca_sync_event_add_publisher_location_remote_pci")
        check(fn(self.ptr), fn.__name__)

    def add_publisher_location_remote_net(self) -> None:
        check(lib().doca_sync_event_add_publisher_location_remote_net(self.ptr),
              "doca_sync_event_add_publisher_location_remote_net")

    def add_subscriber_location_cpu(self, dev: DevHandle) -> None:
        check(lib().doca_sync_event_add_subscriber_location_cpu(self.ptr, _dev_ptr(dev)),
              "doca_sync_event_add_subscriber_location_cpu")

    def add_subscriber_location_remote_pci(self) -> None:
        fn = _fn("doca_sync_event_add_subscriber_location_remote_pci")
        check(fn(self.ptr), fn.__name__)

    def start(self) -> None:
        check(lib().doca_sync_event_start(self.ptr), "doca_sync_event_start")

    def stop(self) -> None:
        check(lib().doca_sync_event_stop(self.ptr), "doca_sync_event_stop")

    def as_ctx(self) -> NativeSyncEventCtx:
        if self._ctx is None:
            if not lib().doca_sync_event_as_ctx(self.ptr):  # DOCA answers NULL, not an error code
                raise DocaNotPermitted("doca_sync_event_as_ctx returned NULL: an event started stand-alone "
                                       "cannot operate as a ctx")
            self._ctx = NativeSyncEventCtx(self.ptr)
        return self._ctx

    def get(self) -> int:
        check(lib().doca_sync_event_get(self.ptr, _byref(self._u64)), "doca_sync_event_get")
        return self._u64.value

    def update_set(self, value: int) -> None:
        check(lib().doca_sync_event_update_set(self.ptr, value), "doca_sync_event_update_set")

    def update_add(self, value: int) -> int:
        check(lib().doca_sync_event_update_add(self.ptr, value, _byref(self._u64)), "doca_sync_event_update_add")
        return self._u64.value

    def wait(self, op: str, value: int, mask: int, yield_cpu: bool) -> None:
        name = WAIT_FNS.get((op, yield_cpu))
        if name is None:
            raise DocaInvalidValue(f"no sync event wait {op!r}")
        check(getattr(lib(), name)(self.ptr, value, mask), name)  # blocks in C, without the GIL

    def export_to_remote_pci(self, dev: DevHandle) -> bytes:
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        fn = _fn("doca_sync_event_export_to_remote_pci")
        check(fn(self.ptr, _dev_ptr(dev), _byref(p), _byref(n)), fn.__name__)
        return _blob(p, n, fn.__name__)

    def export_to_remote_net(self) -> bytes:
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(lib().doca_sync_event_export_to_remote_net(self.ptr, _byref(p), _byref(n)),
              "doca_sync_event_export_to_remote_net")
        return _blob(p, n, "doca_sync_event_export_to_remote_net")

    def destroy(self) -> None:
        if self._ctx is not None:
            self._ctx.destroy()
        check(lib().doca_sync_event_destroy(self.ptr), "doca_sync_event_destroy")


class NativeSyncEventRemoteNet:
    """``doca_sync_event_remote_net *``."""

    def __init__(self, ptr: int | None) -> None:
        self.ptr = ptr

    def destroy(self) -> None:
        check(lib().doca_sync_event_remote_net_destroy(self.ptr), "doca_sync_event_remote_net_destroy")


def sync_event_create() -> NativeSyncEvent:
    """``doca_sync_event_create``."""
    out = ctypes.c_void_p()
    check(lib().doca_sync_event_create(_byref(out)), "doca_sync_event_create")
    return NativeSyncEvent(out.value)


def sync_event_create_from_export(dev: DevHandle, blob: bytes) -> NativeSyncEvent:
    """``doca_sync_event_create_from_export``."""
    out = ctypes.c_void_p()
    check(lib().doca_sync_event_create_from_export(_dev_ptr(dev), blob, len(blob), _byref(out)),
          "doca_sync_event_create_from_export")
    return NativeSyncEvent(out.value)


def sync_event_remote_net_create_from_export(dev: DevHandle, blob: bytes) -> NativeSyncEventRemoteNet:
    """``doca_sync_event_remote_net_create_from_export``."""
    out = ctypes.c_void_p()
    check(lib().doca_sync_event_remote_net_create_from_export(_dev_ptr(dev), blob, len(blob), _byref(out)),
          "doca_sync_event_remote_net_create_from_export")
    return NativeSyncEventRemoteNet(out.value)


def cap(name: str, devinfo: DevInfoHandle) -> bool:
    """``doca_sync_event_cap_<name>``. A query the loaded DOCA does not export (2.6's eq/neq wait tasks) raises
    ``DocaNotSupported`` naming the versions that have it, as the emulator's 2.6 mode does: a ``False`` would
    claim the device lacks a task the library cannot even ask about."""
    fn_name = CAP_FNS.get(name)
    if fn_name is None:
        raise DocaInvalidValue(f"no sync event capability {name!r}")
    fn = _fn(fn_name)
    if not fn:
        fn(devinfo_ptr(devinfo))  # the missing function's stub raises DocaNotSupported
    return is_supported(fn, devinfo)
