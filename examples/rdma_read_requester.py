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
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskRead

from _common import run_sample, setup_logging
from _rdma_common import (NUM_RDMA_TASKS, RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect,
                          config_from_args, destroy_rdma_resources, export_and_connect, get_string, propagate_error,
                          register_rdma_common_params, run_rdma_ctx, state_change_callback, submit_task,
                          task_error_callback, task_finished, use_rdma_cm)

log = setup_logging("RDMA_READ_REQUESTER")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


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
    task_finished(resources, task)


rdma_read_error_callback = task_error_callback("RDMA read")


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
    # The connection may not be up at the peer yet: the task waits, as on an RC queue pair.
    submit_task(resources, task)


def rdma_read_requester_on_running(resources: RdmaResources) -> None:
    """RUNNING: ``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``, then the read (RDMA-CM:
    connect, the read follows the mmap descriptor's arrival)."""
    if cm_connect(resources):
        return
    export_and_connect(resources, "responder", passive=False, mmap=True)
    log.info("RDMA context finished initialization")
    rdma_read_prepare_and_submit_task(resources)


rdma_read_requester_state_change_callback = state_change_callback("RDMA read requester",
                                                                  rdma_read_requester_on_running)


def rdma_read_requester(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_read_is_supported,
                                        log)
    try:
        resources.rdma.task_read_set_conf(rdma_read_completed_callback, rdma_read_error_callback, NUM_RDMA_TASKS)
        use_rdma_cm(resources, rdma_read_prepare_and_submit_task, requester=True, passive=True,
                    require_remote_mmap=True, need_recv_task=True)
        return run_rdma_ctx(resources, rdma_read_requester_state_change_callback)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA read requester (port of samples/doca_rdma/rdma_read_requester)")
    register_rdma_common_params(parser, cm=True)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_read_requester(cfg))


if __name__ == "__main__":
    sys.exit(main())
