"""Raw declarations of libdoca_rdma (``doca-c-api.md`` §2.9, §6.2, §6.4).

[`RDMA`][doca_py.native.capi.rdma.RDMA] holds every exported function of the 3.0.0058 ``doca_rdma.h`` in header
order with its 3.x signature, followed by the thirteen DOCA 2.6 shared-receive-queue
functions ([`RDMA_SRQ_26`][doca_py.native.capi.rdma.RDMA_SRQ_26]) that 3.0 removed.

Thirteen symbols kept their names but changed ABI after 2.6 (§6.2): ``doca_rdma_export``
gains a ``doca_rdma_connection **`` out-parameter, ``doca_rdma_connect`` a connection
parameter, ``doca_rdma_get_dpa_handle`` writes a ``uint64_t`` instead of a pointer, and
ten ``*_allocate_init`` functions (all but receive) take the connection as their
second argument. Their 2.6 signatures are [`Variant`][doca_py.native.capi.Variant]\\ s
selected by the *absence* of ``doca_rdma_connection_get_id``
([`CONNECTION_MARKER`][doca_py.native.capi.rdma.CONNECTION_MARKER]), which arrived with the connection objects: that pins the
change more precisely than a version number, since it may have landed inside 2.x (§6.1).

Connection callbacks (§4.3) are [`RdmaConnectionRequestCb`][doca_py.native.capi.rdma.RdmaConnectionRequestCb] (request) and
[`RdmaConnectionEventCb`][doca_py.native.capi.rdma.RdmaConnectionEventCb] (established, failure, disconnection); task callbacks are
[`TaskCompletionCb`][doca_py.native.capi.TaskCompletionCb]. ``doca_be32_t`` immediates are plain
``c_uint32`` values passed through unchanged. Use [`load_rdma`][doca_py.native.capi.rdma.load_rdma] for the bound
functions:

```python
import ctypes
from doca_py import errors
from doca_py.native.capi.rdma import load_rdma

lib = load_rdma()
rdma = ctypes.c_void_p()
errors.check(lib.doca_rdma_create(dev_ptr, ctypes.byref(rdma)), "doca_rdma_create")
```
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, cast

from ...types import NamedIntEnum
from ._decl import Decl, TaskCompletionCb, pre3, register

if TYPE_CHECKING:
    from ._raw import RdmaLib

__all__ = [
    "RDMA",
    "RDMA_SRQ_26",
    "LIBNAME",
    "CONNECTION_MARKER",
    "DocaRdmaGid",
    "RdmaSrqType",
    "RdmaConnectionRequestCb",
    "RdmaConnectionEventCb",
    "load_rdma",
]

LIBNAME = "rdma"

#: Present from the release that added connection objects and the connection ABI (§6.1).
CONNECTION_MARKER = "doca_rdma_connection_get_id"

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
CB = TaskCompletionCb  # doca_rdma_task_*_completion_cb_t
BE32 = c_uint32  # doca_be32_t
ENUM = c_int
U8_P = POINTER(c_uint8)
U16_P = POINTER(c_uint16)
U32_P = POINTER(c_uint32)
U64_P = POINTER(c_uint64)
INT_P = POINTER(c_int)  # enum out-parameter


class DocaRdmaGid(ctypes.Structure):
    """``struct doca_rdma_gid``: ``uint8_t raw[16]`` (array argument of ``doca_rdma_cap_get_gid``)."""

    _fields_ = [("raw", c_uint8 * 16)]


class RdmaSrqType(NamedIntEnum):
    """``enum doca_rdma_srq_type`` of DOCA 2.6 (``doca_rdma_srq_set_type``/``_get_type``; gone with the SRQ API in 3.0)."""

    LINKED_LIST = 0
    """``DOCA_RDMA_SRQ_TYPE_LINKED_LIST``."""
    CYCLIC = 1
    """``DOCA_RDMA_SRQ_TYPE_CYCLIC``."""


RdmaConnectionRequestCb = ctypes.CFUNCTYPE(None, c_void_p, c_uint64)
"""``doca_rdma_connection_request_cb_t(connection, ctx_user_data)``."""

RdmaConnectionEventCb = ctypes.CFUNCTYPE(None, c_void_p, c_uint64, c_uint64)
"""``doca_rdma_connection_{established,failure,disconnection}_cb_t(connection, connection_user_data,
ctx_user_data)``."""

# "—" rows of doca-c-api.md: absent in 2.6.0058, present in 3.0.0058.
_NEW: dict[str, Any] = {"since": (3, 0), "note": "added after 2.6 with the connection API"}
# The 2.6 SRQ API (§6.4).
_SRQ: dict[str, Any] = {"until": (2, 6), "note": "the shared receive queue API was removed in 3.0"}


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


def _delta(name: str, restype: Any, new: tuple[Any, ...], old: tuple[Any, ...]) -> Decl:
    """A §6.2 row: 3.x *new* argtypes, 2.6 *old* ones (chosen when the marker is absent)."""
    return Decl(name, restype, new, variants=(pre3(restype, old, marker=CONNECTION_MARKER),))


RDMA: tuple[Decl, ...] = (
    # -- context, export/connect, RDMA-CM, bridge (rows 1–16)
    _f("doca_rdma_create", ERR, P, OUT),
    _f("doca_rdma_destroy", ERR, P),
    _f("doca_rdma_as_ctx", P, P),
    _delta("doca_rdma_export", ERR, (P, OUT, POINTER(c_size_t), OUT), (P, OUT, POINTER(c_size_t))),
    _delta("doca_rdma_connect", ERR, (P, c_void_p, c_size_t, P), (P, c_void_p, c_size_t)),
    _f("doca_rdma_addr_create", ERR, ENUM, c_char_p, c_uint16, OUT, **_NEW),
    _f("doca_rdma_addr_destroy", ERR, P, **_NEW),
    _f("doca_rdma_start_listen_to_port", ERR, P, c_uint16, **_NEW),
    _f("doca_rdma_stop_listen_to_port", ERR, P, c_uint16, **_NEW),
    _f("doca_rdma_connection_accept", ERR, P, c_void_p, c_uint8, **_NEW),
    _f("doca_rdma_connection_reject", ERR, P, **_NEW),
    _f("doca_rdma_connect_to_addr", ERR, P, P, DATA, **_NEW),
    _f("doca_rdma_connection_disconnect", ERR, P, **_NEW),
    _f("doca_rdma_bridge_prepare_connection", ERR, P, c_void_p, OUT, **_NEW),
    _f("doca_rdma_bridge_accept", ERR, P, c_void_p, c_uint8, P, **_NEW),
    _f("doca_rdma_bridge_established", ERR, P, P, **_NEW),
    # -- device capabilities (17–23)
    _f("doca_rdma_cap_get_max_recv_queue_size", ERR, P, U32_P),
    _f("doca_rdma_cap_get_max_send_queue_size", ERR, P, U32_P),
    _f("doca_rdma_cap_get_max_send_buf_list_len", ERR, P, U32_P),
    _f("doca_rdma_cap_get_max_message_size", ERR, P, U32_P),
    _f("doca_rdma_cap_get_gid_table_size", ERR, P, U32_P),
    _f("doca_rdma_cap_get_gid", ERR, P, c_uint32, c_uint32, POINTER(DocaRdmaGid)),
    _f("doca_rdma_cap_transport_type_is_supported", ERR, P, ENUM),
    # -- setters (24–36)
    _f("doca_rdma_set_send_queue_size", ERR, P, c_uint32),
    _f("doca_rdma_set_recv_queue_size", ERR, P, c_uint32),
    _f("doca_rdma_set_max_send_buf_list_len", ERR, P, c_uint32),
    _f("doca_rdma_set_transport_type", ERR, P, ENUM),
    _f("doca_rdma_set_mtu", ERR, P, ENUM),
    _f("doca_rdma_set_permissions", ERR, P, c_uint32),
    _f("doca_rdma_set_grh_enabled", ERR, P, c_uint8),
    _f("doca_rdma_set_gid_index", ERR, P, c_uint32),
    _f("doca_rdma_set_sl", ERR, P, c_uint32),
    _f("doca_rdma_set_connection_request_timeout", ERR, P, c_uint16, **_NEW),
    _f("doca_rdma_connection_set_user_data", ERR, P, DATA, **_NEW),
    _f("doca_rdma_set_max_num_connections", ERR, P, c_uint16, **_NEW),
    _f("doca_rdma_set_rnr_retry_count", ERR, P, c_uint8, **_NEW),
    # -- getters (37–54)
    _f("doca_rdma_get_send_queue_size", ERR, P, U32_P),
    _f("doca_rdma_get_recv_queue_size", ERR, P, U32_P),
    _f("doca_rdma_get_max_send_buf_list_len", ERR, P, U32_P),
    _f("doca_rdma_get_transport_type", ERR, P, INT_P),
    _f("doca_rdma_get_mtu", ERR, P, INT_P),
    _f("doca_rdma_get_permissions", ERR, P, U32_P),
    _f("doca_rdma_get_grh_enabled", ERR, P, U8_P),
    _f("doca_rdma_get_gid_index", ERR, P, U32_P),
    _f("doca_rdma_get_sl", ERR, P, U32_P),
    # 2.6 wrote a struct doca_dpa_dev_rdma *, 3.0 a doca_dpa_dev_rdma_t (uint64_t) (§6.2 #4).
    _delta("doca_rdma_get_dpa_handle", ERR, (P, U64_P), (P, OUT)),
    _f("doca_rdma_get_gpu_handle", ERR, P, OUT, **_NEW),
    _f("doca_rdma_get_connection_request_timeout", ERR, P, U16_P, **_NEW),
    _f("doca_rdma_connection_get_addr", ERR, P, OUT, **_NEW),
    _f("doca_rdma_addr_get_params", ERR, P, INT_P, POINTER(c_char_p), U16_P, **_NEW),
    _f("doca_rdma_connection_get_user_data", ERR, P, U64_P, **_NEW),
    _f("doca_rdma_connection_get_id", ERR, P, U32_P, **_NEW),
    _f("doca_rdma_get_max_num_connections", ERR, P, U16_P, **_NEW),
    _f("doca_rdma_get_rnr_retry_count", ERR, P, U8_P, **_NEW),
    _f("doca_rdma_set_connection_state_callbacks", ERR, P, RdmaConnectionRequestCb, RdmaConnectionEventCb,
       RdmaConnectionEventCb, RdmaConnectionEventCb, **_NEW),
    # -- receive (56–68): its allocate_init has no connection in any version
    _f("doca_rdma_cap_task_receive_is_supported", ERR, P),
    _f("doca_rdma_cap_task_receive_get_max_dst_buf_list_len", ERR, P, ENUM, U32_P),
    _f("doca_rdma_task_receive_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_rdma_task_receive_set_dst_buf_list_len", ERR, P, c_uint32),
    _f("doca_rdma_task_receive_get_dst_buf_list_len", ERR, P, U32_P),
    _f("doca_rdma_task_receive_allocate_init", ERR, P, P, DATA, OUT),
    _f("doca_rdma_task_receive_as_task", P, P),
    _f("doca_rdma_task_receive_set_dst_buf", None, P, P),
    _f("doca_rdma_task_receive_get_dst_buf", P, P),
    _f("doca_rdma_task_receive_get_result_opcode", ENUM, P),
    _f("doca_rdma_task_receive_get_result_len", c_uint32, P),
    _f("doca_rdma_task_receive_get_result_immediate_data", BE32, P),
    _f("doca_rdma_task_receive_get_result_rdma_connection", P, P, **_NEW),
    # -- send (69–76)
    _f("doca_rdma_cap_task_send_is_supported", ERR, P),
    _f("doca_rdma_task_send_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_send_allocate_init", ERR, (P, P, P, DATA, OUT), (P, P, DATA, OUT)),
    _f("doca_rdma_task_send_as_task", P, P),
    _f("doca_rdma_task_send_set_src_buf", None, P, P),
    _f("doca_rdma_task_send_get_src_buf", P, P),
    _f("doca_rdma_task_send_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_send_get_rdma_connection", P, P, **_NEW),
    # -- send with immediate (77–86)
    _f("doca_rdma_cap_task_send_imm_is_supported", ERR, P),
    _f("doca_rdma_task_send_imm_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_send_imm_allocate_init", ERR, (P, P, P, BE32, DATA, OUT), (P, P, BE32, DATA, OUT)),
    _f("doca_rdma_task_send_imm_as_task", P, P),
    _f("doca_rdma_task_send_imm_set_src_buf", None, P, P),
    _f("doca_rdma_task_send_imm_get_src_buf", P, P),
    _f("doca_rdma_task_send_imm_set_immediate_data", None, P, BE32),
    _f("doca_rdma_task_send_imm_get_immediate_data", BE32, P),
    _f("doca_rdma_task_send_imm_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_send_imm_get_rdma_connection", P, P, **_NEW),
    # -- read (87–97)
    _f("doca_rdma_cap_task_read_is_supported", ERR, P),
    _f("doca_rdma_task_read_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_read_allocate_init", ERR, (P, P, P, P, DATA, OUT), (P, P, P, DATA, OUT)),
    _f("doca_rdma_task_read_as_task", P, P),
    _f("doca_rdma_task_read_set_src_buf", None, P, P),
    _f("doca_rdma_task_read_get_src_buf", P, P),
    _f("doca_rdma_task_read_set_dst_buf", None, P, P),
    _f("doca_rdma_task_read_get_dst_buf", P, P),
    _f("doca_rdma_task_read_get_result_len", c_uint32, P),
    _f("doca_rdma_task_read_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_read_get_rdma_connection", P, P, **_NEW),
    # -- write (98–107)
    _f("doca_rdma_cap_task_write_is_supported", ERR, P),
    _f("doca_rdma_task_write_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_write_allocate_init", ERR, (P, P, P, P, DATA, OUT), (P, P, P, DATA, OUT)),
    _f("doca_rdma_task_write_as_task", P, P),
    _f("doca_rdma_task_write_set_src_buf", None, P, P),
    _f("doca_rdma_task_write_get_src_buf", P, P),
    _f("doca_rdma_task_write_set_dst_buf", None, P, P),
    _f("doca_rdma_task_write_get_dst_buf", P, P),
    _f("doca_rdma_task_write_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_write_get_rdma_connection", P, P, **_NEW),
    # -- write with immediate (108–119)
    _f("doca_rdma_cap_task_write_imm_is_supported", ERR, P),
    _f("doca_rdma_task_write_imm_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_write_imm_allocate_init", ERR, (P, P, P, P, BE32, DATA, OUT), (P, P, P, BE32, DATA, OUT)),
    _f("doca_rdma_task_write_imm_as_task", P, P),
    _f("doca_rdma_task_write_imm_set_src_buf", None, P, P),
    _f("doca_rdma_task_write_imm_get_src_buf", P, P),
    _f("doca_rdma_task_write_imm_set_dst_buf", None, P, P),
    _f("doca_rdma_task_write_imm_get_dst_buf", P, P),
    _f("doca_rdma_task_write_imm_set_immediate_data", None, P, BE32),
    _f("doca_rdma_task_write_imm_get_immediate_data", BE32, P),
    _f("doca_rdma_task_write_imm_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_write_imm_get_rdma_connection", P, P, **_NEW),
    # -- atomic compare-and-swap (120–133)
    _f("doca_rdma_cap_task_atomic_cmp_swp_is_supported", ERR, P),
    _f("doca_rdma_task_atomic_cmp_swp_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_atomic_cmp_swp_allocate_init", ERR, (P, P, P, P, c_uint64, c_uint64, DATA, OUT), (P, P, P, c_uint64, c_uint64, DATA, OUT)),
    _f("doca_rdma_task_atomic_cmp_swp_as_task", P, P),
    _f("doca_rdma_task_atomic_cmp_swp_set_dst_buf", None, P, P),
    _f("doca_rdma_task_atomic_cmp_swp_get_dst_buf", P, P),
    _f("doca_rdma_task_atomic_cmp_swp_set_result_buf", None, P, P),
    _f("doca_rdma_task_atomic_cmp_swp_get_result_buf", P, P),
    _f("doca_rdma_task_atomic_cmp_swp_set_cmp_data", None, P, c_uint64),
    _f("doca_rdma_task_atomic_cmp_swp_get_cmp_data", c_uint64, P),
    _f("doca_rdma_task_atomic_cmp_swp_set_swap_data", None, P, c_uint64),
    _f("doca_rdma_task_atomic_cmp_swp_get_swap_data", c_uint64, P),
    _f("doca_rdma_task_atomic_cmp_swp_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_atomic_cmp_swp_get_rdma_connection", P, P, **_NEW),
    # -- atomic fetch-and-add (134–145)
    _f("doca_rdma_cap_task_atomic_fetch_add_is_supported", ERR, P),
    _f("doca_rdma_task_atomic_fetch_add_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_atomic_fetch_add_allocate_init", ERR, (P, P, P, P, c_uint64, DATA, OUT), (P, P, P, c_uint64, DATA, OUT)),
    _f("doca_rdma_task_atomic_fetch_add_as_task", P, P),
    _f("doca_rdma_task_atomic_fetch_add_set_dst_buf", None, P, P),
    _f("doca_rdma_task_atomic_fetch_add_get_dst_buf", P, P),
    _f("doca_rdma_task_atomic_fetch_add_set_result_buf", None, P, P),
    _f("doca_rdma_task_atomic_fetch_add_get_result_buf", P, P),
    _f("doca_rdma_task_atomic_fetch_add_set_add_data", None, P, c_uint64),
    _f("doca_rdma_task_atomic_fetch_add_get_add_data", c_uint64, P),
    _f("doca_rdma_task_atomic_fetch_add_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_atomic_fetch_add_get_rdma_connection", P, P, **_NEW),
    # -- remote net sync event get (146–156)
    _f("doca_rdma_cap_task_remote_net_sync_event_get_is_supported", ERR, P),
    _f("doca_rdma_task_remote_net_sync_event_get_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_remote_net_sync_event_get_allocate_init", ERR, (P, P, P, P, DATA, OUT), (P, P, P, DATA, OUT)),
    _f("doca_rdma_task_remote_net_sync_event_get_as_task", P, P),
    _f("doca_rdma_task_remote_net_sync_event_get_set_sync_event", None, P, P),
    _f("doca_rdma_task_remote_net_sync_event_get_get_sync_event", P, P),
    _f("doca_rdma_task_remote_net_sync_event_get_set_dst_buf", None, P, P),
    _f("doca_rdma_task_remote_net_sync_event_get_get_dst_buf", P, P),
    _f("doca_rdma_task_remote_net_sync_event_get_get_result_len", c_uint32, P),
    _f("doca_rdma_task_remote_net_sync_event_get_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_remote_net_sync_event_get_get_rdma_connection", P, P, **_NEW),
    # -- remote net sync event notify set (157–166)
    _f("doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported", ERR, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_remote_net_sync_event_notify_set_allocate_init", ERR, (P, P, P, P, DATA, OUT), (P, P, P, DATA, OUT)),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_as_task", P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_set_sync_event", None, P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_get_sync_event", P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_get_rdma_connection", P, P, **_NEW),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf", None, P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf", P, P),
    # -- remote net sync event notify add (167–178)
    _f("doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported", ERR, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_set_conf", ERR, P, CB, CB, c_uint32),
    _delta("doca_rdma_task_remote_net_sync_event_notify_add_allocate_init", ERR, (P, P, P, P, c_uint64, DATA, OUT), (P, P, P, c_uint64, DATA, OUT)),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_as_task", P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_set_sync_event", None, P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_get_sync_event", P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf", None, P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf", P, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_set_add_data", None, P, c_uint64),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_get_add_data", c_uint64, P),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_set_rdma_connection", None, P, P, **_NEW),
    _f("doca_rdma_task_remote_net_sync_event_notify_add_get_rdma_connection", P, P, **_NEW),
    # -- DPA (179)
    _f("doca_rdma_dpa_completion_attach", ERR, P, P, **_NEW),
)
"""Every exported libdoca_rdma function of DOCA 3.0.0058, in header order (§2.9)."""

RDMA_SRQ_26: tuple[Decl, ...] = (
    _f("doca_rdma_create_with_srq", ERR, P, P, OUT, **_SRQ),
    _f("doca_rdma_srq_create", ERR, P, OUT, **_SRQ),
    _f("doca_rdma_srq_destroy", ERR, P, **_SRQ),
    _f("doca_rdma_srq_as_ctx", P, P, **_SRQ),
    _f("doca_rdma_srq_cap_get_max_shared_recv_queue_size", ERR, P, U32_P, **_SRQ),
    _f("doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len", ERR, P, U32_P, **_SRQ),
    _f("doca_rdma_srq_set_shared_recv_queue_size", ERR, P, c_uint32, **_SRQ),
    _f("doca_rdma_srq_task_receive_set_dst_buf_list_len", ERR, P, c_uint32, **_SRQ),
    _f("doca_rdma_srq_set_type", ERR, P, ENUM, **_SRQ),
    _f("doca_rdma_srq_get_type", ERR, P, INT_P, **_SRQ),
    _f("doca_rdma_srq_task_receive_get_dst_buf_list_len", ERR, P, U32_P, **_SRQ),
    _f("doca_rdma_srq_get_shared_recv_queue_size", ERR, P, U32_P, **_SRQ),
    _f("doca_rdma_srq_get_dpa_handle", ERR, P, OUT, **_SRQ),
)
"""The DOCA 2.6.0058 shared-receive-queue functions, removed in 3.0 (§6.4), in 2.6 header order."""

register(LIBNAME, RDMA + RDMA_SRQ_26)


def load_rdma() -> RdmaLib:
    """The bound libdoca_rdma functions (cached; opens libdoca_common first).

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when libdoca_rdma cannot be opened.
    """
    from . import load

    return cast("RdmaLib", load(LIBNAME))
