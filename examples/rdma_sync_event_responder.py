"""Port of the DOCA sample ``samples/doca_rdma/rdma_sync_event_responder`` (DOCA 3.0) to doca_py.

The responder owns a sync event whose publisher is a remote (network) peer and whose subscriber is its own
CPU. It exports the RDMA connection and the event (``doca_sync_event_export_to_remote_net``), then, in the
RUNNING callback as the C sample does, waits for the requester to signal the event, signals back, and waits
for the requester's completion notice (``UINT64_MAX``). Start it first; the requester is
``examples/rdma_sync_event_requester.py``::

    python examples/rdma_sync_event_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc -m /tmp/se.desc
    python examples/rdma_sync_event_requester.py -d mlx5_0 -ld /tmp/req.desc -re /tmp/resp.desc -m /tmp/se.desc

The remote updates reach the event while this side blocks in ``wait_gt`` inside the callback: the device
(on the emulated backend, the RDMA I/O thread) serves them without the progress engine.

With ``--use-rdma-cm`` the connection is made by address (this side listens unless ``-sa`` names the
server) and the event's blob travels over it, in a send the requester's posted receive takes::

    python examples/rdma_sync_event_responder.py -cm -lp 13579
    python examples/rdma_sync_event_requester.py -cm -sa 127.0.0.1 -lp 13579
"""

from __future__ import annotations

import argparse
import sys

import doca_py as d

from _common import run_sample, setup_logging
from _rdma_common import (RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect, config_from_args,
                          destroy_rdma_resources, rdma_connect, register_rdma_common_params, run_rdma_ctx,
                          state_change_callback, stop_rdma, use_rdma_cm, write_read_connection)

log = setup_logging("RDMA_SYNC_EVENT_RESPONDER")

EXAMPLE_SET_VALUE = 0xD0CA  # example value to use for setting sync event
UINT64_MAX = (1 << 64) - 1


def rdma_sync_event_responder_allocate_sync_event_resources(dev: d.Dev) -> d.SyncEvent:
    """``doca_sync_event_create``, a remote-net publisher, a CPU subscriber, ``doca_sync_event_start``."""
    sync_event = d.SyncEvent()
    try:
        sync_event.add_publisher_location_remote_net()
        sync_event.add_subscriber_location_cpu(dev)
        sync_event.start()
    except BaseException:
        sync_event.close()
        raise
    return sync_event


def rdma_sync_event_responder_export_and_connect(resources: RdmaResources, sync_event: d.SyncEvent) -> None:
    """``doca_rdma_export``, ``doca_sync_event_export_to_remote_net``, descriptor exchange, connect."""
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    # The event's blob goes where the other samples put their mmap's (the -m file).
    resources.mmap_descriptor = sync_event.export_to_remote_net()
    write_read_connection(resources, "requester", passive=True, mmap=True)
    rdma_connect(resources, passive=True)


def rdma_sync_event_responder_handle_event(sync_event: d.SyncEvent) -> None:
    """Wait for the signal, signal back, wait for the completion notice."""
    log.info("Waiting for sync event to be signaled from remote")
    sync_event.wait_gt(EXAMPLE_SET_VALUE - 1, UINT64_MAX)
    log.info("Signaling sync event")
    sync_event.update_set(EXAMPLE_SET_VALUE + 1)
    log.info("Waiting for sync event to be notified for completion")
    sync_event.wait_gt(UINT64_MAX - 1, UINT64_MAX)
    log.info("Sync event was notified for completion")


def rdma_sync_event_responder(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.RDMA_READ | d.AccessFlag.RDMA_WRITE
    rdma_permissions = d.AccessFlag.RDMA_READ | d.AccessFlag.RDMA_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, None, log)
    try:
        sync_event = rdma_sync_event_responder_allocate_sync_event_resources(resources.doca_device)
        try:
            def responder_wait_for_requester_finish(res: RdmaResources) -> None:
                rdma_sync_event_responder_handle_event(sync_event)
                stop_rdma(res)

            def on_running(res: RdmaResources) -> None:
                if cfg.use_rdma_cm:  # the event's blob is sent once connected; then task_fn
                    res.mmap_descriptor = sync_event.export_to_remote_net()
                if cm_connect(res):
                    return
                rdma_sync_event_responder_export_and_connect(res, sync_event)
                log.info("RDMA context finished initialization")
                responder_wait_for_requester_finish(res)

            use_rdma_cm(resources, responder_wait_for_requester_finish, passive=True, require_remote_mmap=True,
                        need_send_task=True)
            callback = state_change_callback("RDMA sync event responder", on_running)
            return run_rdma_ctx(resources, callback, buf_inventory=False)
        finally:
            sync_event.stop()
            sync_event.close()
    finally:
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA sync event responder (port of samples/doca_rdma/rdma_sync_event_responder)")
    register_rdma_common_params(parser, cm=True)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_sync_event_responder(cfg))


if __name__ == "__main__":
    sys.exit(main())
