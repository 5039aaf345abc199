"""Native ``doca_dev``, ``doca_devinfo``, ``doca_devinfo_rep`` and ``doca_dev_rep``."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, TypeVar

from .._backend.protocols.core import DevInfoHandle, DevInfoRepHandle
from ..errors import DocaInvalidValue, check
from ..types import (
    DEVINFO_IBDEV_NAME_SIZE,
    DEVINFO_IFACE_NAME_SIZE,
    DEVINFO_IPV4_ADDR_SIZE,
    DEVINFO_IPV6_ADDR_SIZE,
    DEVINFO_MAC_ADDR_SIZE,
    DEVINFO_PCI_ADDR_SIZE,
    DEVINFO_VUID_SIZE,
)
from ._common import flag, lib
from .borrow import Borrowable

__all__ = ["NativeDevInfo", "NativeDev", "NativeDevInfoRep", "NativeDevRep", "devinfo_create_list",
           "open_dev_from_pd"]

_CAPS = {
    "hotplug_manager": "doca_devinfo_cap_is_hotplug_manager_supported",
    "notification_moderation": "doca_devinfo_cap_is_notification_moderation_supported",
    "accelerate_resource_reclaim": "doca_devinfo_cap_is_accelerate_resource_reclaim_supported",
    "rep_filter_all": "doca_devinfo_rep_cap_is_filter_all_supported",
    "rep_filter_net": "doca_devinfo_rep_cap_is_filter_net_supported",
    "rep_filter_emulated": "doca_devinfo_rep_cap_is_filter_emulated_supported",
    "mmap_export_pci": "doca_mmap_cap_is_export_pci_supported",
    "mmap_create_from_export_pci": "doca_mmap_cap_is_create_from_export_pci_supported",
}


def _string(fn: Callable[..., int], ptr: int | None, size: int, what: str, sized: bool = True) -> str:
    buf = ctypes.create_string_buffer(size)
    check(fn(ptr, buf, size) if sized else fn(ptr, buf), what)
    return buf.value.decode(errors="replace")


def _bytes(fn: Callable[..., int], ptr: int | None, size: int, what: str) -> bytes:
    buf = (ctypes.c_uint8 * size)()
    check(fn(ptr, buf, size), what)
    return bytes(buf)


def _u16(fn: Callable[..., int], ptr: int | None, what: str) -> int:
    v = ctypes.c_uint16()
    check(fn(ptr, ctypes.byref(v)), what)
    return v.value


class NativeDevInfo(Borrowable):
    """``doca_devinfo *``; *keep* holds the list it came from alive."""

    def __init__(self, ptr: int | None, keep: object = None) -> None:
        self.ptr = ptr
        self._keep = keep

    def pci_addr_str(self) -> str:
        return _string(lib().doca_devinfo_get_pci_addr_str, self.ptr, DEVINFO_PCI_ADDR_SIZE,
                       "doca_devinfo_get_pci_addr_str", sized=False)

    def is_equal_pci_addr(self, pci_addr: str) -> bool:
        v = ctypes.c_uint8()
        check(lib().doca_devinfo_is_equal_pci_addr(self.ptr, pci_addr.encode(), ctypes.byref(v)),
              f"doca_devinfo_is_equal_pci_addr({pci_addr!r})")
        return bool(v.value)

    def ipv4_addr(self) -> bytes:
        return _bytes(lib().doca_devinfo_get_ipv4_addr, self.ptr, DEVINFO_IPV4_ADDR_SIZE, "doca_devinfo_get_ipv4_addr")

    def ipv6_addr(self) -> bytes:
        return _bytes(lib().doca_devinfo_get_ipv6_addr, self.ptr, DEVINFO_IPV6_ADDR_SIZE, "doca_devinfo_get_ipv6_addr")

    def mac_addr(self) -> bytes:
        return _bytes(lib().doca_devinfo_get_mac_addr, self.ptr, DEVINFO_MAC_ADDR_SIZE, "doca_devinfo_get_mac_addr")

    def iface_name(self) -> str:
        return _string(lib().doca_devinfo_get_iface_name, self.ptr, DEVINFO_IFACE_NAME_SIZE,
                       "doca_devinfo_get_iface_name")

    def ibdev_name(self) -> str:
        return _string(lib().doca_devinfo_get_ibdev_name, self.ptr, DEVINFO_IBDEV_NAME_SIZE,
                       "doca_devinfo_get_ibdev_name")

    def lid(self) -> int:
        return _u16(lib().doca_devinfo_get_lid, self.ptr, "doca_devinfo_get_lid")

    def active_rate(self) -> int:
        l = lib()
        if l.version < (3, 0, 0):  # 2.x writes a double (Gb/s)
            d = ctypes.c_double()
            check(l.doca_devinfo_get_active_rate(self.ptr, ctypes.byref(d)), "doca_devinfo_get_active_rate")
            return int(d.value * 1e9)
        v = ctypes.c_uint64()
        check(l.doca_devinfo_get_active_rate(self.ptr, ctypes.byref(v)), "doca_devinfo_get_active_rate")
        return v.value

    def vhca_id(self) -> int:
        return _u16(lib().doca_devinfo_get_vhca_id, self.ptr, "doca_devinfo_get_vhca_id")

    def cap(self, name: str) -> bool:
        fn_name = _CAPS[name]
        return flag(getattr(lib(), fn_name), self.ptr, fn_name)

    def open(self) -> NativeDev:
        out = ctypes.c_void_p()
        check(lib().doca_dev_open(self.ptr, ctypes.byref(out)), "doca_dev_open")
        return NativeDev(out.value)


class _List:
    """A ``doca_devinfo[_rep] **`` array, destroyed when the last entry goes."""

    def __init__(self, arr: Any, destroy: Callable[[Any], int]) -> None:
        self.arr, self._destroy = arr, destroy

    def __del__(self) -> None:
        self._destroy(self.arr)


class NativeDev(Borrowable):
    """``doca_dev *``."""

    def __init__(self, ptr: int | None) -> None:
        self.ptr = ptr

    @property
    def devinfo(self) -> NativeDevInfo:
        return NativeDevInfo(lib().doca_dev_as_devinfo(self.ptr), self)

    def rep_list(self, filter: int) -> list[DevInfoRepHandle]:
        l = lib()
        arr = ctypes.POINTER(ctypes.c_void_p)()
        n = ctypes.c_uint32()
        check(l.doca_devinfo_rep_create_list(self.ptr, filter, ctypes.byref(arr), ctypes.byref(n)),
              "doca_devinfo_rep_create_list")
        keep = _List(arr, l.doca_devinfo_rep_destroy_list)
        return [NativeDevInfoRep(arr[i], keep) for i in range(n.value)]

    def get_pd(self) -> int:
        """``doca_rdma_bridge_get_dev_pd``: the device's ``struct ibv_pd *`` (an address)."""
        out = ctypes.c_void_p()
        check(lib().doca_rdma_bridge_get_dev_pd(self.ptr, ctypes.byref(out)), "doca_rdma_bridge_get_dev_pd")
        if not out.value:
            raise DocaInvalidValue("doca_rdma_bridge_get_dev_pd returned no protection domain")
        return out.value

    def close(self) -> None:
        if not self.borrowed:
            check(lib().doca_dev_close(self.ptr), "doca_dev_close")


