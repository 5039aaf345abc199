"""``doca_rdma`` settings: the transport types and [`RdmaOptions`][doca_py.rdma.RdmaOptions], every setting of an
[`Rdma`][doca_py.rdma.Rdma] context in one value.

Import these names from [`doca_py.rdma`][doca_py.rdma] (or ``doca_py``); this module is where they live.
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import AccessFlag, MtuSize, NamedIntEnum

__all__ = ["RdmaOptions", "RdmaTransportType"]


class RdmaTransportType(NamedIntEnum):
    """``enum doca_rdma_transport_type``."""

    RC = 0
    """``DOCA_RDMA_TRANSPORT_TYPE_RC``."""
    DC = 1
    """``DOCA_RDMA_TRANSPORT_TYPE_DC``."""


@dataclass(frozen=True, kw_only=True)
class RdmaOptions:
    """The settings of an [`Rdma`][doca_py.rdma.Rdma] context in one value (as cuda.core's ``StreamOptions``).

    Pass it to [`Rdma.configure`][doca_py.rdma.Rdma.configure] or ``Rdma(dev, options=...)`` while the ctx is
    IDLE. Every field is optional: ``None`` leaves the setting as it is (DOCA's default on a new ctx). Each
    field is applied through the DOCA-named setter of the same name (``permissions`` through
    ``doca_rdma_set_permissions`` …), which validates it.
    """

    permissions: AccessFlag | None = None
    """``doca_rdma_set_permissions``."""
    transport_type: RdmaTransportType | None = None
    """``doca_rdma_set_transport_type``."""
    gid_index: int | None = None
    """``doca_rdma_set_gid_index``."""
    max_num_connections: int | None = None
    """``doca_rdma_set_max_num_connections``."""
    mtu: MtuSize | None = None
    """``doca_rdma_set_mtu``."""
    recv_queue_size: int | None = None
    """``doca_rdma_set_recv_queue_size``."""
    send_queue_size: int | None = None
    """``doca_rdma_set_send_queue_size``."""
    max_send_buf_list_len: int | None = None
    """``doca_rdma_set_max_send_buf_list_len``."""
    receive_dst_buf_list_len: int | None = None
    """``doca_rdma_task_receive_set_dst_buf_list_len``."""
    grh_enabled: bool | None = None
    """``doca_rdma_set_grh_enabled``."""
    sl: int | None = None
    """``doca_rdma_set_sl``."""
    rnr_retry_count: int | None = None
    """``doca_rdma_set_rnr_retry_count``."""
    connection_request_timeout: int | None = None
    """``doca_rdma_set_connection_request_timeout`` (milliseconds)."""
