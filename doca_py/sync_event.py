"""``doca_sync_event``: a 64-bit value to synchronise the host CPU, the DPU and remote peers on.

```pycon
>>> se = SyncEvent()
>>> se.add_publisher_location_remote_pci(); se.add_subscriber_location_cpu(dev)
>>> se.start()                                  # stand-alone: synchronous get/update/wait
>>> blob = se.export_to_remote_pci(dev)         # the peer calls SyncEvent.create_from_export(dev, blob)
>>> se.wait_gt(0)                               # blocks until the peer publishes

```

Asynchronous use goes through [`as_ctx`][doca_py.sync_event.SyncEvent.as_ctx] (a
[`SyncEventCtx`][doca_py.sync_event.SyncEventCtx] connected to a [`Pe`][doca_py.pe.Pe]) instead of
``start``: DOCA does not allow both. A [`SyncEventRemoteNet`][doca_py.sync_event.SyncEventRemoteNet] is
a peer's event, reached with the RDMA remote sync-event tasks.
"""

from __future__ import annotations

from typing import Any

from ._args import caller, expect, wrong_type
from ._backend import backend
from ._backend.protocols.sync_event import (
    SyncEventCtxHandle,
    SyncEventHandle,
    SyncEventRemoteNetHandle,
    SyncEventTaskGetHandle,
    SyncEventTaskNotifyAddHandle,
    SyncEventTaskNotifySetHandle,
    SyncEventTaskWaitHandle,
)
from ._lifetime import DocaObject
from .ctx import Ctx, Task, TaskCallback
from .dev import Dev, DevInfo, devinfo_handle
from .errors import DocaInvalidValue

__all__ = ["SyncEvent", "SyncEventCtx", "SyncEventRemoteNet", "SyncEventTaskGet", "SyncEventTaskNotifySet",
           "SyncEventTaskNotifyAdd", "SyncEventTaskWaitEq", "SyncEventTaskWaitNeq", "SyncEventTaskWaitGt"]

_MASK = (1 << 64) - 1


def _u64(what: str, value: int, param: str = "value", depth: int = 2, where: str | None = None) -> int:
    if not isinstance(value, int):  # the public method *depth* frames up (or *where*) names its parameter *param*
        raise wrong_type(where or caller(depth), int, **{param: value})
    if not 0 <= value <= _MASK:
        raise DocaInvalidValue(f"{what} must be a 64-bit unsigned value, got {value}")
    return value


class SyncEventTaskGet(Task):
    """``doca_sync_event_task_get``: read the event's value."""

    __slots__ = ()
    _h: SyncEventTaskGetHandle

    def get_ret_val(self) -> int:
        """``doca_sync_event_task_get_get_ret_val_ptr``: the value the task read (DOCA writes it to ``ret_val_ptr``):
        valid after its completion."""
        return self._h.get_ret_val()


class SyncEventTaskNotifySet(Task):
    """``doca_sync_event_task_notify_set``: set the event's value."""

    __slots__ = ()
    _h: SyncEventTaskNotifySetHandle

    def set_set_val(self, value: int) -> None:
        """``doca_sync_event_task_notify_set_set_set_val``: the value to set."""
        self._h.set_set_val(_u64("set_val", value))

    def get_set_val(self) -> int:
        """``doca_sync_event_task_notify_set_get_set_val``: the value to set."""
        return self._h.get_set_val()


class SyncEventTaskNotifyAdd(Task):
    """``doca_sync_event_task_notify_add``: add to the event's value atomically."""

    __slots__ = ()
    _h: SyncEventTaskNotifyAddHandle

    def set_inc_val(self, value: int) -> None:
        """``doca_sync_event_task_notify_add_set_inc_val``: the increment."""
        self._h.set_inc_val(_u64("inc_val", value))

    def get_inc_val(self) -> int:
        """``doca_sync_event_task_notify_add_get_inc_val``: the increment."""
        return self._h.get_inc_val()

    def get_fetched_val(self) -> int:
        """``doca_sync_event_task_notify_add_get_fetched_val_ptr``: the value before the increment (DOCA writes it to
        ``fetched_val_ptr``): valid after completion."""
        return self._h.get_fetched_val()


