"""The zero-copy bridge's flags (``doca_storage_comch_to_rdma_zero_copy``, storage-apps-spec §2.3):
the bridges' shared ones plus the storage target's address."""

from __future__ import annotations

from apps.common.cli.config import Endpoint, ServiceConfig, flag

__all__ = ["ZeroCopyConfig"]


class ZeroCopyConfig(ServiceConfig):
    """``doca_storage_comch_to_rdma_zero_copy`` (§2.3)."""

    storage_server: Endpoint = flag(help="a.b.c.d:port of the storage target", metavar="ADDR:PORT")
