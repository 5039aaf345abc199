"""Port of the DOCA sample ``samples/doca_rdma/rdma_read_responder`` (DOCA 3.0) to doca_py.

The responder puts a string in its memory and exports the memory for RDMA reads; the
requester (``examples/rdma_read_requester.py``) reads it. Start the responder first::

    python examples/rdma_read_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc -m /tmp/mmap.desc \\
        -r "Hi DOCA RDMA!"
    # run the requester, then press enter here to stop

Calls follow the C sample: ``allocate_rdma_resources`` → state-changed callback →
``doca_ctx_start``; on RUNNING (DOCA 3.x: without a connection) the callback exports the
connection, copies the string into the memory, exports the mmap
(``doca_mmap_export_rdma``), exchanges descriptors, connects, waits for enter (the read is
one-sided: nothing to progress here) and stops the ctx; the progress loop ends on IDLE.
"""

from __future__ import annotations

import argparse
import sys

import doca_py as d

from _common import run_sample, setup_logging
from _rdma_common import (RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect, config_from_args,
                          destroy_rdma_resources, put_string, rdma_connect, register_rdma_common_params,
                          register_rdma_read_string_param, run_rdma_ctx, state_change_callback, stop_rdma,
                          use_rdma_cm, wait_for_enter, write_read_connection)

log = setup_logging("RDMA_READ_RESPONDER")


def rdma_read_responder_export_and_connect(resources: RdmaResources) -> None:
    """``doca_rdma_export``, the string into memory, ``doca_mmap_export_rdma``, exchange, connect."""
    read_string = resources.cfg.read_string
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    # Copy the read string to the mmap memory range
    put_string(resources.mmap_memrange, read_string, len(read_string.encode()) + 1)
    resources.mmap_descriptor = resources.mmap.export_rdma(resources.doca_device)
    write_read_connection(resources, "requester", passive=True, mmap=True)
    rdma_connect(resources, passive=True)


def responder_wait_for_requester_finish(resources: RdmaResources) -> None:
    # Wait for enter, which means that the requester has finished reading
    log.info("Wait till the requester has finished reading and press enter")
    wait_for_enter()
    stop_rdma(resources)


def rdma_read_responder_on_running(resources: RdmaResources) -> None:
    if resources.cfg.use_rdma_cm:  # the mmap descriptor is sent once connected, then the wait
        read_string = resources.cfg.read_string
        put_string(resources.mmap_memrange, read_string, len(read_string.encode()) + 1)
    if cm_connect(resources):
        return
    rdma_read_responder_export_and_connect(resources)
    log.info("RDMA context finished initialization")
    responder_wait_for_requester_finish(resources)


rdma_read_responder_state_change_callback = state_change_callback("RDMA read responder",
                                                                  rdma_read_responder_on_running)


def rdma_read_responder(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.RDMA_READ
    rdma_permissions = d.AccessFlag.RDMA_READ
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, None, log)
    try:
        use_rdma_cm(resources, responder_wait_for_requester_finish, require_remote_mmap=True,
                    need_send_task=True)
        return run_rdma_ctx(resources, rdma_read_responder_state_change_callback, buf_inventory=False)
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA read responder (port of samples/doca_rdma/rdma_read_responder)")
    register_rdma_common_params(parser, cm=True)
    register_rdma_read_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_read_responder(cfg))


if __name__ == "__main__":
    sys.exit(main())