class _SyncEventTaskWait(Task):
    __slots__ = ()
    _h: SyncEventTaskWaitHandle

    def set_wait_val(self, value: int) -> None:
        """``doca_sync_event_task_<type>_set_wait_val``: the value compared with the masked event value."""
        self._h.set_wait_val(_u64("wait_val", value, where=f"{type(self).__name__}.set_wait_val"))

    def get_wait_val(self) -> int:
        """``doca_sync_event_task_<type>_get_wait_val``: the value compared with the masked event value."""
        return self._h.get_wait_val()

    def set_mask(self, mask: int) -> None:
        """``doca_sync_event_task_<type>_set_mask``: the mask applied to the event value before comparing."""
        self._h.set_mask(_u64("mask", mask, "mask", where=f"{type(self).__name__}.set_mask"))

    def get_mask(self) -> int:
        """``doca_sync_event_task_<type>_get_mask``: the mask applied to the event value before comparing."""
        return self._h.get_mask()


class SyncEventTaskWaitEq(_SyncEventTaskWait):
    """``doca_sync_event_task_wait_eq``: completes once ``value & mask == wait_val``."""

    __slots__ = ()


class SyncEventTaskWaitNeq(_SyncEventTaskWait):
    """``doca_sync_event_task_wait_neq``: completes once ``value & mask != wait_val``."""

    __slots__ = ()


class SyncEventTaskWaitGt(_SyncEventTaskWait):
    """``doca_sync_event_task_wait_gt`` (DOCA 2.6): completes once ``value & mask > wait_val``. DOCA 3.0
    replaced it with [`SyncEventTaskWaitEq`][doca_py.sync_event.SyncEventTaskWaitEq] and
    [`SyncEventTaskWaitNeq`][doca_py.sync_event.SyncEventTaskWaitNeq] (which 2.6 lacks)."""

    __slots__ = ()


class SyncEventCtx(Ctx):
    """``doca_sync_event_as_ctx``: the event as a DOCA ctx, whose tasks run its operations asynchronously.

    Made by [`SyncEvent.as_ctx`][doca_py.sync_event.SyncEvent.as_ctx]; it closes with its event."""

    def __init__(self, event: SyncEvent, handle: SyncEventCtxHandle) -> None:
        self._h: SyncEventCtxHandle = handle
        super().__init__(handle, event.user_data)
        self._event = event

    @property
    def event(self) -> SyncEvent:
        """Python-only: the [`SyncEvent`][doca_py.sync_event.SyncEvent] this ctx operates."""
        return self._event

    def task_get_set_conf(self, success: TaskCallback[SyncEventTaskGet], error: TaskCallback[SyncEventTaskGet],
                          num_tasks: int) -> None:
        """``doca_sync_event_task_get_set_conf``: callbacks and pool size (ctx idle)."""
        self._set_conf(self._h.get, success, error, num_tasks)

    def task_notify_set_set_conf(self, success: TaskCallback[SyncEventTaskNotifySet],
                                 error: TaskCallback[SyncEventTaskNotifySet], num_tasks: int) -> None:
        """``doca_sync_event_task_notify_set_set_conf``: callbacks and pool size (ctx idle)."""
        self._set_conf(self._h.notify_set, success, error, num_tasks)

    def task_notify_add_set_conf(self, success: TaskCallback[SyncEventTaskNotifyAdd],
                                 error: TaskCallback[SyncEventTaskNotifyAdd], num_tasks: int) -> None:
        """``doca_sync_event_task_notify_add_set_conf``: callbacks and pool size (ctx idle)."""
        self._set_conf(self._h.notify_add, success, error, num_tasks)

    def task_wait_eq_set_conf(self, success: TaskCallback[SyncEventTaskWaitEq],
                              error: TaskCallback[SyncEventTaskWaitEq], num_tasks: int) -> None:
        """``doca_sync_event_task_wait_eq_set_conf``: callbacks and pool size (ctx idle)."""
        self._set_conf(self._h.wait_eq, success, error, num_tasks)

    def task_wait_neq_set_conf(self, success: TaskCallback[SyncEventTaskWaitNeq],
                               error: TaskCallback[SyncEventTaskWaitNeq], num_tasks: int) -> None:
        """``doca_sync_event_task_wait_neq_set_conf``: callbacks and pool size (ctx idle)."""
        self._set_conf(self._h.wait_neq, success, error, num_tasks)

    def task_wait_gt_set_conf(self, success: TaskCallback[SyncEventTaskWaitGt],
                              error: TaskCallback[SyncEventTaskWaitGt], num_tasks: int) -> None:
        """``doca_sync_event_task_wait_gt_set_conf`` (DOCA 2.6): callbacks and pool size (ctx idle).

        :raises DocaNotSupported: on DOCA 3.x, which has wait_eq/wait_neq tasks instead.
        """
        self._set_conf(self._h.wait_gt, success, error, num_tasks)

    def task_get_alloc_init(self, user_data: Any = None) -> SyncEventTaskGet:
        """``doca_sync_event_task_get_alloc_init``: a task reading the value.

        :raises DocaNoMemory: when the pool is exhausted.
        """
        self._check_open()
        return self._wrap_task(self._h.task_get_alloc_init(), SyncEventTaskGet, user_data)

    def task_notify_set_alloc_init(self, value: int, user_data: Any = None) -> SyncEventTaskNotifySet:
        """``doca_sync_event_task_notify_set_alloc_init``: a task setting the value to *value*."""
        self._check_open()
        return self._wrap_task(self._h.task_notify_set_alloc_init(_u64("set_val", value)), SyncEventTaskNotifySet,
                               user_data)

    def task_notify_add_alloc_init(self, value: int, user_data: Any = None) -> SyncEventTaskNotifyAdd:
        """``doca_sync_event_task_notify_add_alloc_init``: a task adding *value* atomically."""
        self._check_open()
        return self._wrap_task(self._h.task_notify_add_alloc_init(_u64("inc_val", value)), SyncEventTaskNotifyAdd,
                               user_data)

    def task_wait_eq_alloc_init(self, value: int, mask: int = _MASK, user_data: Any = None) -> SyncEventTaskWaitEq:
        """``doca_sync_event_task_wait_eq_alloc_init``: a task completing once ``event & mask == value``."""
        self._check_open()
        return self._wrap_task(self._h.task_wait_eq_alloc_init(_u64("wait_val", value), _u64("mask", mask, "mask")),
                               SyncEventTaskWaitEq, user_data)

    def task_wait_neq_alloc_init(self, value: int, mask: int = _MASK, user_data: Any = None) -> SyncEventTaskWaitNeq:
        """``doca_sync_event_task_wait_neq_alloc_init``: a task completing once ``event & mask != value``."""
        self._check_open()
        return self._wrap_task(self._h.task_wait_neq_alloc_init(_u64("wait_val", value), _u64("mask", mask, "mask")),
                               SyncEventTaskWaitNeq, user_data)

    def task_wait_gt_alloc_init(self, value: int, mask: int = _MASK, user_data: Any = None) -> SyncEventTaskWaitGt:
        """``doca_sync_event_task_wait_gt_alloc_init`` (DOCA 2.6): a task completing once ``event & mask > value``.

        :raises DocaNotSupported: on DOCA 3.x.
        """
        self._check_open()
        return self._wrap_task(self._h.task_wait_gt_alloc_init(_u64("wait_val", value), _u64("mask", mask, "mask")),
                               SyncEventTaskWaitGt, user_data)

    def __enter__(self) -> SyncEventCtx:
        return self


