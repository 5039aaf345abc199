"""Port of the DOCA sample ``samples/doca_common/sync_event_local_pci`` (DOCA 3.3) to doca_py.

The *local* side owns a sync event that a peer across PCIe publishes to (``remote_pci`` publisher, CPU
subscriber). It exports the event (``doca_sync_event_export_to_remote_pci``), sends the blob to the peer
over comch, signals the event (value 1, or an atomic add of 1 with ``--atomic``) and waits for the peer,
``examples/sync_event_remote_pci.py``, to signal back (value 2). With ``--async`` both steps are sync event
tasks on a progress engine instead of the synchronous calls.

The C file builds for the DPU (a comch server; ``-r`` names the host function's representor) or for the
host (a comch client); the port is both: ``-r`` selects the DPU build. Either side may be local::

    python examples/sync_event_local_pci.py -d 03:00.0 -r 3b:00.0          # DPU: the event's owner
    python examples/sync_event_remote_pci.py -d 3b:00.0                     # host: imports it

    python examples/sync_event_remote_pci.py -d 03:00.0 -r 3b:00.0 --async --async-num-tasks 2 --atomic
    python examples/sync_event_local_pci.py -d 3b:00.0 --async --async-num-tasks 2 --atomic

(``03:00.0`` and ``3b:00.0`` are the DPU and the host PF of the emulated registry.) Calls follow the C
sample: open the device (export-to-remote-PCI capability) and, on the DPU, the representor →
``sync_event_config_validate`` → ``doca_sync_event_create``, ``add_publisher_location_remote_pci``,
``add_subscriber_location_cpu`` → ``doca_sync_event_start`` (or ``sync_event_start_async``) → the comch
handshake → ``doca_sync_event_export_to_remote_pci`` and a comch send → signal, wait → teardown.

Differences: after submitting the comch send the port progresses the comch Pe until the send has
completed (``progress_comch_sends``: doca_py starts a task's work in ``doca_pe_progress``, where DOCA's
hardware takes the message at submit). The log lines also give the values set, awaited and fetched.
"""

from __future__ import annotations

import argparse
import sys

import doca_py as d
from doca_py.comch import ComchConnection

from _common import run_sample, setup_logging
from _sync_event_common import (UINT64_MAX, SyncEventConfig, SyncEventRuntimeObjects, config_from_args, free_task,
                                open_devices,
                                progress_comch_sends, sync_event_async_task_submit, sync_event_cc_handshake,
                                sync_event_cc_send, sync_event_config_validate, sync_event_params_register,
                                sync_event_start_async, sync_event_tear_down)

log = setup_logging("SYNC_EVENT::SAMPLE")


def sync_event_get_export_to_dpu_supported(devinfo: d.DevInfo) -> bool:
    """``sync_event_get_export_to_dpu_supported``."""
    return d.SyncEvent.cap_is_export_to_remote_pci_supported(devinfo)


def se_init(se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``se_init``: an event published from across PCIe, waited on by this CPU."""
    assert se_rt_objs.dev is not None
    se_rt_objs.se = d.SyncEvent()
    se_rt_objs.se.add_publisher_location_remote_pci()
    se_rt_objs.se.add_subscriber_location_cpu(se_rt_objs.dev)


def se_export(se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``se_export``: export the event for the PCIe peer and send the blob over comch."""
    assert se_rt_objs.se is not None and se_rt_objs.dev is not None
    se_blob = se_rt_objs.se.export_to_remote_pci(se_rt_objs.dev)
    log.info("Sending exported DOCA Sync Event to remote side")
    sync_event_cc_send(se_rt_objs, se_blob)  # assume there are available tasks for sending a single message
    progress_comch_sends(se_rt_objs)  # Python-only: see the module's docstring
    log.info("Exported DOCA Sync Event has been sent to remote side successfully")


def se_communicate_sync(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``se_communicate_sync``: signal 1 (set, or add 1), then wait until the peer made it 2."""
    se = se_rt_objs.se
    assert se is not None
    se_value = 1
    log.info("Signaling sync event for remote side")
    if se_cfg.is_update_atomic:
        fetched = se.update_add(1)
        log.info("Added 1 to the sync event, which held %d", fetched)
    else:
        se.update_set(se_value)
        log.info("Set the sync event to %d", se_value)
    se_value += 1
    log.info("Waiting for sync event to be signaled from remote side (value %d)", se_value)
    se.wait_eq_yield(se_value, UINT64_MAX)
    log.info("Done")


def se_communicate_async(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``se_communicate_async``: the same with a notify-set (or notify-add) task and a wait-eq task, each
    freed once it completed."""
    se_ctx = se_rt_objs.se_ctx
    assert se_ctx is not None
    user_data = 0
    se_value = 1
    log.info("Signaling sync event for remote side")
    if se_cfg.is_update_atomic:
        notify_add_task = se_ctx.task_notify_add_alloc_init(1, user_data=user_data)
        try:
            sync_event_async_task_submit(se_rt_objs, notify_add_task)
            # The C passes &fetched to the alloc; DOCA writes it at completion (doca_py reads it from the task).
            log.info("Added 1 to the sync event, which held %d", notify_add_task.get_fetched_val())
        finally:
            free_task(notify_add_task)
    else:
        notify_set_task = se_ctx.task_notify_set_alloc_init(se_value, user_data=user_data)
        try:
            sync_event_async_task_submit(se_rt_objs, notify_set_task)
        finally:
            free_task(notify_set_task)
        log.info("Set the sync event to %d", se_value)
    se_value += 1
    wait_eq_task = se_ctx.task_wait_eq_alloc_init(se_value, UINT64_MAX, user_data=user_data)
    log.info("Waiting for sync event to be signaled from remote side (value %d)", se_value)
    try:
        sync_event_async_task_submit(se_rt_objs, wait_eq_task)
    finally:
        free_task(wait_eq_task)
    log.info("Done")


def comch_recv_event_cb(msg: memoryview, connection: ComchConnection) -> None:
    """The sample does not expect to receive messages."""


def sync_event_run(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> d.ErrorCode:
    """``sync_event_run``: every step, then the teardown (also after a failed step)."""
    try:
        open_devices(se_cfg, se_rt_objs, sync_event_get_export_to_dpu_supported)
        sync_event_config_validate(se_cfg, se_rt_objs)
        se_init(se_rt_objs)
        if se_cfg.is_async_mode:
            sync_event_start_async(se_cfg, se_rt_objs)
        else:
            assert se_rt_objs.se is not None
            se_rt_objs.se.start()
        # The sample's message receive callback, registered with the comch ctx
        se_rt_objs.comch_recv_event_cb = comch_recv_event_cb
        sync_event_cc_handshake(se_rt_objs)
        se_export(se_rt_objs)
        if se_cfg.is_async_mode:
            se_communicate_async(se_cfg, se_rt_objs)
        else:
            se_communicate_sync(se_cfg, se_rt_objs)
    finally:
        sync_event_tear_down(se_rt_objs)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA sync event, local side (port of samples/doca_common/sync_event_local_pci)")
    sync_event_params_register(parser)
    se_cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: sync_event_run(se_cfg, SyncEventRuntimeObjects()))


if __name__ == "__main__":
    sys.exit(main())
