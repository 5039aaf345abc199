"""Port of the DOCA sample ``samples/doca_rdma/rdma_write_requester`` (DOCA 3.0) to doca_py.

The requester writes a string into the responder's memory with an RDMA write task.
Start the responder first (``examples/rdma_write_responder.py``); the two exchange
their descriptors through files (each side's ``-ld`` file is the other's ``-re`` file,
and the responder writes its mmap descriptor to ``-m``)::

    python examples/rdma_write_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc -m /tmp/mmap.desc
    python examples/rdma_write_requester.py -d mlx5_0 -ld /tmp/req.desc -re /tmp/resp.desc -m /tmp/mmap.desc \\
        -w "Hi DOCA RDMA!"
    # then press enter in the responder, which prints what was written

Calls follow the C sample: ``allocate_rdma_resources`` → ``doca_rdma_task_write_set_conf`` →
state-changed callback → inventory → ``doca_ctx_start``; on RUNNING (DOCA 3.x: without a
connection) the callback exports, exchanges descriptors, connects and submits the write
right away; the completion callback stops the ctx and the progress loop ends on IDLE.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskWrite, RdmaTransportType

from _common import SLEEP_IN_SECONDS, request_stop, run_sample, setup_logging
from _rdma_common import (INVENTORY_NUM_INITIAL_ELEMENTS, NUM_RDMA_TASKS, RdmaConfig, RdmaResources,
                          allocate_rdma_resources, config_from_args, destroy_rdma_resources, log_state,
                          propagate_error, put_string, read_file, register_rdma_common_params,
                          register_rdma_write_string_param, wait_for_file, write_file)

log = setup_logging("RDMA_WRITE_REQUESTER")


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


def rdma_write_completed_callback(task: RdmaTaskWrite, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA write task was done Successfully")
    log.info('Written to responder "%s"', resources.cfg.write_string)
    task.free()
    release_bufs(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        request_stop(resources.rdma)


def rdma_write_error_callback(task: RdmaTaskWrite, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    status = task.get_status()
    propagate_error(resources, status)
    log.error("RDMA write task failed: %s", task.exception())
    release_bufs(resources)
    task.free()
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:
        request_stop(resources.rdma)


def rdma_write_requester_export_and_connect(resources: RdmaResources) -> None:
    """``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``."""
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    write_read_connection(resources.cfg, resources)
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)


def rdma_write_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Import the responder's memory, build the buffers, submit the write task."""
    assert resources.buf_inventory is not None and resources.connection is not None
    write_string = resources.cfg.write_string
    write_string_len = len(write_string.encode()) + 1

    resources.remote_mmap = d.Mmap.create_from_export(resources.remote_mmap_descriptor, resources.doca_device)
    remote_mmap_range, _ = resources.remote_mmap.get_memrange()

    local_range, _ = resources.mmap.get_memrange()
    resources.src_buf = resources.buf_inventory.buf_get_by_data(resources.mmap, local_range, write_string_len)
    # Set the data of the source buffer to the string to write
    put_string(resources.mmap_memrange, write_string, write_string_len)
    resources.dst_buf = resources.buf_inventory.buf_get_by_addr(resources.remote_mmap, remote_mmap_range,
                                                                write_string_len)

    task = resources.rdma.task_write_allocate_init(resources.connection, resources.src_buf, resources.dst_buf)
    log.info('Submitting RDMA write task that writes "%s" to the responder', write_string)
    resources.num_remaining_tasks += 1
    try:
        # The connection may not be up at the peer yet: the task waits, as on an RC queue pair.
        task.submit()
    except d.DocaError:
        resources.num_remaining_tasks -= 1
        task.free()
        release_bufs(resources)
        raise


def rdma_write_requester_state_change_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                               next_state: d.CtxState) -> None:
    """The sample's state machine."""
    resources: RdmaResources = user_data
    log_state(resources, next_state)
    try:
        if next_state == d.CtxState.RUNNING:
            rdma_write_requester_export_and_connect(resources)
            log.info("RDMA context finished initialization")
            rdma_write_prepare_and_submit_task(resources)
        elif next_state == d.CtxState.IDLE:
            resources.run_pe_progress = False  # we can stop progressing the PE
    except d.DocaError as exc:
        log.error("RDMA write requester failed: %s", exc)
        propagate_error(resources, exc.code)
        request_stop(ctx)


def rdma_write_requester(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_write_is_supported,
                                        log)
    try:
        resources.rdma.task_write_set_conf(rdma_write_completed_callback, rdma_write_error_callback, NUM_RDMA_TASKS)
        resources.rdma.set_state_changed_cb(rdma_write_requester_state_change_callback)
        resources.buf_inventory = d.BufInventory(INVENTORY_NUM_INITIAL_ELEMENTS, start=False)
        resources.buf_inventory.start()
        resources.rdma.user_data = resources  # doca_ctx_set_user_data
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
        description="DOCA RDMA write requester (port of samples/doca_rdma/rdma_write_requester)")
    register_rdma_common_params(parser)
    register_rdma_write_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_write_requester(cfg))


if __name__ == "__main__":
    sys.exit(main())
