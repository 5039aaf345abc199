"""Port of the DOCA sample ``samples/doca_rdma/rdma_write_immediate_responder`` (doca-samples 3.3.0) to doca_py.

The responder exports its memory for RDMA writes and posts a receive task without a destination buffer:
the requester's (``examples/rdma_write_immediate_requester.py``) write with immediate completes it. The
completion callback checks the opcode (``RECV_WRITE_WITH_IMM``) and the immediate value (0xABCD), then
prints what the write left in the memory. Start it first::

    python examples/rdma_write_immediate_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc \\
        -m /tmp/mmap.desc
    python examples/rdma_write_immediate_requester.py -d mlx5_0 -ld /tmp/req.desc -re /tmp/resp.desc \\
        -m /tmp/mmap.desc -w "Hi DOCA RDMA!"
    # 'Requester has written: "Hi DOCA RDMA!" with immediate data: 43981'

Calls follow the C sample: ``allocate_rdma_resources`` (capability: the receive task) →
``doca_rdma_task_receive_set_conf`` → state-changed callback → user data → (``-cm``: the negotiation's
send task and the connection callbacks) → ``doca_ctx_start``; on RUNNING (DOCA 3.x: without a
connection) the callback exports the connection and the mmap (``doca_mmap_export_rdma``), exchanges
descriptors, connects and posts the receive (``-cm``: connects; the mmap descriptor is sent over the
connection, and the receive is posted once that send completed); the receive's completion stops the
ctx and the progress loop ends on IDLE. No buffer inventory (C creates none outside ``-cm``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaOpcode, RdmaTaskReceive

from _common import run_sample, setup_logging
from _rdma_common import (NUM_RDMA_TASKS, RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect,
                          config_from_args, destroy_rdma_resources, export_and_connect, get_string, propagate_error,
                          register_rdma_common_params, run_rdma_ctx, state_change_callback, submit_task,
                          task_error_callback, task_finished, use_rdma_cm)

log = setup_logging("RDMA_WRITE_IMMEDIATE_RESPONDER")

MAX_BUFF_SIZE = 256  # maximum buffer size
EXPECTED_IMMEDIATE_VALUE = 0xABCD  # the immediate value the requester sends


def rdma_receive_completed_callback(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    # The immediate data is valid only on success and with the matching opcode.
    op_code = task.get_result_opcode()
    immediate_data = task.get_result_immediate_data()
    if op_code != RdmaOpcode.RECV_WRITE_WITH_IMM:
        log.error("Got incorrect opcode: %s", op_code.name)
        propagate_error(resources, d.ErrorCode.UNEXPECTED)
    elif immediate_data != EXPECTED_IMMEDIATE_VALUE:
        log.error("RDMA receive task failed: immediate value that was received isn't the expected immediate value")
        propagate_error(resources, d.ErrorCode.UNEXPECTED)
    else:
        log.info("RDMA receive task was done Successfully")
        # strncpy(buffer, mmap_memrange, MAX_BUFF_SIZE - 1) into a zeroed buffer: what the write left there
        written = get_string(resources.mmap_memrange[:MAX_BUFF_SIZE - 1].tobytes() + b"\0", MAX_BUFF_SIZE)
        if written is None:
            log.error("The message that was written by the requester exceeds buffer size %d", MAX_BUFF_SIZE)
            propagate_error(resources, d.ErrorCode.INVALID_VALUE)
        else:
            log.info('Requester has written: "%s" with immediate data: %d', written, immediate_data)
    # doca_task_free (the receive has no buffer); the last task stops the ctx (with -cm: see stop_rdma)
    task_finished(resources, task)


rdma_receive_error_callback = task_error_callback("RDMA receive")


def rdma_receive_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Post a receive without a destination buffer: it only takes the immediate value."""
    task = resources.rdma.task_receive_allocate_init(None)  # dst NULL: only the immediate value is received
    log.info("Submitting RDMA receive task")
    submit_task(resources, task)  # doca_task_submit(doca_rdma_task_receive_as_task(task)): implicit upcast


def rdma_write_imm_responder_on_running(resources: RdmaResources) -> None:
    """RUNNING: ``doca_rdma_export`` and ``doca_mmap_export_rdma`` → descriptor exchange →
    ``doca_rdma_connect`` (not over DC), then the receive (RDMA-CM: connect; the mmap descriptor is sent
    once connected, then the receive)."""
    if cm_connect(resources):
        return
    export_and_connect(resources, "requester", passive=True, mmap=True)
    log.info("RDMA context finished initialization")
    rdma_receive_prepare_and_submit_task(resources)


rdma_write_imm_responder_state_change_callback = state_change_callback("RDMA write with immediate responder",
                                                                       rdma_write_imm_responder_on_running)


def rdma_write_immediate_responder(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.RDMA_WRITE
    rdma_permissions = d.AccessFlag.RDMA_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions,
                                        Rdma.cap_task_receive_is_supported, log)
    try:
        resources.rdma.task_receive_set_conf(rdma_receive_completed_callback, rdma_receive_error_callback,
                                             NUM_RDMA_TASKS)
        # -cm: the responder sends its mmap descriptor, then posts the receive (the task_fn). It waits for the
        # requester's disconnection at the end, as the receiving side of send/receive does (see stop_rdma).
        use_rdma_cm(resources, rdma_receive_prepare_and_submit_task, passive=True, require_remote_mmap=True,
                    need_send_task=True)
        # run_rdma_ctx: state-changed callback, user data, doca_ctx_start, progress until IDLE
        return run_rdma_ctx(resources, rdma_write_imm_responder_state_change_callback, buf_inventory=False)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA write with immediate responder "
                    "(port of samples/doca_rdma/rdma_write_immediate_responder)")
    register_rdma_common_params(parser, cm=True)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_write_immediate_responder(cfg))


if __name__ == "__main__":
    sys.exit(main())
