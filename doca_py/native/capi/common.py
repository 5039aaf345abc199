"""Raw declarations of libdoca_common (``doca-c-api.md`` §2.1–2.8 and §2.17).

Every exported function of the 3.0.0058 headers is in [`COMMON`][doca_py.native.capi.common.COMMON], in header
order, plus the 3.1/3.2 additions the storage apps and samples use. Not declared,
because the headers define them ``static inline`` and no symbol exists:
``doca_version``, ``doca_buf_inventory_buf_get_by_addr`` and ``_by_data`` — see
[`INLINE`][doca_py.native.capi.common.INLINE] and `doca_py.native.inline`. ``doca_pe_set_notification_handle``
is declared but Windows-only, so on Linux it is always a
`MissingFunction`.

Use [`load_common`][doca_py.native.capi.common.load_common] for the bound functions:

```python
from doca_py import errors
from doca_py.native.capi import load_common

lib = load_common()
pe = ctypes.c_void_p()
errors.check(lib.doca_pe_create(ctypes.byref(pe)), "doca_pe_create")
```
"""

from __future__ import annotations

from ctypes import (
    POINTER,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import TYPE_CHECKING, Any, cast

from ._decl import CtxStateChangedCb, Decl, LogFlushCb, MmapMemrangeFreeCb, pre3, register
from .buf_pool import BUF_POOL
from .graph import GRAPH
from .mmap_advise import MMAP_ADVISE
from .rdma_bridge import RDMA_BRIDGE
from .sync_event import SYNC_EVENT

if TYPE_CHECKING:
    from ._raw import CommonLib

__all__ = ["BEYOND_INVENTORY", "COMMON", "INLINE", "LIBNAME", "load_common"]

LIBNAME = "common"

# Short aliases keep each row one line, like the tables in doca-c-api.md.
ERR = c_int  # doca_error_t
P = c_void_p  # any opaque struct doca_x * (and FILE *, void *)
OUT = POINTER(c_void_p)  # T ** out-handle, void ** out-pointer
OUT_LIST = POINTER(POINTER(c_void_p))  # T *** out-array of handles
STR = c_char_p  # const char * input
CBUF = POINTER(c_char)  # caller-provided char buffer the function fills
DATA = c_uint64  # union doca_data by value
DATA_P = POINTER(c_uint64)  # union doca_data *
U8_P = POINTER(c_uint8)
U16_P = POINTER(c_uint16)
U32_P = POINTER(c_uint32)
U64_P = POINTER(c_uint64)
SIZE_P = POINTER(c_size_t)
INT_P = POINTER(c_int)  # int *, enum *, doca_notification_handle_t * (an fd on Linux)
NOTIF = c_int  # doca_notification_handle_t on Linux

# "—" rows of doca-c-api.md: absent in 2.6.0058, present in 3.0.0058.
_NEW = {"since": (3, 0), "note": "added after 2.6"}


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


COMMON: tuple[Decl, ...] = (
    # §2.1 doca_error / doca_version
    _f("doca_error_get_name", STR, ERR),
    _f("doca_error_get_descr", STR, ERR),
    _f("doca_version_runtime", STR),
    # §2.2 doca_dev
    _f("doca_devinfo_create_list", ERR, OUT_LIST, U32_P),
    _f("doca_devinfo_destroy_list", ERR, OUT),
    _f("doca_devinfo_rep_create_list", ERR, P, c_int, OUT_LIST, U32_P),
    _f("doca_devinfo_rep_destroy_list", ERR, OUT),
    _f("doca_dev_open", ERR, P, OUT),
    _f("doca_dev_close", ERR, P),
    _f("doca_dev_accelerate_resource_reclaim", ERR, P, **_NEW),
    _f("doca_dev_rep_open", ERR, P, OUT),
    _f("doca_dev_rep_close", ERR, P),
    _f("doca_dev_as_devinfo", P, P),
    _f("doca_dev_rep_as_devinfo", P, P),
    _f("doca_devinfo_get_pci_addr_str", ERR, P, CBUF),
    _f("doca_devinfo_is_equal_pci_addr", ERR, P, STR, U8_P),
    _f("doca_devinfo_get_ipv4_addr", ERR, P, U8_P, c_uint32),
    _f("doca_devinfo_get_ipv6_addr", ERR, P, U8_P, c_uint32),
    _f("doca_devinfo_get_mac_addr", ERR, P, U8_P, c_uint32),
    _f("doca_devinfo_get_iface_name", ERR, P, CBUF, c_uint32),
    _f("doca_devinfo_get_ibdev_name", ERR, P, CBUF, c_uint32),
    _f("doca_devinfo_get_lid", ERR, P, U16_P),
    # 2.6 wrote a double, 3.0 a uint64_t (§6.2 #1).
    _f("doca_devinfo_get_active_rate", ERR, P, U64_P, variants=(pre3(ERR, (P, POINTER(c_double))),)),
    _f("doca_devinfo_get_vhca_id", ERR, P, U16_P, **_NEW),
    _f("doca_devinfo_cap_is_hotplug_manager_supported", ERR, P, U8_P),
    _f("doca_devinfo_cap_is_notification_moderation_supported", ERR, P, U8_P, **_NEW),
    _f("doca_devinfo_rep_cap_is_filter_all_supported", ERR, P, U8_P),
    _f("doca_devinfo_rep_cap_is_filter_net_supported", ERR, P, U8_P),
    _f("doca_devinfo_rep_cap_is_filter_emulated_supported", ERR, P, U8_P),
    _f("doca_devinfo_cap_is_accelerate_resource_reclaim_supported", ERR, P, U8_P, **_NEW),
    _f("doca_devinfo_rep_get_vuid", ERR, P, CBUF, c_uint32),
    _f("doca_devinfo_rep_get_pci_addr_str", ERR, P, CBUF),
    _f("doca_devinfo_rep_get_pci_func_type", ERR, P, INT_P),
    _f("doca_devinfo_rep_get_is_hotplug", ERR, P, U8_P),
    _f("doca_devinfo_rep_get_iface_name", ERR, P, CBUF, c_uint32, **_NEW),
    _f("doca_devinfo_rep_get_vhca_id", ERR, P, U16_P, **_NEW),
    _f("doca_devinfo_rep_is_equal_pci_addr", ERR, P, STR, U8_P),
    # §2.3 doca_mmap
    _f("doca_mmap_create", ERR, OUT),
    _f("doca_mmap_destroy", ERR, P),
    _f("doca_mmap_start", ERR, P),
    _f("doca_mmap_stop", ERR, P),
    _f("doca_mmap_add_dev", ERR, P, P),
    _f("doca_mmap_rm_dev", ERR, P, P),
    _f("doca_mmap_export_pci", ERR, P, P, OUT, SIZE_P),
    _f("doca_mmap_export_rdma", ERR, P, P, OUT, SIZE_P),
    _f("doca_mmap_dev_get_dpa_handle", ERR, P, P, U32_P, **_NEW),
    _f("doca_mmap_create_from_export", ERR, DATA_P, P, c_size_t, P, OUT),
    _f("doca_mmap_set_memrange", ERR, P, P, c_size_t),
    _f("doca_mmap_set_dmabuf_memrange", ERR, P, c_int, P, c_size_t, c_size_t),
    _f("doca_mmap_set_dpa_memrange", ERR, P, P, c_uint64, c_size_t, **_NEW),
    _f("doca_mmap_get_memrange", ERR, P, OUT, SIZE_P),
    _f("doca_mmap_set_free_cb", ERR, P, MmapMemrangeFreeCb, P),
    _f("doca_mmap_get_user_data", ERR, P, DATA_P),
    _f("doca_mmap_get_max_num_devices", ERR, P, U32_P),
    _f("doca_mmap_get_num_bufs", ERR, P, U32_P),
    _f("doca_mmap_get_exported", ERR, P, U8_P),
    _f("doca_mmap_get_from_export", ERR, P, U8_P),
    _f("doca_mmap_set_max_num_devices", ERR, P, c_uint32),
    _f("doca_mmap_set_permissions", ERR, P, c_uint32),
    _f("doca_mmap_set_user_data", ERR, P, DATA),
    _f("doca_mmap_cap_is_export_pci_supported", ERR, P, U8_P),
    _f("doca_mmap_cap_is_create_from_export_pci_supported", ERR, P, U8_P),
    _f("doca_mmap_enable_thread_safety", ERR, P, **_NEW),
    # §2.4 doca_buf
    _f("doca_buf_inc_refcount", ERR, P, U16_P),
    _f("doca_buf_dec_refcount", ERR, P, U16_P),
    _f("doca_buf_get_refcount", ERR, P, U16_P),
    _f("doca_buf_get_len", ERR, P, SIZE_P),
    _f("doca_buf_get_head", ERR, P, OUT),
    _f("doca_buf_get_data_len", ERR, P, SIZE_P),
    _f("doca_buf_get_data", ERR, P, OUT),
    _f("doca_buf_set_data", ERR, P, P, c_size_t),
    _f("doca_buf_set_data_len", ERR, P, c_size_t, **_NEW),
    _f("doca_buf_reset_data_len", ERR, P),
    _f("doca_buf_get_next_in_list", ERR, P, OUT),
    _f("doca_buf_get_last_in_list", ERR, P, OUT),
    _f("doca_buf_is_last_in_list", ERR, P, U8_P),
    _f("doca_buf_is_first_in_list", ERR, P, U8_P),
    _f("doca_buf_is_in_list", ERR, P, U8_P),
    _f("doca_buf_get_list_len", ERR, P, U32_P),
    _f("doca_buf_chain_list", ERR, P, P),
    _f("doca_buf_chain_list_tail", ERR, P, P, P, **_NEW),
    _f("doca_buf_unchain_list", ERR, P, P),
    # §2.5 doca_buf_inventory (get_by_addr/_by_data are inline: see INLINE)
    _f("doca_buf_inventory_create", ERR, c_size_t, OUT),
    _f("doca_buf_inventory_destroy", ERR, P),
    _f("doca_buf_inventory_start", ERR, P),
    _f("doca_buf_inventory_stop", ERR, P),
    _f("doca_buf_inventory_buf_get_by_args", ERR, P, P, P, c_size_t, P, c_size_t, OUT),
    _f("doca_buf_inventory_buf_dup", ERR, P, P, OUT),
    _f("doca_buf_inventory_set_user_data", ERR, P, DATA),
    _f("doca_buf_inventory_get_num_elements", ERR, P, U32_P),
    _f("doca_buf_inventory_get_num_free_elements", ERR, P, U32_P),
    _f("doca_buf_inventory_get_user_data", ERR, P, DATA_P),
    _f("doca_buf_inventory_expand", ERR, P, c_uint32, **_NEW),
    # §2.6 doca_pe and doca_task
    _f("doca_pe_create", ERR, OUT),
    _f("doca_pe_destroy", ERR, P),
    _f("doca_pe_progress", c_uint8, P),
    _f("doca_pe_get_notification_handle", ERR, P, INT_P),
    # The handle is a Windows HANDLE (void *) there; the symbol is absent on Linux.
    _f("doca_pe_set_notification_handle", ERR, P, c_void_p, DATA, platform="win32"),
    _f("doca_pe_clear_notification", ERR, P, NOTIF),
    _f("doca_pe_request_notification", ERR, P),
    _f("doca_pe_get_num_inflight_tasks", ERR, P, SIZE_P),
    _f("doca_task_submit", ERR, P),
    _f("doca_task_submit_ex", ERR, P, c_uint32, **_NEW),
    _f("doca_task_batch_submit", ERR, P, **_NEW),
    _f("doca_task_try_submit", ERR, P),
    _f("doca_task_batch_try_submit", ERR, P, **_NEW),
    _f("doca_task_free", None, P),
    _f("doca_task_batch_free", None, P, **_NEW),
    _f("doca_task_get_status", ERR, P),
    _f("doca_task_batch_get_status", ERR, P, **_NEW),
    _f("doca_task_set_user_data", None, P, DATA),
    _f("doca_task_batch_set_user_data", None, P, DATA, **_NEW),
    _f("doca_task_get_user_data", DATA, P),
    _f("doca_task_batch_get_user_data", DATA, P, **_NEW),
    _f("doca_task_get_ctx", P, P),
    _f("doca_task_batch_get_ctx", P, P, **_NEW),
    _f("doca_task_batch_get_ctx_user_data", DATA, P, **_NEW),
    _f("doca_task_batch_get_tasks_num", c_uint16, P, **_NEW),
    _f("doca_pe_connect_ctx", ERR, P, P),
    _f("doca_pe_set_event_mode", ERR, P, c_int, **_NEW),
    # §2.7 doca_ctx
    _f("doca_ctx_start", ERR, P),
    _f("doca_ctx_stop", ERR, P),
    _f("doca_ctx_get_num_inflight_tasks", ERR, P, SIZE_P),
    _f("doca_ctx_set_datapath_on_gpu", ERR, P, P),
    _f("doca_ctx_set_user_data", ERR, P, DATA),
    _f("doca_ctx_get_user_data", ERR, P, DATA_P),
    _f("doca_ctx_set_state_changed_cb", ERR, P, CtxStateChangedCb),
    _f("doca_ctx_get_state", ERR, P, INT_P),
    _f("doca_ctx_flush_tasks", None, P, **_NEW),
    _f("doca_ctx_set_datapath_on_dpa", ERR, P, P),
    _f("doca_ctx_set_completion_vector", ERR, P, c_uint32, **_NEW),
    _f("doca_ctx_cap_get_num_completion_vectors", ERR, P, U32_P, **_NEW),
    # §2.8 doca_log
    _f("doca_log_backend_set_level_lower_limit", ERR, P, c_uint32),
    _f("doca_log_backend_set_level_upper_limit", ERR, P, c_uint32),
    _f("doca_log_backend_set_level_lower_limit_strict", ERR, P),
    _f("doca_log_backend_set_level_upper_limit_strict", ERR, P),
    _f("doca_log_level_set_global_lower_limit", ERR, c_uint32),
    _f("doca_log_level_set_global_upper_limit", ERR, c_uint32),
    _f("doca_log_level_get_global_lower_limit", c_uint32),
    _f("doca_log_level_get_global_upper_limit", c_uint32),
    _f("doca_log_register_source", ERR, STR, INT_P),
    _f("doca_log_unregister_source", ERR, c_int),
    _f("doca_log_backend_create_with_file", ERR, P, OUT),
    _f("doca_log_backend_create_with_fd", ERR, c_int, OUT),
    _f("doca_log_backend_create_with_buf", ERR, CBUF, c_size_t, LogFlushCb, OUT),
    _f("doca_log_backend_create_with_syslog", ERR, STR, OUT),
    _f("doca_log_backend_set_sdk_level", ERR, P, c_uint32),
    _f("doca_log_backend_create_with_file_sdk", ERR, P, OUT),
    _f("doca_log_backend_create_with_fd_sdk", ERR, c_int, OUT),
    _f("doca_log_backend_create_with_buf_sdk", ERR, CBUF, c_size_t, LogFlushCb, OUT),
    _f("doca_log_backend_create_with_syslog_sdk", ERR, STR, OUT),
    _f("doca_log_level_set_global_sdk_limit", ERR, c_uint32),
    _f("doca_log_level_get_global_sdk_limit", c_uint32),
    _f("doca_log_backend_create_standard", ERR),
    # Variadic: pass fmt b"%s" and one c_char_p (ctypes needs ctypes objects for "...").
    _f("doca_log", ERR, c_uint32, c_int, STR, c_int, STR, STR, variadic=True),
    # §2.17 later additions (signatures inferred from 3.1–3.3 call sites)
    _f("doca_buf_inventory_buf_reuse_by_addr", ERR, P, P, c_size_t, since=(3, 2), note="may be header-inline; see doca_py.native.inline"),
    _f("doca_buf_inventory_buf_reuse_by_data", ERR, P, P, c_size_t, since=(3, 2), note="may be header-inline; see doca_py.native.inline"),
    _f("doca_buf_inventory_buf_reuse_by_args", ERR, P, P, c_size_t, P, c_size_t, since=(3, 2), note="signature unverified"),
    _f("doca_mmap_get_mkey", ERR, P, P, U32_P, since=(3, 2)),
    _f("doca_devinfo_get_pci_func_type", ERR, P, INT_P, since=(3, 1)),
    _f("doca_devinfo_get_sf_index", ERR, P, U32_P, since=(3, 1)),
) + BUF_POOL + SYNC_EVENT + MMAP_ADVISE + RDMA_BRIDGE + GRAPH
"""Every exported libdoca_common function, 3.x signatures plus 2.x variants."""

BEYOND_INVENTORY: frozenset[str] = frozenset(d.name for d in BUF_POOL + SYNC_EVENT + MMAP_ADVISE + RDMA_BRIDGE + GRAPH)
"""Functions of libdoca_common headers that ``doca-c-api.md``'s inventory does not list
(``doca_buf_pool.h``, ``doca_sync_event.h``, ``doca_mmap_advise.h``, ``doca_rdma_bridge.h``, ``doca_graph.h``), declared
from the DOCA 3.0 headers."""

register(LIBNAME, COMMON)

INLINE: dict[str, str] = {
    "doca_version": "doca_py.native.inline.version",
    "doca_buf_inventory_buf_get_by_addr": "doca_py.native.inline.buf_inventory_buf_get_by_addr",
    "doca_buf_inventory_buf_get_by_data": "doca_py.native.inline.buf_inventory_buf_get_by_data",
}
"""Header-inline C helpers (no symbol) and their Python replacements."""


def load_common() -> CommonLib:
    """The bound libdoca_common functions plus its header-inline helpers (cached).

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when libdoca_common cannot be opened.
    """
    from . import load

    return cast("CommonLib", load(LIBNAME))