def open_dev_from_pd(pd: int) -> NativeDev:
    """``doca_rdma_bridge_open_dev_from_pd``: a new ``doca_dev`` (owned: ``doca_dev_close`` closes it)
    on the protection domain at *pd*."""
    out = ctypes.c_void_p()
    check(lib().doca_rdma_bridge_open_dev_from_pd(pd, ctypes.byref(out)), "doca_rdma_bridge_open_dev_from_pd")
    if not out.value:
        raise DocaInvalidValue("doca_rdma_bridge_open_dev_from_pd returned no device")
    return NativeDev(out.value)


class NativeDevInfoRep(Borrowable):
    """``doca_devinfo_rep *``."""

    def __init__(self, ptr: int | None, keep: object = None) -> None:
        self.ptr = ptr
        self._keep = keep

    def pci_addr_str(self) -> str:
        return _string(lib().doca_devinfo_rep_get_pci_addr_str, self.ptr, DEVINFO_PCI_ADDR_SIZE,
                       "doca_devinfo_rep_get_pci_addr_str", sized=False)

    def is_equal_pci_addr(self, pci_addr: str) -> bool:
        v = ctypes.c_uint8()
        check(lib().doca_devinfo_rep_is_equal_pci_addr(self.ptr, pci_addr.encode(), ctypes.byref(v)),
              "doca_devinfo_rep_is_equal_pci_addr")
        return bool(v.value)

    def vuid(self) -> str:
        return _string(lib().doca_devinfo_rep_get_vuid, self.ptr, DEVINFO_VUID_SIZE, "doca_devinfo_rep_get_vuid")

    def pci_func_type(self) -> int:
        v = ctypes.c_int()
        check(lib().doca_devinfo_rep_get_pci_func_type(self.ptr, ctypes.byref(v)), "doca_devinfo_rep_get_pci_func_type")
        return v.value

    def is_hotplug(self) -> bool:
        return flag(lib().doca_devinfo_rep_get_is_hotplug, self.ptr, "doca_devinfo_rep_get_is_hotplug")

    def iface_name(self) -> str:
        return _string(lib().doca_devinfo_rep_get_iface_name, self.ptr, DEVINFO_IFACE_NAME_SIZE,
                       "doca_devinfo_rep_get_iface_name")

    def vhca_id(self) -> int:
        return _u16(lib().doca_devinfo_rep_get_vhca_id, self.ptr, "doca_devinfo_rep_get_vhca_id")

    def open(self) -> NativeDevRep:
        out = ctypes.c_void_p()
        check(lib().doca_dev_rep_open(self.ptr, ctypes.byref(out)), "doca_dev_rep_open")
        return NativeDevRep(out.value, self)


