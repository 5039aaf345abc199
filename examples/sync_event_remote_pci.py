"""Port of the DOCA sample ``samples/doca_common/sync_event_remote_pci`` (DOCA 3.3) to doca_py.

The *remote* side: it receives the event that ``examples/sync_event_local_pci.py`` exported, over comch,
creates it from the blob (``doca_sync_event_create_from_export``), waits until the local side signals it
(value 1) and signals back (value 2, or an atomic add of 1 with ``--atomic``). With ``--async`` the wait
and the signal are sync event tasks on a progress engine.

The C file builds for the DPU (a comch server; ``-r`` names the host function's representor) or for the
host (a comch client); the port is both: ``-r`` selects the DPU build. Either side may be remote::

    python examples/sync_event_local_pci.py -d 03:00.0 -r 3b:00.0
    python examples/sync_event_remote_pci.py -d 3b:00.0

    python examples/sync_event_remote_pci.py -d 03:00.0 -r 3b:00.0 --async --async-num-tasks 2
    python examples/sync_event_local_pci.py -d 3b:00.0 --async --async-num-tasks 2

Calls follow the C sample: open the device (create-from-export capability) and, on the DPU, the
representor → ``sync_event_config_validate`` → the comch handshake → progress until the blob arrived →
``doca_sync_event_create_from_export`` → ``doca_sync_event_start`` (or ``sync_event_start_async``) →
wait, signal → teardown. The log lines also give the values awaited, set and fetched.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import doca_py as d
from doca_py.comch import ComchConnection
from doca_py.errors import DocaTimeout

from _common import SLEEP_IN_SECONDS, run_sample, setup_logging
from _sync_event_common import (SYNC_EVENT_CC_MAX_MSG_SIZE, SYNC_EVENT_CC_TIMEOUT_SEC, UINT64_MAX, SyncEventConfig,
                                SyncEventRuntimeObjects, config_from_args, free_task, open_devices,
                                sync_event_async_task_submit, sync_event_cc_handshake, sync_event_config_validate, sync_event_params_register,
                                sync_event_start_async, sync_event_tear_down)

log = setup_logging("SYNC_EVENT::SAMPLE")


@dataclass
class ExportBlob:
    """``struct export_blob``: the information exported from the local sample, received over comch."""

    se_blob: bytes = b""  # data received via comch (at most SYNC_EVENT_CC_MAX_MSG_SIZE bytes)
    se_blob_sz: int = 0  # length of the data received


def sync_event_get_create_from_export_supported(devinfo: d.DevInfo) -> bool:
    """``sync_event_get_create_from_export_supported``."""
    return d.SyncEvent.cap_is_create_from_export_supported(devinfo)


def se_init(export_data: ExportBlob, se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``se_init``: progress comch until the callback filled *export_data* in, then create the event from it."""
    assert se_rt_objs.comch_pe is not None and se_rt_objs.dev is not None
    log.info("Listening")
    # Wait for the comch callback to populate the export data fields
    deadline = time.monotonic() + SYNC_EVENT_CC_TIMEOUT_SEC
    while export_data.se_blob_sz == 0:
        if time.monotonic() >= deadline:
            raise DocaTimeout("Failed to retrieve set task progress: timeout")
        if not se_rt_objs.comch_pe.progress():
            time.sleep(SLEEP_IN_SECONDS)
    log.info("Received blob from remote side")
    se_rt_objs.se = d.SyncEvent.create_from_export(se_rt_objs.dev, export_data.se_blob[:export_data.se_blob_sz])


def se_communicate_sync(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``se_communicate_sync``: wait until the local side made the event 1, then signal 2 (set, or add 1)."""
    se = se_rt_objs.se
    assert se is not None
    se_value = 1
    log.info("Waiting for sync event to be signaled from remote side (value %d)", se_value)
    se.wait_eq(se_value, UINT64_MAX)
    se_value += 1
    log.info("Signaling sync event for remote side")
    if se_cfg.is_update_atomic:
        fetched = se.update_add(1)
        log.info("Added 1 to the sync event, which held %d", fetched)
    else:
        se.update_set(se_value)
        log.info("Set the sync event to %d", se_value)
    log.info("Done")


def se_communicate_async(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``se_communicate_async``: the same with a wait-eq task (freed at the end) and a notify-set (or
    notify-add) task."""
    se_ctx = se_rt_objs.se_ctx
    assert se_ctx is not None
    user_data = 0
    se_value = 1
    wait_eq_task = se_ctx.task_wait_eq_alloc_init(se_value, UINT64_MAX, user_data=user_data)
    # The C frees the wait task only at the end of a successful exchange; the port frees it on a failure
    # too, so that the teardown's stop can bring the ctx to IDLE.
    try:
        log.info("Waiting for sync event to be signaled from remote side (value %d)", se_value)
        sync_event_async_task_submit(se_rt_objs, wait_eq_task)
        se_value += 1
        log.info("Signaling sync event for remote side")
        if se_cfg.is_update_atomic:
            notify_add_task = se_ctx.task_notify_add_alloc_init(1, user_data=user_data)
            try:
                sync_event_async_task_submit(se_rt_objs, notify_add_task)
                # The C passes &fetched to the alloc; DOCA writes it at completion (doca_py reads it from the
                # task).
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
        log.info("Done")
    finally:
        free_task(wait_eq_task)


def comch_recv_event_cb(msg: memoryview, comch_connection: ComchConnection) -> None:
    """The local side's blob: copy it where ``se_init`` looks for it (the runtime objects' user data)."""
    # doca_comch_{server,client}_get_{server,client}_ctx + doca_ctx_get_user_data
    ctx = comch_connection.get_server_ctx() or comch_connection.get_client_ctx()
    assert ctx is not None
    se_rt_objs: SyncEventRuntimeObjects = ctx.user_data
    recv_data: ExportBlob = se_rt_objs.user_data
    # msg is valid only in the callback; the C copies msg_len bytes into its 1024-byte buffer, which the
    # max message size (SYNC_EVENT_CC_MAX_MSG_SIZE) bounds.
    recv_data.se_blob = bytes(msg[:SYNC_EVENT_CC_MAX_MSG_SIZE])
    recv_data.se_blob_sz = len(recv_data.se_blob)


def sync_event_run(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> d.ErrorCode:
    """``sync_event_run``: every step, then the teardown (also after a failed step)."""
    received_data = ExportBlob()
    try:
        open_devices(se_cfg, se_rt_objs, sync_event_get_create_from_export_supported)
        sync_event_config_validate(se_cfg, se_rt_objs)
        # The sample's message receive callback, registered with the comch ctx
        se_rt_objs.comch_recv_event_cb = comch_recv_event_cb
        # The user data the callback fills in when the message arrives
        se_rt_objs.user_data = received_data
        sync_event_cc_handshake(se_rt_objs)
        se_init(received_data, se_rt_objs)
        if se_cfg.is_async_mode:
            sync_event_start_async(se_cfg, se_rt_objs)
        else:
            assert se_rt_objs.se is not None
            se_rt_objs.se.start()
        if se_cfg.is_async_mode:
            se_communicate_async(se_cfg, se_rt_objs)
        else:
            se_communicate_sync(se_cfg, se_rt_objs)
    finally:
        sync_event_tear_down(se_rt_objs)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA sync event, remote side (port of samples/doca_common/sync_event_remote_pci)")
    sync_event_params_register(parser)
    se_cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: sync_event_run(se_cfg, SyncEventRuntimeObjects()))


if __name__ == "__main__":
    sys.exit(main())
