"""``doca_dev``: device enumeration, opening, representors.

```pycon
>>> dev = Dev.open_by_pci_addr("03:00.0")       # or open_by_ibdev_name / open_by_iface_name
>>> rep = dev.open_rep_by_pci_addr("3b:00.0")   # DPU side: the host PF's representor

```
"""

from __future__ import annotations

import ipaddress

from ._args import caller, check_str, wrong_type
from ._backend import backend
from ._lifetime import DocaObject, raw_handle
from ._backend.protocols.core import DevHandle, DevInfoHandle, DevInfoRepHandle, DevRepHandle
from .errors import DocaInvalidValue, DocaNotFound, DocaNotSupported, DocaTypeError
from .types import DevinfoRepFilter, PciFuncType

__all__ = ["DevInfo", "Dev", "DevInfoRep", "DevRep", "devinfo_create_list"]



class DevInfo:
    """``doca_devinfo``: what a device is and can do (no resources held)."""

    @property
    def handle(self) -> object:
        """Python-only: the backend handle (the C address as an ``int`` on the native backend, the backend object on the
        emulated one); see ``DocaObject.handle``."""
        return raw_handle(self._h)

    def __init__(self, handle: DevInfoHandle) -> None:
        self._h = handle

    @classmethod
    def from_handle(cls, handle: DevInfoHandle | int) -> DevInfo:
        """Python-only: wrap an existing ``doca_devinfo`` (an element of a ``doca_devinfo_create_list`` list, or what
        ``doca_dev_as_devinfo`` returns).

        *handle* is another wrapper's ``handle``: on the native backend the address of a C ``doca_devinfo``,
        on the emulated backend the backend object. A devinfo holds no resources, so there is nothing to own
        or destroy: the wrapper is valid while the devinfo is (its list not destroyed, its device open).
        """
        return cls(backend.borrow_devinfo(handle) if isinstance(handle, int) else handle)

    def get_pci_addr_str(self) -> str:
        """``doca_devinfo_get_pci_addr_str``: PCI address, ``XXXX:XX:XX.X``."""
        return self._h.pci_addr_str()

    def is_equal_pci_addr(self, pci_addr: str) -> bool:
        """``doca_devinfo_is_equal_pci_addr``: whether *pci_addr* (``XXXX:XX:XX.X`` or ``XX:XX.X``) names this
        device."""
        return self._h.is_equal_pci_addr(check_str("DevInfo.is_equal_pci_addr", "pci_addr", pci_addr))

    def get_ipv4_addr(self) -> ipaddress.IPv4Address:
        """``doca_devinfo_get_ipv4_addr``: the port's IPv4 address."""
        return ipaddress.IPv4Address(self._h.ipv4_addr())

    def get_ipv6_addr(self) -> ipaddress.IPv6Address:
        """``doca_devinfo_get_ipv6_addr``: the port's IPv6 address."""
        return ipaddress.IPv6Address(self._h.ipv6_addr())

    def get_mac_addr(self) -> bytes:
        """``doca_devinfo_get_mac_addr``: the port's MAC address (6 bytes)."""
        return self._h.mac_addr()

    def get_iface_name(self) -> str:
        """``doca_devinfo_get_iface_name``: the network interface name (``"p0"``)."""
        return self._h.iface_name()

    def get_ibdev_name(self) -> str:
        """``doca_devinfo_get_ibdev_name``: the IB device name (``"mlx5_0"``)."""
        return self._h.ibdev_name()

    def get_lid(self) -> int:
        """``doca_devinfo_get_lid``: the port's InfiniBand LID."""
        return self._h.lid()

    def get_active_rate(self) -> int:
        """``doca_devinfo_get_active_rate``: link rate in bits per second."""
        return self._h.active_rate()

    def get_vhca_id(self) -> int:
        """``doca_devinfo_get_vhca_id``: the virtual HCA id."""
        return self._h.vhca_id()

    def cap_is_hotplug_manager_supported(self) -> bool:
        """``doca_devinfo_cap_is_hotplug_manager_supported``: whether the device can manage hot-plugged emulated
        devices.
        """
        return self._h.cap("hotplug_manager")

    def cap_is_notification_moderation_supported(self) -> bool:
        """``doca_devinfo_cap_is_notification_moderation_supported``: whether completion notifications can be
        moderated.
        """
        return self._h.cap("notification_moderation")

    def cap_is_accelerate_resource_reclaim_supported(self) -> bool:
        """``doca_devinfo_cap_is_accelerate_resource_reclaim_supported``: whether accelerated resource reclaim is
        supported.
        """
        return self._h.cap("accelerate_resource_reclaim")

    def rep_cap_is_filter_all_supported(self) -> bool:
        """``doca_devinfo_rep_cap_is_filter_all_supported``: whether representors can be listed with
        ``DevinfoRepFilter.ALL``.
        """
        return self._h.cap("rep_filter_all")

    def rep_cap_is_filter_net_supported(self) -> bool:
        """``doca_devinfo_rep_cap_is_filter_net_supported``: whether representors can be listed with
        ``DevinfoRepFilter.NET``.
        """
        return self._h.cap("rep_filter_net")

    def rep_cap_is_filter_emulated_supported(self) -> bool:
        """``doca_devinfo_rep_cap_is_filter_emulated_supported``: whether representors can be listed with
        ``DevinfoRepFilter.EMULATED``.
        """
        return self._h.cap("rep_filter_emulated")

    def open(self) -> Dev:
        """``doca_dev_open``."""
        return Dev(self._h.open())

    def __repr__(self) -> str:
        return f"<DevInfo {self.get_pci_addr_str()} {self.get_ibdev_name()}>"


