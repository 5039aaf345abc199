"""Port of the DOCA sample ``samples/doca_rdma/rdma_write_immediate_requester`` (doca-samples 3.3.0) to doca_py.

The requester writes a string into the responder's memory with an RDMA write-with-immediate task
carrying the immediate value 0xABCD; the immediate completes a receive the responder posted, which is
how the responder learns that the write has landed (no "press enter" as in the plain write sample).
Start the responder first (``examples/rdma_write_immediate_responder.py``); the two exchange their
descriptors through files (each side's ``-ld`` file is the other's ``-re`` file, and the responder
writes its mmap descriptor to ``-m``)::

    python examples/rdma_write_immediate_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc \\
        -m /tmp/mmap.desc
    python examples/rdma_write_immediate_requester.py -d mlx5_0 -ld /tmp/req.desc -re /tmp/resp.desc \\
        -m /tmp/mmap.desc -w "Hi DOCA RDMA!"
    # the responder prints 'Requester has written: "Hi DOCA RDMA!" with immediate data: 43981'

Calls follow the C sample: ``allocate_rdma_resources`` (capability: the write task, as in C) →
``doca_rdma_task_write_imm_set_conf`` → state-changed callback → inventory → (``-cm``: the negotiation's
receive task and the connection callbacks) → user data → ``doca_ctx_start``; on RUNNING (DOCA 3.x:
without a connection) the callback exports, exchanges descriptors, connects and submits the write with
immediate right away (``-cm``: connects; the write follows the arrival of the responder's mmap
descriptor over the connection); the completion callback stops the ctx and the loop ends on IDLE.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskWriteImm

from _common import run_sample, setup_logging
from _rdma_common import (NUM_RDMA_TASKS, RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect,
                          config_from_args, destroy_rdma_resources, export_and_connect, put_string,
                          register_rdma_common_params, register_rdma_write_string_param, run_rdma_ctx,
                          state_change_callback, submit_task, task_error_callback, task_finished, use_rdma_cm)

log = setup_logging("RDMA_WRITE_IMMEDIATE_REQUESTER")

EXAMPLE_IMMEDIATE_VALUE = 0xABCD  # example immediate value to send (doca_be32_t, passed as is, as in C)


def rdma_write_imm_completed_callback(task: RdmaTaskWriteImm, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    log.info("RDMA write task with immediate was done Successfully")
    log.info('Written to responder "%s" with immediate value %d', resources.cfg.write_string,
             EXAMPLE_IMMEDIATE_VALUE)
    # doca_task_free, then the destination and source buffers; the last task stops the ctx (with -cm after
    # disconnecting)
    task_finished(resources, task)


rdma_write_imm_error_callback = task_error_callback("RDMA write with immediate")


def rdma_write_imm_prepare_and_submit_task(resources: RdmaResources) -> None:
    """Import the responder's memory, build the buffers, submit the write with immediate."""
    assert resources.buf_inventory is not None and resources.connection is not None
    write_string = resources.cfg.write_string
    write_string_len = len(write_string.encode()) + 1

    resources.remote_mmap = d.Mmap.create_from_export(resources.remote_mmap_descriptor, resources.doca_device)
    remote_mmap_range, _ = resources.remote_mmap.get_memrange()

    local_range, _ = resources.mmap.get_memrange()
    resources.src_buf = resources.buf_inventory.buf_get_by_data(resources.mmap, local_range, write_string_len)
    # doca_buf_get_data + strncpy: the source buffer's data is the start of the memory; the string goes there
    put_string(resources.mmap_memrange, write_string, write_string_len)
    try:
        resources.dst_buf = resources.buf_inventory.buf_get_by_addr(resources.remote_mmap, remote_mmap_range,
                                                                    write_string_len)
        task = resources.rdma.task_write_imm_allocate_init(resources.connection, resources.src_buf,
                                                           resources.dst_buf, EXAMPLE_IMMEDIATE_VALUE)
    except d.DocaError:
        if resources.dst_buf is not None:
            resources.dst_buf.dec_refcount()
        resources.src_buf.dec_refcount()
        resources.src_buf = resources.dst_buf = None
        raise
    log.info('Submitting RDMA write with immediate task that writes "%s" with immediate value %d to responder',
             write_string, EXAMPLE_IMMEDIATE_VALUE)
    submit_task(resources, task)  # doca_task_submit(doca_rdma_task_write_imm_as_task(task)): implicit upcast


def rdma_write_imm_requester_on_running(resources: RdmaResources) -> None:
    """RUNNING: ``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``, then the write with
    immediate (RDMA-CM: connect; the write follows the mmap descriptor's arrival)."""
    if cm_connect(resources):
        return
    export_and_connect(resources, "responder", passive=False, mmap=True)
    log.info("RDMA context finished initialization")
    rdma_write_imm_prepare_and_submit_task(resources)


rdma_write_imm_requester_state_change_callback = state_change_callback("RDMA write with immediate requester",
                                                                       rdma_write_imm_requester_on_running)


def rdma_write_immediate_requester(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    # The C sample checks the write task's capability (not the write with immediate's): so does the port
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, Rdma.cap_task_write_is_supported,
                                        log)
    try:
        resources.rdma.task_write_imm_set_conf(rdma_write_imm_completed_callback, rdma_write_imm_error_callback,
                                               NUM_RDMA_TASKS)
        # -cm: the requester receives the responder's mmap descriptor, then writes (the task_fn)
        use_rdma_cm(resources, rdma_write_imm_prepare_and_submit_task, requester=True, require_remote_mmap=True,
                    need_recv_task=True)
        # run_rdma_ctx: state-changed callback, user data, inventory, doca_ctx_start, progress until IDLE
        return run_rdma_ctx(resources, rdma_write_imm_requester_state_change_callback)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA write with immediate requester "
                    "(port of samples/doca_rdma/rdma_write_immediate_requester)")
    register_rdma_common_params(parser, cm=True)
    register_rdma_write_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_write_immediate_requester(cfg))


if __name__ == "__main__":
    sys.exit(main())
