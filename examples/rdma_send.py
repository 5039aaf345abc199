"""Port of the DOCA sample ``samples/doca_rdma/rdma_send`` (DOCA 3.0) to doca_py.

The sender sends a string to the receiver's posted receive with an RDMA send task.
Start the receiver (``examples/rdma_receive.py``) first; each side's ``-ld`` file is the
other side's ``-re`` file::

    python examples/rdma_receive.py -d mlx5_0 -ld /tmp/recv.desc -re /tmp/send.desc
    python examples/rdma_send.py -d mlx5_0 -ld /tmp/send.desc -re /tmp/recv.desc -s "Hi DOCA RDMA!"

Calls follow the C sample: ``allocate_rdma_resources`` → ``doca_rdma_task_send_set_conf`` →
state-changed callback → inventory → ``doca_ctx_start``; on RUNNING (DOCA 3.x: without a
connection) the callback exports, exchanges descriptors, connects and submits the send
right away (it waits for the connection and the peer's receive, as on an RC queue pair);
the completion callback stops the ctx and the progress loop ends on IDLE.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskSend

from _common import run_sample, setup_logging
from _rdma_common import (NUM_RDMA_TASKS, RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect,
                          config_from_args, destroy_rdma_resources, export_and_connect, put_string,
                          register_rdma_common_params, register_rdma_send_string_param, run_rdma_ctx,
                          state_change_callback, submit_task, task_error_callback, task_finished, use_rdma_cm)

log = setup_logging("RDMA_SEND")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


def rdma_send_completed_callback(task: RdmaTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA send task was done successfully")
    task_finished(resources, task)


rdma_send_error_callback = task_error_callback("RDMA send")


def rdma_send_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Build the source buffer (the string, NUL-padded to 256 bytes) and submit the send."""
    assert resources.buf_inventory is not None and resources.connection is not None
    local_range, _ = resources.mmap.get_memrange()
    resources.src_buf = resources.buf_inventory.buf_get_by_data(resources.mmap, local_range, MAX_BUFF_SIZE)
    put_string(resources.mmap_memrange, resources.cfg.send_string, MAX_BUFF_SIZE)  # the source's data

    task = resources.rdma.task_send_allocate_init(resources.connection, resources.src_buf)
    log.info('Submitting RDMA send task that sends "%s" to receiver', resources.cfg.send_string)
    submit_task(resources, task)


def rdma_send_on_running(resources: RdmaResources) -> None:
    """RUNNING: ``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``, then the send."""
    if cm_connect(resources):  # the task follows once the connection is established (task_fn)
        return
    export_and_connect(resources, "receiver", passive=False)
    log.info("RDMA context finished initialization")
    rdma_send_prepare_and_submit_task(resources)


rdma_send_state_change_callback = state_change_callback("RDMA send", rdma_send_on_running)


def rdma_send(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_send_is_supported,
                                        log)
    try:
        resources.rdma.task_send_set_conf(rdma_send_completed_callback, rdma_send_error_callback, NUM_RDMA_TASKS)
        use_rdma_cm(resources, rdma_send_prepare_and_submit_task)
        return run_rdma_ctx(resources, rdma_send_state_change_callback)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DOCA RDMA send (port of samples/doca_rdma/rdma_send)")
    register_rdma_common_params(parser, cm=True)
    register_rdma_send_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_send(cfg))


if __name__ == "__main__":
    sys.exit(main())
