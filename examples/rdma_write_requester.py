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
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskWrite

from _common import run_sample, setup_logging
from _rdma_common import (NUM_RDMA_TASKS, RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect,
                          config_from_args, destroy_rdma_resources, export_and_connect, put_string,
                          register_rdma_common_params, register_rdma_write_string_param, run_rdma_ctx,
                          state_change_callback, submit_task, task_error_callback, task_finished, use_rdma_cm)

log = setup_logging("RDMA_WRITE_REQUESTER")


def rdma_write_completed_callback(task: RdmaTaskWrite, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA write task was done Successfully")
    log.info('Written to responder "%s"', resources.cfg.write_string)
    task_finished(resources, task)


rdma_write_error_callback = task_error_callback("RDMA write")


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
    submit_task(resources, task)


def rdma_write_requester_on_running(resources: RdmaResources) -> None:
    """RUNNING: ``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``, then the write (RDMA-CM:
    connect, the write follows the mmap descriptor's arrival)."""
    if cm_connect(resources):
        return
    export_and_connect(resources, "responder", passive=False, mmap=True)
    log.info("RDMA context finished initialization")
    rdma_write_prepare_and_submit_task(resources)


rdma_write_requester_state_change_callback = state_change_callback("RDMA write requester",
                                                                   rdma_write_requester_on_running)


def rdma_write_requester(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_write_is_supported,
                                        log)
    try:
        resources.rdma.task_write_set_conf(rdma_write_completed_callback, rdma_write_error_callback, NUM_RDMA_TASKS)
        use_rdma_cm(resources, rdma_write_prepare_and_submit_task, requester=True, passive=True,
                    require_remote_mmap=True, need_recv_task=True)
        return run_rdma_ctx(resources, rdma_write_requester_state_change_callback)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA write requester (port of samples/doca_rdma/rdma_write_requester)")
    register_rdma_common_params(parser, cm=True)
    register_rdma_write_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_write_requester(cfg))


if __name__ == "__main__":
    sys.exit(main())
