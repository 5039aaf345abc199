"""Emulated ``doca_dev``: a registry of software devices.

By default the machine plays both sides of a BlueField: a host-side device (the
PF the host sees) and a DPU-side device whose representor list holds the host PF,
so ``-d``/``-r`` style device arguments of the storage apps resolve. Set
``DOCA_PY_EMU_DEVICES`` to a JSON list of device objects (keys as in
:class:`EmuDeviceSpec`) to describe another machine.
"""

from __future__ import annotations

import ipaddress
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from .._backend.protocols.core import DevInfoHandle, DevInfoRepHandle
from ..errors import DocaInvalidValue, DocaNotSupported
from ..types import DevinfoRepFilter, PciFuncType
from . import version as emu_version

__all__ = ["EmuRepSpec", "EmuDeviceSpec", "DEFAULT_DEVICES", "DEFAULT_CAPS", "DPU_CAPS", "configure",
           "devinfo_create_list", "open_dev_from_pd"]


#: The capabilities of a device described without ``caps``.
DEFAULT_CAPS = frozenset({"rep_filter_all", "rep_filter_net", "mmap_export_pci", "mmap_create_from_export_pci"})
#: A BlueField Arm side's own: DOCA Mmap Advise runs on the BlueField target only (its cache invalidate
#: task acts on the Arm cores' cache).
DPU_CAPS = DEFAULT_CAPS | {"mmap_advise_cache_invalidate"}


@dataclass(frozen=True)
class EmuRepSpec:
    """A representor of a host function, listed by a DPU-side device."""

    pci_addr: str
    iface_name: str
    vuid: str
    pci_func_type: PciFuncType = PciFuncType.PF
    is_hotplug: bool = False
    vhca_id: int = 0
    emulated: bool = False  # listed by DevinfoRepFilter.EMULATED rather than NET


@dataclass(frozen=True)
class EmuDeviceSpec:
    """One emulated device (what ``doca_devinfo`` reports about it)."""

    pci_addr: str
    ibdev_name: str
    iface_name: str
    mac_addr: bytes
    ipv4_addr: str = "0.0.0.0"
    ipv6_addr: str = "::"
    lid: int = 0
    active_rate: int = 100_000_000_000
    vhca_id: int = 0
    reps: tuple[EmuRepSpec, ...] = ()
    caps: frozenset[str] = field(default_factory=lambda: DEFAULT_CAPS)


DEFAULT_DEVICES: tuple[EmuDeviceSpec, ...] = (
    # The host's view of the BlueField PF.
    EmuDeviceSpec("0000:3b:00.0", "mlx5_0", "ens1f0np0", bytes.fromhex("b8cef6000001"),
                  ipv4_addr="127.0.0.1", vhca_id=2),
    # The DPU's own PF, with the host PF as its representor.
    EmuDeviceSpec("0000:03:00.0", "mlx5_2", "p0", bytes.fromhex("b8cef6000010"),
                  ipv4_addr="127.0.0.1", vhca_id=0,
                  reps=(EmuRepSpec("0000:3b:00.0", "pf0hpf", "MT0000000000pf0", vhca_id=2),), caps=DPU_CAPS),
)

_lock = threading.Lock()
_devices: tuple[EmuDeviceSpec, ...] | None = None


def _spec_from_json(obj: dict[str, Any]) -> EmuDeviceSpec:
    try:
        reps = tuple(
            EmuRepSpec(r["pci_addr"], r.get("iface_name", ""), r.get("vuid", ""),
                       PciFuncType(r.get("pci_func_type", 0)), bool(r.get("is_hotplug", False)),
                       int(r.get("vhca_id", 0)), bool(r.get("emulated", False)))
            for r in obj.get("reps", ())
        )
        spec = EmuDeviceSpec(
            obj["pci_addr"], obj["ibdev_name"], obj.get("iface_name", ""),
            bytes.fromhex(obj.get("mac_addr", "000000000000").replace(":", "")),
            obj.get("ipv4_addr", "0.0.0.0"), obj.get("ipv6_addr", "::"), int(obj.get("lid", 0)),
            int(obj.get("active_rate", 100_000_000_000)), int(obj.get("vhca_id", 0)), reps,
        )
        if "caps" in obj:
            spec = EmuDeviceSpec(**{**spec.__dict__, "caps": frozenset(obj["caps"])})
    except (KeyError, TypeError, ValueError) as exc:
        raise DocaInvalidValue(f"bad emulated device description {obj!r}: {exc!r}") from None
    _normalize_pci(spec.pci_addr)
    return spec


def configure(devices: tuple[EmuDeviceSpec, ...] | None) -> None:
    """Replace the device registry (``None``: back to the environment/default)."""
    global _devices
    with _lock:
        _devices = devices


def _registry() -> tuple[EmuDeviceSpec, ...]:
    global _devices
    with _lock:
        if _devices is None:
            text = os.environ.get("DOCA_PY_EMU_DEVICES")
            if text:
                try:
                    items = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DocaInvalidValue(f"DOCA_PY_EMU_DEVICES is not JSON: {exc}") from None
                if not isinstance(items, list):
                    raise DocaInvalidValue("DOCA_PY_EMU_DEVICES must be a JSON list of devices")
                _devices = tuple(_spec_from_json(o) for o in items)
            else:
                _devices = DEFAULT_DEVICES
        return _devices


def _normalize_pci(text: str) -> str:
    """``"3b:00.0"`` or ``"0000:3b:00.0"`` → ``"0000:3b:00.0"`` (DOCA accepts both)."""
    t = text.strip().lower()
    parts = t.split(":")
    if len(parts) == 2:
        parts.insert(0, "0000")
    ok = (len(parts) == 3 and len(parts[0]) == 4 and len(parts[1]) == 2
          and len(parts[2]) == 4 and parts[2][2] == ".")
    if ok:
        try:
            int(parts[0], 16), int(parts[1], 16), int(parts[2][:2], 16), int(parts[2][3], 16)
        except ValueError:
            ok = False
    if not ok:
        raise DocaInvalidValue(f"not a PCI address: {text!r} (expected XXXX:XX:XX.X or XX:XX.X)")
    return ":".join(parts)


