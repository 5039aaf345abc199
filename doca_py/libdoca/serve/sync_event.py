"""libdoca_common's ``doca_sync_event`` served by the emulator.

The event and its ctx are two handles: ``doca_sync_event_as_ctx`` gives the ctx's (the ``doca_ctx_*``
functions take it), while the task functions take the event's, as in ``doca_sync_event.h``. A get or
notify-add task writes its result through the caller's ``uint64_t *`` before its completion callback runs.

The synchronous waits block inside the emulator: C calls them without the GIL (a ``CDLL`` binding, or a C
program), the slot takes it, and the emulator's wait loop sleeps between reads, giving the GIL back, so the
thread that publishes the value (another Python thread, or C through another slot) runs meanwhile.

DOCA 2.6 spells the remote-PCI functions ``_dpu`` and has a wait-greater-than task instead of 3.0's eq/neq
ones: both spellings are served, each library exporting its own version's.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, TypeVar

from ...emulated import sync_event as emu
from ...emulated import version as emu_version
from ...emulated.ctx import TaskPool
from ...emulated.dev import EmuDev, EmuDevInfo
from ...emulated.sync_event import (
    EmuSyncEvent,
    EmuSyncEventCtx,
    EmuSyncEventRemoteNet,
    EmuSyncEventTaskGet,
    EmuSyncEventTaskNotifyAdd,
    EmuSyncEventTaskNotifySet,
    EmuSyncEventTaskWait,
    EmuSyncEventTaskWaitGt,
    EmuSyncEventTaskWaitNeq,
    _SeTask,
)
from ...errors import DocaInvalidValue, DocaNotSupported
from ._core import forget, handle, impl, obj, out_ptr, out_u64
from .common import TaskRec, alloc_or_fail, buf_of, ctx_extra, forget_ctx, task_set_conf

_T = TypeVar("_T", bound=_SeTask)


def _event(p: int | None) -> EmuSyncEvent:
    ev = obj(p, EmuSyncEvent, "doca_sync_event")
    return ev


def _ctx(p: int | None) -> EmuSyncEventCtx:
    """The ctx of the event behind *p* (made on first use: configuring tasks makes the event a ctx)."""
    return _event(p).as_ctx()


def _devinfo(p: int | None) -> EmuDevInfo:
    return obj(p, EmuDevInfo, "doca_devinfo")


def _dev(p: int | None) -> EmuDev:
    return obj(p, EmuDev, "doca_dev")


# -- creation and destruction -----------------------------------------------------------------------

_blobs: dict[int, dict[bytes, Any]] = {}  # the export data streams C points at, alive with their event


def _forget_event(ev: EmuSyncEvent) -> None:
    _blobs.pop(id(ev), None)
    if ev.ctx is not None:
        forget_ctx(ev.ctx)
    forget(ev)


@impl("doca_sync_event_create")
def _create(out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("NULL output pointer for the sync event")
    out_ptr(out, handle(emu.sync_event_create()))


@impl("doca_sync_event_create_from_export")
def _create_from_export(dev: int | None, data: int | None, size: int, out: int | None) -> None:
    d = _dev(dev)
    if not data or not size or not out:
        raise DocaInvalidValue("doca_sync_event_create_from_export: NULL or empty data stream, or NULL output")
    out_ptr(out, handle(emu.sync_event_create_from_export(d, ctypes.string_at(data, size))))


@impl("doca_sync_event_remote_net_create_from_export")
def _remote_net_create(dev: int | None, data: int | None, size: int, out: int | None) -> None:
    d = _dev(dev)
    if not data or not size or not out:
        raise DocaInvalidValue("doca_sync_event_remote_net_create_from_export: NULL or empty data stream, "
                               "or NULL output")
    out_ptr(out, handle(emu.sync_event_remote_net_create_from_export(d, ctypes.string_at(data, size))))


@impl("doca_sync_event_destroy")
def _destroy(p: int | None) -> None:
    ev = _event(p)
    ev.destroy()
    _forget_event(ev)


@impl("doca_sync_event_remote_net_destroy")
def _remote_net_destroy(p: int | None) -> None:
    r = obj(p, EmuSyncEventRemoteNet, "doca_sync_event_remote_net")
    r.destroy()
    forget(r)


# -- configuration ---------------------------------------------------------------------------------

@impl("doca_sync_event_add_publisher_location_cpu")
def _pub_cpu(p: int | None, dev: int | None) -> None:
    _event(p).add_publisher_location_cpu(_dev(dev))


@impl("doca_sync_event_add_subscriber_location_cpu")
def _sub_cpu(p: int | None, dev: int | None) -> None:
    _event(p).add_subscriber_location_cpu(_dev(dev))


@impl("doca_sync_event_add_publisher_location_remote_pci", "doca_sync_event_add_publisher_location_dpu")
def _pub_pci(p: int | None) -> None:
    _event(p).add_publisher_location_remote_pci()


@impl("doca_sync_event_add_subscriber_location_remote_pci", "doca_sync_event_add_subscriber_location_dpu")
def _sub_pci(p: int | None) -> None:
    _event(p).add_subscriber_location_remote_pci()


@impl("doca_sync_event_add_publisher_location_remote_net")
def _pub_net(p: int | None) -> None:
    _event(p).add_publisher_location_remote_net()


@impl("doca_sync_event_set_addr")
def _set_addr(p: int | None, addr: int | None) -> None:
    _event(p).set_addr(addr or 0)


@impl("doca_sync_event_set_doca_buf")
def _set_doca_buf(p: int | None, buf: int | None) -> None:
    _event(p).set_doca_buf(buf_of(buf))


@impl("doca_sync_event_start")
def _start(p: int | None) -> None:
    _event(p).start()


@impl("doca_sync_event_stop")
def _stop(p: int | None) -> None:
    _event(p).stop()


@impl("doca_sync_event_as_ctx")
def _as_ctx(p: int | None) -> int:
    return ctx_extra(_event(p).as_ctx()).handle  # NULL (the wrapper's answer to an error) when started stand-alone


# -- synchronous operations ------------------------------------------------------------------------

@impl("doca_sync_event_get")
def _get(p: int | None, out: int | None) -> None:
    ev = _event(p)
    if not out:
        raise DocaInvalidValue("NULL output pointer for the value")
    out_u64(out, ev.get())


@impl("doca_sync_event_update_add")
def _update_add(p: int | None, value: int, fetched: int | None) -> None:
    old = _event(p).update_add(value)
    if fetched:
        out_u64(fetched, old)


@impl("doca_sync_event_update_set")
def _update_set(p: int | None, value: int) -> None:
    _event(p).update_set(value)


def _wait(op: str, yield_cpu: bool) -> Callable[[int | None, int, int], None]:
    def wait(p: int | None, value: int, mask: int) -> None:
        _event(p).wait(op, value, mask, yield_cpu)
    return wait


for _op in ("gt", "eq", "neq"):
    impl(f"doca_sync_event_wait_{_op}")(_wait(_op, False))
    impl(f"doca_sync_event_wait_{_op}_yield")(_wait(_op, True))


# -- exports ---------------------------------------------------------------------------------------

def _stream(ev: EmuSyncEvent, blob: bytes, out: int | None, out_size: int | None) -> None:
    if not out or not out_size:
        raise DocaInvalidValue("NULL output pointer for the export data stream")
    keep = _blobs.setdefault(id(ev), {})
    buf = keep.get(blob)
    if buf is None:
        buf = keep[blob] = ctypes.create_string_buffer(blob, len(blob))
    out_ptr(out, ctypes.addressof(buf))
    out_u64(out_size, len(blob))


@impl("doca_sync_event_export_to_remote_pci", "doca_sync_event_export_to_dpu")
def _export_pci(p: int | None, dev: int | None, out: int | None, out_size: int | None) -> None:
    ev = _event(p)
    _stream(ev, ev.export_to_remote_pci(_dev(dev)), out, out_size)


@impl("doca_sync_event_export_to_remote_net")
def _export_net(p: int | None, out: int | None, out_size: int | None) -> None:
    ev = _event(p)
    _stream(ev, ev.export_to_remote_net(), out, out_size)


# -- capabilities ----------------------------------------------------------------------------------

def _cap(name: str) -> Callable[[int | None], None]:
    def cap(info: int | None) -> None:
        if not emu.cap(name, _devinfo(info)):
            raise DocaNotSupported(f"the device does not support doca_sync_event_cap_{name}")
    return cap


for _c_name, _cap_name in (
        ("doca_sync_event_cap_is_create_from_export_supported", "is_create_from_export_supported"),
        ("doca_sync_event_cap_remote_net_is_create_from_export_supported",
         "remote_net_is_create_from_export_supported"),
        ("doca_sync_event_cap_is_export_to_remote_pci_supported", "is_export_to_remote_pci_supported"),
        ("doca_sync_event_cap_is_export_to_dpu_supported", "is_export_to_remote_pci_supported"),
        ("doca_sync_event_cap_is_export_to_remote_net_supported", "is_export_to_remote_net_supported"),
        ("doca_sync_event_cap_is_export_to_dpa_supported", "is_export_to_dpa_supported"),
        ("doca_sync_event_cap_is_export_to_gpu_supported", "is_export_to_gpu_supported"),
        ("doca_sync_event_cap_task_get_is_supported", "task_get_is_supported"),
        ("doca_sync_event_cap_task_notify_set_is_supported", "task_notify_set_is_supported"),
        ("doca_sync_event_cap_task_notify_add_is_supported", "task_notify_add_is_supported"),
        ("doca_sync_event_cap_task_wait_eq_is_supported", "task_wait_eq_is_supported"),
        ("doca_sync_event_cap_task_wait_neq_is_supported", "task_wait_neq_is_supported")):
    impl(_c_name)(_cap(_cap_name))


@impl("doca_sync_event_cap_remote_net_is_export_to_dpa_supported",
      "doca_sync_event_cap_remote_net_is_export_to_gpu_supported")
def _cap_remote_net_dpa_gpu(info: int | None) -> None:
    _devinfo(info)
    raise DocaNotSupported("the emulator has no DPA or GPU")


@impl("doca_sync_event_cap_task_wait_gt_is_supported")
def _cap_wait_gt(info: int | None) -> None:
    _devinfo(info)  # DOCA 2.6 only (the only libdoca exporting it): every device has the task


# -- the ctx's tasks ---------------------------------------------------------------------------------

class _Result:
    """A get or notify-add task's ``uint64_t *`` for its result (``TaskRec.extra``)."""

    __slots__ = ("task", "ptr")

    def __init__(self, task: _SeTask, ptr: int | None) -> None:
        self.task, self.ptr = task, ptr


