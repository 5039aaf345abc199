"""Enumerations and constants of doca_types.h, doca_ctx.h, doca_pe.h and doca_dev.h.

Numeric values are DOCA's own, so they can be passed to the C API unchanged.
``str()`` and ``format()`` of these enumerations give the member's name
(``f"{CtxState.RUNNING}"`` is ``"RUNNING"``, a flag combination reads
``"LOCAL_READ_WRITE|PCI_READ_WRITE"``); a numeric format (``{state:d}``, ``{flags:#x}``)
and ``int()`` give the number.
"""

from __future__ import annotations

import enum

__all__ = [
    "NamedIntEnum",
    "NamedIntFlag",
    "AccessFlag",
    "CtxState",
    "PeEventMode",
    "TaskSubmitFlag",
    "DevinfoRepFilter",
    "PciFuncType",
    "MtuSize",
    "DEVINFO_VUID_SIZE",
    "DEVINFO_IPV4_ADDR_SIZE",
    "DEVINFO_IPV6_ADDR_SIZE",
    "DEVINFO_MAC_ADDR_SIZE",
    "DEVINFO_IFACE_NAME_SIZE",
    "DEVINFO_IBDEV_NAME_SIZE",
    "DEVINFO_PCI_ADDR_SIZE",
    "DEVINFO_PCI_BDF_SIZE",
]


# The presentation types of the format mini-language that format a number.
_NUMERIC_FORMATS = frozenset("bcdeEfFgGnoxX%")


def _named_str(member: enum.Enum) -> str:
    name = member.name
    return name if name is not None else str(int(member.value))


def _named_format(member: enum.Enum, spec: str) -> str:
    if spec and spec[-1] in _NUMERIC_FORMATS:
        return format(int(member.value), spec)
    return format(_named_str(member), spec)


class NamedIntEnum(enum.IntEnum):
    """An ``IntEnum`` whose ``str()``/``format()`` is the member name, not the number."""

    def __str__(self) -> str:
        return _named_str(self)

    def __format__(self, spec: str) -> str:
        return _named_format(self, spec)


class NamedIntFlag(enum.IntFlag):
    """An ``IntFlag`` whose ``str()``/``format()`` is the member names joined by ``|``."""

    def __str__(self) -> str:
        return _named_str(self)

    def __format__(self, spec: str) -> str:
        return _named_format(self, spec)


class AccessFlag(NamedIntFlag):
    """``enum doca_access_flag``: who may touch a memory map and how."""

    LOCAL_READ_ONLY = 0
    LOCAL_READ_WRITE = 1 << 0
    RDMA_READ = 1 << 1
    RDMA_WRITE = 1 << 2
    RDMA_ATOMIC = 1 << 3
    PCI_READ_ONLY = 1 << 4
    PCI_READ_WRITE = 1 << 5
    PCI_RELAXED_ORDERING = 1 << 6


class CtxState(NamedIntEnum):
    """``enum doca_ctx_states``."""

    IDLE = 0
    STARTING = 1
    RUNNING = 2
    STOPPING = 3


class PeEventMode(NamedIntEnum):
    """``enum doca_pe_event_mode`` (DOCA 3.x)."""

    PROGRESS_SELECTIVE = 0
    PROGRESS_ALL = 1


class TaskSubmitFlag(NamedIntFlag):
    """``enum doca_task_submit_flag`` (DOCA 3.x)."""

    NONE = 0
    FLUSH = 1
    OPTIMIZE_REPORTS = 2


class DevinfoRepFilter(NamedIntFlag):
    """``enum doca_devinfo_rep_filter``: which representors to list."""

    ALL = 0
    NET = 1 << 1
    EMULATED = 1 << 2


class PciFuncType(NamedIntEnum):
    """``enum doca_pci_func_type``."""

    PF = 0
    VF = 1
    SF = 2


class MtuSize(NamedIntEnum):
    """``enum doca_mtu_size``."""

    MTU_256B = 0
    MTU_512B = 1
    MTU_1K = 2
    MTU_2K = 3
    MTU_4K = 4
    RAW_ETHERNET = 5


# Caller-buffer sizes of the devinfo string getters (doca_dev.h).
DEVINFO_VUID_SIZE = 128
DEVINFO_IPV4_ADDR_SIZE = 4
DEVINFO_IPV6_ADDR_SIZE = 16
DEVINFO_MAC_ADDR_SIZE = 6
DEVINFO_IFACE_NAME_SIZE = 256
DEVINFO_IBDEV_NAME_SIZE = 64
DEVINFO_PCI_ADDR_SIZE = 13
DEVINFO_PCI_BDF_SIZE = 8
