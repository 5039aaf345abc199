"""Enumerations and constants of doca_types.h, doca_ctx.h, doca_pe.h and doca_dev.h.

Numeric values are DOCA's own, so they can be passed to the C API unchanged.
"""

from __future__ import annotations

import enum

__all__ = [
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


class AccessFlag(enum.IntFlag):
    """``enum doca_access_flag``: who may touch a memory map and how."""

    LOCAL_READ_ONLY = 0
    LOCAL_READ_WRITE = 1 << 0
    RDMA_READ = 1 << 1
    RDMA_WRITE = 1 << 2
    RDMA_ATOMIC = 1 << 3
    PCI_READ_ONLY = 1 << 4
    PCI_READ_WRITE = 1 << 5
    PCI_RELAXED_ORDERING = 1 << 6


class CtxState(enum.IntEnum):
    """``enum doca_ctx_states``."""

    IDLE = 0
    STARTING = 1
    RUNNING = 2
    STOPPING = 3


class PeEventMode(enum.IntEnum):
    """``enum doca_pe_event_mode`` (DOCA 3.x)."""

    PROGRESS_SELECTIVE = 0
    PROGRESS_ALL = 1


class TaskSubmitFlag(enum.IntFlag):
    """``enum doca_task_submit_flag`` (DOCA 3.x)."""

    NONE = 0
    FLUSH = 1
    OPTIMIZE_REPORTS = 2


class DevinfoRepFilter(enum.IntFlag):
    """``enum doca_devinfo_rep_filter``: which representors to list."""

    ALL = 0
    NET = 1 << 1
    EMULATED = 1 << 2


class PciFuncType(enum.IntEnum):
    """``enum doca_pci_func_type``."""

    PF = 0
    VF = 1
    SF = 2


class MtuSize(enum.IntEnum):
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