def _task(cls: type[_T], what: str) -> Callable[[int | None], _T]:
    def get(p: int | None) -> _T:
        t = obj(p, cls, what)
        if type(t) is not cls:  # the wait tasks share a class hierarchy: exact type
            raise DocaInvalidValue(f"{what}: the task is a {type(t).__name__}")
        return t
    return get


_get_task = _task(EmuSyncEventTaskGet, "doca_sync_event_task_get")
_set_task = _task(EmuSyncEventTaskNotifySet, "doca_sync_event_task_notify_set")
_add_task = _task(EmuSyncEventTaskNotifyAdd, "doca_sync_event_task_notify_add")
_WAITS: dict[str, Callable[[int | None], _SeTask]] = {
    "eq": _task(EmuSyncEventTaskWait, "doca_sync_event_task_wait_eq"),
    "neq": _task(EmuSyncEventTaskWaitNeq, "doca_sync_event_task_wait_neq"),
    "gt": _task(EmuSyncEventTaskWaitGt, "doca_sync_event_task_wait_gt"),
}


def _writes_result(pool: TaskPool[Any]) -> None:
    """After ``task_set_conf``: a success writes the task's result through its pointer before the C
    callback runs, as DOCA does."""
    deliver = pool.success
    assert deliver is not None and pool.error is not None

    def success(rec: object, task_ud: int, ctx_ud: int) -> None:
        r = rec.extra if isinstance(rec, TaskRec) else None
        if isinstance(r, _Result) and r.ptr:
            ctypes.c_uint64.from_address(r.ptr).value = r.task.result
        deliver(rec, task_ud, ctx_ud)

    pool.set_conf(success, pool.error, pool.size, pool.ctx_owner)


