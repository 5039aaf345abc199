"""Emulated ``doca_mmap``: local ranges, export blobs and imported (peer) ranges.

Every access a software engine makes goes through :meth:`EmuMmap.ptr`, which checks
the range, the permission for that kind of access, and — for imported maps —
that the exporter has not revoked the export. Nothing outside a registered or
imported range is ever touched.
"""

from __future__ import annotations

import ctypes
import dataclasses
import mmap as _mmap
import os
import secrets
import sysconfig
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np

from .._backend.protocols.core import DevHandle, DevInfoHandle
from ..errors import (
    DocaAlreadyExist,
    DocaBadState,
    DocaError,
    DocaInvalidValue,
    DocaNoMemory,
    DocaNotFound,
    DocaNotPermitted,
    DocaNotSupported,
)
from ..memory import HEADER_SIZE, PAGE_SIZE, find_shared
from ..types import AccessFlag as A
from . import export as ex
from . import memshare, strict
from . import version as emu_version

if TYPE_CHECKING:
    from .buf import EmuBuf

__all__ = ["EmuMmap", "mmap_create", "mmap_create_from_export", "Access", "dev_key", "reachable",
           "cap_is_export_pci_supported", "cap_is_create_from_export_pci_supported"]

DEFAULT_MAX_NUM_DEVICES = 16

# Same-process imports resolve through the exporter's key; works for any buffer.
_local_exports: weakref.WeakValueDictionary[bytes, EmuMmap] = weakref.WeakValueDictionary()
_local_lock = threading.Lock()


class Access:
    """Who is touching memory: picks which permission bits apply."""

    LOCAL = 0  # a device of this process (DMA, EC, compress) on a local map
    PCI = 1  # a device across PCIe: DMA on a PCI-imported map
    RDMA = 2  # a remote RDMA peer


# Plain ints: IntFlag arithmetic costs a microsecond per access on the hot path.
_READ_BITS: dict[int, int | None] = {Access.LOCAL: None, Access.PCI: int(A.PCI_READ_ONLY | A.PCI_READ_WRITE),
                                     Access.RDMA: int(A.RDMA_READ)}
_WRITE_BITS: dict[int, int | None] = {Access.LOCAL: int(A.LOCAL_READ_WRITE), Access.PCI: int(A.PCI_READ_WRITE),
                                      Access.RDMA: int(A.RDMA_WRITE)}
_slot_unpack = ex.SLOT_UNPACK  # reads an export slot record (_Import.probes)
#: A free-threaded build (``--disable-gil``): memoryviews and mmap objects count their exports
#: without atomics, so none of them is used by two threads (see :class:`_ThreadViews`).
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _readonly_view(m: _mmap.mmap, n: int) -> ctypes.Array[ctypes.c_char]:
    """The first *n* bytes of *m* as a ctypes array at their address: any thread may read it (a
    ctypes object counts no exports), valid while *m* is open. numpy gives the address of a
    read-only mapping (ctypes ``from_buffer`` wants a writable one); its export is dropped here."""
    addr = int(np.frombuffer(m, dtype=np.uint8, count=n).ctypes.data)
    return (ctypes.c_char * n).from_address(addr)


