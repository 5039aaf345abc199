"""libdoca_rdma's remote sync-event tasks served by the emulator (``doca_rdma_task_remote_net_sync_event_*``):
a read (get), a write (notify_set) and an atomic add (notify_add) aimed at a peer's exported event, through
a ``doca_sync_event_remote_net`` (made by libdoca_common's ``doca_sync_event_remote_net_create_from_export``).
As for the other rdma tasks, DOCA 2.6's ``*_allocate_init`` has no connection argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...emulated.ctx import EmuTask
from ...emulated.dev import EmuDevInfo
from ...emulated.rdma import sync_event_tasks as emu
from ...emulated.sync_event import EmuSyncEventRemoteNet
from ...errors import DocaInvalidValue, DocaNotSupported
from ._core import handle, impl, obj
from .common import alloc_or_fail, buf_of, task_set_conf
from .rdma import conn_of, opt_conn_handle, rdma_of, split_conn
from .rdma_tasks import buf_handle, task_getter

_PREFIX = "doca_rdma_task_remote_net_sync_event_"


def _event(p: int | None) -> EmuSyncEventRemoteNet:
    e = obj(p, EmuSyncEventRemoteNet, "doca_sync_event_remote_net")
    if e.destroyed:
        raise DocaInvalidValue("doca_sync_event_remote_net: destroyed")
    return e


def _resolver(kind: str, cls: type[EmuTask]) -> Callable[[int | None], Any]:
    what = _PREFIX + kind

    def get(p: int | None) -> Any:
        t = obj(p, cls, what)
        if emu.task_pool(t.ctx, kind) is not t.pool:  # type: ignore[arg-type]  # the ctx of such a task is an rdma
            raise DocaInvalidValue(f"{what}: {p:#x} is a task of another ctx's pool")
        return t

    return get


def _common(kind: str, resolve: Callable[[int | None], Any], buf_name: str, buf_attr: str) -> None:
    """What the three task types share: capability, set_conf, as_task, the event, the local buffer and
    the connection accessors."""
    prefix = _PREFIX + kind

    def cap(info: int | None) -> None:
        if not emu.cap_task_is_supported(kind, obj(info, EmuDevInfo, "doca_devinfo")):
            raise DocaNotSupported(f"the device has no remote sync event {kind} task")

    def set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
        task_set_conf(emu.task_pool(rdma_of(p), kind), ok, err, num)

    def as_task(p: int | None) -> int:
        return handle(resolve(p))

    def set_event(p: int | None, ev: int | None) -> None:
        resolve(p).set_sync_event(_event(ev))

    def get_event(p: int | None) -> int | None:
        ev = resolve(p).event
        return handle(ev) if ev is not None else None

    def set_buf(p: int | None, b: int | None) -> None:
        resolve(p).set_buf(buf_of(b))

    def set_conn(p: int | None, c: int | None) -> None:
        t = resolve(p)
        conn = conn_of(c)
        if conn.ctx is not t.ctx:
            raise DocaInvalidValue("the connection does not belong to the task's rdma ctx")
        t.set_rdma_connection(conn)

    def get_conn(p: int | None) -> int | None:
        return opt_conn_handle(resolve(p).conn)

    impl(f"doca_rdma_cap_task_remote_net_sync_event_{kind}_is_supported")(cap)
    impl(f"{prefix}_set_conf")(set_conf)
    impl(f"{prefix}_as_task")(as_task)
    impl(f"{prefix}_set_sync_event")(set_event)
    impl(f"{prefix}_get_sync_event")(get_event)
    impl(f"{prefix}_set_{buf_name}")(set_buf)
    task_getter(f"{prefix}_get_{buf_name}", resolve, buf_attr, buf_handle)
    impl(f"{prefix}_set_rdma_connection")(set_conn)
    impl(f"{prefix}_get_rdma_connection")(get_conn)


# doca_rdma_task_remote_net_sync_event_get_*: the peer's value into the local dst_buf
_get = _resolver("get", emu.EmuRdmaTaskRemoteNetSyncEventGet)
_common("get", _get, "dst_buf", "dst")


@impl("doca_rdma_task_remote_net_sync_event_get_get_result_len")
def _get_result_len(p: int | None) -> int:
    return int(_get(p).get_result_len())


@impl("doca_rdma_task_remote_net_sync_event_get_allocate_init")
def _get_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (ev, dst, ud, out) = split_conn(r, args, 4)
    e, d = _event(ev), buf_of(dst)
    alloc_or_fail(lambda: emu.task_allocate_init(r, "get", conn, e, d, 0), ud, out)


# doca_rdma_task_remote_net_sync_event_notify_set_*: the peer's value set from the local src_buf's 8 bytes
_set = _resolver("notify_set", emu.EmuRdmaTaskRemoteNetSyncEventNotifySet)
_common("notify_set", _set, "src_buf", "src")


@impl("doca_rdma_task_remote_net_sync_event_notify_set_allocate_init")
def _set_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (ev, src, ud, out) = split_conn(r, args, 4)
    e, s = _event(ev), buf_of(src)
    alloc_or_fail(lambda: emu.task_allocate_init(r, "notify_set", conn, e, s, 0), ud, out)


# doca_rdma_task_remote_net_sync_event_notify_add_*: an atomic add at the peer, the value before to result_buf
_add = _resolver("notify_add", emu.EmuRdmaTaskRemoteNetSyncEventNotifyAdd)
_common("notify_add", _add, "result_buf", "result")


@impl("doca_rdma_task_remote_net_sync_event_notify_add_set_add_data")
def _add_set_data(p: int | None, v: int) -> None:
    _add(p).set_add_data(v)


@impl("doca_rdma_task_remote_net_sync_event_notify_add_get_add_data")
def _add_get_data(p: int | None) -> int:
    return int(_add(p).get_add_data())


@impl("doca_rdma_task_remote_net_sync_event_notify_add_allocate_init")
def _add_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (ev, result, add, ud, out) = split_conn(r, args, 5)
    e, res = _event(ev), buf_of(result)
    alloc_or_fail(lambda: emu.task_allocate_init(r, "notify_add", conn, e, res, add), ud, out)
