"""Port of the DOCA sample ``samples/doca_rdma/rdma_sync_event_requester`` (DOCA 3.0) to doca_py.

The requester imports the responder's sync event (``doca_sync_event_remote_net_create_from_export``) and
drives it with the RDMA remote sync-event tasks: a notify-set signals ``0xD0CA``; a get task is resubmitted
from its completion callback until the responder has signalled back (a value above ``0xD0CA``); then the
notify-set task is submitted again with ``UINT64_MAX``, the completion notice. Start the responder first
(``examples/rdma_sync_event_responder.py``)::

    python examples/rdma_sync_event_responder.py -d mlx5_0 -ld /tmp/resp.desc -re /tmp/req.desc -m /tmp/se.desc
    python examples/rdma_sync_event_requester.py -d mlx5_0 -ld /tmp/req.desc -re /tmp/resp.desc -m /tmp/se.desc

Calls follow the C sample: ``allocate_rdma_resources`` (a device with both task capabilities) → the two
``*_set_conf`` → state-changed callback → inventory → ``doca_ctx_start``; on RUNNING the callback exports,
exchanges descriptors, connects, imports the event and submits the set and the get tasks. With
``--use-rdma-cm`` (see the responder) the callback connects by address, and the tasks are submitted once the
event's blob has arrived over the connection.
"""

from __future__ import annotations

import argparse
import struct
import sys
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaTaskRemoteNetSyncEventGet, RdmaTaskRemoteNetSyncEventNotifySet

from _common import run_sample, setup_logging
from _rdma_common import (NUM_RDMA_TASKS, RdmaConfig, RdmaResources, allocate_rdma_resources, cm_connect,
                          config_from_args, destroy_rdma_resources, export_and_connect, propagate_error,
                          register_rdma_common_params, run_rdma_ctx, state_change_callback, stop_rdma, use_rdma_cm)

log = setup_logging("RDMA_SYNC_EVENT_REQUESTER")

EXAMPLE_SET_VALUE = 0xD0CA  # example value to use for setting sync event
UINT64_MAX = (1 << 64) - 1
_U64 = struct.Struct("=Q")  # the event value: 8 bytes in host byte order
_INT = struct.Struct("=i")  # the C sample compares the value as an int


def sync_event_tasks_supported(devinfo: d.DevInfo) -> bool:
    """The device filter: notify-set and get remote sync-event tasks."""
    return (Rdma.cap_task_remote_net_sync_event_notify_set_is_supported(devinfo)
            and Rdma.cap_task_remote_net_sync_event_get_is_supported(devinfo))


