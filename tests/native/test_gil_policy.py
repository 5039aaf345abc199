"""The raw layer's GIL policy (``capi.keeps_gil``): the data path's never-blocking calls keep the GIL
(``ctypes.PyDLL``), everything that may block releases it (``ctypes.CDLL``)."""

from __future__ import annotations

import ctypes
import faulthandler
import threading
from ctypes import byref, c_void_p

from doca_py.native import capi
from doca_py.native.capi import BoundLib

_PYTHONAPI = ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]  # set on PyDLL function pointers

# Calls that must keep the GIL (the data path) and calls that may block and must release it.
HOT = ("doca_pe_progress", "doca_task_submit", "doca_task_try_submit", "doca_task_free", "doca_task_get_status",
       "doca_task_get_user_data", "doca_task_set_user_data", "doca_buf_get_data", "doca_buf_set_data",
       "doca_buf_get_data_len", "doca_buf_dec_refcount", "doca_buf_inventory_buf_get_by_args",
       "doca_buf_pool_buf_alloc", "doca_dma_task_memcpy_alloc_init", "doca_dma_task_memcpy_set_src",
       "doca_rdma_task_send_allocate_init", "doca_rdma_task_receive_get_result_len",
       "doca_comch_server_task_send_alloc_init", "doca_ec_task_recover_set_available_blocks",
       "doca_compress_task_decompress_lz4_stream_get_xxh_cs", "doca_error_get_name", "doca_ctx_get_user_data",
       "doca_mmap_advise_task_invalidate_cache_alloc_init", "doca_mmap_advise_task_invalidate_cache_as_doca_task",
       "doca_mmap_advise_task_invalidate_cache_set_buf", "doca_graph_instance_submit",
       "doca_graph_instance_set_ctx_node_data", "doca_graph_instance_set_user_node_data")
BLOCKING = ("doca_sync_event_wait_gt", "doca_sync_event_wait_eq_yield", "doca_ctx_start", "doca_ctx_stop",
            "doca_pe_create", "doca_pe_request_notification", "doca_pe_clear_notification", "doca_dev_open",
            "doca_mmap_start", "doca_mmap_stop", "doca_rdma_connect_to_addr", "doca_rdma_start_listen_to_port",
            "doca_comch_server_create", "doca_dma_task_memcpy_set_conf", "doca_dma_cap_task_memcpy_is_supported",
            "doca_rdma_task_receive_set_dst_buf_list_len", "doca_buf_inventory_start", "doca_devinfo_create_list",
            "doca_mmap_advise_task_cache_invalidate_get_max_buf_size", "doca_mmap_advise_task_invalidate_cache_set_conf",
            "doca_rdma_bridge_get_dev_pd", "doca_rdma_bridge_open_dev_from_pd", "doca_graph_create", "doca_graph_start",
            "doca_graph_set_conf", "doca_graph_stop", "doca_graph_instance_create", "doca_graph_instance_destroy")


def test_the_policy_decides_the_data_path_and_the_blocking_calls() -> None:
    declared = {d.name for decls in capi.tables().values() for d in decls}
    assert set(HOT) | set(BLOCKING) <= declared
    assert [n for n in HOT if not capi.keeps_gil(n)] == []
    assert [n for n in BLOCKING if capi.keeps_gil(n)] == []
    assert capi.MAY_BLOCK <= declared  # no stale exception
    # Nothing that waits, starts, stops, connects or configures keeps the GIL.
    suspicious = ("wait", "_start", "_stop", "connect", "listen", "accept", "_create", "destroy", "_open",
                  "notification", "_cap_", "_set_conf", "expand")
    assert sorted(n for n in declared if capi.keeps_gil(n) and any(s in n for s in suspicious)
                  and not n.startswith(("doca_sync_event_task_wait_", "doca_task_", "doca_ec_task_create_"))
                  and "_rdma_connection" not in n and not n.endswith("_user_data")) == []


def test_every_bound_function_carries_its_decided_policy(lib30: BoundLib) -> None:
    checked = 0
    for name in lib30.decls:
        fn = lib30.__dict__[name]
        if name in lib30.missing or name in lib30.python_impl:
            continue
        keeps = bool(type(fn)._flags_ & _PYTHONAPI)
        assert keeps == capi.keeps_gil(name), name
        checked += 1
    assert checked > 100
    assert type(lib30.doca_pe_progress)._flags_ & _PYTHONAPI
    assert not type(lib30.doca_sync_event_wait_gt)._flags_ & _PYTHONAPI


def test_a_blocking_call_lets_other_python_threads_run(lib30: BoundLib) -> None:
    """doca_sync_event_wait_gt spins in C until the event's value passes N; only another Python thread
    adds to it, one call at a time, and it needs the GIL for every call: the wait returns only if it
    released the GIL (kept, the adder would be stuck at its first slice, far below N)."""
    se = c_void_p()
    assert lib30.doca_sync_event_create(byref(se)) == 0
    dev = c_void_p(1)  # the fake only needs a non-NULL device for a CPU location
    assert lib30.doca_sync_event_add_publisher_location_cpu(se, dev) == 0
    assert lib30.doca_sync_event_add_subscriber_location_cpu(se, dev) == 0
    assert lib30.doca_sync_event_start(se) == 0
    n = 200_000
    stop = threading.Event()
    adds = [0]

    def adder() -> None:
        add, fetched = lib30.doca_sync_event_update_add, ctypes.c_uint64()
        while not stop.is_set():
            assert add(se, 1, byref(fetched)) == 0
            adds[0] += 1

    t = threading.Thread(target=adder)
    t.start()
    # A watchdog for the broken case only: were the GIL kept, no Python code could run again (deadlock).
    faulthandler.dump_traceback_later(300, exit=True)
    try:
        assert lib30.doca_sync_event_wait_gt(se, n, 0xFFFF_FFFF_FFFF_FFFF) == 0
    finally:
        faulthandler.cancel_dump_traceback_later()
        stop.set()
        t.join()
    assert adds[0] > n
    assert lib30.doca_sync_event_stop(se) == 0
    assert lib30.doca_sync_event_destroy(se) == 0