#: Capability queries a DOCA version may lack: the first version that has each.
_CAPS_SINCE = {"notification_moderation": (3, 0), "accelerate_resource_reclaim": (3, 0)}


def _fixed(data: bytes, size: int) -> bytes:
    return data[:size].ljust(size, b"\0")


class EmuDevInfo:
    """Emulated ``doca_devinfo``."""

    def __init__(self, spec: EmuDeviceSpec) -> None:
        self.spec = spec

    def pci_addr_str(self) -> str:
        return self.spec.pci_addr

    def is_equal_pci_addr(self, pci_addr: str) -> bool:
        return _normalize_pci(pci_addr) == self.spec.pci_addr

    def ipv4_addr(self) -> bytes:
        return ipaddress.IPv4Address(self.spec.ipv4_addr).packed

    def ipv6_addr(self) -> bytes:
        return ipaddress.IPv6Address(self.spec.ipv6_addr).packed

    def mac_addr(self) -> bytes:
        return _fixed(self.spec.mac_addr, 6)

    def iface_name(self) -> str:
        return self.spec.iface_name

    def ibdev_name(self) -> str:
        return self.spec.ibdev_name

    def lid(self) -> int:
        return self.spec.lid

    def active_rate(self) -> int:
        return self.spec.active_rate

    def vhca_id(self) -> int:
        emu_version.require("doca_devinfo_get_vhca_id", (3, 0), "added after 2.6")
        return self.spec.vhca_id

    def cap(self, name: str) -> bool:
        since = _CAPS_SINCE.get(name)
        if since is not None:
            emu_version.require(f"doca_devinfo_cap_is_{name}_supported", since, "added after 2.6")
        return name in self.spec.caps

    def open(self) -> EmuDev:
        return EmuDev(self)


class EmuDev:
    """Emulated ``doca_dev``."""

    def __init__(self, info: EmuDevInfo) -> None:
        self._info = info
        self.closed = False

    @property
    def devinfo(self) -> EmuDevInfo:
        return self._info

    def rep_list(self, filter: int) -> list[DevInfoRepHandle]:
        caps = self._info.spec.caps
        flt = DevinfoRepFilter(filter)
        need = {DevinfoRepFilter.ALL: "rep_filter_all", DevinfoRepFilter.NET: "rep_filter_net",
                DevinfoRepFilter.EMULATED: "rep_filter_emulated"}.get(flt)
        if need is None:
            raise DocaInvalidValue(f"representor filter {filter!r} is not one DevinfoRepFilter value")
        if need not in caps:
            raise DocaNotSupported(f"{self._info.spec.ibdev_name} does not list representors with {flt.name}")
        reps = self._info.spec.reps
        if flt is DevinfoRepFilter.NET:
            reps = tuple(r for r in reps if not r.emulated)
        elif flt is DevinfoRepFilter.EMULATED:
            reps = tuple(r for r in reps if r.emulated)
        return [EmuDevInfoRep(r) for r in reps]

    def get_pd(self) -> int:
        """``doca_rdma_bridge_get_dev_pd``: there is no ibverbs device behind an emulated one."""
        raise DocaNotSupported(_NO_PD.format(what=f"doca_rdma_bridge_get_dev_pd ({self._info.spec.ibdev_name})"))

    def close(self) -> None:
        self.closed = True


class EmuDevInfoRep:
    """Emulated ``doca_devinfo_rep``."""

    def __init__(self, spec: EmuRepSpec) -> None:
        self.spec = spec

    def pci_addr_str(self) -> str:
        return self.spec.pci_addr

    def is_equal_pci_addr(self, pci_addr: str) -> bool:
        return _normalize_pci(pci_addr) == _normalize_pci(self.spec.pci_addr)

    def vuid(self) -> str:
        return self.spec.vuid

    def pci_func_type(self) -> int:
        return int(self.spec.pci_func_type)

    def is_hotplug(self) -> bool:
        return self.spec.is_hotplug

    def iface_name(self) -> str:
        emu_version.require("doca_devinfo_rep_get_iface_name", (3, 0), "added after 2.6")
        return self.spec.iface_name

    def vhca_id(self) -> int:
        emu_version.require("doca_devinfo_rep_get_vhca_id", (3, 0), "added after 2.6")
        return self.spec.vhca_id

    def open(self) -> EmuDevRep:
        return EmuDevRep(self)


class EmuDevRep:
    """Emulated ``doca_dev_rep``."""

    def __init__(self, info: EmuDevInfoRep) -> None:
        self._info = info

    @property
    def devinfo_rep(self) -> EmuDevInfoRep:
        return self._info

    def close(self) -> None:
        pass


_NO_PD = ("{what}: the emulated backend has no ibverbs protection domain (struct ibv_pd): its devices are "
          "software, with no RDMA device (rdma-core) behind them; bridging DOCA and ibverbs needs the native "
          "backend on a host or BlueField with DOCA installed")


def open_dev_from_pd(pd: int) -> EmuDev:
    """``doca_rdma_bridge_open_dev_from_pd``: no ibverbs PD can name an emulated device."""
    raise DocaNotSupported(_NO_PD.format(what="doca_rdma_bridge_open_dev_from_pd"))


def devinfo_create_list() -> list[DevInfoHandle]:
    """``doca_devinfo_create_list``."""
    return [EmuDevInfo(s) for s in _registry()]
