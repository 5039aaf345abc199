"""Port of the DOCA sample ``samples/doca_comch/comch_ctrl_path_server`` (DOCA 3.0) to doca_py.

The server (DPU side: a device plus the representor of the host PF) waits for a client,
prints the client's message and answers with its own text, then stops. Start it before
``examples/comch_ctrl_path_client.py``::

    python examples/comch_ctrl_path_server.py -p 03:00.0 -r 3b:00.0 -t "Message from the server"
    python examples/comch_ctrl_path_client.py -p 3b:00.0 -t "Message from the client"

(``03:00.0`` and ``3b:00.0`` are the DPU and the host PF of the emulated registry; the C
sample defaults to ``03:00.0`` and ``b1:00.0``.) Calls follow the C sample: open the
device and the representor → ``init_comch_ctrl_path_server`` (Pe, server, state-changed
callback, send task configuration, message and connection events, start) → progress until
IDLE: the message callback submits the answer, whose completion stops the server.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import doca_py as d
from doca_py.comch import ComchConnection, ComchServer

from _common import open_doca_device_rep_with_pci, open_doca_device_with_pci, run_sample, setup_logging
from _comch_common import (CtrlPathServerCbConfig, SendTracker, clean_comch_ctrl_path_server,
                           init_comch_ctrl_path_server, progress_until, register_comch_params, send_msg,
                           send_task_callbacks, server_objects_of)
from _comch_common import server_disconnection_event_callback as server_disconnection_event_callback_for
from _comch_common import server_state_changed_callback as server_state_changed_callback_for

log = setup_logging("COMCH_CTRL_PATH_SERVER")

SERVER_NAME = "comch_ctrl_path_sample_server"


@dataclass
class ComchCtrlPathServerObjects:
    """The sample's objects."""

    text: bytes
    server: ComchServer | None = None
    tracker: SendTracker | None = None
    result: d.ErrorCode = d.ErrorCode.SUCCESS
    finish: bool = False


objects_of = server_objects_of

server_send_task_completion_callback, server_send_task_completion_err_callback = send_task_callbacks(
    log, "Task sent successfully")


def server_message_recv_callback(msg: memoryview, connection: ComchConnection) -> None:
    """A client's message: print it and answer; the server stops once the answer is sent."""
    log.info("Message received: '%s'", bytes(msg).decode(errors="replace"))  # msg is valid only here
    sample_objects = objects_of(connection)
    assert sample_objects.server is not None and sample_objects.tracker is not None
    try:
        send_msg(sample_objects.server, sample_objects.tracker, connection, sample_objects.text)
    except d.DocaError as exc:
        log.error("Failed to submit send task with error = %s", exc)
        sample_objects.result = d.ErrorCode(exc.code)
    sample_objects.tracker.stop()


def server_connection_event_callback(connection: ComchConnection, change_success: bool) -> None:
    if not change_success:
        log.error("Failed connection received")
        return
    log.info("New client connected")


server_disconnection_event_callback = server_disconnection_event_callback_for(log)

server_state_changed_callback = server_state_changed_callback_for(log)


def start_comch_ctrl_path_server_sample(server_name: str, dev_pci_addr: str, rep_pci_addr: str,
                                        text: str) -> d.ErrorCode:
    sample_objects = ComchCtrlPathServerObjects(text.encode())
    cb_cfg = CtrlPathServerCbConfig(
        send_task_comp_cb=server_send_task_completion_callback,
        send_task_comp_err_cb=server_send_task_completion_err_callback,
        msg_recv_cb=server_message_recv_callback,
        server_connection_event_cb=server_connection_event_callback,
        server_disconnection_event_cb=server_disconnection_event_callback,
        ctx_user_data=sample_objects,
        ctx_state_changed_cb=server_state_changed_callback)

    hw_dev = open_doca_device_with_pci(dev_pci_addr, ComchServer.cap_is_supported)
    try:
        rep_dev = open_doca_device_rep_with_pci(hw_dev, d.DevinfoRepFilter.NET, rep_pci_addr)
        server, pe = init_comch_ctrl_path_server(server_name, hw_dev, rep_dev, cb_cfg)
        sample_objects.server, sample_objects.tracker = server, SendTracker(server)
        try:
            progress_until(pe, lambda: sample_objects.finish)
        finally:
            clean_comch_ctrl_path_server(server, pe)
        rep_dev.close()
    finally:
        hw_dev.close()
    return sample_objects.result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA Comch control path server (port of samples/doca_comch/comch_ctrl_path_server)")
    register_comch_params(parser, "03:00.0", "3b:00.0", "Message from the server")
    args = parser.parse_args(argv)
    return run_sample(log, lambda: start_comch_ctrl_path_server_sample(SERVER_NAME, args.pci_addr, args.rep_pci,
                                                                       args.text))


if __name__ == "__main__":
    sys.exit(main())
