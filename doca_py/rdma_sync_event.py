"""The RDMA remote sync-event tasks: read, set and add to a network peer's [`SyncEvent`][doca_py.sync_event.SyncEvent].

The peer exports its event with ``export_to_remote_net``; this side makes a
[`SyncEventRemoteNet`][doca_py.sync_event.SyncEventRemoteNet] of the blob and aims
[`Rdma`][doca_py.rdma.Rdma] tasks at it over a connection:

```pycon
>>> remote = SyncEventRemoteNet.create_from_export(dev, blob)
>>> rdma.task_remote_net_sync_event_notify_set_set_conf(on_set, on_error, 4)    # before start
>>> src = inv.buf_get_by_data(mm, addr, 8)                                     # the value, 8 bytes
>>> rdma.task_remote_net_sync_event_notify_set_allocate_init(conn, remote, src).submit()

```

Import these names from ``doca_py.rdma`` (or ``doca_py``); the methods are [`Rdma`][doca_py.rdma.Rdma]'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._args import caller, wrong_type
from ._backend import backend
from ._backend.protocols.rdma_sync_event import RdmaTaskRemoteNetSyncEventHandle
from .buf import Buf, freed_buf
from .ctx import TaskCallback
from .dev import DevInfo, devinfo_handle
from .rdma_connection import RdmaConnection
from .rdma_tasks import _ConnTask
from .sync_event import SyncEventRemoteNet

if TYPE_CHECKING:
    from ._backend.protocols.core import TaskHandle, TaskPoolHandle
    from ._backend.protocols.rdma import RdmaConnectionHandle, RdmaHandle

__all__ = ["RdmaTaskRemoteNetSyncEventGet", "RdmaTaskRemoteNetSyncEventNotifySet",
           "RdmaTaskRemoteNetSyncEventNotifyAdd", "RdmaSyncEventTasks"]


class _SyncEventTask(_ConnTask):
    __slots__ = ("_event", "_buf")
    _h: RdmaTaskRemoteNetSyncEventHandle
    _event: SyncEventRemoteNet
    _buf: Buf

    def get_sync_event(self) -> SyncEventRemoteNet:
        """``doca_rdma_task_remote_net_sync_event_<type>_get_sync_event``: the peer's event."""
        return self._event

    def set_sync_event(self, event: SyncEventRemoteNet) -> None:
        """``doca_rdma_task_remote_net_sync_event_<type>_set_sync_event``: aim at *event*."""
        if not isinstance(event, SyncEventRemoteNet):
            raise wrong_type(f"{type(self).__name__}.set_sync_event", SyncEventRemoteNet, event=event)
        event._check_open()
        self._h.set_sync_event(event._h)
        self._event = event

    def _set_buf(self, buf: Buf, param: str) -> None:
        if not isinstance(buf, Buf):
            raise wrong_type(caller(), Buf, **{param: buf})
        if buf._closed:
            raise freed_buf(caller(), **{param: buf})
        self._h.set_buf(buf._h)
        self._buf = buf


class RdmaTaskRemoteNetSyncEventGet(_SyncEventTask):
    """``doca_rdma_task_remote_net_sync_event_get``: the peer's value (8 bytes, native byte order) appended to
    the local destination."""

    __slots__ = ()

    def get_dst_buf(self) -> Buf:
        """``doca_rdma_task_remote_net_sync_event_get_get_dst_buf``: the dst buf."""
        return self._buf

    def set_dst_buf(self, dst: Buf) -> None:
        """``doca_rdma_task_remote_net_sync_event_get_set_dst_buf``: set the dst buf to *dst*."""
        self._set_buf(dst, "dst")

    def get_result_len(self) -> int:
        """``doca_rdma_task_remote_net_sync_event_get_get_result_len``: bytes written to the destination."""
        return self._h.get_result_len()


class RdmaTaskRemoteNetSyncEventNotifySet(_SyncEventTask):
    """``doca_rdma_task_remote_net_sync_event_notify_set``: set the peer's value from the source's 8 bytes."""

    __slots__ = ()

    def get_src_buf(self) -> Buf:
        """``doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf``: the src buf."""
        return self._buf

    def set_src_buf(self, src: Buf) -> None:
        """``doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf``: set the src buf to *src*."""
        self._set_buf(src, "src")


class RdmaTaskRemoteNetSyncEventNotifyAdd(_SyncEventTask):
    """``doca_rdma_task_remote_net_sync_event_notify_add``: add to the peer's value atomically; the value
    before (8 bytes, native byte order) is appended to the result buffer."""

    __slots__ = ()

    def get_result_buf(self) -> Buf:
        """``doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf``: the result buf."""
        return self._buf

    def set_result_buf(self, result: Buf) -> None:
        """``doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf``: set the result buf to *result*."""
        self._set_buf(result, "result")

    def get_add_data(self) -> int:
        """``doca_rdma_task_remote_net_sync_event_notify_add_get_add_data``: the addend."""
        return self._h.get_add_data()

    def set_add_data(self, add: int) -> None:
        """``doca_rdma_task_remote_net_sync_event_notify_add_set_add_data``: set the addend to *add*."""
        if not isinstance(add, int):
            raise wrong_type("RdmaTaskRemoteNetSyncEventNotifyAdd.set_add_data", int, add=add)
        self._h.set_add_data(add & (1 << 64) - 1)


