"""Emulated ``doca_sync_event``: a 64-bit value in shareable memory, its exports and its ctx.

The value lives in the event's own :class:`~doca_py.memory.SharedMemory`. An export is an export of an
internal mmap over those 8 bytes (:mod:`.mmap`, :mod:`.export`, :mod:`.memshare`), wrapped in a checked
sync-event blob::

    magic "DOCAPYSE" | version u16 | kind u8 | 0 u8 | inner length u32 | mmap export blob | crc32 u32

so an import gets the same isolation as an mmap's: the exporter checks the inner blob's key before it
hands the memfd over (``SCM_RIGHTS``), every access re-checks that the export is live, and stopping or
destroying the event revokes it everywhere. A remote-PCI import maps the value; a remote-net import is
what the RDMA remote sync-event tasks aim at (the peer serves them on its own event).

Read-modify-write operations lock the value: a thread lock in the process, and a POSIX record lock on
the memfd's 8 bytes across processes (the exporter and its remote-PCI importers).
"""

from __future__ import annotations

import enum
import fcntl
import os
import struct
import threading
import time
import weakref
import zlib
from collections.abc import Callable
from typing import Any, cast

from .._backend.protocols.core import DevHandle, DevInfoHandle
from ..errors import (
    DocaBadState,
    DocaError,
    DocaInvalidValue,
    DocaNotPermitted,
    DocaNotSupported,
    DocaUnsupportedVersion,
)
from ..memory import HEADER_SIZE, SharedMemory
from ..types import AccessFlag as A
from . import export as ex
from . import version as emu_version
from .ctx import FLUSHED, EmuCtx, EmuTask, TaskPool, complete_task
from .mmap import EmuMmap, dev_key, mmap_create_from_export

__all__ = ["EmuSyncEvent", "EmuSyncEventCtx", "EmuSyncEventRemoteNet", "BlobKind", "encode_blob", "decode_blob",
           "sync_event_create", "sync_event_create_from_export", "sync_event_remote_net_create_from_export", "cap"]

MAGIC = b"DOCAPYSE"
VERSION = 1
_HEAD = struct.Struct("<8sHBxI")
_CRC = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_MASK = (1 << 64) - 1
_RUNNING = 2
#: What an event's internal mmap grants: the value is read, written and added to by every location.
_PERMS = int(A.LOCAL_READ_WRITE | A.PCI_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE | A.RDMA_ATOMIC)


class BlobKind(enum.IntEnum):
    """Which ``doca_sync_event_export_to_remote_*`` made a blob."""

    PCI = 1
    NET = 2


def encode_blob(kind: BlobKind, inner: bytes) -> bytes:
    """A sync-event blob around the mmap export blob *inner*."""
    body = _HEAD.pack(MAGIC, VERSION, kind, len(inner)) + inner
    return body + _CRC.pack(zlib.crc32(body))


def decode_blob(data: bytes, want: BlobKind) -> ex.Blob:
    """Check a sync-event blob of kind *want*; the decoded mmap blob inside (anything malformed is
    ``DocaInvalidValue``, another format version ``DocaUnsupportedVersion``)."""
    if len(data) < _HEAD.size or data[:8] != MAGIC:
        raise DocaInvalidValue("not a doca_py sync event export blob (bad magic or truncated)")
    _, version, kind, n = _HEAD.unpack_from(data)
    if version != VERSION:
        raise DocaUnsupportedVersion(f"sync event blob version {version}, this build reads version {VERSION}")
    if len(data) != _HEAD.size + n + _CRC.size:
        raise DocaInvalidValue(f"sync event blob is {len(data)} bytes, its header says {_HEAD.size + n + _CRC.size}")
    if zlib.crc32(data[:-_CRC.size]) != _CRC.unpack_from(data, len(data) - _CRC.size)[0]:
        raise DocaInvalidValue("sync event blob is corrupt (checksum mismatch)")
    if kind != want:
        other = {BlobKind.PCI: "export_to_remote_pci", BlobKind.NET: "export_to_remote_net"}
        raise DocaInvalidValue(f"the blob was made by {other.get(kind, f'kind {kind}')}; this import needs one "
                               f"from {other[want]}")
    inner = ex.decode(bytes(data[_HEAD.size:_HEAD.size + n]))
    if inner.length != 8 or inner.kind is not (ex.ExportKind.PCI if want is BlobKind.PCI else ex.ExportKind.RDMA):
        raise DocaInvalidValue("the sync event blob does not describe an exported 64-bit value")
    return inner


