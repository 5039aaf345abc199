"""``doca_mmap``: memory registered for devices, and its export to peers.

```pycon
>>> mm = Mmap()
>>> view = mm.allocate(1 << 20)          # shareable, page-aligned; or mm.set_memrange(bytearray(...))
>>> mm.set_permissions(AccessFlag.LOCAL_READ_WRITE | AccessFlag.PCI_READ_WRITE)
>>> mm.add_dev(dev); mm.start()
>>> blob = mm.export_pci(dev)            # send it to the peer, which calls Mmap.create_from_export

```
"""

from __future__ import annotations

import ctypes
import sysconfig
import threading
from typing import Any

from ._args import expect
from ._backend import backend
from ._lifetime import DocaObject
from ._backend.protocols.core import MmapHandle
from .dev import Dev, DevInfo, devinfo_handle
from .errors import DocaBadState, DocaError, DocaInvalidValue, DocaNotSupported, lookup
from .memory import SharedMemory, buffer_address
from .types import AccessFlag

#: A free-threaded build: a memoryview counts the views sliced from it without atomics, so each thread
#: gets its own root view of a map's memory (:meth:`Mmap.buffer`, :meth:`Mmap.view`).
_FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
_held_types: dict[int, type[ctypes.Array[ctypes.c_char]]] = {}


def _held(n: int) -> type[ctypes.Array[ctypes.c_char]]:
    """A ctypes array type of *n* bytes whose instances may hold a reference (the memory's owner)."""
    t = _held_types.get(n)
    if t is None:
        t = _held_types[n] = type("_Held", (ctypes.c_char * n,), {})
    return t

__all__ = ["Mmap"]



