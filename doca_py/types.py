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
    if name is None and isinstance(member, enum.Flag):
        # 3.10 gives combined flags no name (3.11+ joins the bits' names): join them the same way.
        value, names = int(member.value), []
        for m in type(member):
            bit = int(m.value)
            if bit and bit & (bit - 1) == 0 and value & bit:
                names.append(str(m.name))
                value &= ~bit
        if names:
            return "|".join(names + ([hex(value)] if value else []))
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
    """``DOCA_ACCESS_FLAG_LOCAL_READ_ONLY``."""
    LOCAL_READ_WRITE = 1 << 0
    """``DOCA_ACCESS_FLAG_LOCAL_READ_WRITE``."""
    RDMA_READ = 1 << 1
    """``DOCA_ACCESS_FLAG_RDMA_READ``."""
    RDMA_WRITE = 1 << 2
    """``DOCA_ACCESS_FLAG_RDMA_WRITE``."""
    RDMA_ATOMIC = 1 << 3
    """``DOCA_ACCESS_FLAG_RDMA_ATOMIC``."""
    PCI_READ_ONLY = 1 << 4
    """``DOCA_ACCESS_FLAG_PCI_READ_ONLY``."""
    PCI_READ_WRITE = 1 << 5
    """``DOCA_ACCESS_FLAG_PCI_READ_WRITE``."""
    PCI_RELAXED_ORDERING = 1 << 6
    """``DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING``."""


class CtxState(NamedIntEnum):
    """``enum doca_ctx_states``."""

    IDLE = 0
    """``DOCA_CTX_STATE_IDLE``."""
    STARTING = 1
    """``DOCA_CTX_STATE_STARTING``."""
    RUNNING = 2
    """``DOCA_CTX_STATE_RUNNING``."""
    STOPPING = 3
    """``DOCA_CTX_STATE_STOPPING``."""


class PeEventMode(NamedIntEnum):
    """``enum doca_pe_event_mode`` (DOCA 3.x)."""

    PROGRESS_SELECTIVE = 0
    """``DOCA_PE_EVENT_MODE_PROGRESS_SELECTIVE``."""
    PROGRESS_ALL = 1
    """``DOCA_PE_EVENT_MODE_PROGRESS_ALL``."""


class TaskSubmitFlag(NamedIntFlag):
    """``enum doca_task_submit_flag`` (DOCA 3.x)."""

    NONE = 0
    """``DOCA_TASK_SUBMIT_FLAG_NONE``."""
    FLUSH = 1
    """``DOCA_TASK_SUBMIT_FLAG_FLUSH``."""
    OPTIMIZE_REPORTS = 2
    """``DOCA_TASK_SUBMIT_FLAG_OPTIMIZE_REPORTS``."""


class DevinfoRepFilter(NamedIntFlag):
    """``enum doca_devinfo_rep_filter``: which representors to list."""

    ALL = 0
    """``DOCA_DEVINFO_REP_FILTER_ALL``."""
    NET = 1 << 1
    """``DOCA_DEVINFO_REP_FILTER_NET``."""
    EMULATED = 1 << 2
    """``DOCA_DEVINFO_REP_FILTER_EMULATED``."""


class PciFuncType(NamedIntEnum):
    """``enum doca_pci_func_type``."""

    PF = 0
    """``DOCA_PCI_FUNC_TYPE_PF``."""
    VF = 1
    """``DOCA_PCI_FUNC_TYPE_VF``."""
    SF = 2
    """``DOCA_PCI_FUNC_TYPE_SF``."""


class MtuSize(NamedIntEnum):
    """``enum doca_mtu_size``."""

    MTU_256B = 0
    """``DOCA_MTU_SIZE_256_BYTES``."""
    MTU_512B = 1
    """``DOCA_MTU_SIZE_512_BYTES``."""
    MTU_1K = 2
    """``DOCA_MTU_SIZE_1K_BYTES``."""
    MTU_2K = 3
    """``DOCA_MTU_SIZE_2K_BYTES``."""
    MTU_4K = 4
    """``DOCA_MTU_SIZE_4K_BYTES``."""
    RAW_ETHERNET = 5
    """``DOCA_MTU_SIZE_RAW_ETHERNET`` (reserved)."""

    @property
    def c_name(self) -> str:
        """The C enumerator name (doca_types.h): ``DOCA_MTU_SIZE_1K_BYTES`` …"""
        if self is MtuSize.RAW_ETHERNET:
            return "DOCA_MTU_SIZE_RAW_ETHERNET"
        return f"DOCA_MTU_SIZE_{self.name.removeprefix('MTU_').removesuffix('B')}_BYTES"


# Caller-buffer sizes of the devinfo string getters (doca_dev.h).
DEVINFO_VUID_SIZE = 128
"""``DOCA_DEVINFO_VUID_SIZE``: buffer size for a VUID."""
DEVINFO_IPV4_ADDR_SIZE = 4
"""``DOCA_DEVINFO_IPV4_ADDR_SIZE``."""
DEVINFO_IPV6_ADDR_SIZE = 16
"""``DOCA_DEVINFO_IPV6_ADDR_SIZE``."""
DEVINFO_MAC_ADDR_SIZE = 6
"""``DOCA_DEVINFO_MAC_ADDR_SIZE``."""
DEVINFO_IFACE_NAME_SIZE = 256
"""``DOCA_DEVINFO_IFACE_NAME_SIZE``."""
DEVINFO_IBDEV_NAME_SIZE = 64
"""``DOCA_DEVINFO_IBDEV_NAME_SIZE``."""
DEVINFO_PCI_ADDR_SIZE = 13
"""``DOCA_DEVINFO_PCI_ADDR_SIZE``."""
DEVINFO_PCI_BDF_SIZE = 8
"""``DOCA_DEVINFO_PCI_BDF_SIZE``."""