class _Cell:
    """The 64-bit value and its locks. *at(write)* is a view of its 8 bytes after the access checks."""

    __slots__ = ("at", "fd", "off", "lock")

    def __init__(self, at: Callable[[bool], memoryview], fd: int, off: int, lock: threading.Lock) -> None:
        self.at, self.fd, self.off, self.lock = at, fd, off, lock

    def _locked(self, write: bool, fn: Callable[[memoryview], int]) -> int:
        with self.lock:
            view = self.at(write)  # first: a revoked import fails here, before touching the memfd
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_EX, 8, self.off)
            except OSError as exc:
                raise DocaNotPermitted(f"the sync event's memory is gone: {exc}") from None
            try:
                return fn(view)
            finally:
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 8, self.off)

    def read(self) -> int:
        return self._locked(False, lambda v: int(_U64.unpack_from(v)[0]))

    def write(self, value: int) -> None:
        def put(v: memoryview) -> int:
            _U64.pack_into(v, 0, value & _MASK)
            return 0

        self._locked(True, put)

    def add(self, value: int) -> int:
        def rmw(v: memoryview) -> int:
            old = int(_U64.unpack_from(v)[0])
            _U64.pack_into(v, 0, (old + value) & _MASK)
            return old

        return self._locked(True, rmw)


# The owner's cell of each internal mmap: a same-process import shares its locks.
_owner_cells: weakref.WeakKeyDictionary[EmuMmap, _Cell] = weakref.WeakKeyDictionary()


def _needs_30(fn: str) -> None:
    """DOCA 2.6 has no *fn* (its header waits only for greater-than): refused in the emulator's 2.6 mode as
    the native backend refuses it on a 2.6 runtime."""
    if emu_version.VERSION < (3, 0):
        raise DocaNotSupported(f"{fn} is exported from DOCA 3.0; the emulator presents DOCA "
                               f"{emu_version.VERSION[0]}.{emu_version.VERSION[1]} (DOCA_PY_EMU_VERSION)")


def _only_26(fn: str) -> None:
    """DOCA 3.0 dropped the 2.6 wait_gt task (wait_eq and wait_neq replace it): refused from 3.0 on, as the
    native backend refuses the function a 3.x library does not export."""
    if emu_version.VERSION >= (3, 0):
        raise DocaNotSupported(f"{fn} is exported up to DOCA 2.6 (3.0 replaced the wait_gt task with wait_eq and "
                               f"wait_neq); the emulator presents DOCA {emu_version.VERSION[0]}."
                               f"{emu_version.VERSION[1]} (DOCA_PY_EMU_VERSION)")


class _Pool26:
    """A task type the presented DOCA lacks (2.6's eq/neq waits, 3.x's gt wait): configuring it is refused."""

    def __init__(self, fn: str, refuse: Callable[[str], None] = _needs_30) -> None:
        self.fn = fn
        self.refuse = refuse

    def set_conf(self, *args: object) -> None:
        self.refuse(self.fn)


def holds(op: str, current: int, value: int, mask: int) -> bool:
    """Whether ``wait_<op>`` on *current* is satisfied."""
    v = current & mask
    if op == "gt":
        return v > value
    if op == "eq":
        return v == value
    return v != value


