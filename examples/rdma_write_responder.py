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
import time
from typing import Any

import doca_py as d
from doca_py.errors import DocaInvalidValue
from doca_py.rdma import RdmaTransportType

from _common import SLEEP_IN_SECONDS, request_stop, run_sample, setup_logging
from _rdma_common import (RdmaConfig, RdmaResources, allocate_rdma_resources, config_from_args,
                          destroy_rdma_resources, get_string, log_state, propagate_error, read_file,
                          register_rdma_common_params, wait_for_enter, wait_for_file, write_file)

log = setup_logging("RDMA_WRITE_RESPONDER")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size


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


def rdma_write_responder_export_and_connect(resources: RdmaResources) -> None:
    """``doca_rdma_export`` and ``doca_mmap_export_rdma`` → descriptor exchange → ``doca_rdma_connect``."""
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    resources.mmap_descriptor = resources.mmap.export_rdma(resources.doca_device)
    write_read_connection(resources.cfg, resources)
    if resources.cfg.transport_type == RdmaTransportType.DC:
        return
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)


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
        request_stop(resources.rdma)


def rdma_write_responder_state_change_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                               next_state: d.CtxState) -> None:
    """The sample's state machine."""
    resources: RdmaResources = user_data
    log_state(resources, next_state)
    try:
        if next_state == d.CtxState.RUNNING:
            rdma_write_responder_export_and_connect(resources)
            log.info("RDMA context finished initialization")
            responder_wait_for_requester_finish(resources)
        elif next_state == d.CtxState.IDLE:
            resources.run_pe_progress = False  # we can stop progressing the PE
    except d.DocaError as exc:
        log.error("RDMA write responder failed: %s", exc)
        propagate_error(resources, exc.code)
        request_stop(ctx)


def rdma_write_responder(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.RDMA_WRITE
    rdma_permissions = d.AccessFlag.RDMA_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, None, log)
    try:
        resources.rdma.set_state_changed_cb(rdma_write_responder_state_change_callback)
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
        description="DOCA RDMA write responder (port of samples/doca_rdma/rdma_write_responder)")
    register_rdma_common_params(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_write_responder(cfg))


if __name__ == "__main__":
    sys.exit(main())