class _Import:
    """The importer's mapping of an exporter's memfd (other process), handed over by the
    exporter for a valid blob (:mod:`.memshare`).

    For a re-export the exporter also hands over its re-export table: access then needs the
    re-exporter's record and the record of the export it covers (the host's), both live."""

    def __init__(self, blob: ex.Blob, raw: bytes, writable: bool) -> None:
        fd, extra = memshare.request_fd(blob.pid, raw)
        self.fd = -1  # a PCI import keeps the memfd: a re-export of it hands the memfd on (_grant)
        self.table: _mmap.mmap | None = None
        try:
            if extra:
                self.table = _mmap.mmap(extra[0], HEADER_SIZE, access=_mmap.ACCESS_READ)
            writable = writable and _fd_writable(fd)
            access = _mmap.ACCESS_WRITE if writable else _mmap.ACCESS_READ
            self.header = _mmap.mmap(fd, HEADER_SIZE, access=_mmap.ACCESS_READ)
            start = blob.offset - blob.offset % PAGE_SIZE
            self.skew = blob.offset - start
            size = os.fstat(fd).st_size - HEADER_SIZE
            if blob.offset + blob.length > size:
                raise DocaInvalidValue("export blob range lies outside the exporter's memory")
            self.data = _mmap.mmap(fd, self.skew + blob.length, access=access, offset=HEADER_SIZE + start)
            if blob.kind is ex.ExportKind.PCI:
                self.fd = fd
        except (OSError, ValueError) as exc:
            raise DocaInvalidValue(f"cannot map the exported memory: {exc}") from None
        finally:
            for x in extra:
                os.close(x)
            if self.fd != fd:
                os.close(fd)
        # numpy reads the address of read-only mappings too (ctypes needs writable ones).
        base = int(np.frombuffer(self.data, dtype=np.uint8).ctypes.data)
        # The export records are read through ctypes views, not the mmap objects: every worker of the
        # process checks them on each access, and an mmap's export count is not thread-safe without the GIL.
        self.header_view = _readonly_view(self.header, HEADER_SIZE)
        self.table_view = _readonly_view(self.table, HEADER_SIZE) if self.table is not None else None
        self.base = base + self.skew
        self.blob = blob
        self.digest = ex.key_digest(blob.key)
        self.host_blob, self.host_digest = blob, self.digest  # the record of the memory's owner
        up = ex.upstream_of(self.table_view, blob, self.digest) if self.table_view is not None else None
        if up is not None:
            self.host_blob, self.host_digest = dataclasses.replace(blob, slot=up[0]), up[1]
        if (self.table_view is not None and up is None) or not self.live():
            self.close()
            raise DocaNotPermitted("export blob key does not match a live export (revoked or forged)")
        # What live() reads on every access, precomputed (EmuMmap.ptr checks them inline).
        self.probes = ((ex.slot_probe(self.header_view, blob, self.digest),) if self.table_view is None else
                       (ex.slot_probe(self.table_view, blob, self.digest),
                        ex.slot_probe(self.header_view, self.host_blob, self.host_digest)))

    def live(self, blob: ex.Blob | None = None) -> bool:
        """Whether the exporter (and, for a re-export, the host under it) still exports the memory
        to *blob* (the importing map's, checked as it is now; default: the imported one)."""
        b, digest = (self.blob, self.digest) if blob is None or blob is self.blob else (blob, ex.key_digest(blob.key))
        if self.table_view is None:
            return ex.slot_matches(self.header_view, b, digest)
        return ex.slot_matches(self.table_view, b, digest) and ex.slot_matches(self.header_view, self.host_blob,
                                                                           self.host_digest)

    def close(self) -> None:
        self.data.close()
        self.header.close()
        if self.table is not None:
            self.table.close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _fd_writable(fd: int) -> bool:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR


def _exporter_of(b: ex.Blob) -> EmuMmap:
    """This process's map that exported *b*, after checking *b* against the export record.

    The exporter's own record decides what an import may do, never the blob. A PCI
    export is not an RDMA registration: RDMA access to a PCI import goes through the
    importer's own re-export (D.20), which lives only as long as the importer's map and
    the host's export both do."""
    with _local_lock:
        peer = _local_exports.get(b.key)
    if peer is None or peer.destroyed or not (peer.started or peer.from_export):
        raise DocaNotPermitted("export blob key does not match a live export (revoked or forged)")
    if (peer.addr, peer.length) != (b.addr, b.length):
        raise DocaInvalidValue("export blob range does not match the exporter's mmap")
    if peer._issued.get(b.key) != b:  # every field: kind, perms, and the fd, slot and offset named
        raise DocaNotPermitted("export blob does not match what the exporter exported (modified blob)")
    if peer.from_export:
        peer._check_live()  # a re-export: the host's export under it must still be live
    return peer


def _grant(raw: bytes) -> memshare.Grant:
    """The exporter's side of an import from another process: check *raw* against our
    own export records, then name the memfd to hand over and whether it may be written."""
    b = ex.decode(raw)
    if b.pid != os.getpid():
        raise DocaNotPermitted("export blob names another process")
    peer = _exporter_of(b)
    write_bit = A.PCI_READ_WRITE if b.kind is ex.ExportKind.PCI else A.RDMA_WRITE
    writable = bool(peer.perms & write_bit)
    if peer.from_export:  # a re-export: the host's memfd, under our revocation record
        table = next((t for t, slot in peer._slots if slot == b.slot and isinstance(t, ex.ReexportTable)), None)
        fd = peer._import.fd if peer._import is not None else -1
        if fd < 0:
            shm = find_shared(peer.addr, peer.length)  # the host is this process
            fd = -1 if shm is None else shm.fd
        if table is None or fd < 0:
            raise DocaNotSupported("the re-exported memory is not shareable across processes")
        return fd, writable, (table.fd,)
    shm = find_shared(peer.addr, peer.length)
    if shm is None:
        raise DocaNotSupported("the exported memory is not shareable across processes")
    return shm.fd, writable, ()