class Mmap(DocaObject):
    """``doca_mmap``. Configure (range, permissions, devices) before [`start`][doca_py.mmap.Mmap.start].

    The memory registered with [`set_memrange`][doca_py.mmap.Mmap.set_memrange] stays pinned (a ``bytearray``
    cannot be resized) until the mmap is closed. Only memory from [`allocate`][doca_py.mmap.Mmap.allocate]
    can be imported by *another process* (emulated backend); any buffer can be
    exported to the same process or, on hardware, to the peer device.
    """

    _warn_unclosed = True

    def __init__(self, user_data: Any = None, *, _handle: MmapHandle | None = None) -> None:
        super().__init__()
        self._h = _handle if _handle is not None else backend.mmap.mmap_create()
        self.user_data: Any = user_data
        """Any object, given back by callbacks (``doca_mmap_set_user_data``)."""
        self._pin: memoryview | None = None
        self._shm: SharedMemory | None = None
        self._addr = 0  # of the locally backed memory
        self._local = threading.local()  # free-threaded builds: each thread's root view (_root)
        self._thread_roots = False
        self._devs: list[Dev] = []
        self._started = False
        self._arm_finalizer(self._h.destroy)

    @classmethod
    def from_handle(cls, handle: MmapHandle | int, user_data: Any = None) -> Mmap:
        """Python-only: wrap an existing ``doca_mmap`` without taking ownership.

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_mmap`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        m = cls(user_data, _handle=backend.borrow_mmap(handle) if isinstance(handle, int) else handle)
        m._borrow()
        return m

    # -- configuration ----------------------------------------------------------------------
    def set_memrange(self, buffer: Any) -> None:
        """``doca_mmap_set_memrange``: register a writable, contiguous buffer (``bytearray``, ``mmap``, numpy array
        …)."""
        self._check_open()
        addr, n, pin = buffer_address(buffer, "Mmap.set_memrange: buffer")
        if n == 0:
            pin.release()
            raise DocaInvalidValue("cannot register an empty buffer")
        try:
            self._h.set_memrange(addr, n)
        except BaseException:
            pin.release()
            raise
        self._release_memory()
        self._pin, self._addr = pin, addr

    def allocate(self, size: int) -> memoryview:
        """``doca_mmap_set_memrange`` on a new allocation: *size* bytes of zeroed, page-aligned, shareable memory as
        the range.

        The memory belongs to the mmap and is freed by [`close`][doca_py.mmap.Mmap.close].
        """
        self._check_open()
        shm = SharedMemory(size)
        try:
            self._h.set_memrange(shm.address, size)
        except DocaError as exc:  # name the call the user made (the backend names doca_mmap_set_memrange)
            shm.close()
            raise lookup(exc.code)(f"Mmap.allocate: {exc.detail}", code=exc.code) from None
        except BaseException:
            shm.close()
            raise
        self._release_memory()
        self._shm, self._pin, self._addr = shm, shm.buffer, shm.address
        return self.buffer

    def get_memrange(self) -> tuple[int, int]:
        """``doca_mmap_get_memrange``: ``(address, length)``; for an imported map, the exporter's addresses."""
        return self._h.get_memrange()

    def set_permissions(self, flags: AccessFlag | int) -> None:
        """``doca_mmap_set_permissions``: the access the devices and peers get (before
        [`start`][doca_py.mmap.Mmap.start]).

        :param flags: [`AccessFlag`][doca_py.types.AccessFlag] values or-ed together.
        :raises DocaBadState: when the mmap is started.
        :raises DocaInvalidValue: for an unknown flag combination.
        """
        self._h.set_permissions(int(flags))

    def add_dev(self, dev: Dev) -> None:
        """``doca_mmap_add_dev``: register the memory for *dev* (before [`start`][doca_py.mmap.Mmap.start]). The
        device cannot be closed while the mmap is open.

        :param dev: an open [`Dev`][doca_py.dev.Dev].
        :raises DocaBadState: when the mmap is started.
        :raises DocaNoMemory: when ``set_max_num_devices`` devices are added already.
        """
        self._check_open()
        expect("Mmap.add_dev", Dev, dev=dev)
        self._h.add_dev(dev._h)
        dev._adopt(self)  # the device may close only after the mmap
        self._devs.append(dev)

    def rm_dev(self, dev: Dev) -> None:
        """``doca_mmap_rm_dev``: remove a device added with [`add_dev`][doca_py.mmap.Mmap.add_dev].

        :param dev: the device.
        :raises DocaBadState: when the mmap is started.
        """
        expect("Mmap.rm_dev", Dev, dev=dev)
        self._h.rm_dev(dev._h)
        self._devs.remove(dev)

    def set_max_num_devices(self, n: int) -> None:
        """``doca_mmap_set_max_num_devices``: how many devices may be added (before start).

        :param n: the limit.
        :raises DocaBadState: when the mmap is started.
        """
        self._h.set_max_num_devices(n)

    def get_max_num_devices(self) -> int:
        """``doca_mmap_get_max_num_devices``: how many devices may be added."""
        return self._h.get_max_num_devices()

    def enable_thread_safety(self) -> None:
        """``doca_mmap_enable_thread_safety``: make buffer allocation on this map thread-safe (disables buffer
        counting). DOCA 3.0+: ``DocaNotSupported`` on 2.6, which has no such switch."""
        self._h.enable_thread_safety()

    def start(self) -> None:
        """``doca_mmap_start``: register the memory with the added devices; the range, permissions and devices are
        fixed from now on.

        :raises DocaBadState: when no memory range is set.
        :raises DocaNotPermitted: when a device cannot register the memory with the permissions asked.
        """
        self._check_open()
        self._h.start()
        self._started = True  # for repr() only: DOCA has no getter

    def stop(self) -> None:
        """``doca_mmap_stop``: stop; invalidates every mmap imported from this one."""
        self._h.stop()
        self._started = False

    # -- export / import --------------------------------------------------------------------
    def export_pci(self, dev: Dev) -> bytes:
        """``doca_mmap_export_pci``: the blob for a peer on the same PCIe (host ↔ DPU). Needs a ``PCI_*`` permission."""
        self._check_open()
        expect("Mmap.export_pci", Dev, dev=dev)
        return bytes(self._h.export_pci(dev._h))

    def export_rdma(self, dev: Dev) -> bytes:
        """``doca_mmap_export_rdma``: the blob for an RDMA peer. Needs an ``RDMA_*`` permission."""
        self._check_open()
        expect("Mmap.export_rdma", Dev, dev=dev)
        return bytes(self._h.export_rdma(dev._h))

    @classmethod
    def create_from_export(cls, blob: bytes, dev: Dev, user_data: Any = None) -> Mmap:
        """``doca_mmap_create_from_export``: a started map of a peer's exported memory.

        :raises DocaTypeError: when *blob* is not bytes-like or *dev* not a ``Dev`` (as ``SyncEvent``'s).
        """
        expect("Mmap.create_from_export", Dev, dev=dev)
        dev._check_open()
        expect("Mmap.create_from_export", (bytes, bytearray, memoryview), blob=blob)
        m = cls(user_data, _handle=backend.mmap.mmap_create_from_export(bytes(blob), dev._h))
        m._started = True
        dev._adopt(m)
        m._devs.append(dev)
        return m

    def get_num_bufs(self) -> int:
        """``doca_mmap_get_num_bufs``: how many buffers point into this mmap."""
        return self._h.get_num_bufs()

    def get_exported(self) -> bool:
        """``doca_mmap_get_exported``: whether the mmap was exported."""
        return self._h.get_exported()

    def get_from_export(self) -> bool:
        """``doca_mmap_get_from_export``: whether the mmap was created from an export."""
        return self._h.get_from_export()

    @staticmethod
    def cap_is_export_pci_supported(devinfo: DevInfo) -> bool:
        """``doca_mmap_cap_is_export_pci_supported``: whether *devinfo* can export an mmap over PCI (DPU ↔ host)."""
        return backend.mmap.cap_is_export_pci_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_is_create_from_export_pci_supported(devinfo: DevInfo) -> bool:
        """``doca_mmap_cap_is_create_from_export_pci_supported``: whether *devinfo* can import a PCI export."""
        return backend.mmap.cap_is_create_from_export_pci_supported(devinfo_handle(devinfo))

    # -- CPU access ---------------------------------------------------------------------------
    def view(self, addr: int, length: int) -> memoryview:
        """Python-only: a CPU view of ``[addr, addr+length)`` of a locally backed map."""
        pin = self._pin
        if pin is None:
            if self._h.get_from_export():
                raise DocaNotSupported("an imported mmap's memory is not CPU-accessible; copy it with Dma")
            raise DocaBadState("mmap has no memory range")
        base, n = self._h.get_memrange()
        off = addr - base
        if off < 0 or length < 0 or off + length > n:
            raise DocaInvalidValue(f"[{addr:#x}, +{length}) is outside the mmap range [{base:#x}, +{n})")
        return (self._root(pin) if _FREE_THREADED else pin)[off: off + length]

    @property
    def buffer(self) -> memoryview:
        """Python-only: the whole registered memory (on a free-threaded build, a view of this thread's own: slice it
        in this thread only)."""
        pin = self._pin
        if pin is None:
            raise DocaBadState("mmap has no locally backed memory range")
        return self._root(pin) if _FREE_THREADED else pin

    def _root(self, pin: memoryview) -> memoryview:
        """This thread's root view of the memory (free-threaded builds). Two threads slicing one
        memoryview can lose a count of its views, which then releases it under the other thread
        ("operation forbidden on released memoryview object"); so each thread slices its own, made over
        a ctypes array at the memory's address that keeps the memory (*pin*, its SharedMemory) alive."""
        local = self._local
        root: memoryview | None = getattr(local, "root", None)
        if root is None or local.pin is not pin:
            arr = _held(pin.nbytes).from_address(self._addr)
            arr.keep = (pin, self._shm)  # type: ignore[attr-defined]  # (a Python subclass has a __dict__)
            root = local.root = memoryview(arr).cast("B")
            local.pin = pin
            self._thread_roots = True
        return root

    def _release_memory(self) -> None:
        if self._thread_roots:
            # Other threads may still hold views of their roots: the memory goes with the last one
            # (each root keeps it alive), never unmapped under them.
            self._pin = self._shm = None
            self._local = threading.local()
            self._thread_roots = False
            return
        if self._pin is not None:
            self._pin.release()
            self._pin = None
        if self._shm is not None:
            try:
                self._shm.close()
            except BufferError:
                pass  # a caller still holds a view; the memory goes with the last one
            self._shm = None

    def _close(self) -> None:
        self._h.destroy()
        self._release_memory()

    def _close_borrowed(self) -> None:
        self._release_memory()

    def _repr_facts(self) -> list[str]:
        h = self._h
        try:
            base, n = h.get_memrange()
            facts = [f"range=[{base:#x}, +{n})"]
        except DocaError:  # BAD_STATE before a range
            facts = ["no range"]
        facts.append("started" if self._started else "not started")
        if h.get_from_export():
            facts.append("imported")
        elif h.get_exported():
            facts.append("exported")
        return facts + [f"devs={len(self._devs)}", f"bufs={h.get_num_bufs()}"]

    def __enter__(self) -> Mmap:
        return self