class EmuSyncEvent:
    """Emulated ``doca_sync_event``."""

    def __init__(self, imported: EmuMmap | None = None, cell: _Cell | None = None) -> None:
        self.publishers: set[str] = set()
        self.subscribers: set[str] = set()
        self.cpu_devs: list[DevHandle] = []
        self.mode = ""  # "standalone" after start, "ctx" after as_ctx
        self.started = False
        self.destroyed = False
        self.imported = imported
        self.shm: SharedMemory | None = None
        self._view: memoryview | None = None
        self.exports: dict[tuple[BlobKind, str], tuple[EmuMmap, bytes]] = {}
        self.ctx: EmuSyncEventCtx | None = None
        if cell is None:
            self.shm = SharedMemory(8)
            self._view = self.shm.buffer[:8]
            cell = _Cell(self._own_view, self.shm.fd, HEADER_SIZE, threading.Lock())
        self.cell = cell

    def _own_view(self, write: bool) -> memoryview:
        view = self._view
        if view is None:
            raise DocaBadState("the sync event was destroyed")
        return view

    # -- configuration ----------------------------------------------------------------------------
    def _configurable(self, what: str) -> None:
        if self.imported is not None:
            raise DocaNotPermitted(f"{what}: a sync event created from an export cannot be configured")
        if self.started or (self.ctx is not None and self.ctx.state != 0):
            raise DocaBadState(f"{what}: the sync event is started; configure it before start")

    def _location(self, where: set[str], what: str, name: str, dev: DevHandle | None = None) -> None:
        self._configurable(what)
        where.add(name)
        if dev is not None and dev not in self.cpu_devs:
            self.cpu_devs.append(dev)

    def add_publisher_location_cpu(self, dev: DevHandle) -> None:
        self._location(self.publishers, "add_publisher_location_cpu", "cpu", dev)

    def add_publisher_location_remote_pci(self) -> None:
        self._location(self.publishers, "add_publisher_location_remote_pci", "remote_pci")

    def add_publisher_location_remote_net(self) -> None:
        self._location(self.publishers, "add_publisher_location_remote_net", "remote_net")

    def add_subscriber_location_cpu(self, dev: DevHandle) -> None:
        self._location(self.subscribers, "add_subscriber_location_cpu", "cpu", dev)

    def add_subscriber_location_remote_pci(self) -> None:
        self._location(self.subscribers, "add_subscriber_location_remote_pci", "remote_pci")

    # -- stand-alone use and the ctx -------------------------------------------------------------
    def start(self) -> None:
        if self.mode == "ctx":
            raise DocaNotPermitted("the sync event operates as a ctx: start it with doca_ctx_start")
        if self.started:
            raise DocaBadState("the sync event is already started")
        self.started, self.mode = True, "standalone"

    def stop(self) -> None:
        if not self.started:
            raise DocaBadState("the sync event is not started (stand-alone)")
        self._revoke()
        self.started = False

    def as_ctx(self) -> EmuSyncEventCtx:
        if self.mode == "standalone":
            raise DocaNotPermitted("a sync event started stand-alone cannot operate as a ctx")
        if self.ctx is None:
            self.ctx = EmuSyncEventCtx(self)
            self.mode = "ctx"
        return self.ctx

    def running(self) -> None:
        """Raise unless the event is started (stand-alone, or its ctx RUNNING)."""
        if not (self.started or (self.ctx is not None and self.ctx.state == _RUNNING)):
            raise DocaBadState("the sync event is not started")

    # -- synchronous operations ------------------------------------------------------------------
    def get(self) -> int:
        self.running()
        return self.cell.read()

    def update_set(self, value: int) -> None:
        self.running()
        self.cell.write(value)

    def update_add(self, value: int) -> int:
        self.running()
        return self.cell.add(value)

    def wait(self, op: str, value: int, mask: int, yield_cpu: bool) -> None:
        if op != "gt":
            _needs_30(f"doca_sync_event_wait_{op}{'_yield' if yield_cpu else ''}")
        self.running()
        spins = 0
        # A busy wait, as DOCA's; after a while it naps briefly so a peer sharing the CPU can publish.
        while not holds(op, self.cell.read(), value, mask):
            spins += 1
            if yield_cpu:
                os.sched_yield()
            time.sleep(0 if spins < 1000 else 50e-6)
            self.running()

    # -- exports ---------------------------------------------------------------------------------
    def export_to_remote_pci(self, dev: DevHandle) -> bytes:
        if "remote_pci" not in self.publishers | self.subscribers:
            raise DocaNotPermitted("export_to_remote_pci needs a remote PCI publisher or subscriber location")
        return self._export(BlobKind.PCI, dev)

    def export_to_remote_net(self) -> bytes:
        if "remote_net" not in self.publishers:
            raise DocaNotPermitted("export_to_remote_net needs a remote net publisher location")
        if not self.cpu_devs:
            raise DocaNotPermitted("export_to_remote_net needs a CPU location with a device (it registers the value)")
        return self._export(BlobKind.NET, self.cpu_devs[0])

    def _export(self, kind: BlobKind, dev: DevHandle) -> bytes:
        if self.imported is not None:
            raise DocaNotPermitted("a sync event created from an export cannot be exported again")
        self.running()
        key = (kind, dev_key(dev))
        hit = self.exports.get(key)
        if hit is not None:
            return hit[1]
        assert self.shm is not None
        m = EmuMmap()
        m.set_memrange(self.shm.address, 8)
        m.set_permissions(_PERMS)
        m.add_dev(dev)
        m.start()
        try:
            inner = m.export_pci(dev) if kind is BlobKind.PCI else m.export_rdma(dev)
        except BaseException:
            m.stop()
            m.destroy()
            raise
        _owner_cells[m] = self.cell
        blob = encode_blob(kind, inner)
        self.exports[key] = (m, blob)
        return blob

    def _revoke(self) -> None:
        for m, _ in self.exports.values():
            m.destroy()  # revokes every import of it, here and in other processes
        self.exports.clear()

    def destroy(self) -> None:
        if self.ctx is not None and self.ctx.state != 0:
            raise DocaBadState("destroy needs the sync event's ctx idle: stop it first")
        self._revoke()
        if self.ctx is not None and not self.ctx.destroyed:
            self.ctx.destroy()
        if self.imported is not None:
            self.imported.destroy()
        if self._view is not None:
            self._view.release()
            self._view = None
        if self.shm is not None:
            self.shm.close()
            self.shm = None
        self.started = False
        self.destroyed = True


