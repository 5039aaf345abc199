"""Port of the DOCA sample ``samples/doca_comch/comch_ctrl_path_client`` (DOCA 3.0) to doca_py.

The client (host side) connects to ``examples/comch_ctrl_path_server.py`` by name, sends
its text once the connection is up, prints the server's answer and stops::

    python examples/comch_ctrl_path_server.py -p 03:00.0 -r 3b:00.0 -t "Message from the server"
    python examples/comch_ctrl_path_client.py -p 3b:00.0 -t "Message from the client"

(``3b:00.0`` is the host PF of the emulated registry; the C sample defaults to
``b1:00.0``.) Calls follow the C sample: open the device → ``init_comch_ctrl_path_client``
(Pe, client, state-changed callback, send task configuration, message event, start:
STARTING) → progress: on RUNNING the callback gets the connection and submits the
message; the message callback prints the answer and stops the client; the loop ends on IDLE.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import doca_py as d
from doca_py.comch import ComchClient, ComchConnection

from _common import open_doca_device_with_pci, run_sample, setup_logging
from _comch_common import (CtrlPathClientCbConfig, SendTracker, clean_comch_ctrl_path_client, client_objects_of,
                           init_comch_ctrl_path_client, progress_until, register_comch_params, send_msg,
                           send_task_callbacks)
from _comch_common import client_state_changed_callback as client_state_changed_callback_for

log = setup_logging("COMCH_CTRL_PATH_CLIENT")

SERVER_NAME = "comch_ctrl_path_sample_server"


@dataclass
class ComchCtrlPathClientObjects:
    """The sample's objects."""

    text: bytes
    client: ComchClient | None = None
    tracker: SendTracker | None = None
    result: d.ErrorCode = d.ErrorCode.SUCCESS
    finish: bool = False


client_send_task_completion_callback, client_send_task_completion_err_callback = send_task_callbacks(
    log, "Task sent successfully")


def client_message_recv_callback(msg: memoryview, connection: ComchConnection) -> None:
    """The server's answer: print it and stop the client."""
    log.info("Message received: '%s'", bytes(msg).decode(errors="replace"))  # msg is valid only here
    sample_objects: ComchCtrlPathClientObjects = client_objects_of(connection)
    assert sample_objects.tracker is not None
    sample_objects.tracker.stop()


def client_on_running(sample_objects: ComchCtrlPathClientObjects) -> None:
    """RUNNING (connected): send the message to the server."""
    log.info("CC client context is running. Sending message to the server")
    assert sample_objects.client is not None and sample_objects.tracker is not None
    try:
        connection = sample_objects.client.get_connection()
        send_msg(sample_objects.client, sample_objects.tracker, connection, sample_objects.text)
    except d.DocaError as exc:
        log.error("Failed to send a message to the server with error = %s", exc)
        sample_objects.result = d.ErrorCode(exc.code)
        sample_objects.tracker.stop()


client_state_changed_callback = client_state_changed_callback_for(log, client_on_running)


def start_comch_ctrl_path_client_sample(server_name: str, dev_pci_addr: str, text: str) -> d.ErrorCode:
    sample_objects = ComchCtrlPathClientObjects(text.encode())
    cb_cfg = CtrlPathClientCbConfig(
        send_task_comp_cb=client_send_task_completion_callback,
        send_task_comp_err_cb=client_send_task_completion_err_callback,
        msg_recv_cb=client_message_recv_callback,
        ctx_user_data=sample_objects,
        ctx_state_changed_cb=client_state_changed_callback)

    hw_dev = open_doca_device_with_pci(dev_pci_addr, ComchClient.cap_is_supported)
    try:
        client, pe = init_comch_ctrl_path_client(server_name, hw_dev, cb_cfg)
        sample_objects.client, sample_objects.tracker = client, SendTracker(client)
        try:
            progress_until(pe, lambda: sample_objects.finish)
        finally:
            clean_comch_ctrl_path_client(client, pe)
    finally:
        hw_dev.close()
    return sample_objects.result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA Comch control path client (port of samples/doca_comch/comch_ctrl_path_client)")
    register_comch_params(parser, "3b:00.0", "", "Message from the client")
    args = parser.parse_args(argv)
    return run_sample(log, lambda: start_comch_ctrl_path_client_sample(SERVER_NAME, args.pci_addr, args.text))


if __name__ == "__main__":
    sys.exit(main())
