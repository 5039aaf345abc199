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
import time
from typing import Any

import doca_py as d
from doca_py.rdma import RdmaTransportType

from _common import SLEEP_IN_SECONDS, request_stop, run_sample, setup_logging
from _rdma_common import (RdmaConfig, RdmaResources, allocate_rdma_resources, config_from_args,
                          destroy_rdma_resources, log_state, propagate_error, put_string, read_file,
                          register_rdma_common_params, register_rdma_read_string_param, wait_for_enter,
                          wait_for_file, write_file)

log = setup_logging("RDMA_READ_RESPONDER")


def write_read_connection(cfg: RdmaConfig, resources: RdmaResources) -> None:
    """Write our connection and mmap descriptors; read the requester's connection descriptor."""
    write_file(cfg.local_connection_desc_path, resources.rdma_conn_descriptor)
    write_file(cfg.remote_resource_desc_path, resources.mmap_descriptor)
    log.info("You can now copy %s and %s to the requester", cfg.local_connection_desc_path,
             cfg.remote_resource_desc_path)
    if cfg.transport_type == RdmaTransportType.DC:
        return
    log.info("Please copy %s from the requester", cfg.remote_connection_desc_path)
    wait_for_file(cfg.remote_connection_desc_path, log)
    resources.remote_rdma_conn_descriptor = read_file(cfg.remote_connection_desc_path)


def rdma_read_responder_export_and_connect(resources: RdmaResources) -> None:
    """``doca_rdma_export``, the string into memory, ``doca_mmap_export_rdma``, exchange, connect."""
    read_string = resources.cfg.read_string
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    # Copy the read string to the mmap memory range
    put_string(resources.mmap_memrange, read_string, len(read_string.encode()) + 1)
    resources.mmap_descriptor = resources.mmap.export_rdma(resources.doca_device)
    write_read_connection(resources.cfg, resources)
    if resources.cfg.transport_type == RdmaTransportType.DC:
        return
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)


def rdma_read_responder_state_change_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                              next_state: d.CtxState) -> None:
    """The sample's state machine."""
    resources: RdmaResources = user_data
    log_state(resources, next_state)
    try:
        if next_state == d.CtxState.RUNNING:
            rdma_read_responder_export_and_connect(resources)
            log.info("RDMA context finished initialization")
            # Wait for enter, which means that the requester has finished reading
            log.info("Wait till the requester has finished reading and press enter")
            wait_for_enter()
            request_stop(resources.rdma)
        elif next_state == d.CtxState.IDLE:
            resources.run_pe_progress = False  # we can stop progressing the PE
    except d.DocaError as exc:
        log.error("RDMA read responder failed: %s", exc)
        propagate_error(resources, exc.code)
        request_stop(ctx)


def rdma_read_responder(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.RDMA_READ
    rdma_permissions = d.AccessFlag.RDMA_READ
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, None, log)
    try:
        resources.rdma.set_state_changed_cb(rdma_read_responder_state_change_callback)
        resources.rdma.user_data = resources  # doca_ctx_set_user_data
        resources.rdma.start()

        # The state machine runs in the state-changed callback, from progress(); it ends on IDLE.
        while resources.run_pe_progress:
            if not resources.pe.progress():
                time.sleep(SLEEP_IN_SECONDS)
        return resources.first_encountered_error
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA read responder (port of samples/doca_rdma/rdma_read_responder)")
    register_rdma_common_params(parser)
    register_rdma_read_string_param(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_read_responder(cfg))


if __name__ == "__main__":
    sys.exit(main())
