"""Port of the DOCA sample ``samples/doca_rdma/rdma_multi_conn_receive`` (doca-samples 3.3.0) to doca_py.

Several connections on one RDMA ctx: the receiver sets ``max_num_connections`` to ``-nc``, establishes
the connections one by one with ``examples/rdma_multi_conn_send.py`` (``doca_rdma_export`` creates a new
connection of the ctx each time), then posts one receive per connection. A receive is not bound to a
connection: any connection's message fills the next posted receive, and
``doca_rdma_task_receive_get_result_rdma_connection`` says which connection it came on (the C sample
prints the connection's address, the port its id). Start it first, with the sender's ``-nc``::

    python examples/rdma_multi_conn_receive.py -d mlx5_0 -nc 4 -ld /tmp/recv.desc -re /tmp/send.desc
    python examples/rdma_multi_conn_send.py -d mlx5_0 -nc 4 -ld /tmp/send.desc -re /tmp/recv.desc -s "Hi!"
    # the receiver prints 'Got from sender: "Hi!", ...' once per connection

Calls follow the C sample: ``allocate_rdma_resources`` (``doca_rdma_set_max_num_connections(-nc)``) →
``doca_rdma_task_receive_set_conf`` (one task per connection) → state-changed callback → user data →
inventory → (``-cm``: the connection callbacks) → ``doca_ctx_start``; on RUNNING the callback makes the
connections (``-cm``: listens or connects; the receives follow once every connection is established) and
posts one receive per connection, each into its own 256-byte slice of the memory. Each completion prints
the message and the connection it came on, releases its buffer and frees its task; the last one stops the
ctx.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskReceive

from _common import run_sample, setup_logging
from _rdma_common import (INVENTORY_NUM_INITIAL_ELEMENTS, NUM_RDMA_TASKS, RdmaConfig, RdmaResources,
                          allocate_rdma_resources, clean_up_connection_files, cm_connect, config_from_args,
                          destroy_rdma_resources, get_string, multi_conn_export_and_connect, propagate_error,
                          register_rdma_common_params, register_rdma_num_connections_param, run_rdma_ctx,
                          state_change_callback, stop_rdma, use_rdma_cm)

log = setup_logging("RDMA_MULTI_CONN_RECEIVE")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


def _receive_task_done(resources: RdmaResources, task: RdmaTaskReceive) -> None:
    """Release the task's own destination buffer, free the task; the last task stops the ctx."""
    dst_buf = task.get_dst_buf()  # doca_rdma_task_receive_get_dst_buf
    if dst_buf is not None:
        dst_buf.dec_refcount()
    task.free()  # doca_task_free(doca_rdma_task_receive_as_task(task))
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        stop_rdma(resources)


def rdma_multi_conn_receive_completed_callback(task: RdmaTaskReceive, task_user_data: Any,
                                               ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA receive task was done successfully")
    rdma_connection = task.get_result_rdma_connection()
    dst_buf = task.get_dst_buf()
    assert dst_buf is not None
    # doca_buf_get_data: the received bytes are the destination's data; strnlen check within the buffer
    text = get_string(bytes(dst_buf.data_view()), MAX_BUFF_SIZE)
    if text is None:
        log.error("The message that was received from sender exceeds buffer size %d", MAX_BUFF_SIZE)
        propagate_error(resources, d.ErrorCode.INVALID_VALUE)
    else:
        log.info('Got from sender: "%s", rdma_connection id [%s]', text,
                 "?" if rdma_connection is None else rdma_connection.get_id())
    _receive_task_done(resources, task)


def rdma_multi_conn_receive_error_callback(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    propagate_error(resources, task.get_status())
    log.error("RDMA receive task failed: %s", task.exception())
    _receive_task_done(resources, task)


def rdma_multi_conn_receive_prepare_and_submit_task(resources: RdmaResources) -> None:
    """One receive of up to 256 bytes per connection, each into its own slice of the memory."""
    assert resources.buf_inventory is not None
    local_range, _ = resources.mmap.get_memrange()
    for i in range(resources.cfg.num_connections):
        dst_buf = resources.buf_inventory.buf_get_by_addr(resources.mmap, local_range + i * MAX_BUFF_SIZE,
                                                          MAX_BUFF_SIZE)
        try:
            task = resources.rdma.task_receive_allocate_init(dst_buf)
        except d.DocaError:
            dst_buf.dec_refcount()
            raise
        log.info("Submitting RDMA receive task [%d]", i)
        resources.num_remaining_tasks += 1
        try:
            task.submit()  # doca_task_submit(doca_rdma_task_receive_as_task(task)): the upcast is implicit
        except d.DocaError:
            resources.num_remaining_tasks -= 1
            task.free()
            dst_buf.dec_refcount()
            raise
        log.info("RDMA receive task [%d] successfully submitted", i)
    log.info("All RDMA receive tasks have been successfully submitted")


def rdma_multi_conn_receive_on_running(resources: RdmaResources) -> None:
    """RUNNING: the connections one by one (export → descriptor exchange → connect), then the receives
    (RDMA-CM: listen or connect; the receives follow once every connection is established)."""
    if cm_connect(resources):
        return
    multi_conn_export_and_connect(resources, "sender")
    log.info("RDMA context finished initialization")
    rdma_multi_conn_receive_prepare_and_submit_task(resources)


rdma_multi_conn_receive_state_change_callback = state_change_callback("RDMA multi-connection receive",
                                                                      rdma_multi_conn_receive_on_running)


def rdma_multi_conn_receive(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    # allocate_rdma_resources calls doca_rdma_set_max_num_connections(cfg.num_connections)
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions,
                                        Rdma.cap_task_receive_is_supported, log)
    try:
        resources.rdma.task_receive_set_conf(rdma_multi_conn_receive_completed_callback,
                                             rdma_multi_conn_receive_error_callback,
                                             NUM_RDMA_TASKS * cfg.num_connections)
        # The inventory of INVENTORY_NUM_INITIAL_ELEMENTS buffers per connection (C creates it after the user data;
        # run_rdma_ctx stops and destroys it).
        resources.buf_inventory = d.BufInventory(INVENTORY_NUM_INITIAL_ELEMENTS * cfg.num_connections, start=False)
        resources.buf_inventory.start()
        # The receiving side waits for its peers' disconnection at the end (see stop_rdma)
        use_rdma_cm(resources, rdma_multi_conn_receive_prepare_and_submit_task, passive=True)
        # run_rdma_ctx: state-changed callback, user data, doca_ctx_start, progress until IDLE
        return run_rdma_ctx(resources, rdma_multi_conn_receive_state_change_callback, buf_inventory=False)
    finally:
        if resources.buf_inventory is not None:  # run_rdma_ctx was not reached
            resources.buf_inventory.stop()
            resources.buf_inventory.close()
        destroy_rdma_resources(resources, cfg)
        clean_up_connection_files(cfg)  # the per-connection files too (C leaves them behind)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA multi-connection receive (port of samples/doca_rdma/rdma_multi_conn_receive)")
    register_rdma_common_params(parser, cm=True)
    register_rdma_num_connections_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_multi_conn_receive(cfg))


if __name__ == "__main__":
    sys.exit(main())
