"""Raw declarations of ``doca_sync_event.h`` (libdoca_common), in header order.

The DOCA 2.6 and 3.0 headers differ: 29 functions exist only from 3.0 (``since=(3, 0)``: the remote-PCI
locations and export, the eq/neq waits and wait tasks, ``set_doca_buf``, the DPA/GPU handle getters) and
16 only up to 2.6 (``until=(2, 6)``: the ``_dpu`` locations and export, ``export_to_dpa``/``_gpu`` and the
wait-greater-than task family). Where a 2.6 function means what a 3.0 one does, its row names the 3.0
function in its note and the object layer (``doca_py.native.sync_event``) calls whichever the library
exports. Rows without versions are in both. The task
completion callbacks are [`TaskCompletionCb`][doca_py.native.capi.TaskCompletionCb] instances (the typed
``doca_sync_event_task_*_completion_cb_t`` take the task, then two ``union doca_data``). Exported data
streams are ``const uint8_t *`` with a size: ``OUT``/``SIZE_P`` out-parameters to copy from. Part of
[`COMMON`][doca_py.native.capi.common.COMMON]: bind them with
[`load_common`][doca_py.native.capi.common.load_common].
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from typing import Any

from ._decl import Decl, TaskCompletionCb

__all__ = ["SYNC_EVENT"]

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *, const uint8_t * data streams
OUT = POINTER(c_void_p)  # T ** out-handle, const uint8_t ** out-stream
DATA = c_uint64  # union doca_data by value
U64 = c_uint64
U64_P = POINTER(c_uint64)
SIZE_P = POINTER(c_size_t)
CB = TaskCompletionCb


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


_NEW: dict[str, Any] = {"since": (3, 0)}  # not in the DOCA 2.6 header
_OLD: dict[str, Any] = {"until": (2, 6)}  # in the DOCA 2.6 header, not in 3.0's


def _old(new_name: str) -> dict[str, Any]:
    """A 2.6 function that 3.0 renamed to *new_name* (same arguments, same meaning)."""
    return {"until": (2, 6), "note": f"DOCA 3.0: {new_name}"}


SYNC_EVENT: tuple[Decl, ...] = (
    _f("doca_sync_event_create", ERR, OUT),
    _f("doca_sync_event_create_from_export", ERR, P, P, c_size_t, OUT),
    _f("doca_sync_event_cap_is_create_from_export_supported", ERR, P),
    _f("doca_sync_event_remote_net_create_from_export", ERR, P, P, c_size_t, OUT),
    _f("doca_sync_event_cap_remote_net_is_create_from_export_supported", ERR, P),
    _f("doca_sync_event_destroy", ERR, P),
    _f("doca_sync_event_remote_net_destroy", ERR, P),
    _f("doca_sync_event_add_publisher_location_cpu", ERR, P, P),
    _f("doca_sync_event_add_publisher_location_dpa", ERR, P, P),
    _f("doca_sync_event_add_publisher_location_gpu", ERR, P, P),
    _f("doca_sync_event_add_publisher_location_dpu", ERR, P, **_old("doca_sync_event_add_publisher_location_remote_pci")),
    _f("doca_sync_event_add_publisher_location_remote_pci", ERR, P, **_NEW),
    _f("doca_sync_event_add_publisher_location_remote_net", ERR, P),
    _f("doca_sync_event_add_subscriber_location_cpu", ERR, P, P),
    _f("doca_sync_event_add_subscriber_location_dpa", ERR, P, P),
    _f("doca_sync_event_add_subscriber_location_gpu", ERR, P, P),
    _f("doca_sync_event_add_subscriber_location_dpu", ERR, P, **_old("doca_sync_event_add_subscriber_location_remote_pci")),
    _f("doca_sync_event_add_subscriber_location_remote_pci", ERR, P, **_NEW),
    _f("doca_sync_event_set_addr", ERR, P, U64_P),
    _f("doca_sync_event_set_doca_buf", ERR, P, P, **_NEW),
    _f("doca_sync_event_start", ERR, P),
    _f("doca_sync_event_stop", ERR, P),
    _f("doca_sync_event_as_ctx", P, P),
    _f("doca_sync_event_cap_task_get_is_supported", ERR, P),
    _f("doca_sync_event_task_get_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_sync_event_task_get_alloc_init", ERR, P, U64_P, DATA, OUT),
    _f("doca_sync_event_task_get_as_doca_task", P, P),
    _f("doca_sync_event_task_get_set_ret_val_ptr", None, P, U64_P),
    _f("doca_sync_event_task_get_get_ret_val_ptr", P, P),  # uint64_t *, as an address
    _f("doca_sync_event_cap_task_notify_set_is_supported", ERR, P),
    _f("doca_sync_event_task_notify_set_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_sync_event_task_notify_set_alloc_init", ERR, P, U64, DATA, OUT),
    _f("doca_sync_event_task_notify_set_as_doca_task", P, P),
    _f("doca_sync_event_task_notify_set_set_set_val", None, P, U64),
    _f("doca_sync_event_task_notify_set_get_set_val", U64, P),
    _f("doca_sync_event_cap_task_notify_add_is_supported", ERR, P),
    _f("doca_sync_event_task_notify_add_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_sync_event_task_notify_add_alloc_init", ERR, P, U64, U64_P, DATA, OUT),
    _f("doca_sync_event_task_notify_add_as_doca_task", P, P),
    _f("doca_sync_event_task_notify_add_set_inc_val", None, P, U64),
    _f("doca_sync_event_task_notify_add_get_inc_val", U64, P),
    _f("doca_sync_event_task_notify_add_set_fetched_val_ptr", None, P, U64_P),
    _f("doca_sync_event_task_notify_add_get_fetched_val_ptr", P, P),  # uint64_t *, as an address
    _f("doca_sync_event_cap_task_wait_gt_is_supported", ERR, P, **_OLD),
    _f("doca_sync_event_task_wait_gt_set_conf", ERR, P, CB, CB, c_uint32, **_OLD),
    _f("doca_sync_event_task_wait_gt_alloc_init", ERR, P, U64, U64, DATA, OUT, **_OLD),
    _f("doca_sync_event_task_wait_gt_as_doca_task", P, P, **_OLD),
    _f("doca_sync_event_task_wait_gt_set_wait_val", None, P, U64, **_OLD),
    _f("doca_sync_event_task_wait_gt_get_wait_val", U64, P, **_OLD),
    _f("doca_sync_event_task_wait_gt_set_mask", None, P, U64, **_OLD),
    _f("doca_sync_event_task_wait_gt_get_mask", U64, P, **_OLD),
    _f("doca_sync_event_cap_task_wait_eq_is_supported", ERR, P, **_NEW),
    _f("doca_sync_event_task_wait_eq_set_conf", ERR, P, CB, CB, c_uint32, **_NEW),
    _f("doca_sync_event_task_wait_eq_alloc_init", ERR, P, U64, U64, DATA, OUT, **_NEW),
    _f("doca_sync_event_task_wait_eq_as_doca_task", P, P, **_NEW),
    _f("doca_sync_event_task_wait_eq_set_wait_val", None, P, U64, **_NEW),
    _f("doca_sync_event_task_wait_eq_get_wait_val", U64, P, **_NEW),
    _f("doca_sync_event_task_wait_eq_set_mask", None, P, U64, **_NEW),
    _f("doca_sync_event_task_wait_eq_get_mask", U64, P, **_NEW),
    _f("doca_sync_event_cap_task_wait_neq_is_supported", ERR, P, **_NEW),
    _f("doca_sync_event_task_wait_neq_set_conf", ERR, P, CB, CB, c_uint32, **_NEW),
    _f("doca_sync_event_task_wait_neq_alloc_init", ERR, P, U64, U64, DATA, OUT, **_NEW),
    _f("doca_sync_event_task_wait_neq_as_doca_task", P, P, **_NEW),
    _f("doca_sync_event_task_wait_neq_set_wait_val", None, P, U64, **_NEW),
    _f("doca_sync_event_task_wait_neq_get_wait_val", U64, P, **_NEW),
    _f("doca_sync_event_task_wait_neq_set_mask", None, P, U64, **_NEW),
    _f("doca_sync_event_task_wait_neq_get_mask", U64, P, **_NEW),
    _f("doca_sync_event_export_to_remote_pci", ERR, P, P, OUT, SIZE_P, **_NEW),
    _f("doca_sync_event_cap_is_export_to_remote_pci_supported", ERR, P, **_NEW),
    _f("doca_sync_event_export_to_dpu", ERR, P, P, OUT, SIZE_P, **_old("doca_sync_event_export_to_remote_pci")),
    _f("doca_sync_event_cap_is_export_to_dpu_supported", ERR, P,
       **_old("doca_sync_event_cap_is_export_to_remote_pci_supported")),
    _f("doca_sync_event_export_to_dpa", ERR, P, P, U64_P, **_old("doca_sync_event_get_dpa_handle")),
    _f("doca_sync_event_export_to_gpu", ERR, P, P, OUT, **_old("doca_sync_event_get_gpu_handle")),
    _f("doca_sync_event_get_dpa_handle", ERR, P, P, U64_P, **_NEW),
    _f("doca_sync_event_cap_is_export_to_dpa_supported", ERR, P),
    _f("doca_sync_event_get_gpu_handle", ERR, P, P, OUT, **_NEW),
    _f("doca_sync_event_cap_is_export_to_gpu_supported", ERR, P),
    _f("doca_sync_event_export_to_remote_net", ERR, P, OUT, SIZE_P),
    _f("doca_sync_event_cap_is_export_to_remote_net_supported", ERR, P),
    _f("doca_sync_event_remote_net_export_to_dpa", ERR, P, P, U64_P, **_old("doca_sync_event_remote_net_get_dpa_handle")),
    _f("doca_sync_event_remote_net_export_to_gpu", ERR, P, P, U64_P, **_old("doca_sync_event_remote_net_get_gpu_handle")),
    _f("doca_sync_event_remote_net_get_dpa_handle", ERR, P, P, U64_P, **_NEW),
    _f("doca_sync_event_cap_remote_net_is_export_to_dpa_supported", ERR, P),
    _f("doca_sync_event_remote_net_get_gpu_handle", ERR, P, P, U64_P, **_NEW),
    _f("doca_sync_event_cap_remote_net_is_export_to_gpu_supported", ERR, P),
    _f("doca_sync_event_get", ERR, P, U64_P),
    _f("doca_sync_event_update_add", ERR, P, U64, U64_P),
    _f("doca_sync_event_update_set", ERR, P, U64),
    _f("doca_sync_event_wait_gt", ERR, P, U64, U64),
    _f("doca_sync_event_wait_gt_yield", ERR, P, U64, U64),
    _f("doca_sync_event_wait_eq", ERR, P, U64, U64, **_NEW),
    _f("doca_sync_event_wait_eq_yield", ERR, P, U64, U64, **_NEW),
    _f("doca_sync_event_wait_neq", ERR, P, U64, U64, **_NEW),
    _f("doca_sync_event_wait_neq_yield", ERR, P, U64, U64, **_NEW),
)
"""Every function of ``doca_sync_event.h`` in DOCA 2.6 or 3.0."""