class EmuSyncEventRemoteNet:
    """Emulated ``doca_sync_event_remote_net``: the peer's exported value, reached over RDMA."""

    def __init__(self, mmap: EmuMmap, blob: ex.Blob) -> None:
        self.mmap = mmap  # imported from the inner RDMA blob: remote tasks address blob.addr in it
        self.addr = blob.addr
        self.destroyed = False

    def destroy(self) -> None:
        self.mmap.destroy()
        self.destroyed = True


# -- the ctx and its tasks ----------------------------------------------------------------------


class _SeTask(EmuTask):
    """A task on the ctx's own event."""

    __slots__ = ("value", "mask", "result")
    kind = "sync_event"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.value = 0
        self.mask = _MASK
        self.result = 0

    @property
    def event(self) -> EmuSyncEvent:
        ctx = self.ctx
        assert isinstance(ctx, EmuSyncEventCtx)
        return ctx.event

    def _settable_value(self, what: str, value: int) -> None:
        self._settable(what)
        self.value = value & _MASK

    # The getters and setters of every task type, over value/mask/result.
    def get_ret_val(self) -> int:
        return self.result

    def get_fetched_val(self) -> int:
        return self.result

    def set_set_val(self, value: int) -> None:
        self._settable_value("set_set_val", value)

    def get_set_val(self) -> int:
        return self.value

    def set_inc_val(self, value: int) -> None:
        self._settable_value("set_inc_val", value)

    def get_inc_val(self) -> int:
        return self.value

    def set_wait_val(self, value: int) -> None:
        self._settable_value("set_wait_val", value)

    def get_wait_val(self) -> int:
        return self.value

    def set_mask(self, mask: int) -> None:
        self._settable("set_mask")
        self.mask = mask & _MASK

    def get_mask(self) -> int:
        return self.mask


class EmuSyncEventTaskGet(_SeTask):
    """``doca_sync_event_task_get``."""

    __slots__ = ()

    def _execute(self) -> int:
        self.result = self.event.cell.read()
        return 0


class EmuSyncEventTaskNotifySet(_SeTask):
    """``doca_sync_event_task_notify_set``."""

    __slots__ = ()

    def _execute(self) -> int:
        self.event.cell.write(self.value)
        return 0


class EmuSyncEventTaskNotifyAdd(_SeTask):
    """``doca_sync_event_task_notify_add``."""

    __slots__ = ()

    def _execute(self) -> int:
        self.result = self.event.cell.add(self.value)
        return 0