_R = TypeVar("_R", bound="NativeDevRep")  # typing.Self is 3.11+


class NativeDevRep(Borrowable):
    """``doca_dev_rep *``."""

    def __init__(self, ptr: int | None, info: NativeDevInfoRep) -> None:
        self.ptr = ptr
        self._info = info

    @classmethod
    def from_ptr(cls: type[_R], ptr: int, *, borrowed: bool = True) -> _R:
        """Wrap an open ``doca_dev_rep *`` (its devinfo comes from ``doca_dev_rep_as_devinfo``)."""
        if not isinstance(ptr, int) or not ptr:
            raise DocaInvalidValue(f"{cls.__name__}.from_ptr needs a non-NULL address, got {ptr!r}")
        obj = cls(ptr, NativeDevInfoRep(lib().doca_dev_rep_as_devinfo(ptr)))
        obj.borrowed = borrowed
        return obj

    @property
    def devinfo_rep(self) -> NativeDevInfoRep:
        return self._info

    def close(self) -> None:
        if not self.borrowed:
            check(lib().doca_dev_rep_close(self.ptr), "doca_dev_rep_close")


def devinfo_create_list() -> list[DevInfoHandle]:
    """``doca_devinfo_create_list``; the array is destroyed with its last entry."""
    l = lib()
    arr = ctypes.POINTER(ctypes.c_void_p)()
    n = ctypes.c_uint32()
    check(l.doca_devinfo_create_list(ctypes.byref(arr), ctypes.byref(n)), "doca_devinfo_create_list")
    keep = _List(arr, l.doca_devinfo_destroy_list)
    return [NativeDevInfo(arr[i], keep) for i in range(n.value)]
