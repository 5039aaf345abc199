"""Opening the DOCA device named on a command line (PCI address, IB device or interface)."""

from __future__ import annotations

import re

import doca_py as d
from doca_py.errors import DocaNotFound

__all__ = ["open_device", "looks_like_pci_address"]

_PCI = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def looks_like_pci_address(text: str) -> bool:
    """``XX:XX.X`` or ``XXXX:XX:XX.X``."""
    return bool(_PCI.match(text))


def open_device(identifier: str) -> d.Dev:
    """Open the device *identifier* names, matched like the C++ apps: PCI address, else
    IB device name, else network interface name. ``DocaNotFound`` lists what exists."""
    if looks_like_pci_address(identifier):
        return d.Dev.open_by_pci_addr(identifier)
    try:
        return d.Dev.open_by_ibdev_name(identifier)
    except DocaNotFound:
        pass
    try:
        return d.Dev.open_by_iface_name(identifier)
    except DocaNotFound:
        have = ", ".join(f"{i.get_pci_addr_str()} ({i.get_ibdev_name()}, {i.get_iface_name()})"
                         for i in d.devinfo_create_list())
        raise DocaNotFound(f"no DOCA device matches {identifier!r} as a PCI address, IB device name or "
                           f"interface name (devices: {have or 'none'})") from None