class RdmaSyncEventTasks:
    """[`Rdma`][doca_py.rdma.Rdma]'s remote sync-event task methods (a base of ``Rdma``)."""

    #: What errors name its static methods by (``_args.caller``): the public class.
    _public_name = "Rdma"

    if TYPE_CHECKING:
        _h: RdmaHandle

        def _set_conf(self, pool: TaskPoolHandle, success: Any, error: Any, num_tasks: int) -> None: ...
        def _wrap_task(self, h: TaskHandle, factory: Any, user_data: Any) -> Any: ...

        @staticmethod
        def _check_conn(conn: RdmaConnection) -> RdmaConnectionHandle: ...

    def task_remote_net_sync_event_get_set_conf(self, success: TaskCallback[RdmaTaskRemoteNetSyncEventGet],
                                                error: TaskCallback[RdmaTaskRemoteNetSyncEventGet],
                                                num_tasks: int) -> None:
        """``doca_rdma_task_remote_net_sync_event_get_set_conf``: callbacks and pool size (before start)."""
        self._set_conf(backend.rdma_sync_event.task_pool(self._h, "get"), success, error, num_tasks)

    def task_remote_net_sync_event_notify_set_set_conf(
            self, success: TaskCallback[RdmaTaskRemoteNetSyncEventNotifySet],
            error: TaskCallback[RdmaTaskRemoteNetSyncEventNotifySet], num_tasks: int) -> None:
        """``doca_rdma_task_remote_net_sync_event_notify_set_set_conf``: callbacks and pool size (before start)."""
        self._set_conf(backend.rdma_sync_event.task_pool(self._h, "notify_set"), success, error, num_tasks)

    def task_remote_net_sync_event_notify_add_set_conf(
            self, success: TaskCallback[RdmaTaskRemoteNetSyncEventNotifyAdd],
            error: TaskCallback[RdmaTaskRemoteNetSyncEventNotifyAdd], num_tasks: int) -> None:
        """``doca_rdma_task_remote_net_sync_event_notify_add_set_conf``: callbacks and pool size (before start)."""
        self._set_conf(backend.rdma_sync_event.task_pool(self._h, "notify_add"), success, error, num_tasks)

    def _sync_event_task(self, kind: str, cls: type[Any], connection: RdmaConnection, event: SyncEventRemoteNet,
                         buf: Buf, add: int, user_data: Any, buf_name: str) -> Any:
        where = "Rdma." + caller(2).rpartition(".")[2]
        if not isinstance(connection, RdmaConnection):
            raise wrong_type(where, RdmaConnection, connection=connection)
        if not isinstance(event, SyncEventRemoteNet):
            raise wrong_type(where, SyncEventRemoteNet, event=event)
        if not isinstance(buf, Buf):
            raise wrong_type(where, Buf, **{buf_name: buf})
        if buf._closed:
            raise freed_buf(where, **{buf_name: buf})
        if not isinstance(add, int):
            raise wrong_type(where, int, add_data=add)
        event._check_open()
        h = backend.rdma_sync_event.task_allocate_init(self._h, kind, self._check_conn(connection), event._h,
                                                       buf._h, add & (1 << 64) - 1)
        t = self._wrap_task(h, cls, user_data)
        t._conn, t._event, t._buf = connection, event, buf
        return t

    def task_remote_net_sync_event_get_allocate_init(self, connection: RdmaConnection, event: SyncEventRemoteNet,
                                                     dst: Buf, user_data: Any = None) -> RdmaTaskRemoteNetSyncEventGet:
        """``doca_rdma_task_remote_net_sync_event_get_allocate_init``: a task reading *event*'s value into *dst*.

        :raises DocaNoMemory: when every task of the pool is allocated.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        t: RdmaTaskRemoteNetSyncEventGet = self._sync_event_task(
            "get", RdmaTaskRemoteNetSyncEventGet, connection, event, dst, 0, user_data, "dst")
        return t

    def task_remote_net_sync_event_notify_set_allocate_init(
            self, connection: RdmaConnection, event: SyncEventRemoteNet, src: Buf,
            user_data: Any = None) -> RdmaTaskRemoteNetSyncEventNotifySet:
        """``doca_rdma_task_remote_net_sync_event_notify_set_allocate_init``: a task setting *event* to the
        value in *src* (its data: 8 bytes, native byte order)."""
        t: RdmaTaskRemoteNetSyncEventNotifySet = self._sync_event_task(
            "notify_set", RdmaTaskRemoteNetSyncEventNotifySet, connection, event, src, 0, user_data, "src")
        return t

    def task_remote_net_sync_event_notify_add_allocate_init(
            self, connection: RdmaConnection, event: SyncEventRemoteNet, result: Buf, add_data: int,
            user_data: Any = None) -> RdmaTaskRemoteNetSyncEventNotifyAdd:
        """``doca_rdma_task_remote_net_sync_event_notify_add_allocate_init``: a task adding *add_data* to
        *event* atomically; the value before is appended to *result*."""
        t: RdmaTaskRemoteNetSyncEventNotifyAdd = self._sync_event_task(
            "notify_add", RdmaTaskRemoteNetSyncEventNotifyAdd, connection, event, result, add_data, user_data,
            "result")
        return t

    @staticmethod
    def cap_task_remote_net_sync_event_get_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_remote_net_sync_event_get_is_supported``."""
        return backend.rdma_sync_event.cap_task_is_supported("get", devinfo_handle(devinfo))

    @staticmethod
    def cap_task_remote_net_sync_event_notify_set_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported``."""
        return backend.rdma_sync_event.cap_task_is_supported("notify_set", devinfo_handle(devinfo))

    @staticmethod
    def cap_task_remote_net_sync_event_notify_add_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported``."""
        return backend.rdma_sync_event.cap_task_is_supported("notify_add", devinfo_handle(devinfo))
