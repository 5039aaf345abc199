"""Raw declarations of ``doca_rdma_bridge.h`` (libdoca_common), in header order.

The bridge between rdma-core (``libibverbs``) and DOCA: a device's protection domain
(``struct ibv_pd *``, an opaque address here), a device opened on an application's
protection domain, and memory keys. ``doca_rdma_bridge_get_dev_pd``,
``doca_rdma_bridge_open_dev_from_pd`` and ``doca_rdma_bridge_get_buf_mkey`` are
``DOCA_STABLE`` with the same ABI in the DOCA 2.6.0058 and 3.0.0058 headers (NVIDIA's 3.1–3.3
verbs, GPUNetIO and DPA samples call them with the same arguments);
``doca_rdma_bridge_get_mmap_mkey_from_pd`` (experimental) is in 3.0's header, not in 2.6's.
Part of [`COMMON`][doca_py.native.capi.common.COMMON]: bind them with
[`load_common`][doca_py.native.capi.common.load_common].
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_uint32, c_void_p
from typing import Any

from ._decl import Decl

__all__ = ["RDMA_BRIDGE"]

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *, struct ibv_pd *
OUT = POINTER(c_void_p)  # T ** out-handle (struct ibv_pd **, struct doca_dev **)
U32_P = POINTER(c_uint32)


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


RDMA_BRIDGE: tuple[Decl, ...] = (
    _f("doca_rdma_bridge_get_dev_pd", ERR, P, OUT),
    _f("doca_rdma_bridge_open_dev_from_pd", ERR, P, OUT),
    _f("doca_rdma_bridge_get_buf_mkey", ERR, P, P, U32_P),
    _f("doca_rdma_bridge_get_mmap_mkey_from_pd", ERR, P, P, U32_P, since=(3, 0), note="added after 2.6"),
)
"""Every function of ``doca_rdma_bridge.h``."""
