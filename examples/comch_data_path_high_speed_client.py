"""Port of ``samples/doca_comch/comch_data_path_high_speed_client`` (DOCA 3.0) to doca_py.

The client (host side) connects to ``examples/comch_data_path_high_speed_server.py``,
negotiates the test with control messages (``start_data_path_test``), sends its text to
the server's consumer through a producer, receives the server's text through a consumer,
and ends the test with ``stop_data_path_test``::

    python examples/comch_data_path_high_speed_server.py -p 03:00.0 -r 3b:00.0 -t "Message from the server"
    python examples/comch_data_path_high_speed_client.py -p 3b:00.0 -t "Message from the client"

Calls follow the C sample: open the device → ``init_comch_ctrl_path_client`` (with the
consumer events) → progress until RUNNING gave the connection → send the start message and
progress until it is echoed → ``comch_data_path_send_msg`` (producer on its own Pe; a send
refused with AGAIN is retried) → ``comch_data_path_recv_msg`` (consumer on its own Pe) →
send the stop message, progress until it is echoed and the client is IDLE.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import doca_py as d
from doca_py.comch import ComchClient, ComchConnection
from doca_py.errors import DocaInitialization

from _common import open_doca_device_with_pci, run_sample, setup_logging
from _comch_common import (INVALID_CONSUMER_ID, STR_START_DATA_PATH_TEST, STR_STOP_DATA_PATH_TEST,
                           ComchDataPathObjects, CtrlPathClientCbConfig, SendTracker, clean_comch_ctrl_path_client,
                           client_objects_of, comch_data_path_recv_msg, comch_data_path_send_msg,
                           expired_consumer_callback, init_comch_ctrl_path_client, progress_until,
                           register_comch_params, send_msg, send_task_callbacks)
from _comch_common import client_state_changed_callback as client_state_changed_callback_for
from _comch_common import new_consumer_callback as new_consumer_callback_for

log = setup_logging("COMCH_DATA_PATH_HIGH_SPEED_CLIENT")

SERVER_NAME = "comch_data_path_sample_server"


@dataclass
class ComchDataPathClientObjects:
    """``struct comch_data_path_client_objects``."""

    data_path: ComchDataPathObjects
    hw_dev: d.Dev | None = None
    pe: d.Pe | None = None
    client: ComchClient | None = None
    tracker: SendTracker | None = None
    connection: ComchConnection | None = None
    client_result: d.ErrorCode = d.ErrorCode.SUCCESS
    client_finish: bool = False
    data_path_test_started: bool = False
    data_path_test_stopped: bool = False


objects_of = client_objects_of

client_send_task_completion_callback, client_send_task_completion_err_callback = send_task_callbacks(
    log, "Client task sent successfully", "client_result")


def client_message_recv_callback(msg: memoryview, connection: ComchConnection) -> None:
    """The server's echo of the negotiation messages."""
    text = bytes(msg)  # msg is valid only during the callback
    log.info("Message received: '%s'", text.decode(errors="replace"))
    sample_objects = objects_of(connection)
    if text == STR_START_DATA_PATH_TEST:
        sample_objects.data_path_test_started = True
    elif text == STR_STOP_DATA_PATH_TEST:
        sample_objects.data_path_test_stopped = True
        sample_objects.data_path.remote_consumer_id = INVALID_CONSUMER_ID
        assert sample_objects.tracker is not None
        sample_objects.tracker.stop()  # once our own stop message's send completed


def client_on_running(sample_objects: ComchDataPathClientObjects) -> None:
    """RUNNING (connected): get the connection channel."""
    if sample_objects.connection is not None:
        return
    assert sample_objects.client is not None and sample_objects.tracker is not None
    try:
        sample_objects.connection = sample_objects.client.get_connection()
    except d.DocaError as exc:
        log.error("Failed to get connection from cc client with error = %s", exc)
        sample_objects.client_result = d.ErrorCode(exc.code)
        sample_objects.tracker.stop()
        return
    log.info("CC client context is running. Get a connection from server")


client_state_changed_callback = client_state_changed_callback_for(log, client_on_running, "client_finish")

