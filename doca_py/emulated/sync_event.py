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

The value and its blob format (:mod:`.sync_event_value`) and the ctx with its tasks
(:mod:`.sync_event_ctx`) have their own modules; every name is importable from here too.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable

from .._backend.protocols.core import DevHandle, DevInfoHandle
from ..errors import DocaBadState, DocaInvalidValue, DocaNotPermitted, DocaNotSupported
from ..memory import HEADER_SIZE, SharedMemory, find_shared
from ..types import AccessFlag as A
from . import export as ex
from .mmap import EmuMmap, dev_key, mmap_create_from_export
from .sync_event_ctx import (  # noqa: F401 - re-exported: their home was this module
    _RUNNING as _RUNNING,
    EmuSyncEventCtx as EmuSyncEventCtx,
    EmuSyncEventTaskGet as EmuSyncEventTaskGet,
    EmuSyncEventTaskNotifyAdd as EmuSyncEventTaskNotifyAdd,
    EmuSyncEventTaskNotifySet as EmuSyncEventTaskNotifySet,
    EmuSyncEventTaskWait as EmuSyncEventTaskWait,
    EmuSyncEventTaskWaitGt as EmuSyncEventTaskWaitGt,
    EmuSyncEventTaskWaitNeq as EmuSyncEventTaskWaitNeq,
    _needs_26 as _needs_26,
    _needs_26 as _needs_26,
    _needs_30 as _needs_30,
    _Pool26 as _Pool26,
    _SeTask as _SeTask,
    _Waiters as _Waiters,
)
from .sync_event_value import (  # noqa: F401 - re-exported
    _CRC as _CRC,
    _HEAD as _HEAD,
    _MASK as _MASK,
    _U64 as _U64,
    MAGIC as MAGIC,
    VERSION as VERSION,
    BlobKind as BlobKind,
    _Cell as _Cell,
    _owner_cells as _owner_cells,
    decode_blob as decode_blob,
    encode_blob as encode_blob,
    holds as holds,
)

__all__ = ["EmuSyncEvent", "EmuSyncEventCtx", "EmuSyncEventRemoteNet", "BlobKind", "encode_blob", "decode_blob",
           "sync_event_create", "sync_event_create_from_export", "sync_event_remote_net_create_from_export", "cap"]

#: What an event's internal mmap grants: the value is read, written and added to by every location.
_PERMS = int(A.LOCAL_READ_WRITE | A.PCI_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE | A.RDMA_ATOMIC)


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
        #: The value's address in this process (the event's own shared memory, or what ``set_addr`` /
        #: ``set_doca_buf`` gave); 0 for an import.
        self.addr = 0
        if cell is None:
            self.shm = SharedMemory(8)
            self._view = self.shm.buffer[:8]
            self.addr = self.shm.address
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

    def set_addr(self, addr: int) -> None:
        """``doca_sync_event_set_addr``: keep the value in the caller's 8 bytes at *addr* (this process's
        memory, 64-bit aligned) instead of the event's own. Another process reaches it through an export
        only when the memory is shareable (a doca_py :class:`~doca_py.memory.SharedMemory`)."""
        self._configurable("set_addr")
        if not addr or addr % 8:
            raise DocaInvalidValue(f"set_addr: the value needs 8 bytes aligned to 8, got address {addr:#x}")
        view = memoryview((ctypes.c_char * 8).from_address(addr)).cast("B")
        self._place(addr, lambda write: view, view)

    def set_doca_buf(self, buf: object) -> None:
        """``doca_sync_event_set_doca_buf``: keep the value in *buf*'s 8-byte data section (one buffer of a
        started local mmap that grants writes); every access checks the map is still there."""
        from .buf import EmuBuf

        self._configurable("set_doca_buf")
        if not isinstance(buf, EmuBuf) or not buf.refcount or buf.mmap is None:
            raise DocaInvalidValue("set_doca_buf needs an allocated doca_buf")
        if buf.next is not None or buf.prev is not None:
            raise DocaInvalidValue("set_doca_buf takes one buffer, not a buffer list")
        m, addr = buf.mmap, buf.data
        if buf.data_len != 8:
            raise DocaNotPermitted(f"set_doca_buf: the buffer's data section is {buf.data_len} bytes, not 8")
        if m.from_export or not m.writable:
            raise DocaNotPermitted("set_doca_buf: the buffer's mmap must be local and grant writes "
                                   "(read, write and atomic permissions)")
        if addr % 8:
            raise DocaInvalidValue(f"set_doca_buf: the value needs 8 bytes aligned to 8, got address {addr:#x}")
        m.view(addr, 8, True)  # the map reaches it now
        self._place(addr, lambda write: m.view(addr, 8, write), None)

    def _place(self, addr: int, at: Callable[[bool], memoryview], view: memoryview | None) -> None:
        shared = find_shared(addr, 8)
        fd, off = (shared.fd, HEADER_SIZE + addr - shared.address) if shared is not None else (-1, 0)
        self._release_own()
        self._view, self.addr = view, addr
        self.cell = _Cell(at, fd, off, threading.Lock())

    def _release_own(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None
        if self.shm is not None:
            self.shm.close()
            self.shm = None

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
        m = EmuMmap()
        m.set_memrange(self.addr, 8)
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
        self._release_own()
        if self.imported is None:  # a placed value's memory is the caller's: the event no longer reaches it
            self.cell = _Cell(self._own_view, -1, 0, threading.Lock())
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
    elif name == "task_wait_gt_is_supported":
        _needs_26(f"doca_sync_event_cap_{name}")  # 3.0 dropped it: refused, as natively (the symbol is absent)
    need = _CAPS[name]
    return need is None or (bool(need) and devinfo.cap(need))