def _pool(name: str) -> Callable[[EmuSyncEventCtx], TaskPool[Any]]:
    def get(c: EmuSyncEventCtx) -> TaskPool[Any]:
        pool = getattr(c, name)
        if not isinstance(pool, TaskPool):  # wait_gt from 3.0, wait_eq/neq before
            major, minor = emu_version.VERSION
            raise DocaNotSupported(f"doca_sync_event_task_{name}: not a task type of DOCA {major}.{minor}")
        return pool
    return get


def _serve_set_conf(name: str, result: bool) -> None:
    pool_of = _pool(name)

    def set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
        pool = pool_of(_ctx(p))
        task_set_conf(pool, ok, err, num)
        if result:
            _writes_result(pool)

    impl(f"doca_sync_event_task_{name}_set_conf")(set_conf)


for _name, _result in (("get", True), ("notify_set", False), ("notify_add", True), ("wait_eq", False),
                       ("wait_neq", False), ("wait_gt", False)):
    _serve_set_conf(_name, _result)


@impl("doca_sync_event_task_get_alloc_init")
def _get_alloc(p: int | None, ret: int | None, ud: int, out: int | None) -> None:
    c = _ctx(p)
    rec = alloc_or_fail(c.task_get_alloc_init, ud, out)
    rec.extra = _Result(_get_task(rec.addr), ret)


