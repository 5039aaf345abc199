"""Port of ``samples/doca_comch/comch_data_path_high_speed_server`` (DOCA 3.0) to doca_py.

The server (DPU side) accepts a client, negotiates the test with control messages
(``start_data_path_test``), receives the client's text through a consumer, sends its own
text through a producer, and ends on ``stop_data_path_test``. Start it before
``examples/comch_data_path_high_speed_client.py``::

    python examples/comch_data_path_high_speed_server.py -p 03:00.0 -r 3b:00.0 -t "Message from the server"
    python examples/comch_data_path_high_speed_client.py -p 3b:00.0 -t "Message from the client"

Calls follow the C sample: open the device and representor → ``init_comch_ctrl_path_server``
(with the consumer events) → progress until the client's start message arrived (echoed) →
``comch_data_path_recv_msg`` (consumer on its own Pe) → ``comch_data_path_send_msg``
(producer on its own Pe) → progress until the client's stop message (echoed) and IDLE.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import doca_py as d
from doca_py.comch import ComchConnection, ComchServer

from _common import open_doca_device_rep_with_pci, open_doca_device_with_pci, run_sample, setup_logging
from _comch_common import (INVALID_CONSUMER_ID, STR_START_DATA_PATH_TEST, STR_STOP_DATA_PATH_TEST,
                           ComchDataPathObjects, CtrlPathServerCbConfig, SendTracker, clean_comch_ctrl_path_server,
                           comch_data_path_recv_msg, comch_data_path_send_msg, expired_consumer_callback,
                           init_comch_ctrl_path_server, progress_until, register_comch_params, send_msg,
                           send_task_callbacks, server_objects_of)
from _comch_common import new_consumer_callback as new_consumer_callback_for
from _comch_common import server_disconnection_event_callback as server_disconnection_event_callback_for
from _comch_common import server_state_changed_callback as server_state_changed_callback_for

log = setup_logging("COMCH_DATA_PATH_HIGH_SPEED_SERVER")

SERVER_NAME = "comch_data_path_sample_server"


@dataclass
class ComchDataPathServerObjects:
    """``struct comch_data_path_server_objects``."""

    data_path: ComchDataPathObjects
    hw_dev: d.Dev | None = None
    rep_dev: d.DevRep | None = None
    pe: d.Pe | None = None
    server: ComchServer | None = None
    tracker: SendTracker | None = None
    connection: ComchConnection | None = None
    server_result: d.ErrorCode = d.ErrorCode.SUCCESS
    server_finish: bool = False
    data_path_test_started: bool = False
    data_path_test_stopped: bool = False


objects_of = server_objects_of

server_send_task_completion_callback, server_send_task_completion_err_callback = send_task_callbacks(
    log, "Server task sent successfully", "server_result")


def server_message_recv_callback(msg: memoryview, connection: ComchConnection) -> None:
    """The negotiation messages: echo them; the stop message ends the server."""
    text = bytes(msg)  # msg is valid only during the callback
    log.info("Message received: '%s'", text.decode(errors="replace"))
    sample_objects = objects_of(connection)
    assert sample_objects.server is not None and sample_objects.tracker is not None
    sample_objects.connection = connection
    if text not in (STR_START_DATA_PATH_TEST, STR_STOP_DATA_PATH_TEST):
        return
    try:
        send_msg(sample_objects.server, sample_objects.tracker, connection, text)
    except d.DocaError as exc:
        log.error("Failed to submit send task with error = %s", exc)
        sample_objects.server_result = d.ErrorCode(exc.code)
        sample_objects.tracker.stop()
        return
    if text == STR_START_DATA_PATH_TEST:
        sample_objects.data_path_test_started = True
    else:
        sample_objects.data_path_test_stopped = True
        sample_objects.data_path.remote_consumer_id = INVALID_CONSUMER_ID
        sample_objects.tracker.stop()  # once the echo is sent (the C sample stops right away)


def server_connection_event_callback(connection: ComchConnection, change_success: bool) -> None:
    if not change_success:
        log.error("Failed connection received")
        return
    objects_of(connection).connection = connection


server_disconnection_event_callback = server_disconnection_event_callback_for(log)

server_state_changed_callback = server_state_changed_callback_for(log, "server_finish")

new_consumer_callback = new_consumer_callback_for(log, objects_of)


def clean_comch_data_path_server_objects(sample_objects: ComchDataPathServerObjects) -> None:
    """Wait for the client's stop message and the server's IDLE, then release everything."""
    if sample_objects.server is not None and sample_objects.pe is not None:
        try:
            progress_until(sample_objects.pe, lambda: sample_objects.data_path_test_stopped)
            progress_until(sample_objects.pe, lambda: sample_objects.server_finish)
        finally:
            clean_comch_ctrl_path_server(sample_objects.server, sample_objects.pe)
            sample_objects.server = sample_objects.pe = None
    if sample_objects.rep_dev is not None:
        sample_objects.rep_dev.close()
        sample_objects.rep_dev = None
    if sample_objects.hw_dev is not None:
        sample_objects.hw_dev.close()
        sample_objects.hw_dev = None


def init_comch_data_path_server_objects(server_name: str, dev_pci_addr: str, dev_rep_pci_addr: str,
                                        sample_objects: ComchDataPathServerObjects) -> None:
    cb_cfg = CtrlPathServerCbConfig(
        send_task_comp_cb=server_send_task_completion_callback,
        send_task_comp_err_cb=server_send_task_completion_err_callback,
        msg_recv_cb=server_message_recv_callback,
        server_connection_event_cb=server_connection_event_callback,
        server_disconnection_event_cb=server_disconnection_event_callback,
        data_path_mode=True,
        new_consumer_cb=new_consumer_callback,
        expired_consumer_cb=expired_consumer_callback,
        ctx_user_data=sample_objects,
        ctx_state_changed_cb=server_state_changed_callback)

    sample_objects.hw_dev = open_doca_device_with_pci(dev_pci_addr, None)
    sample_objects.data_path.hw_dev = sample_objects.hw_dev
    sample_objects.rep_dev = open_doca_device_rep_with_pci(sample_objects.hw_dev, d.DevinfoRepFilter.NET,
                                                           dev_rep_pci_addr)
    sample_objects.server, sample_objects.pe = init_comch_ctrl_path_server(
        server_name, sample_objects.hw_dev, sample_objects.rep_dev, cb_cfg)
    sample_objects.tracker = SendTracker(sample_objects.server)
    sample_objects.data_path.pe = sample_objects.pe

    # Wait for the client's start message: it carries the connection, and is echoed.
    progress_until(sample_objects.pe, lambda: sample_objects.connection is not None)
    sample_objects.data_path.connection = sample_objects.connection
    progress_until(sample_objects.pe, lambda: sample_objects.data_path_test_started)


def handle_error_state(sample_objects: ComchDataPathServerObjects) -> None:
    """Stop the server and relay the stop to the client (the client tears down otherwise)."""
    assert sample_objects.server is not None and sample_objects.tracker is not None
    if sample_objects.connection is not None:
        try:
            send_msg(sample_objects.server, sample_objects.tracker, sample_objects.connection,
                     STR_STOP_DATA_PATH_TEST)
        except d.DocaError as exc:
            log.error("Failed to submit send task with error = %s", exc)
    sample_objects.data_path_test_stopped = True
    sample_objects.tracker.stop()


def start_comch_data_path_server_sample(server_name: str, dev_pci_addr: str, rep_pci_addr: str,
                                        text: str) -> d.ErrorCode:
    sample_objects = ComchDataPathServerObjects(ComchDataPathObjects(text))
    try:
        init_comch_data_path_server_objects(server_name, dev_pci_addr, rep_pci_addr, sample_objects)
        result = comch_data_path_recv_msg(sample_objects.data_path)
        if result == d.ErrorCode.SUCCESS:
            result = comch_data_path_send_msg(sample_objects.data_path)
    except d.DocaError as exc:
        log.error("Data path test failed: %s", exc)
        result = d.ErrorCode(exc.code)
    if result != d.ErrorCode.SUCCESS and sample_objects.server is not None:
        handle_error_state(sample_objects)
    clean_comch_data_path_server_objects(sample_objects)
    return result if result != d.ErrorCode.SUCCESS else sample_objects.server_result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA Comch data path server (port of samples/doca_comch/comch_data_path_high_speed_server)")
    register_comch_params(parser, "03:00.0", "3b:00.0", "Message from the server")
    args = parser.parse_args(argv)
    return run_sample(log, lambda: start_comch_data_path_server_sample(SERVER_NAME, args.pci_addr, args.rep_pci,
                                                                       args.text))


if __name__ == "__main__":
    sys.exit(main())