class Requester:
    """The sample's state next to ``struct rdma_resources``: the remote event and the set task."""

    def __init__(self, resources: RdmaResources) -> None:
        self.resources = resources
        self.remote_se: d.SyncEventRemoteNet | None = None
        self.set_task: RdmaTaskRemoteNetSyncEventNotifySet | None = None

    # -- the notify-set task -----------------------------------------------------------------------------
    def free_set_task_resources(self) -> None:
        res = self.resources
        if res.src_buf is not None:
            res.src_buf.dec_refcount()
            res.src_buf = None
        if self.set_task is not None:
            self.set_task.free()
            self.set_task = None

    def stop(self) -> None:
        stop_rdma(self.resources)

    def notify_set_completed(self, task: RdmaTaskRemoteNetSyncEventNotifySet, task_user_data: Any,
                             ctx_user_data: Any) -> None:
        log.info("RDMA remote net sync event notify set was done successfully")
        log.info("%s", task_user_data)
        res = self.resources
        res.num_remaining_tasks -= 1
        if res.num_remaining_tasks == 0:
            self.free_set_task_resources()
            self.stop()

    def notify_set_error(self, task: RdmaTaskRemoteNetSyncEventNotifySet, task_user_data: Any,
                         ctx_user_data: Any) -> None:
        res = self.resources
        res.num_remaining_tasks -= 1
        propagate_error(res, task.get_status())
        log.error("RDMA remote net sync event notify set task failed: %s", task.exception())
        if res.num_remaining_tasks == 0:
            self.free_set_task_resources()
        self.stop()

    # -- the get task -----------------------------------------------------------------------------------
    def get_completed(self, task: RdmaTaskRemoteNetSyncEventGet, task_user_data: Any, ctx_user_data: Any) -> None:
        log.info("RDMA remote net sync event get was done successfully")
        res = self.resources
        get_buf = task.get_dst_buf()
        value = _INT.unpack_from(get_buf.data_view())[0]
        log.info("Received sync event value 0x%X", value)
        try:
            if value <= EXAMPLE_SET_VALUE:
                # Resubmit the task, as long as the data is different from expected
                get_buf.reset_data_len()
                task.submit()
                return
            # Submit the set task again, to notify that the sync event is complete
            assert res.src_buf is not None and self.set_task is not None
            _U64.pack_into(res.src_buf.data_view(), 0, UINT64_MAX)
            log.info("Notifying remote sync event for completion")
            self.set_task.user_data = "Remote sync event has been notified for completion successfully"
            self.set_task.submit()
            res.num_remaining_tasks += 1
        except d.DocaError as exc:
            log.error("Failed to submit an RDMA remote sync event task: %s", exc)
            propagate_error(res, exc.code)
        res.num_remaining_tasks -= 1
        get_buf.dec_refcount()
        res.dst_buf = None
        task.free()
        if res.num_remaining_tasks == 0:  # the set task was not submitted
            self.free_set_task_resources()
            self.stop()

    def get_error(self, task: RdmaTaskRemoteNetSyncEventGet, task_user_data: Any, ctx_user_data: Any) -> None:
        res = self.resources
        res.num_remaining_tasks -= 1
        propagate_error(res, task.get_status())
        log.error("RDMA remote net sync event get task failed: %s", task.exception())
        self.free_set_task_resources()
        if res.dst_buf is not None:
            res.dst_buf.dec_refcount()
            res.dst_buf = None
        task.free()
        self.stop()

    # -- RUNNING -----------------------------------------------------------------------------------------
    def prepare_and_submit_tasks(self) -> None:
        res = self.resources
        assert res.buf_inventory is not None and res.connection is not None and self.remote_se is not None
        base, _ = res.mmap.get_memrange()
        res.src_buf = res.buf_inventory.buf_get_by_data(res.mmap, base, 8)
        _U64.pack_into(res.src_buf.data_view(), 0, EXAMPLE_SET_VALUE)
        self.set_task = res.rdma.task_remote_net_sync_event_notify_set_allocate_init(
            res.connection, self.remote_se, res.src_buf,
            "Remote sync event has been signaled successfully, now waiting for remote sync event to be signaled")
        log.info("Signaling remote sync event")
        try:
            self.set_task.submit()
        except d.DocaError:
            self.free_set_task_resources()
            raise
        res.num_remaining_tasks += 1
        # The set task was submitted: from here on its completion callbacks release it.
        res.dst_buf = res.buf_inventory.buf_get_by_addr(res.mmap, base, 8)
        get_task = res.rdma.task_remote_net_sync_event_get_allocate_init(res.connection, self.remote_se,
                                                                         res.dst_buf, self.set_task)
        try:
            get_task.submit()
        except d.DocaError:
            get_task.free()
            res.dst_buf.dec_refcount()
            res.dst_buf = None
            raise
        res.num_remaining_tasks += 1

    def import_and_submit(self, res: RdmaResources) -> None:
        """``doca_sync_event_remote_net_create_from_export`` of the responder's blob, then the tasks."""
        self.remote_se = d.SyncEventRemoteNet.create_from_export(res.doca_device, res.remote_mmap_descriptor)
        self.prepare_and_submit_tasks()

    def on_running(self, res: RdmaResources) -> None:
        if cm_connect(res):  # the tasks follow once the blob has arrived (task_fn)
            return
        export_and_connect(res, "responder", passive=False, mmap=True)
        log.info("RDMA context finished initialization")
        self.import_and_submit(res)


def rdma_sync_event_requester(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions, sync_event_tasks_supported, log)
    requester = Requester(resources)
    try:
        resources.rdma.task_remote_net_sync_event_notify_set_set_conf(
            requester.notify_set_completed, requester.notify_set_error, NUM_RDMA_TASKS)
        resources.rdma.task_remote_net_sync_event_get_set_conf(requester.get_completed, requester.get_error,
                                                               NUM_RDMA_TASKS)
        use_rdma_cm(resources, requester.import_and_submit, requester=True, require_remote_mmap=True,
                    need_recv_task=True)
        callback = state_change_callback("RDMA sync event requester", requester.on_running)
        return run_rdma_ctx(resources, callback)
    finally:
        if requester.remote_se is not None:  # destroyed once the ctx is idle, as in C
            requester.remote_se.close()
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA RDMA sync event requester (port of samples/doca_rdma/rdma_sync_event_requester)")
    register_rdma_common_params(parser, cm=True)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: rdma_sync_event_requester(cfg))


if __name__ == "__main__":
    sys.exit(main())