new_consumer_callback = new_consumer_callback_for(log, objects_of)


def clean_comch_data_path_client_objects(sample_objects: ComchDataPathClientObjects) -> None:
    """End the test with the server (unless the client already stopped), then release everything."""
    if sample_objects.client is not None and sample_objects.pe is not None:
        try:
            if not sample_objects.client_finish and sample_objects.connection is not None:
                assert sample_objects.tracker is not None
                try:
                    send_msg(sample_objects.client, sample_objects.tracker, sample_objects.connection,
                             STR_STOP_DATA_PATH_TEST)
                except d.DocaError as exc:
                    log.error("Failed to submit send task with error = %s", exc)
                    sample_objects.client_result = d.ErrorCode(exc.code)
                    sample_objects.data_path_test_stopped = True
                    sample_objects.tracker.stop()
                progress_until(sample_objects.pe, lambda: sample_objects.data_path_test_stopped)
            progress_until(sample_objects.pe, lambda: sample_objects.client_finish)
        finally:
            clean_comch_ctrl_path_client(sample_objects.client, sample_objects.pe)
            sample_objects.client = sample_objects.pe = None
    if sample_objects.hw_dev is not None:
        sample_objects.hw_dev.close()
        sample_objects.hw_dev = None


def init_comch_data_path_client_objects(server_name: str, dev_pci_addr: str,
                                        sample_objects: ComchDataPathClientObjects) -> None:
    cb_cfg = CtrlPathClientCbConfig(
        send_task_comp_cb=client_send_task_completion_callback,
        send_task_comp_err_cb=client_send_task_completion_err_callback,
        msg_recv_cb=client_message_recv_callback,
        data_path_mode=True,
        new_consumer_cb=new_consumer_callback,
        expired_consumer_cb=expired_consumer_callback,
        ctx_user_data=sample_objects,
        ctx_state_changed_cb=client_state_changed_callback)

    sample_objects.hw_dev = open_doca_device_with_pci(dev_pci_addr, None)
    sample_objects.data_path.hw_dev = sample_objects.hw_dev
    sample_objects.client, sample_objects.pe = init_comch_ctrl_path_client(server_name, sample_objects.hw_dev,
                                                                           cb_cfg)
    sample_objects.tracker = SendTracker(sample_objects.client)
    sample_objects.data_path.pe = sample_objects.pe

    # Wait for the connection to be established (RUNNING)
    progress_until(sample_objects.pe, lambda: sample_objects.connection is not None or sample_objects.client_finish)
    if sample_objects.client_finish:
        raise DocaInitialization("the client stopped before it was connected")
    sample_objects.data_path.connection = sample_objects.connection

    # Exchange a message with the server, to make sure the connection is reliable
    assert sample_objects.connection is not None
    send_msg(sample_objects.client, sample_objects.tracker, sample_objects.connection, STR_START_DATA_PATH_TEST)
    progress_until(sample_objects.pe, lambda: sample_objects.data_path_test_started)


def start_comch_data_path_client_sample(server_name: str, dev_pci_addr: str, text: str) -> d.ErrorCode:
    sample_objects = ComchDataPathClientObjects(ComchDataPathObjects(text))
    try:
        init_comch_data_path_client_objects(server_name, dev_pci_addr, sample_objects)
        result = comch_data_path_send_msg(sample_objects.data_path)
        if result == d.ErrorCode.SUCCESS:
            result = comch_data_path_recv_msg(sample_objects.data_path)
    except d.DocaError as exc:
        log.error("Data path test failed: %s", exc)
        result = d.ErrorCode(exc.code)
    clean_comch_data_path_client_objects(sample_objects)
    return result if result != d.ErrorCode.SUCCESS else sample_objects.client_result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA Comch data path client (port of samples/doca_comch/comch_data_path_high_speed_client)")
    register_comch_params(parser, "3b:00.0", "", "Message from the client")
    args = parser.parse_args(argv)
    return run_sample(log, lambda: start_comch_data_path_client_sample(SERVER_NAME, args.pci_addr, args.text))


if __name__ == "__main__":
    sys.exit(main())