def devinfo_handle(devinfo: DevInfo) -> DevInfoHandle:
    """*devinfo*'s backend handle, for the ``cap_*`` functions; ``DocaTypeError`` naming the caller and
    ``devinfo`` for anything but a [`DevInfo`][doca_py.dev.DevInfo]."""
    if isinstance(devinfo, DevInfo):
        return devinfo._h
    raise wrong_type(caller(), DevInfo, devinfo=devinfo)


def devinfo_create_list() -> list[DevInfo]:
    """``doca_devinfo_create_list``: every local device."""
    return [DevInfo(h) for h in backend.dev.devinfo_create_list()]


def _find(pred_name: str, value: str) -> DevInfo:
    infos = devinfo_create_list()
    for info in infos:
        if pred_name == "pci" and info.is_equal_pci_addr(value):
            return info
        if pred_name == "ibdev" and info.get_ibdev_name() == value:
            return info
        if pred_name == "iface" and info.get_iface_name() == value:
            return info
    have = ", ".join(f"{i.get_pci_addr_str()}/{i.get_ibdev_name()}/{i.get_iface_name()}" for i in infos)
    raise DocaNotFound(f"no device with {pred_name} {value!r} (devices: {have or 'none'})")


class Dev(DocaObject):
    """``doca_dev``: an opened device. Close it after every mmap and ctx using it."""

    _warn_unclosed = True

    def __init__(self, handle: DevHandle) -> None:
        super().__init__()
        self._h = handle
        #: Opened on an application's ibverbs PD (`open_from_pd`): it has no devinfo.
        self._on_pd = False
        self._arm_finalizer(handle.close)

    @classmethod
    def from_handle(cls, handle: DevHandle | int) -> Dev:
        """Python-only: wrap an open ``doca_dev`` without taking ownership.

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_dev`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        d = cls(backend.borrow_dev(handle) if isinstance(handle, int) else handle)
        d._borrow()
        return d

    @classmethod
    def open_by_pci_addr(cls, pci_addr: str) -> Dev:
        """``doca_dev_open`` of the device at PCI address *pci_addr* (``"03:00.0"`` or ``"0000:03:00.0"``).

        DOCA has no single call: this walks ``doca_devinfo_create_list`` with ``doca_devinfo_is_equal_pci_addr``
        and opens the match with ``doca_dev_open``.

        :param pci_addr: the PCI address (BDF, with or without the domain).

        :raises DocaNotFound: when no device matches.
        """
        return _find("pci", check_str("Dev.open_by_pci_addr", "pci_addr", pci_addr)).open()

    @classmethod
    def open_by_ibdev_name(cls, name: str) -> Dev:
        """``doca_dev_open`` of the device whose IB device name (``doca_devinfo_get_ibdev_name``) is *name*, e.g.
        ``"mlx5_0"``, with ``doca_dev_open``.

        :param name: the IB device name.

        :raises DocaNotFound: when no device matches.
        """
        return _find("ibdev", check_str("Dev.open_by_ibdev_name", "name", name)).open()

    @classmethod
    def open_by_iface_name(cls, name: str) -> Dev:
        """``doca_dev_open`` of the device whose network interface (``doca_devinfo_get_iface_name``) is *name*, e.g.
        ``"p0"``, with ``doca_dev_open``.

        :param name: the interface name.

        :raises DocaNotFound: when no device matches.
        """
        return _find("iface", check_str("Dev.open_by_iface_name", "name", name)).open()

    @classmethod
    def open_from_pd(cls, pd: int) -> Dev:
        """``doca_rdma_bridge_open_dev_from_pd`` (``doca_rdma_bridge.h``, in DOCA 2.6 and 3.x): open a device
        on an ibverbs protection domain that rdma-core code of this process allocated, so DOCA and that
        code share memory registrations.

        :param pd: the address of the ``struct ibv_pd`` (an ``int``, as C code or a ctypes binding of
            libibverbs gives it). DOCA refuses a PD it handed out itself (``Dev.get_pd``).

        DOCA lists ``doca_dev_close``, ``doca_rdma_bridge_get_buf_mkey`` and ``doca_rdma_bridge_get_dev_pd`` as
        what such a device supports, besides being added to an mmap (whose buffers then have memory keys on
        the PD). It has no devinfo: ``as_devinfo`` and ``rep_create_list`` raise ``DocaNotSupported``. The
        wrapper owns the device (``close`` closes it).

        :raises DocaInvalidValue: *pd* is not a non-zero 64-bit address.
        :raises DocaNotSupported: on the emulated backend, which has no ibverbs devices.
        """
        if isinstance(pd, bool) or not isinstance(pd, int):  # a bool is an int to isinstance, not an address
            raise DocaTypeError(f"Dev.open_from_pd: pd must be int, not {type(pd).__name__}")
        if not 0 < pd < 1 << 64:
            raise DocaInvalidValue(f"Dev.open_from_pd: pd must be the non-zero address of a struct ibv_pd, "
                                   f"not {pd:#x}")
        dev = cls(backend.dev.open_dev_from_pd(pd))
        dev._on_pd = True
        return dev

    def get_pd(self) -> int:
        """``doca_rdma_bridge_get_dev_pd`` (``doca_rdma_bridge.h``, in DOCA 2.6 and 3.x): the address of the
        device's ibverbs protection domain (``struct ibv_pd *``), for rdma-core code of this process
        (a C extension, a ctypes binding of libibverbs) that registers memory or creates queue pairs on the
        same PD. DOCA owns the PD: it is valid while the device is open.

        :raises DocaBadState: DOCA says the device's PD is not valid.
        :raises DocaNotSupported: on the emulated backend, which has no ibverbs devices.
        """
        self._check_open()
        return self._h.get_pd()

    def _check_devinfo(self, what: str) -> None:
        if self._on_pd:
            raise DocaNotSupported(f"Dev.{what}: a device opened on an ibverbs PD (Dev.open_from_pd) has no devinfo; "
                                   f"DOCA supports only close, the PD and memory keys on it")

    def as_devinfo(self) -> DevInfo:
        """``doca_dev_as_devinfo``."""
        self._check_devinfo("as_devinfo")
        return DevInfo(self._h.devinfo)

    def rep_create_list(self, filter: DevinfoRepFilter = DevinfoRepFilter.NET) -> list[DevInfoRep]:
        """``doca_devinfo_rep_create_list``: representors of host functions (DPU side)."""
        self._check_open()
        self._check_devinfo("rep_create_list")
        return [DevInfoRep(h, self) for h in self._h.rep_list(int(filter))]

    def open_rep_by_pci_addr(self, pci_addr: str, filter: DevinfoRepFilter = DevinfoRepFilter.NET) -> DevRep:
        """``doca_dev_rep_open`` of the representor whose PCI address is *pci_addr*."""
        check_str("Dev.open_rep_by_pci_addr", "pci_addr", pci_addr)
        reps = self.rep_create_list(filter)
        for rep in reps:
            if rep.is_equal_pci_addr(pci_addr):
                return rep.open()
        have = ", ".join(r.get_pci_addr_str() for r in reps)
        raise DocaNotFound(f"no representor with PCI address {pci_addr!r} (representors: {have or 'none'})")

    def _close(self) -> None:
        self._h.close()

    def __enter__(self) -> Dev:
        return self

    def _repr_facts(self) -> list[str]:
        if self._on_pd:
            return [f"pd={self._h.get_pd():#x}"]
        info = self._h.devinfo
        return [f"pci={info.pci_addr_str()}", f"ibdev={info.ibdev_name()}"]


class DevInfoRep:
    """``doca_devinfo_rep``."""

    @property
    def handle(self) -> object:
        """Python-only: the backend handle (the C address as an ``int`` on the native backend, the backend object on the
        emulated one); see ``DocaObject.handle``."""
        return raw_handle(self._h)

    def __init__(self, handle: DevInfoRepHandle, dev: Dev) -> None:
        self._h = handle
        self._dev = dev

    @classmethod
    def from_handle(cls, dev: Dev, handle: DevInfoRepHandle | int) -> DevInfoRep:
        """Python-only: wrap an existing ``doca_devinfo_rep`` (an element of a ``doca_devinfo_rep_create_list`` list)
        of *dev*.

        *handle* is another wrapper's ``handle``: on the native backend the address of a C ``doca_devinfo_rep``,
        on the emulated backend the backend object. It holds no resources, so there is nothing to own or
        destroy; a representor [`open`][doca_py.dev.DevInfoRep.open]ed through the wrapper closes with *dev*.
        """
        dev._check_open()
        return cls(backend.borrow_devinfo_rep(handle) if isinstance(handle, int) else handle, dev)

    def get_pci_addr_str(self) -> str:
        """``doca_devinfo_rep_get_pci_addr_str``: the representor's PCI address (``"0000:b1:00.2"``)."""
        return self._h.pci_addr_str()

    def is_equal_pci_addr(self, pci_addr: str) -> bool:
        """``doca_devinfo_rep_is_equal_pci_addr``: whether the representor is at *pci_addr*.

        :param pci_addr: a PCI address (BDF, with or without the domain).
        """
        return self._h.is_equal_pci_addr(check_str("DevInfoRep.is_equal_pci_addr", "pci_addr", pci_addr))

    def get_vuid(self) -> str:
        """``doca_devinfo_rep_get_vuid``: the representor's vendor unique id."""
        return self._h.vuid()

    def get_pci_func_type(self) -> PciFuncType:
        """``doca_devinfo_rep_get_pci_func_type``: PF, VF or SF ([`PciFuncType`][doca_py.types.PciFuncType])."""
        return PciFuncType(self._h.pci_func_type())

    def get_is_hotplug(self) -> bool:
        """``doca_devinfo_rep_get_is_hotplug``: whether the representor is of a hot-plugged device."""
        return self._h.is_hotplug()

    def get_iface_name(self) -> str:
        """``doca_devinfo_rep_get_iface_name``: the representor's network interface name."""
        return self._h.iface_name()

    def get_vhca_id(self) -> int:
        """``doca_devinfo_rep_get_vhca_id``: the representor's virtual HCA id."""
        return self._h.vhca_id()

    def open(self) -> DevRep:
        """``doca_dev_rep_open``; the representor closes with its device."""
        rep = DevRep(self._h.open())
        self._dev._adopt(rep)
        return rep

    def __repr__(self) -> str:
        try:
            try:
                iface = f" {self.get_iface_name()}"
            except DocaNotSupported:  # DOCA 2.6 has no doca_devinfo_rep_get_iface_name
                iface = ""
            return f"<DevInfoRep {self.get_pci_addr_str()}{iface}>"
        except Exception as exc:  # noqa: BLE001 - repr() must not raise
            return f"<DevInfoRep ({type(exc).__name__} while describing)>"


class DevRep(DocaObject):
    """``doca_dev_rep``: an opened representor."""

    def __init__(self, handle: DevRepHandle) -> None:
        super().__init__()
        self._h = handle
        self._arm_finalizer(handle.close)

    @classmethod
    def from_handle(cls, handle: DevRepHandle | int) -> DevRep:
        """Python-only: wrap an open ``doca_dev_rep`` without taking ownership.

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_dev_rep`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        d = cls(backend.borrow_dev_rep(handle) if isinstance(handle, int) else handle)
        d._borrow()
        return d

    def get_pci_addr_str(self) -> str:
        """``doca_devinfo_rep_get_pci_addr_str`` (of ``doca_dev_rep_as_devinfo``): the PCI address of the
        opened representor."""
        return self._h.devinfo_rep.pci_addr_str()

    def _close(self) -> None:
        self._h.close()

    def _repr_facts(self) -> list[str]:
        info = self._h.devinfo_rep
        return [f"pci={info.pci_addr_str()}", f"iface={info.iface_name()}"]

    def __enter__(self) -> DevRep:
        return self
