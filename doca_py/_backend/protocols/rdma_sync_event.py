"""Protocols of the RDMA remote sync-event tasks (``doca_rdma_task_remote_net_sync_event_*``).

Three task types of a ``doca_rdma`` ctx aim at a peer's sync event (a
[`SyncEventRemoteNetHandle`][doca_py._backend.protocols.sync_event.SyncEventRemoteNetHandle]): ``get`` reads
its value into a local buffer, ``notify_set`` sets it from a local buffer's 8 bytes, ``notify_add`` adds to it
atomically and appends the value before to a local result buffer. Each backend provides them in module
``doca_py.<impl>.rdma_sync_event`` (the emulated one in ``doca_py.emulated.rdma.sync_event_tasks``), next to its
rdma ctx, so the rdma ctx's own protocol stays as it is.
"""

from __future__ import annotations

from typing import Protocol

from .core import BufHandle, DevInfoHandle, TaskHandle, TaskPoolHandle
from .rdma import RdmaConnectionHandle, RdmaHandle
from .sync_event import SyncEventRemoteNetHandle

#: The task types, as in the C names (``doca_rdma_task_remote_net_sync_event_<kind>``).
KINDS = ("get", "notify_set", "notify_add")


class RdmaTaskRemoteNetSyncEventHandle(TaskHandle, Protocol):
    """``doca_rdma_task_remote_net_sync_event_{get,notify_set,notify_add}``."""

    def set_rdma_connection(self, conn: RdmaConnectionHandle) -> None: ...
    def set_sync_event(self, event: SyncEventRemoteNetHandle) -> None: ...
    def set_buf(self, buf: BufHandle) -> None:
        """The local buffer: ``dst`` of a get, ``src`` of a notify-set, ``result`` of a notify-add."""
        ...
    def set_add_data(self, add: int) -> None: ...
    def get_add_data(self) -> int: ...
    def get_result_len(self) -> int:
        """Bytes of the value a get wrote to its destination."""
        ...


class RdmaSyncEventBackend(Protocol):
    """Module ``doca_py.<impl>.rdma_sync_event``."""

    def task_pool(self, rdma: RdmaHandle, kind: str) -> TaskPoolHandle:
        """The pool of task type *kind* of *rdma* (its ``*_set_conf``)."""
        ...
    def task_allocate_init(self, rdma: RdmaHandle, kind: str, conn: RdmaConnectionHandle,
                           event: SyncEventRemoteNetHandle, buf: BufHandle, add: int) -> RdmaTaskRemoteNetSyncEventHandle:
        """``doca_rdma_task_remote_net_sync_event_<kind>_allocate_init`` (*add*: notify-add only)."""
        ...
    def cap_task_is_supported(self, kind: str, devinfo: DevInfoHandle) -> bool:
        """``doca_rdma_cap_task_remote_net_sync_event_<kind>_is_supported``."""
        ...
