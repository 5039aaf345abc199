"""Native ``doca_mmap``."""

from __future__ import annotations

import ctypes

from .._backend.protocols.core import DevHandle, DevInfoHandle
from ..errors import check
from ._common import flag, lib
from .borrow import Borrowable
from .dev import NativeDev, NativeDevInfo

__all__ = ["NativeMmap", "mmap_create", "mmap_create_from_export",
           "cap_is_export_pci_supported", "cap_is_create_from_export_pci_supported"]


def _ptr(dev: DevHandle) -> int | None:
    assert isinstance(dev, NativeDev)
    return dev.ptr


class NativeMmap(Borrowable):
    """``doca_mmap *``."""

    def __init__(self, ptr: int | None) -> None:
        self.ptr = ptr

    def set_memrange(self, addr: int, length: int) -> None:
        check(lib().doca_mmap_set_memrange(self.ptr, addr, length), "doca_mmap_set_memrange")

    def get_memrange(self) -> tuple[int, int]:
        addr, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(lib().doca_mmap_get_memrange(self.ptr, ctypes.byref(addr), ctypes.byref(n)), "doca_mmap_get_memrange")
        return addr.value or 0, n.value

    def set_permissions(self, flags: int) -> None:
        check(lib().doca_mmap_set_permissions(self.ptr, flags), "doca_mmap_set_permissions")

    def add_dev(self, dev: DevHandle) -> None:
        check(lib().doca_mmap_add_dev(self.ptr, _ptr(dev)), "doca_mmap_add_dev")

    def rm_dev(self, dev: DevHandle) -> None:
        check(lib().doca_mmap_rm_dev(self.ptr, _ptr(dev)), "doca_mmap_rm_dev")

    def set_max_num_devices(self, n: int) -> None:
        check(lib().doca_mmap_set_max_num_devices(self.ptr, n), "doca_mmap_set_max_num_devices")

    def get_max_num_devices(self) -> int:
        v = ctypes.c_uint32()
        check(lib().doca_mmap_get_max_num_devices(self.ptr, ctypes.byref(v)), "doca_mmap_get_max_num_devices")
        return v.value

    def enable_thread_safety(self) -> None:
        check(lib().doca_mmap_enable_thread_safety(self.ptr), "doca_mmap_enable_thread_safety")

    def start(self) -> None:
        check(lib().doca_mmap_start(self.ptr), "doca_mmap_start")

    def stop(self) -> None:
        check(lib().doca_mmap_stop(self.ptr), "doca_mmap_stop")

    def _export(self, fn_name: str, dev: DevHandle) -> bytes:
        blob, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(getattr(lib(), fn_name)(self.ptr, _ptr(dev), ctypes.byref(blob), ctypes.byref(n)), fn_name)
        return ctypes.string_at(blob.value or 0, n.value)  # the blob belongs to the mmap: copy it

    def export_pci(self, dev: DevHandle) -> bytes:
        return self._export("doca_mmap_export_pci", dev)

    def export_rdma(self, dev: DevHandle) -> bytes:
        return self._export("doca_mmap_export_rdma", dev)

    def get_num_bufs(self) -> int:
        v = ctypes.c_uint32()
        check(lib().doca_mmap_get_num_bufs(self.ptr, ctypes.byref(v)), "doca_mmap_get_num_bufs")
        return v.value

    def get_exported(self) -> bool:
        return flag(lib().doca_mmap_get_exported, self.ptr, "doca_mmap_get_exported")

    def get_from_export(self) -> bool:
        return flag(lib().doca_mmap_get_from_export, self.ptr, "doca_mmap_get_from_export")

    def destroy(self) -> None:
        if self.borrowed:
            return
        l = lib()
        # The storage apps stop before destroy and ignore a failed stop (doca-c-api §4.4).
        if not self.get_from_export():
            l.doca_mmap_stop(self.ptr)
        check(l.doca_mmap_destroy(self.ptr), "doca_mmap_destroy")


def mmap_create() -> NativeMmap:
    out = ctypes.c_void_p()
    check(lib().doca_mmap_create(ctypes.byref(out)), "doca_mmap_create")
    return NativeMmap(out.value)


def mmap_create_from_export(blob: bytes, dev: DevHandle) -> NativeMmap:
    out = ctypes.c_void_p()
    check(lib().doca_mmap_create_from_export(None, blob, len(blob), _ptr(dev), ctypes.byref(out)),
          "doca_mmap_create_from_export")
    return NativeMmap(out.value)


def cap_is_export_pci_supported(devinfo: DevInfoHandle) -> bool:
    assert isinstance(devinfo, NativeDevInfo)
    return flag(lib().doca_mmap_cap_is_export_pci_supported, devinfo.ptr, "doca_mmap_cap_is_export_pci_supported")


def cap_is_create_from_export_pci_supported(devinfo: DevInfoHandle) -> bool:
    assert isinstance(devinfo, NativeDevInfo)
    return flag(lib().doca_mmap_cap_is_create_from_export_pci_supported, devinfo.ptr,
                "doca_mmap_cap_is_create_from_export_pci_supported")
