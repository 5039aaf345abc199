"""Port of the DOCA sample ``samples/doca_rdma/rdma_receive_immediate`` (DOCA 3.0) to doca_py.

The receiver posts a receive task and, in its completion callback, checks the opcode
(``RECV_SEND_WITH_IMM``) and the immediate value (0xABCD) and prints the message sent by
``examples/rdma_send_immediate.py``. Start it first; each side's ``-ld`` file is the other
side's ``-re`` file::

    python examples/rdma_receive_immediate.py -d mlx5_0 -ld /tmp/recv.desc -re /tmp/send.desc
    python examples/rdma_send_immediate.py -d mlx5_0 -ld /tmp/send.desc -re /tmp/recv.desc -s "Hi DOCA RDMA!"
    # the receiver prints 'Got from sender: "Hi DOCA RDMA!" with immediate: 43981'

Calls follow the C sample: ``allocate_rdma_resources`` → ``doca_rdma_task_receive_set_conf`` →
state-changed callback → inventory → ``doca_ctx_start``; on RUNNING (DOCA 3.x: without a
connection) the callback exports, exchanges descriptors, connects and posts the receive;
its completion callback prints the message and stops the ctx.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaOpcode, RdmaTaskReceive, RdmaTransportType

from _common import SLEEP_IN_SECONDS, request_stop, run_sample, setup_logging
from _rdma_common import (INVENTORY_NUM_INITIAL_ELEMENTS, NUM_RDMA_TASKS, RdmaConfig, RdmaResources,
                          allocate_rdma_resources, config_from_args, destroy_rdma_resources, get_string, log_state,
                          propagate_error, read_file, register_rdma_common_params, wait_for_file, write_file)

log = setup_logging("RDMA_RECEIVE_IMMEDIATE")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size
EXPECTED_IMMEDIATE_VALUE = 0xABCD  # the immediate value the sender sends


def write_read_connection(cfg: RdmaConfig, resources: RdmaResources) -> None:
    """Write our connection descriptor; read the sender's."""
    write_file(cfg.local_connection_desc_path, resources.rdma_conn_descriptor)
    log.info("You can now copy %s to the sender", cfg.local_connection_desc_path)
    if cfg.transport_type == RdmaTransportType.DC:
        return
    log.info("Please copy %s from the sender", cfg.remote_connection_desc_path)
    wait_for_file(cfg.remote_connection_desc_path, log)
    resources.remote_rdma_conn_descriptor = read_file(cfg.remote_connection_desc_path)


def release_dst_buf(resources: RdmaResources) -> None:
    if resources.dst_buf is not None:
        resources.dst_buf.dec_refcount()
        resources.dst_buf = None


def rdma_receive_completed_callback(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    # The immediate data is valid only on success and with the matching opcode.
    op_code = task.get_result_opcode()
    immediate_data = task.get_result_immediate_data()
    if op_code != RdmaOpcode.RECV_SEND_WITH_IMM:
        log.error("Got incorrect opcode: %s", op_code.name)
        propagate_error(resources, d.ErrorCode.UNEXPECTED)
    elif immediate_data != EXPECTED_IMMEDIATE_VALUE:
        log.error("RDMA receive task failed: immediate value that was received isn't the expected immediate value")
        propagate_error(resources, d.ErrorCode.UNEXPECTED)
    else:
        log.info("RDMA receive task was done Successfully")
        # The received bytes are the destination's data now, in the completion callback.
        assert resources.dst_buf is not None
        text = get_string(bytes(resources.dst_buf.data_view()), MAX_BUFF_SIZE)
        if text is None:
            log.error("The message that was received from sender exceeds buffer size %d", MAX_BUFF_SIZE)
            propagate_error(resources, d.ErrorCode.INVALID_VALUE)
        else:
            log.info('Got from sender: "%s" with immediate: %d', text, immediate_data)
    task.free()
    release_dst_buf(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        request_stop(resources.rdma)


def rdma_receive_error_callback(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    propagate_error(resources, task.get_status())
    log.error("RDMA receive task failed: %s", task.exception())
    task.free()
    release_dst_buf(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:
        request_stop(resources.rdma)


def rdma_receive_immediate_export_and_connect(resources: RdmaResources) -> None:
    """``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``."""
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    write_read_connection(resources.cfg, resources)
    if resources.cfg.transport_type == RdmaTransportType.DC:
        return
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)


def rdma_receive_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Post a receive of up to 256 bytes into our memory."""
    assert resources.buf_inventory is not None
    local_range, _ = resources.mmap.get_memrange()
    resources.dst_buf = resources.buf_inventory.buf_get_by_addr(resources.mmap, local_range, MAX_BUFF_SIZE)
    task = resources.rdma.task_receive_allocate_init(resources.dst_buf)
    log.info("Submitting RDMA receive task")
    resources.num_remaining_tasks += 1
    try:
        task.submit()
    except d.DocaError:
        resources.num_remaining_tasks -= 1
        task.free()
        release_dst_buf(resources)
        raise


def rdma_receive_state_change_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                       next_state: d.CtxState) -> None:
    """The sample's state machine."""
    resources: RdmaResources = user_data
    log_state(resources, next_state)
    try:
        if next_state == d.CtxState.RUNNING:
            rdma_receive_immediate_export_and_connect(resources)
            log.info("RDMA context finished initialization")
            rdma_receive_prepare_and_submit_task(resources)
        elif next_state == d.CtxState.IDLE:
            resources.run_pe_progress = False  # we can stop progressing the PE
    except d.DocaError as exc:
        log.error("RDMA receive with immediate failed: %s", exc)
        propagate_error(resources, exc.code)
        request_stop(ctx)


def rdma_receive_immediate(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions,
                                        Rdma.cap_task_receive_is_supported, log)
    try:
        resources.rdma.task_receive_set_conf(rdma_receive_completed_callback, rdma_receive_error_callback,
                                             NUM_RDMA_TASKS)
        resources.rdma.set_state_changed_cb(rdma_receive_state_change_callback)
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
        description="DOCA RDMA receive with immediate (port of samples/doca_rdma/rdma_receive_immediate)")
    register_rdma_common_params(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_receive_immediate(cfg))


if __name__ == "__main__":
    sys.exit(main())
