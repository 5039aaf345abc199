"""The emulated RDMA remote sync-event tasks: a read, a write and a fetch-add aimed at a peer's event.

A peer's ``export_to_remote_net`` blob holds an RDMA export of the 8 bytes of its event's value
(:mod:`doca_py.emulated.sync_event`). The tasks are the rdma read, write and atomic fetch-add tasks with
that value as their remote buffer, so they travel the connection like those and the peer serves them on
its own event, checking the export key, its revocation and its rdma ctx's permissions as it does for any
remote access (:mod:`.serve`).
"""

from __future__ import annotations

import weakref
from typing import Any

from ..._backend.protocols.core import BufHandle, DevInfoHandle
from ..._backend.protocols.rdma import RdmaConnectionHandle, RdmaHandle
from ..._backend.protocols.rdma_sync_event import KINDS
from ..._backend.protocols.sync_event import SyncEventRemoteNetHandle
from ...errors import DocaInvalidValue
from ..buf import EmuBuf
from ..ctx import EmuTask, TaskPool
from ..sync_event import EmuSyncEventRemoteNet
from .config import INVALID
from .ctx import EmuRdma
from .segments import Fail
from .remote_tasks import EmuRdmaTaskAtomic, EmuRdmaTaskRead, EmuRdmaTaskWrite
from .tasks import check_conn

__all__ = ["EmuRdmaTaskRemoteNetSyncEventGet", "EmuRdmaTaskRemoteNetSyncEventNotifySet",
           "EmuRdmaTaskRemoteNetSyncEventNotifyAdd", "task_pool", "task_allocate_init", "cap_task_is_supported"]

_U64 = (1 << 64) - 1


class _NoHome:
    """Home of the descriptor that stands for the peer's value: it never returns to an inventory."""

    pins = 0

    def _put(self, b: EmuBuf) -> None:
        pass


_NO_HOME = _NoHome()


class _SyncEventTask:
    """What the three task types share: the peer's event, and the descriptor (the base task's ``remote``
    buffer) that stands for its value. Each subclass has the ``event`` slot."""

    event: EmuSyncEventRemoteNet | None
    #: The base task's attribute holding the remote buffer, and its data length when the task starts.
    remote = "src"
    remote_data_len = 8
    name = ""

    def set_sync_event(self, event: SyncEventRemoteNetHandle) -> None:
        assert isinstance(event, EmuSyncEventRemoteNet)
        self.event = event

    def _aim_remote(self) -> None:
        """Point the remote buffer at the peer's value (again: the base task moves its data)."""
        event = self.event
        if event is None or event.destroyed:
            raise Fail(INVALID, "the task has no remote sync event (or it was destroyed)")
        b: EmuBuf = getattr(self, self.remote)
        b.mmap, b.head, b.len, b.data, b.data_len = event.mmap, event.addr, 8, event.addr, self.remote_data_len
        b.refcount = 1

    def get_result_len(self) -> int:
        return 0

    def set_add_data(self, add: int) -> None:
        raise DocaInvalidValue(f"a remote sync event {self.name} task has no add data")

    def get_add_data(self) -> int:
        return 0


class EmuRdmaTaskRemoteNetSyncEventGet(_SyncEventTask, EmuRdmaTaskRead):
    """``doca_rdma_task_remote_net_sync_event_get``: the peer's value appended to the local destination."""

    __slots__ = ("event",)
    name = "get"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.event = None
        self.src = EmuBuf(_NO_HOME)

    def _start(self) -> None:
        self._aim_remote()
        super()._start()

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.dst,)  # the user's; the stand-in for the peer's value is the task's own

    def set_buf(self, buf: BufHandle) -> None:
        self.set_dst_buf(buf)

    def get_result_len(self) -> int:
        return self.nbytes if self.status == 0 else 0


class EmuRdmaTaskRemoteNetSyncEventNotifySet(_SyncEventTask, EmuRdmaTaskWrite):
    """``doca_rdma_task_remote_net_sync_event_notify_set``: the peer's value set from the local source's 8 bytes."""

    __slots__ = ("event",)
    remote, remote_data_len, name = "dst", 0, "notify-set"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.event = None
        self.dst = EmuBuf(_NO_HOME)

    def _start(self) -> None:
        src = self.src
        if src is None or src.next is not None or src.data_len != 8:
            raise Fail(INVALID, "the notify-set source must be one buffer holding the 8-byte value")
        self._aim_remote()
        super()._start()

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.src,)

    def set_buf(self, buf: BufHandle) -> None:
        self.set_src_buf(buf)


class EmuRdmaTaskRemoteNetSyncEventNotifyAdd(_SyncEventTask, EmuRdmaTaskAtomic):
    """``doca_rdma_task_remote_net_sync_event_notify_add``: an atomic add at the peer; the value before is
    appended to the local result buffer."""

    __slots__ = ("event",)
    remote, name = "dst", "notify-add"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.event = None
        self.dst = EmuBuf(_NO_HOME)

    def _start(self) -> None:
        self._aim_remote()
        super()._start()

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.result,)

    def set_buf(self, buf: BufHandle) -> None:
        self.set_result_buf(buf)

    def set_add_data(self, add: int) -> None:
        self._settable("set_add_data")
        self.add = add & _U64

    def get_add_data(self) -> int:
        return self.add


_CLASSES: dict[str, type[EmuTask]] = {
    "get": EmuRdmaTaskRemoteNetSyncEventGet,
    "notify_set": EmuRdmaTaskRemoteNetSyncEventNotifySet,
    "notify_add": EmuRdmaTaskRemoteNetSyncEventNotifyAdd,
}
# Per rdma ctx, made on first use (set_conf, idle): the ctx builds every pool it holds at start.
_pools: weakref.WeakKeyDictionary[EmuRdma, dict[str, TaskPool[EmuTask]]] = weakref.WeakKeyDictionary()


def task_pool(rdma: RdmaHandle, kind: str) -> TaskPool[EmuTask]:
    assert isinstance(rdma, EmuRdma)
    if kind not in KINDS:
        raise DocaInvalidValue(f"no remote sync event task {kind!r}; one of {', '.join(KINDS)}")
    pools = _pools.setdefault(rdma, {})
    pool = pools.get(kind)
    if pool is None:
        pool = pools[kind] = TaskPool(rdma, _CLASSES[kind])
    return pool


def task_allocate_init(rdma: RdmaHandle, kind: str, conn: RdmaConnectionHandle, event: SyncEventRemoteNetHandle,
                       buf: BufHandle, add: int) -> Any:
    assert isinstance(rdma, EmuRdma)
    check_conn(rdma, conn)
    if not isinstance(event, EmuSyncEventRemoteNet) or event.destroyed:
        raise DocaInvalidValue("the remote sync event was destroyed or is not one")
    t = task_pool(rdma, kind).alloc()
    assert isinstance(t, _SyncEventTask) and isinstance(t, EmuTask)
    t.set_rdma_connection(conn)  # type: ignore[attr-defined]
    t.event = event
    t.set_buf(buf)  # type: ignore[attr-defined]
    if kind == "notify_add":
        t.set_add_data(add)
    return t


def cap_task_is_supported(kind: str, devinfo: DevInfoHandle) -> bool:
    if kind not in KINDS:
        raise DocaInvalidValue(f"no remote sync event task {kind!r}; one of {', '.join(KINDS)}")
    return True