class EmuSyncEventTaskWait(_SeTask):
    """``doca_sync_event_task_wait_eq`` / ``_wait_neq``: in flight until the masked value matches; the Pe
    polls it, as DOCA's wait tasks are polled."""

    __slots__ = ()
    op = "eq"

    def _execute(self) -> int:  # never: _begin polls
        raise AssertionError("wait tasks are polled")

    def _begin(self) -> None:
        ctx = self.ctx
        assert isinstance(ctx, EmuSyncEventCtx)
        if not self.poll_once():
            ctx.waiting.add(self)

    def poll_once(self) -> bool:
        """Complete the task if its condition holds (or it fails); whether it completed."""
        try:
            if self.ctx.state != _RUNNING:
                self.status = FLUSHED
            elif holds(self.op, self.event.cell.read(), self.value, self.mask):
                self.status = 0
            else:
                return False
        except DocaError as exc:
            self.status, self.reason = exc.code, exc.detail
        complete_task(self)
        return True


class EmuSyncEventTaskWaitNeq(EmuSyncEventTaskWait):
    """``doca_sync_event_task_wait_neq``."""

    __slots__ = ()
    op = "neq"


class EmuSyncEventTaskWaitGt(EmuSyncEventTaskWait):
    """``doca_sync_event_task_wait_gt`` (DOCA 2.6; 3.0 replaced it with wait_eq and wait_neq)."""

    __slots__ = ()
    op = "gt"


class _Waiters:
    """The ctx's wait tasks in flight, polled by every progress of its Pe (a Pe poller)."""

    def __init__(self, ctx: EmuSyncEventCtx) -> None:
        self.ctx = ctx
        self.tasks: list[EmuSyncEventTaskWait] = []

    def add(self, task: EmuSyncEventTaskWait) -> None:
        self.tasks.append(task)
        pe = self.ctx.pe
        if pe is not None and self not in pe.pollers:
            pe.pollers = [*pe.pollers, self]  # replaced, never mutated (a progress may be iterating it)

    def poll(self) -> bool:
        tasks, self.tasks = self.tasks, []
        done = False
        for t in tasks:
            if t.poll_once():
                done = True
            else:
                self.tasks.append(t)
        pe = self.ctx.pe
        if not self.tasks and pe is not None and self in pe.pollers:
            pe.pollers = [p for p in pe.pollers if p is not self]
        return done

    def arm(self) -> bool:
        # The value may change in another process, which rings no doorbell here: a Pe with wait tasks in
        # flight does not sleep (it polls, as the hardware does).
        return bool(self.tasks)


class EmuSyncEventCtx(EmuCtx):
    """``doca_sync_event_as_ctx``: the event's ctx (it does not own the event)."""

    def __init__(self, event: EmuSyncEvent) -> None:
        super().__init__()
        self.event = event
        self.get = TaskPool(self, EmuSyncEventTaskGet, "sync_event")
        self.notify_set = TaskPool(self, EmuSyncEventTaskNotifySet, "sync_event")
        self.notify_add = TaskPool(self, EmuSyncEventTaskNotifyAdd, "sync_event")
        self.wait_eq = TaskPool(self, EmuSyncEventTaskWait, "sync_event")
        self.wait_neq = TaskPool(self, EmuSyncEventTaskWaitNeq, "sync_event")
        if emu_version.VERSION < (3, 0):  # 2.6 has wait_gt tasks instead
            self.wait_eq = cast(Any, _Pool26("doca_sync_event_task_wait_eq_set_conf"))
            self.wait_neq = cast(Any, _Pool26("doca_sync_event_task_wait_neq_set_conf"))
            self.wait_gt = TaskPool(self, EmuSyncEventTaskWaitGt, "sync_event")
        else:
            self.wait_gt = cast(Any, _Pool26("doca_sync_event_task_wait_gt_set_conf", _only_26))
        self.waiting = _Waiters(self)

    def destroy(self) -> None:
        if not self.destroyed:  # the event's destroy detaches its ctx too
            super().destroy()

    def _configurable(self, what: str) -> None:
        if self.state != 0:  # doca_sync_event.h: the task set_conf of a ctx not idle is NOT_PERMITTED
            raise DocaNotPermitted(f"{what}: " * bool(what) + "configure the sync event's ctx while it is idle")

    def _on_start(self) -> None:
        if self.event.destroyed:
            raise DocaBadState("the sync event was destroyed")

    def _alloc(self, pool: TaskPool[EmuTask], value: int = 0, mask: int = _MASK) -> _SeTask:
        t = pool.alloc()
        assert isinstance(t, _SeTask)
        t.value, t.mask, t.result = value & _MASK, mask & _MASK, 0
        return t

    def task_get_alloc_init(self) -> _SeTask:
        return self._alloc(self.get)

    def task_notify_set_alloc_init(self, value: int) -> _SeTask:
        return self._alloc(self.notify_set, value)

    def task_notify_add_alloc_init(self, value: int) -> _SeTask:
        return self._alloc(self.notify_add, value)

    def task_wait_eq_alloc_init(self, value: int, mask: int) -> _SeTask:
        _needs_30("doca_sync_event_task_wait_eq_alloc_init")
        return self._alloc(self.wait_eq, value, mask)

    def task_wait_neq_alloc_init(self, value: int, mask: int) -> _SeTask:
        _needs_30("doca_sync_event_task_wait_neq_alloc_init")
        return self._alloc(self.wait_neq, value, mask)

    def task_wait_gt_alloc_init(self, value: int, mask: int) -> _SeTask:
        _only_26("doca_sync_event_task_wait_gt_alloc_init")
        return self._alloc(self.wait_gt, value, mask)


