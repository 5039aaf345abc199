"""What the DOCA version in use offers beyond DOCA 2.6, for the apps to decide once at set-up.

The storage apps follow the DOCA 3.x reference, which calls functions older releases do not export
(``doca_buf_inventory_buf_reuse_by_*`` from 3.2; ``doca_mmap_enable_thread_safety``, the RDMA connection
callbacks and ``doca_comch_server_disconnect`` from 3.0). Both backends refuse them where the version
lacks them, so an app asks here once, when it builds its objects, and takes the older way there (as
DOCA's own pre-3.2 storage sources did: buffers over a whole region, moved with ``doca_buf_set_data``).
Nothing on a per-IO path asks: the choice is made when the buffers and callbacks are set up.
"""

from __future__ import annotations

from dataclasses import dataclass

from doca_py.version import version_info_runtime

__all__ = ["DocaFeatures", "doca_features"]


@dataclass(frozen=True)
class DocaFeatures:
    """The version-dependent functions the apps use, for one DOCA version."""

    version: tuple[int, int]
    """``(major, minor)`` of the DOCA in use."""

    @property
    def buf_reuse(self) -> bool:
        """``doca_buf_inventory_buf_reuse_by_addr/_by_data`` (DOCA 3.2+): re-aim a buffer at another window."""
        return self.version >= (3, 2)

    @property
    def mmap_thread_safety(self) -> bool:
        """``doca_mmap_enable_thread_safety`` (DOCA 3.0+)."""
        return self.version >= (3, 0)

    @property
    def rdma_connection_callbacks(self) -> bool:
        """``doca_rdma_set_connection_state_callbacks`` (DOCA 3.0+; 2.6 has one implicit connection per ctx)."""
        return self.version >= (3, 0)

    @property
    def comch_server_disconnect(self) -> bool:
        """``doca_comch_server_disconnect`` (DOCA 3.0+; 2.6's server cannot drop a client)."""
        return self.version >= (3, 0)


def doca_features() -> DocaFeatures:
    """The features of the DOCA the backend in use presents (``doca_version_runtime()``)."""
    major, minor, _ = version_info_runtime()
    return DocaFeatures((major, minor))