class EmuMmap:
    """Emulated ``doca_mmap``."""

    def __init__(self) -> None:
        self.addr = 0
        self.length = 0
        self.perms = int(A.LOCAL_READ_WRITE)
        self.devs: list[DevHandle] = []
        self.max_devs = DEFAULT_MAX_NUM_DEVICES
        self.thread_safe = False
        self.started = False
        self.destroyed = False
        self.num_bufs = 0
        self.exported = False
        self.kind = Access.LOCAL  # how engines reach the bytes
        self.from_export = False
        self.remote = False  # imported from another host: no local mapping
        self.blob: ex.Blob | None = None  # for imported maps
        self._peer: EmuMmap | None = None  # same-process import: the exporter
        self._import: _Import | None = None  # cross-process import: our mapping
        self._delta = 0  # local address = mmap address + delta
        self._exports: dict[ex.ExportKind, bytes] = {}
        self._slots: list[tuple[ex.ExportTable | ex.ReexportTable, int]] = []
        self._keys: list[bytes] = []
        self._issued: dict[bytes, ex.Blob] = {}  # each export's blob as issued, by key: imports must match it
        # Hot-path summary for local maps, valid while started: [lo, hi) and writability.
        self.fast = False
        self.hi = 0
        self.writable = False
        self.mv: memoryview | None = None  # byte view of a started local range
        # Bufs holding views of mv (EmuBuf.dview, EmuBuf.tail): dropped when the map stops, so a
        # cached view always means a started map, and the same start (writability) it was made in.
        self.viewers: set[EmuBuf] = set()
        self.reach: frozenset[str] = frozenset()  # PCI addresses of the devices added
        self.pins = 0  # strict mode: bufs of this map used by tasks in flight
        self.range_set = False

    def __repr__(self) -> str:
        kind = "imported" if self.from_export else "local"
        return f"<doca_mmap {kind} [{self.addr:#x}, +{self.length}) started={self.started}>"

    # -- configuration (IDLE only) ---------------------------------------------------------
    def _configurable(self, what: str, started_code: type[DocaError] = DocaNotPermitted) -> None:
        # DOCA 3.0: memrange/permissions on a started map are BAD_STATE, the device and
        # thread-safety settings NOT_PERMITTED.
        if self.from_export:
            raise DocaNotPermitted(f"{what}: an imported mmap cannot be configured")
        if self.started:
            raise started_code(f"{what}: mmap is started; configure it before start")

    def set_memrange(self, addr: int, length: int) -> None:
        self._configurable("set_memrange", DocaBadState)
        if self.range_set:
            raise DocaNotPermitted("set_memrange can be done only once per mmap")
        if addr <= 0 or length <= 0:
            raise DocaInvalidValue("memory range must have a non-NULL address and a positive length")
        self.addr, self.length = addr, length
        self.range_set = True

    def get_memrange(self) -> tuple[int, int]:
        if not self.length:
            raise DocaBadState("get_memrange: no memory range was set")
        return self.addr, self.length

    def set_permissions(self, flags: int) -> None:
        self._configurable("set_permissions", DocaBadState)
        if flags & ~int(sum(A)) or flags < 0:
            raise DocaInvalidValue(f"unknown access flag bits in {flags:#x}")
        self.perms = int(flags)

    def add_dev(self, dev: DevHandle) -> None:
        self._configurable("add_dev")
        if dev in self.devs or dev_key(dev) in self.reach:
            raise DocaAlreadyExist("device already added to this mmap")
        if len(self.devs) >= self.max_devs:
            raise DocaNoMemory(f"mmap already has max_num_devices={self.max_devs} devices")
        self.devs.append(dev)
        self.reach = self.reach | {dev_key(dev)}

    def rm_dev(self, dev: DevHandle) -> None:
        self._configurable("rm_dev")
        try:
            self.devs.remove(dev)
        except ValueError:
            raise DocaNotFound("device was not added to this mmap") from None
        self.reach = frozenset(dev_key(d) for d in self.devs)

    def set_max_num_devices(self, n: int) -> None:
        self._configurable("set_max_num_devices")
        if n <= 0 or n < len(self.devs):
            raise DocaInvalidValue(f"max_num_devices {n} is below the {len(self.devs)} devices added")
        self.max_devs = n

    def get_max_num_devices(self) -> int:
        return self.max_devs

    def enable_thread_safety(self) -> None:
        emu_version.require("doca_mmap_enable_thread_safety", (3, 0), "added after 2.6")
        self._configurable("enable_thread_safety")
        self.thread_safe = True

    def start(self) -> None:
        if self.from_export:
            raise DocaNotPermitted("an imported mmap is already usable; it cannot be started")
        if self.started:
            raise DocaBadState("mmap is already started")
        if not self.length:
            raise DocaBadState("set_memrange before start")
        self.started = True
        self.fast, self.hi = True, self.addr + self.length
        self.writable = bool(self.perms & A.LOCAL_READ_WRITE)
        # Small copies through a memoryview cost a third of a ctypes.memmove call.
        self.mv = memoryview((ctypes.c_char * self.length).from_address(self.addr)).cast("B")

    def stop(self) -> None:
        if self.from_export:
            raise DocaNotPermitted("an imported mmap cannot be stopped; destroy it")
        if not self.started:
            raise DocaBadState("mmap is not started")
        if self.num_bufs and not self.thread_safe:
            raise DocaNotPermitted(f"{self.num_bufs} doca_buf(s) still reference this mmap")
        if self.pins:
            raise strict.violation(self, f"stop while {self.pins} of its buffers are used by tasks in flight")
        self._revoke()
        self.started = self.fast = False
        self.mv = None
        self._drop_views()

    def _drop_views(self) -> None:
        for b in list(self.viewers):  # a copy: a thread-safe map's bufs may cache from other threads
            b._uncache()
            b.viewing = False
        self.viewers.clear()

    def _revoke(self) -> None:
        for table, slot in self._slots:
            table.revoke(slot)
        self._slots.clear()
        with _local_lock:
            for key in self._keys:
                _local_exports.pop(key, None)
        self._keys.clear()
        self._issued.clear()
        self._exports.clear()
        self.exported = False

    # -- export -----------------------------------------------------------------------------
    def _export(self, kind: ex.ExportKind, dev: DevHandle) -> bytes:
        if not self.started and not self.from_export:
            raise DocaNotPermitted(f"export_{kind.name.lower()}: mmap is not started")
        if dev not in self.devs:
            raise DocaNotFound(f"export_{kind.name.lower()}: device was not added to this mmap")
        need = A.PCI_READ_ONLY | A.PCI_READ_WRITE if kind is ex.ExportKind.PCI else A.RDMA_READ | A.RDMA_WRITE | A.RDMA_ATOMIC
        if not self.perms & need:
            raise DocaNotPermitted(f"export_{kind.name.lower()} needs a {kind.name}_* access flag")
        if self.from_export:
            return self._reexport(kind)
        cached = self._exports.get(kind)
        if cached is not None:
            return cached
        shm = find_shared(self.addr, self.length)
        if shm is not None:
            table = ex.ExportTable(shm)
            offset = self.addr - shm.address
            slot, key = table.add(self.perms, offset, self.length)
            self._slots.append((table, slot))
            fd = shm.fd
            memshare.serve(_grant)
        else:
            slot, key, offset, fd = ex.NO_SLOT, secrets.token_bytes(16), 0, ex.NO_FD
        with _local_lock:
            _local_exports[key] = self
        self._keys.append(key)
        issued = ex.Blob(kind, ex.boot_id(), os.getpid(), fd, slot, self.addr, self.length, offset, self.perms, key)
        self._issued[key] = issued
        blob = ex.encode(issued)
        self._exports[kind] = blob
        self.exported = True
        return blob

    def _reexport(self, kind: ex.ExportKind) -> bytes:
        # DOCA allows re-exporting a PCI import over RDMA (the storage zero-copy path, D.20). The
        # blob is this map's own export (our pid, a fresh key, a record in our re-export table),
        # so destroying this map revokes it, as DOCA ties an export to the map that made it.
        up = self.blob
        assert up is not None
        if up.kind is not ex.ExportKind.PCI or kind is not ex.ExportKind.RDMA:
            raise DocaNotPermitted("only a PCI-imported mmap can be re-exported, and only with export_rdma")
        cached = self._exports.get(kind)
        if cached is not None:
            return cached
        self._check_live()
        if up.fd != ex.NO_FD:  # the host's memory is shareable: other local processes may import it from us
            table, slot, key = ex.reexport_add(self.perms, up.offset, self.length, (up.slot, ex.key_digest(up.key)))
            self._slots.append((table, slot))
            fd = table.fd
            memshare.serve(_grant)
        else:
            slot, key, fd = ex.NO_SLOT, secrets.token_bytes(16), ex.NO_FD
        with _local_lock:
            _local_exports[key] = self
        self._keys.append(key)
        issued = ex.Blob(kind, ex.boot_id(), os.getpid(), fd, slot, self.addr, self.length, up.offset, self.perms,
                         key)
        self._issued[key] = issued
        blob = ex.encode(issued)
        self._exports[kind] = blob
        self.exported = True
        return blob

    def export_pci(self, dev: DevHandle) -> bytes:
        return self._export(ex.ExportKind.PCI, dev)

    def export_rdma(self, dev: DevHandle) -> bytes:
        return self._export(ex.ExportKind.RDMA, dev)

    def get_num_bufs(self) -> int:
        return 0 if self.thread_safe else self.num_bufs

    def get_exported(self) -> bool:
        return self.exported

    def get_from_export(self) -> bool:
        return self.from_export

    def destroy(self) -> None:
        if self.num_bufs and not self.thread_safe:
            raise DocaNotPermitted(f"{self.num_bufs} doca_buf(s) still reference this mmap")
        if self.num_bufs and strict.STRICT:
            raise strict.violation(self, f"destroy while {self.num_bufs} doca_buf(s) still reference it "
                                         f"(thread safety lets DOCA skip the check; the bufs would dangle)")
        self._revoke()  # an imported map's re-exports die with it too
        if self.started:
            self.started = self.fast = False
            self.mv = None
            self._drop_views()
        if self._import is not None:
            self._import.close()
            self._import = None
        self.destroyed = True

    # -- access by software engines ----------------------------------------------------------
    def ptr(self, addr: int, n: int, write: bool) -> int:
        """Process-local address of ``[addr, addr+n)`` after every check DOCA hardware makes."""
        if self.remote:
            raise DocaNotSupported("memory of another host: reach it with Rdma read/write tasks")
        if addr < self.addr or addr + n > self.addr + self.length or n < 0:
            raise DocaInvalidValue(
                f"[{addr:#x}, +{n}) is outside the mmap range [{self.addr:#x}, +{self.length})")
        if not (self.started or self.from_export) or self.destroyed:
            raise DocaBadState("mmap is not started")
        kind = self.kind
        bits = _WRITE_BITS[kind] if write else _READ_BITS[kind]
        if bits is not None and not self.perms & bits:
            raise DocaNotPermitted(f"mmap permissions {A(self.perms)!r} do not allow "
                                   f"{'writes' if write else 'reads'} by this access")
        if self.from_export:  # _check_live, inlined for a map of this process and for a direct import
            peer = self._peer
            if peer is not None:
                if peer.destroyed or not (peer.started or peer.from_export) or self.blob is None \
                        or self.blob.key not in peer._keys:
                    raise DocaNotPermitted("the exporter stopped or destroyed this mmap")
                if peer.from_export:
                    peer._check_live()
            else:
                imp = self._import
                if imp is not None and self.blob is imp.blob:
                    for view, pos, want in imp.probes:
                        if _slot_unpack(view, pos) != want:
                            raise DocaNotPermitted("the exporter stopped or destroyed this mmap")
                else:
                    self._check_live()
        return addr + self._delta

    def view(self, addr: int, n: int, write: bool) -> memoryview:
        """Byte view of ``[addr, addr+n)`` after the checks of :meth:`ptr`."""
        mv = self.mv
        if mv is not None and self.addr <= addr and addr + n <= self.hi and n >= 0 and (self.writable or not write):
            off = addr - self.addr
            return mv[off: off + n]
        p = self.ptr(addr, n, write)
        if n == 0:
            return memoryview(b"")
        return memoryview((ctypes.c_char * n).from_address(p)).cast("B")

    def _check_live(self) -> None:
        peer = self._peer
        if peer is not None:
            if peer.destroyed or not (peer.started or peer.from_export) or self.blob is None \
                    or self.blob.key not in peer._keys:
                raise DocaNotPermitted("the exporter stopped or destroyed this mmap")
            if peer.from_export:  # imported from a re-export: the host's export must be live too
                peer._check_live()
        elif self._import is not None and not self._import.live(self.blob):
            raise DocaNotPermitted("the exporter stopped or destroyed this mmap")