# -- creation ---------------------------------------------------------------------------------------


def sync_event_create() -> EmuSyncEvent:
    """``doca_sync_event_create``."""
    return EmuSyncEvent()


def sync_event_create_from_export(dev: DevHandle, blob: bytes) -> EmuSyncEvent:
    """``doca_sync_event_create_from_export``: the value of a peer's ``export_to_remote_pci``."""
    if not dev.devinfo.cap("mmap_create_from_export_pci"):
        raise DocaNotSupported("the device cannot create a sync event from a PCI export")
    inner = decode_blob(bytes(blob), BlobKind.PCI)
    m = mmap_create_from_export(bytes(blob)[_HEAD.size:-_CRC.size], dev)
    owner = _owner_cells.get(m._peer) if m._peer is not None else None
    imp = m._import
    if owner is not None:  # the exporter is this process: share its locks
        fd, off, lock = owner.fd, owner.off, owner.lock
    elif imp is not None and imp.fd >= 0:
        fd, off, lock = imp.fd, HEADER_SIZE + inner.offset, threading.Lock()
    else:
        m.destroy()
        raise DocaNotSupported("the exporter's sync event is not reachable from this process")
    addr = inner.addr
    return EmuSyncEvent(imported=m, cell=_Cell(lambda write: m.view(addr, 8, write), fd, off, lock))


def sync_event_remote_net_create_from_export(dev: DevHandle, blob: bytes) -> EmuSyncEventRemoteNet:
    """``doca_sync_event_remote_net_create_from_export``: a peer's ``export_to_remote_net``."""
    inner = decode_blob(bytes(blob), BlobKind.NET)
    return EmuSyncEventRemoteNet(mmap_create_from_export(bytes(blob)[_HEAD.size:-_CRC.size], dev), inner)


_CAPS: dict[str, str | None] = {
    "is_create_from_export_supported": "mmap_create_from_export_pci",
    "is_export_to_remote_pci_supported": "mmap_export_pci",
    "remote_net_is_create_from_export_supported": None,
    "is_export_to_remote_net_supported": None,
    "task_get_is_supported": None,
    "task_notify_set_is_supported": None,
    "task_notify_add_is_supported": None,
    "task_wait_eq_is_supported": None,
    "task_wait_neq_is_supported": None,
    "task_wait_gt_is_supported": None,
    "is_export_to_dpa_supported": "",
    "is_export_to_gpu_supported": "",
}
"""``doca_sync_event_cap_<name>``: the device capability it needs (``None``: every device, ``""``: none —
no DPA or GPU here)."""


def cap(name: str, devinfo: DevInfoHandle) -> bool:
    if name not in _CAPS:
        raise DocaInvalidValue(f"no sync event capability {name!r}")
    if name in ("task_wait_eq_is_supported", "task_wait_neq_is_supported"):
        _needs_30(f"doca_sync_event_cap_{name}")
    elif name == "task_wait_gt_is_supported" and emu_version.VERSION >= (3, 0):
        return False  # as the native backend answers for a task type of another DOCA version
    need = _CAPS[name]
    return need is None or (bool(need) and devinfo.cap(need))

