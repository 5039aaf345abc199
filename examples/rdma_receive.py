"""Port of the DOCA sample ``samples/doca_rdma/rdma_receive`` (DOCA 3.0) to doca_py.

The receiver posts a receive task and prints what the sender (``examples/rdma_send.py``)
sent, in the task's completion callback. Start it first; each side's ``-ld`` file is the
other side's ``-re`` file::

    python examples/rdma_receive.py -d mlx5_0 -ld /tmp/recv.desc -re /tmp/send.desc
    python examples/rdma_send.py -d mlx5_0 -ld /tmp/send.desc -re /tmp/recv.desc -s "Hi DOCA RDMA!"
    # the receiver prints 'Got from sender: "Hi DOCA RDMA!"'

Calls follow the C sample: ``allocate_rdma_resources`` → ``doca_rdma_task_receive_set_conf`` →
state-changed callback → inventory → ``doca_ctx_start``; on RUNNING (DOCA 3.x: without a
connection) the callback exports, exchanges descriptors, connects and posts the receive;
its completion callback prints the message and stops the ctx.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskReceive

from _common import run_sample, setup_logging
from _rdma_common import (NUM_RDMA_TASKS, RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect,
                          config_from_args, destroy_rdma_resources, export_and_connect, get_string, propagate_error,
                          register_rdma_common_params, run_rdma_ctx, state_change_callback, submit_task,
                          task_error_callback, task_finished, use_rdma_cm)

log = setup_logging("RDMA_RECEIVE")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


def rdma_receive_completed_callback(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA receive task was done Successfully")
    # The received bytes are the destination's data now, in the completion callback.
    assert resources.dst_buf is not None
    text = get_string(bytes(resources.dst_buf.data_view()), MAX_BUFF_SIZE)
    if text is None:
        log.error("The message that was received from sender exceeds buffer size %d", MAX_BUFF_SIZE)
        propagate_error(resources, d.ErrorCode.INVALID_VALUE)
    else:
        log.info('Got from sender: "%s"', text)
    task_finished(resources, task)


rdma_receive_error_callback = task_error_callback("RDMA receive")


def rdma_receive_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Post a receive of up to 256 bytes into our memory."""
    assert resources.buf_inventory is not None
    local_range, _ = resources.mmap.get_memrange()
    resources.dst_buf = resources.buf_inventory.buf_get_by_addr(resources.mmap, local_range, MAX_BUFF_SIZE)
    task = resources.rdma.task_receive_allocate_init(resources.dst_buf)
    log.info("Submitting RDMA receive task")
    submit_task(resources, task)


def rdma_receive_on_running(resources: RdmaResources) -> None:
    """RUNNING: ``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``, then the receive."""
    if cm_connect(resources):  # the task follows once the connection is established (task_fn)
        return
    export_and_connect(resources, "sender", passive=True)
    log.info("RDMA context finished initialization")
    rdma_receive_prepare_and_submit_task(resources)


rdma_receive_state_change_callback = state_change_callback("RDMA receive", rdma_receive_on_running)


def rdma_receive(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions,
                                        Rdma.cap_task_receive_is_supported, log)
    try:
        resources.rdma.task_receive_set_conf(rdma_receive_completed_callback, rdma_receive_error_callback,
                                             NUM_RDMA_TASKS)
        use_rdma_cm(resources, rdma_receive_prepare_and_submit_task, passive=True)
        return run_rdma_ctx(resources, rdma_receive_state_change_callback)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DOCA RDMA receive (port of samples/doca_rdma/rdma_receive)")
    register_rdma_common_params(parser, cm=True)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_receive(cfg))


if __name__ == "__main__":
    sys.exit(main())
