"""Port of the DOCA sample ``samples/doca_rdma/rdma_write_responder`` (DOCA 3.0) to doca_py.

The responder exports its memory for RDMA writes, waits until the requester
(``examples/rdma_write_requester.py``) has written into it, then prints what it finds::

    python examples/rdma_write_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc -m /tmp/mmap.desc
    # run the requester, then press enter here: 'Requester has written: "..."'

Calls follow the C sample: ``allocate_rdma_resources`` → state-changed callback →
``doca_ctx_start``; on RUNNING (DOCA 3.x: without a connection) the callback exports the
connection and the mmap (``doca_mmap_export_rdma``), exchanges descriptors, connects, then
waits for enter (the requester's write is one-sided: nothing to progress here), reads
the memory and stops the ctx; the progress loop ends on IDLE.
"""

from __future__ import annotations

import argparse
import sys

import doca_py as d
from doca_py.errors import DocaInvalidValue

from _common import run_sample, setup_logging
from _rdma_common import (RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect, config_from_args,
                          destroy_rdma_resources, export_and_connect, get_string, register_rdma_common_params,
                          run_rdma_ctx, state_change_callback, stop_rdma, use_rdma_cm, wait_for_enter)

log = setup_logging("RDMA_WRITE_RESPONDER")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


def responder_wait_for_requester_finish(resources: RdmaResources) -> None:
    """Wait for enter (the requester has written), print the memory, stop the ctx."""
    log.info("Wait till the requester has finished writing and press enter")
    wait_for_enter()
    try:
        # strncpy(buffer, mmap_memrange, MAX_BUFF_SIZE - 1) into a zeroed buffer
        written = get_string(resources.mmap_memrange[:MAX_BUFF_SIZE - 1].tobytes() + b"\0", MAX_BUFF_SIZE)
        if written is None:
            raise DocaInvalidValue(f"The message that was written by the requester exceeds buffer size "
                                   f"{MAX_BUFF_SIZE}")
        log.info('Requester has written: "%s"', written)
    finally:
        stop_rdma(resources)


def rdma_write_responder_on_running(resources: RdmaResources) -> None:
    """RUNNING: ``doca_rdma_export`` and ``doca_mmap_export_rdma`` → descriptor exchange →
    ``doca_rdma_connect``, then wait for the requester (RDMA-CM: connect; the mmap descriptor is sent once
    connected, then the wait)."""
    if cm_connect(resources):
        return
    export_and_connect(resources, "requester", passive=True, mmap=True)
    log.info("RDMA context finished initialization")
    responder_wait_for_requester_finish(resources)


rdma_write_responder_state_change_callback = state_change_callback("RDMA write responder",
                                                                   rdma_write_responder_on_running)


def rdma_write_responder(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.RDMA_WRITE
    rdma_permissions = d.AccessFlag.RDMA_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, None, log)
    try:
        use_rdma_cm(resources, responder_wait_for_requester_finish, require_remote_mmap=True,
                    need_send_task=True)
        return run_rdma_ctx(resources, rdma_write_responder_state_change_callback, buf_inventory=False)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA write responder (port of samples/doca_rdma/rdma_write_responder)")
    register_rdma_common_params(parser, cm=True)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_write_responder(cfg))


if __name__ == "__main__":
    sys.exit(main())
