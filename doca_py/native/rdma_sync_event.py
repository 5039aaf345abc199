"""Native RDMA remote sync-event tasks (libdoca_rdma, ``doca_rdma_task_remote_net_sync_event_*``).

The pools are made on first use per :class:`~doca_py.native.rdma.NativeRdma` (before start, by their
``set_conf``); :data:`TASK_FNS` spells out the C names per task type. DOCA 2.6 has no connection argument in
``*_allocate_init`` (one implicit connection), as for the other rdma tasks.
"""

from __future__ import annotations

import ctypes
import weakref
from functools import partial
from typing import Any, cast

from .._backend.protocols.core import BufHandle, DevInfoHandle
from .._backend.protocols.rdma import RdmaConnectionHandle, RdmaHandle
from .._backend.protocols.rdma_sync_event import KINDS
from .._backend.protocols.sync_event import SyncEventRemoteNetHandle
from ..errors import DocaInvalidValue
from .engine import EngineTask, EngineTaskPool, buf_ptr, is_supported
from .rdma import NativeRdma
from .rdma_connection import NativeRdmaConnection, rd
from .sync_event import NativeSyncEventRemoteNet

__all__ = ["TASK_FNS", "NativeRdmaTaskRemoteNetSyncEvent", "task_pool", "task_allocate_init", "cap_task_is_supported"]

#: Per task type: operation → C function. ``buf`` is the local buffer's setter (dst, src or result).
TASK_FNS: dict[str, dict[str, str]] = {
    "get": {
        "cap_is_supported": "doca_rdma_cap_task_remote_net_sync_event_get_is_supported",
        "set_conf": "doca_rdma_task_remote_net_sync_event_get_set_conf",
        "allocate_init": "doca_rdma_task_remote_net_sync_event_get_allocate_init",
        "as_task": "doca_rdma_task_remote_net_sync_event_get_as_task",
        "set_sync_event": "doca_rdma_task_remote_net_sync_event_get_set_sync_event",
        "set_buf": "doca_rdma_task_remote_net_sync_event_get_set_dst_buf",
        "get_result_len": "doca_rdma_task_remote_net_sync_event_get_get_result_len",
        "set_rdma_connection": "doca_rdma_task_remote_net_sync_event_get_set_rdma_connection",
    },
    "notify_set": {
        "cap_is_supported": "doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported",
        "set_conf": "doca_rdma_task_remote_net_sync_event_notify_set_set_conf",
        "allocate_init": "doca_rdma_task_remote_net_sync_event_notify_set_allocate_init",
        "as_task": "doca_rdma_task_remote_net_sync_event_notify_set_as_task",
        "set_sync_event": "doca_rdma_task_remote_net_sync_event_notify_set_set_sync_event",
        "set_buf": "doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf",
        "set_rdma_connection": "doca_rdma_task_remote_net_sync_event_notify_set_set_rdma_connection",
    },
    "notify_add": {
        "cap_is_supported": "doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported",
        "set_conf": "doca_rdma_task_remote_net_sync_event_notify_add_set_conf",
        "allocate_init": "doca_rdma_task_remote_net_sync_event_notify_add_allocate_init",
        "as_task": "doca_rdma_task_remote_net_sync_event_notify_add_as_task",
        "set_sync_event": "doca_rdma_task_remote_net_sync_event_notify_add_set_sync_event",
        "set_buf": "doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf",
        "set_add_data": "doca_rdma_task_remote_net_sync_event_notify_add_set_add_data",
        "get_add_data": "doca_rdma_task_remote_net_sync_event_notify_add_get_add_data",
        "set_rdma_connection": "doca_rdma_task_remote_net_sync_event_notify_add_set_rdma_connection",
    },
}


def _fn(kind: str, op: str) -> Any:
    name = TASK_FNS[kind].get(op)
    if name is None:
        raise DocaInvalidValue(f"a remote sync event {kind} task has no {op}")
    return getattr(rd(), name)


class NativeRdmaTaskRemoteNetSyncEvent(EngineTask):
    """``doca_rdma_task_remote_net_sync_event_<kind> *``."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return cast(EngineTaskPool, self.pool).kind

    def set_rdma_connection(self, conn: RdmaConnectionHandle) -> None:
        rdma = cast(NativeRdma, self.pool.ctx)
        _fn(self.kind, "set_rdma_connection")(self.ptr, rdma.conn_ptr(conn))

    def set_sync_event(self, event: SyncEventRemoteNetHandle) -> None:
        _fn(self.kind, "set_sync_event")(self.ptr, cast(NativeSyncEventRemoteNet, event).ptr)

    def set_buf(self, buf: BufHandle) -> None:
        _fn(self.kind, "set_buf")(self.ptr, buf_ptr(buf))

    def set_add_data(self, add: int) -> None:
        _fn(self.kind, "set_add_data")(self.ptr, add)

    def get_add_data(self) -> int:
        return int(_fn(self.kind, "get_add_data")(self.ptr))

    def get_result_len(self) -> int:
        return int(_fn("get", "get_result_len")(self.ptr)) if self.kind == "get" else 0


_pools: weakref.WeakKeyDictionary[NativeRdma, dict[str, EngineTaskPool]] = weakref.WeakKeyDictionary()


def _check_kind(kind: str) -> dict[str, str]:
    if kind not in KINDS:
        raise DocaInvalidValue(f"no remote sync event task {kind!r}; one of {', '.join(KINDS)}")
    return TASK_FNS[kind]


def task_pool(rdma: RdmaHandle, kind: str) -> EngineTaskPool:
    assert isinstance(rdma, NativeRdma)
    fns = _check_kind(kind)
    pools = _pools.setdefault(rdma, {})
    pool = pools.get(kind)
    if pool is None:
        l = rd()
        pool = pools[kind] = EngineTaskPool(rdma, partial(getattr(l, fns["set_conf"]), rdma.ptr), fns["set_conf"],
                                            getattr(l, fns["as_task"]), NativeRdmaTaskRemoteNetSyncEvent, kind)
    return pool


def task_allocate_init(rdma: RdmaHandle, kind: str, conn: RdmaConnectionHandle, event: SyncEventRemoteNetHandle,
                       buf: BufHandle, add: int) -> NativeRdmaTaskRemoteNetSyncEvent:
    assert isinstance(rdma, NativeRdma) and isinstance(conn, NativeRdmaConnection)
    if not isinstance(event, NativeSyncEventRemoteNet):
        raise DocaInvalidValue("not a native remote sync event")
    what = _check_kind(kind)["allocate_init"]
    pool = task_pool(rdma, kind)
    args: tuple[Any, ...] = (event.ptr, buf_ptr(buf), add) if kind == "notify_add" else (event.ptr, buf_ptr(buf))
    fn = getattr(rd(), what)
    out = ctypes.byref(pool.out)
    if rdma.conn_api:
        rc = fn(rdma.ptr, rdma.conn_ptr(conn), *args, 0, out)
    else:
        rdma.check_implicit(conn)
        rc = fn(rdma.ptr, *args, 0, out)
    return cast(NativeRdmaTaskRemoteNetSyncEvent, pool.take(rc, what))


def cap_task_is_supported(kind: str, devinfo: DevInfoHandle) -> bool:
    return is_supported(getattr(rd(), _check_kind(kind)["cap_is_supported"]), devinfo)
