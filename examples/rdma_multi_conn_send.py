"""Port of the DOCA sample ``samples/doca_rdma/rdma_multi_conn_send`` (doca-samples 3.3.0) to doca_py.

Several connections on one RDMA ctx: the sender sets ``max_num_connections`` to ``-nc``, establishes the
connections one by one (``doca_rdma_export`` creates a new connection of the ctx each time) and sends the
string once on each of them. Start the receiver (``examples/rdma_multi_conn_receive.py``) first with the
same ``-nc``; connection *i* exchanges its descriptors through ``<-ld path>-000i`` and ``<-re path>-000i``::

    python examples/rdma_multi_conn_receive.py -d mlx5_0 -nc 4 -ld /tmp/recv.desc -re /tmp/send.desc
    python examples/rdma_multi_conn_send.py -d mlx5_0 -nc 4 -ld /tmp/send.desc -re /tmp/recv.desc -s "Hi!"
    # press enter in the sender once the receiver has submitted its receive tasks

With ``-cm`` the connections are made by RDMA-CM instead: the server (no ``-sa``) accepts ``-nc``
connections, and each client (``-sa``) makes one, so a server with ``-nc 4`` talks to four client processes.

Calls follow the C sample: ``allocate_rdma_resources`` (``doca_rdma_set_max_num_connections(-nc)``) →
``doca_rdma_task_send_set_conf`` (one task per connection) → state-changed callback → user data →
inventory → (``-cm``: the connection callbacks) → ``doca_ctx_start``; on RUNNING the callback makes the
connections (``-cm``: listens or connects; the sends follow once every connection is established),
waits for enter, then allocates and submits one send per connection, each from its own 256-byte slice of
the memory. Each completion releases its buffer and frees its task; the last one stops the ctx.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskSend

from _common import run_sample, setup_logging
from _rdma_common import (INVENTORY_NUM_INITIAL_ELEMENTS, NUM_RDMA_TASKS, RdmaConfig, RdmaResources,
                          allocate_rdma_resources, clean_up_connection_files, cm_connect, config_from_args,
                          destroy_rdma_resources, multi_conn_export_and_connect, propagate_error, put_string,
                          register_rdma_common_params, register_rdma_num_connections_param,
                          register_rdma_send_string_param, run_rdma_ctx, state_change_callback, stop_rdma,
                          use_rdma_cm, wait_for_enter)

log = setup_logging("RDMA_MULTI_CONN_SEND")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


def _send_task_done(resources: RdmaResources, task: RdmaTaskSend) -> None:
    """Release the task's own source buffer, free the task; the last task stops the ctx."""
    src_buf = task.get_src_buf()  # doca_rdma_task_send_get_src_buf
    if src_buf is not None:
        src_buf.dec_refcount()
    task.free()  # doca_task_free(doca_rdma_task_send_as_task(task))
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        stop_rdma(resources)


def rdma_multi_conn_send_completed_callback(task: RdmaTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
    log.info("RDMA send task was done successfully")
    _send_task_done(ctx_user_data, task)


def rdma_multi_conn_send_error_callback(task: RdmaTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    propagate_error(resources, task.get_status())
    log.error("RDMA send task failed: %s", task.exception())
    _send_task_done(resources, task)


def rdma_multi_conn_send_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Wait for enter (the receiver has posted its receives), then one send per connection."""
    assert resources.buf_inventory is not None
    log.info("Please press enter after all the receive tasks have been successfully submitted in the receiver side")
    wait_for_enter()

    local_range, _ = resources.mmap.get_memrange()
    for i in range(resources.cfg.num_connections):
        conn = resources.connections[i]
        src_buf = resources.buf_inventory.buf_get_by_data(resources.mmap, local_range + i * MAX_BUFF_SIZE,
                                                          MAX_BUFF_SIZE)
        # doca_buf_get_data + strncpy: the buffer's data is this slice of the memory; the string, NUL-padded
        put_string(resources.mmap_memrange[i * MAX_BUFF_SIZE:(i + 1) * MAX_BUFF_SIZE], resources.cfg.send_string,
                   MAX_BUFF_SIZE)
        try:
            task = resources.rdma.task_send_allocate_init(conn, src_buf)
        except d.DocaError:
            src_buf.dec_refcount()
            raise
        log.info('Submitting RDMA send task [%d] that sends "%s" to receiver, sender\'s rdma_connection id [%d]',
                 i, resources.cfg.send_string, conn.get_id())
        resources.num_remaining_tasks += 1
        try:
            task.submit()  # doca_task_submit(doca_rdma_task_send_as_task(task)): the upcast is implicit
        except d.DocaError:
            resources.num_remaining_tasks -= 1
            task.free()
            src_buf.dec_refcount()
            raise


def rdma_multi_conn_send_on_running(resources: RdmaResources) -> None:
    """RUNNING: the connections one by one (export → descriptor exchange → connect), then the sends
    (RDMA-CM: listen or connect; the sends follow once every connection is established)."""
    if cm_connect(resources):
        return
    multi_conn_export_and_connect(resources, "receiver")
    log.info("RDMA context finished initialization")
    rdma_multi_conn_send_prepare_and_submit_task(resources)


rdma_multi_conn_send_state_change_callback = state_change_callback("RDMA multi-connection send",
                                                                   rdma_multi_conn_send_on_running)


def rdma_multi_conn_send(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    # allocate_rdma_resources calls doca_rdma_set_max_num_connections(cfg.num_connections)
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_send_is_supported,
                                        log)
    try:
        resources.rdma.task_send_set_conf(rdma_multi_conn_send_completed_callback,
                                          rdma_multi_conn_send_error_callback, NUM_RDMA_TASKS * cfg.num_connections)
        # The inventory of INVENTORY_NUM_INITIAL_ELEMENTS buffers per connection (C creates it after the user data;
        # run_rdma_ctx stops and destroys it).
        resources.buf_inventory = d.BufInventory(INVENTORY_NUM_INITIAL_ELEMENTS * cfg.num_connections, start=False)
        resources.buf_inventory.start()
        use_rdma_cm(resources, rdma_multi_conn_send_prepare_and_submit_task)
        # run_rdma_ctx: state-changed callback, user data, doca_ctx_start, progress until IDLE
        return run_rdma_ctx(resources, rdma_multi_conn_send_state_change_callback, buf_inventory=False)
    finally:
        if resources.buf_inventory is not None:  # run_rdma_ctx was not reached
            resources.buf_inventory.stop()
            resources.buf_inventory.close()
        destroy_rdma_resources(resources, cfg)
        clean_up_connection_files(cfg)  # the per-connection files too (C leaves them behind)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA multi-connection send (port of samples/doca_rdma/rdma_multi_conn_send)")
    register_rdma_common_params(parser, cm=True)
    register_rdma_num_connections_param(parser)
    register_rdma_send_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_multi_conn_send(cfg))


if __name__ == "__main__":
    sys.exit(main())