class _ThreadViews(EmuMmap):
    """An :class:`EmuMmap` on a free-threaded build: :attr:`mv` is a root view of the range per thread.

    A memoryview counts the views sliced from it (and its own buffer exports) with plain increments,
    so two threads slicing one root view can lose a count: the view is then released under the other
    thread ("operation forbidden on released memoryview object", "negative export count"). Each thread
    slices its own root, and a slice is freed by the thread that made it (free-threaded CPython frees
    an object in the thread that owns it), so each root's counts change in one thread only."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._root: memoryview | None = None
        super().__init__()

    @property
    def mv(self) -> memoryview | None:
        root = self._root
        if root is None:
            return None
        local = self._local
        mine: memoryview | None = getattr(local, "mv", None)
        if mine is None or local.of is not root:
            # A new root over the same ctypes array (root.obj: read, not exported).
            mine = local.mv = memoryview(root.obj).cast("B")
            local.of = root
        return mine

    @mv.setter
    def mv(self, view: memoryview | None) -> None:
        self._root = view  # made by start(); only its .obj is used (no thread slices it)


def _new_mmap() -> EmuMmap:
    return _ThreadViews() if FREE_THREADED else EmuMmap()


def dev_key(dev: DevHandle | None) -> str:
    """The identity of a device for reachability checks (its PCI address)."""
    return "" if dev is None else dev.devinfo.pci_addr_str()


def reachable(mmap: EmuMmap, key: str) -> bool:
    """Whether a ctx on the device *key* can reach *mmap* (the device was added, or imported with)."""
    return not key or key in mmap.reach


def mmap_create() -> EmuMmap:
    """``doca_mmap_create``."""
    return _new_mmap()


def mmap_create_from_export(blob: bytes, dev: DevHandle) -> EmuMmap:
    """``doca_mmap_create_from_export``: validate the blob, then map the peer memory."""
    b = ex.decode(bytes(blob))
    m = _new_mmap()
    m.from_export = True
    m.blob = b
    m.addr, m.length, m.perms = b.addr, b.length, b.perms
    m.devs.append(dev)
    m.reach = frozenset((dev_key(dev),))
    m.kind = Access.PCI if b.kind is ex.ExportKind.PCI else Access.RDMA
    if b.pid == os.getpid() and b.boot_id == ex.boot_id():
        peer = _exporter_of(b)
        m.perms = peer.perms
        m.kind = Access.PCI if b.kind is ex.ExportKind.PCI else Access.RDMA
        m._peer = peer
        m._delta = peer._delta  # a re-exporter's own import may be mapped elsewhere in this process
        return m
    if b.boot_id != ex.boot_id():
        if b.kind is not ex.ExportKind.RDMA:
            raise DocaNotSupported("a PCI export blob from another host cannot be imported")
        m.remote = True  # reachable only through Rdma read/write tasks
        return m
    if b.fd == ex.NO_FD:
        raise DocaNotSupported("the exporter's memory is not shareable across processes: "
                               "register memory from Mmap.allocate() to export it")
    writable = bool(b.perms & (A.PCI_READ_WRITE if b.kind is ex.ExportKind.PCI else A.RDMA_WRITE))
    m._import = _Import(b, bytes(blob), writable)
    m._delta = m._import.base - b.addr
    return m


def cap_is_export_pci_supported(devinfo: DevInfoHandle) -> bool:
    return devinfo.cap("mmap_export_pci")


def cap_is_create_from_export_pci_supported(devinfo: DevInfoHandle) -> bool:
    return devinfo.cap("mmap_create_from_export_pci")
