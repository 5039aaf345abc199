"""Port of the DOCA sample ``samples/doca_rdma/rdma_send_immediate`` (DOCA 3.0) to doca_py.

The sender sends a string and the 32-bit immediate value 0xABCD to the receiver's posted
receive with an RDMA send-with-immediate task. Start the receiver
(``examples/rdma_receive_immediate.py``) first; each side's ``-ld`` file is the other
side's ``-re`` file::

    python examples/rdma_receive_immediate.py -d mlx5_0 -ld /tmp/recv.desc -re /tmp/send.desc
    python examples/rdma_send_immediate.py -d mlx5_0 -ld /tmp/send.desc -re /tmp/recv.desc -s "Hi DOCA RDMA!"

Calls follow the C sample: ``allocate_rdma_resources`` → ``doca_rdma_task_send_imm_set_conf`` →
state-changed callback → inventory → ``doca_ctx_start``; on RUNNING (DOCA 3.x: without a
connection) the callback exports, exchanges descriptors, connects and submits the send
right away (it waits for the connection and the peer's receive, as on an RC queue pair);
the completion callback stops the ctx and the progress loop ends on IDLE.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskSendImm, RdmaTransportType

from _common import SLEEP_IN_SECONDS, request_stop, run_sample, setup_logging
from _rdma_common import (INVENTORY_NUM_INITIAL_ELEMENTS, NUM_RDMA_TASKS, RdmaConfig, RdmaResources,
                          allocate_rdma_resources, config_from_args, destroy_rdma_resources, log_state,
                          propagate_error, put_string, read_file, register_rdma_common_params,
                          register_rdma_send_string_param, wait_for_file, write_file)

log = setup_logging("RDMA_SEND_IMMEDIATE")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size
EXAMPLE_IMMEDIATE_VALUE = 0xABCD  # example immediate value to send (a doca_be32_t, passed unchanged)


def write_read_connection(cfg: RdmaConfig, resources: RdmaResources) -> None:
    """Write our connection descriptor; read the receiver's."""
    if cfg.transport_type == RdmaTransportType.RC:
        write_file(cfg.local_connection_desc_path, resources.rdma_conn_descriptor)
        log.info("You can now copy %s to the receiver", cfg.local_connection_desc_path)
    log.info("Please copy %s from the receiver", cfg.remote_connection_desc_path)
    wait_for_file(cfg.remote_connection_desc_path, log)
    resources.remote_rdma_conn_descriptor = read_file(cfg.remote_connection_desc_path)


def release_src_buf(resources: RdmaResources) -> None:
    if resources.src_buf is not None:
        resources.src_buf.dec_refcount()
        resources.src_buf = None


def rdma_send_imm_completed_callback(task: RdmaTaskSendImm, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA send with immediate task was done successfully")
    task.free()
    release_src_buf(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        request_stop(resources.rdma)


def rdma_send_imm_error_callback(task: RdmaTaskSendImm, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    propagate_error(resources, task.get_status())
    log.error("RDMA send with immediate task failed: %s", task.exception())
    task.free()
    release_src_buf(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:
        request_stop(resources.rdma)


def rdma_send_immediate_export_and_connect(resources: RdmaResources) -> None:
    """``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``."""
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    write_read_connection(resources.cfg, resources)
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)


def rdma_send_immediate_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Build the source buffer (the string, NUL-padded to 256 bytes) and submit the send with immediate."""
    assert resources.buf_inventory is not None and resources.connection is not None
    local_range, _ = resources.mmap.get_memrange()
    resources.src_buf = resources.buf_inventory.buf_get_by_data(resources.mmap, local_range, MAX_BUFF_SIZE)
    put_string(resources.mmap_memrange, resources.cfg.send_string, MAX_BUFF_SIZE)  # the source's data

    task = resources.rdma.task_send_imm_allocate_init(resources.connection, resources.src_buf,
                                                     EXAMPLE_IMMEDIATE_VALUE)
    log.info('Submitting RDMA send with immediate task that sends "%s" with immediate value %d to receiver',
             resources.cfg.send_string, EXAMPLE_IMMEDIATE_VALUE)
    resources.num_remaining_tasks += 1
    try:
        task.submit()
    except d.DocaError:
        resources.num_remaining_tasks -= 1
        task.free()
        release_src_buf(resources)
        raise


def rdma_send_immediate_state_change_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                    next_state: d.CtxState) -> None:
    """The sample's state machine."""
    resources: RdmaResources = user_data
    log_state(resources, next_state)
    try:
        if next_state == d.CtxState.RUNNING:
            rdma_send_immediate_export_and_connect(resources)
            log.info("RDMA context finished initialization")
            rdma_send_immediate_prepare_and_submit_task(resources)
        elif next_state == d.CtxState.IDLE:
            resources.run_pe_progress = False  # we can stop progressing the PE
    except d.DocaError as exc:
        log.error("RDMA send with immediate failed: %s", exc)
        propagate_error(resources, exc.code)
        request_stop(ctx)


def rdma_send_immediate(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_send_imm_is_supported,
                                        log)
    try:
        resources.rdma.task_send_imm_set_conf(rdma_send_imm_completed_callback, rdma_send_imm_error_callback,
                                              NUM_RDMA_TASKS)
        resources.rdma.set_state_changed_cb(rdma_send_immediate_state_change_callback)
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
        description="DOCA RDMA send with immediate (port of samples/doca_rdma/rdma_send_immediate)")
    register_rdma_common_params(parser)
    register_rdma_send_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_send_immediate(cfg))


if __name__ == "__main__":
    sys.exit(main())
