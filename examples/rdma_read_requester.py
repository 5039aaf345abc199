"""Port of the DOCA sample ``samples/doca_rdma/rdma_read_requester`` (DOCA 3.0) to doca_py.

The requester reads a string from the responder's memory with an RDMA read task and
prints it in the task's completion callback. Start the responder first
(``examples/rdma_read_responder.py``); descriptors are exchanged through files::

    python examples/rdma_read_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc -m /tmp/mmap.desc \\
        -r "Hi DOCA RDMA!"
    python examples/rdma_read_requester.py -d mlx5_0 -ld /tmp/req.desc -re /tmp/resp.desc -m /tmp/mmap.desc
    # prints 'Read from responder: "Hi DOCA RDMA!"'; then press enter in the responder

Calls follow the C sample: ``allocate_rdma_resources`` → ``doca_rdma_task_read_set_conf`` →
state-changed callback → inventory → ``doca_ctx_start``; on RUNNING (DOCA 3.x: without a
connection) the callback exports, exchanges descriptors, connects and submits the read
right away; the completion callback prints the destination and stops the ctx.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskRead, RdmaTransportType

from _common import SLEEP_IN_SECONDS, request_stop, run_sample, setup_logging
from _rdma_common import (INVENTORY_NUM_INITIAL_ELEMENTS, NUM_RDMA_TASKS, RdmaConfig, RdmaResources,
                          allocate_rdma_resources, config_from_args, destroy_rdma_resources, get_string, log_state,
                          propagate_error, read_file, register_rdma_common_params, wait_for_file, write_file)

log = setup_logging("RDMA_READ_REQUESTER")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


def write_read_connection(cfg: RdmaConfig, resources: RdmaResources) -> None:
    """Write our connection descriptor; read the responder's connection and mmap descriptors."""
    if cfg.transport_type == RdmaTransportType.RC:
        write_file(cfg.local_connection_desc_path, resources.rdma_conn_descriptor)
        log.info("You can now copy %s to the responder", cfg.local_connection_desc_path)
    log.info("Please copy %s and %s from the responder", cfg.remote_connection_desc_path,
             cfg.remote_resource_desc_path)
    wait_for_file(cfg.remote_connection_desc_path, log)
    wait_for_file(cfg.remote_resource_desc_path, log)
    resources.remote_rdma_conn_descriptor = read_file(cfg.remote_connection_desc_path)
    resources.remote_mmap_descriptor = read_file(cfg.remote_resource_desc_path)


def release_bufs(resources: RdmaResources) -> None:
    for buf in (resources.dst_buf, resources.src_buf):
        if buf is not None:
            buf.dec_refcount()
    resources.dst_buf = resources.src_buf = None


def rdma_read_completed_callback(task: RdmaTaskRead, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA read task was done Successfully")
    # The destination holds the responder's bytes now, in the completion callback.
    assert resources.dst_buf is not None
    text = get_string(bytes(resources.dst_buf.data_view()), MAX_BUFF_SIZE)
    if text is None:
        log.error("The message that we read from the responder exceeds buffer size %d", MAX_BUFF_SIZE)
        propagate_error(resources, d.ErrorCode.INVALID_VALUE)
    else:
        log.info('Read from responder: "%s"', text)
    task.free()
    release_bufs(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        request_stop(resources.rdma)


def rdma_read_error_callback(task: RdmaTaskRead, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    propagate_error(resources, task.get_status())
    log.error("RDMA read task failed: %s", task.exception())
    task.free()
    release_bufs(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:
        request_stop(resources.rdma)


def rdma_read_requester_export_and_connect(resources: RdmaResources) -> None:
    """``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``."""
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    write_read_connection(resources.cfg, resources)
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)


def rdma_read_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Import the responder's memory, build the buffers, submit the read task."""
    assert resources.buf_inventory is not None and resources.connection is not None
    resources.remote_mmap = d.Mmap.create_from_export(resources.remote_mmap_descriptor, resources.doca_device)
    remote_mmap_range, _ = resources.remote_mmap.get_memrange()

    # The source is the remote memory, the destination our own (empty) memory.
    resources.src_buf = resources.buf_inventory.buf_get_by_data(resources.remote_mmap, remote_mmap_range,
                                                                MAX_BUFF_SIZE)
    local_range, _ = resources.mmap.get_memrange()
    resources.dst_buf = resources.buf_inventory.buf_get_by_addr(resources.mmap, local_range, MAX_BUFF_SIZE)

    task = resources.rdma.task_read_allocate_init(resources.connection, resources.src_buf, resources.dst_buf)
    log.info("Submitting RDMA read task")
    resources.num_remaining_tasks += 1
    try:
        # The connection may not be up at the peer yet: the task waits, as on an RC queue pair.
        task.submit()
    except d.DocaError:
        resources.num_remaining_tasks -= 1
        task.free()
        release_bufs(resources)
        raise


def rdma_read_requester_state_change_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                              next_state: d.CtxState) -> None:
    """The sample's state machine."""
    resources: RdmaResources = user_data
    log_state(resources, next_state)
    try:
        if next_state == d.CtxState.RUNNING:
            rdma_read_requester_export_and_connect(resources)
            log.info("RDMA context finished initialization")
            rdma_read_prepare_and_submit_task(resources)
        elif next_state == d.CtxState.IDLE:
            resources.run_pe_progress = False  # we can stop progressing the PE
    except d.DocaError as exc:
        log.error("RDMA read requester failed: %s", exc)
        propagate_error(resources, exc.code)
        request_stop(ctx)


def rdma_read_requester(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_read_is_supported,
                                        log)
    try:
        resources.rdma.task_read_set_conf(rdma_read_completed_callback, rdma_read_error_callback, NUM_RDMA_TASKS)
        resources.rdma.set_state_changed_cb(rdma_read_requester_state_change_callback)
        resources.rdma.user_data = resources  # doca_ctx_set_user_data
        resources.buf_inventory = d.BufInventory(INVENTORY_NUM_INITIAL_ELEMENTS, start=False)
        resources.buf_inventory.start()
        resources.rdma.start()

        # The state machine runs in the state-changed callback, from progress(); it ends on IDLE.
        while resources.run_pe_progress:
            if not resources.pe.progress():
                time.sleep(SLEEP_IN_SECONDS)
        return resources.first_encountered_error
    finally:
        if resources.buf_inventory is not None:
            resources.buf_inventory.stop()
            resources.buf_inventory.close()
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA read requester (port of samples/doca_rdma/rdma_read_requester)")
    register_rdma_common_params(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_read_requester(cfg))


if __name__ == "__main__":
    sys.exit(main())