class SyncEvent(DocaObject):
    """``doca_sync_event``: a 64-bit value, updated, read and waited on from its locations.

    Configure the publisher and subscriber locations, then either [`start`][doca_py.sync_event.SyncEvent.start]
    it (synchronous use) or convert it with [`as_ctx`][doca_py.sync_event.SyncEvent.as_ctx] (tasks).
    """

    _warn_unclosed = True

    def __init__(self, user_data: Any = None, *, _handle: SyncEventHandle | None = None) -> None:
        super().__init__()
        self._h: SyncEventHandle = backend.sync_event.sync_event_create() if _handle is None else _handle
        self._arm_finalizer(self._h.destroy)
        self.user_data: Any = user_data
        """Any object; the ctx's ``ctx_user_data``."""
        self._ctx: SyncEventCtx | None = None

    @classmethod
    def create_from_export(cls, dev: Dev, blob: bytes, user_data: Any = None) -> SyncEvent:
        """``doca_sync_event_create_from_export``: the event a peer exported with
        [`export_to_remote_pci`][doca_py.sync_event.SyncEvent.export_to_remote_pci]. It cannot be configured;
        start it (or use it as a ctx) like any event.

        :raises DocaInvalidValue: for a malformed, truncated or corrupt blob.
        :raises DocaNotPermitted: when the exporter revoked the export (stopped or destroyed the event).
        :raises DocaNotSupported: when *dev* cannot import, or the exporter is out of reach.
        """
        expect("SyncEvent.create_from_export", Dev, dev=dev)
        expect("SyncEvent.create_from_export", (bytes, bytearray, memoryview), blob=blob)
        dev._check_open()
        se = cls(user_data, _handle=backend.sync_event.sync_event_create_from_export(dev._h, bytes(blob)))
        dev._adopt(se)
        return se

    # -- locations (before start) ---------------------------------------------------------------
    def add_publisher_location_cpu(self, dev: Dev) -> None:
        """``doca_sync_event_add_publisher_location_cpu``: the CPU of *dev*'s host updates the event."""
        expect("SyncEvent.add_publisher_location_cpu", Dev, dev=dev)
        self._check_open()
        self._h.add_publisher_location_cpu(dev._h)
        dev._adopt(self)

    def add_publisher_location_remote_pci(self) -> None:
        """``doca_sync_event_add_publisher_location_remote_pci``: a peer across PCIe updates the event."""
        self._check_open()
        self._h.add_publisher_location_remote_pci()

    def add_publisher_location_remote_net(self) -> None:
        """``doca_sync_event_add_publisher_location_remote_net``: a network peer updates it (RDMA tasks)."""
        self._check_open()
        self._h.add_publisher_location_remote_net()

    def add_subscriber_location_cpu(self, dev: Dev) -> None:
        """``doca_sync_event_add_subscriber_location_cpu``: the CPU of *dev*'s host waits on the event."""
        expect("SyncEvent.add_subscriber_location_cpu", Dev, dev=dev)
        self._check_open()
        self._h.add_subscriber_location_cpu(dev._h)
        dev._adopt(self)

    def add_subscriber_location_remote_pci(self) -> None:
        """``doca_sync_event_add_subscriber_location_remote_pci``: a peer across PCIe waits on it."""
        self._check_open()
        self._h.add_subscriber_location_remote_pci()

    # -- stand-alone use ------------------------------------------------------------------------
    def start(self) -> None:
        """``doca_sync_event_start``: stand-alone use (synchronous operations); no ctx afterwards.

        :raises DocaBadState: when started already.
        :raises DocaNotPermitted: when the event operates as a ctx.
        """
        self._check_open()
        self._h.start()

    def stop(self) -> None:
        """``doca_sync_event_stop``: end stand-alone use (its exports are revoked)."""
        self._check_open()
        self._h.stop()

    def as_ctx(self) -> SyncEventCtx:
        """``doca_sync_event_as_ctx``: the event as a ctx (connect it to a Pe, configure tasks, start it).

        :raises DocaNotPermitted: when the event was started stand-alone.
        """
        self._check_open()
        if self._ctx is None:
            self._ctx = SyncEventCtx(self, self._h.as_ctx())
            self._adopt(self._ctx)
        return self._ctx

    # -- synchronous operations ----------------------------------------------------------------
    def get(self) -> int:
        """``doca_sync_event_get``: the value."""
        self._check_open()
        return self._h.get()

    def update_set(self, value: int) -> None:
        """``doca_sync_event_update_set``: set the value."""
        self._check_open()
        self._h.update_set(_u64("value", value))

    def update_add(self, value: int) -> int:
        """``doca_sync_event_update_add``: add *value* atomically; returns the value before."""
        self._check_open()
        return self._h.update_add(_u64("value", value))

    def _wait(self, op: str, value: int, mask: int, yield_cpu: bool) -> None:
        self._check_open()
        self._h.wait(op, _u64("value", value, depth=3), _u64("mask", mask, "mask", 3), yield_cpu)

    def wait_gt(self, value: int, mask: int = _MASK) -> None:
        """``doca_sync_event_wait_gt``: busy-wait until ``event & mask > value`` (no timeout, as in DOCA)."""
        self._wait("gt", value, mask, False)

    def wait_gt_yield(self, value: int, mask: int = _MASK) -> None:
        """``doca_sync_event_wait_gt_yield``: as [`wait_gt`][doca_py.sync_event.SyncEvent.wait_gt], yielding the
        CPU between polls."""
        self._wait("gt", value, mask, True)

    def wait_eq(self, value: int, mask: int = _MASK) -> None:
        """``doca_sync_event_wait_eq``: busy-wait until ``event & mask == value``."""
        self._wait("eq", value, mask, False)

    def wait_eq_yield(self, value: int, mask: int = _MASK) -> None:
        """``doca_sync_event_wait_eq_yield``: as ``wait_eq``, yielding the CPU between polls."""
        self._wait("eq", value, mask, True)

    def wait_neq(self, value: int, mask: int = _MASK) -> None:
        """``doca_sync_event_wait_neq``: busy-wait until ``event & mask != value``."""
        self._wait("neq", value, mask, False)

    def wait_neq_yield(self, value: int, mask: int = _MASK) -> None:
        """``doca_sync_event_wait_neq_yield``: as ``wait_neq``, yielding the CPU between polls."""
        self._wait("neq", value, mask, True)

    # -- exports ----------------------------------------------------------------------------------
    def export_to_remote_pci(self, dev: Dev) -> bytes:
        """``doca_sync_event_export_to_remote_pci``: a blob for the PCIe peer's
        [`create_from_export`][doca_py.sync_event.SyncEvent.create_from_export] (event started, with a remote
        PCI location)."""
        expect("SyncEvent.export_to_remote_pci", Dev, dev=dev)
        self._check_open()
        dev._check_open()
        return bytes(self._h.export_to_remote_pci(dev._h))

    def export_to_remote_net(self) -> bytes:
        """``doca_sync_event_export_to_remote_net``: a blob for a network peer's
        [`SyncEventRemoteNet.create_from_export`][doca_py.sync_event.SyncEventRemoteNet.create_from_export]
        (event started, with a remote net publisher)."""
        self._check_open()
        return bytes(self._h.export_to_remote_net())

    # -- capabilities ------------------------------------------------------------------------------
    @staticmethod
    def cap_is_create_from_export_supported(devinfo: DevInfo) -> bool:
        """``doca_sync_event_cap_is_create_from_export_supported``."""
        return backend.sync_event.cap("is_create_from_export_supported", devinfo_handle(devinfo))

    @staticmethod
    def cap_remote_net_is_create_from_export_supported(devinfo: DevInfo) -> bool:
        """``doca_sync_event_cap_remote_net_is_create_from_export_supported``."""
        return backend.sync_event.cap("remote_net_is_create_from_export_supported", devinfo_handle(devinfo))

    @staticmethod
    def cap_is_export_to_remote_pci_supported(devinfo: DevInfo) -> bool:
        """``doca_sync_event_cap_is_export_to_remote_pci_supported``."""
        return backend.sync_event.cap("is_export_to_remote_pci_supported", devinfo_handle(devinfo))

    @staticmethod
    def cap_is_export_to_remote_net_supported(devinfo: DevInfo) -> bool:
        """``doca_sync_event_cap_is_export_to_remote_net_supported``."""
        return backend.sync_event.cap("is_export_to_remote_net_supported", devinfo_handle(devinfo))

    @staticmethod
    def cap_task_is_supported(task: str, devinfo: DevInfo) -> bool:
        """``doca_sync_event_cap_task_<task>_is_supported``, *task* one of ``get``, ``notify_set``,
        ``notify_add``, ``wait_eq``, ``wait_neq`` (DOCA 3.x) and ``wait_gt`` (DOCA 2.6); a task type the
        loaded DOCA lacks raises ``DocaNotSupported``, as its query function is absent."""
        if task not in ("get", "notify_set", "notify_add", "wait_eq", "wait_neq", "wait_gt"):
            raise DocaInvalidValue(f"no sync event task {task!r}")
        return backend.sync_event.cap(f"task_{task}_is_supported", devinfo_handle(devinfo))

    def _close(self) -> None:
        self._h.destroy()

    def _repr_facts(self) -> list[str]:
        return ["as ctx"] if self._ctx is not None else []

    def __enter__(self) -> SyncEvent:
        return self


class SyncEventRemoteNet(DocaObject):
    """``doca_sync_event_remote_net``: a network peer's event, the target of the RDMA remote sync-event tasks."""

    _warn_unclosed = True

    def __init__(self, handle: SyncEventRemoteNetHandle) -> None:
        super().__init__()
        self._h = handle
        self._arm_finalizer(handle.destroy)

    @classmethod
    def create_from_export(cls, dev: Dev, blob: bytes) -> SyncEventRemoteNet:
        """``doca_sync_event_remote_net_create_from_export``: the peer's
        [`export_to_remote_net`][doca_py.sync_event.SyncEvent.export_to_remote_net] blob.

        :raises DocaInvalidValue: for a malformed, truncated or corrupt blob, or a remote-PCI one.
        """
        expect("SyncEventRemoteNet.create_from_export", Dev, dev=dev)
        expect("SyncEventRemoteNet.create_from_export", (bytes, bytearray, memoryview), blob=blob)
        dev._check_open()
        rn = cls(backend.sync_event.sync_event_remote_net_create_from_export(dev._h, bytes(blob)))
        dev._adopt(rn)
        return rn

    def _close(self) -> None:
        self._h.destroy()

    def __enter__(self) -> SyncEventRemoteNet:
        return self