@impl("doca_sync_event_task_notify_set_alloc_init")
def _set_alloc(p: int | None, value: int, ud: int, out: int | None) -> None:
    c = _ctx(p)
    alloc_or_fail(lambda: c.task_notify_set_alloc_init(value), ud, out)


@impl("doca_sync_event_task_notify_add_alloc_init")
def _add_alloc(p: int | None, value: int, fetched: int | None, ud: int, out: int | None) -> None:
    c = _ctx(p)
    rec = alloc_or_fail(lambda: c.task_notify_add_alloc_init(value), ud, out)
    rec.extra = _Result(_add_task(rec.addr), fetched)


def _serve_wait(op: str) -> None:
    task = _WAITS[op]
    pre = f"doca_sync_event_task_wait_{op}"

    def alloc(p: int | None, value: int, mask: int, ud: int, out: int | None) -> None:
        c = _ctx(p)
        fn = getattr(c, f"task_wait_{op}_alloc_init")
        alloc_or_fail(lambda: fn(value, mask), ud, out)

    def as_task(p: int | None) -> int:
        return handle(task(p))

    def set_wait_val(p: int | None, value: int) -> None:
        task(p).set_wait_val(value)

    def get_wait_val(p: int | None) -> int:
        return task(p).get_wait_val()

    def set_mask(p: int | None, mask: int) -> None:
        task(p).set_mask(mask)

    def get_mask(p: int | None) -> int:
        return task(p).get_mask()

    impl(f"{pre}_alloc_init")(alloc)
    impl(f"{pre}_as_doca_task")(as_task)
    impl(f"{pre}_set_wait_val")(set_wait_val)
    impl(f"{pre}_get_wait_val")(get_wait_val)
    impl(f"{pre}_set_mask")(set_mask)
    impl(f"{pre}_get_mask")(get_mask)


for _op in _WAITS:
    _serve_wait(_op)


def _result_of(t: _SeTask) -> _Result:
    rec = t.owner
    if not isinstance(rec, TaskRec) or not isinstance(rec.extra, _Result):
        raise DocaInvalidValue("the task was not allocated through libdoca")
    return rec.extra


@impl("doca_sync_event_task_get_as_doca_task")
def _get_as_task(p: int | None) -> int:
    return handle(_get_task(p))


@impl("doca_sync_event_task_get_set_ret_val_ptr")
def _get_set_ptr(p: int | None, ptr: int | None) -> None:
    t = _get_task(p)
    t._settable("doca_sync_event_task_get_set_ret_val_ptr")
    _result_of(t).ptr = ptr


@impl("doca_sync_event_task_get_get_ret_val_ptr")
def _get_get_ptr(p: int | None) -> int | None:
    return _result_of(_get_task(p)).ptr


@impl("doca_sync_event_task_notify_set_as_doca_task")
def _set_as_task(p: int | None) -> int:
    return handle(_set_task(p))


@impl("doca_sync_event_task_notify_set_set_set_val")
def _set_set_val(p: int | None, value: int) -> None:
    _set_task(p).set_set_val(value)


@impl("doca_sync_event_task_notify_set_get_set_val")
def _set_get_val(p: int | None) -> int:
    return _set_task(p).get_set_val()


@impl("doca_sync_event_task_notify_add_as_doca_task")
def _add_as_task(p: int | None) -> int:
    return handle(_add_task(p))


@impl("doca_sync_event_task_notify_add_set_inc_val")
def _add_set_inc(p: int | None, value: int) -> None:
    _add_task(p).set_inc_val(value)


@impl("doca_sync_event_task_notify_add_get_inc_val")
def _add_get_inc(p: int | None) -> int:
    return _add_task(p).get_inc_val()


@impl("doca_sync_event_task_notify_add_set_fetched_val_ptr")
def _add_set_ptr(p: int | None, ptr: int | None) -> None:
    t = _add_task(p)
    t._settable("doca_sync_event_task_notify_add_set_fetched_val_ptr")
    _result_of(t).ptr = ptr


@impl("doca_sync_event_task_notify_add_get_fetched_val_ptr")
def _add_get_ptr(p: int | None) -> int | None:
    return _result_of(_add_task(p)).ptr
